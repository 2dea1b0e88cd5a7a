"""Benchmark 2: rate-limit adherence against a server that enforces requests per minute.

The project's stub (tests/stub_server.py, own process) answers 429 with a ``Retry-After`` to any
request that would put more than LIMIT requests in the last 60 s (a sliding window). ``psyq run``
administers a study whose backend sets ``requests_per_minute: LIMIT``. From the stub's own
record (one line per request received, with its time and outcome) this reports the rate psyq
sustained (answered requests per minute, first to last) as a share of the limit, the same in the
window after the first minute (when the server's window is full and a client that paces badly
gets 429s), and the share of requests answered 429. Targets: ≥ 95 % of the limit, < 1 % 429.

    python bench/ratelimit.py [--limit 3000] [--trials 4200] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PYTHON, ROOT, fault_stub, save_results, write_study  # noqa: E402


def sustained_rpm(times: list[float]) -> float:
    """Requests per minute over the span of `times` (sorted): (n − 1) intervals over the span."""
    if len(times) < 2 or times[-1] == times[0]:
        return math.nan
    return (len(times) - 1) / (times[-1] - times[0]) * 60


def analyse(record: Path, limit: float) -> dict[str, Any]:
    """Rates and 429 share from the stub's record file."""
    lines = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    posts = [r for r in lines if r.get("path", "").endswith("/chat/completions")]
    outcomes = Counter(r["outcome"] for r in posts)
    ok = sorted(r["time"] for r in posts if r["outcome"] == "ok")
    after_first_minute = [t for t in ok if t >= ok[0] + 60] if ok else []
    overall, steady = sustained_rpm(ok), sustained_rpm(after_first_minute)
    share_429 = outcomes.get("429", 0) / len(posts) if posts else math.nan
    return {"limit_rpm": limit, "requests": len(posts), "outcomes": dict(outcomes),
            "seconds": ok[-1] - ok[0] if ok else math.nan, "rpm": overall, "rpm_after_first_minute": steady,
            "share_of_limit": overall / limit, "share_of_limit_after_first_minute": steady / limit,
            "share_429": share_429, "met": overall / limit >= 0.95 and share_429 < 0.01}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=float, default=3000, help="the server's requests per minute")
    parser.add_argument("--trials", type=int, default=4200, help="about this many (a multiple of 28)")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        record = work / "record.jsonl"
        with fault_stub("--rpm-limit", str(int(args.limit)), "--record", str(record)) as (url, _):
            backend = {"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                       "concurrency": args.concurrency, "requests_per_minute": args.limit, "timeout_s": 30}
            study = write_study(work / "study", n_personas=math.ceil(args.trials / 28), backend=backend,
                                protocol={"answer": "text"})
            began = time.perf_counter()
            run = subprocess.run([PYTHON, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(work / "runs")],
                                 cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - began
        if run.returncode != 0:
            raise SystemExit(f"psyq run failed: {run.stderr[-2000:]}")
        result = analyse(record, args.limit) | {"psyq_wall_seconds": wall, "concurrency": args.concurrency,
                                                "psyq_output": run.stdout.strip().splitlines()[-1]}
    print(f"limit {args.limit:.0f}/min; {result['requests']} requests in {result['seconds']:.1f} s; "
          f"outcomes {result['outcomes']}")
    print(f"sustained {result['rpm']:.1f}/min = {result['share_of_limit']:.1%} of the limit "
          f"(after the first minute {result['share_of_limit_after_first_minute']:.1%}); "
          f"429s {result['share_429']:.2%} -> {'MET' if result['met'] else 'MISSED'} (≥ 95 %, < 1 %)")
    print(f"-> {save_results('ratelimit', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
