"""`psyq score`: human data scored through the real command line."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def test_score_writes_one_column_per_subscale(tmp_path):
    out = tmp_path / "scores.csv"
    result = psyq("score", str(DATA / "mini_1to7.yaml"), str(DATA / "mini_answers.csv"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    scores = pd.read_csv(out, index_col="respondent_id")
    assert list(scores.columns) == ["gender", "X", "X_n", "X_prorated", "Y", "Y_n", "Y_prorated",
                                    "Z", "Z_n", "Z_prorated"]
    # Same respondents as in test_scoring.py (worked by hand there): r1 X 11, Y 10/3, Z 16;
    # r2 X missing, Y 4.5, Z missing; r4 X 9, Y 3.5, Z 56/3.
    assert scores.loc["r1", "X"] == 11 and scores.loc["r1", "Z"] == 16
    assert scores.loc["r1", "Y"] == pytest.approx(10 / 3)
    assert pd.isna(scores.loc["r2", "X"]) and scores.loc["r2", "Y"] == 4.5
    assert scores.loc["r4", "Z"] == pytest.approx(56 / 3)


def test_bad_cells_are_reported_with_line_and_column():
    result = psyq("score", str(DATA / "mini_1to7.yaml"), str(DATA / "mini_answers_bad.csv"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    f = f"{DATA / 'mini_answers_bad.csv'}"
    # Header is line 1, so respondent r2 is line 3, r3 line 4, the second r1 line 5.
    assert result.stderr.splitlines() == [
        f"error: {f}:3: column 'c': 'x' is not a number",
        f"error: {f}:4: column 'a': 8 is not on the scale (1, 2, 3, 4, 5, 6, 7)",
        f"error: {f}:4: column 'd': 2.5 is not on the scale (1, 2, 3, 4, 5, 6, 7)",
        f"error: {f}:5: column 'respondent_id': respondent_id 'r1' appears more than once",
    ]


def test_missing_item_column_is_an_error(tmp_path):
    csv = tmp_path / "answers.csv"
    csv.write_text("respondent_id,a,b,c\nr1,1,2,3\n")
    result = psyq("score", str(DATA / "mini_1to7.yaml"), str(csv))
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"error: {csv}:1: missing column(s): d; if the file names its columns "
                                            "otherwise, describe them in a codebook (--codebook FILE")
