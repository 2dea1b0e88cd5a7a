"""Benchmark 5: soak. 10,000 trials against a stub injecting 20 % faults, the runner SIGKILLed
at three random points and rerun; then prove from the stub's own record and the store that no
answer was lost, no trial was sent again once answered, and retries stayed bounded.

The stub is the project's fault injector (tests/stub_server.py, own process, kept running across
the kills) with ``--fault-rate 0.2`` over 429, 500, timeout (the server hangs past the client's
timeout), drop (connection closed without a reply) and garbage (HTTP 200 with an HTML body),
and ``--record`` (one JSON line per request received, written before it is answered). Each run
is the real ``psyq run`` command in its own process; three kill points are drawn at random
(seeded) as numbers of committed trials, and the run is SIGKILLed as soon as the store holds at
least that many; the fourth run finishes the study.

Checks (each printed with its count):

- lost: trials committed before a kill and missing (or changed) afterwards, plus trials not
  answered at the end, plus stored answers that differ from what the stub answers (the stub's
  answer is a hash of the request's messages, so a wrong pairing would show);
- sent again after answered: requests recorded after the kill for trials committed before it,
  and requests recorded after a trial's commit time for that trial (any run);
- retries bounded: the most requests any trial took in one run is at most ``max_retries + 1``.

    python bench/soak.py [--trials 10000] [--fault-rate 0.2] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import PYTHON, ROOT, fault_stub, save_results, write_study  # noqa: E402
from stub_server import default_answer  # noqa: E402

FAULT_KINDS = "429,500,timeout,drop,garbage"
MAX_RETRIES = 8
KILLS = 3


def messages_key(messages: Any) -> str:
    """A request's identity in the stub's record: its messages as canonical JSON."""
    return json.dumps(messages, sort_keys=True)


def committed(database: Path) -> dict[str, tuple[str, float, int | None, str]]:
    """Finished trials in the store: trial_id → (messages key, finished_at epoch s, value, status)."""
    if not database.exists():
        return {}
    try:
        with sqlite3.connect(database) as db:
            rows = db.execute("SELECT t.trial_id, t.request, t.finished_at, a.value, t.status FROM trials t "
                              "JOIN answers a USING (trial_id) WHERE t.status IN ('answered', 'missing')").fetchall()
    except sqlite3.Error:
        return {}
    return {t: (messages_key(json.loads(req)["messages"]), datetime.fromisoformat(fin).timestamp(), value, status)
            for t, req, fin, value, status in rows}


def count_committed(database: Path) -> int:
    """How many trials are finished in the store now (0 if it cannot be read yet)."""
    try:
        with sqlite3.connect(database, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM trials WHERE status IN ('answered', 'missing')").fetchone()[0]
    except sqlite3.Error:
        return 0


def record_lines(path: Path) -> list[dict[str, Any]]:
    """The chat requests in the stub's record, in the order received."""
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in lines if r.get("path", "").endswith("/chat/completions")]


def find_database(runs: Path) -> Path | None:
    """The run's SQLite file under `runs`, once psyq has created it."""
    return next(runs.rglob("run.sqlite"), None) if runs.exists() else None


