"""A report of a conditions study at scale (issue 54): 12 groups of 1,000 personas against the 1,973 people.

1. A study of 2 backends × 6 conditions (persona template {plain, eager} × temperature {1, 0.7,
   0.3}) × 1,000 personas × the IRI, the whole IRI per request with a JSON answer (12,000
   requests instead of 336,000 one item at a time: the report reads answers, not how they were
   asked), run in this process against the test stub (tests/stub_server.py), which answers each
   (backend, condition, persona) in a pattern of its own: backend a as people do (one of the 1,973
   people's answers, a different person per temperature; ``eager``: the same a point up), backend b
   uniform answers (``plain``) or a small model's (``eager``: most answers on B and C, E never).
   The run is reused from ``--keep DIR`` when it is there.
2. ``psyq report RUN --human iri=iri_briganti2018_keyed:keyed`` in its own process, timed wall to
   wall with its CPU time and peak resident set (bench/report_scale.py's ``timed_report``);
3. unless ``--no-profile``, the same report in this process with a timer around each part
   (bench/report_scale.py's ``profiled_report``, with the conditions' statistics added to its parts:
   ``compare_conditions``, ``distribution_distances``, ``distinguishability``), cumulative seconds as
   the user waits for them.

Writes bench/results/conditions_report.json. Usage::

    python bench/conditions_report.py [--personas 1000] [--keep DIR] [--no-profile]

Target (issue 54): the report of 12 conditions × 1,000 personas against the 1,973 people in ≤ 60 s
on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
import time
import warnings
from pathlib import Path

import yaml

from common import ROOT, machine, save_results, table

sys.path.insert(0, str(ROOT / "tests"))

import report_scale  # noqa: E402
from stub_server import StubServer  # noqa: E402

LETTERS = "ABCDE"
SMALL_MODEL = (0.05, 0.45, 0.4, 0.1, 0.0)        # a small model's answers: piled on B and C, E never
TEMPERATURES = {"t10": None, "t07": 0.7, "t03": 0.3}
TEMPLATES = {"plain": "You are {id}. Answer as yourself.", "eager": "You are {id}, eager to agree. Answer as yourself."}


def _unit(*key: object) -> float:
    """A number in [0, 1), a fixed function of `key`."""
    return int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=8).digest(), "big") / 2 ** 64


def scripted(people, items: list[str]):
    """The stub's reply to a whole-IRI request: a JSON object item id → option letter, in the pattern
    of the request's backend and condition (module docstring)."""
    rows = people[items].to_numpy(dtype=int)

    def answer(body: dict) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        persona = system.split("You are ")[1].split(".")[0].split(",")[0]
        temperature = body.get("temperature")
        eager = "eager to agree" in system
        if body["model"] == "model-a":
            row = rows[int(_unit("row", persona, temperature) * len(rows))]
            values = [min(v + 1, 4) if eager else v for v in row]
        elif not eager:
            values = [int(_unit(persona, item, temperature) * 5) for item in items]
        else:
            cumulative = [sum(SMALL_MODEL[:k + 1]) for k in range(5)]
            values = [next(k for k, c in enumerate(cumulative) if _unit(persona, item, temperature) < c)
                      for item in items]
        assert "Statements:" in user
        return json.dumps({item: LETTERS[v] for item, v in zip(items, values)})
    return answer


def make_run(folder: Path, n: int) -> tuple[Path, dict]:
    """The 12-group run of `n` personas (module docstring, 1.); reused when `folder` holds it finished."""
    from psyq import administer, human_data, load_instrument, load_study

    runs = folder / "runs"
    for manifest in sorted(runs.glob("*/*/manifest.json")) if runs.exists() else []:
        with sqlite3.connect(manifest.parent / "run.sqlite") as db:
            answered = db.execute("select count(*) from trials where status = 'answered'").fetchone()[0]
        if answered == 12 * n:
            print(f"  reusing {manifest.parent}", flush=True)
            return manifest.parent, json.loads((folder / "run.json").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    iri = load_instrument("iri")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        people = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
    items = [i.id for i in iri.rating_items]
    (folder / "cohort.yaml").write_text(yaml.safe_dump({
        "psyq": "cohort/1", "id": "bench", "include_baseline": False, "template": "You are {id}.",
        "personas": [{"id": f"p{k:05d}"} for k in range(n)]}))
    with StubServer(answer=scripted(people, items)) as stub:
        backend = {"kind": "openai", "base_url": stub.url, "concurrency": 16, "timeout_s": 60}
        study = {"psyq": "study/1", "id": "conditions_bench", "instruments": ["iri"], "cohort": "cohort.yaml",
                 "backends": [{"id": "a", "model": "model-a", **backend}, {"id": "b", "model": "model-b", **backend}],
                 "protocol": {"presentation": "whole_instrument", "answer": "json", "option_order": "as_written",
                              "seed": 1},
                 "conditions": {"cross": {
                     "persona": {name: {"template": text} for name, text in TEMPLATES.items()},
                     "temperature": {name: ({"temperature": t} if t is not None else {})
                                     for name, t in TEMPERATURES.items()}}}}
        (folder / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
        start = time.perf_counter()
        result = asyncio.run(administer(load_study(folder / "study.yaml"), runs, log=lambda m: None))
        seconds = time.perf_counter() - start
    info = {"run_s": round(seconds, 1), "trials": result.planned, "counts": result.counts,
            "groups": 12, "personas_per_group": n, "presentation": "whole_instrument, json"}
    (folder / "run.json").write_text(json.dumps(info))
    print(f"  run: {info}", flush=True)
    return result.run_dir.path, info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--personas", type=int, default=1000, help="personas per group (12 groups)")
    parser.add_argument("--keep", type=Path, help="keep the run and reports in this folder (and reuse its run)")
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled report")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="psyq_conditions_report_"))
    report_scale.TIMED.update({
        ("psyq.analysis.statistics.standin.conditions", "compare_conditions"): "compare_conditions (head to head)",
        ("psyq.analysis.statistics.distances", "distribution_distances"): "distribution_distances (item distances)",
        ("psyq.analysis.statistics.standin.distinguishability", "distinguishability"):
            "distinguishability (classifiers; scorecard and head to head)",
    })
    results: dict = {"machine": machine()}
    try:
        run, info = make_run(work / f"n{args.personas}", args.personas)
        timed = report_scale.timed_report(run, work / "report")
        print(f"  report: {timed}", flush=True)
        results.update(personas=args.personas, groups=12, run=info, **timed)
        if not args.no_profile:
            profiled = report_scale.profiled_report(run, work / "report_profiled", 0)
            results.update(profiled)
            print(table([[k, v["s"], v["calls"]] for k, v in profiled["parts"].items()], ["part", "s", "calls"]))
        print(f"results -> {save_results('conditions_report', results)}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
