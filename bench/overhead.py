"""Benchmark 1: engine overhead against the raw HTTP limit, in one run.

Against one fast zero-latency stub (bench/fast_stub.py, its own process), at each concurrency:

- ``httpx``: a minimal loop with plain ``httpx.AsyncClient``;
- ``httpx-aiohttp``: the same loop with httpx over aiohttp's transport;
- ``aiohttp``: the same loop with plain aiohttp (the fastest Python client here);
- ``psyq``: ``psyq run`` of an equivalent study (IRI, one item per request, text answers, as many
  trials as the loops send requests), end to end: load, render, HTTP, parse, store, display;

The default 10,000 requests a measurement (a small cohort study) spreads psyq's fixed start-up
(reading the study and cohort, planning) as a real study would; ``--requests 3000`` gives the
reference note's size, where that start-up is a larger share.

Every measurement runs in a fresh process; repetitions are interleaved (all clients at all
concurrencies, then again) so that a burst of load from elsewhere does not hit one client only.
Reports the median rate of each and psyq's ratio to each loop; targets at c = 64: psyq ≥ 0.8 ×
httpx-aiohttp and ≥ 0.6 × aiohttp (issue 16; it was 0.4). ``--before-tree DIR`` adds
``psyq-before``: the same run by an older copy of the package (``DIR/psyq``, say from
``git archive HEAD | tar -x -C DIR/psyq``), timed by the same driver in the same interleaved rounds,
for before/after figures taken in the same minutes.

    python bench/overhead.py [--concurrency 1 16 64 256] [--reps 3] [--requests 3000]
                             [--profile 64]   # also write a pyinstrument profile of psyq at c=64
                             [--before-tree /tmp/engine-before]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (BENCH, IRI, PYTHON, RESULTS, fast_stub, median, run_json, save_results, table,  # noqa: E402
                    write_study)

CLIENTS = ("httpx", "httpx-aiohttp", "aiohttp", "psyq")
ENGINES = ("psyq", "psyq-before")                  # psyq-before: --before-tree
TARGETS = {"httpx-aiohttp": 0.8, "aiohttp": 0.6}   # psyq / loop at c = 64 (issue 16: 0.6, was 0.4)
ITEMS_PER_RESPONDENT = 28                          # the IRI


def request_payload() -> dict[str, Any]:
    """The body psyq sends for one IRI item to one persona (the loops send this one)."""
    from psyq.engine.design.instrument import load_instrument
    from psyq.engine.design.persona import Persona
    from psyq.engine.design.persona_prompt import DEFAULT_TEMPLATE, render_system_prompt
    from psyq.engine.trials.prompts import item_messages
    iri = load_instrument(IRI)
    persona = Persona(id="r000001", attributes={"gender": "male", "age": 19, "serial": 1})
    messages = item_messages(iri, iri.rating_items[0], system_prompt=render_system_prompt(persona, DEFAULT_TEMPLATE),
                             option_order="as_written", answer="text")
    return {"model": "bench-model", "messages": messages, "max_tokens": 48, "temperature": 1.0, "seed": 1}


def psyq_study(folder: Path, url: str, concurrency: int, requests: int) -> Path:
    """The study psyq runs: IRI per item, text answers, ⌈requests / 28⌉ respondents."""
    backend = {"id": "stub", "kind": "openai", "base_url": url, "model": "bench-model",
               "concurrency": concurrency, "timeout_s": 60}
    return write_study(folder, n_personas=math.ceil(requests / ITEMS_PER_RESPONDENT), backend=backend,
                       protocol={"presentation": "per_item", "answer": "text"})


def measure(client: str, url: str, concurrency: int, requests: int, payload_file: Path, work: Path,
            profile: Path | None = None, before_tree: str | None = None) -> dict[str, Any]:
    """One measurement of `client` at `concurrency`, in a fresh process (`psyq-before`: the
    package in `before_tree`)."""
    if client.startswith("psyq"):
        folder = Path(tempfile.mkdtemp(dir=work))
        study = psyq_study(folder, url, concurrency, requests)
        command = [PYTHON, str(BENCH / "psyq_driver.py"), str(study), str(folder / "runs")]
        if profile:
            command += ["--profile", str(profile)]
        if client == "psyq-before":
            command += ["--engine-tree", str(before_tree)]
        result = run_json(command)
        if result["counts"] != {"answered": result["trials"]}:
            raise RuntimeError(f"psyq run did not answer every trial: {result['counts']}")
        return {"rate": result["rate"], "seconds": result["seconds"], "requests": result["trials"], "errors": 0}
    return run_json([PYTHON, str(BENCH / "loops.py"), "--client", client, "--url", url, "--concurrency",
                     str(concurrency), "--requests", str(requests), "--payload", str(payload_file)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=CLIENTS)
    parser.add_argument("--profile", type=int, metavar="C", help="profile psyq at concurrency C (pyinstrument)")
    parser.add_argument("--before-tree", metavar="DIR",
                        help="also time psyq-before: the package copied to DIR/psyq (same rounds, same driver)")
    args = parser.parse_args(argv)
    if args.before_tree:
        if not (Path(args.before_tree) / "psyq" / "engine").is_dir():
            parser.error(f"--before-tree {args.before_tree}: no psyq/engine in it")
        args.clients = [*args.clients, "psyq-before"]

    runs: dict[str, dict[int, list[float]]] = {c: {k: [] for k in args.concurrency} for c in args.clients}
    with tempfile.TemporaryDirectory() as tmp, fast_stub() as (url, _):
        work = Path(tmp)
        payload_file = work / "payload.json"
        payload_file.write_text(json.dumps(request_payload()))
        for rep in range(args.reps):
            for concurrency in args.concurrency:
                for client in args.clients:
                    load = os.getloadavg()[0]
                    result = measure(client, url, concurrency, args.requests, payload_file, work,
                                     before_tree=args.before_tree)
                    if result.get("errors"):
                        print(f"  warning: {client} c={concurrency}: {result['errors']} errors")
                    runs[client][concurrency].append(result["rate"])
                    print(f"rep {rep + 1} c={concurrency:<3} {client:<14} {result['rate']:8.1f} /s"
                          f"  load1={load:.2f}", flush=True)
        if args.profile:   # an extra run, not counted: the profiler slows what it watches
            RESULTS.mkdir(exist_ok=True)
            profile = RESULTS / f"profile_psyq_c{args.profile}.html"
            measure("psyq", url, args.profile, args.requests, payload_file, work, profile)
            print(f"profile of psyq at c={args.profile} -> {profile} (and .txt)")
            if args.before_tree:
                profile = RESULTS / f"profile_psyq-before_c{args.profile}.html"
                measure("psyq-before", url, args.profile, args.requests, payload_file, work, profile,
                        args.before_tree)
                print(f"profile of psyq-before at c={args.profile} -> {profile} (and .txt)")

    medians = {c: {k: median(v) for k, v in by.items()} for c, by in runs.items()}
    rows, ratios = [], {}
    shown = [*CLIENTS, *(["psyq-before"] if args.before_tree else [])]
    engines = [e for e in ENGINES if e in medians]
    for k in args.concurrency:
        row: list[Any] = [k] + [f"{medians[c][k]:.0f}" if c in medians else "-" for c in shown]
        for engine in engines:
            for loop in ("httpx", "httpx-aiohttp", "aiohttp"):
                if engine in medians and loop in medians:
                    ratios.setdefault(f"{engine}/{loop}", {})[k] = medians[engine][k] / medians[loop][k]
                    row.append(f"{ratios[f'{engine}/{loop}'][k]:.2f}")
                else:
                    row.append("-")
        rows.append(row)
    print()
    print(table(rows, ["c", *[f"{c} /s" for c in shown],
                       *[f"{e}/{loop}" for e in engines for loop in ("httpx", "httpx-aiohttp", "aiohttp")]]))
    verdicts = {}
    if 64 in args.concurrency:
        for engine in engines:
            for loop, target in TARGETS.items():
                key = f"{engine}/{loop}"
                if key in ratios:
                    verdicts[key] = {"target": target, "ratio": ratios[key][64], "met": ratios[key][64] >= target}
                    print(f"c=64: {key} = {ratios[key][64]:.2f} (target ≥ {target}) "
                          f"{'MET' if verdicts[key]['met'] else 'MISSED'}")
    path = save_results("overhead", {"requests": args.requests, "reps": args.reps, "before_tree": args.before_tree,
                                     "runs": runs,
                                     "medians": medians, "ratios": ratios, "targets_c64": verdicts,
                                     "stub": "bench/fast_stub.py (asyncio.Protocol, fixed JSON, own process)"})
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
