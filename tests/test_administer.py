"""Administration over real HTTP (loopback) against the stub server, into a real SQLite store.

The code path is the production one: `administer` (or the `psyq run` CLI in a subprocess) →
OpenAI backend (httpx) → stub on 127.0.0.1 → RunStore. Expected counts are derived from the
study written in each test (respondents × items × repeats), not from the code under test.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from psyq.engine.results.export import export_table
from psyq.engine.administer.run import administer
from psyq.engine.design.study import load_study
from cli_helper import psyq_in_process
from runs_helper import recorded, stored_trials, wait_until_stored
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"   # 4 items, scale 1–7, values as answers
N_MINI_ITEMS = 4


def write_study(tmp: Path, url: str, *, personas: list[dict] | None = None, protocol: dict | None = None,
                backend: dict | None = None, instrument: Path = MINI) -> Path:
    personas = personas if personas is not None else [
        {"id": "p1", "attributes": {"age": 30, "gender": "female"}},
        {"id": "p2", "attributes": {"age": 61, "gender": "male"}},
    ]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    study = {
        "psyq": "study/1", "id": "t", "instruments": [str(instrument)], "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                      "concurrency": 2, "max_retries": 3, "backoff_s": 0.01, "max_backoff_s": 0.05,
                      "timeout_s": 2, **(backend or {})}],
        "protocol": {"seed": 1, **(protocol or {})},
    }
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def run(study_path: Path, runs: Path):
    return asyncio.run(administer(load_study(study_path), runs, log=lambda m: None))


def db_rows(result, sql: str) -> list[tuple]:
    with sqlite3.connect(result.run_dir.database) as db:
        return db.execute(sql).fetchall()


def chat_requests(stub: StubServer) -> list:
    return [r for r in stub.requests if r.path.endswith("/chat/completions")]


def test_every_trial_answered_and_exported(tmp_path):
    with StubServer() as stub:
        result = run(write_study(tmp_path, stub.url), tmp_path / "runs")
    # 2 respondents × 4 items × 1 repeat = 8 trials, each sent once.
    assert result.planned == 8
    assert result.counts == {"answered": 8}
    assert len(chat_requests(stub)) == 8
    table = export_table(result.run_dir.path)
    assert len(table) == 8
    assert set(table["age"]) == {30, 61}            # persona attributes become columns
    # The stub answers a digit 1–4; item a and c are reversed on 1–7: keyed = 8 − value.
    rev = table["item_id"].isin(["a", "c"])
    assert (table.loc[rev, "keyed_value"] == 8 - table.loc[rev, "value"]).all()
    assert (table.loc[~rev, "keyed_value"] == table.loc[~rev, "value"]).all()


def test_rerun_sends_nothing_again(tmp_path):
    with StubServer() as stub:
        study = write_study(tmp_path, stub.url)
        first = run(study, tmp_path / "runs")
        sent = len(chat_requests(stub))
        second = run(study, tmp_path / "runs")
        assert len(chat_requests(stub)) == sent == 8
    assert second.run_dir == first.run_dir
    assert second.already_finished == 8


def test_already_finished_counts_only_the_plans_trials(tmp_path):
    """A finished trial in the store whose id is not one the study plans (here inserted by hand, a copy of
    a stored row under another id) is not one of the plan's trials done: the rerun counts the 8 of the
    plan, not the 9 finished rows of the store, and sends nothing."""
    with StubServer() as stub:
        study = write_study(tmp_path, stub.url)
        first = run(study, tmp_path / "runs")
        with sqlite3.connect(first.run_dir.database) as db:
            columns = [r[1] for r in db.execute("PRAGMA table_info(trials)")]
            db.execute(f"INSERT INTO trials ({', '.join(columns)}) SELECT 'not-in-the-plan', "
                       f"{', '.join(columns[1:])} FROM trials LIMIT 1")
            assert db.execute("SELECT COUNT(*) FROM trials WHERE status IN ('answered', 'missing')").fetchone()[0] == 9
        second = run(study, tmp_path / "runs")
        assert len(chat_requests(stub)) == 8
    assert second.run_dir == first.run_dir
    assert second.planned == 8 and second.already_finished == 8


def test_rerun_sends_no_trial_stored_as_missing_again(tmp_path):
    # A refusal (not re-asked) and a reply that holds no rating on the scale (re-asked once, then
    # given up) are missing answers, not failures: the trial is finished and a rerun must not
    # send it again. Items a and c are answered unreadably, b and d normally.
    def answer(body):
        first = body["messages"][1]["content"]   # the item's own user message (system comes first)
        if "Item a" in first:
            return "As an AI language model, I don't have personal feelings."
        if "Item c" in first:
            return "banana"
        return "4"

    with StubServer(answer=answer) as stub:
        study = write_study(tmp_path, stub.url, protocol={"reask_limit": 1})
        first = run(study, tmp_path / "runs")
        # 2 respondents × (a: 1 request, b: 1, c: 1 + 1 re-ask, d: 1) = 10 requests.
        assert len(chat_requests(stub)) == 10
        stored = db_rows(first, "SELECT * FROM trials ORDER BY trial_id")
        answers = db_rows(first, "SELECT * FROM answers ORDER BY trial_id, item_id")
        stub.reset()
        second = run(study, tmp_path / "runs")
        assert chat_requests(stub) == []                     # nothing sent the second time
    # 2 respondents × items a and c missing, × b and d answered; the same counts after the rerun.
    assert first.counts == {"answered": 4, "missing": 4}
    assert second.counts == first.counts
    assert second.run_dir == first.run_dir and second.already_finished == 8
    assert sorted(r[0] for r in db_rows(second, "SELECT status FROM answers WHERE value IS NULL")) == \
        ["refusal"] * 2 + ["unparseable"] * 2
    # Not a row rewritten: the stored trials and answers are exactly those of the first run.
    assert db_rows(second, "SELECT * FROM trials ORDER BY trial_id") == stored
    assert db_rows(second, "SELECT * FROM answers ORDER BY trial_id, item_id") == answers


def test_concurrency_bound_holds(tmp_path):
    personas = [{"id": f"p{i}"} for i in range(6)]
    with StubServer(latency_s=0.05) as stub:
        run(write_study(tmp_path, stub.url, personas=personas, backend={"concurrency": 3}), tmp_path / "runs")
    # 24 requests of 50 ms each with 3 allowed at once: the server must see exactly 3 at a time.
    assert len(chat_requests(stub)) == 24
    assert stub.max_in_flight == 3


def test_retries_are_bounded_and_failures_retried_on_rerun(tmp_path):
    with StubServer(fault_rate=1.0, fault_kinds=["500"]) as stub:
        study = write_study(tmp_path, stub.url, personas=[{"id": "p1"}], backend={"max_retries": 2})
        result = run(study, tmp_path / "runs")
        # 4 trials × (1 try + 2 retries) = 12 requests, then each trial is stored as failed.
        assert len(chat_requests(stub)) == 12
        assert result.counts == {"failed": 4}
        assert {r[0] for r in db_rows(result, "SELECT attempts FROM trials")} == {3}
        stub.fault_rate = 0.0
        stub.reset()
        again = run(study, tmp_path / "runs")
        assert again.counts == {"answered": 4}
        assert len(chat_requests(stub)) == 4   # only the 4 failed trials, once each


def test_retry_after_is_honoured(tmp_path):
    with StubServer(faults=["429"], retry_after_s=0.4) as stub:
        run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], backend={"concurrency": 1}),
            tmp_path / "runs")
    reqs = chat_requests(stub)
    assert reqs[0].outcome == "429"
    # The retry of the first trial must wait at least the 0.4 s the server asked for.
    assert reqs[1].t - reqs[0].t >= 0.4


def test_faults_of_every_kind_are_survived(tmp_path):
    personas = [{"id": f"p{i}"} for i in range(5)]
    kinds = ["429", "500", "timeout", "drop", "garbage"]
    # Each kind once for certain (scripted), then 30 % random faults of these kinds.
    with StubServer(faults=kinds, fault_rate=0.3, fault_kinds=kinds, seed=3,
                    retry_after_s=0.01, timeout_hang_s=3) as stub:
        result = run(write_study(tmp_path, stub.url, personas=personas,
                                 backend={"max_retries": 8, "timeout_s": 0.5}), tmp_path / "runs")
        outcomes = Counter(r.outcome for r in chat_requests(stub))
    assert result.counts == {"answered": 20}
    assert set(kinds) <= set(outcomes)
    # Every injected fault cost exactly one retry: requests = trials + faults.
    assert sum(outcomes.values()) == 20 + sum(v for k, v in outcomes.items() if k != "ok")


def test_identical_personas_and_repeats_are_not_collapsed(tmp_path):
    twins = [{"id": "twin1", "attributes": {"age": 40}}, {"id": "twin2", "attributes": {"age": 40}}]
    with StubServer() as stub:
        result = run(write_study(tmp_path, stub.url, personas=twins, protocol={"repeats": 2}), tmp_path / "runs")
    # 2 twins × 2 repeats × 4 items = 16 distinct trials, 16 requests.
    assert result.counts == {"answered": 16}
    assert len(chat_requests(stub)) == 16
    assert len({r[0] for r in db_rows(result, "SELECT trial_id FROM trials")}) == 16


def test_unreadable_answers_are_reasked_and_refusals_flagged(tmp_path):
    calls = Counter()

    def answer(body):
        first_user = body["messages"][-1]["content"] if len(body["messages"]) <= 2 else None
        key = json.dumps(body["messages"][:2])
        calls[key] += 1
        if "Item a" in key:
            return "As an AI, I don't have feelings."
        if "Item b" in key:
            return "banana" if calls[key] == 1 else "5"
        if "Item c" in key:
            return "9"   # off the 1–7 scale every time
        return "I would say 6."

    with StubServer(answer=answer) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], protocol={"reask_limit": 2}),
                     tmp_path / "runs")
    rows = {r[0]: r[1:] for r in db_rows(result, "SELECT a.item_id, a.status, a.value, t.reasks, t.raw_text "
                                                "FROM answers a JOIN trials t USING (trial_id)")}
    assert rows["a"][:3] == ("refusal", None, 0)          # refusal: flagged, not re-asked, missing
    assert rows["b"][:3] == ("answered", 5, 1)            # one corrective follow-up
    assert rows["c"][:3] == ("out_of_range", None, 2)     # re-asked up to the limit, then missing
    assert rows["d"][:3] == ("answered", 6, 0)
    assert "banana" in rows["b"][3] and "5" in rows["b"][3]   # every raw reply kept
    assert len(chat_requests(stub)) == 1 + 2 + 3 + 1


def test_logprob_answers(tmp_path):
    with StubServer() as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}],
                                 protocol={"answer": "logprobs", "logprob_answer": "most_likely"}),
                     tmp_path / "runs")
        body = chat_requests(stub)[0].body
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20
    # The stub's first-token alternatives: "1" .10, "2" .20, "3" .30, "4" .25, " The" .10, "I" .05.
    # On the 1–7 scale the options present carry .85; renormalised: 1 → .1/.85, 2 → .2/.85,
    # 3 → .3/.85, 4 → .25/.85; expected value = (.1 + .4 + .9 + 1.0) / .85 = 2.4/.85.
    rows = db_rows(result, "SELECT value, distribution, option_mass, expected FROM answers")
    assert len(rows) == 4
    for value, dist, mass, expected in rows:
        dist = {int(k): v for k, v in json.loads(dist).items()}
        assert value == 3
        assert dist[3] == pytest.approx(0.3 / 0.85) and dist[5] == 0.0
        assert mass == pytest.approx(0.85)
        assert expected == pytest.approx(2.4 / 0.85)


def test_api_key_never_stored_or_logged(tmp_path):
    secret = "sk-psyq-test-9f8e7d6c5b4a"
    env = {**os.environ, "PSYQ_TEST_KEY": secret}
    with StubServer() as stub:
        study = write_study(tmp_path, stub.url, personas=[{"id": "p1"}], backend={"api_key_env": "PSYQ_TEST_KEY"})
        out = subprocess.run([sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir",
                              str(tmp_path / "runs")], cwd=ROOT, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        # The key was used …
        assert chat_requests(stub)[0].headers["authorization"] == f"Bearer {secret}"
    # … and appears nowhere in what psyq wrote or printed.
    assert secret not in out.stdout + out.stderr
    files = [p for p in (tmp_path / "runs").rglob("*") if p.is_file()]
    assert any(p.name == "run.sqlite" for p in files) and any(p.name == "manifest.json" for p in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    assert "PSYQ_TEST_KEY" in (next(p for p in files if p.name == "manifest.json")).read_text()


def test_missing_api_key_stops_the_run_with_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PSYQ_ABSENT_KEY"}
    with StubServer() as stub:
        study = write_study(tmp_path, stub.url, backend={"api_key_env": "PSYQ_ABSENT_KEY"})
        out = subprocess.run([sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir",
                              str(tmp_path / "runs")], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 1
    assert "PSYQ_ABSENT_KEY is not set" in out.stderr and "Traceback" not in out.stderr


def test_sigkill_mid_run_then_rerun_loses_nothing_and_resends_nothing(tmp_path):
    """Kill the runner with SIGKILL while requests are in flight, rerun, and check by the
    stub's own record that no trial committed before the kill was sent again."""
    # Distinct attributes, so every trial's messages differ and the stub's record can tell them apart.
    personas = [{"id": f"p{i:02d}", "attributes": {"age": 20 + i}} for i in range(15)]  # 15 × 4 = 60 trials
    record = tmp_path / "record.jsonl"
    stub = subprocess.Popen([sys.executable, str(ROOT / "tests" / "stub_server.py"), "--port", "0",
                             "--latency", "0.05", "--record", str(record)], stdout=subprocess.PIPE, text=True)
    try:
        url = stub.stdout.readline().split()[1]
        study = write_study(tmp_path, url, personas=personas, backend={"concurrency": 2})
        cmd = [sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(tmp_path / "runs")]
        runner = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = wait_until_stored(tmp_path / "runs", 10)   # some, not all, trials committed
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        before = _finished(db)
        assert 10 <= len(before) < 60
        sent_before = len(recorded(record))
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    finally:
        stub.terminate()
        stub.wait()
    after = _finished(db)
    assert len(after) == 60 and set(before) <= set(after)       # nothing lost
    # Requests of the second run, keyed by their messages: none is for a trial finished before.
    second = [json.dumps(r["messages"]) for r in recorded(record)[sent_before:] if r["path"].endswith("completions")]
    assert not set(second) & {before[t] for t in before}
    assert len(second) == len(set(second))                        # and none sent twice
    assert len(second) == 60 - len(before)  # each unfinished trial once (in-flight ones are resent)


