"""Empathic-accuracy scoring (engine/kinds/vignette/accuracy.py, accuracy_csv.py): hand-computed values on a toy instrument,
independent checks against scipy and a differently written CCC, and the CSV readers' errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.engine.kinds.vignette.accuracy import (fisher_z, judge_percent, normative_profile,
    perceiver_accuracy, stop_accuracy, target_profiles, vignette_accuracy, with_self_reports)
from psyq.engine.kinds.vignette.accuracy_csv import read_perceiver_csv, read_target_reports_csv
from psyq.engine.files.errors import InputError
from psyq.engine.design.instrument import load_instrument

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
EMOTIONS = ["joy", "sadness", "anger", "fear"]

# Toy instrument, 4 emotions on 0-4. Target profiles (joy, sadness, anger, fear):
#   a/1 = 4 1 0 1    a/2 = 0 3 1 2    b/1 = 2 2 2 0    c/1 has no target report.
# Normative profile (mean over the three stops): joy (4+0+2)/3 = 2, sadness (1+3+2)/3 = 2,
#   anger (0+1+2)/3 = 1, fear (1+2+0)/3 = 1  →  2 2 1 1.
TOY_YAML = """\
psyq: instrument/1
id: ea_toy
name: Toy vignettes
version: 1
content_source: psyq
citations:
  psyq: "psyq authors. Toy vignettes for tests."
terms: Test data only.
instructions: Rate how the target feels.
emotions: [joy, sadness, anger, fear]
emotion_scale:
  - {value: 0, label: not at all}
  - {value: 1}
  - {value: 2}
  - {value: 3}
  - {value: 4, label: very strongly}
items:
  - id: a
    kind: vignette
    target: Ann
    segments:
      - text: Ann wins.
        target_report:
          source: design-intended
          intensities: {joy: 4, sadness: 1, anger: 0, fear: 1}
          thoughts: "I did it."
      - text: Ann loses it again.
        target_report:
          source: design-intended
          intensities: {joy: 0, sadness: 3, anger: 1, fear: 2}
    subscales: [accuracy]
  - id: b
    kind: vignette
    target: Ben
    segments:
      - text: Ben waits.
        target_report:
          source: design-intended
          intensities: {joy: 2, sadness: 2, anger: 2, fear: 0}
    subscales: [accuracy]
  - id: c
    kind: vignette
    target: Cy
    segments:
      - text: Cy is told.
    subscales: [accuracy]
subscales:
  - {id: accuracy, name: Profile accuracy, score: ea_profile}
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    path = tmp_path_factory.mktemp("inst") / "ea_toy.yaml"
    path.write_text(TOY_YAML)
    return load_instrument(path)


@pytest.fixture(scope="module")
def targets(toy):
    return target_profiles(toy)


def ratings(person: str, vignette: str, stop: int, values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"p": person, "vignette": vignette, "stop": stop, "emotion": EMOTIONS,
                         "rating": np.array(values, dtype=float)})


def one_stop(frame: pd.DataFrame, person: str, vignette: str, stop: int) -> pd.Series:
    row = frame[(frame["p"] == person) & (frame["vignette"] == vignette) & (frame["stop"] == stop)]
    assert len(row) == 1
    return row.iloc[0]


# ---------------------------------------------------------------------------------------------
# Target profiles


def test_target_profiles_of_the_toy(targets):
    assert list(targets.columns) == ["vignette", "stop", "emotion", "intensity", "source", "thoughts"]
    assert len(targets) == 3 * 4                                   # c/1 has no report: no rows
    assert targets.groupby(["vignette", "stop"]).size().to_dict() == {("a", 1): 4, ("a", 2): 4, ("b", 1): 4}
    a1 = targets[(targets.vignette == "a") & (targets.stop == 1)]
    assert a1["emotion"].tolist() == EMOTIONS and a1["intensity"].tolist() == [4, 1, 0, 1]
    assert set(a1["thoughts"]) == {"I did it."}                   # repeated on each row of the stop
    assert targets[targets.stop == 2]["thoughts"].isna().all()
    assert set(targets["source"]) == {"design-intended"}
    assert normative_profile(targets).to_dict() == {"joy": 2.0, "sadness": 2.0, "anger": 1.0, "fear": 1.0}


