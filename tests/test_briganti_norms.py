"""The `briganti2018` IRI norms shipped in instruments/iri.yaml equal what the shipped raw data give.

The expected numbers are computed here from instruments/data/iri_briganti2018_keyed.csv with
numpy, using the subscale lists written out below (Davis' published keys), not with psyq's
scoring or the recompute script. As an independent check, these are the figures the data's
provider recomputed (subscale sums, SD with n − 1):
    women (n 1,135) PT 16.91 (4.57), FS 18.25 (5.39), EC 20.54 (4.29), PD 13.55 (4.66);
    men (n 838)     PT 16.48 (4.51), FS 15.68 (4.94), EC 17.66 (4.66), PD 10.70 (4.45);
    all (n 1,973)   PT 16.73 (4.55), FS 17.16 (5.36), EC 19.32 (4.67), PD 12.34 (4.78).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq import load_instrument
from psyq.engine.trials.scoring import score

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv"
# Davis (1980) subscale items, as in the header of instruments/iri.yaml.
SUBSCALES = {"PT": [3, 8, 11, 15, 21, 25, 28], "FS": [1, 5, 7, 12, 16, 23, 26],
             "EC": [2, 4, 9, 14, 18, 20, 22], "PD": [6, 10, 13, 17, 19, 24, 27]}
REVERSED = [3, 4, 7, 12, 13, 14, 15, 18, 19]
GROUPS = {"women": "F", "men": "M", "all": None}


@pytest.fixture(scope="module")
def raw():
    return pd.read_csv(RAW)


@pytest.fixture(scope="module")
def sample():
    iri = load_instrument(ROOT / "instruments" / "iri.yaml")
    return next(s for s in iri.norms if s.id == "briganti2018")


def by_hand(raw: pd.DataFrame, code: str | None, sub: str) -> tuple[int, float, float]:
    """n, mean and SD (n − 1) of a subscale sum; the file is keyed, so nothing is reversed."""
    rows = raw if code is None else raw[raw["gender"] == code]
    sums = rows[[f"davi{i}" for i in SUBSCALES[sub]]].to_numpy(dtype=float).sum(axis=1)
    return len(sums), float(np.mean(sums)), float(np.std(sums, ddof=1))


def test_raw_file_is_complete(raw):
    assert len(raw) == 1973 and raw["gender"].value_counts().to_dict() == {"F": 1135, "M": 838}
    assert not raw.isna().any().any()
    assert raw[[f"davi{i}" for i in range(1, 29)]].isin(range(5)).all().all()


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("sub", list(SUBSCALES))
def test_every_shipped_number_equals_the_recomputation(raw, sample, group, sub):
    shipped = next(g for g in sample.groups if g.id == group)
    n, mean, sd = by_hand(raw, GROUPS[group], sub)
    assert shipped.n == n
    assert (shipped.scores[sub].mean, shipped.scores[sub].sd) == (round(mean, 2), round(sd, 2))


def test_sample_declares_raw_data_and_totals(sample):
    assert sample.verified == "raw-data" and sample.n == 1973 and sample.metric == "sum"
    assert {g.id for g in sample.groups} == set(GROUPS)


def test_psyq_scoring_of_the_unkeyed_answers_gives_the_same_sums(raw):
    # Undo the keying (4 − value on the nine reverse items) and let psyq key and score them: the
    # subscale sums must equal the plain sums of the keyed file, respondent by respondent.
    iri = load_instrument(ROOT / "instruments" / "iri.yaml")
    answers = raw[[f"davi{i}" for i in range(1, 29)]].copy()
    answers.columns = [str(i) for i in range(1, 29)]
    for i in REVERSED:
        answers[str(i)] = 4 - answers[str(i)]
    scored = score(iri, answers).pivot(index="respondent_id", columns="subscale", values="score")
    for sub, items in SUBSCALES.items():
        expected = raw[[f"davi{i}" for i in items]].sum(axis=1).to_numpy(dtype=float)
        assert scored[sub].to_numpy() == pytest.approx(expected)


def test_recompute_script_agrees():
    out = subprocess.run([sys.executable, "instruments/data/recompute_briganti2018.py", "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "every number equals the recomputation" in out.stdout


def test_shipped_instruments_cite_nothing_outside_the_project():
    for path in (ROOT / "instruments").rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".md", ".py", ".json"):
            text = path.read_text(encoding="utf-8")
            assert "shared/" not in text and "../shared" not in text, path