def run_until(command: list[str], runs: Path, kill_at: int | None, timeout_s: float = 900) -> dict[str, Any]:
    """Run psyq; SIGKILL it once its store holds `kill_at` finished trials (None: let it finish)."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout_s
    killed = False
    database = None
    while process.poll() is None and time.monotonic() < deadline:
        database = database or find_database(runs)
        if kill_at is not None and database is not None and count_committed(database) >= kill_at:
            process.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.01)
    if process.poll() is None and not killed:
        process.kill()
        raise SystemExit("psyq run did not finish in time")
    _, stderr = process.communicate()
    if not killed and process.returncode != 0:
        raise SystemExit(f"psyq run failed ({process.returncode}): {stderr[-2000:]}")
    return {"killed": killed, "returncode": process.returncode}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10000, help="at least this many (IRI: 28 a respondent)")
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    n_personas = math.ceil(args.trials / 28)
    planned = n_personas * 28
    kill_points = sorted(rng.sample(range(int(0.05 * planned), int(0.95 * planned)), KILLS))

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        record = work / "record.jsonl"
        stub_args = ["--fault-rate", str(args.fault_rate), "--fault-kinds", FAULT_KINDS, "--seed", str(args.seed),
                     "--retry-after", "0.05", "--timeout-hang", "2", "--record", str(record)]
        with fault_stub(*stub_args) as (url, _):
            backend = {"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                       "concurrency": args.concurrency, "max_retries": MAX_RETRIES, "timeout_s": 0.5,
                       "backoff_s": 0.01, "max_backoff_s": 0.2}
            study = write_study(work / "study", n_personas=n_personas, backend=backend, protocol={"answer": "text"})
            command = [PYTHON, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(work / "runs")]
            runs = work / "runs"
            segments = []        # per run: record lines before it, trials committed before it
            began = time.perf_counter()
            for run_index, kill_at in enumerate([*kill_points, None]):
                database = find_database(runs)
                before = committed(database) if database else {}
                sent_before = len(record_lines(record))
                outcome = run_until(command, runs, kill_at)
                database = find_database(runs)
                after = committed(database)
                segments.append({"run": run_index + 1, "kill_at": kill_at, "committed_before": len(before),
                                 "committed_after": len(after), "sent_before": sent_before, "before": before,
                                 **outcome})
                print(f"run {run_index + 1}: {'SIGKILL at ≥ ' + str(kill_at) if kill_at else 'to the end'}; "
                      f"committed {len(before)} -> {len(after)}", flush=True)
            wall = time.perf_counter() - began
        final = committed(database)
        with sqlite3.connect(database) as db:
            statuses = dict(db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())
            max_attempts_stored = db.execute("SELECT MAX(attempts) FROM trials").fetchone()[0]
        requests = record_lines(record)

    result = verify(planned, segments, final, requests, statuses)
    result |= {"planned": planned, "kill_points": kill_points, "fault_rate": args.fault_rate,
               "fault_kinds": FAULT_KINDS, "max_retries": MAX_RETRIES, "concurrency": args.concurrency,
               "max_attempts_stored": max_attempts_stored, "wall_seconds": wall,
               "runs": [{k: v for k, v in s.items() if k != "before"} for s in segments]}
    print_summary(result)
    print(f"-> {save_results('soak', result)}")
    return 0 if result["ok"] else 1


def verify(planned: int, segments: list[dict[str, Any]], final: dict[str, tuple], requests: list[dict[str, Any]],
           statuses: dict[str, int]) -> dict[str, Any]:
    """Count lost answers, resends after an answer, and attempts per trial per run."""
    lost_committed = 0
    changed = 0
    for segment in segments:
        for trial_id, stored in segment["before"].items():
            if trial_id not in final:
                lost_committed += 1
            elif final[trial_id] != stored:   # messages, commit time, answer and status all kept
                changed += 1
    unanswered = planned - sum(1 for v in final.values() if v[3] == "answered")
    wrong = sum(1 for key, _, value, _ in final.values() if str(value) != default_answer({"messages": json.loads(key)}))

    # Sent again after a kill: any request of a later run for a trial committed before that run.
    resent_after_kill = 0
    bounds = [s["sent_before"] for s in segments] + [len(requests)]
    for i, segment in enumerate(segments):
        finished_keys = {v[0] for v in segment["before"].values()}
        resent_after_kill += sum(1 for r in requests[bounds[i]:bounds[i + 1]]
                                 if messages_key(r["messages"]) in finished_keys)
    # Sent again after its commit, by time (also within one run).
    commit_time = {key: t for key, t, _, _ in final.values()}
    resent_after_commit = sum(1 for r in requests
                              if (t := commit_time.get(messages_key(r["messages"]))) is not None and r["time"] > t + 0.002)
    # Attempts per trial within each run.
    per_run_max = []
    for i in range(len(segments)):
        counts = Counter(messages_key(r["messages"]) for r in requests[bounds[i]:bounds[i + 1]])
        per_run_max.append(max(counts.values()) if counts else 0)
    # Trials in flight at a kill (requested, not committed) and so requested again: expected.
    in_flight_resent = 0
    for i, segment in enumerate(segments[1:], start=1):
        earlier = {messages_key(r["messages"]) for r in requests[bounds[i - 1]:bounds[i]]}
        finished = {v[0] for v in segment["before"].values()}
        later = {messages_key(r["messages"]) for r in requests[bounds[i]:bounds[i + 1]]}
        in_flight_resent += len((earlier - finished) & later)
    outcomes = Counter(r["outcome"] for r in requests)
    lost = lost_committed + changed + unanswered + wrong
    duplicated = resent_after_kill + resent_after_commit
    bounded = max(per_run_max) <= MAX_RETRIES + 1
    return {"lost": lost, "lost_committed": lost_committed, "changed": changed, "unanswered": unanswered,
            "wrong_answer": wrong, "sent_again_after_answered": duplicated, "resent_after_kill": resent_after_kill,
            "resent_after_commit_time": resent_after_commit, "max_requests_per_trial_per_run": per_run_max,
            "retries_bounded": bounded, "in_flight_at_kill_and_resent": in_flight_resent,
            "requests": len(requests), "outcomes": dict(outcomes), "faults": sum(v for k, v in outcomes.items() if k != "ok"),
            "trial_statuses": statuses, "ok": lost == 0 and duplicated == 0 and bounded}


def print_summary(r: dict[str, Any]) -> None:
    """The soak's counts, one per line."""
    print(f"trials planned           {r['planned']}  (statuses at the end: {r['trial_statuses']})")
    print(f"kills                    SIGKILL at ≥ {', '.join(map(str, r['kill_points']))} committed trials, then a last run")
    print(f"requests received        {r['requests']}  faults injected {r['faults']} "
          f"({r['faults'] / r['requests']:.1%}): {r['outcomes']}")
    print(f"answers lost             {r['lost']}  (committed then missing {r['lost_committed']}, changed "
          f"{r['changed']}, unanswered {r['unanswered']}, not the stub's answer {r['wrong_answer']})")
    print(f"sent again after answered {r['sent_again_after_answered']}  (after a kill {r['resent_after_kill']}, "
          f"after the commit time {r['resent_after_commit_time']})")
    print(f"in flight at a kill, resent (expected, not answered before) {r['in_flight_at_kill_and_resent']}")
    print(f"retries bounded          {r['retries_bounded']}: most requests for one trial in one run "
          f"{max(r['max_requests_per_trial_per_run'])} (bound {r['max_retries'] + 1}); stored max attempts "
          f"{r['max_attempts_stored']}")
    print(f"wall time                {r['wall_seconds']:.0f} s for 4 runs")
    print("SOAK OK: 0 lost, 0 sent again after answered" if r["ok"] else "SOAK FAILED")


if __name__ == "__main__":
    sys.exit(main())
