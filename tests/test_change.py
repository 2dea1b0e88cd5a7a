"""Change scores, paired tests and the comparison of change with humans (psyq.analysis.statistics.change), on
small hand-made frames. Expected values are worked out by hand in the comments or recomputed
in the test by an independent route (the textbook formula with numpy, an exact enumeration),
never copied from the code's own output."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.report import views
from psyq.analysis.scoring.human_data import read_human_change_csv
from psyq.analysis.statistics.change import (change_flag, change_scores, compare_change_with_humans, dz_ci,
    paired_change)
from psyq.analysis.report.sections.change import before_after_plot, change_section
from psyq.engine.files.errors import InputError


def _score_rows(respondent, emotion, before, after, *, repeat=0, situation="s1", subscale="PA",
                backend="m", stages=((0, "before"), (2, "after"))):
    """Tidy scores with stages for one respondent × repeat × situation × subscale."""
    values = dict(zip((s for s, _ in stages), (before, after) if len(stages) == 2 else before))
    return [{"backend_id": backend, "respondent_id": respondent, "repeat": repeat, "situation_id": situation,
             "emotion": emotion, "stage": stage, "phase": phase, "instrument": "panas", "subscale": subscale,
             "score": values[stage]} for stage, phase in stages]


def _changes(groups: dict[str, list[float]], *, subscale="PA", before=30.0) -> pd.DataFrame:
    """Change scores with one row per respondent: emotion -> list of changes."""
    rows = []
    for emotion, deltas in groups.items():
        for i, d in enumerate(deltas):
            rows.append({"backend_id": "m", "respondent_id": f"{emotion}{i}", "repeat": 0, "situation_id": "s",
                         "emotion": emotion, "instrument": "panas", "subscale": subscale,
                         "before": before, "after": before + d, "change": d})
    return pd.DataFrame(rows)


def _humans(groups: dict[str, list[float]], subscale="PA", before=30.0) -> pd.DataFrame:
    rows = [{"respondent_id": f"h{emotion}{i}", "emotion": emotion, "situation_id": "", "subscale": subscale,
             "before": before, "after": before + d, "change": d}
            for emotion, deltas in groups.items() for i, d in enumerate(deltas)]
    return pd.DataFrame(rows)


# --- change_scores -----------------------------------------------------------------------------


def test_change_uses_last_before_and_first_after_and_counts_dropped():
    stages = ((0, "before"), (1, "before"), (3, "after"), (4, "after"))
    rows = _score_rows("a", "anger", (30.0, 28.0, 25.0, 20.0), None, stages=stages)
    rows += _score_rows("b", "anger", 20.0, 26.0)                      # plain: 26 − 20 = 6
    rows += _score_rows("c", "anger", 20.0, None)                      # after score missing (NaN)
    rows += _score_rows("d", "anger", None, 22.0)                      # before score missing
    rows += [r for r in _score_rows("e", "anger", 20.0, 21.0) if r["phase"] == "before"]  # no after stage
    rows += [{**_score_rows("f", "anger", 1.0, 1.0)[0], "phase": None}]  # not a before/after measure: ignored
    scores = pd.DataFrame(rows)
    scores["score"] = scores["score"].astype(float)
    res = change_scores(scores)
    got = res.changes.set_index("respondent_id")
    # a: last before (stage 1: 28) and first after (stage 3: 25): 25 − 28 = −3
    assert got.loc["a", ["before", "after", "change", "before_stage", "after_stage"]].tolist() == [28, 25, -3, 1, 3]
    assert got.loc["b", "change"] == 6
    assert sorted(got.index) == ["a", "b"]
    assert res.dropped == 3
    reasons = dict(zip(res.dropped_rows["respondent_id"], res.dropped_rows["reason"]))
    assert reasons == {"c": "no after score", "d": "no before score", "e": "no after score"}


def test_change_scores_names_missing_columns():
    with pytest.raises(KeyError, match="phase"):
        change_scores(pd.DataFrame({"score": [1.0]}).assign(**{c: "x" for c in
                      ["backend_id", "respondent_id", "repeat", "situation_id", "emotion", "instrument",
                       "subscale", "stage"]}))


# --- paired_change ------------------------------------------------------------------------------


def test_paired_change_counts_people_and_matches_the_formulas():
    # anger: five people; "anger0" ran twice (changes −3 and −5, averaged to −4).
    ch = _changes({"anger": [-4, -1, -5, -2, -3]})
    extra = ch.iloc[[0, 0]].copy()
    extra["repeat"] = [0, 1]
    extra["after"] = [27.0, 25.0]
    extra["change"] = [-3.0, -5.0]
    ch = pd.concat([ch.iloc[1:], extra], ignore_index=True)
    out = paired_change(ch, by=["emotion"])
    row = out[out["emotion"] == "anger"].iloc[0]
    assert row["n"] == 5                     # people, not the six rows
    d = np.array([-4.0, -1, -5, -2, -3])
    # By hand: mean −3; SD = √((1 + 4 + 4 + 1 + 0)/4) = √2.5 = 1.5811; t = −3/(1.5811/√5) = −4.2426.
    assert row["mean_change"] == pytest.approx(-3.0)
    assert row["mean_before"] == pytest.approx(30.0) and row["mean_after"] == pytest.approx(27.0)
    assert row["sd_change"] == pytest.approx(math.sqrt(2.5))
    assert row["t"] == pytest.approx(-3 / (math.sqrt(2.5) / math.sqrt(5)))
    assert row["t"] == pytest.approx(-4.2426, abs=1e-4)
    assert row["df"] == 4
    assert row["p"] == pytest.approx(2 * stats.t.sf(4.2426407, 4), rel=1e-6)
    # dz = −3/1.5811 = −1.8974
    assert row["dz"] == pytest.approx(-1.8974, abs=1e-4)
    # Wilcoxon: all five changes negative with distinct sizes: W+ = 0; the exact two-sided p is
    # 2 · P(W+ ≤ 0) = 2/2⁵ = 0.0625 (one of the 32 equally likely sign patterns has W+ = 0).
    assert row["w"] == 0
    assert row["p_wilcoxon"] == pytest.approx(0.0625)
    # pooled row: same people here, so identical numbers
    overall = out[out["emotion"] == "overall"].iloc[0]
    assert overall["n"] == 5 and overall["t"] == pytest.approx(row["t"])


def _exact_wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided exact p of the signed-rank test by enumerating all 2ⁿ sign patterns (no ties, no zeros)."""
    ranks = stats.rankdata(np.abs(d))
    w_plus = ranks[d > 0].sum()
    expected = ranks.sum() / 2
    patterns = [sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=d.size)]
    return min(1.0, sum(abs(w - expected) >= abs(w_plus - expected) - 1e-12 for w in patterns) / len(patterns))


