"""A report at scale (issue 35): `psyq report` of a large cohort against the shipped Briganti people.

For each ``--personas`` size (default 1,200 — the size of Pan et al.'s human sample — and 3,000):

1. a study of that many personas (hand-listed, gender and age varying) × the IRI, one item per
   request, text answers, against bench/fast_stub.py answering A–E at random (seeded): noise-like
   answers, as a small model gives them, which are what make the factor models ill-conditioned;
   run by ``psyq run`` in its own process (bench/psyq_driver.py);
2. ``psyq report RUN --human iri=iri_briganti2018_keyed:keyed`` in its own process, timed wall to
   wall (interpreter start-up and imports included, as a user waits) with the process's peak
   resident set (``ru_maxrss`` of the child) and its CPU time;
3. the same report in this process under cProfile: the cumulative time of each report section and
   of the statistics that dominate (``--profile-top`` functions by cumulative time are printed).

Prints the figures and writes bench/results/report_scale.json. Usage::

    python bench/report_scale.py [--personas 1200 3000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import PYTHON, BENCH, machine, random_stub, save_results, table, write_study

REPORT_SECTIONS = ("study", "missing", "norms", "reliability", "fidelity", "effects", "items", "people",
                   "construct_validity", "same_construct", "verdict")
STATISTICS = ("measurement_invariance", "scorecard", "distinguishability", "style_and_trait", "relations", "graded_response_model", "differential_item_functioning",
              "information_curves", "polychoric", "compare_with_norms")


def make_run(folder: Path, n: int) -> Path:
    """Run the IRI on `n` personas against the random-answer stub; return the run directory."""
    with random_stub() as (url, _):
        study = write_study(folder, n_personas=n, study_id=f"scale{n}",
                            backend={"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                                     "concurrency": 64},
                            protocol={"answer": "text", "option_order": "as_written"})
        out = subprocess.run([PYTHON, str(BENCH / "psyq_driver.py"), str(study), str(folder / "runs")],
                             capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"  {n} personas: {result['counts']} in {result['seconds']:.1f} s", flush=True)
    return Path(result["run_dir"])


def timed_report(run: Path, out: Path) -> dict:
    """`psyq report` in its own process: wall seconds, CPU seconds, peak RSS (MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([PYTHON, "-m", "psyq.engine.cli", "report", str(run), "--out", str(out), "--human",
                    "iri=iri_briganti2018_keyed:keyed"], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(after.ru_maxrss / 1024)}


def profiled_report(run: Path, out: Path, top: int) -> dict:
    """The same report under cProfile in this process: cumulative seconds per section and statistic."""
    from psyq.analysis.report.build import write_report
    from psyq.analysis.scoring.human_data import human_data

    people = human_data({"iri": "iri_briganti2018_keyed:keyed"})
    profile = cProfile.Profile()
    profile.enable()
    write_report(run, out, people=people)
    profile.disable()
    stats = pstats.Stats(profile)
    cumulative: dict[str, float] = {}
    calls: dict[str, int] = {}
    for (filename, _, name), (_, ncalls, _, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        module = Path(filename).stem
        key = None
        if name == "sections" and module in REPORT_SECTIONS:
            key = f"section {module}"
        elif name in STATISTICS:
            key = name
        if key:
            cumulative[key] = cumulative.get(key, 0.0) + cum
            calls[key] = calls.get(key, 0) + ncalls
    listing = tempfile.NamedTemporaryFile("w+", suffix=".txt")
    pstats.Stats(profile, stream=listing).sort_stats("cumulative").print_stats(top)
    listing.seek(0)
    total = sum(v for k, v in cumulative.items() if k.startswith("section "))
    return {"profiled_total_s": round(stats.total_tt, 2), "sections_s": round(total, 2),  # type: ignore[attr-defined]
            "parts": {k: {"s": round(v, 2), "calls": calls[k]} for k, v in sorted(cumulative.items(), key=lambda kv: -kv[1])},
            "top": listing.read()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--personas", type=int, nargs="+", default=[1200, 3000])
    parser.add_argument("--keep", type=Path, help="keep the runs and reports in this folder")
    parser.add_argument("--profile-top", type=int, default=25)
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="psyq_report_scale_"))
    results = {"machine": machine(), "sizes": {}}
    try:
        for n in args.personas:
            run = make_run(work / f"n{n}", n)
            timed = timed_report(run, work / f"n{n}" / "report")
            print(f"  report of {n}: {timed}", flush=True)
            profiled = profiled_report(run, work / f"n{n}" / "report_profiled", args.profile_top)
            results["sizes"][str(n)] = {**timed, **{k: v for k, v in profiled.items() if k != "top"}}
            print(profiled["top"][:6000])
        rows = [[n, r["wall_s"], r["cpu_s"], r["peak_rss_mib"], r["sections_s"]] for n, r in results["sizes"].items()]
        print(table(rows, ["personas", "report wall s", "CPU s", "peak RSS MiB", "sections s (profiled)"]))
        for n, r in results["sizes"].items():
            print(f"\n{n} personas, profiled parts (cumulative s, calls):")
            print(table([[k, v["s"], v["calls"]] for k, v in r["parts"].items()], ["part", "s", "calls"]))
        print(f"results -> {save_results('report_scale', results)}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