def test_target_profiles_of_the_shipped_vignettes():
    inst = load_instrument(ROOT / "instruments" / "ea_vignettes_psyq.yaml")
    profiles = target_profiles(inst)
    per_stop = profiles.groupby(["vignette", "stop"]).size()
    assert len(per_stop) == 22 and (per_stop == 10).all() and len(profiles) == 220
    assert profiles["vignette"].nunique() == 15
    assert set(profiles["emotion"]) == set(inst.emotions) and len(inst.emotions) == 10
    assert set(profiles["source"]) == {"design-intended"}
    assert profiles["intensity"].between(0, 4).all()
    # v03 has two stops, numbered 1 and 2 in story order
    assert sorted(profiles[profiles.vignette == "v03"]["stop"].unique()) == [1, 2]


# ---------------------------------------------------------------------------------------------
# Stop scores by hand


def test_stop_scores_by_hand(targets):
    frame = pd.concat([ratings("p1", "a", 1, [3, 2, 0, 1]), ratings("p2", "a", 1, [4, 2, 1, 1])])
    scores = stop_accuracy(frame, targets, ["p"])
    assert list(scores.columns) == ["p", "vignette", "stop", "n", "r", "z", "mae", "ccc", "distinctive_r"]

    # p1 against a/1. Target T = 4 1 0 1 (mean 1.5), perceiver P = 3 2 0 1 (mean 1.5).
    #   dT = 2.5 -0.5 -1.5 -0.5       dP = 1.5 0.5 -1.5 -0.5
    #   Σ dT·dP = 3.75 - 0.25 + 2.25 + 0.25 = 6;  Σ dT² = 6.25+0.25+2.25+0.25 = 9;  Σ dP² = 2.25+0.25+2.25+0.25 = 5
    #   r = 6 / √(9·5) = 6/√45 = 2/√5 = 0.8944
    #   MAE = (|3-4| + |2-1| + 0 + 0) / 4 = 0.5
    #   CCC = 2·(6/4) / (9/4 + 5/4 + (1.5-1.5)²) = 3 / 3.5 = 6/7
    #   distinctive: norm 2 2 1 1 → T' = 2 -1 -1 0, P' = 1 0 -1 0 (both mean 0)
    #   Σ T'P' = 2 + 0 + 1 + 0 = 3; Σ T'² = 6; Σ P'² = 2 → r = 3/√12 = √3/2
    p1 = one_stop(scores, "p1", "a", 1)
    assert p1["n"] == 4
    assert p1["r"] == pytest.approx(2 / math.sqrt(5))
    assert p1["z"] == pytest.approx(math.atanh(2 / math.sqrt(5)))
    assert p1["mae"] == pytest.approx(0.5)
    assert p1["ccc"] == pytest.approx(6 / 7)
    assert p1["distinctive_r"] == pytest.approx(math.sqrt(3) / 2)

    # p2 against a/1: P = 4 2 1 1 (mean 2), so the means differ and CCC < r.
    #   dP = 2 0 -1 -1; Σ dT·dP = 5 + 0 + 1.5 + 0.5 = 7; Σ dP² = 4+0+1+1 = 6
    #   r = 7/√(9·6) = 7/√54 = 0.9526
    #   MAE = (0 + 1 + 1 + 0) / 4 = 0.5
    #   CCC = 2·(7/4) / (9/4 + 6/4 + (1.5-2)²) = 3.5 / 4 = 0.875
    #   distinctive: P' = 2 0 0 0 (mean 0.5, deviations 1.5 -0.5 -0.5 -0.5), T' = 2 -1 -1 0 (mean 0)
    #   Σ = 3 + 0.5 + 0.5 + 0 = 4; Σ P'dev² = 2.25 + 3·0.25 = 3; Σ T'² = 6 → r = 4/√18 = 2√2/3
    p2 = one_stop(scores, "p2", "a", 1)
    assert p2["r"] == pytest.approx(7 / math.sqrt(54))
    assert p2["mae"] == pytest.approx(0.5)
    assert p2["ccc"] == pytest.approx(0.875)
    assert p2["distinctive_r"] == pytest.approx(2 * math.sqrt(2) / 3)


