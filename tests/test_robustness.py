"""Robustness statistics: paired change perturbed − original per perturbation × dimension × rater,
checked against a small ratings table written out below with the expected values worked out by
hand (arithmetic in the comments; t quantiles from tables: t(0.975, 2) = 4.302653,
t(0.975, 3) = 3.182446), and the interval also against scipy's one-sample t test
(``ttest_1samp(...).confidence_interval``), an implementation independent of ours.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.report.sections.robustness import robustness_sections
from psyq.analysis.statistics.robustness import paired_changes, robustness_table
from psyq.engine.judging.perturbed_replies import perturb_run, read_log
from psyq.engine.design.perturbation_sets import load_perturbations
from psyq.engine.store.ratings import Rating, put_ratings, read_ratings, read_targets
from psyq.engine.store.run_store import RunStore
from test_perturb import HALEAS, small_run

NAN = float("nan")


def rating_rows() -> pd.DataFrame:
    """Four originals A-D; 'typos' of each; 'leet' of A only. Judge j1 rates cognitive and
    emotional; human h1 rates only typos-of-A on cognitive (never the original)."""
    rows = []

    def add(rid, orig, pert, dim, rater_kind, rater, level, status="answered"):
        rows.append({"response_id": rid, "original_id": orig, "perturbation": pert, "rubric_id": "ceb",
                     "dimension": dim, "rater_kind": rater_kind, "rater_id": rater, "level": level, "status": status})

    for rid, cog, emo in [("A", 3, 2), ("B", 2, 2), ("C", 3, 2), ("D", 1, 2)]:
        add(rid, None, None, "cognitive", "judge", "j1", cog)
        add(rid, None, None, "emotional", "judge", "j1", emo)
    for rid, cog, emo in [("A", 2, 3), ("B", 2, NAN), ("C", 1, 3), ("D", 1, 2)]:
        add(f"t{rid}", rid, "typos", "cognitive", "judge", "j1", cog)
        add(f"t{rid}", rid, "typos", "emotional", "judge", "j1", emo, "unparseable" if math.isnan(emo) else "answered")
    add("lA", "A", "leet", "cognitive", "judge", "j1", 3)
    add("tA", "A", "typos", "cognitive", "human", "h1", 2)
    return pd.DataFrame(rows)


def cell(table: pd.DataFrame, perturbation: str, dimension: str, rater: str = "j1") -> pd.Series:
    rows = table[(table["perturbation"] == perturbation) & (table["dimension"] == dimension)
                 & (table["rater_id"] == rater)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_typos_cognitive_by_hand_and_against_scipy():
    table = robustness_table(rating_rows())
    c = cell(table, "typos", "cognitive")
    # changes: A 2-3 = -1, B 2-2 = 0, C 1-3 = -2, D 1-1 = 0 -> mean -0.75;
    # SD: deviations -0.25, 0.75, -1.25, 0.75, squares sum 2.75, /3 = 0.916667, sqrt = 0.957427;
    # half width 3.182446 * 0.957427 / 2 = 1.523478 -> CI -2.273478 to 0.773478.
    assert c["n_pairs"] == 4 and c["n_perturbed"] == 4
    assert c["mean_change"] == pytest.approx(-0.75)
    assert c["sd_change"] == pytest.approx(0.957427, abs=1e-6)
    assert (c["ci_low"], c["ci_high"]) == pytest.approx((-2.273478, 0.773478), abs=1e-5)
    ci = stats.ttest_1samp([-1, 0, -2, 0], 0).confidence_interval(0.95)
    assert (c["ci_low"], c["ci_high"]) == pytest.approx((ci.low, ci.high))
    # level changed for A and C (2 of 4), both down.
    assert (c["share_changed"], c["share_up"], c["share_down"]) == (0.5, 0.0, 0.5)
    assert (c["mean_original"], c["mean_perturbed"]) == (2.25, 1.5)   # (3+2+3+1)/4, (2+2+1+1)/4
    assert pd.isna(c["reason"])   # nothing to say about this cell


def test_a_missing_level_is_left_out_and_said():
    c = cell(robustness_table(rating_rows()), "typos", "emotional")
    # B's perturbed level is missing (unparseable): pairs A +1, C +1, D 0 -> n 3, mean 2/3;
    # SD: deviations 1/3, 1/3, -2/3, squares 6/9, /2 = 1/3, sqrt = 0.577350;
    # half width 4.302653 * 0.577350 / sqrt(3) = 1.434218 -> CI -0.767551 to 2.100884.
    assert (c["n_pairs"], c["n_perturbed"]) == (3, 4)
    assert c["mean_change"] == pytest.approx(2 / 3)
    assert (c["ci_low"], c["ci_high"]) == pytest.approx((-0.767551, 2.100884), abs=1e-5)
    assert (c["share_changed"], c["share_up"], c["share_down"]) == pytest.approx((2 / 3, 2 / 3, 0))
    assert "1 of 4 perturbed text(s) left out" in c["reason"]


def test_not_estimable_cells_are_nan_with_a_reason():
    table = robustness_table(rating_rows())
    one = cell(table, "leet", "cognitive")
    # One pair (A: 3 -> 3): a mean change of 0, but no SD and so no interval.
    assert one["n_pairs"] == 1 and one["mean_change"] == 0
    assert math.isnan(one["ci_low"]) and math.isnan(one["ci_high"]) and "one pair only" in one["reason"]
    none = cell(table, "typos", "cognitive", rater="h1")
    # h1 never rated an original: no pair at all.
    assert none["n_pairs"] == 0 and math.isnan(none["mean_change"]) and math.isnan(none["share_changed"])
    assert "no pair with both levels" in none["reason"] and "1 of 1" in none["reason"]
    # Four cells in all: typos x {cognitive, emotional} for j1, leet cognitive for j1, typos cognitive for h1.
    assert len(table) == 4


def test_pairs_are_matched_within_rater_and_dimension():
    pairs = paired_changes(rating_rows())
    row = pairs[(pairs["response_id"] == "tA") & (pairs["dimension"] == "emotional")].iloc[0]
    # typos-of-A emotional by j1 is 3, the original A emotional by j1 is 2 (not A's cognitive 3).
    assert (row["original_level"], row["perturbed_level"], row["change"]) == (2, 3, 1)


def test_report_section_has_table_figure_and_says_what_is_not_estimable(tmp_path):
    sections = robustness_sections(rating_rows())
    assert len(sections) == 1
    section = sections[0]
    assert section.tables[0][1].shape[0] == 4 and len(section.figures) == 1
    text = " ".join(section.readings)
    assert "t(0.975, n − 1)" in text
    assert "leet, ceb cognitive (judge j1): mean change 0" in text and "no CI" in text
    assert "typos, ceb cognitive (human h1): change not estimable (no pair with both levels" in text
    assert "typos, ceb emotional (judge j1)" in text and "Note: 1 of 4 perturbed text(s) left out" in text
    assert "Note: nan" not in text


def test_no_perturbed_texts_no_section(tmp_path):
    rows = rating_rows()
    assert robustness_sections(rows[rows["original_id"].isna()]) == []


def test_end_to_end_from_the_run_store(tmp_path):
    """Perturb a stub run's targets by rule, store judge ratings in SQLite, read them back."""
    path = small_run(tmp_path)
    asyncio.run(perturb_run(path, load_perturbations(HALEAS), None, only=["leetspeak"], log=lambda m: None))
    with RunStore(path / "run.sqlite") as store:
        targets = read_targets(store)
        # The judge gives originals 3 and leetspeak versions 2 (persona) and 3 (reference): changes -1 and 0.
        levels = {rid: (3.0 if pd.isna(orig) else (2.0 if src == "persona" else 3.0))
                  for rid, orig, src in zip(targets["response_id"], targets["original_id"], targets["source"])}
        put_ratings(store, [Rating(rid, "ceb", "cognitive", "judge", "j1", level, "answered", "2026-11-23T00:00:00")
                            for rid, level in levels.items()])
        table = robustness_table(read_ratings(store, "ceb"))
        log = read_log(store)
    c = cell(table, "leetspeak", "cognitive")
    # changes -1 and 0: mean -0.5, SD sqrt(0.5) = 0.707107; half 12.706205 * 0.707107 / sqrt(2) = 6.353102.
    assert c["n_pairs"] == 2 and c["mean_change"] == -0.5
    assert (c["ci_low"], c["ci_high"]) == pytest.approx((-6.853102, 5.853102), abs=1e-5)
    assert (c["share_changed"], c["share_down"]) == (0.5, 0.5)
    assert list(log["status"]) == ["perturbed", "perturbed"]
    sections = robustness_sections(read_ratings_frame(path), log)
    assert sections and sections[0].tables


def read_ratings_frame(path) -> pd.DataFrame:
    with RunStore(path / "run.sqlite") as store:
        return read_ratings(store)


def test_chart_marks_not_estimable_cells():
    from psyq.analysis.report.sections.robustness import robustness_chart
    fig = robustness_chart(robustness_table(rating_rows()))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("not estimable" in t for t in texts)
    assert np.isfinite([line.get_xdata()[0] for line in fig.axes[0].lines if line.get_gid()
                        and line.get_gid().startswith("robustness:")]).all()