def _run_until_some_are_stored(tmp_path: Path, n_stored: int = 20):
    """A `psyq run` of 200 trials in its own process group against a stub that answers in 200 ms (8 at
    a time: 5 s in all, so that a signal sent once `n_stored` are stored finds the run still sending,
    however the writer batches its commits), left to store at least `n_stored` trials; returns (stub,
    run process, command, store path)."""
    personas = [{"id": f"p{i:03d}", "attributes": {"age": 20 + i}} for i in range(50)]   # 200 trials
    stub = subprocess.Popen([sys.executable, str(ROOT / "tests" / "stub_server.py"), "--port", "0",
                             "--latency", "0.2", "--record", str(tmp_path / "record.jsonl")],
                            stdout=subprocess.PIPE, text=True)
    url = stub.stdout.readline().split()[1]
    study = write_study(tmp_path, url, personas=personas, backend={"concurrency": 8})
    cmd = [sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(tmp_path / "runs")]
    # Ctrl-C as a terminal sends it: the run starts with SIGINT's default action, also when the suite
    # itself runs as a background job of a non-interactive shell, which ignores SIGINT and passes
    # that on (Python then sets no KeyboardInterrupt handler, and the run rightly ignores Ctrl-C).
    runner = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return stub, runner, cmd, wait_until_stored(tmp_path / "runs", n_stored)