def test_missing_ratings_are_dropped_from_n(targets):
    frame = pd.concat([ratings("p", "a", 1, [3, np.nan, 0, 1]),
                       ratings("p", "a", 2, [np.nan, np.nan, 1, 2]),
                       ratings("p", "b", 1, [np.nan] * 4)])
    scores = stop_accuracy(frame, targets, ["p"])
    # a/1 without sadness: P = 3 0 1 (mean 4/3), T = 4 0 1 (mean 5/3)
    #   dP = 5/3 -4/3 -1/3, dT = 7/3 -5/3 -2/3
    #   Σ dP·dT = (35 + 20 + 2)/9 = 57/9; Σ dP² = 42/9; Σ dT² = 78/9 → r = 57/√(42·78) = 57/√3276 = 0.99587
    #   MAE = (1 + 0 + 0)/3 = 1/3
    #   CCC = 2·57/9 / (42/9 + 78/9 + 3·(1/3)²) = 114 / (42 + 78 + 3) = 114/123
    #   distinctive (norm 2 1 1 on joy, anger, fear): P' = 1 -1 0 (mean 0), T' = 2 -1 0 (mean 1/3)
    #   Σ P'·dT' = 1·5/3 + (-1)(-4/3) + 0 = 3; Σ P'² = 2; Σ dT'² = 42/9 → r = 3/√(84/9) = 9/√84
    a1 = one_stop(scores, "p", "a", 1)
    assert a1["n"] == 3
    assert a1["r"] == pytest.approx(57 / math.sqrt(3276))
    assert a1["r"] == pytest.approx(stats.pearsonr([3, 0, 1], [4, 0, 1]).statistic)
    assert a1["mae"] == pytest.approx(1 / 3)
    assert a1["ccc"] == pytest.approx(114 / 123)
    assert a1["distinctive_r"] == pytest.approx(9 / math.sqrt(84))
    # a/2 with two ratings (anger 1, fear 2 = the target's): n = 2 < 3, so no r; MAE still 0
    a2 = one_stop(scores, "p", "a", 2)
    assert a2["n"] == 2 and np.isnan(a2["r"]) and np.isnan(a2["z"]) and a2["mae"] == 0
    # b/1 with nothing rated: the row stays, with n = 0 and no scores
    b1 = one_stop(scores, "p", "b", 1)
    assert b1["n"] == 0 and b1[["r", "z", "mae", "ccc", "distinctive_r"]].isna().all()


def test_flat_profiles():
    target = lambda values: pd.DataFrame({"vignette": "v", "stop": 1, "emotion": EMOTIONS,  # noqa: E731
                                          "intensity": values})
    rate = lambda values: ratings("p", "v", 1, values)                                       # noqa: E731
    # flat perceiver, varied target T = 2 2 2 0: no r; CCC = 2·0 / (0 + Σ dT²/n + (2-1.5)²) = 0
    #   MAE = (0 + 0 + 0 + 2)/4 = 0.5
    s = stop_accuracy(rate([2, 2, 2, 2]), target([2, 2, 2, 0]), ["p"]).iloc[0]
    assert np.isnan(s["r"]) and np.isnan(s["z"]) and s["ccc"] == 0 and s["mae"] == 0.5
    # flat target, varied perceiver: no r, CCC 0
    s = stop_accuracy(rate([0, 1, 2, 3]), target([1, 1, 1, 1]), ["p"]).iloc[0]
    assert np.isnan(s["r"]) and s["ccc"] == 0
    # both flat (even at different levels): no r and no CCC; MAE = 1
    s = stop_accuracy(rate([2, 2, 2, 2]), target([1, 1, 1, 1]), ["p"]).iloc[0]
    assert np.isnan(s["r"]) and np.isnan(s["ccc"]) and s["mae"] == 1
    # only one target stop: the normative profile IS the target, so T' is flat → no distinctive r
    s = stop_accuracy(rate([0, 1, 2, 3]), target([4, 1, 0, 1]), ["p"]).iloc[0]
    assert np.isnan(s["distinctive_r"]) and not np.isnan(s["r"])


def test_a_perfect_match_has_a_finite_z(targets):
    s = stop_accuracy(ratings("p", "a", 2, [0, 3, 1, 2]), targets, ["p"]).iloc[0]
    assert s["r"] == pytest.approx(1.0) and s["ccc"] == pytest.approx(1.0) and s["mae"] == 0
    # r clipped to 0.9999: z = ½·ln(1.9999/0.0001) = ½·ln(19999) = 4.95172
    assert s["z"] == pytest.approx(0.5 * math.log(19999))
    assert fisher_z(-1.0) == pytest.approx(-0.5 * math.log(19999))


