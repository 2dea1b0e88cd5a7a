"""A report at scale (issues 35, 42): `psyq report` of a large cohort against the shipped Briganti people.

For each answer ``--pattern`` and ``--personas`` size (default: both patterns, 1,200 — the size of
Pan et al.'s human sample — and 3,000):

1. a study of that many personas (hand-listed, gender and age varying, each with a distinct
   ``serial``) × the IRI, run by ``psyq run`` in its own process (bench/psyq_driver.py; its time,
   CPU and peak RSS are recorded) against bench/pattern_stub.py, which reads each request and
   answers per persona and item in the pattern:

   - ``random``: A–E with equal probability (noise-like answers);
   - ``small-model``: answers like a small model's — piled on B and C, A and D few, E never (a
     category nobody uses), and a weak acquiescent style that makes reverse-keyed items correlate
     negatively with the others (mixed signs): what makes the factor and IRT models ill-conditioned.

   Up to ``--whole-above`` personas (10,000) one item per request, text answers, as before; above
   it the whole IRI per request with a JSON answer (``presentation: whole_instrument``,
   ``answer: json``: 10⁵ requests for 10⁵ personas instead of 2.8 M) — the stub gives every
   (persona, item) the same answer either way;
2. ``psyq report RUN --human iri=iri_briganti2018_keyed:keyed`` in its own process, timed wall to
   wall (interpreter start-up and imports included, as a user waits) with the process's own peak
   resident set (``ru_maxrss`` from ``wait4``) and its CPU time;
3. unless ``--no-profile``, the same report in this process with a timer around each part (no
   profiler, so the seconds are those a user waits; cumulative, so a section includes the statistics
   it calls): each report section, the answer table's export, scoring, norms, reliability, factor
   congruence, invariance, polychoric correlations, GRM, DIF, the verdict's scorecard, the figures,
   the methods paragraph and the rendering; ``--profile-top N`` also runs it under cProfile and
   prints the N functions of largest cumulative time.

Prints the figures and writes bench/results/report_scale.json. With ``--keep DIR`` the runs stay in
DIR and a later call with the same DIR reuses a finished run of the same pattern and size. Usage::

    python bench/report_scale.py [--pattern random small-model] [--personas 1200 3000] [--keep DIR]
    python bench/report_scale.py --pattern small-model --personas 100000 --keep /tmp/rs
    python bench/report_scale.py --keep /tmp/rs --before-tree /tmp/psyq_before   # before/after, B A A B
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from common import PYTHON, BENCH, child_usage, machine, pattern_stub, save_results, table, write_study

PATTERNS = ("random", "small-model")
def make_run(folder: Path, n: int, pattern: str, whole: bool) -> tuple[Path, dict]:
    """Run the IRI on `n` personas against the pattern stub; return the run directory and the run's
    figures (seconds, counts, CPU, peak RSS). A finished run already in `folder` is reused."""
    runs = folder / "runs"
    done = sorted(p.parent for p in runs.glob("*/*/manifest.json")) if runs.exists() else []
    for run in done:
        with sqlite3.connect(run / "run.sqlite") as db:
            count = db.execute("select count(*) from trials where status = 'answered'").fetchone()[0]
        if count == (n if whole else 28 * n):
            print(f"  {pattern}, {n} personas: reusing {run}", flush=True)
            info = json.loads((folder / "run.json").read_text()) if (folder / "run.json").exists() else {}
            return run, {**info, "reused": True}
    protocol = {"answer": "json", "presentation": "whole_instrument"} if whole else {"answer": "text"}
    with pattern_stub(pattern) as (url, _):
        study = write_study(folder, n_personas=n, study_id=f"scale{n}",
                            backend={"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                                     "concurrency": 64},
                            protocol={**protocol, "option_order": "as_written"})
        usage, out, err = child_usage([PYTHON, str(BENCH / "psyq_driver.py"), str(study), str(runs)])
    if usage["exit"] != 0:
        raise RuntimeError(f"psyq run failed: {err[-2000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    info = {"run_s": round(result["seconds"], 1), "run_wall_s": usage["wall_s"], "run_cpu_s": usage["cpu_s"],
            "run_peak_rss_mib": usage["peak_rss_mib"], "trials": result["trials"], "counts": result["counts"],
            "rate": round(result["rate"]), "presentation": "whole_instrument, json" if whole else "per_item, text",
            "loadavg": os.getloadavg()}
    (folder / "run.json").write_text(json.dumps(info))
    print(f"  {pattern}, {n} personas: {result['counts']} in {result['seconds']:.1f} s ({info})", flush=True)
    return Path(result["run_dir"]), info


TREE_PRELUDE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
                "(getattr(f, '__module__', '') or '')]; sys.path.insert(0, {tree!r}); ")


def timed_report(run: Path, out: Path, tree: str | None = None) -> dict:
    """`psyq report` in its own process: wall seconds, CPU seconds, its own peak RSS (MiB); with
    `tree`, the older copy of the package in ``tree/psyq`` instead of the installed one."""
    args = ["report", str(run), "--out", str(out), "--human", "iri=iri_briganti2018_keyed:keyed"]
    if tree:
        argv = [PYTHON, "-c", TREE_PRELUDE.format(tree=tree) + "from psyq.cli import main; sys.exit(main())", *args]
    else:
        argv = [PYTHON, "-m", "psyq.cli", *args]
    usage, _, err = child_usage(argv)
    if usage["exit"] != 0:
        raise RuntimeError(f"psyq report failed: {err[-2000:]}")
    return {"wall_s": usage["wall_s"], "cpu_s": usage["cpu_s"], "peak_rss_mib": usage["peak_rss_mib"],
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


# The parts timed in the report's own code, without a profiler: (module, function) -> label. Each is
# wrapped by a timer wherever a loaded psyq module holds it (imported by name or used through its module);
# the times are cumulative (a section includes the statistics it calls) and a part called inside another
# part of the same name is counted once.
TIMED = {
    ("psyq.analysis.scoring.human_data", "human_data"): "people's data read and checked",
    ("psyq.engine.results.export", "export_table"): "export table (answers from SQLite)",
    ("psyq.analysis.scoring.scores", "score_all_kinds"): "scoring",
    ("psyq.analysis.statistics.norms.comparison", "compare_with_norms"): "norms (compare_with_norms)",
    ("psyq.analysis.statistics.reliability", "reliability_table"): "reliability",
    ("psyq.analysis.statistics.validity", "factor_congruence"): "factor congruence (EFA)",
    ("psyq.analysis.statistics.invariance.sequence", "measurement_invariance"): "invariance (measurement_invariance)",
    ("psyq.analysis.statistics.polychoric", "ordinal_moments"): "polychoric (ordinal_moments)",
    ("psyq.analysis.statistics.irt", "graded_response_model"): "GRM",
    ("psyq.analysis.statistics.dif", "differential_item_functioning"): "DIF",
    ("psyq.analysis.statistics.standin.scorecard", "scorecard"): "scorecard (verdict)",
    ("psyq.analysis.report.figures", "figure_to_data_uri"): "figures drawn in this process (none: the figure process draws them)",
    ("psyq.analysis.report.render", "FigureImages.uri"): "figures: waiting for the figure process",
    ("psyq.analysis.report.methods", "methods_text"): "methods paragraph",
    ("psyq.analysis.report.render", "render_html"): "render HTML (figures included)",
    ("psyq.analysis.report.render", "render_markdown"): "render Markdown",
    ("psyq.analysis.report.build", "_build"): "build sections (every statistic)",
    ("psyq.analysis.report.build", "write_report"): "write_report (all)",
}


def _timed_parts(totals: dict[str, list[float]]) -> list:
    """Wrap every TIMED function and every report section's ``sections`` with a timer adding to `totals`
    (label -> [seconds, calls]); returns what to restore."""
    import functools
    import importlib
    import time

    from psyq.analysis.report.sections import report_sections

    restore, active = [], set()

    def wrap(function, label):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            if label in active:                 # nested call of the same part: counted by the outer one
                return function(*args, **kwargs)
            active.add(label)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                active.discard(label)
                entry = totals.setdefault(label, [0.0, 0])
                entry[0] += time.perf_counter() - start
                entry[1] += 1
        return timed

    for (module_name, name), label in TIMED.items():
        if "." in name:                        # a method: wrapped on its class
            owner = getattr(importlib.import_module(module_name), name.split(".")[0])
            method = name.split(".")[1]
            restore.append((owner, method, vars(owner)[method]))
            setattr(owner, method, wrap(vars(owner)[method], label))
            continue
        original = getattr(importlib.import_module(module_name), name)
        replacement = wrap(original, label)
        for module in [m for n, m in sys.modules.items() if n.startswith("psyq") and m is not None]:
            if getattr(module, name, None) is original:
                restore.append((module, name, original))
                setattr(module, name, replacement)
    for part in report_sections():
        cls = type(part)
        if "sections" in vars(cls):
            restore.append((cls, "sections", vars(cls)["sections"]))
            cls.sections = wrap(vars(cls)["sections"], f"section {part.name}")
    return restore


def profiled_report(run: Path, out: Path, top: int) -> dict:
    """The same report in this process, twice: once with a timer around each part (its own code, no
    profiler: seconds as the user waits for them, cumulative), once under cProfile for the `top`
    functions by cumulative time (`top` 0: skipped)."""
    import time
    import warnings

    from psyq.analysis.report.build import write_report
    from psyq.analysis.scoring.human_data import human_data

    import psyq.analysis.report.build as build
    from psyq.analysis.report.figures import figure_to_data_uri

    totals: dict[str, list[float]] = {}
    built: list = []
    original_build = build._build

    def keep(*args, **kwargs):                 # the sections, to draw their figures one by one afterwards
        result = original_build(*args, **kwargs)
        built.append(result[1])
        return result

    build._build = keep
    restore = _timed_parts(totals)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # the notice that the codebook beside the people's file was read
            people = human_data({"iri": "iri_briganti2018_keyed:keyed"})
        build.write_report(run, out, people=people)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        for owner, name, original in reversed(restore):
            setattr(owner, name, original)
        build._build = original_build
    figures = [fig for section in (built[0] if built else []) for _, fig in section.figures]
    start = time.perf_counter()
    for fig in figures:
        figure_to_data_uri(fig)
    totals["figures drawn one by one afterwards (what the figure process does beside the statistics)"] = [
        time.perf_counter() - start, len(figures)]
    parts = {k: {"s": round(v[0], 2), "calls": v[1]} for k, v in sorted(totals.items(), key=lambda kv: -kv[1][0])}
    result = {"in_process_s": round(wall, 2), "in_process_cpu_s": round(cpu, 2), "parts": parts,
              "sections_s": round(sum(v["s"] for k, v in parts.items() if k.startswith("section ")), 2)}
    if top:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            people = human_data({"iri": "iri_briganti2018_keyed:keyed"})
        profile = cProfile.Profile()
        profile.enable()
        write_report(run, out, people=people)
        profile.disable()
        listing = tempfile.NamedTemporaryFile("w+", suffix=".txt")
        pstats.Stats(profile, stream=listing).sort_stats("cumulative").print_stats(top)
        listing.seek(0)
        result["top"] = listing.read()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pattern", nargs="+", choices=PATTERNS, default=list(PATTERNS))
    parser.add_argument("--personas", type=int, nargs="+", default=[1200, 3000])
    parser.add_argument("--whole-above", type=int, default=10_000,
                        help="above this many personas, the whole IRI per request (JSON answers)")
    parser.add_argument("--keep", type=Path, help="keep the runs and reports in this folder (and reuse its runs)")
    parser.add_argument("--before-tree", help="also time the report of an older copy of the package (DIR/psyq), "
                        "alternating with the installed one (B A A B)")
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled report")
    parser.add_argument("--profile-top", type=int, default=0,
                        help="also run the report under cProfile and print this many functions by cumulative time")
    parser.add_argument("--output", default="report_scale", help="name of the results file in bench/results/")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="psyq_report_scale_"))
    results: dict = {"machine": machine(), "runs": {}}
    try:
        for pattern in args.pattern:
            for n in args.personas:
                key = f"{pattern} {n}"
                folder = work / f"{pattern}_n{n}"
                run, info = make_run(folder, n, pattern, whole=n > args.whole_above)
                if args.before_tree:
                    pairs = {"before": [], "after": []}
                    for who in ("before", "after", "after", "before"):
                        pairs[who].append(timed_report(run, folder / f"report_{who}",
                                                       args.before_tree if who == "before" else None))
                        print(f"  report of {key} ({who}): {pairs[who][-1]}", flush=True)
                    results["runs"][key] = {"pattern": pattern, "personas": n, "run": info, "before": pairs["before"],
                                            "after": pairs["after"], **min(pairs["after"], key=lambda r: r["wall_s"])}
                else:
                    timed = timed_report(run, folder / "report")
                    print(f"  report of {key}: {timed}", flush=True)
                    results["runs"][key] = {"pattern": pattern, "personas": n, "run": info, **timed}
                if not args.no_profile:
                    profiled = profiled_report(run, folder / "report_profiled", args.profile_top)
                    results["runs"][key].update({k: v for k, v in profiled.items() if k != "top"})
                    if "top" in profiled:
                        print(profiled["top"][:6000], flush=True)
        rows = [[r["pattern"], r["personas"], r["run"].get("presentation", ""), r["run"].get("run_s", ""),
                 r["wall_s"], r["cpu_s"], r["peak_rss_mib"], r.get("in_process_s", "—"),
                 ", ".join(f"{x:.2f}" for x in r["loadavg"])] for r in results["runs"].values()]
        print(table(rows, ["pattern", "personas", "run: presentation", "run s", "report wall s", "CPU s",
                           "peak RSS MiB", "in process s (timed parts)", "load average"]))
        if args.before_tree:
            rows = [[r["pattern"], r["personas"], who, *(f"{x['wall_s']} / {x['cpu_s']} / {x['peak_rss_mib']}" for x in r[who])]
                    for r in results["runs"].values() for who in ("before", "after")]
            print(table(rows, ["pattern", "personas", "code", "wall / CPU s / peak MiB", "again"]))
        for key, r in results["runs"].items():
            if "parts" in r:
                print(f"\n{key}, timed parts (cumulative wall s in the report's own process, calls):")
                print(table([[k, v["s"], v["calls"]] for k, v in r["parts"].items()], ["part", "s", "calls"]))
        print(f"results -> {save_results(args.output, results)}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
