"""Scoring: reverse keying, subscale sums and means, the missing-data rule.

Every expected number below is worked out by hand in the comment beside it; none is produced by
running the code under test.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq import load_instrument, reverse_key, score, score_wide

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"


def test_reverse_key_on_several_ranges():
    # 0–4: 0↔4, 1↔3, 2 stays.  1–5: 1↔5, 2↔4, 3 stays.  1–7: 1↔7, 4 stays.
    assert reverse_key(np.array([0, 1, 2, 3, 4]), 0, 4).tolist() == [4, 3, 2, 1, 0]
    assert reverse_key(np.array([1, 2, 3, 4, 5]), 1, 5).tolist() == [5, 4, 3, 2, 1]
    assert reverse_key(np.array([1, 4, 7]), 1, 7).tolist() == [7, 4, 1]
    assert np.isnan(reverse_key(np.array([np.nan]), 1, 7)[0])


@pytest.fixture
def mini():
    return load_instrument(MINI)


def test_mini_instrument_one_to_seven(mini):
    # mini: scale 1–7; a (reversed; X, Z), b (X, Y, Z), c (reversed; Y, Z), d (Y, Z).
    # X = sum(a, b), needs 2 answers; Y = mean(b, c, d), needs 2; Z = prorated sum of all 4, needs 3.
    answers = pd.DataFrame(
        {"a": [2, None, 7, 1], "b": [5, 3, None, 2], "c": [7, None, 1, 3], "d": [4, 6, None, None]},
        index=["r1", "r2", "r3", "r4"])
    got = score_wide(mini, answers)
    # r1: keyed a = 1+7-2 = 6, b = 5, c = 8-7 = 1, d = 4.
    #     X = 6 + 5 = 11; Y = (5 + 1 + 4) / 3 = 10/3; Z = 6 + 5 + 1 + 4 = 16.
    assert got.loc["r1", "X"] == 11
    assert got.loc["r1", "Y"] == pytest.approx(10 / 3)
    assert got.loc["r1", "Z"] == 16
    # r2: only b = 3 and d = 6 answered.
    #     X has 1 answer (< 2) → missing; Y = (3 + 6) / 2 = 4.5 (2 answers, enough);
    #     Z has 2 answers (< 3) → missing.
    assert np.isnan(got.loc["r2", "X"])
    assert got.loc["r2", "Y"] == 4.5
    assert np.isnan(got.loc["r2", "Z"])
    # r3: a = 7 and c = 1 answered. X: 1 answer → missing. Y: only c → missing. Z: 2 → missing.
    assert got.loc["r3"].isna().all()
    # r4: keyed a = 8-1 = 7, b = 2, c = 8-3 = 5, d missing.
    #     X = 7 + 2 = 9; Y = (2 + 5) / 2 = 3.5; Z prorated = (7 + 2 + 5) / 3 × 4 = 56/3.
    assert got.loc["r4", "X"] == 9
    assert got.loc["r4", "Y"] == 3.5
    assert got.loc["r4", "Z"] == pytest.approx(56 / 3)


def test_tidy_score_table_counts_answers(mini):
    answers = pd.DataFrame({"a": [None], "b": [3], "c": [None], "d": [6]}, index=["r2"])
    tidy = score(mini, answers).set_index("subscale")
    assert list(tidy.columns) == ["respondent_id", "score", "n_answered", "n_items", "prorated"]
    # X: b answered of (a, b); Y: b, d of (b, c, d); Z: b, d of all four.
    assert tidy["n_answered"].to_dict() == {"X": 1, "Y": 2, "Z": 2}
    # X (1 < 2) and Z (2 < 3) are not scored, so not prorated; Y is scored from 2 of 3 items.
    assert tidy["prorated"].to_dict() == {"X": False, "Y": True, "Z": False}
    assert tidy["n_items"].to_dict() == {"X": 2, "Y": 3, "Z": 4}


def test_absent_item_columns_count_as_missing(mini):
    # Column d absent altogether: r gives a=1 (keyed 7), b=2, c=3 (keyed 5) → Z = 14/3 × 4.
    answers = pd.DataFrame({"a": [1], "b": [2], "c": [3]}, index=["r"])
    assert score_wide(mini, answers).loc["r", "Z"] == pytest.approx(56 / 3)


IRI = ROOT / "instruments" / "iri.yaml"
IRI_REVERSED = {"3", "4", "7", "12", "13", "14", "15", "18", "19"}  # Davis (1980), facts sheet


@pytest.fixture
def iri():
    return load_instrument(IRI)


def test_iri_keys_match_the_published_key(iri):
    # Davis (1980): PT 3 8 11 15 21 25 28; FS 1 5 7 12 16 23 26; EC 2 4 9 14 18 20 22;
    # PD 6 10 13 17 19 24 27 — written out here independently of the YAML file.
    expected = {"PT": "3 8 11 15 21 25 28", "FS": "1 5 7 12 16 23 26",
                "EC": "2 4 9 14 18 20 22", "PD": "6 10 13 17 19 24 27"}
    for sid, members in expected.items():
        assert [i.id for i in iri.subscale_items(sid)] == members.split()
    assert {i.id for i in iri.items if i.reverse} == IRI_REVERSED
    assert (iri.scale_min, iri.scale_max) == (0, 4)


@pytest.mark.parametrize("answer, expected", [
    # All 4: reversed items score 0. PT has 2 reversed (3, 15): 5×4 = 20. FS 2 (7, 12): 20.
    # EC 3 (4, 14, 18): 4×4 = 16. PD 2 (13, 19): 20.
    (4, {"PT": 20, "FS": 20, "EC": 16, "PD": 20}),
    # All 0: reversed items score 4. PT 2×4 = 8, FS 8, EC 3×4 = 12, PD 8.
    (0, {"PT": 8, "FS": 8, "EC": 12, "PD": 8}),
])
def test_iri_constant_answers(iri, answer, expected):
    answers = pd.DataFrame([[answer] * 28], columns=[str(i) for i in range(1, 29)], index=["r"])
    assert score_wide(iri, answers).loc["r"].to_dict() == expected


def test_iri_mixed_respondent_by_hand(iri):
    # Answer = item number mod 5 (1→1, 2→2, … 5→0, 6→1 …).
    # PT items 3 8 11 15 21 25 28 → raw 3 3 1 0 1 0 3; reversed 3 and 15 → 1 and 4.
    #   PT = 1 + 3 + 1 + 4 + 1 + 0 + 3 = 13.
    # EC items 2 4 9 14 18 20 22 → raw 2 4 4 4 3 0 2; reversed 4, 14, 18 → 0, 0, 1.
    #   EC = 2 + 0 + 4 + 0 + 1 + 0 + 2 = 9.
    answers = pd.DataFrame([[i % 5 for i in range(1, 29)]], columns=[str(i) for i in range(1, 29)],
                           index=["r"])
    got = score_wide(iri, answers).loc["r"]
    assert got["PT"] == 13
    assert got["EC"] == 9


def test_scores_are_vectorised_over_many_respondents(mini):
    # 1,000 respondents answering the same as r1 above must all get r1's scores.
    answers = pd.DataFrame({"a": [2] * 1000, "b": [5] * 1000, "c": [7] * 1000, "d": [4] * 1000})
    got = score_wide(mini, answers)
    assert (got["X"] == 11).all() and (got["Z"] == 16).all()
    assert np.allclose(got["Y"], 10 / 3)
