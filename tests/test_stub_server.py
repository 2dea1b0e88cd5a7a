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
import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stub_server import REFUSAL_TEXT, StubServer, is_openai_reasoning_model  # noqa: E402

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


def test_logprobs_from_a_distribution_per_request():
    def distribution(body):
        first = "B" if "Ann" in body["messages"][-1]["content"] else "D"
        return [(first, 0.7), ("A", 0.2), ("x", 0.1)]

    with StubServer(distribution=distribution) as srv, httpx.Client() as c:
        for prompt, token in (("Ann rates", "B"), ("Bob rates", "D")):
            choice = post_chat(c, srv, prompt, logprobs=True, top_logprobs=2).json()["choices"][0]
            [tok] = choice["logprobs"]["content"]
            assert choice["message"]["content"] == tok["token"] == token
            assert tok["logprob"] == pytest.approx(math.log(0.7))
            assert [t["token"] for t in tok["top_logprobs"]] == [token, "A"]


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



# ------------------------------------------------------------------------------------------
# Provider contracts: the stub follows what OpenAI and Anthropic publish for reasoning and
# thinking models (sources in tests/stub_server.py's docstring). Expected messages and numbers
# are written out here, not imported, so a change of the stub's contract shows up as a failure.

MAX_TOKENS_REFUSED = {"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
               "Use 'max_completion_tokens' instead.",
    "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}
# Reasoning tokens per effort, as the stub documents them (medium is the default).
EFFORT_TOKENS = {"none": 0, "minimal": 16, "low": 64, "medium": 256, "high": 1024, "xhigh": 2048, "max": 4096}


def reasoning_chat(prompt: str, model: str = "gpt-5-mini", **extra) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": prompt}], **extra}


def messages_body(prompt: str = "I am talkative. 1-5?", **extra) -> dict:
    return {"model": "claude-x", "messages": [{"role": "user", "content": prompt}], **extra}


def test_reasoning_model_names_are_one_table():
    for name in ["o1", "o1-mini", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5.1",
                 "GPT-5-MINI", "o3-2025-04-16"]:
        assert is_openai_reasoning_model(name), name
    for name in ["stub-model", "gpt-4o", "gpt-4.1-mini", "gpt-50", "o2", "claude-x", None]:
        assert not is_openai_reasoning_model(name), name


def test_reasoning_model_refuses_max_tokens_with_openais_error_object(tmp_path):
    record = tmp_path / "rec.jsonl"
    with StubServer(faults=["500"], record=record) as srv, httpx.Client() as c:
        r = c.post(srv.url + "/chat/completions", json=reasoning_chat("rate", max_tokens=48))
        assert r.status_code == 400 and r.json() == MAX_TOKENS_REFUSED
        [rec] = srv.requests
        assert rec.outcome == "bad_request" and rec.error == MAX_TOKENS_REFUSED["error"]["message"]
        assert srv.faults == ["500"]           # a refused request consumes no scripted fault
        # The default model keeps taking max_tokens, exactly as before.
        srv.faults = []
        ok = c.post(srv.url + "/chat/completions", json=chat("rate", max_tokens=48))
        assert ok.status_code == 200 and "completion_tokens_details" not in ok.json()["usage"]
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    assert entries[0]["outcome"] == "bad_request" and entries[0]["error"] == rec.error
    assert "error" not in entries[1]


@pytest.mark.parametrize("extra, param, code, message", [
    ({"temperature": 0.2}, "temperature", "unsupported_value",
     "Unsupported value: 'temperature' does not support 0.2 with this model. "
     "Only the default (1) value is supported."),
    ({"temperature": 0}, "temperature", "unsupported_value",
     "Unsupported value: 'temperature' does not support 0 with this model. "
     "Only the default (1) value is supported."),
    ({"top_p": 0.9}, "top_p", "unsupported_parameter", "Unsupported parameter: 'top_p' is not supported with this model."),
    ({"top_p": 1}, "top_p", "unsupported_parameter", "Unsupported parameter: 'top_p' is not supported with this model."),
    ({"logprobs": True, "top_logprobs": 5}, "logprobs", "unsupported_parameter",
     "Unsupported parameter: 'logprobs' is not supported with this model."),
    ({"top_logprobs": 5}, "top_logprobs", "unsupported_parameter",
     "Unsupported parameter: 'top_logprobs' is not supported with this model."),
    ({"reasoning_effort": "extreme"}, "reasoning_effort", "invalid_value", None),
    ({"max_completion_tokens": "100"}, "max_completion_tokens", "invalid_type", None),
])
def test_reasoning_model_refuses_sampling_parameters(extra, param, code, message):
    with StubServer() as srv, httpx.Client() as c:
        r = c.post(srv.url + "/chat/completions", json=reasoning_chat("rate", model="o3", **extra))
        assert r.status_code == 400
        error = r.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
        if message is not None:
            assert error["message"] == message
        assert srv.outcomes == ["bad_request"] and srv.requests[0].error == error["message"]
        # The same request to the default model is answered.
        assert c.post(srv.url + "/chat/completions", json=chat("rate", **extra)).status_code == 200


@pytest.mark.parametrize("extra", [{"temperature": 1}, {"temperature": 1.0}, {"logprobs": False},
                                   {"reasoning_effort": None}, {"max_completion_tokens": 500, "seed": 3},
                                   {"response_format": {"type": "json_schema", "json_schema": {
                                       "name": "answer", "schema": {"type": "object"}}}}])
def test_reasoning_model_accepts_what_it_takes(extra):
    with StubServer() as srv, httpx.Client() as c:
        r = c.post(srv.url + "/chat/completions", json=reasoning_chat("rate", **extra))
        assert r.status_code == 200 and srv.outcomes == ["ok"]


def test_reasoning_effort_sets_the_reasoning_tokens():
    prompt = "x" * 40
    with StubServer() as srv, httpx.Client() as c:
        plain = c.post(srv.url + "/chat/completions", json=chat(prompt)).json()
        answer = plain["choices"][0]["message"]["content"]
        for effort, tokens in [*EFFORT_TOKENS.items(), (None, EFFORT_TOKENS["medium"])]:
            extra = {} if effort is None else {"reasoning_effort": effort}
            body = c.post(srv.url + "/chat/completions", json=reasoning_chat(prompt, **extra)).json()
            choice, usage = body["choices"][0], body["usage"]
            assert choice["message"]["content"] == answer and choice["finish_reason"] == "stop"
            assert usage["completion_tokens_details"]["reasoning_tokens"] == tokens
            assert usage["completion_tokens"] == tokens + 1           # reasoning + the one-token answer
            assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] == 10 + tokens + 1


