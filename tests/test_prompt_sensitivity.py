"""Prompt sensitivity: `psyq run --perturb-prompts SET:ID` is a run of its own with perturbed
instructions and item texts, and `psyq sensitivity` pairs its scores with the unperturbed run's.

Real HTTP to the stub server (its answer is a digit hashed from the request, so perturbed prompts
get other answers), real SQLite, the CLI's commands as a user gives them (run by psyq's main() in this
process, tests/cli_helper.py)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from psyq.analysis.statistics.prompt_sensitivity import paired_score_changes
from psyq.analysis.scoring.scores import load_run_scores
from cli_helper import psyq_in_process
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"


def psyq(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`psyq ARGS` in folder `cwd` with a bare environment, run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args, cwd=cwd, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_paired_changes_by_hand():
    # Three respondents; c has no perturbed score (left out, said). Changes: +1 (a), 0 (b).
    # Mean 0.5, SD sqrt(((1-.5)^2 + (0-.5)^2)/1) = 0.7071; CI 0.5 ± t(.975, 1) · 0.7071/√2 = 0.5 ± 12.706 · 0.5.
    orig = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b", "c"], "repeat": 0, "instrument": "i",
                         "subscale": "S", "score": [3.0, 4.0, 5.0]})
    pert = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b", "c"], "repeat": 0, "instrument": "i",
                         "subscale": "S", "score": [4.0, 4.0, np.nan]})
    row = paired_score_changes(orig, pert, "v").iloc[0]
    assert (row["n_pairs"], row["n_left_out"]) == (2, 1)
    assert row["mean_change"] == 0.5 and row["share_changed"] == 0.5 and row["share_up"] == 0.5
    assert math.isclose(row["ci_high"], 0.5 + 12.7062047 * 0.5, rel_tol=1e-6)
    assert "1 respondent(s)" in row["reason"]
    one = paired_score_changes(orig.iloc[:1], pert.iloc[:1], "v").iloc[0]
    assert one["n_pairs"] == 1 and math.isnan(one["ci_low"]) and "one pair only" in one["reason"]


def test_perturbed_prompts_are_a_run_of_their_own_and_pair_with_the_original(tmp_path):
    # Our own set: every 'e' written '3' (rate 1), so the perturbed texts can be written out by hand.
    (tmp_path / "noise.yaml").write_text(yaml.safe_dump({
        "psyq": "perturbations/1", "id": "t", "content_source": "user", "source": "this test",
        "perturbations": [{"id": "e3", "method": "substitute", "seed": 1, "params": {"map": {"e": "3"}}},
                          {"id": "rw", "method": "rewrite", "seed": 2, "params": {"instruction": "Rewrite."}}]}))
    personas = [{"id": f"p{i}", "attributes": {"age": 20 + i}} for i in range(6)]
    (tmp_path / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": False,
                                                          "personas": personas}))
    with StubServer() as stub:
        (tmp_path / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "sens", "instruments": [str(MINI)], "cohort": "cohort.yaml",
            "backends": [{"id": "stub", "kind": "openai", "base_url": stub.url, "model": "m"}],
            "protocol": {"answer": "text", "option_order": "as_written", "repeats": 2, "seed": 1}}))
        first = psyq("run", "study.yaml", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        n_plain = len(stub.requests)
        second = psyq("run", "study.yaml", "--perturb-prompts", "noise.yaml:e3", cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert "prompts perturbed by 'e3'" in second.stderr
        perturbed_bodies = [json.dumps(r.body) for r in stub.requests[n_plain:]]
        # Rewrites cannot perturb prompts: refused with the set file and field, exit 2, nothing sent.
        refused = psyq("run", "study.yaml", "--perturb-prompts", "noise.yaml:rw", cwd=tmp_path)
        assert refused.returncode == 2 and "noise.yaml" in refused.stderr and "rewrite" in refused.stderr
        assert "Traceback" not in refused.stderr
    # Every perturbed request was sent again (none resumed from the plain run), with the texts by hand.
    assert len(perturbed_bodies) == n_plain == 6 * 2 * 4
    assert all("Rat3 3ach stat3m3nt." in b for b in perturbed_bodies)
    assert any("It3m a" in b for b in perturbed_bodies) and not any("Item a" in b for b in perturbed_bodies)
    runs = sorted((tmp_path / "runs" / "sens").iterdir())
    manifests = {r: json.loads((r / "manifest.json").read_text()) for r in runs}
    assert len(runs) == 2
    plain = next(r for r, m in manifests.items() if "prompt_perturbation" not in m)
    varied = next(r for r, m in manifests.items() if "prompt_perturbation" in m)
    assert manifests[varied]["prompt_perturbation"]["perturbation"] == "e3"

    out = tmp_path / "sens.csv"
    result = psyq("sensitivity", str(plain), str(varied), "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out)
    # Independently: merge the two runs' scores and take scipy's one-sample t interval of the changes.
    a, b = load_run_scores(plain), load_run_scores(varied)
    keys = ["backend_id", "respondent_id", "repeat", "instrument", "subscale"]
    merged = a[keys + ["score"]].merge(b[keys + ["score"]], on=keys, suffixes=("_o", "_p")).dropna()
    for subscale, group in merged.groupby("subscale"):
        changes = (group["score_p"] - group["score_o"]).to_numpy()
        row = table[table["subscale"] == subscale].iloc[0]
        assert row["n_pairs"] == len(changes) and row["variant"] == "e3"
        assert math.isclose(row["mean_change"], changes.mean(), abs_tol=1e-12)
        if changes.std() > 0:
            ci = stats.ttest_1samp(changes, 0).confidence_interval()
            assert math.isclose(row["ci_low"], ci.low, rel_tol=1e-9) and math.isclose(row["ci_high"], ci.high, rel_tol=1e-9)
        assert math.isclose(row["share_changed"], float(np.mean(changes != 0)))
    assert set(table["subscale"]) == {"X", "Y", "Z"}
