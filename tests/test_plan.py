"""`psyq plan` / `psyq run --dry-run`: the plan's counts, tokens, cost and preview are what the
run then sends, checked against the stub server's own request log (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from stub_server import CHAT_PATH, StubServer, toy_template, toy_tokens
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"
SCENES = ROOT / "tests" / "data" / "mini_scenes.yaml"
PRICE_IN, PRICE_OUT = 0.5, 2.0   # USD per 1M tokens, a made-up table


def psyq(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py), `env` added to the environment."""
    return psyq_in_process(*args, env={**os.environ, **(env or {})})


def chat_bodies(stub: StubServer) -> list[dict]:
    return [r.body for r in stub.requests if r.path == CHAT_PATH]


def write_prices(tmp: Path, model: str = "stub-model") -> Path:
    path = tmp / "prices.yaml"
    path.write_text(yaml.safe_dump({"prices": {model: {"input": PRICE_IN, "output": PRICE_OUT}},
                                    "as_of": "2026-11-01"}))
    return path


def test_plan_of_the_quickstart_matches_what_the_run_sends(tmp_path):
    prices = write_prices(tmp_path)
    runs = tmp_path / "runs"
    flags = ["--base-url", None, "--model", "stub-model", "--concurrency", "1", "--runs-dir", str(runs)]
    with StubServer(tokenizer=True) as stub:
        flags[1] = stub.url
        out = psyq("plan", "studies/quickstart.yaml", *flags, "--prices", str(prices), "--json", "--preview", "3")
        assert out.returncode == 0, out.stderr
        plan = json.loads(out.stdout)
        # Nothing sent to the model, nothing written: only the tokenizer endpoints were asked.
        assert chat_bodies(stub) == [] and {r.path for r in stub.requests} == {"/apply-template", "/tokenize"}
        assert not runs.exists()
        text = psyq("plan", "studies/quickstart.yaml", *flags, "--prices", str(prices), "--tokenizer", "approximate")
        stub.reset()
        ran = psyq("run", "studies/quickstart.yaml", *flags, "--prices", str(prices))
        assert ran.returncode == 0, ran.stderr
        sent = chat_bodies(stub)
    # quickstart: 12 sampled adults + the baseline = 13 respondents × 28 IRI items, one request each.
    assert plan["requests"] == len(sent) == 13 * 28
    [row] = plan["rows"]
    assert (row["backend"], row["instrument"], row["stage"], row["requests"]) == ("stub-model", "iri", "rating", 364)
    # --concurrency 1: the run sends in plan order, so the preview is the first bodies the stub received.
    assert [p["body"] for p in plan["preview"]] == sent[:3]
    assert plan["preview"][0]["url"] == stub.url + "/chat/completions"
    # Prompt tokens: the stub's tokenizer (toy template + toy tokens) applied here to every body it
    # received; the plan asked the same server's /apply-template + /tokenize before the run.
    expected_prompt = sum(len(toy_tokens(toy_template(b["messages"]))) for b in sent)
    [backend] = plan["backends"]
    assert backend["tokens_exact"] and "apply-template" in backend["token_method"]
    assert backend["prompt_tokens"] == expected_prompt
    assert backend["completion_tokens_max"] == sum(b["max_tokens"] for b in sent) == 364   # logprobs: 1 token
    assert backend["cost_usd"] == pytest.approx((expected_prompt * PRICE_IN + 364 * PRICE_OUT) / 1e6)
    assert "stub-model" in text.stdout and "$" in text.stdout and "POST " + stub.url in text.stdout
    # After the run: the manifest's usage is the sum of the stored per-trial counts; same prices.
    run_dir = next(runs.rglob("manifest.json")).parent
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        stored = db.execute("SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM trials").fetchone()
    usage = json.loads((run_dir / "manifest.json").read_text())["usage"]["stub-model"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == stored == (expected_prompt, 364)
    assert usage["cost_usd"] == pytest.approx((expected_prompt * PRICE_IN + 364 * PRICE_OUT) / 1e6)
    status = psyq("status", str(run_dir))
    assert f"prompt {expected_prompt:,}, completion 364 (reported for 364 of 364 trials)" in status.stdout
    assert f"${usage['cost_usd']:,.4f}" in status.stdout
    # A second plan of the same study leaves out what the run finished.
    again = psyq("plan", "studies/quickstart.yaml", *flags, "--json", "--tokenizer", "approximate")
    assert json.loads(again.stdout)["requests"] == 0 and json.loads(again.stdout)["already_finished"] == 364


def write_two_backend_study(tmp: Path, url: str) -> Path:
    personas = [{"id": f"p{i}", "attributes": {"age": 20 + i}} for i in range(3)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": False,
                                                     "personas": personas}))
    backend = {"kind": "openai", "base_url": url, "concurrency": 2, "max_retries": 1, "backoff_s": 0.01,
               "timeout_s": 5}
    study = {"psyq": "study/1", "id": "two", "instruments": [str(MINI), str(SCENES)], "cohort": "cohort.yaml",
             "backends": [{"id": "a", "model": "model-a", **backend}, {"id": "b", "model": "model-b", **backend}],
             "protocol": {"answer": "text", "option_order": "counterbalanced", "repeats": 2, "reask_limit": 1,
                          "seed": 3}}
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def test_counts_per_backend_instrument_and_stage_match_the_run(tmp_path):
    runs = tmp_path / "runs"
    with StubServer() as stub:   # no tokenizer: the plan says its counts are approximate
        study = write_two_backend_study(tmp_path, stub.url)
        out = psyq("plan", str(study), "--runs-dir", str(runs), "--json")
        assert out.returncode == 0, out.stderr
        plan = json.loads(out.stdout)
        dry = psyq("run", str(study), "--runs-dir", str(runs), "--dry-run", "--json")
        assert json.loads(dry.stdout) == plan and not runs.exists()
        stub.reset()
        ran = psyq("run", str(study), "--runs-dir", str(runs))
        assert ran.returncode == 0, ran.stderr
        sent = chat_bodies(stub)
    run_dir = next(runs.rglob("manifest.json")).parent
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        trials = db.execute("SELECT backend_id, instrument_id, request, reasks FROM trials").fetchall()
    # Each trial's first request is stored as its payload; the stub received it, plus the re-asks.
    first = Counter((b, i) for b, i, _, _ in trials)
    planned = Counter()
    for row in plan["rows"]:
        planned[(row["backend"], row["instrument"])] += row["requests"]
    assert planned == first
    # 2 backends × 2 repeats × 3 people × (4 rating items + 3 scenes), by hand from the two files.
    assert plan["requests"] == 2 * 2 * 3 * (4 + 3) == len(trials)
    assert {(r["instrument"], r["stage"]) for r in plan["rows"]} == {("mini", "rating"), ("mini_scenes", "scene")}
    per_model = Counter(b["model"] for b in sent)
    reasks = Counter(b for b, _, _, r in trials for _ in range(r))
    assert per_model == {"model-a": 42 + reasks["a"], "model-b": 42 + reasks["b"]}
    assert sum(reasks.values()) > 0   # the stub answers a digit to a scene: re-asked, not in the plan
    stored_first = [json.loads(r) for _, _, r, _ in trials]
    assert all(body in sent for body in stored_first)
    # The approximation: characters of the message texts / 4, recomputed from the stored payloads.
    for backend in plan["backends"]:
        assert not backend["tokens_exact"] and backend["token_method"].startswith("approximate")
        chars = sum(len(m["content"]) for (b, _, r, _) in trials if b == backend["backend"]
                    for m in json.loads(r)["messages"])
        assert backend["prompt_tokens"] == pytest.approx(chars / 4)
        # Counterbalanced: people 0 and 2 see the options as written, person 1 reversed (rating
        # items: 4 × 2 repeats each); scenes have no options and are planned as written (3 × 3 × 2).
        assert backend["option_orders"] == {"as_written": 2 * 4 * 2 + 18, "reversed": 1 * 4 * 2}
        assert backend["cost_not_estimable"].startswith("no price table")
    assert plan["cost_usd"] is None
    # Preview: the first two requests of each backend.
    assert [p["backend"] for p in plan["preview"]] == ["a", "a", "b", "b"]