def test_wilcoxon_against_exact_enumeration():
    deltas = [-4, 1, -5, -2, -3.5, 6.5, -7]
    row = paired_change(_changes({"fear": deltas}), by=[]).iloc[0]
    d = np.array(deltas, dtype=float)
    # ranks of |d|: 1→1, 2→2, 3.5→3, 4→4, 5→5, 6.5→6, 7→7; W+ = 1 + 6 = 7, W− = 21; W = min = 7
    assert row["w"] == 7
    assert row["p_wilcoxon"] == pytest.approx(_exact_wilcoxon_p(d))


def test_dz_ci_noncentral_t_and_normal_approximation():
    n, dz = 20, 0.5
    low, high = dz_ci(dz, n)
    t = dz * math.sqrt(n)
    # Definition: at the lower bound δ the observed t is the 97.5th percentile (ppf, not the
    # cdf the code inverts), at the upper bound the 2.5th.
    assert stats.nct.ppf(0.975, n - 1, low * math.sqrt(n)) == pytest.approx(t, abs=1e-6)
    assert stats.nct.ppf(0.025, n - 1, high * math.sqrt(n)) == pytest.approx(t, abs=1e-6)
    # Independent method: the large-sample normal approximation, SE(dz) ≈ √(1/n + dz²/(2n));
    # at n = 200 the two agree to within 0.01.
    n = 200
    low, high = dz_ci(dz, n)
    se = math.sqrt(1 / n + dz ** 2 / (2 * n))
    assert low == pytest.approx(dz - 1.96 * se, abs=0.01)
    assert high == pytest.approx(dz + 1.96 * se, abs=0.01)
    assert all(math.isnan(x) for x in dz_ci(0.5, 1))


