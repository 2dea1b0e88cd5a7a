"""Batch mode round trip: N requests (default 100,000) through `psyq run` with `mode: batch`
against the batch-API stub (tests/batch_stub.py, its own process), with 0 lost as the target.

A study of N/4 personas × the 4 items of tests/data/mini_1to7.yaml (per item: one request
each) is run by the CLI in its own process (batches of `--batch-size`, default OpenAI's 50,000);
the stub answers each request by its own rule (``default_answer``: a digit hashed from the
messages) once the batch has been polled once. Then, independently of psyq's counts:

- lost: planned trials not stored as answered, plus stored answers that differ from the stub's
  rule applied to the request the trial records;
- paid twice: the requests the stub answered (its batches' ``request_counts.completed``, summed)
  minus the trials planned.

Prints one JSON line and writes bench/results/batch_roundtrip.json.

    python bench/batch_roundtrip.py [--trials 100000] [--batch-size 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from common import machine, save_results  # noqa: E402
from stub_server import default_answer  # noqa: E402

MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--batch-size", type=int, default=50_000)
    args = ap.parse_args()
    facts = machine()
    stub = subprocess.Popen([sys.executable, str(ROOT / "tests" / "batch_stub.py"), "--in-progress-polls", "1"],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = stub.stdout.readline().split()[1]
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            n_personas = args.trials // 4
            personas = [{"id": f"p{i:06d}", "attributes": {"age": 18 + i % 60, "index": i}} for i in range(n_personas)]
            (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
            study = {"psyq": "study/1", "id": "batch_bench", "instruments": [str(MINI)], "cohort": "cohort.yaml",
                     "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                                   "mode": "batch", "batch_size": args.batch_size, "batch_poll_s": 0.5,
                                   "batch_max_poll_s": 2}],
                     "protocol": {"seed": 1, "answer": "text"}}
            (tmp / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
            began = time.monotonic()
            out = subprocess.run([sys.executable, "-m", "psyq.cli", "run", str(tmp / "study.yaml"),
                                  "--runs-dir", str(tmp / "runs")], cwd=ROOT, capture_output=True, text=True)
            seconds = time.monotonic() - began
            load_after = os.getloadavg()
            db = next((tmp / "runs").rglob("run.sqlite"))
            with sqlite3.connect(db) as c:
                rows = c.execute("SELECT t.status, t.request, a.value FROM trials t JOIN answers a USING (trial_id)"
                                 ).fetchall()
            wrong = sum(1 for status, request, value in rows
                        if status != "answered" or value != int(default_answer(json.loads(request))))
            lost = args.trials - len(rows) + wrong
            with urllib.request.urlopen(f"{url}/batches?limit=100") as response:
                batches = json.load(response)["data"]
            answered_by_stub = sum(b["request_counts"]["completed"] for b in batches)
    finally:
        stub.terminate()
        stub.wait()
    result = {"trials": args.trials, "batch_size": args.batch_size, "batches": len(batches),
              "seconds": round(seconds, 1),
              "exit_code": out.returncode, "stored": len(rows), "lost": lost,
              "paid_twice": answered_by_stub - args.trials, "loadavg_after": load_after, "machine": facts}
    if out.returncode != 0:
        result["stderr"] = out.stderr[-2000:]
    save_results("batch_roundtrip", result)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}))
    return 0 if lost == 0 and out.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