def test_a_model_without_a_price_is_not_estimable_and_the_key_is_never_shown(tmp_path):
    secret = "sk-test-" + "q7" * 16
    with StubServer() as stub:
        study = write_two_backend_study(tmp_path, stub.url)
        prices = write_prices(tmp_path, "model-a")
        out = psyq("plan", str(study), "--runs-dir", str(tmp_path / "runs"), "--prices", str(prices),
                   "--base-url", stub.url, "--model", "model-z", "--api-key-env", "PLAN_TEST_KEY",
                   env={"PLAN_TEST_KEY": secret})
    assert out.returncode == 0, out.stderr
    assert secret not in out.stdout + out.stderr
    assert "Authorization: Bearer <value of $PLAN_TEST_KEY, not shown>" in out.stdout
    assert "not estimable (no price for model model-z in" in out.stdout
    assert "$0" not in out.stdout


def test_a_bad_price_file_is_reported_at_its_line(tmp_path):
    bad = tmp_path / "prices.yaml"
    bad.write_text("prices:\n  gpt-x:\n    input: -1\n    output: 2\n")
    out = psyq("plan", "studies/quickstart.yaml", "--prices", str(bad), "--tokenizer", "approximate")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{bad}:3:12: prices.gpt-x.input:" in out.stderr


