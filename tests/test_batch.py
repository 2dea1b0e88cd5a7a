"""Batch mode (engine/administer/send_batch.py) against the batch-API stub (tests/batch_stub.py): real HTTP over
loopback, real SQLite, `psyq` in a subprocess where a kill is the point (else run in this process,
tests/cli_helper.py).

Expected answers come from the stub's own rule (``stub_server.default_answer``: a digit hashed
from the request's messages), applied here to the request each stored trial records; expected
counts from the study's size (personas × 4 items of tests/data/mini_1to7.yaml, per item).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from batch_stub import BatchStub
from cli_helper import psyq_in_process
from stub_server import default_answer

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"   # 4 items, scale 1–7
N_ITEMS = 4


def write_study(tmp: Path, url: str, *, n_personas: int = 3, backend: dict | None = None,
                protocol: dict | None = None) -> Path:
    personas = [{"id": f"p{i:02d}", "attributes": {"age": 20 + i}} for i in range(n_personas)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    study = {"psyq": "study/1", "id": "b", "instruments": [str(MINI)], "cohort": "cohort.yaml",
             "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model", "mode": "batch",
                           "batch_poll_s": 0.01, "batch_max_poll_s": 0.05, **(backend or {})}],
             "protocol": {"seed": 1, "answer": "text", **(protocol or {})}}
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py); a run to be killed is started as a process."""
    return psyq_in_process(*args)


def stored(tmp: Path) -> list[tuple]:
    db = next((tmp / "runs").rglob("run.sqlite"))
    with sqlite3.connect(db) as c:
        return c.execute("SELECT t.trial_id, t.status, t.request, a.value FROM trials t "
                         "JOIN answers a USING (trial_id)").fetchall()


def assert_all_answered_as_the_stub_said(rows: list[tuple], n: int) -> None:
    assert len(rows) == n
    for _trial, status, request, value in rows:
        assert status == "answered"
        assert value == int(default_answer(json.loads(request)))   # the stub's rule, applied independently


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_batch_study_stores_every_trial(tmp_path, kind):
    with BatchStub() as stub:
        study = write_study(tmp_path, stub.url, backend={"kind": kind})
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        status = psyq("status", str(next((tmp_path / "runs").rglob("run.sqlite")).parent))
    assert out.returncode == 0, out.stderr
    # 3 personas × 4 items, one request each, all in one batch; nothing else was paid for.
    assert stub.creations == 1 and stub.uploads == (1 if kind == "openai" else 0)
    assert sorted(stub.answered.values()) == [1] * 12
    assert_all_answered_as_the_stub_said(stored(tmp_path), 12)
    assert "batches    1: 1 collected, 0 lost or refused, 0 open" in status.stdout