def test_duplicate_ratings_are_refused(targets):
    frame = pd.concat([ratings("p", "a", 1, [3, 2, 0, 1])] * 2)
    with pytest.raises(ValueError, match="more than one rating"):
        stop_accuracy(frame, targets, ["p"])


def ccc_reference(x: np.ndarray, y: np.ndarray) -> float:
    """Lin's CCC written another way: 1 − E[(x−y)²] / (σx² + σy² + (μx − μy)²), population
    variances (np.var, ddof=0). Equal to 2σxy / (…) since E[(x−y)²] = σx² + σy² − 2σxy + (μx−μy)².
    (pingouin 0.7 has no concordance correlation, so the check is this one.)"""
    return 1 - np.mean((x - y) ** 2) / (np.var(x) + np.var(y) + (x.mean() - y.mean()) ** 2)


def test_scores_agree_with_scipy_and_a_reference_ccc(targets):
    rng = np.random.default_rng(7)
    stops = targets[["vignette", "stop", "emotion"]]
    frame = pd.concat([stops.assign(p=f"p{i}", rating=rng.integers(0, 5, len(stops)).astype(float))
                       for i in range(60)], ignore_index=True)
    frame.loc[rng.random(len(frame)) < 0.15, "rating"] = np.nan
    scores = stop_accuracy(frame, targets, ["p"])
    norm = normative_profile(targets)
    merged = frame.merge(targets, on=["vignette", "stop", "emotion"])
    checked = 0
    for (p, v, s), rows in merged.groupby(["p", "vignette", "stop"]):
        got = one_stop(scores, p, v, s)
        rows = rows.dropna(subset=["rating"])
        x, y = rows["rating"].to_numpy(), rows["intensity"].to_numpy(float)
        nx = x - norm[rows["emotion"]].to_numpy()
        ny = y - norm[rows["emotion"]].to_numpy()
        assert got["n"] == len(x)
        if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
            assert got["r"] == pytest.approx(stats.pearsonr(x, y).statistic)
            checked += 1
        else:
            assert np.isnan(got["r"])
        if len(x) >= 3 and np.ptp(nx) > 0 and np.ptp(ny) > 0:
            assert got["distinctive_r"] == pytest.approx(stats.pearsonr(nx, ny).statistic)
        if len(x) and (np.ptp(x) > 0 or np.ptp(y) > 0):
            assert got["ccc"] == pytest.approx(ccc_reference(x, y))
            assert got["mae"] == pytest.approx(np.mean(np.abs(x - y)))
    assert checked > 100


# ---------------------------------------------------------------------------------------------
# Combining stops


def test_fisher_z_is_averaged_within_then_over_vignettes():
    # Perceiver q: vignette a has two stops (r = 0.8, 0.2), vignette b one (r = 0.5).
    #   z(0.8) = ½ln(1.8/0.2) = ½ln 9 = 1.098612;  z(0.2) = ½ln(1.2/0.8) = ½ln 1.5 = 0.202733
    #   z(0.5) = ½ln 3 = 0.549306
    #   within a: (1.098612 + 0.202733)/2 = 0.650672;  within b: 0.549306
    #   over vignettes: (0.650672 + 0.549306)/2 = 0.599989  →  r = tanh(0.599989) = 0.5370
    #   (a plain mean over the three stops would be 1.850651/3 = 0.616884 → r = 0.5490: different)
    #   MAE: a (1 + 2)/2 = 1.5, b 0.5 → (1.5 + 0.5)/2 = 1.0 (plain mean over stops 3.5/3 = 1.1667)
    scores = pd.DataFrame({"q": "x", "vignette": ["a", "a", "b"], "stop": [1, 2, 1], "n": 4,
                           "r": [0.8, 0.2, 0.5], "mae": [1.0, 2.0, 0.5], "ccc": [0.6, 0.0, 0.3],
                           "distinctive_r": [0.8, 0.2, 0.5]})
    scores["z"] = fisher_z(scores["r"])
    z_a = (0.5 * math.log(9) + 0.5 * math.log(1.5)) / 2
    z_b = 0.5 * math.log(3)
    per_vignette = vignette_accuracy(scores, ["q"]).set_index("vignette")
    assert per_vignette.loc["a", "z"] == pytest.approx(z_a)
    assert per_vignette.loc["a", "r"] == pytest.approx(math.tanh(z_a))
    assert per_vignette.loc["a", "mae"] == pytest.approx(1.5)
    assert per_vignette.loc["a", "ccc"] == pytest.approx(0.3)
    assert per_vignette["n_stops"].to_dict() == {"a": 2, "b": 1}

    overall = perceiver_accuracy(scores, ["q"]).iloc[0]
    assert overall["z"] == pytest.approx((z_a + z_b) / 2) and overall["z"] == pytest.approx(0.599989, abs=1e-6)
    assert overall["r"] == pytest.approx(0.5370, abs=1e-4)
    assert overall["distinctive_r"] == pytest.approx(overall["r"])
    assert overall["mae"] == pytest.approx(1.0)
    assert overall["ccc"] == pytest.approx((0.3 + 0.3) / 2)
    assert overall["n_vignettes"] == 2 and overall["n_stops"] == 3
    plain = math.tanh(np.mean(fisher_z(scores["r"])))
    assert plain == pytest.approx(0.5490, abs=1e-4) and abs(plain - overall["r"]) > 0.01


