"""docs/models.md: its capability table is the one the code holds, and every provider snippet is a
study that `psyq validate` accepts and `psyq plan --preview` plans without sending anything."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from psyq.engine.backends.capabilities import capability_table_markdown
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "models.md"
SNIPPET = re.compile(r"<!-- snippet: (?P<name>[\w.-]+) -->\s*```yaml\n(?P<body>.*?)```", re.S)
SNIPPETS = {m["name"]: m["body"] for m in SNIPPET.finditer(DOC.read_text(encoding="utf-8"))}
PROVIDERS = ["openai-chat", "openai-reasoning", "anthropic-thinking", "gemini", "vllm", "ollama", "llama.cpp",
             "openrouter"]


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def test_the_docs_table_is_generated_from_the_capability_data():
    text = DOC.read_text(encoding="utf-8")
    shown = text.split("<!-- capability-table: begin -->\n")[1].split("\n<!-- capability-table: end -->")[0]
    assert shown == capability_table_markdown()


def test_there_is_a_snippet_for_every_provider_the_docs_promise():
    assert sorted(SNIPPETS) == sorted(PROVIDERS)


@pytest.mark.parametrize("name", PROVIDERS)
def test_each_snippet_validates_and_plans_without_network(name, tmp_path):
    # Saved as if in studies/: its ../instruments and ../personas paths point at the repository's.
    study = tmp_path / "studies" / f"{name}.yaml"
    study.parent.mkdir()
    study.write_text(SNIPPETS[name].replace("../", f"{ROOT}/"), encoding="utf-8")
    checked = psyq("validate", str(study))
    assert checked.returncode == 0, checked.stderr
    planned = psyq("plan", str(study), "--preview", "1", "--tokenizer", "approximate", "--json",
                   "--runs-dir", str(tmp_path / "runs"))
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    body = plan["preview"][0]["body"]
    backend = plan["backends"][0]
    assert backend["requests"] == 364          # 13 respondents x 28 IRI items, one per request
    if name == "openai-reasoning":             # what the table decides, as the preview shows it
        assert "max_completion_tokens" in body and "max_tokens" not in body and "temperature" not in body
        assert body["reasoning_effort"] == "low"
        assert body["max_completion_tokens"] == body_budget(plan) + 4096
    if name == "anthropic-thinking":
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and "temperature" not in body
    if name == "gemini":
        assert "seed" not in body and body["reasoning_effort"] == "low"


def body_budget(plan: dict) -> int:
    """The answer budget of the previewed request (its limit less the reasoning allowance)."""
    row = plan["backends"][0]
    return (row["completion_tokens_max"] - row["reasoning_max"]) // row["requests"]


def test_a_design_the_model_cannot_honour_is_refused_at_validate_naming_the_setting(tmp_path):
    study = tmp_path / "studies" / "bad.yaml"
    study.parent.mkdir()
    text = SNIPPETS["openai-reasoning"].replace("../", f"{ROOT}/").replace(
        "protocol: {answer: json, seed: 1}", "protocol: {answer: logprobs, seed: 1}").replace(
        "reasoning_effort: low", "reasoning_effort: low\n    temperature: 0.7\n    top_p: 0.9")
    study.write_text(text, encoding="utf-8")
    out = psyq("validate", str(study))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "protocol.answer: backend 'gpt5mini': OpenAI reasoning models" in out.stderr
    assert "returns no log probabilities; use answer: text or json" in out.stderr
    assert re.search(r"bad\.yaml:\d+:\d+: backends\[0\]\.temperature: .*accepts only the default temperature",
                     out.stderr)
    assert "backends[0].top_p: " in out.stderr
