"""Persona against reference replies (analysis/statistics/response_comparison.py) on small tables written out here.

Expected values are computed by hand in the tests: means, SDs and t CIs with numpy/scipy; in a
balanced design (every message has as many persona as reference replies) the source coefficient
of OLS with message fixed effects equals the difference of the two means, which is checked.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.statistics.response_comparison import (COMPARISON_COLUMNS, attribute_effects, compare_sources,
    descriptives, target_scores, with_combined)


def ratings(rows: list[tuple[str, str, str, str, str, float | None]]) -> pd.DataFrame:
    """(response_id, source, item_id, dimension, rater, level) -> the tidy frame of read_ratings."""
    out = []
    for rid, source, item, dim, rater, level in rows:
        kind, name = rater.split(":")
        out.append({"response_id": rid, "source": source, "instrument": "help", "item_id": item,
                    "trial_id": f"t_{rid}" if source == "persona" else None, "reply_id": None, "original_id": None,
                    "perturbation": None, "rubric_id": "empathy_ceb", "dimension": dim, "rater_kind": kind,
                    "rater_id": name, "level": np.nan if level is None else float(level),
                    "status": "answered" if level is not None else "unparseable", "reason": None})
    return pd.DataFrame(out)


# Two messages, two persona and two reference replies each, one judge, one dimension.
TWO_MESSAGES = ratings([
    ("p1", "persona", "m1", "cognitive", "judge:j", 1), ("p2", "persona", "m1", "cognitive", "judge:j", 2),
    ("r1", "reference", "m1", "cognitive", "judge:j", 3), ("r2", "reference", "m1", "cognitive", "judge:j", 3),
    ("p3", "persona", "m2", "cognitive", "judge:j", 2), ("p4", "persona", "m2", "cognitive", "judge:j", 1),
    ("r3", "reference", "m2", "cognitive", "judge:j", 2), ("r4", "reference", "m2", "cognitive", "judge:j", 3)])


def test_too_few_messages_falls_back_to_ols_and_says_so():
    comp = compare_sources(target_scores(TWO_MESSAGES, "judge"))
    assert comp.columns.tolist() == COMPARISON_COLUMNS
    row = comp.iloc[0]
    assert row["model"] == "OLS with the message as a fixed effect"
    assert row["note"] == "mixed model not fitted: 2 message(s), a random intercept needs 3"
    persona, reference = [1, 2, 2, 1], [3, 3, 2, 3]
    assert row["b"] == pytest.approx(np.mean(persona) - np.mean(reference))     # balanced: difference of means
    assert row["b_ci_low"] < row["b"] < row["b_ci_high"] and row["n"] == 8 and row["n_messages"] == 2


def test_descriptives_by_hand():
    desc = descriptives(target_scores(TWO_MESSAGES, "judge")).set_index("source")
    x = np.array([1, 2, 2, 1], dtype=float)
    half = stats.t.ppf(0.975, 3) * x.std(ddof=1) / 2
    assert desc.loc["persona", "mean"] == pytest.approx(1.5)
    assert desc.loc["persona", "sd"] == pytest.approx(x.std(ddof=1))
    assert desc.loc["persona", "mean_ci_low"] == pytest.approx(1.5 - half)
    assert desc.loc["persona", "n"] == 4


def test_scores_are_means_over_raters_of_one_kind_and_leave_perturbed_texts_out():
    rows = ratings([("p1", "persona", "m1", "cognitive", "judge:a", 1), ("p1", "persona", "m1", "cognitive", "judge:b", 2),
                    ("p1", "persona", "m1", "cognitive", "human:h", 3), ("p2", "persona", "m1", "cognitive", "judge:a", None)])
    perturbed = rows.iloc[[0]].assign(response_id="p1x", perturbation="leet", level=3.0)
    judged = target_scores(pd.concat([rows, perturbed]), "judge")
    assert judged[["response_id", "score", "n_raters"]].values.tolist() == [["p1", 1.5, 2.0]]
    assert target_scores(rows, "human")["score"].tolist() == [3.0]


def test_combined_score_only_when_every_dimension_has_a_level():
    rows = ratings([("p1", "persona", "m1", d, r, lvl) for d, r, lvl in [
        ("cognitive", "judge:a", 3), ("emotional", "judge:a", 2), ("behavioural", "judge:a", 2),
        ("cognitive", "judge:b", 3), ("emotional", "judge:b", None), ("behavioural", "judge:b", 1)]])
    out, how = with_combined(rows, {"empathy_ceb": {"overall": ["cognitive", "emotional", "behavioural"]}})
    overall = out[out["dimension"] == "overall"].set_index("rater_id")
    assert overall.loc["a", "level"] == pytest.approx(7 / 3) and overall.loc["a", "status"] == "combined"
    assert math.isnan(overall.loc["b", "level"]) and overall.loc["b", "status"] == "incomplete"
    assert how == ["empathy_ceb: 'overall' is the mean of cognitive and emotional and behavioural (the rubric's "
                   "combine rule), formed per rater only when all have a level."]
    _, guessed = with_combined(rows)
    assert "no combine rule of the rubric was read" in guessed[0]


def test_collinear_attributes_are_not_estimable_and_said():
    scores = target_scores(TWO_MESSAGES, "judge")
    attrs = pd.DataFrame({"age": [20, 30, 20, 30], "older": [0, 1, 0, 1]},
                         index=pd.Index(["t_p1", "t_p2", "t_p3", "t_p4"], name="trial_id"))
    eff = attribute_effects(scores, attrs, ["age", "older"])
    assert eff["b"].isna().all()
    assert eff["note"].iloc[0] == "not estimable: the predictors are collinear among these replies (rank-deficient design)"
    flat = attribute_effects(scores, attrs.assign(age=25), ["age"])
    assert flat["note"].iloc[0] == "not estimable: no predictor varies among the rated persona replies"