def test_reasoning_tokens_are_spent_inside_max_completion_tokens():
    text = "I would feel upset about it."            # 28 characters: 8 answer tokens
    with StubServer(answer=lambda body: text) as srv, httpx.Client() as c:
        def ask(budget, effort="low"):
            r = c.post(srv.url + "/chat/completions",
                       json=reasoning_chat("q", reasoning_effort=effort, max_completion_tokens=budget))
            assert r.status_code == 200
            body = r.json()
            return body["choices"][0], body["usage"]

        choice, usage = ask(64 + 8)                   # exactly enough: reasoning 64, answer 8
        assert (choice["message"]["content"], choice["finish_reason"]) == (text, "stop")
        assert (usage["completion_tokens"], usage["completion_tokens_details"]["reasoning_tokens"]) == (72, 64)

        choice, usage = ask(64 + 7)                   # one short: nothing visible, "length"
        assert (choice["message"]["content"], choice["finish_reason"]) == ("", "length")
        assert (usage["completion_tokens"], usage["completion_tokens_details"]["reasoning_tokens"]) == (71, 64)

        choice, usage = ask(48, effort="medium")      # the budget runs out while reasoning
        assert (choice["message"]["content"], choice["finish_reason"]) == ("", "length")
        assert (usage["completion_tokens"], usage["completion_tokens_details"]["reasoning_tokens"]) == (48, 48)

        choice, usage = ask(8, effort="none")         # no reasoning: the answer alone fits
        assert (choice["message"]["content"], choice["finish_reason"]) == (text, "stop")
        assert usage["completion_tokens_details"]["reasoning_tokens"] == 0


def test_reasoning_model_json_answer_comes_from_the_answer_callback():
    reply = json.dumps({"answer": 4})

    def answer(body):
        return reply if body.get("response_format") else "4"

    schema = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
        "type": "object", "properties": {"answer": {"enum": [1, 2, 3, 4, 5]}}, "required": ["answer"]}}}
    with StubServer(answer=answer) as srv, httpx.Client() as c:
        body = c.post(srv.url + "/chat/completions",
                      json=reasoning_chat("q", response_format=schema, max_completion_tokens=4096)).json()
    assert body["choices"][0]["message"]["content"] == reply