def test_perceiver_accuracy_from_the_perceiver_csv(toy, targets):
    human = read_perceiver_csv(DATA / "ea_toy_perceivers.csv", toy)
    scores = stop_accuracy(human, targets, ["respondent_id"])
    assert len(scores) == 4                                        # p1: a/1, a/2, b/1; p2: a/1
    # p1: a/1 r = 2/√5 (as above); a/2 rated exactly as the target (r = 1, z = z(0.9999));
    #     b/1 rated flat 2 2 2 2: no r; MAE (0+0+0+2)/4 = 0.5; CCC 0; distinctive r = 0
    #     (P' = 0 0 1 1, T' = 0 0 1 -1: Σ (P'−½)·T' = ½ − ½ = 0).
    #   vignette a: z = (atanh(2/√5) + ½ln 19999)/2; vignette b has no z → overall z = z_a
    #   MAE: a (0.5 + 0)/2 = 0.25, b 0.5 → 0.375.  CCC: a (6/7 + 1)/2, b 0 → (13/14)/2
    #   distinctive: a (atanh(√3/2) + ½ln 19999)/2, b atanh(0) = 0 → half of a's
    overall = perceiver_accuracy(scores, ["respondent_id"]).set_index("respondent_id")
    z_a = (math.atanh(2 / math.sqrt(5)) + 0.5 * math.log(19999)) / 2
    p1 = overall.loc["p1"]
    assert p1["z"] == pytest.approx(z_a) and p1["r"] == pytest.approx(math.tanh(z_a))
    assert p1["mae"] == pytest.approx(0.375)
    assert p1["ccc"] == pytest.approx(13 / 28)
    dz_a = (math.atanh(math.sqrt(3) / 2) + 0.5 * math.log(19999)) / 2
    assert p1["distinctive_r"] == pytest.approx(math.tanh(dz_a / 2))
    assert p1["n_vignettes"] == 1 and p1["n_stops"] == 2
    p2 = overall.loc["p2"]                                         # a/1 without sadness (see above)
    assert p2["r"] == pytest.approx(57 / math.sqrt(3276)) and p2["n_stops"] == 1


def test_judge_percent():
    # x: 2 + 1 + 0 + 2 = 5 points of 2·4 = 8 → 62.5 %; the NaN is not judged.
    # y: 2 + 2 = 4 of 4 → 100 %
    levels = pd.DataFrame({"p": ["x"] * 5 + ["y"] * 2, "vignette": "a",
                           "stop": [1, 2, 1, 2, 1, 1, 2], "level": [2, 1, 0, 2, None, 2, 2]})
    out = judge_percent(levels, ["p"]).set_index("p")
    assert out.loc["x", "n_judged"] == 4 and out.loc["x", "percent"] == pytest.approx(62.5)
    assert out.loc["y", "percent"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="0, 1 or 2"):
        judge_percent(levels.assign(level=3), ["p"])


# ---------------------------------------------------------------------------------------------
# CSV readers


