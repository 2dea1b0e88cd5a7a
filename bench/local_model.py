"""Benchmark 3: the local model (llama.cpp's llama-server + Gemma 3 270M, ``kind: local``).

Items/s and tokens/s of the answer modes and presentations a study can choose, each a real
``psyq run`` (bench/psyq_driver.py) of the IRI with the same personas and concurrency 4
(the quick start's):

- ``logprobs`` per item: one answer token, read from its probabilities (max_tokens 1);
- ``text`` per item: a free-text answer (max_tokens 48), parsed;
- ``text`` whole instrument: all 28 items in one request (max_tokens 16 × 28 + 64), parsed;
- ``logprobs`` per item with ``cache_prompt: false``: llama-server re-reads every prompt from the
  start instead of reusing the KV cache of the persona's shared prefix (system prompt and the
  instrument's instructions), which is what it does by default (``cache_prompt: true``).

Rates are taken over the administration itself (first trial started to last trial finished, from
the run store), so llama-server's start (about 3 s) is not counted. Tokens: prompt tokens as the
server counts them (``usage``), the part it actually evaluated (``timings.prompt_n``; the rest
came from its cache), and completion tokens. Target: ``logprobs`` ≥ 5 × ``text`` (items/s).

    python bench/local_model.py [--personas 4] [--text-personas 2]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, run_json, save_results, table, write_study  # noqa: E402


def administration_figures(database: Path) -> dict[str, Any]:
    """Items/s and tokens/s over first start to last finish, from a run's store."""
    with sqlite3.connect(database) as db:
        trials = db.execute("SELECT started_at, finished_at, prompt_tokens, completion_tokens, response, status "
                            "FROM trials").fetchall()
        items = db.execute("SELECT COUNT(*), SUM(status = 'answered') FROM answers").fetchone()
    start = min(datetime.fromisoformat(t[0]).timestamp() for t in trials)
    end = max(datetime.fromisoformat(t[1]).timestamp() for t in trials)
    seconds = end - start
    prompt = sum(t[2] or 0 for t in trials)
    completion = sum(t[3] or 0 for t in trials)
    evaluated = cached = 0
    for t in trials:
        timings = (json.loads(t[4]) if t[4] else {}).get("timings") or {}
        evaluated += timings.get("prompt_n", 0)
        cached += timings.get("cache_n", 0)
    return {"trials": len(trials), "items": items[0], "items_answered": int(items[1] or 0), "seconds": seconds,
            "items_per_s": items[0] / seconds, "requests_per_s": len(trials) / seconds,
            "prompt_tokens": prompt, "prompt_tokens_evaluated": evaluated, "prompt_tokens_from_cache": cached,
            "completion_tokens": completion, "prompt_tokens_per_s": prompt / seconds,
            "evaluated_prompt_tokens_per_s": evaluated / seconds, "completion_tokens_per_s": completion / seconds}


def run_config(work: Path, name: str, personas: int, protocol: dict[str, Any], extra: dict | None) -> dict[str, Any]:
    """One psyq run of the IRI on the local model; its administration figures."""
    folder = work / name
    study = write_study(folder, n_personas=personas, study_id=f"local_{name}",
                        backend={"id": "local", "kind": "local", "concurrency": 4, "temperature": 1.0},
                        protocol={"item_order": "fixed", "reask_limit": 0, **protocol})
    command = [PYTHON, str(BENCH / "psyq_driver.py"), str(study), str(folder / "runs")]
    if extra:
        command += ["--payload-extra", json.dumps(extra)]
    result = run_json(command, timeout=1200)
    figures = administration_figures(Path(result["run_dir"]) / "run.sqlite")
    return {"name": name, "protocol": protocol, "payload_extra": extra, "personas": personas,
            "counts": result["counts"], "wall_seconds_with_server_start": result["seconds"], **figures}


CONFIGS = [  # name, protocol, extra request fields, which persona count
    ("logprobs_per_item", {"answer": "logprobs", "presentation": "per_item"}, None, "personas"),
    ("text_per_item", {"answer": "text", "presentation": "per_item"}, None, "text_personas"),
    ("text_whole_instrument", {"answer": "text", "presentation": "whole_instrument"}, None, "personas"),
    ("logprobs_per_item_no_cache", {"answer": "logprobs", "presentation": "per_item"}, {"cache_prompt": False},
     "personas"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--personas", type=int, default=4, help="respondents for the fast modes")
    parser.add_argument("--text-personas", type=int, default=2, help="respondents for text per item (slow)")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, protocol, extra, which in CONFIGS:
            result = run_config(Path(tmp), name, getattr(args, which), protocol, extra)
            results.append(result)
            print(f"{name:<28} {result['items_per_s']:7.2f} items/s  {result['requests_per_s']:6.2f} requests/s  "
                  f"prompt {result['prompt_tokens_per_s']:7.0f} tok/s (evaluated {result['evaluated_prompt_tokens_per_s']:6.0f})"
                  f"  completion {result['completion_tokens_per_s']:6.1f} tok/s  answered "
                  f"{result['items_answered']}/{result['items']}", flush=True)
    by = {r["name"]: r for r in results}
    ratio = by["logprobs_per_item"]["items_per_s"] / by["text_per_item"]["items_per_s"]
    cache_gain = by["logprobs_per_item"]["items_per_s"] / by["logprobs_per_item_no_cache"]["items_per_s"]
    print()
    print(table([[r["name"], r["trials"], r["items"], f"{r['seconds']:.1f}", f"{r['items_per_s']:.2f}",
                  f"{r['prompt_tokens_per_s']:.0f}", f"{r['evaluated_prompt_tokens_per_s']:.0f}",
                  f"{r['completion_tokens_per_s']:.1f}", f"{r['items_answered']}/{r['items']}"] for r in results],
                ["config", "requests", "items", "s", "items/s", "prompt tok/s", "evaluated prompt tok/s",
                 "completion tok/s", "answered"]))
    print(f"logprobs / text (per item, items/s) = {ratio:.1f} (target ≥ 5) {'MET' if ratio >= 5 else 'MISSED'}")
    print(f"shared-prefix cache: logprobs with / without = {cache_gain:.2f}")
    print(f"-> {save_results('local_model', {'configs': results, 'logprobs_over_text': ratio, 'met': ratio >= 5, 'cache_gain': cache_gain})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