def test_prices_in_the_study_are_used_and_do_not_change_the_run_id(tmp_path):
    with StubServer() as stub:
        study = write_two_backend_study(tmp_path, stub.url)
        before = json.loads(psyq("plan", str(study), "--json", "--preview", "0").stdout)
        data = yaml.safe_load(study.read_text())
        data["prices"] = {"model-a": {"input": 1.0, "output": 4.0}, "model-b": {"input": 0, "output": 0}}
        study.write_text(yaml.safe_dump(data, sort_keys=False))
        after = json.loads(psyq("plan", str(study), "--json", "--preview", "0").stdout)
    assert after["run_dir"] == before["run_dir"]
    a, b = after["backends"]
    # By hand: model-a's prompt tokens at $1/1M and its max_tokens at $4/1M; model-b is priced at 0.
    assert a["cost_usd"] == pytest.approx((a["prompt_tokens"] * 1.0 + a["completion_tokens_max"] * 4.0) / 1e6)
    assert b["cost_usd"] == 0.0 and after["cost_usd"] == pytest.approx(a["cost_usd"])


FAKE_LLAMA_SERVER = """#!{python}
# Stands in for llama-server: serves the stub (with llama.cpp's tokenizer endpoints) on the port asked.
import sys
sys.path.insert(0, {tests!r})
import stub_server
port = sys.argv[sys.argv.index("--port") + 1]
sys.exit(stub_server.main(["--port", port, "--tokenizer"]))
"""


def test_tokenizer_server_starts_the_cached_local_server_to_count(tmp_path):
    # A fake llama-server in a fake cache (the real one is not started in the fast tests): the plan
    # starts it as `psyq run` would, counts with its /apply-template + /tokenize, and stops it.
    from psyq.engine.backends.local_build import LLAMA_CPP_VERSION

    binary = tmp_path / "cache" / f"llama.cpp-{LLAMA_CPP_VERSION}" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text(FAKE_LLAMA_SERVER.format(python=sys.executable, tests=str(ROOT / "tests")))
    binary.chmod(0o755)
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF")
    study = write_two_backend_study(tmp_path, "http://127.0.0.1:9/v1")
    data = yaml.safe_load(study.read_text())
    data["backends"] = [{"id": "local", "kind": "local", "model": str(model)}]
    study.write_text(yaml.safe_dump(data, sort_keys=False))
    env = {"PSYQ_CACHE": str(tmp_path / "cache")}
    counted = psyq("plan", str(study), "--json", "--tokenizer", "server", "--preview", "100", env=env)
    assert counted.returncode == 0, counted.stderr
    approx = psyq("plan", str(study), "--json", "--preview", "0", env=env)   # auto: the server is not started
    plan = json.loads(counted.stdout)
    [exact], [rough] = plan["backends"], json.loads(approx.stdout)["backends"]
    assert exact["tokens_exact"] and "llama.cpp" in exact["token_method"]
    assert not rough["tokens_exact"] and "--tokenizer server" in rough["token_method"]
    # --preview 100 shows all 42 requests (2 repeats × 3 people × 7 items); the stub's tokenizer
    # applied here to their bodies gives the count the plan got from the started server.
    bodies = [p["body"] for p in plan["preview"]]
    assert len(bodies) == 42
    assert exact["prompt_tokens"] == sum(len(toy_tokens(toy_template(b["messages"]))) for b in bodies)
    assert "~3 s to start llama-server" in exact["wall_how"]


class _HalfChars:
    """An 'exact' counter whose count is characters / 2, failing after `fail_after` calls (if given)."""

    exact, method = True, "test counter"

    def __init__(self, fail_after: int | None = None):
        self.calls, self.fail_after = 0, fail_after

    def count(self, request) -> float:
        from psyq.engine.administer.tokenizer import TokenizerFailed, request_chars
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise TokenizerFailed("HTTP 500")
        return request_chars(request) / 2


