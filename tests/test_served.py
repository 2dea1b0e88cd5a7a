"""What the providers served (issue 55): the model snapshot and fingerprint each reply names, read per
backend from the stored replies (engine/results/served.py), with a change of snapshot within a run
shown as two rows. Checked against what the stub was told to send (an independent record: the
stub's own list of the bodies it answered)."""

from __future__ import annotations

import itertools
import threading

from psyq import open_run
from psyq.engine.results.served import served_models
from stub_server import StubServer
from test_administer import run, write_study


def switching(after: int, first: dict, then: dict):
    """A `served` callback naming `first` for the first `after` replies, then `then`."""
    count = itertools.count()
    lock = threading.Lock()

    def served(body: dict) -> dict:
        with lock:
            n = next(count)
        return first if n < after else then
    return served


def test_a_snapshot_served_for_an_alias_and_a_fingerprint_changed_midway(tmp_path):
    first = {"model": "stub-model-2026-01-15", "system_fingerprint": "fp_a1"}
    then = {"model": "stub-model-2026-01-15", "system_fingerprint": "fp_b2"}
    with StubServer(served=switching(3, first, then)) as stub:
        result = run(write_study(tmp_path, stub.url, backend={"concurrency": 1}), tmp_path / "runs")
    served = served_models(open_run(result.run_dir.path))
    # 2 respondents × 4 items = 8 trials, one reply each: 3 from the first configuration, 5 from the second.
    assert served[["backend_id", "requested_model", "served_model", "fingerprint", "trials"]].to_dict("records") == [
        {"backend_id": "stub", "requested_model": "stub-model", "served_model": "stub-model-2026-01-15",
         "fingerprint": "fp_a1", "trials": 3},
        {"backend_id": "stub", "requested_model": "stub-model", "served_model": "stub-model-2026-01-15",
         "fingerprint": "fp_b2", "trials": 5}]
    assert served["first_at"].iloc[0] <= served["last_at"].iloc[0] <= served["first_at"].iloc[1]


def test_anthropic_names_the_model_and_no_fingerprint(tmp_path, monkeypatch):
    monkeypatch.setenv("PSYQ_TEST_KEY", "k")
    served_body = {"model": "claude-stub-20260115", "system_fingerprint": "not-anthropic's"}
    with StubServer(served=lambda body: served_body) as stub:
        study = write_study(tmp_path, stub.url, backend={"kind": "anthropic", "api_key_env": "PSYQ_TEST_KEY"})
        result = run(study, tmp_path / "runs")
    served = served_models(open_run(result.run_dir.path))
    assert served["served_model"].tolist() == ["claude-stub-20260115"]
    assert served["fingerprint"].isna().all()   # Anthropic's message has no fingerprint: never read as one
    assert served["trials"].sum() == 8