def test_anthropic_max_tokens_is_required():
    with StubServer(faults=["500"]) as srv, httpx.Client() as c:
        r = c.post(srv.url + "/messages", json=messages_body())
        assert r.status_code == 400
        assert r.json() == {"type": "error", "error": {"type": "invalid_request_error",
                                                       "message": "max_tokens: Field required"}}
        assert srv.outcomes == ["bad_request"] and srv.requests[0].error == "max_tokens: Field required"
        assert srv.faults == ["500"]


BUDGET_MESSAGE = ("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
                  "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
TOOL = {"name": "answer", "description": "Give your answer.",
        "input_schema": {"type": "object", "properties": {"answer": {"enum": [1, 2, 3, 4, 5]}}, "required": ["answer"]}}


@pytest.mark.parametrize("extra, message", [
    ({"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1023}},
     "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    ({"max_tokens": 2048, "thinking": {"type": "enabled", "budget_tokens": 2048}}, BUDGET_MESSAGE),
    ({"max_tokens": 1024, "thinking": {"type": "enabled", "budget_tokens": 2048}}, BUDGET_MESSAGE),
    ({"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}, "temperature": 0.5},
     "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at "
     "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
     "#important-considerations-when-using-extended-thinking"),
    ({"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}, "top_k": 5},
     "`top_k` must be unset when thinking is enabled. Please consult our documentation at "
     "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
     "#important-considerations-when-using-extended-thinking"),
    ({"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}, "top_p": 0.9},
     "`top_p` must be between 0.95 and 1 when thinking is enabled."),
    ({"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}, "tools": [TOOL],
      "tool_choice": {"type": "tool", "name": "answer"}},
     "Thinking may not be enabled when tool_choice forces tool use."),
    ({"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}, "tools": [TOOL],
      "tool_choice": {"type": "any"}},
     "Thinking may not be enabled when tool_choice forces tool use."),
    ({"max_tokens": 4096, "tools": [TOOL], "tool_choice": {"type": "tool", "name": "other"}}, None),
    ({"max_tokens": 4096, "tool_choice": {"type": "any"}}, None),
])
def test_anthropic_refusals(extra, message):
    with StubServer() as srv, httpx.Client() as c:
        r = c.post(srv.url + "/messages", json=messages_body(**extra))
        assert r.status_code == 400
        body = r.json()
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        if message is not None:
            assert body["error"]["message"] == message
        assert srv.outcomes == ["bad_request"] and srv.requests[0].error == body["error"]["message"]


@pytest.mark.parametrize("extra", [{"temperature": 1}, {"top_p": 0.95}, {"top_p": 1},
                                   {"tools": [TOOL], "tool_choice": {"type": "auto"}}])
def test_thinking_accepts_what_the_guide_allows(extra):
    body = messages_body(max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 2048}, **extra)
    with StubServer() as srv, httpx.Client() as c:
        r = c.post(srv.url + "/messages", json=body)
        assert r.status_code == 200 and [b["type"] for b in r.json()["content"]] == ["thinking", "text"]


def test_thinking_block_comes_first_and_its_tokens_are_output_tokens():
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with StubServer() as srv, httpx.Client() as c:
        plain = c.post(srv.url + "/messages", json=messages_body(max_tokens=48)).json()
        msg = c.post(srv.url + "/messages", json=messages_body(max_tokens=1024 + 48, thinking=thinking)).json()
        again = c.post(srv.url + "/messages", json=messages_body(max_tokens=1024 + 48, thinking=thinking)).json()
    think, text = msg["content"]
    assert think["type"] == "thinking" and isinstance(think["thinking"], str) and think["thinking"]
    assert isinstance(think["signature"], str) and think["signature"]
    assert think == again["content"][0]                        # deterministic
    assert text == plain["content"][0] and text["type"] == "text"   # the same answer as without thinking
    assert msg["stop_reason"] == "end_turn"
    assert msg["usage"]["output_tokens"] == 1024 + 1           # the whole budget, then a one-token answer
    assert msg["usage"]["output_tokens_details"] == {"thinking_tokens": 1024}
    assert plain["usage"] == {"input_tokens": plain["usage"]["input_tokens"], "output_tokens": 1}


def test_thinking_plus_answer_over_max_tokens_stops_with_no_text_block():
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with StubServer(answer=lambda body: "Strongly agree") as srv, httpx.Client() as c:   # 4 answer tokens
        short = c.post(srv.url + "/messages", json=messages_body(max_tokens=1027, thinking=thinking)).json()
        enough = c.post(srv.url + "/messages", json=messages_body(max_tokens=1028, thinking=thinking)).json()
    assert short["stop_reason"] == "max_tokens" and [b["type"] for b in short["content"]] == ["thinking"]
    assert short["usage"]["output_tokens"] == 1027
    assert enough["stop_reason"] == "end_turn" and [b["type"] for b in enough["content"]] == ["thinking", "text"]
    assert enough["usage"]["output_tokens"] == 1028


def test_forced_tool_choice_replies_with_one_tool_use_block():
    schema = {"type": "object", "properties": {"answer": {"enum": [1, 2, 3, 4, 5]},
                                               "why": {"type": "string", "minLength": 3},
                                               "sure": {"type": "boolean"},
                                               "n": {"type": "integer", "minimum": 1, "maximum": 2},
                                               "tags": {"type": "array", "items": {"type": "string"}}},
              "required": ["answer", "why", "sure", "n", "tags"], "additionalProperties": False}
    other = {"name": "other", "input_schema": {"type": "object", "properties": {"x": {"type": "number"}}}}
    tool = {"name": "answer", "input_schema": schema}
    with StubServer() as srv, httpx.Client() as c:
        digit = c.post(srv.url + "/messages", json=messages_body(max_tokens=48)).json()["content"][0]["text"]
        msg = c.post(srv.url + "/messages", json=messages_body(
            max_tokens=200, tools=[other, tool], tool_choice={"type": "tool", "name": "answer"})).json()
        [block] = msg["content"]
        assert block["type"] == "tool_use" and block["name"] == "answer" and block["id"].startswith("toolu_")
        jsonschema.validate(block["input"], schema)
        assert block["input"]["answer"] == int(digit)             # built around the stub's answer
        assert msg["stop_reason"] == "tool_use"
        # {"type": "any"}: the first tool.
        anyone = c.post(srv.url + "/messages", json=messages_body(
            max_tokens=200, tools=[other, tool], tool_choice={"type": "any"})).json()
        assert anyone["content"][0]["name"] == "other" and anyone["stop_reason"] == "tool_use"
        jsonschema.validate(anyone["content"][0]["input"], other["input_schema"])
        # Too small a max_tokens for the tool call: stopped, no block.
        cut = c.post(srv.url + "/messages", json=messages_body(
            max_tokens=2, tools=[tool], tool_choice={"type": "tool", "name": "answer"})).json()
        assert cut["stop_reason"] == "max_tokens" and cut["content"] == []
        # Tools without a forcing choice: the usual text reply.
        auto = c.post(srv.url + "/messages", json=messages_body(max_tokens=48, tools=[tool])).json()
        assert auto["content"] == [{"type": "text", "text": digit}] and auto["stop_reason"] == "end_turn"


def test_forced_tool_input_is_the_callbacks_json_object():
    def answer(body):
        return json.dumps({"answer": 5}) if body.get("tools") else "5"

    with StubServer(answer=answer, faults=["ok", "invalid_answer"]) as srv, httpx.Client() as c:
        body = messages_body(max_tokens=48, tools=[TOOL], tool_choice={"type": "tool", "name": "answer"})
        msg = c.post(srv.url + "/messages", json=body).json()
        assert msg["content"][0]["input"] == {"answer": 5}
        jsonschema.validate(msg["content"][0]["input"], TOOL["input_schema"])
        # A scripted invalid answer stays a text reply.
        bad = c.post(srv.url + "/messages", json=body).json()
        assert bad["content"] == [{"type": "text", "text": "banana"}]


def test_script_mode_applies_the_contracts():
    with subprocess.Popen([sys.executable, str(SCRIPT), "--port", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            line_box = []
            reader = threading.Thread(target=lambda: line_box.append(proc.stdout.readline()), daemon=True)
            reader.start()
            reader.join(10)
            assert line_box and line_box[0].startswith("READY http://127.0.0.1:")
            url = line_box[0].split()[1]
            with httpx.Client() as c:
                refused = c.post(url + "/chat/completions", json=reasoning_chat("q", max_tokens=48))
                assert refused.status_code == 400 and refused.json() == MAX_TOKENS_REFUSED
                ok = c.post(url + "/chat/completions", json=reasoning_chat("q", max_completion_tokens=300))
                details = ok.json()["usage"]["completion_tokens_details"]
                assert details["reasoning_tokens"] == EFFORT_TOKENS["medium"]
        finally:
            proc.terminate()
            try:
                assert proc.wait(5) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
