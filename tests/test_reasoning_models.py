"""The models psychologists study today, through the stub that follows the providers' documents
(tests/stub_server.py: OpenAI reasoning models refuse max_tokens, logprobs, top_p and temperatures
other than 1, and spend reasoning tokens inside max_completion_tokens; Anthropic thinking and
forced tool use as its guides say)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from psyq.engine.backends import BackendConfig, make_backend
from psyq.engine.backends.base import ChatRequest
from psyq.engine.administer.run import administer
from psyq.engine.design.study import load_study
from stub_server import StubServer
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"   # 4 items, scale 1–7


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def posts(stub: StubServer) -> list:
    return [r for r in stub.requests if r.method == "POST"]


def quickstart_copy(tmp: Path, **protocol) -> Path:
    """studies/quickstart.yaml as a user would edit it (here: the answer mode), paths kept working."""
    data = yaml.safe_load((ROOT / "studies" / "quickstart.yaml").read_text())
    data["instruments"] = [str(ROOT / "instruments" / "iri.yaml")]
    data["cohort"] = str(ROOT / "personas" / "adults_small.yaml")
    data["protocol"].update(protocol)
    path = tmp / "quickstart.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def mini_study(tmp: Path, backend: dict, n_personas: int = 2, **protocol) -> Path:
    personas = [{"id": f"p{i}", "attributes": {"age": 30 + i}} for i in range(n_personas)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    study = {"psyq": "study/1", "id": "r", "instruments": [str(MINI)], "cohort": "cohort.yaml",
             "backends": [{"id": "m", **backend}], "protocol": {"seed": 1, "answer": "text", **protocol}}
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def rows(run_dir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        return db.execute(sql).fetchall()


def test_the_quickstart_in_text_mode_is_answered_by_a_reasoning_model(tmp_path):
    """Done-when of issue 24: every trial answered, exit 0, reasoning tokens in the manifest."""
    with StubServer() as stub:
        out = psyq("run", str(quickstart_copy(tmp_path, answer="text")), "--base-url", stub.url,
                   "--model", "gpt-5-mini", "--runs-dir", str(tmp_path / "runs"))
        sent = posts(stub)
    assert out.returncode == 0, out.stderr
    assert len(sent) == 364 and all(r.outcome == "ok" for r in sent)
    body = sent[0].body
    assert "max_tokens" not in body and "temperature" not in body and "logprobs" not in body
    # 48 answer tokens + the medium-effort allowance (engine/backends/capabilities.py).
    assert body["max_completion_tokens"] == 48 + 8192
    manifest = json.loads(next((tmp_path / "runs").rglob("manifest.json")).read_text())
    usage = manifest["usage"]["gpt-5-mini"]
    # The stub spends 256 reasoning tokens per request at the default (medium) effort.
    assert usage["reasoning_tokens"] == 364 * 256 and usage["trials_with_reasoning_tokens"] == 364
    assert manifest["backends"]["gpt-5-mini"]["capabilities"]["name"] == "openai-reasoning"
    assert manifest["answer_counts"] == {"answered": 364}
    status = psyq("status", str(next((tmp_path / "runs").rglob("manifest.json")).parent))
    assert "reasoning 93,184 of the completion tokens (reported for 364 of 364 trials)" in status.stdout


@pytest.mark.parametrize("change, words", [
    (("--temperature", "0.7"), "accepts only the default temperature (1)"),
    ((), "returns no log probabilities; use answer: text or json"),
])
def test_a_design_the_reasoning_model_cannot_honour_sends_nothing(tmp_path, change, words):
    """Done-when: logprobs (the quickstart as shipped) or temperature 0.7: no request, exit 2, why."""
    study = quickstart_copy(tmp_path, answer="text") if change else ROOT / "studies" / "quickstart.yaml"
    with StubServer() as stub:
        out = psyq("run", str(study), "--base-url", stub.url, "--model", "gpt-5-mini", *change,
                   "--runs-dir", str(tmp_path / "runs"))
        sent = posts(stub)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert words in out.stderr and "OpenAI reasoning models" in out.stderr
    assert sent == []


def test_a_refusal_is_said_in_the_providers_words_and_stops_the_run(tmp_path):
    """A server the table does not recognise (a reasoning model behind a generic profile): the first
    400 is printed at once with the fix, the fifth identical one stops the run (exit 6)."""
    study = mini_study(tmp_path, {"kind": "openai", "model": "o3-mini", "base_url": "http://placeholder/v1",
                                  "capabilities": {"profile": "openai-compatible"}, "concurrency": 1}, n_personas=4)
    with StubServer() as stub:
        text = study.read_text().replace("http://placeholder/v1", stub.url)
        study.write_text(text)
        out = psyq("run", str(study), "--runs-dir", str(tmp_path / "runs"))
        sent = posts(stub)
    assert out.returncode == 6, out.stderr
    assert len(sent) == 5                       # not 16: stopped at the fifth identical refusal
    said = "HTTP 400 (unsupported_parameter, param max_tokens): Unsupported parameter: 'max_tokens'"
    assert out.stderr.count(said) >= 2         # printed at once, and in the stop message
    assert "fix: this model wants `max_completion_tokens`" in out.stderr
    run_dir = next((tmp_path / "runs").rglob("manifest.json")).parent
    status = psyq("status", str(run_dir))
    assert f"error      4 failed trials: {said}" in status.stdout
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert "max_completion_tokens" in manifest["stopped_early"] and manifest["finished_at"] is None


def test_the_live_counters_count_what_the_summary_counts(tmp_path, capsys):
    from psyq.engine.administer.progress import RunProgress
    study = mini_study(tmp_path, {"kind": "openai", "model": "o3-mini", "base_url": "http://placeholder/v1",
                                  "capabilities": {"profile": "openai-compatible"}, "concurrency": 1}, n_personas=1)
    with StubServer() as stub:
        study.write_text(study.read_text().replace("http://placeholder/v1", stub.url))
        progress = RunProgress()
        result = asyncio.run(administer(load_study(study), tmp_path / "runs", on_start=progress.start,
                                        on_trial=progress.trial, log=lambda m: None))
        progress.stop()
    assert result.counts == {"failed": 4}
    assert progress.failed == {"m": 4} and progress.missing == {"m": 0}


@pytest.mark.parametrize("budget, expect", [(100, "answered"), (50, "token_budget_exhausted")])
def test_a_reply_that_runs_out_of_its_limit_is_sent_again_once_with_it_doubled(tmp_path, budget, expect):
    # The stub reasons 256 tokens at medium effort. 48 + 100 = 148 runs out, 296 is enough;
    # 48 + 50 = 98 runs out and so does 196: missing, with the reason.
    study = mini_study(tmp_path, {"kind": "openai", "model": "gpt-5-mini", "base_url": "http://placeholder/v1",
                                  "reasoning_budget": budget}, n_personas=1)
    with StubServer() as stub:
        study.write_text(study.read_text().replace("http://placeholder/v1", stub.url))
        result = asyncio.run(administer(load_study(study), tmp_path / "runs", log=lambda m: None))
        limits = [r.body["max_completion_tokens"] for r in posts(stub)]
    assert sorted(set(limits)) == [48 + budget, 2 * (48 + budget)] and len(limits) == 8   # 4 items, twice each
    got = rows(result.run_dir.path, "SELECT a.status, a.reason, t.budget_reasks, t.reasoning_tokens "
                                    "FROM answers a JOIN trials t USING (trial_id)")
    assert {g[0] for g in got} == {expect} and {g[2] for g in got} == {1}
    if expect == "token_budget_exhausted":
        assert "ran out of its token limit twice (max_completion_tokens 196 the second time" in got[0][1]
        assert result.counts == {"missing": 4}
    else:
        # Reasoning tokens summed over both replies: all of the first limit (148), then 256.
        assert {g[3] for g in got} == {148 + 256}
    report_counts = rows(result.run_dir.path, "SELECT COUNT(*) FROM trials WHERE budget_reasks > 0")
    assert report_counts == [(4,)]


def test_anthropic_thinking_reply_gives_the_text_block_as_the_answer(tmp_path):
    study = mini_study(tmp_path, {"kind": "anthropic", "model": "claude-sonnet-4-5", "base_url": "http://placeholder/v1",
                                  "reasoning_budget": 1024}, n_personas=1)
    with StubServer() as stub:
        study.write_text(study.read_text().replace("http://placeholder/v1", stub.url))
        result = asyncio.run(administer(load_study(study), tmp_path / "runs", log=lambda m: None))
        sent = posts(stub)
    assert all(r.outcome == "ok" for r in sent) and len(sent) == 4
    assert sent[0].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert sent[0].body["max_tokens"] == 48 + 1024 and "temperature" not in sent[0].body
    got = rows(result.run_dir.path, "SELECT t.response, a.status, a.value FROM trials t JOIN answers a USING (trial_id)")
    for response, status, value in got:
        blocks = json.loads(response)["content"]
        assert blocks[0]["type"] == "thinking"          # kept in the raw reply ...
        assert status == "answered" and value is not None   # ... and the text block was read


def test_anthropic_json_answers_go_through_a_forced_tool(tmp_path):
    backend = make_backend(BackendConfig(id="c", kind="anthropic", model="claude-haiku-4-5",
                                         base_url="http://placeholder/v1"))
    schema = {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2, 3]}}, "required": ["a"],
              "additionalProperties": False}
    body = backend.payload(ChatRequest(messages=({"role": "user", "content": "Rate."},), max_tokens=64,
                                       json_schema=schema))
    assert body["tools"][0]["input_schema"] == schema
    assert body["tool_choice"] == {"type": "tool", "name": body["tools"][0]["name"]}
    reply = {"content": [{"type": "tool_use", "id": "t1", "name": "answer", "input": {"a": 2}}],
             "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}
    assert json.loads(backend.result(reply).text) == {"a": 2}
    # With extended thinking a tool cannot be forced: the schema is left to the instruction.
    thinking = make_backend(BackendConfig(id="c", kind="anthropic", model="claude-haiku-4-5",
                                          base_url="http://placeholder/v1", reasoning_budget=1024))
    body = thinking.payload(ChatRequest(messages=({"role": "user", "content": "Rate."},), max_tokens=64,
                                        json_schema=schema))
    assert "tools" not in body and "tool_choice" not in body


def test_a_judge_that_cannot_give_its_answer_mode_is_refused_before_anything_is_sent(tmp_path):
    with StubServer() as stub:
        out = psyq("judge", str(tmp_path), "--rubric", "leas_level", "--base-url", stub.url, "--model", "gpt-5-mini",
                   "--answer", "logprobs")
        sent = posts(stub)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--answer: protocol.answer: backend 'judge': OpenAI reasoning models" in out.stderr
    assert "returns no log probabilities" in out.stderr and sent == []
    # Its temperature 0 is not sent to such a model, and the user is told.
    assert "takes only its default temperature" in out.stderr