def test_read_target_reports_and_replace(toy, targets):
    reports = read_target_reports_csv(DATA / "ea_toy_targets.csv", toy)
    assert list(reports.columns) == list(targets.columns)
    assert set(reports["source"]) == {"self-report"}
    a1 = reports[reports.vignette == "a"]
    assert a1["emotion"].tolist() == EMOTIONS and a1["intensity"].tolist() == [1, 3, 0, 2]
    assert set(a1["thoughts"]) == {"Not what I hoped, but fine."}
    assert set(reports[reports.vignette == "c"]["thoughts"]) == {"How dare he."}

    merged = with_self_reports(targets, reports)
    by_stop = merged.groupby(["vignette", "stop"])["source"].first().to_dict()
    assert by_stop == {("a", 1): "self-report", ("a", 2): "design-intended",
                       ("b", 1): "design-intended", ("c", 1): "self-report"}
    assert merged[(merged.vignette == "a") & (merged.stop == 1)]["intensity"].tolist() == [1, 3, 0, 2]
    assert merged[["vignette", "stop"]].drop_duplicates().values.tolist() == [["a", 1], ["a", 2], ["b", 1], ["c", 1]]
    assert len(merged) == 16


GOOD_TARGETS = (DATA / "ea_toy_targets.csv").read_text().splitlines()
# line 1 header; 2-5 a/1 joy, sadness, anger, fear; 6-9 c/1 joy, sadness, anger, fear


def edited(lines: list[str], changes: dict[int, str | None]) -> str:
    """The file with line k (1-based) replaced, or removed when None."""
    out = [changes.get(k, line) for k, line in enumerate(lines, start=1)]
    return "\n".join(line for line in out if line is not None) + "\n"


@pytest.mark.parametrize("changes, expected", [
    ({4: "a,1,angry,0,"},                                                   # bad emotion
     [":4: column 'emotion': 'angry' is not one of the emotions of ea_toy",
      ":2: column 'emotion': a stop 1 has no row for anger"]),
    ({5: "a,1,fear,5,"},                                                    # bad intensity
     [":5: column 'intensity': '5' is not on the emotion scale (whole numbers 0 to 4)"]),
    ({5: "a,1,fear,1.5,"}, [":5: column 'intensity': '1.5' is not on the emotion scale"]),
    ({5: "a,1,fear,,"}, [":5: column 'intensity': is empty"]),
    ({7: None},                                                             # missing emotion row
     [":6: column 'emotion': c stop 1 has no row for sadness (each stop needs one row per emotion)"]),
    ({6: "zz,1,joy,0,"},                                                    # unknown vignette
     [":6: column 'vignette_id': 'zz' is not a vignette of ea_toy (a, b, c)",
      ":7: column 'emotion': c stop 1 has no row for joy"]),
    ({6: "c,2,joy,0,"}, [":6: column 'segment': c has 1 segment(s), so no stop 2",
                         ":7: column 'emotion': c stop 1 has no row for joy"]),       # the bad row is not counted
    ({6: "c,0,joy,0,"}, [":6: column 'segment': '0' is not a stop number",
                         ":7: column 'emotion': c stop 1 has no row for joy"]),
    ({7: "c,1,joy,0,"}, [":7: column 'emotion': c stop 1 already has a row for joy (line 6)",
                         ":6: column 'emotion': c stop 1 has no row for sadness"]),
    ({9: "c,1,fear,1,again"}, [":9: column 'thoughts': c stop 1 already has thoughts (line 8)"]),
])
def test_target_csv_errors(toy, tmp_path, changes, expected):
    path = tmp_path / "self.csv"
    path.write_text(edited(GOOD_TARGETS, changes))
    with pytest.raises(InputError) as err:
        read_target_reports_csv(path, toy)
    for fragment in expected:
        assert f"{path}{fragment}" in str(err.value)
    assert len(err.value.problems) == len(expected)


def test_target_csv_reports_every_problem_at_once(toy, tmp_path):
    path = tmp_path / "self.csv"
    path.write_text(edited(GOOD_TARGETS, {3: "a,1,sadness,9,", 4: "a,1,angry,0,", 8: None, 9: "q,1,fear,1,"}))
    with pytest.raises(InputError) as err:
        read_target_reports_csv(path, toy)
    lines = [(p.line, p.field) for p in err.value.problems]
    assert lines == [(2, "column 'emotion'"), (3, "column 'intensity'"), (4, "column 'emotion'"),
                     (6, "column 'emotion'"), (8, "column 'vignette_id'")]   # 9 is line 8 after the removal
    assert "c stop 1 has no row for anger, fear" in str(err.value)