@pytest.mark.parametrize("id_recorded", [True, False])
def test_sigkill_after_submission_resumes_by_batch_id_and_sends_nothing_again(tmp_path, id_recorded):
    with BatchStub(in_progress_polls=10**9) as stub:   # stays in_progress until the test says
        study = write_study(tmp_path, stub.url, n_personas=4)
        runs = tmp_path / "runs"
        proc = subprocess.Popen([sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(runs)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            # Killed once the batch is being polled: created at the stub and (by then) recorded.
            while time.monotonic() < deadline and not any(b["polls"] >= 2 for b in list(stub.batches.values())):
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
        assert stub.creations == 1 and not stub.answered   # submitted, nothing answered yet
        run_dir = next(runs.rglob("run.sqlite")).parent
        if not id_recorded:
            # As if the kill had come after the provider created the batch but before psyq
            # committed its id: only the intent (sent to the provider as metadata) is stored.
            with sqlite3.connect(run_dir / "run.sqlite") as c:
                c.execute("UPDATE batches SET batch_id = NULL, status = 'uploaded'")
        pending = psyq("status", str(run_dir))
        shown = "batch_1 (stub) in_progress" if id_recorded else "(intent "
        assert f"pending  {shown}" in pending.stdout and "16 trials" in pending.stdout, pending.stdout
        stub.in_progress_polls = 0   # the provider finishes it
        out = psyq("run", str(study), "--runs-dir", str(runs))
    assert out.returncode == 0, out.stderr
    # Found by listing only when its id was never recorded; a recorded id is polled directly.
    assert ("found again by its psyq intent" in out.stdout + out.stderr) is (not id_recorded)
    assert stub.creations == 1                           # resumed by its id: nothing resubmitted
    assert sorted(stub.answered.values()) == [1] * 16    # every request paid once
    assert_all_answered_as_the_stub_said(stored(tmp_path), 16)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_half_failed_batch_is_stored_failed_then_retried_in_a_new_batch(tmp_path, kind):
    with BatchStub(fail_half_batches=1) as stub:
        study = write_study(tmp_path, stub.url, n_personas=4, backend={"kind": kind})
        first = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        rows = stored(tmp_path)
        second = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    # The stub fails every second of the 16 requests of the first batch: 8 failed, said so.
    assert first.returncode == 3, first.stderr
    assert "8 of 16 requests came back without a result" in first.stderr
    assert sum(status == "failed" for _t, status, _r, _v in rows) == 8
    assert second.returncode == 0, second.stderr
    assert stub.creations == 2
    second_batch = list(stub.batches.values())[1]["requests"]
    assert len(second_batch) == 8                        # only the failed half went again
    assert sorted(stub.answered.values()) == [1] * 16    # nothing answered (paid) twice
    assert_all_answered_as_the_stub_said(stored(tmp_path), 16)


def test_an_expired_batch_keeps_its_answers_and_sends_the_rest_again(tmp_path):
    with BatchStub(expire_batches=1, in_progress_polls=2) as stub:
        study = write_study(tmp_path, stub.url, n_personas=2)
        first = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        second = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    assert first.returncode == 3 and "batch expired" in first.stderr, first.stderr
    assert second.returncode == 0, second.stderr
    assert [len(b["requests"]) for b in stub.batches.values()] == [8, 4]   # the unanswered half, once more
    assert sorted(stub.answered.values()) == [1] * 8
    assert_all_answered_as_the_stub_said(stored(tmp_path), 8)


def test_a_lost_reply_to_create_finds_the_batch_instead_of_creating_it_twice(tmp_path):
    with BatchStub(drop_create_replies=1) as stub:
        study = write_study(tmp_path, stub.url, n_personas=1)
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    assert stub.creations == 1 and sorted(stub.answered.values()) == [1] * 4
    assert_all_answered_as_the_stub_said(stored(tmp_path), 4)


def test_a_failed_batch_says_why_and_is_sent_again(tmp_path):
    with BatchStub(reject_batches=1) as stub:
        study = write_study(tmp_path, stub.url, n_personas=1)
        first = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        second = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    assert first.returncode == 3, first.stderr
    assert ("4 of 4 requests came back without a result (batch failed: invalid_request: stub: the batch was "
            "rejected)") in first.stderr
    db = next((tmp_path / "runs").rglob("run.sqlite"))
    assert second.returncode == 0, second.stderr
    assert stub.creations == 2 and sorted(stub.answered.values()) == [1] * 4
    assert_all_answered_as_the_stub_said(stored(tmp_path), 4)
    with sqlite3.connect(db) as c:   # the first run's failures said why, with the provider's own error
        (note,) = c.execute("SELECT note FROM batches WHERE batch_id = 'batch_1'").fetchone()
    assert note.startswith("4 of 4 requests came back without a result")


def unreadable_first(body: dict) -> str:
    """The stub's digit, except that a first request (2 messages) gets a reply with no rating."""
    return "no idea" if len(body["messages"]) == 2 else default_answer(body)


@pytest.mark.parametrize("reasks", ["online", "batch"])
def test_reasks_go_online_or_as_a_follow_up_batch(tmp_path, reasks):
    with BatchStub(answer=unreadable_first) as stub:
        study = write_study(tmp_path, stub.url, n_personas=1, backend={"reasks": reasks})
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    # 4 trials; every first reply is unreadable, every re-ask (4 messages) is answered.
    if reasks == "online":
        assert stub.creations == 1 and len(stub.online) == 4
    else:
        assert stub.creations == 2 and not stub.online   # the first batch, then one follow-up of re-asks
        assert [len(b["requests"]) for b in stub.batches.values()] == [4, 4]
    db = next((tmp_path / "runs").rglob("run.sqlite"))
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT t.status, t.reasks, t.raw_text, a.value, t.request FROM trials t "
                         "JOIN answers a USING (trial_id)").fetchall()
    assert len(rows) == 4
    for status, n_reasks, raw_text, value, request in rows:
        assert status == "answered" and n_reasks == 1 and raw_text.startswith("no idea")
        assert value == int(raw_text.rsplit(">>>", 1)[1].strip())   # read from the re-ask's reply
        assert len(json.loads(request)["messages"]) == 2   # the stored request is the first, not the re-ask


def test_batch_mode_is_refused_for_the_local_backend(tmp_path):
    study = write_study(tmp_path, "http://127.0.0.1:1/v1", backend={"kind": "local"})
    out = psyq("validate", str(study))
    assert out.returncode == 2 and "mode: batch needs a provider batch API" in out.stderr + out.stdout


def test_the_api_key_goes_in_a_header_only(tmp_path, monkeypatch):
    secret = "sk-batch-secret-4711"
    monkeypatch.setenv("PSYQ_BATCH_TEST_KEY", secret)
    with BatchStub() as stub:
        study = write_study(tmp_path, stub.url, n_personas=1, backend={"api_key_env": "PSYQ_BATCH_TEST_KEY"})
        out = subprocess.run([sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir",
                              str(tmp_path / "runs")], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "PSYQ_BATCH_TEST_KEY": secret})
    assert out.returncode == 0, out.stderr
    assert stub.keys == {secret}                                 # it was sent, as a header
    assert all(secret.encode() not in data for data in stub.files.values())   # not in a batch file
    for path in (tmp_path / "runs").rglob("*"):                 # nor in the store, manifest, copies
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert secret not in out.stdout + out.stderr


