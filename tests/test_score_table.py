"""Scores as tables: `psyq scores RUN` (CSV, Parquet, SPSS .sav) and `psyq score` with attributes.

Expected scores are recomputed here from the exported raw answers with the mini instrument's
rules written out by hand (a, c reversed on 1–7 as 8 − x; X = a + b, needs 2; Y = mean of b, c,
d, needs 2; Z = sum of a–d prorated as mean × 4, needs 3), not with psyq.engine.trials.scoring.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from psyq.analysis.scoring.score_table import spss_names
from psyq import export_table
from runs_helper import make_mini_run
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_mini_run(tmp_path_factory.mktemp("scores"))


def expected_scores(run_dir: Path) -> pd.DataFrame:
    """Hand-coded mini scoring of the run's raw answers, one row per respondent × repeat."""
    table = export_table(run_dir)
    wide = table.pivot_table(index=["respondent_id", "repeat"], columns="item_id", values="value",
                             aggfunc="first", dropna=False).reindex(columns=list("abcd"))
    keyed = wide.copy()
    keyed["a"], keyed["c"] = 8 - wide["a"], 8 - wide["c"]
    rows = []
    for key, r in keyed.iterrows():
        def rule(items, minimum, kind):
            got = [r[i] for i in items if not np.isnan(r[i])]
            if len(got) < minimum:
                return np.nan, len(got), 0
            value = sum(got) if kind == "sum" and len(got) == len(items) else (
                sum(got) / len(got) * (len(items) if kind == "sum" else 1))
            return value, len(got), int(len(got) < len(items))
        out = {"respondent_id": key[0], "repeat": key[1]}
        for name, items, minimum, kind in (("X", "ab", 2, "sum"), ("Y", "bcd", 2, "mean"), ("Z", "abcd", 3, "sum")):
            out[f"mini_{name}"], out[f"mini_{name}_n"], out[f"mini_{name}_prorated"] = rule(items, minimum, kind)
        rows.append(out)
    return pd.DataFrame(rows)


def test_scores_csv_has_one_row_per_respondent_repeat_with_attributes(run_dir, tmp_path):
    out = tmp_path / "scores.csv"
    result = psyq("scores", str(run_dir), "--out", str(out))
    assert result.returncode == 0, result.stderr
    got = pd.read_csv(out)
    assert len(got) == 16                      # 8 personas × 2 repeats × 1 backend
    assert {"gender", "age", "backend_id", "model", "repeat"} <= set(got.columns)
    want = expected_scores(run_dir)
    merged = got.merge(want, on=["respondent_id", "repeat"], suffixes=("", "_want"))
    assert len(merged) == 16
    for column in [c for c in want.columns if c.startswith("mini_")]:
        np.testing.assert_allclose(merged[column].astype(float), merged[column + "_want"].astype(float))
    # The stub refuses item d for some trials, so some Y/Z scores are prorated, and stderr says how many.
    n_prorated = int(want[[c for c in want.columns if c.endswith("_prorated")]].to_numpy().sum())
    assert n_prorated > 0
    assert f"{n_prorated} prorated" in result.stderr


def test_scores_sav_round_trip_values_and_labels(run_dir, tmp_path):
    out = tmp_path / "scores.sav"
    result = psyq("scores", str(run_dir), "--format", "sav", "--out", str(out))
    assert result.returncode == 0, result.stderr
    frame, meta = pyreadstat.read_sav(str(out))
    labels = meta.column_names_to_labels
    # Labels: instrument id in capitals, subscale name, metric and range (X: 2 items on 1–7 → 2–14).
    assert labels["mini_X"] == "MINI Sum of a and b (sum, 2–14)"
    assert labels["mini_Y"] == "MINI Mean of b c d (mean, 1–7)"
    assert labels["mini_Z_n"] == "MINI Prorated sum of all: items answered (of 4)"
    assert meta.variable_value_labels["mini_Z_prorated"] == {0.0: "no", 1.0: "yes"}
    # gender is stored as codes with the text as value labels (sorted: female = 1, male = 2).
    assert meta.variable_value_labels["gender"] == {1.0: "female", 2.0: "male"}
    gender = frame["gender"].map(meta.variable_value_labels["gender"])
    assert (gender == np.where(frame["age"].isin([23, 29, 35, 41]), "female", "male")).all()
    want = expected_scores(run_dir)
    merged = frame.merge(want, on=["respondent_id", "repeat"], suffixes=("", "_want"))
    assert len(merged) == 16
    for column in [c for c in want.columns if c.startswith("mini_")]:
        np.testing.assert_allclose(merged[column], merged[column + "_want"].astype(float))


