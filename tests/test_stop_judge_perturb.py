"""`psyq judge` and `psyq perturb` stopped by SIGTERM (a scheduler, `timeout`, `kill -- -PGID`)
half-way: exit 130 with "interrupted: every ... received is stored" (cli/common.py, run_stoppable;
the exit code as `psyq --help` documents it), no traceback; every judgement or rewrite stored
before the signal stays stored, and the same command run again sends only what was not stored,
each once — by the stub's own count of the requests it received and their bodies.

Each command runs in its own process group (the signal reaches it and everything it started, as
from a terminal or a scheduler), against the stub server (tests/stub_server.py) answering in
0.25 s, four requests at a time (the helper backend's concurrency): 36 requests take about 2.3 s,
and the signal is sent once 8 are stored, while the command is still sending.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from psyq.engine.store.ratings import RatingTarget, put_targets
from psyq.engine.store.run_store import RunStore
from stub_server import StubServer
from test_administer import chat_requests, run, write_study

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "tests" / "data" / "mini_scenes.yaml"
PERSONAS = [{"id": f"p{i}", "attributes": {"age": 20 + i}} for i in range(6)]   # 6 x 3 scenes x (self, other)
STORED_BEFORE_SIGNAL = 8


def start(command: list[str]) -> subprocess.Popen:
    """`psyq COMMAND` in a process group of its own, with SIGINT's default action (a suite run as a
    background job inherits SIGINT ignored; see tests/test_administer.py)."""
    return subprocess.Popen([sys.executable, "-m", "psyq.cli", *command], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def stored_count(database: Path, sql: str) -> int:
    try:
        with sqlite3.connect(database, timeout=0.2) as db:
            return db.execute(sql).fetchone()[0]
    except sqlite3.Error:   # the table is not made yet, or the command is writing
        return 0


def stop_midway(process: subprocess.Popen, database: Path, sql: str) -> tuple[str, str]:
    """SIGTERM to the command's process group once `sql` counts STORED_BEFORE_SIGNAL rows; its output."""
    deadline = time.monotonic() + 60
    while stored_count(database, sql) < STORED_BEFORE_SIGNAL and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    assert process.poll() is None, "the command ended before the signal"
    os.killpg(process.pid, signal.SIGTERM)
    return process.communicate(timeout=60)


def sent_messages(requests: list) -> list[str]:
    return [json.dumps(r.body["messages"], sort_keys=True) for r in requests]


def test_judge_stopped_by_sigterm_keeps_its_judgements_and_resumes(tmp_path):
    numbers = itertools.count(1)

    def answer(body: dict) -> str:   # a different answer each time: each judge request is told apart
        n = next(numbers)
        return f"You: hurt, number {n}.\nOther: embarrassed, number {n}."

    with StubServer(answer=answer) as chat:
        result = run(write_study(tmp_path, chat.url, personas=PERSONAS, instrument=SCENES), tmp_path / "runs")
    run_path = result.run_dir.path
    database = run_path / "run.sqlite"
    judged = "SELECT COUNT(*) FROM judgements"
    with StubServer(latency_s=0.25) as judge:
        command = ["judge", str(run_path), "--rubric", "leas_level", "--base-url", judge.url, "--model",
                   "stub-model", "--answer", "logprobs"]
        process = start(command)
        out, err = stop_midway(process, database, judged)
        first = sent_messages(chat_requests(judge))
        with sqlite3.connect(database) as db:
            kept = {json.dumps(json.loads(r[0])["messages"], sort_keys=True) for r in
                    db.execute("SELECT request FROM judgements WHERE status = 'answered'")}
        assert process.returncode == 130, (out, err)
        assert "Traceback" not in err, err
        assert "interrupted: every judgement received is stored; run the same command again to resume" in err
        assert STORED_BEFORE_SIGNAL <= len(kept) < 36 and stored_count(database, judged) == len(kept)
        assert kept <= set(first)

        again = subprocess.run([sys.executable, "-m", "psyq.cli", *command], cwd=ROOT, capture_output=True, text=True)
        second = sent_messages(chat_requests(judge))[len(first):]
    assert again.returncode == 0, again.stderr
    assert f"36 answers to judge, {len(kept)} already judged before; now answered 36" in again.stdout
    assert not set(second) & kept                                  # nothing stored is asked again
    assert len(second) == len(set(second)) == 36 - len(kept)       # the rest, each once
    assert stored_count(database, judged) == 36


def test_perturb_stopped_by_sigterm_keeps_its_rewrites_and_resumes(tmp_path):
    with StubServer() as chat:
        run_path = run(write_study(tmp_path, chat.url, personas=[{"id": "p1"}]), tmp_path / "runs").run_dir.path
    database = run_path / "run.sqlite"
    with RunStore(database) as store:   # 36 replies to rewrite, each its own text
        put_targets(store, [RatingTarget.persona(f"t{i}", "m01", instrument="help",
                                                 text=f"That sounds hard ({i}). What would help?") for i in range(36)])
    rewritten = "SELECT COUNT(*) FROM perturbation_log WHERE status = 'perturbed'"
    with StubServer(latency_s=0.25, answer=lambda body: "hey, that sounds rough. what would help?") as rewriter:
        command = ["perturb", str(run_path), "--set", "haleas7", "--only", "casual", "--base-url", rewriter.url,
                   "--model", "stub-model"]
        process = start(command)
        out, err = stop_midway(process, database, rewritten)
        first = sent_messages(chat_requests(rewriter))
        with sqlite3.connect(database) as db:
            kept = {json.dumps(json.loads(r[0])["messages"], sort_keys=True) for r in
                    db.execute("SELECT request FROM perturbation_log WHERE status = 'perturbed'")}
        assert process.returncode == 130, (out, err)
        assert "Traceback" not in err, err
        assert "interrupted: every perturbed text received is stored; run the same command again to resume" in err
        assert STORED_BEFORE_SIGNAL <= len(kept) < 36 and kept <= set(first)

        again = subprocess.run([sys.executable, "-m", "psyq.cli", *command], cwd=ROOT, capture_output=True, text=True)
        second = sent_messages(chat_requests(rewriter))[len(first):]
    assert again.returncode == 0, again.stderr
    assert f"haleas7: 36 (reply, perturbation) pairs, {len(kept)} done before; now casual perturbed 36" in again.stdout
    assert not set(second) & kept
    assert len(second) == len(set(second)) == 36 - len(kept)
    assert stored_count(database, rewritten) == 36
