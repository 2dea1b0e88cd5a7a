"""Command-line overrides of a study's backends keep their meaning, are recorded, and decide the
run id only when they decide answers (real runs against the stub over loopback HTTP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from psyq.engine.backends import BackendConfig, make_backend
from psyq.engine.files.errors import InputError
from psyq.engine.administer.overrides import CliOverrides, apply_overrides, backend_id_for_model
from psyq.engine.administer.record import run_id_for
from psyq.engine.design.study import load_study
from stub_server import CHAT_PATH, StubServer
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def write_study(tmp: Path, url: str, **backend) -> Path:
    personas = [{"id": "p1", "attributes": {"age": 30}}, {"id": "p2", "attributes": {"age": 50}}]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": False,
                                                     "personas": personas}))
    study = {"psyq": "study/1", "id": "ov", "instruments": [str(MINI)], "cohort": "cohort.yaml",
             "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                           "concurrency": 2, "temperature": 1.0, "timeout_s": 5, "max_retries": 1,
                           "backoff_s": 0.01, "api_key_env": "STUDY_KEY", **backend}],
             "protocol": {"answer": "text", "seed": 2}}
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


LOCAL = BackendConfig(id="local", kind="local", temperature=0.8, concurrency=4, top_p=0.9)
VLLM = BackendConfig(id="vllm", kind="openai", model="qwen", base_url="http://10.0.0.5:8000/v1", concurrency=32,
                     requests_per_minute=600, api_key_env="VLLM_KEY")


def test_base_url_keeps_the_study_backends_settings_and_names_it_after_the_model():
    out = apply_overrides([LOCAL], CliOverrides(base_url="http://127.0.0.1:9/v1", model="org/My Model:7b"))
    [c] = out.configs
    assert (c.id, c.kind, c.base_url, c.model) == ("org_My_Model_7b", "openai", "http://127.0.0.1:9/v1", "org/My Model:7b")
    assert (c.temperature, c.top_p, c.concurrency) == (0.8, 0.9, 4)   # kept from the study's backend
    changed = {(o.flag, o.field): (o.old, o.new) for o in out.overrides}
    assert changed == {("--model", "id"): ("local", "org_My_Model_7b"), ("--base-url", "kind"): ("local", "openai"),
                       ("--base-url", "base_url"): (None, "http://127.0.0.1:9/v1"),
                       ("--model", "model"): (None, "org/My Model:7b")}
    assert "temperature 0.8 (study backend 'local')" in out.origins[0]
    assert "concurrency 4 (study backend 'local')" in out.origins[0]


def test_the_study_key_variable_is_not_sent_to_another_url():
    [c] = apply_overrides([VLLM], CliOverrides(base_url="http://127.0.0.1:9/v1")).configs
    assert c.api_key_env is None and c.model == "qwen" and c.id == "vllm"   # no --model: model and name kept
    [c] = apply_overrides([VLLM], CliOverrides(base_url="http://127.0.0.1:9/v1", api_key_env="OTHER")).configs
    assert c.api_key_env == "OTHER" and (c.concurrency, c.requests_per_minute) == (32, 600)


def test_several_backends_are_replaced_by_one_with_defaults_and_it_is_said():
    out = apply_overrides([LOCAL, VLLM], CliOverrides(base_url="http://127.0.0.1:9/v1", model="m", concurrency=8))
    [c] = out.configs
    assert c.id == "m" and c.concurrency == 8 and c.temperature == BackendConfig.model_fields["temperature"].default
    assert "2 backends (local, vllm) are replaced" in out.origins[0]


def test_pacing_and_temperature_flags_apply_to_every_backend_without_base_url():
    out = apply_overrides([LOCAL, VLLM], CliOverrides(concurrency=64, rpm=120, tpm=90_000, temperature=0.0))
    assert [c.id for c in out.configs] == ["local", "vllm"]
    for c in out.configs:
        assert (c.concurrency, c.requests_per_minute, c.tokens_per_minute, c.temperature) == (64, 120, 90_000, 0.0)
    assert {(o.backend, o.field, o.old) for o in out.overrides if o.flag == "--rpm"} == {("local", "requests_per_minute", None),
                                                                                         ("vllm", "requests_per_minute", 600)}


def test_model_without_base_url_renames_each_backend_apart():
    out = apply_overrides([VLLM, VLLM.model_copy(update={"id": "vllm2"})], CliOverrides(model="llama"))
    assert [c.id for c in out.configs] == ["llama_vllm", "llama_vllm2"]
    assert {c.model for c in out.configs} == {"llama"}


def test_clashing_flags_are_refused():
    with pytest.raises(InputError, match="needs --model"):
        apply_overrides([LOCAL], CliOverrides(base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(InputError, match="goes with --base-url"):
        apply_overrides([VLLM], CliOverrides(api_key_env="K"))


@pytest.mark.parametrize("model,expected", [("gpt-4o-mini", "gpt-4o-mini"), ("/m/x.gguf", "x"), ("__a b__", "a_b")])
def test_backend_ids_from_model_names_are_valid_ids(model, expected):
    assert backend_id_for_model(model) == expected


def test_run_id_ignores_pacing_overrides_and_follows_temperature_and_model(tmp_path):
    study = load_study(write_study(tmp_path, "http://127.0.0.1:9/v1"))

    def run_id(flags: CliOverrides) -> str:
        configs = apply_overrides(list(study.spec.backends), flags).configs
        return run_id_for(study, {c.id: make_backend(c) for c in configs})

    base = run_id(CliOverrides())
    assert run_id(CliOverrides(concurrency=50, rpm=10, tpm=1000)) == base
    assert run_id(CliOverrides(temperature=1.0)) == base          # the study's own value: nothing changed
    assert run_id(CliOverrides(temperature=0.2)) != base
    assert run_id(CliOverrides(model="other")) != base


def test_resuming_with_another_concurrency_is_the_same_run_and_the_manifest_says_what_changed(tmp_path):
    runs = tmp_path / "runs"
    with StubServer() as stub:
        study = write_study(tmp_path, stub.url, api_key_env=None)
        first = psyq("run", str(study), "--runs-dir", str(runs))
        assert first.returncode == 0, first.stderr
        sent = sum(r.path == CHAT_PATH for r in stub.requests)
        again = psyq("run", str(study), "--runs-dir", str(runs), "--concurrency", "1", "--rpm", "6000")
        assert again.returncode == 0, again.stderr
        assert sum(r.path == CHAT_PATH for r in stub.requests) == sent   # resumed: nothing sent again
        hotter = psyq("run", str(study), "--runs-dir", str(runs), "--temperature", "0.3")
        assert hotter.returncode == 0, hotter.stderr
        # another temperature is another run: every trial sent again (2 people × 4 items, by hand)
        assert sum(r.path == CHAT_PATH for r in stub.requests) == sent + 2 * 4 == 16
    dirs = sorted(p.parent for p in runs.rglob("manifest.json"))
    assert len(dirs) == 2
    manifests = {d: json.loads((d / "manifest.json").read_text()) for d in dirs}
    resumed = next(m for m in manifests.values() if m["backends"]["stub"]["config"]["temperature"] == 1.0)
    assert {(o["flag"], o["field"], o["old"], o["new"]) for o in resumed["overrides"]} == {
        ("--concurrency", "concurrency", 2, 1), ("--rpm", "requests_per_minute", None, 6000.0)}
    assert "concurrency 1 (--concurrency)" in again.stderr and "temperature 1.0 (study backend 'stub')" in again.stderr
    hot = next(m for m in manifests.values() if m["backends"]["stub"]["config"]["temperature"] == 0.3)
    assert hot["overrides"] == [{"flag": "--temperature", "backend": "stub", "field": "temperature",
                                 "old": 1.0, "new": 0.3}]


def test_base_url_run_names_the_backend_after_the_model_in_store_and_manifest(tmp_path):
    runs = tmp_path / "runs"
    with StubServer() as stub:
        study = write_study(tmp_path, "http://127.0.0.1:9/v1")
        out = psyq("run", str(study), "--runs-dir", str(runs), "--base-url", stub.url, "--model", "stub-model")
    assert out.returncode == 0, out.stderr
    manifest = json.loads(next(runs.rglob("manifest.json")).read_text())
    assert list(manifest["backends"]) == ["stub-model"]
    assert manifest["backends"]["stub-model"]["config"]["concurrency"] == 2   # the study's, kept
    assert manifest["backends"]["stub-model"]["config"]["api_key_env"] is None   # STUDY_KEY not sent elsewhere
    assert "STUDY_KEY is not sent to another URL" in out.stderr
    assert {o["field"] for o in manifest["overrides"]} >= {"base_url", "id", "api_key_env"}