def test_spss_names_are_valid_and_unique():
    names = spss_names(["iri_PT", "persona age", "2nd.item", "x" * 70, "X" * 70, "IRI_pt", "by"])
    assert names["by"] == "by_"                                 # BY is an SPSS keyword
    assert names["iri_PT"] == "iri_PT"
    assert names["persona age"] == "persona_age" and names["2nd.item"] == "v2nd_item"
    written = list(names.values())
    assert all(len(n) <= 64 and n[0].isalpha() and n.replace("_", "").isalnum() for n in written)
    assert names["x" * 70] == "x" * 64 and names["X" * 70] == "X" * 62 + "_2"   # cut, then de-duplicated
    assert len({n.lower() for n in written}) == len(written)     # SPSS names are case-insensitive


def test_score_keeps_attributes_and_reports_prorating(tmp_path):
    # mini_answers.csv (worked by hand in test_scoring.py): r2 answers b, d only → X, Z not scored,
    # Y = 4.5 from 2 of 3 items (prorated); r4 misses d → Y and Z prorated. 3 prorated, 2 not scored.
    result = psyq("score", str(DATA / "mini_1to7.yaml"), str(DATA / "mini_answers.csv"))
    assert result.returncode == 0, result.stderr
    from io import StringIO
    got = pd.read_csv(StringIO(result.stdout), index_col="respondent_id")
    assert got.loc["r4", "gender"] == "female"
    assert got.loc["r4", "Y_prorated"] == 1 and got.loc["r4", "Z_prorated"] == 1 and got.loc["r1", "Z_prorated"] == 0
    assert got.loc["r2", "X_n"] == 1 and got.loc["r2", "X_prorated"] == 0
    assert "3 prorated" in result.stderr and "2 not scored" in result.stderr


def test_score_keyed_file_is_not_reversed_twice(tmp_path):
    # The same answers stored keyed: a and c replaced by 8 − x. Scored with --keyed they must give
    # the scores of the raw file.
    raw = pd.read_csv(DATA / "mini_answers.csv")
    keyed = raw.copy()
    keyed["a"], keyed["c"] = 8 - raw["a"], 8 - raw["c"]
    keyed.to_csv(tmp_path / "keyed.csv", index=False)
    a = psyq("score", str(DATA / "mini_1to7.yaml"), str(DATA / "mini_answers.csv"), "--out", str(tmp_path / "a.csv"))
    b = psyq("score", str(DATA / "mini_1to7.yaml"), str(tmp_path / "keyed.csv"), "--keyed", "--out", str(tmp_path / "b.csv"))
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv"))
    c = psyq("score", str(DATA / "mini_1to7.yaml"), str(tmp_path / "keyed.csv"), "--out", str(tmp_path / "c.csv"))
    assert not pd.read_csv(tmp_path / "a.csv").equals(pd.read_csv(tmp_path / "c.csv"))   # undeclared: differs


def test_score_writes_sav_and_needs_out_for_binary_formats(tmp_path):
    out = tmp_path / "humans.sav"
    result = psyq("score", str(DATA / "mini_1to7.yaml"), str(DATA / "mini_answers.csv"), "--format", "sav",
                  "--out", str(out))
    assert result.returncode == 0, result.stderr
    frame, meta = pyreadstat.read_sav(str(out))
    # Worked by hand in test_scoring.py: r1 Z 16 (complete), r4 Z 56/3 (d missing: prorated).
    got = frame.set_index("respondent_id")
    assert got.loc["r1", "Z"] == 16 and got.loc["r4", "Z"] == pytest.approx(56 / 3)
    assert got.loc["r4", "Z_prorated"] == 1 and got.loc["r1", "Z_prorated"] == 0
    assert meta.column_names_to_labels["Z"] == "MINI Prorated sum of all (sum, 4–28)"
    assert meta.variable_value_labels["gender"] == {1.0: "female", 2.0: "male"}
    bad = psyq("score", str(DATA / "mini_1to7.yaml"), str(DATA / "mini_answers.csv"), "--format", "sav")
    assert bad.returncode == 2 and "needs --out" in bad.stderr and "Traceback" not in bad.stderr
