"""Prompt caching and token accounting: cached prompt tokens per trial, summed per backend, priced.

Runs go over real loopback HTTP to the stub (tests/stub_server.py), which reports cached tokens
for a repeated system prompt in OpenAI's, llama.cpp's or Anthropic's fields; the expected sums
are computed by hand from the respondents' stored system prompts, not from the stub's code.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from psyq.engine.design.prices import ModelPrice, PriceTable
from psyq.engine.store.run_store import RunStore
from psyq.engine.results.usage import Usage, token_usage, usage_lines
from stub_server import StubServer
from test_administer import run, write_study


def _by_hand(db_path) -> tuple[int, int]:
    """(prompt tokens, cached tokens) the stub must have reported, by the rule it documents:
    prompt = characters of every message // 4 per request; a respondent's first request with its
    system prompt caches nothing, each later one reads len(system prompt) // 4 tokens."""
    with sqlite3.connect(db_path) as db:
        systems = dict(db.execute("SELECT respondent_id, system_prompt FROM respondents").fetchall())
        rows = db.execute("SELECT respondent_id, request FROM trials").fetchall()
    prompt = cached = 0
    seen: set[str] = set()
    for respondent, request in rows:
        payload = json.loads(request)
        text = payload.get("system") or ""
        if isinstance(text, list):
            text = "".join(block["text"] for block in text)
        prompt += (len(text) + sum(len(m["content"]) for m in payload["messages"])) // 4
        system = systems[respondent]
        cached += len(system) // 4 if system in seen else 0
        seen.add(system)
    return prompt, cached


@pytest.mark.parametrize("shape", ["openai", "llamacpp"])
def test_cached_tokens_are_stored_per_trial_and_summed_per_backend(tmp_path, shape):
    with StubServer(prompt_cache=shape) as stub:
        result = run(write_study(tmp_path, stub.url), tmp_path / "runs")
    assert result.counts == {"answered": 8}     # 2 personas × 4 items
    prompt, cached = _by_hand(result.run_dir.database)
    assert cached > 0
    with sqlite3.connect(result.run_dir.database) as db:
        per_trial = db.execute("SELECT cached_tokens FROM trials").fetchall()
        (usage,) = token_usage(db)
    assert all(c is not None for (c,) in per_trial) and sum(c for (c,) in per_trial) == cached
    assert (usage.prompt_tokens, usage.cached_tokens, usage.with_cached) == (prompt, cached, 8)
    manifest = json.loads(result.run_dir.manifest.read_text())["usage"]["stub"]
    assert (manifest["prompt_tokens"], manifest["cached_tokens"]) == (prompt, cached)


def test_anthropic_system_prompt_is_marked_cacheable_and_its_cache_reads_counted(tmp_path):
    with StubServer(prompt_cache="openai") as stub:
        study = write_study(tmp_path, stub.url, backend={"kind": "anthropic", "model": "claude-x"})
        result = run(study, tmp_path / "runs")
        sent = [r.body for r in stub.requests if r.path.endswith("/messages")]
    assert result.counts == {"answered": 8}
    # The persona's system prompt goes first, as one block marked as a cache breakpoint.
    assert all(b["system"][0]["cache_control"] == {"type": "ephemeral"} for b in sent)
    prompt, cached = _by_hand(result.run_dir.database)
    with sqlite3.connect(result.run_dir.database) as db:
        (usage,) = token_usage(db)
    # Anthropic's input_tokens leaves the cache reads and writes out; psyq adds them back, so the
    # prompt tokens are every token of the prompt, as for the other providers.
    assert (usage.prompt_tokens, usage.cached_tokens) == (prompt, cached)


def test_a_server_that_reports_no_cache_is_not_reported_as_zero(tmp_path):
    with StubServer() as stub:
        result = run(write_study(tmp_path, stub.url), tmp_path / "runs")
    with sqlite3.connect(result.run_dir.database) as db:
        assert db.execute("SELECT COUNT(cached_tokens) FROM trials").fetchone() == (0,)
        (usage,) = token_usage(db)
    assert "cached prompt tokens not reported by the server" in usage_lines([usage], None)[0]
    assert json.loads(result.run_dir.manifest.read_text())["usage"]["stub"]["cached_tokens"] is None


def test_sums_and_costs_from_a_hand_made_store(tmp_path):
    db = sqlite3.connect(tmp_path / "s.sqlite")
    RunStore(tmp_path / "s.sqlite").close()      # the schema, as psyq writes it
    rows = [  # backend, model, prompt, cached, completion
        ("a", "m", 1000, 600, 10), ("a", "m", 1000, 0, 20), ("a", "m", 500, None, 5),
        ("b", "n", 200, 100, 2),
    ]
    for k, (backend, model, p, c, o) in enumerate(rows):
        db.execute("INSERT INTO trials (trial_id, backend_id, model, respondent_id, instrument_id, item_ids, "
                   "repeat, option_order, status, request, attempts, reasks, prompt_tokens, completion_tokens, "
                   "started_at, finished_at, cached_tokens) VALUES (?, ?, ?, 'r', 'i', '[]', 0, 'x', 'answered', "
                   "'{}', 1, 0, ?, ?, 't', 't', ?)", (f"t{k}", backend, model, p, o, c))
    db.commit()
    a, b = token_usage(db)
    # Backend a: prompt 1000 + 1000 + 500 = 2500; cached 600 + 0 = 600 over 2 reporting trials.
    assert (a.prompt_tokens, a.cached_tokens, a.with_cached, a.completion_tokens) == (2500, 600, 2, 35)
    table = PriceTable({"m": ModelPrice(input=2.0, output=10.0, cached_input=0.5),
                        "n": ModelPrice(input=1.0, output=4.0)}, "p.yaml")
    # a: (2500 - 600) × 2.0 + 600 × 0.5 + 35 × 10.0 = 3800 + 300 + 350 = 4450 per 1M tokens.
    assert a.cost(table).usd == pytest.approx(4450 / 1e6) and a.cost(table).note is None
    # b has no cached price: 200 × 1.0 + 2 × 4.0 = 208 per 1M, and it says how it priced the cache.
    cost_b = b.cost(table)
    assert cost_b.usd == pytest.approx(208 / 1e6)
    assert "100 cached tokens priced at the input price" in str(cost_b)
    lines = usage_lines([a, b], table)
    assert "cached 600 of the prompt tokens (24.0 %; reported for 2 of 3 trials)" in lines[0]
    assert "all backends: prompt 2,700, cached 700, completion 37" in lines[2]


def test_an_old_store_without_the_new_columns_is_upgraded(tmp_path):
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE trials (trial_id TEXT PRIMARY KEY, backend_id TEXT NOT NULL, model TEXT, "
                "prompt_tokens INTEGER, completion_tokens INTEGER, status TEXT)")
    old.execute("INSERT INTO trials VALUES ('t', 'a', 'm', 10, 1, 'answered')")
    old.commit()
    assert token_usage(old) == [Usage("a", "m", 1, 1, 10, 1, 0, 0)]   # read before any upgrade
    old.close()
    RunStore(path).close()
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(trials)")}
    assert {"endpoint", "cached_tokens"} <= columns
