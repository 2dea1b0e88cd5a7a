"""Benchmark 3b: psyq against a raw loop sending the identical requests to the real local model.

psyq: ``psyq run`` (bench/psyq_driver.py) of the IRI on ``kind: local`` (llama-server + Gemma 3
270M, started by psyq, 4 slots, concurrency 4), ``logprobs`` answers, one item per request.
Its rate is taken over the administration (first trial started to last finished, from the run
store), so llama-server's start is not counted.

Raw loop: a fresh llama-server started exactly as psyq starts it (``psyq.engine.backends.local_server
.LlamaServer``, same binary, model, slots and flags), then a plain aiohttp loop at the same
concurrency posting the request bodies psyq stored (``trials.request``, in the order psyq
started them) to ``/v1/chat/completions`` and reading the JSON: first request sent to last
answer read. Both start with a cold KV cache, so the shared-prefix cache helps both alike.

Runs psyq, raw, psyq, raw (interleaved, so load from elsewhere falls on both) and reports the
median rates and psyq / raw. Target: ≥ 0.9.

    python bench/local_raw.py [--personas 2] [--reps 2]
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, median, run_json, save_results, write_study  # noqa: E402
from local_model import administration_figures  # noqa: E402

CONCURRENCY = 4


def psyq_once(folder: Path, personas: int) -> dict[str, Any]:
    """One psyq run; its administration figures and the run store's path."""
    study = write_study(folder, n_personas=personas, study_id="local_raw",
                        backend={"id": "local", "kind": "local", "concurrency": CONCURRENCY, "temperature": 1.0},
                        protocol={"item_order": "fixed", "reask_limit": 0, "answer": "logprobs",
                                  "presentation": "per_item"})
    result = run_json([PYTHON, str(BENCH / "psyq_driver.py"), str(study), str(folder / "runs")], timeout=1800)
    database = Path(result["run_dir"]) / "run.sqlite"
    return {"database": str(database), "counts": result["counts"], **administration_figures(database)}


def stored_requests(database: str) -> list[bytes]:
    """The request bodies psyq sent, in the order it started them."""
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT request FROM trials ORDER BY started_at, trial_id").fetchall()
    return [r[0].encode() for r in rows]


async def raw_loop(url: str, bodies: list[bytes]) -> tuple[float, int]:
    """Post every body at CONCURRENCY; seconds from the first send to the last answer, and how
    many came back 200 with choices."""
    import aiohttp
    queue = list(reversed(bodies))
    ok = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal ok
        while queue:
            body = queue.pop()
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as response:
                answer = await response.json()
                ok += response.status == 200 and bool(answer.get("choices"))

    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        start = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(CONCURRENCY)))
        return time.perf_counter() - start, ok


def raw_once(bodies: list[bytes]) -> dict[str, Any]:
    """A fresh llama-server as psyq starts it, and the raw loop against it."""
    from psyq.engine.backends.catalogue import default_local_model
    from psyq.engine.backends.local_build import ensure_llama_server
    from psyq.engine.backends.local_models import ensure_model
    from psyq.engine.backends.local_server import LlamaServer
    model = ensure_model(default_local_model("logprobs", ["rating"])[0])   # what the psyq run's study gets
    server = LlamaServer(ensure_llama_server(), model, parallel=CONCURRENCY)
    server.start()
    try:
        seconds, ok = asyncio.run(raw_loop(f"{server.base_url}/chat/completions", bodies))
    finally:
        server.stop()
    return {"requests": len(bodies), "ok": ok, "seconds": seconds, "requests_per_s": len(bodies) / seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--personas", type=int, default=2)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    psyq_runs, raw_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            load = os.getloadavg()[0]
            p = psyq_once(Path(tmp) / f"psyq{rep}", args.personas)
            p["load_1min"] = load
            psyq_runs.append(p)
            load = os.getloadavg()[0]
            r = raw_once(stored_requests(p["database"]))
            r["load_1min"] = load
            raw_runs.append(r)
            print(f"rep {rep}: psyq {p['requests_per_s']:.2f} req/s ({p['items_answered']}/{p['items']} answered, "
                  f"load {p['load_1min']:.1f}); raw {r['requests_per_s']:.2f} req/s ({r['ok']}/{r['requests']} ok, "
                  f"load {r['load_1min']:.1f}); ratio {p['requests_per_s'] / r['requests_per_s']:.2f}", flush=True)
    psyq_rate = median([p["requests_per_s"] for p in psyq_runs])
    raw_rate = median([r["requests_per_s"] for r in raw_runs])
    ratio = psyq_rate / raw_rate
    print(f"psyq / raw loop on the local model = {ratio:.2f} (target ≥ 0.9) {'MET' if ratio >= 0.9 else 'MISSED'}")
    print(f"-> {save_results('local_raw', {'psyq': psyq_runs, 'raw': raw_runs, 'ratio': ratio})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
