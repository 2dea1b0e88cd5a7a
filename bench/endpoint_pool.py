"""Benchmark 6: endpoint pools and prompt-cache accounting.

**Scaling.** Two replicas of a slow server (bench/slow_stub.py: fixed latency, a fixed number of
slots, so each server answers at most slots / latency requests a second) against one. psyq runs
the IRI study (per item) with ``concurrency`` equal to the server's slots: one replica
(``base_url``), the same replica at twice the concurrency (the server's slots are the limit, so
this should gain nothing), and two replicas (``base_urls``, ``concurrency`` per endpoint). The
throughput is trials / wall time of ``administer`` (in process, study loaded beforehand), median
of REPS runs, the three settings alternating. Target: two replicas ≥ 1.8 × one ("≈ 2 ×").

**Cached tokens.** The same study against tests/stub_server.py ``--prompt-cache openai`` and
``llamacpp`` (own process), which reports ``len(system prompt) // 4`` cached tokens for every
request whose persona system prompt it has seen before; psyq's stored sums are compared with the
sums computed by hand from the requests the stub recorded (by that rule), and the share of
prompt tokens cached is reported. Target: psyq's sums equal the hand-computed ones exactly.

    python bench/endpoint_pool.py [--personas 15] [--latency 0.1] [--slots 4] [--reps 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, fault_stub, median, save_results, server_process, table, write_study  # noqa: E402

from psyq.engine.administer.run import administer  # noqa: E402
from psyq.engine.design.study import load_study  # noqa: E402
from psyq.engine.results.usage import token_usage  # noqa: E402


def slow_stub(latency: float, slots: int):
    return server_process([PYTHON, str(BENCH / "slow_stub.py"), "--port", "0", "--latency", str(latency),
                           "--slots", str(slots)])


def timed_run(folder: Path, personas: int, backend: dict[str, Any]) -> dict[str, Any]:
    """Administer the study once into a fresh runs folder; trials, seconds, trials/s, per endpoint."""
    study = load_study(write_study(folder, n_personas=personas, backend=backend, protocol={"answer": "text"}))
    began = time.perf_counter()
    result = asyncio.run(administer(study, folder / "runs", log=lambda m: None))
    seconds = time.perf_counter() - began
    with sqlite3.connect(result.run_dir.database) as db:
        per_endpoint = dict(db.execute("SELECT endpoint, COUNT(*) FROM trials GROUP BY endpoint").fetchall())
    answered = result.counts.get("answered", 0)
    return {"trials": result.planned, "answered": answered, "seconds": seconds, "per_s": answered / seconds,
            "per_endpoint": per_endpoint}


def scaling(work: Path, personas: int, latency: float, slots: int, reps: int) -> dict[str, Any]:
    runs: dict[str, list[dict]] = {"one replica": [], "one replica, 2 × concurrency": [], "two replicas": []}
    with ExitStack() as stack:
        (url_a, _), (url_b, _) = stack.enter_context(slow_stub(latency, slots)), stack.enter_context(slow_stub(latency, slots))
        base = {"id": "slow", "kind": "openai", "model": "stub-model", "timeout_s": 30}
        settings = {"one replica": {**base, "base_url": url_a, "concurrency": slots},
                    "one replica, 2 × concurrency": {**base, "base_url": url_a, "concurrency": 2 * slots},
                    "two replicas": {**base, "base_urls": [url_a, url_b], "concurrency": slots}}
        for rep in range(reps):
            for name, backend in settings.items():
                runs[name].append(timed_run(work / f"{name.replace(' ', '_')}_{rep}", personas, backend))
    out = {name: {"per_s": median([r["per_s"] for r in rs]), "runs": rs} for name, rs in runs.items()}
    ratio = out["two replicas"]["per_s"] / out["one replica"]["per_s"]
    return {"latency_s": latency, "slots": slots, "personas": personas, "settings": out,
            "server_bound_per_s": slots / latency, "ratio_two_to_one": ratio, "met": ratio >= 1.8}


def expected_from_record(record: Path) -> tuple[int, int]:
    """(prompt, cached) tokens by the stub's documented rule, from the requests it recorded."""
    prompt = cached = 0
    seen: set[str] = set()
    for line in record.read_text().splitlines():
        entry = json.loads(line)
        if entry["path"] != "/v1/chat/completions" or entry["outcome"] != "ok":
            continue
        messages = entry["messages"]
        prompt += sum(len(m["content"]) for m in messages) // 4
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        cached += len(system) // 4 if system in seen else 0
        seen.add(system)
    return prompt, cached


def cache_accounting(work: Path, personas: int, shape: str) -> dict[str, Any]:
    record = work / f"record_{shape}.jsonl"
    with fault_stub("--prompt-cache", shape, "--record", str(record)) as (url, _):
        backend = {"id": "stub", "kind": "openai", "model": "stub-model", "base_url": url, "concurrency": 8}
        study = load_study(write_study(work / f"cache_{shape}", n_personas=personas, backend=backend,
                                       protocol={"answer": "text"}))
        result = asyncio.run(administer(study, work / f"cache_{shape}" / "runs", log=lambda m: None))
    with sqlite3.connect(result.run_dir.database) as db:
        (usage,) = token_usage(db)
    prompt, cached = expected_from_record(record)
    return {"shape": shape, "trials": result.planned, "prompt_tokens": usage.prompt_tokens,
            "cached_tokens": usage.cached_tokens, "trials_with_cached": usage.with_cached,
            "share_cached": usage.cached_tokens / usage.prompt_tokens,
            "expected_prompt": prompt, "expected_cached": cached,
            "met": (usage.prompt_tokens, usage.cached_tokens) == (prompt, cached)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--personas", type=int, default=15, help="IRI: 28 trials per persona")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        scale = scaling(work, args.personas, args.latency, args.slots, args.reps)
        caches = [cache_accounting(work, args.personas, shape) for shape in ("openai", "llamacpp")]
    rows = [[name, f"{s['per_s']:.1f}", ", ".join(f"{r['seconds']:.2f}" for r in s["runs"]),
             json.dumps(s["runs"][-1]["per_endpoint"])] for name, s in scale["settings"].items()]
    print(f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(table(rows, ["setting", "trials/s (median)", "seconds per run", "per endpoint (last run)"]))
    print(f"two replicas / one = {scale['ratio_two_to_one']:.2f} (server bound {scale['server_bound_per_s']:.0f}/s "
          f"per replica) -> {'MET' if scale['met'] else 'MISSED'} (≥ 1.8)")
    for c in caches:
        print(f"{c['shape']}: prompt {c['prompt_tokens']:,} (by hand {c['expected_prompt']:,}), cached "
              f"{c['cached_tokens']:,} (by hand {c['expected_cached']:,}) = {c['share_cached']:.1%} of the prompt "
              f"tokens -> {'MET' if c['met'] else 'MISSED'}")
    print(f"-> {save_results('endpoint_pool', {'load_at_start': load, 'scaling': scale, 'cache': caches})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
