"""Nothing a server, a file or a second process does can crash a run, lose an answer or cost twice.

Real HTTP over loopback against tests/stub_server.py, real SQLite, `psyq` run by its main() in
this process (tests/cli_helper.py) where the exit code or the printed text is what is checked, in
subprocesses where two processes or everything a process prints (a secret never echoed) is. Expected statuses are derived by hand
from what each pathological reply kind is (see the table in the first test), and expected
values from the stub's own answer rule (``stub_server.default_answer``), not from the code
under test.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from psyq.engine.backends.openai import content_text, first_token_logprobs_checked
from psyq.engine.backends.endpoint import base_url_problem, key_env_problem, normalise_endpoint
from psyq.engine.trials.parsing import parse_json_rating, parse_rating
from psyq.engine.administer.run import administer
from psyq.engine.design.study import load_study
from cli_helper import psyq_in_process
from stub_server import PATHOLOGICAL_KINDS, StubServer, default_answer

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"   # 4 items a–d, scale 1–7
N_ITEMS = 4
EXIT_OK, EXIT_BAD_INPUT, EXIT_TRIALS_FAILED, EXIT_UNREACHABLE, EXIT_LOCKED = 0, 2, 3, 4, 5


def write_study(tmp: Path, url: str, *, n_personas: int = 2, protocol: dict | None = None,
                backend: dict | None = None, name: str = "study.yaml") -> Path:
    # Distinct attributes: every trial's messages differ, so the stub's record tells them apart.
    personas = [{"id": f"p{i:02d}", "attributes": {"age": 20 + i}} for i in range(n_personas)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    study = {
        "psyq": "study/1", "id": "t", "instruments": [str(MINI)], "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                      "concurrency": 2, "max_retries": 3, "backoff_s": 0.01, "max_backoff_s": 0.05,
                      "timeout_s": 5, **(backend or {})}],
        "protocol": {"seed": 1, **(protocol or {})},
    }
    path = tmp / name
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def psyq(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py): its exit code and printed text."""
    return psyq_in_process(*args, env=env)