def test_sigterm_while_waiting_says_the_batch_goes_on(tmp_path):
    with BatchStub(in_progress_polls=10**9) as stub:
        study = write_study(tmp_path, stub.url, n_personas=1)
        proc = subprocess.Popen([sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir",
                                 str(tmp_path / "runs")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(b["polls"] >= 2 for b in list(stub.batches.values())):
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "1 submitted batch(es) go on at the provider" in err and stub.creations == 1


def test_an_online_and_a_batch_backend_in_one_study(tmp_path):
    with BatchStub() as stub:   # it serves /v1/chat/completions too
        study = write_study(tmp_path, stub.url, n_personas=2)
        spec = yaml.safe_load(study.read_text())
        # Another model name: two backends with one identity would share their trials (by design).
        spec["backends"].append({**spec["backends"][0], "id": "online", "mode": "online", "model": "stub-2"})
        study.write_text(yaml.safe_dump(spec, sort_keys=False))
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    # 2 personas × 4 items per backend: 8 in one batch, 8 online.
    assert stub.creations == 1 and len(stub.batches["batch_1"]["requests"]) == 8 and len(stub.online) == 8
    assert_all_answered_as_the_stub_said(stored(tmp_path), 16)


# What a run stores about its trials; `respondents` is rewritten with the same rows by every run
# (engine/administer/record.py puts the cohort first), so it is compared by content only.
TRIAL_TABLES = ("trials", "answers", "batches", "batch_replies")
WRITE_LOG = "test_write_log"


def log_writes(db: Path, tables: tuple[str, ...]) -> None:
    """Triggers noting every INSERT, UPDATE and DELETE on `tables` in a table of their own: a change
    counter that sees the writes of another process (the `psyq` subprocess), even of an unchanged row."""
    with sqlite3.connect(db) as c:
        c.execute(f"CREATE TABLE {WRITE_LOG} (tbl TEXT, op TEXT)")
        for table in tables:
            for op in ("INSERT", "UPDATE", "DELETE"):
                c.execute(f"CREATE TRIGGER log_{table}_{op.lower()} AFTER {op} ON {table} "
                          f"BEGIN INSERT INTO {WRITE_LOG} VALUES ('{table}', '{op}'); END")


def contents(db: Path, tables: tuple[str, ...]) -> dict[str, list[tuple]]:
    with sqlite3.connect(db) as c:
        return {t: sorted(c.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_rerun_of_a_finished_batch_run_sends_and_stores_nothing(tmp_path, kind):
    with BatchStub() as stub:
        study = write_study(tmp_path, stub.url, n_personas=2, backend={"kind": kind})
        first = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        assert first.returncode == 0, first.stderr
        db = next((tmp_path / "runs").rglob("run.sqlite"))
        before = contents(db, TRIAL_TABLES + ("respondents",))
        log_writes(db, TRIAL_TABLES)
        requests_before = len(stub.seen)
        again = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        sent_again = stub.seen[requests_before:]
    assert again.returncode == 0, again.stderr
    assert [len(before[t]) for t in TRIAL_TABLES] == [8, 8, 1, 8]   # 2 personas × 4 items, one batch
    assert sent_again == []          # no poll, no upload, no batch, no online request
    assert stub.creations == 1 and sorted(stub.answered.values()) == [1] * 8
    with sqlite3.connect(db) as c:
        assert c.execute(f"SELECT tbl, op FROM {WRITE_LOG}").fetchall() == []   # no row written, not even the same
    assert contents(db, TRIAL_TABLES + ("respondents",)) == before