def test_not_estimable_cases_say_why():
    ch = _changes({"alone": [-3], "flat": [0, 0, 0], "same": [2, 2, 2]})
    out = paired_change(ch, by=["emotion"]).set_index("emotion")
    alone = out.loc["alone"]
    assert alone["n"] == 1 and alone["mean_change"] == -3
    assert all(math.isnan(alone[c]) for c in ["t", "p", "w", "p_wilcoxon", "dz", "dz_low", "p_holm"])
    assert "one respondent" in alone["note"]
    flat = out.loc["flat"]
    assert all(math.isnan(flat[c]) for c in ["t", "dz", "w", "p_wilcoxon"])
    assert "all changes are zero" in flat["note"] and "SD of change 0" in flat["note"]
    same = out.loc["same"]     # every change +2: t undefined, but Wilcoxon is (all ranks positive)
    assert math.isnan(same["t"]) and not math.isnan(same["p_wilcoxon"])
    assert "SD of change 0" in same["note"]


def test_holm_over_all_rows():
    ch = _changes({"a": [-4, -1, -5, -2, -3], "b": [1, -1, 2, 0.5, -0.5], "c": [3, 4, 2, 5, 3.5]})
    out = paired_change(ch, by=["emotion"])
    # Holm by hand: sort the m p values, multiply the k-th smallest by (m − k + 1), running max, cap 1.
    p = out["p"].to_numpy()
    order = np.argsort(p)
    m = p.size
    adjusted = np.minimum(1, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    expected = np.empty(m)
    expected[order] = adjusted
    assert out["p_holm"].to_numpy() == pytest.approx(expected)


# --- compare_change_with_humans -----------------------------------------------------------------

HUMAN = [-5, -6, -4, -5.5, -4.5]                      # mean −5, SD √(2.5/4)


def test_flags_on_constructed_cases():
    cohort = {"anger": [0, 1, -1, 0.5, -0.5],           # mean 0 vs −5: numb
              "fear": [-10, -11, -9, -10.5, -9.5],      # mean −10 vs −5: over-reacting
              "joy": [5, 6, 4, 5.5, 4.5],               # +5 vs −5: opposite direction
              "sad": [-5.2, -4.1, -6.3, -5.1, -4.8],    # about −5.1 vs −5: CI includes 0
              "calm": [1],                              # one respondent
              "bored": [2, 2, 2]}                       # no variance, and humans none either
    humans = {e: HUMAN for e in ["anger", "fear", "joy", "sad", "calm"]} | {"bored": [1, 1, 1]}
    out = compare_change_with_humans(_changes(cohort), _humans(humans), by=["emotion"]).set_index("emotion")
    assert out.loc["anger", "flag"] == "numb"
    assert out.loc["fear", "flag"] == "over-reacting"
    assert out.loc["joy", "flag"] == "opposite direction"
    assert out.loc["sad", "flag"] == ""
    assert out.loc["calm", "flag"].startswith("not estimable: fewer than 2")
    assert math.isnan(out.loc["calm", "t"]) and math.isnan(out.loc["calm", "diff_low"])
    assert out.loc["bored", "flag"] == "not estimable: no variance of change in either group"
    assert math.isnan(out.loc["bored", "t"]) and math.isnan(out.loc["bored", "diff_low"])
    # overall pools every emotion (the six cohort groups: 5+5+5+5+1+3 = 24 people)
    assert out.loc["overall", "n_cohort"] == 24


def test_change_flag_rules():
    assert change_flag(-1.0, -3.0, 0.5, 3.5) == "numb"
    assert change_flag(-1.0, -3.0, -0.5, 3.5) == ""           # CI includes 0
    assert change_flag(4.0, 2.0, 0.5, 3.5) == "over-reacting"
    assert change_flag(-2.0, 2.0, -6.0, -2.0) == "opposite direction"
    assert change_flag(1.0, 0.0, 0.5, 1.5) == "over-reacting"   # humans exactly 0: any change is more
    assert change_flag(1.0, 2.0, float("nan"), float("nan")) == ""


def test_welch_difference_g_and_wasserstein_against_the_formulas():
    c = np.array([0, 1, -1, 0.5, -0.5, -2.0])          # mean −1/3: closer to 0 than humans' −5
    h = np.array(HUMAN, dtype=float)
    out = compare_change_with_humans(_changes({"anger": list(c)}), _humans({"anger": list(h)}), by=[]).iloc[0]
    vc, vh = c.var(ddof=1) / c.size, h.var(ddof=1) / h.size
    t = (c.mean() - h.mean()) / math.sqrt(vc + vh)
    df = (vc + vh) ** 2 / (vc ** 2 / (c.size - 1) + vh ** 2 / (h.size - 1))      # Welch–Satterthwaite
    half = stats.t.ppf(0.975, df) * math.sqrt(vc + vh)
    assert out["t"] == pytest.approx(t) and out["df"] == pytest.approx(df)
    assert out["p"] == pytest.approx(2 * stats.t.sf(abs(t), df))
    assert out["diff"] == pytest.approx(c.mean() - h.mean())
    assert (out["diff_low"], out["diff_high"]) == pytest.approx((c.mean() - h.mean() - half, c.mean() - h.mean() + half))
    pooled = math.sqrt(((c.size - 1) * c.var(ddof=1) + (h.size - 1) * h.var(ddof=1)) / (c.size + h.size - 2))
    g = (c.mean() - h.mean()) / pooled * (1 - 3 / (4 * (c.size + h.size) - 9))
    assert out["g"] == pytest.approx(g, rel=1e-3)          # Hedges' correction: exact vs approximate J
    # Wasserstein-1 between empirical distributions = area between the two CDFs, integrated
    # numerically on a fine grid here.
    grid = np.linspace(-8, 4, 120001)
    cdf = lambda x: np.searchsorted(np.sort(x), grid, side="right") / x.size   # noqa: E731
    assert out["wasserstein"] == pytest.approx(np.trapezoid(np.abs(cdf(c) - cdf(h)), grid), abs=1e-3)
    assert out["flag"] == "numb"


def test_humans_matched_on_subscale_and_group():
    ch = pd.concat([_changes({"anger": [-1, -2, -3]}, subscale="PA"), _changes({"anger": [3, 4, 5]}, subscale="NA")])
    hu = pd.concat([_humans({"anger": [-1, -2, -3, -2]}, "PA"), _humans({"anger": [1, 2, 3]}, "NA"),
                    _humans({"fear": [9, 9.5]}, "PA")])
    out = compare_change_with_humans(ch, hu, by=["emotion"]).set_index(["subscale", "emotion"])
    assert out.loc[("PA", "anger"), "n_human"] == 4 and out.loc[("PA", "anger"), "change_human"] == -2
    assert out.loc[("NA", "anger"), "n_human"] == 3 and out.loc[("NA", "anger"), "change_human"] == 2
    assert out.loc[("PA", "overall"), "n_human"] == 6          # fear humans join the pooled row
    with pytest.raises(KeyError, match="situation_id"):
        compare_change_with_humans(ch, hu.drop(columns="situation_id"), by=["situation_id"])


# --- the human change CSV ------------------------------------------------------------------------


def test_read_human_change_csv(tmp_path):
    path = tmp_path / "humans.csv"
    path.write_text("respondent_id,emotion,situation_id,subscale,before,after\n"
                    "p1,anger,,PA,30,26\np1,anger,,NA,12,18.5\n", encoding="utf-8")
    frame = read_human_change_csv(path)
    assert frame["change"].tolist() == [-4.0, 6.5]
    assert frame["situation_id"].tolist() == ["", ""]


def test_read_human_change_csv_bad_row(tmp_path):
    path = tmp_path / "humans.csv"
    path.write_text("respondent_id,emotion,situation_id,subscale,before,after\n"
                    "p1,anger,,PA,30,26\np2,anger,,PA,30,lots\np3,,,NA,,1\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_human_change_csv(path)
    messages = [str(p) for p in err.value.problems]
    assert f"{path}:3:6: after: must be a number, not 'lots'" in messages
    assert f"{path}:4:2: emotion: is empty" in messages
    assert f"{path}:4:5: before: is empty; a number is needed" in messages


def test_read_human_change_csv_missing_column(tmp_path):
    path = tmp_path / "humans.csv"
    path.write_text("respondent_id,emotion,subscale,before,after\np1,anger,PA,30,26\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"humans.csv:1: missing column\(s\): situation_id"):
        read_human_change_csv(path)


# --- the report section ---------------------------------------------------------------------------


def _stage_scores() -> pd.DataFrame:
    rows = []
    for i, (b, a) in enumerate([(30, 25), (28, 24), (26, 23), (31, 27)]):
        rows += _score_rows(f"r{i}", "anger", float(b), float(a))
        rows += _score_rows(f"r{i}", "anger", 12.0, 12.0 + i + 3, subscale="NA")
        rows += _score_rows(f"r{i}", "joy", float(b), float(b + 2 + i % 2), situation="s2")
        rows += _score_rows(f"r{i}", "joy", 12.0, 11.0, situation="s2", subscale="NA")
    rows += [r for r in _score_rows("r9", "joy", 20.0, 20.0, situation="s2") if r["phase"] == "before"]
    return pd.DataFrame(rows)


def test_change_section_readings_tables_and_figure(tmp_path):
    humans = _humans({"anger": [-2, -1, -3, -2.5, -1.5], "joy": [1, 2, 3, 2, 2]}, "PA")
    humans = pd.concat([humans, _humans({"anger": [2, 3, 4], "joy": [-1, -2, -1.5]}, "NA")])
    section = change_section(_stage_scores(), humans)
    assert section.readings[0].startswith("1 change score")
    # PA anger: changes −5, −4, −3, −4 → mean −4 ("fell by 4.00"); humans −2 (n = 5)
    pa_anger = [r for r in section.readings if "anger situations, PA" in r][0]
    assert "PA fell by 4.00 points" in pa_anger and "humans: −2.00 (n = 5)" in pa_anger
    # joy NA: every change −1 → t and dz not estimable, said in words
    na_joy = [r for r in section.readings if "joy situations, NA" in r][0]
    assert "not estimable" in na_joy
    captions = [c for c, _ in section.tables]
    assert captions[0].startswith("Scores left out")
    tables = {table.caption: table for table in section.tables}
    paired = tables["Paired change (after − before) per emotion and pooled"]
    view = views.apa_table(paired.frame, paired.view)
    assert "dz [95 % CI]" in view.frame.columns and "p (Holm)" in view.frame.columns
    compared = tables["Change of the cohort against humans' change"]
    human_view = views.apa_table(compared.frame, compared.view)
    assert "Flag" in human_view.frame.columns and "Difference [95 % CI]" in human_view.frame.columns
    (caption, fig), = section.figures
    assert "humans" in caption
    fig.savefig(tmp_path / "change.png", dpi=150)
    # every before/after marker of the cohort and of humans is drawn: 2 subscales × 2 emotions × 2 series
    gids = [line.get_gid() for ax in fig.axes for line in ax.lines if line.get_gid()]
    assert sum(g.startswith("after:") for g in gids) == 8
    assert sum(g.startswith("before:humans") for g in gids) == 4


def test_before_after_plot_nothing_clipped(tmp_path):
    fig = before_after_plot(change_scores(_stage_scores()).changes)
    fig.savefig(tmp_path / "p.png", dpi=150)
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    for artist in [*fig.axes, *fig.legends, fig._suptitle]:
        extent = artist.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1