def _planned(tmp_path):
    from psyq.engine.backends import make_backend
    from psyq.engine.administer.plan import plan_trials
    from psyq.engine.design.study import load_study

    study = load_study(write_two_backend_study(tmp_path, "http://127.0.0.1:9/v1"))
    backends = {c.id: make_backend(c) for c in study.spec.backends}
    return study, backends, list(plan_trials(study, backends))


def test_counting_a_sample_scales_by_characters_and_a_failing_tokenizer_falls_back(tmp_path):
    from psyq.engine.administer.plan_estimate import build_plan, estimate_prompt_tokens
    from psyq.engine.administer.tokenizer import request_chars

    study, backends, trials = _planned(tmp_path)
    group = [t for t in trials if t.backend_id == "a" and t.kind == "rating"]   # 24 requests
    # Tokens exactly proportional to characters: scaling 10 counted requests by characters is exact.
    tokens, counted = estimate_prompt_tokens(group, _HalfChars(), limit=10)
    assert counted == 10 and tokens == pytest.approx(sum(request_chars(t.request) for t in group) / 2)
    plan = build_plan(study.id, "runs/x", backends, trials, set(),
                      {"a": _HalfChars(fail_after=5), "b": _HalfChars()}, None)
    a, b = plan.backends
    assert not a.tokens_exact and a.token_method.startswith("approximate") and "failed during the plan" in a.token_method
    assert a.prompt_tokens == pytest.approx(sum(request_chars(t.request) for t in trials if t.backend_id == "a") / 4)
    assert b.tokens_exact and b.token_method == "test counter"


def test_the_plan_paces_a_reproducible_local_backend_by_its_one_slot():
    # llama-server with one slot computes one request at a time, however many are in flight: 10
    # requests of 2 s each take 20 s, not ceil(10 / 4) x 2 = 6 s; `serving: fast` has a slot per
    # request in flight.
    from types import SimpleNamespace

    from psyq.engine.administer.plan_estimate import wall_time
    from psyq.engine.backends.base import BackendConfig
    from psyq.engine.backends.local import LocalBackend

    trials = [SimpleNamespace(request=None)] * 10
    reproducible = LocalBackend(BackendConfig(id="l", kind="local", concurrency=4))
    seconds, how = wall_time(trials, reproducible, 2.0)
    assert seconds == 20.0 and how.endswith("(the server computes 1 at a time; the rest wait in its queue)")
    fast = LocalBackend(BackendConfig(id="l", kind="local", concurrency=4, serving="fast"))
    assert wall_time(trials, fast, 2.0) == (6.0, "10 requests at concurrency 4 × 2 s per request (assumed, --latency)")


def test_plan_with_people_says_how_often_the_verdict_would_be_right(tmp_path):
    # `psyq plan STUDY --human iri=FILE`: for the quick start's 12 personas, each criterion's chance of
    # meets and falls short were the personas the people themselves (psyq.verdict_power, here 3 draws a
    # size), and the size each criterion needs; structure is not simulated, and the table says whom.
    out = psyq("plan", "quickstart", "--runs-dir", str(tmp_path), "--human", "iri=iri_briganti2018_keyed",
               "--power-reps", "3", "--json")
    assert out.returncode == 0, out.stderr
    power = json.loads(out.stdout)["verdict_power"]["iri"]
    assert power["personas"] == 12 and power["reps"] == 3
    assert power["people"].startswith("1,973 young adults in Belgium")
    criteria = [r["criterion"] for r in power["at_study_size"]]
    assert criteria == ["level", "spread", "reliability", "distinguishable", "style", "relations"]
    for r in power["at_study_size"]:
        total = r["meets"] + r["falls_short"] + r["inconclusive"] + r["not_estimable"]
        assert total == pytest.approx(1.0) and r["n_people"] == 1973 - 12
    assert {r["criterion"] for r in power["needed"]} == set(criteria)
    text = psyq("plan", "quickstart", "--runs-dir", str(tmp_path), "--human", "iri=iri_briganti2018_keyed",
                "--power-reps", "2")
    assert "Verdict power for iri, against 1,973 young adults" in text.stdout
    assert "personas for 80 % meets" in text.stdout


def test_plan_refuses_people_for_an_instrument_the_study_does_not_ask(tmp_path):
    out = psyq("plan", "quickstart", "--runs-dir", str(tmp_path), "--human", "bes=iri_briganti2018_keyed")
    assert out.returncode == 2 and "--human names no instrument of the study" in out.stderr
    assert "Traceback" not in out.stderr