def psyq_process(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` as a process of its own: everything it prints, wherever from."""
    return subprocess.run([sys.executable, "-m", "psyq.cli", *args], cwd=ROOT, capture_output=True, text=True)


def chat_posts(stub: StubServer) -> list:
    return [r for r in stub.requests if r.path.endswith("/chat/completions")]


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()


# What the first reply of a trial leads to, by kind, worked out from what each kind is:
# content given as text parts is the normal answer; content that is not text is unreadable;
# broken logprobs matter only when the answer is read from logprobs; 5,000 nested brackets hold
# no rating (text) but leave the logprobs intact; a 40,000-character reply is over the 12,000
# characters psyq parses (its logprobs, when asked, are intact); a 5 MiB body is over the 4 MiB
# cap; a reply that is not a chat completion at all is retried, and the retry (the next POST,
# never a 5th one with concurrency 1) is ordinary.
RETRIED = {"empty_body", "no_choices", "message_string", "nested_body"}
EXPECTED = {
    "json": {"ok": "answered", "content_list": "answered", "content_dict": "unreadable_response",
             "content_number": "unreadable_response", "content_bool": "unreadable_response",
             "logprob_null_token": "answered", "logprob_inf": "answered", "logprob_nan": "answered",
             "logprob_huge": "answered", "nested_brackets": "unparseable", "long_text": "too_long",
             "huge_body": "too_long", **{k: "answered" for k in RETRIED}},
    "logprobs": {"ok": "answered", "content_list": "answered", "content_dict": "answered",
                 "content_number": "answered", "content_bool": "answered",
                 "logprob_null_token": "unreadable_response", "logprob_inf": "unreadable_response",
                 "logprob_nan": "unreadable_response", "logprob_huge": "unreadable_response",
                 "nested_brackets": "answered", "long_text": "answered", "huge_body": "too_long",
                 **{k: "answered" for k in RETRIED}},
}


@pytest.mark.parametrize("answer", ["json", "logprobs"])
def test_every_pathological_reply_is_stored_and_the_run_goes_on(tmp_path, answer):
    n_personas = 20   # 80 trials: with every 5th reply pathological, each of the 15 kinds at least once

    def reply(body):   # the stub's normal answer, as a JSON object in json mode
        digit = default_answer(body)
        return json.dumps({"answer": int(digit)}) if answer == "json" else digit

    with StubServer(answer=reply, pathological_every=5) as stub:
        study = write_study(tmp_path, stub.url, n_personas=n_personas, backend={"concurrency": 1},
                            protocol={"answer": answer, "reask_limit": 0, "logprob_answer": "most_likely"})
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        posts = chat_posts(stub)
    db = next((tmp_path / "runs").rglob("run.sqlite"))
    stored = rows(db, "SELECT t.trial_id, t.status, t.request, t.attempts, a.status, a.value, a.reason, t.response "
                      "FROM trials t JOIN answers a USING (trial_id)")
    planned = n_personas * N_ITEMS
    tried, crashed = len(posts), planned - len(stored)
    print(f"\n{answer}: replies tried {tried} / trials stored {len(stored)} / crashed {crashed}; "
          f"exit {out.returncode}; outcomes {dict(Counter(r.outcome for r in posts))}")
    assert "Traceback" not in out.stderr
    assert set(PATHOLOGICAL_KINDS) <= {r.outcome for r in posts}      # every kind was sent
    assert crashed == 0 and len({s[0] for s in stored}) == planned   # every trial stored once
    assert {s[1] for s in stored} <= {"answered", "missing"}          # none failed …
    assert out.returncode == EXIT_OK, out.stderr                      # … so the exit code is 0
    # Each trial's first POST (matched by its messages) decides its answer, per the table above.
    first_post = {}
    for post in posts:
        first_post.setdefault(json.dumps(post.body["messages"]), post)
    for trial_id, status, request, attempts, a_status, value, reason, response in stored:
        post = first_post[json.dumps(json.loads(request)["messages"])]
        assert a_status == EXPECTED[answer][post.outcome], (post.outcome, a_status, reason)
        assert attempts == (2 if post.outcome in RETRIED else 1)
        if a_status == "answered" and answer == "json":
            assert value == int(default_answer(post.body))    # the stub's own answer rule
        if a_status == "answered" and answer == "logprobs":
            assert value == 3                                  # the stub's most likely token
        if a_status != "answered":
            assert value is None and reason                    # missing, and says why
        if post.outcome == "huge_body":
            kept = json.loads(response)
            assert kept["truncated"] is True and len(kept["unreadable_body"]) == 64_000
    # What was stored can be read by every later step: the report counts the new statuses (an
    # unknown status used to be an error there) and the scores table is written.
    run_dir = db.parent
    report = psyq("report", str(run_dir))
    assert report.returncode == EXIT_OK and "Traceback" not in report.stderr, report.stderr
    missing_statuses = {EXPECTED[answer][p.outcome] for p in first_post.values()} - {"answered"}
    html_text = (run_dir / "report.html").read_text()
    assert all(f"{status}_n" in html_text for status in missing_statuses), missing_statuses
    assert psyq("scores", str(run_dir)).returncode == EXIT_OK


def test_two_runs_of_one_study_at_once_one_refuses_and_nothing_is_sent_twice(tmp_path):
    record = tmp_path / "record.jsonl"
    stub = subprocess.Popen([sys.executable, str(ROOT / "tests" / "stub_server.py"), "--port", "0",
                             "--latency", "0.25", "--record", str(record)], stdout=subprocess.PIPE, text=True)
    try:
        url = stub.stdout.readline().split()[1]
        # 40 trials × 0.25 s / 2 at a time ≈ 5 s: time for a second Python process to start.
        study = write_study(tmp_path, url, n_personas=10)
        cmd = [sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(tmp_path / "runs")]
        first = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list((tmp_path / "runs").rglob("run.sqlite")):
            time.sleep(0.02)   # the first process holds the lock before it creates the store
        second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        first_out, first_err = first.communicate(timeout=120)
    finally:
        stub.terminate()
        stub.wait()
    # Refused while the first held the lock (had the first ended already, the second would have
    # resumed a finished run and exited 0: this would fail, never pass vacuously).
    assert second.returncode == EXIT_LOCKED, second.stdout + second.stderr
    run_dir = next((tmp_path / "runs").rglob("run.sqlite")).parent
    assert str(run_dir) in second.stderr and f"process {first.pid}" in second.stderr
    assert first.returncode == EXIT_OK, first_err
    sent = [json.dumps(json.loads(line)["messages"]) for line in record.read_text().splitlines()
            if json.loads(line)["path"].endswith("completions")]
    assert len(sent) == 40 and len(set(sent)) == 40    # every prompt once: none sent twice


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_stops_the_run_early_naming_the_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"   # nothing listens there (bound, then released)
    # 40 trials × (1 + 5 retries) = 240 connection attempts if nothing stopped it.
    study = write_study(tmp_path, url, n_personas=10, backend={"max_retries": 5})
    out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == EXIT_UNREACHABLE, out.stderr
    assert f"{url}/chat/completions" in out.stderr and "cannot be reached" in out.stderr
    assert "Traceback" not in out.stderr
    manifest = json.loads(next((tmp_path / "runs").rglob("manifest.json")).read_text())
    assert manifest["stopped_early"] and manifest["finished_at"] is None
    # It stopped after 20 failed connections in a row (psyq.engine.backends.base.UNREACHABLE_AFTER),
    # with up to 2 more in flight: far fewer than 240.
    assert manifest["backend_stats"]["stub"]["requests"] <= 22


def test_failed_trials_give_their_own_exit_code(tmp_path):
    with StubServer(fault_rate=1.0, fault_kinds=["500"]) as stub:
        study = write_study(tmp_path, stub.url, n_personas=1, backend={"max_retries": 1})
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    # 4 trials, each 500 twice (1 try + 1 retry): all stored as failed.
    assert out.returncode == EXIT_TRIALS_FAILED, out.stderr
    assert "4 of 4 trials failed" in out.stderr


def test_same_endpoint_and_key_under_other_spellings_resume_the_same_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PSYQ_K1", "same-key")
    monkeypatch.setenv("PSYQ_K2", "same-key")
    runs = tmp_path / "runs"
    with StubServer() as stub:
        study = write_study(tmp_path, stub.url, backend={"api_key_env": "PSYQ_K1"})
        first = asyncio.run(administer(load_study(study), runs, log=lambda m: None))
        assert len(chat_posts(stub)) == 2 * N_ITEMS
        # The same server written another way, the key in another variable.
        other = f"HTTP://LocalHost:{stub.port}/v1/"
        study = write_study(tmp_path, other, backend={"api_key_env": "PSYQ_K2"})
        second = asyncio.run(administer(load_study(study), runs, log=lambda m: None))
        assert len(chat_posts(stub)) == 2 * N_ITEMS          # nothing sent the second time
    assert second.run_dir == first.run_dir and second.already_finished == 2 * N_ITEMS


def test_endpoint_normalisation_rules():
    # Each pair was written out by hand from the rules in engine/backends/endpoint.py's docstring.
    same = [("http://127.0.0.1:8080/v1", "http://localhost:8080/v1/"),
            ("http://127.0.0.1:8080/v1", "HTTP://[::1]:8080/v1"),
            ("http://127.0.0.1/v1", "http://127.0.0.1:80/v1"),
            ("https://api.example.org/v1", "https://API.example.org:443/v1//")]
    different = [("http://127.0.0.1:8080/v1", "http://127.0.0.1:8081/v1"),
                 ("http://example.org/v1", "https://example.org/v1"),
                 ("http://example.org/v1", "http://example.org/v2")]
    for a, b in same:
        assert normalise_endpoint(a) == normalise_endpoint(b) == a
    for a, b in different:
        assert normalise_endpoint(a) != normalise_endpoint(b)


SECRET = "sk-proj-Zx81kQ0pLm4Tr7Vw2Ny6Bd9Hc3Jf5Ga"


@pytest.mark.parametrize("where", ["api_key_env", "base_url", "cli"])
def test_a_secret_in_the_wrong_place_is_refused_and_never_echoed(tmp_path, where):
    url = "http://127.0.0.1:9/v1"
    if where == "api_key_env":
        study, extra = write_study(tmp_path, url, backend={"api_key_env": SECRET}), []
    elif where == "base_url":
        study, extra = write_study(tmp_path, f"http://user:{SECRET}@127.0.0.1:9/v1"), []
    else:
        study = write_study(tmp_path, url)
        extra = ["--base-url", url, "--model", "m", "--api-key-env", SECRET]
    outputs = [psyq_process("validate", str(study)),
               psyq_process("run", str(study), "--runs-dir", str(tmp_path / "runs"), *extra)]
    for out in outputs[1:] if where == "cli" else outputs:
        assert out.returncode == EXIT_BAD_INPUT, out.stderr
        assert SECRET not in out.stdout + out.stderr and "Traceback" not in out.stderr
        assert "not shown" in out.stderr
    if where != "cli":   # file:line:column: field: …
        assert f"{study}:" in outputs[0].stderr and f"backends[0].{where}" in outputs[0].stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != study]
    assert not any(SECRET.encode() in p.read_bytes() for p in written)
    assert not (tmp_path / "runs").exists()   # refused before a run directory was made


@pytest.mark.parametrize("name,refused", [("OPENAI_API_KEY", False), ("MY_KEY_VAR", False), ("_k2", False),
                                          ("2KEY", True), ("MY-KEY", True), ("sk-abc", True),
                                          ("aB3dE5gH7jK9mN1pQ3sT5vX7", True), ("a" * 129, True),
                                          ("0f" * 20, True)])
def test_key_variable_names(name, refused):
    # Refused: not a name (digit first, hyphen, too long) or shaped like a key (a provider
    # prefix, 24 mixed-case letters and digits, 40 hex digits).
    assert (key_env_problem(name) is not None) == refused


def test_a_malformed_base_url_is_refused_with_its_line(tmp_path):
    study = write_study(tmp_path, "not a url")
    out = psyq("validate", str(study))
    assert out.returncode == EXIT_BAD_INPUT
    line = next(i for i, l in enumerate(study.read_text().splitlines(), 1) if "not a url" in l)
    assert f"{study}:{line}:" in out.stderr and "backends[0].base_url" in out.stderr
    for bad in ("ftp://x/v1", "http:///v1", "http://127.0.0.1:99999/v1", "http://h/v1?x=1"):
        assert base_url_problem(bad) is not None, bad


def test_a_damaged_manifest_is_explained_and_rebuilt_by_a_rerun(tmp_path):
    with StubServer() as stub:
        study = write_study(tmp_path, stub.url)
        first = asyncio.run(administer(load_study(study), tmp_path / "runs", log=lambda m: None))
        manifest = first.run_dir.manifest
        manifest.write_text(manifest.read_text()[:40])    # cut short, as a crash mid-write would
        status = psyq("status", str(first.run_dir.path))
        assert status.returncode == EXIT_BAD_INPUT and "Traceback" not in status.stderr
        assert "damaged" in status.stderr and "run.sqlite" in status.stderr
        again = asyncio.run(administer(load_study(study), tmp_path / "runs", log=lambda m: None))
        assert len(chat_posts(stub)) == 2 * N_ITEMS       # nothing sent again
    assert again.run_dir == first.run_dir and any("damaged" in n for n in again.notes)
    assert json.loads(manifest.read_text())["trial_counts"] == {"answered": 2 * N_ITEMS}
    assert psyq("status", str(first.run_dir.path)).returncode == EXIT_OK
    assert not list(first.run_dir.path.glob(".*.tmp"))   # no temporary file left behind


def test_reply_readers_on_odd_shapes():
    assert content_text([{"type": "text", "text": "3"}, "."]) == ("3.", None)
    assert content_text(None) == ("", None)
    for odd in ({"text": "3"}, 3, True, 2.5):
        text, why = content_text(odd)
        assert text == "" and why
    for broken in ({"token": None, "logprob": -1.0}, {"token": "3", "logprob": float("inf")},
                   {"token": "3", "logprob": float("nan")}, {"token": "3", "logprob": 1e308}, "3"):
        choice = {"logprobs": {"content": [{"token": "3", "logprob": -0.1,
                                            "top_logprobs": [{"token": "3", "logprob": -0.1}, broken]}]}}
        assert first_token_logprobs_checked(choice)[0] is None and first_token_logprobs_checked(choice)[1]
    # -Infinity is probability 0: a valid log probability.
    ok = {"logprobs": {"content": [{"token": "3", "logprob": 0.0,
                                    "top_logprobs": [{"token": "4", "logprob": float("-inf")}]}]}}
    assert first_token_logprobs_checked(ok) == ({"4": float("-inf"), "3": 0.0}, None)


def test_deeply_nested_text_is_unparseable_not_an_error():
    from psyq.engine.trials.scale import Option
    scale = [Option(value=v) for v in range(1, 6)]
    for text in ("[" * 5000 + "]" * 5000, '{"a":' * 5000 + "1" + "}" * 5000, "{" * 40_000):
        # Nested deeper than any answer object: no JSON object is read from it.
        assert parse_json_rating(text, scale).status == "unparseable"
    # As free text, brackets hold no value; the lone "1" amid the braces is read as text would be.
    assert parse_rating("[" * 5000 + "]" * 5000, scale).status == "unparseable"
    assert parse_rating('{"a":' * 5000 + "1" + "}" * 5000, scale).value == 1


def test_a_parser_failure_costs_one_trial_not_the_run(tmp_path, monkeypatch):
    import psyq.engine.administer.send_trial as send_trial
    real = send_trial._parse

    def flaky(trial, text, protocol):   # fails on item b only
        if trial.item_ids == ("b",):
            raise RecursionError("maximum recursion depth exceeded")
        return real(trial, text, protocol)

    monkeypatch.setattr(send_trial, "_parse", flaky)
    with StubServer() as stub:
        result = asyncio.run(administer(load_study(write_study(tmp_path, stub.url)), tmp_path / "runs",
                                        log=lambda m: None))
    got = dict(rows(result.run_dir.database, "SELECT a.item_id || t.respondent_id, a.status || ':' || "
                                             "COALESCE(a.reason, '') FROM answers a JOIN trials t USING (trial_id)"))
    assert len(got) == 2 * N_ITEMS
    assert got["bp00"] == got["bp01"] == "parse_error:parse_error: RecursionError: maximum recursion depth exceeded"
    assert all(v.startswith("answered") for k, v in got.items() if not k.startswith("b"))


def test_a_key_quoted_back_by_the_server_is_blanked(monkeypatch):
    from psyq.engine.backends import BackendConfig, make_backend
    monkeypatch.setenv("PSYQ_QUOTED_KEY", SECRET)
    backend = make_backend(BackendConfig(id="x", kind="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                         api_key_env="PSYQ_QUOTED_KEY"))
    # As a server's 401 body might read; the message is printed and stored with the trial.
    assert backend._redact(f"Incorrect API key provided: {SECRET}.") == "Incorrect API key provided: [API key]."


def test_a_reply_reader_that_fails_costs_one_trial_not_the_run(tmp_path, monkeypatch):
    from psyq.engine.backends.openai import OpenAIBackend
    real = OpenAIBackend.result
    marker = "(marked reply)"

    def flaky(self, body):   # a bug in the reader, on the replies the stub marked (item c's)
        if marker in json.dumps(body):
            raise ZeroDivisionError("division by zero")
        return real(self, body)

    def answer(body):
        return f"4 {marker}" if "Item c" in json.dumps(body["messages"]) else default_answer(body)

    monkeypatch.setattr(OpenAIBackend, "result", flaky)
    with StubServer(answer=answer) as stub:
        result = asyncio.run(administer(load_study(write_study(tmp_path, stub.url, n_personas=1)),
                                        tmp_path / "runs", log=lambda m: None))
        assert len(chat_posts(stub)) == N_ITEMS           # not retried: the reply itself was fine
    got = dict(rows(result.run_dir.database, "SELECT item_id, status || ' ' || COALESCE(reason, '') FROM answers"))
    assert got["c"] == "parse_error parse_error: ZeroDivisionError: division by zero"
    assert all(v.startswith("answered") for k, v in got.items() if k != "c")


def test_a_reply_holding_a_lone_surrogate_is_stored_and_the_run_goes_on(tmp_path):
    """A reply's JSON may escape half of a surrogate pair ("\\ud800"), which Python reads into a
    string SQLite cannot be given as UTF-8: the reply's text is stored with U+FFFD in its place
    (the raw response keeps the escape as sent), not left to stop the run."""
    with StubServer(answer=lambda body: default_answer(body) + " \ud800") as stub:
        study = write_study(tmp_path, stub.url, n_personas=3)
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == EXIT_OK and "Traceback" not in out.stderr, out.stderr
    db = next((tmp_path / "runs").rglob("run.sqlite"))
    stored = rows(db, "SELECT t.raw_text, t.response, a.status FROM trials t JOIN answers a USING (trial_id)")
    assert len(stored) == 3 * N_ITEMS
    for raw_text, response, status in stored:
        assert raw_text.endswith(" \ufffd") and status == "answered"
        assert json.loads(response)["choices"][0]["message"]["content"].endswith(" \ud800")


def test_the_stored_request_is_the_body_the_server_received_byte_for_byte(tmp_path):
    """A trial's stored request is the body that went out, not a second encoding of it (the same
    bytes the server got: compact UTF-8 JSON, no headers), for a trial retried after a 503 too."""
    with StubServer(faults=["503"] * 3) as stub:
        study = write_study(tmp_path, stub.url, n_personas=3)
        personas = [{"id": f"p{i}", "attributes": {"name": "Zoë “wörtlich”", "age": 30 + i}} for i in range(3)]
        (tmp_path / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas},
                                                             allow_unicode=True), encoding="utf-8")
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        posts = chat_posts(stub)
    assert out.returncode == EXIT_OK, out.stderr
    assert {p.outcome for p in posts} >= {"503", "ok"}
    received = {p.raw for p in posts}
    stored = rows(next((tmp_path / "runs").rglob("run.sqlite")), "SELECT request FROM trials")
    assert len(stored) == 3 * N_ITEMS and all("Zoë" in r for (r,) in stored)
    assert all(request.encode("utf-8") in received for (request,) in stored)