@pytest.mark.parametrize("header, message", [
    ("vignette_id,segment,emotion,thoughts", ":1: missing column(s): intensity"),
    ("vignette_id,segment,emotion,intensity,thought", ":1: unknown column(s): thought"),
    ("vignette_id,segment,emotion,intensity,emotion", ":1: duplicated column(s): emotion"),
])
def test_target_csv_header_errors(toy, tmp_path, header, message):
    path = tmp_path / "self.csv"
    path.write_text(edited(GOOD_TARGETS, {1: header}))
    with pytest.raises(InputError) as err:
        read_target_reports_csv(path, toy)
    assert f"{path}{message}" in str(err.value)


def test_missing_and_empty_files(toy, tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_target_reports_csv(tmp_path / "nope.csv", toy)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match="empty"):
        read_perceiver_csv(tmp_path / "empty.csv", toy)


def test_read_perceiver_csv(toy):
    human = read_perceiver_csv(DATA / "ea_toy_perceivers.csv", toy)
    assert list(human.columns) == ["respondent_id", "vignette", "stop", "emotion", "rating", "thoughts"]
    assert len(human) == 16 and human["rating"].dtype == float
    p2 = human[human.respondent_id == "p2"]
    assert p2["rating"].isna().tolist() == [False, True, False, False]     # empty rating = missing
    assert set(p2["thoughts"]) == {"He's fine."}
    p1a1 = human[(human.respondent_id == "p1") & (human.vignette == "a") & (human.stop == 1)]
    assert set(p1a1["thoughts"]) == {"She is pleased,\nand a little worried."}
    assert human[(human.respondent_id == "p1") & (human.stop == 2)]["thoughts"].isna().all()


def test_read_perceiver_csv_without_thoughts(toy, tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("respondent_id,vignette_id,segment,emotion,rating\n"
                    + "".join(f"r1,b,1,{e},{v}\n" for e, v in zip(EMOTIONS, [1, 2, 3, 4])))
    human = read_perceiver_csv(path, toy)
    assert "thoughts" not in human.columns and human["rating"].tolist() == [1, 2, 3, 4]


GOOD_PERCEIVERS = (DATA / "ea_toy_perceivers.csv").read_text().splitlines()
# line 1 header; p1 a/1 on lines 2-6 (the joy row's thoughts span lines 2-3); a/2 7-10; b/1 11-14;
# line 15 blank; p2 a/1 on 16-19


@pytest.mark.parametrize("changes, expected", [
    ({7: "p1,a,2,joy,7,"},                                       # after the two-line cell: line 7
     [":7: column 'rating': '7' is not on the emotion scale"]),
    ({18: "p2,a,1,anger,lots,"}, [":18: column 'rating': 'lots' is not on the emotion scale"]),
    ({11: "p1,bb,1,joy,2,"},
     [":11: column 'vignette_id': 'bb' is not a vignette of ea_toy",
      ":12: column 'emotion': respondent p1: b stop 1 has no row for joy"]),
    ({19: "p2,a,1,scared,1,"},
     [":19: column 'emotion': 'scared' is not one of the emotions",
      ":16: column 'emotion': respondent p2: a stop 1 has no row for fear"]),
    ({17: ",a,1,sadness,,"},
     [":17: column 'respondent_id': respondent_id is empty",
      ":16: column 'emotion': respondent p2: a stop 1 has no row for sadness"]),
    ({5: "p1,a,1,anger,1,also angry"}, [":5: column 'thoughts': respondent p1: a stop 1 already has thoughts (line 2)"]),
])
def test_perceiver_csv_errors(toy, tmp_path, changes, expected):
    path = tmp_path / "humans.csv"
    path.write_text(edited(GOOD_PERCEIVERS, changes))
    with pytest.raises(InputError) as err:
        read_perceiver_csv(path, toy)
    for fragment in expected:
        assert f"{path}{fragment}" in str(err.value)
    assert len(err.value.problems) == len(expected)