def _writer_of(runner: subprocess.Popen) -> int:
    """The pid of the run's store writer (engine/store/writer_process.py), its only child process."""
    children = subprocess.run(["pgrep", "-P", str(runner.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 1, children
    return int(children[0])


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["ctrl-c", "sigterm", "sighup"])
def test_stopping_the_whole_process_group_keeps_every_received_answer_and_a_rerun_resumes(tmp_path, stop):
    """A terminal's Ctrl-C, and the SIGTERM that `timeout`, `kill -- -PGID`, Slurm's scancel and
    systemctl stop send (a closed terminal: SIGHUP), reach the whole process group, the store's writer
    process too: it ignores them and commits what the run hands it until the run, stopping cleanly,
    closes the store; the run exits 130. (Before, SIGTERM killed the writer: exit 1, "writer process
    ended (exit code -15)", and the answers it still held were paid for again by the resume.)"""
    stub, runner, cmd, db = _run_until_some_are_stored(tmp_path)
    try:
        writer = _writer_of(runner)
        assert runner.poll() is None and stored_trials(db) < 200     # the signal finds the run sending
        os.killpg(runner.pid, stop)
        out, err = runner.communicate(timeout=60)
        assert runner.returncode == 130 and "Traceback" not in err, err
        assert "interrupted: every answer received is stored" in err
        answered = int(out.split("now answered ")[1].split()[0])   # what the run says it received
        assert 20 <= answered < 200 and stored_trials(db) == answered
        assert subprocess.run(["ps", "-p", str(writer)], capture_output=True).returncode != 0   # it has exited
        before, sent_before = _finished(db), len(recorded(tmp_path / "record.jsonl"))
        assert subprocess.run(cmd, cwd=ROOT, capture_output=True).returncode == 0
        assert len(_finished(db)) == 200
        # By the stub's own record: the rerun sent no trial stored before the signal, and none twice.
        second = [json.dumps(r["messages"]) for r in recorded(tmp_path / "record.jsonl")[sent_before:]
                  if r["path"].endswith("completions")]
        assert not set(second) & set(before.values()) and len(second) == len(set(second)) == 200 - len(before)
    finally:
        stub.terminate()
        stub.wait()


def test_a_store_writer_that_dies_stops_the_run_at_once_saying_so(tmp_path):
    stub, runner, cmd, db = _run_until_some_are_stored(tmp_path)
    try:
        os.kill(_writer_of(runner), signal.SIGKILL)
        out, err = runner.communicate(timeout=60)
        assert runner.returncode == 1 and "Traceback" not in err, err
        assert "error: the run store's writer process ended (exit code -9)" in err
        assert 20 <= stored_trials(db) < 200
        assert subprocess.run(cmd, cwd=ROOT, capture_output=True).returncode == 0
        assert len(_finished(db)) == 200
    finally:
        stub.terminate()
        stub.wait()


def _finished(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT trial_id, request FROM trials WHERE status = 'answered'").fetchall()
    return {t: json.dumps(json.loads(req)["messages"]) for t, req in rows}


def test_base_url_override_runs_the_quickstart_on_any_openai_server(tmp_path):
    with StubServer() as stub:
        out = psyq_in_process("run", "studies/quickstart.yaml", "--base-url", stub.url, "--model", "stub-model",
                              "--runs-dir", tmp_path)
        sent = len(chat_requests(stub))
    assert out.returncode == 0, out.stderr
    # quickstart: 12 sampled adults + baseline = 13 respondents × 28 IRI items = 364.
    assert sent == 364
    table = export_table(next(tmp_path.rglob("manifest.json")).parent)
    assert len(table) == 364 and set(table["model"]) == {"stub-model"}
    # The stub's first-token alternatives are the digits 1–4 (.10, .20, .30, .25 of the mass).
    # Digits are option values on the IRI's 0–4 scale (whose letters A–E the stub never offers),
    # so every answer is read, and the expected value is, by hand,
    # (1×.10 + 2×.20 + 3×.30 + 4×.25) / .85 = 2.4 / .85.
    assert (table["status"] == "answered").all()
    assert table["expected"].to_numpy() == pytest.approx(2.4 / 0.85)
    assert table["option_mass"].to_numpy() == pytest.approx(0.85)


def test_scene_items_store_both_free_text_answers(tmp_path):
    replies = {"birthday": "You: I'd feel hurt and a bit angry.\nOther: embarrassed when she remembers.",
               "credit": "As an AI, I don't have feelings.",
               "pregnant": "I would be thrilled"}    # no 'You:'/'Other:' parts: re-asked, then missing

    def answer(body):
        first = body["messages"][-1]["content"] if len(body["messages"]) <= 2 else body["messages"][1]["content"]
        return next(v for k, v in replies.items() if k in first)

    with StubServer(answer=answer) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], protocol={"reask_limit": 1},
                                 instrument=ROOT / "tests" / "data" / "mini_scenes.yaml"), tmp_path / "runs")
        sent = len(chat_requests(stub))
    # 3 scenes = 3 trials; the third is re-asked once (reask_limit 1): 4 requests.
    assert result.planned == 3 and sent == 4
    table = export_table(result.run_dir.path).set_index("item_id")
    assert table.loc["s1:self", "text"] == "I'd feel hurt and a bit angry."
    assert table.loc["s1:other", "text"] == "embarrassed when she remembers."
    assert table.loc["s2:self", "status"] == "refusal" and table.loc["s2:other", "status"] == "refusal"
    assert table.loc["s3:self", "status"] == "unparseable" and pd.isna(table.loc["s3:self", "text"])
    assert table["value"].isna().all()       # free text: no scale value, nothing imputed


def test_a_run_stored_before_free_text_answers_still_exports(tmp_path):
    with StubServer() as stub:
        result = run(write_study(tmp_path, stub.url), tmp_path / "runs")
    # Make it look like a run of an older psyq: the answers table without its `text` column.
    with sqlite3.connect(result.run_dir.database) as db:
        db.execute("ALTER TABLE answers DROP COLUMN text")
    table = export_table(result.run_dir.path)
    assert len(table) == 2 * N_MINI_ITEMS and table["text"].isna().all()
