"""The fault-injecting LLM stub server (tests/stub_server.py), exercised over real HTTP."""

import hashlib
import json
import math
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stub_server import REFUSAL_TEXT, StubServer  # noqa: E402

SCRIPT = Path(__file__).resolve().parent / "stub_server.py"


def chat(prompt: str, **extra) -> dict:
    return {"model": "stub-model", "messages": [{"role": "user", "content": prompt}], **extra}


def post_chat(client: httpx.Client, srv: StubServer, prompt: str, **extra) -> httpx.Response:
    return client.post(srv.url + "/chat/completions", json=chat(prompt, **extra))


def text_of(resp: httpx.Response) -> str:
    return resp.json()["choices"][0]["message"]["content"]


def test_health_and_models():
    with StubServer() as srv, httpx.Client() as c:
        assert srv.url.startswith("http://127.0.0.1:") and srv.url.endswith("/v1")
        assert c.get(srv.base_url + "/health").json() == {"status": "ok"}
        models = c.get(srv.url + "/models").json()
        assert models["object"] == "list" and [m["id"] for m in models["data"]] == ["stub-model"]
        assert c.get(srv.url + "/nope").status_code == 404


def test_default_answer_is_deterministic_per_prompt():
    prompts = [f"Item {i}: I enjoy parties. Answer 1-5." for i in range(24)]
    with StubServer() as srv, httpx.Client() as c:
        first = [text_of(post_chat(c, srv, p)) for p in prompts]
        second = [text_of(post_chat(c, srv, p)) for p in prompts]
    assert first == second
    assert set(first) <= {"1", "2", "3", "4"} and len(set(first)) > 1
    msgs = [{"role": "user", "content": prompts[0]}]
    blob = json.dumps(msgs, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert first[0] == "1234"[int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") % 4]
    # Same answer in a fresh server (no state involved).
    with StubServer() as srv2, httpx.Client() as c:
        assert text_of(post_chat(c, srv2, prompts[0])) == first[0]


def test_openai_shape_usage_and_recording():
    prompt = "x" * 40
    with StubServer() as srv, httpx.Client() as c:
        r = c.post(srv.url + "/chat/completions", json=chat(prompt), headers={"Authorization": "Bearer k"})
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        body = r.json()
        assert body["object"] == "chat.completion"
        choice = body["choices"][0]
        assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "stop"
        assert choice["logprobs"] is None
        assert body["usage"] == {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
        [rec] = srv.requests
        assert rec.path == "/v1/chat/completions" and rec.outcome == "ok"
        assert rec.body["messages"][0]["content"] == prompt
        assert rec.headers["authorization"] == "Bearer k"


def test_custom_answer_callback_gets_the_body():
    seen = []

    def answer(body):
        seen.append(body)
        return "Strongly agree"

    with StubServer(answer=answer) as srv, httpx.Client() as c:
        assert text_of(post_chat(c, srv, "q", temperature=0.3)) == "Strongly agree"
    assert seen[0]["temperature"] == 0.3


def test_keep_alive_reuses_one_connection():
    with StubServer() as srv, httpx.Client() as c:
        for i in range(3):
            r = post_chat(c, srv, f"p{i}")
            assert r.http_version == "HTTP/1.1" and int(r.headers["content-length"]) == len(r.content)
        assert len({rec.conn for rec in srv.requests}) == 1


def test_scripted_faults_in_order():
    script = ["429", "500", "503", "garbage", "invalid_answer", "refusal", "ok"]
    with StubServer(faults=script, retry_after_s=0.05) as srv, httpx.Client() as c:
        rs = [post_chat(c, srv, "same prompt") for _ in script]
        assert [r.status_code for r in rs] == [429, 500, 503, 200, 200, 200, 200]
        assert rs[0].headers["retry-after"] == "0.05"
        assert rs[0].json()["error"]["type"] == "rate_limit_error"
        assert "error" in rs[1].json() and "error" in rs[2].json()
        with pytest.raises(json.JSONDecodeError):
            json.loads(rs[3].text)
        assert text_of(rs[4]) == "banana"
        assert text_of(rs[5]) == REFUSAL_TEXT
        assert text_of(rs[6]) in {"1", "2", "3", "4"}
        assert srv.outcomes == script
        assert srv.faults == []  # script consumed
        # After the script: fault_rate 0 -> normal answers.
        assert post_chat(c, srv, "again").status_code == 200


def test_timeout_fault_makes_client_time_out_and_stop_is_prompt():
    srv = StubServer(faults=["timeout"], timeout_hang_s=60.0).start()
    try:
        with httpx.Client(timeout=0.2) as c:
            with pytest.raises(httpx.TimeoutException):
                post_chat(c, srv, "slow")
        assert srv.outcomes == ["timeout"]
    finally:
        t0 = time.monotonic()
        srv.stop()
    # Not a speed limit: stop() must not wait out the 60 s hang (a generous bound, far from it).
    assert time.monotonic() - t0 < 30


def test_drop_fault_closes_connection_without_response():
    with StubServer(faults=["drop"]) as srv:
        with httpx.Client() as c:
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                post_chat(c, srv, "x")
            # The server keeps serving afterwards.
            assert post_chat(c, srv, "x").status_code == 200
        assert srv.outcomes == ["drop", "ok"]


def test_random_faults_are_seeded():
    def run(seed):
        kinds = ("500", "garbage", "invalid_answer")
        with StubServer(fault_rate=0.5, fault_kinds=kinds, seed=seed) as srv, httpx.Client() as c:
            for i in range(30):
                post_chat(c, srv, f"p{i}")
            return srv.outcomes

    a, b, other = run(1), run(1), run(2)
    assert a == b and a != other
    assert {"ok", "500"} <= set(a) and set(a) <= {"ok", "500", "garbage", "invalid_answer"}


def test_unknown_fault_kind_rejected():
    with pytest.raises(ValueError):
        StubServer(faults=["explode"])
    with pytest.raises(ValueError):
        StubServer(fault_kinds=("429", "nope"), fault_rate=0.1)


def test_max_in_flight_counts_concurrency_and_reset():
    with StubServer(latency_s=0.2) as srv, httpx.Client() as c:
        with ThreadPoolExecutor(8) as pool:
            rs = list(pool.map(lambda i: post_chat(c, srv, f"p{i}"), range(8)))
        assert all(r.status_code == 200 for r in rs)
        assert srv.max_in_flight == 8   # all eight were in flight at once: really concurrent
        srv.reset()
        assert srv.requests == [] and srv.max_in_flight == 0
        post_chat(c, srv, "one")
        assert srv.max_in_flight == 1 and len(srv.requests) == 1


def test_reset_restores_script():
    with StubServer(faults=["500"]) as srv, httpx.Client() as c:
        assert post_chat(c, srv, "a").status_code == 500
        assert post_chat(c, srv, "a").status_code == 200
        srv.reset()
        assert post_chat(c, srv, "a").status_code == 500
        srv.faults = ["503"]
        assert post_chat(c, srv, "a").status_code == 503


def test_logprobs_shape():
    with StubServer() as srv, httpx.Client() as c:
        r = post_chat(c, srv, "rate", logprobs=True, top_logprobs=3)
        choice = r.json()["choices"][0]
        assert choice["message"]["content"] == "3"
        [tok] = choice["logprobs"]["content"]
        assert tok["token"] == "3" and tok["logprob"] == pytest.approx(math.log(0.3))
        assert [t["token"] for t in tok["top_logprobs"]] == ["3", "4", "2"]
        assert [math.exp(t["logprob"]) for t in tok["top_logprobs"]] == pytest.approx([0.3, 0.25, 0.2])

        full = post_chat(c, srv, "rate", logprobs=True, top_logprobs=20).json()
        top = full["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        assert {t["token"] for t in top} == {"1", "2", "3", "4", " The", "I"}
        probs = [math.exp(t["logprob"]) for t in top]
        assert probs == sorted(probs, reverse=True) and sum(probs) == pytest.approx(1.0)


def test_anthropic_messages_shape():
    body = {"model": "claude-x", "max_tokens": 5, "system": "You are Ann, 34.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "I am talkative. 1-5?"}]}]}
    with StubServer() as srv, httpx.Client() as c:
        r = c.post(srv.url + "/messages", json=body,
                   headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
        assert r.status_code == 200
        msg = r.json()
        assert msg["type"] == "message" and msg["role"] == "assistant" and msg["stop_reason"] == "end_turn"
        assert msg["content"][0]["type"] == "text" and msg["content"][0]["text"] in {"1", "2", "3", "4"}
        chars = len(body["system"]) + len("I am talkative. 1-5?")
        assert msg["usage"] == {"input_tokens": chars // 4, "output_tokens": 1}
        assert srv.requests[0].headers["anthropic-version"] == "2023-06-01"

        srv.faults = ["429"]
        err = c.post(srv.url + "/messages", json=body)
        assert err.status_code == 429 and "retry-after" in err.headers
        assert err.json()["type"] == "error" and err.json()["error"]["type"] == "rate_limit_error"


def test_bad_request_body():
    with StubServer(faults=["500"]) as srv, httpx.Client() as c:
        r = c.post(srv.url + "/chat/completions", content=b"not json",
                   headers={"content-type": "application/json"})
        assert r.status_code == 400
        assert srv.faults == ["500"]  # not consumed by a bad request


def test_rpm_limit_returns_429_after_limit():
    with StubServer(rpm_limit=3, faults=["ok", "500"]) as srv, httpx.Client() as c:
        codes = [post_chat(c, srv, f"p{i}") for i in range(5)]
        assert [r.status_code for r in codes] == [200, 500, 200, 429, 429]
        ra = float(codes[3].headers["retry-after"])
        assert 55 < ra <= 60
        assert srv.outcomes == ["ok", "500", "ok", "429", "429"]


def test_shutdown_leaves_no_threads():
    with StubServer() as srv:
        c = httpx.Client()  # keeps an idle keep-alive connection open across stop()
        post_chat(c, srv, "x")
        t0 = time.monotonic()
    # Not a speed limit: leaving the block must not wait for the idle keep-alive connection,
    # which stays open until the client closes it below (a generous bound).
    assert time.monotonic() - t0 < 30
    c.close()
    leftovers = [t.name for t in threading.enumerate() if t.name.startswith("stub-")]
    assert leftovers == []


def test_script_mode_ready_and_record(tmp_path):
    record = tmp_path / "rec.jsonl"
    with subprocess.Popen([sys.executable, str(SCRIPT), "--port", "0", "--seed", "1",
                           "--fault-rate", "0.0", "--record", str(record)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            _check_script(proc, record)
        finally:
            proc.terminate()
            try:
                assert proc.wait(5) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


def _check_script(proc: subprocess.Popen, record: Path) -> None:
    line_box = []
    reader = threading.Thread(target=lambda: line_box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(10)
    assert line_box and line_box[0].startswith("READY http://127.0.0.1:"), f"no READY line: {line_box!r}"
    url = line_box[0].split()[1]
    assert url.endswith("/v1")
    with httpx.Client() as c:
        for prompt in ["A", "A", "B"]:
            r = c.post(url + "/chat/completions", json=chat(prompt))
            assert r.status_code == 200
    lines = [json.loads(x) for x in record.read_text().splitlines()]  # flushed per line
    assert [entry["messages"][0]["content"] for entry in lines] == ["A", "A", "B"]
    assert all(entry["outcome"] == "ok" and entry["path"] == "/v1/chat/completions"
               and isinstance(entry["time"], float) for entry in lines)
