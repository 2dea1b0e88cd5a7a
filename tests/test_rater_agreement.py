"""Agreement between raters of replies (analysis/statistics/rater_agreement.py) on small tables written out here.

Expected values are computed independently of the code under test: ICCs from the two-way ANOVA
mean squares by hand with numpy (Shrout & Fleiss 1979, McGraw & Wong 1996) and checked against
the values Shrout & Fleiss publish for their own example; Krippendorff's α from the coincidence
matrix by hand and against the value Krippendorff (2011) publishes for his example.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.statistics.rater_agreement import (ALPHA_COLUMNS, ICC_COLUMNS, JUDGE_HUMAN_COLUMNS, alpha_table,
    icc_table, judge_vs_human)

NAN = float("nan")

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges. They report ICC(2,1) = .29 and
# ICC(2,k) = .62 (k = 4).
SHROUT_FLEISS = [[9, 2, 5, 8],
                 [6, 1, 3, 2],
                 [8, 4, 6, 8],
                 [7, 1, 2, 6],
                 [10, 5, 6, 9],
                 [6, 2, 4, 7]]

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the example with missing
# values: 4 observers (rows) × 12 units (columns). He reports ordinal α = .815 (nominal .743).
KRIPPENDORFF = [[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
                [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
                [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
                [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]]


def tidy(matrix: list[list[float]], kinds: list[str], *, by_rater_rows: bool = False, dimension: str = "cognitive",
         ids: list[str] | None = None) -> pd.DataFrame:
    """The table as read_ratings gives it: one row per target × rater (targets are rows of
    `matrix`, raters columns, unless `by_rater_rows`); NaN levels stay as rows with no level."""
    m = np.array(matrix, dtype=float)
    m = m.T if by_rater_rows else m
    rows = []
    for t, levels in enumerate(m):
        for r, level in enumerate(levels):
            rows.append({"response_id": f"t{t:02d}", "source": "persona", "rubric_id": "empathy_ceb",
                         "dimension": dimension, "rater_kind": kinds[r],
                         "rater_id": ids[r] if ids else f"{kinds[r][0]}{r}", "level": level,
                         "status": "answered" if not math.isnan(level) else "unparseable"})
    return pd.DataFrame(rows)


def hand_icc2(x: np.ndarray) -> tuple[float, float]:
    """ICC(2,1) and ICC(2,k) from the two-way ANOVA without replication, by hand:
    MSR (targets), MSC (raters), MSE (residual); Shrout & Fleiss (1979) eq. for case 2."""
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_err = ((x - grand) ** 2).sum() - ss_rows - ss_cols
    msr, msc, mse = ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))
    single = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    average = (msr - mse) / (msr + (msc - mse) / n)
    return single, average


def hand_ordinal_alpha(by_rater: list[list[float]]) -> float:
    """Krippendorff's ordinal α from the coincidence matrix, by hand (Krippendorff 2011, sec. C)."""
    data = np.array(by_rater, dtype=float)
    values = np.unique(data[~np.isnan(data)])
    where = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for unit in data.T:
        unit = unit[~np.isnan(unit)]
        m = len(unit)
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[where[unit[i]], where[unit[j]]] += 1 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()

    def delta(c: int, k: int) -> float:
        lo, hi = min(c, k), max(c, k)
        return (n_c[lo:hi + 1].sum() - (n_c[c] + n_c[k]) / 2) ** 2

    d = np.array([[delta(c, k) for k in range(len(values))] for c in range(len(values))])
    return 1 - (n - 1) * (o * d).sum() / (np.outer(n_c, n_c) * d).sum()


def test_icc_matches_anova_by_hand_and_shrout_fleiss_published_values():
    ratings = tidy(SHROUT_FLEISS, ["judge", "judge", "human", "human"])
    table = icc_table(ratings)
    assert table.columns.tolist() == ICC_COLUMNS
    every = table[table["raters"] == "all"].set_index("type")
    single, average = hand_icc2(np.array(SHROUT_FLEISS, dtype=float))
    assert every.loc["ICC(2,1)", "icc"] == pytest.approx(single, abs=1e-12)
    assert every.loc["ICC(2,k)", "icc"] == pytest.approx(average, abs=1e-12)
    assert round(single, 2) == 0.29 and round(average, 2) == 0.62        # as published
    assert every.loc["ICC(2,1)", "ci_low"] < single < every.loc["ICC(2,1)", "ci_high"]
    assert (every["n_targets"] == 6).all() and (every["n_raters"] == 4).all() and (every["n_dropped"] == 0).all()
    # judges only: the first two columns, by hand again
    judges = table[table["raters"] == "judges"].set_index("type")
    j_single, j_average = hand_icc2(np.array(SHROUT_FLEISS, dtype=float)[:, :2])
    assert judges.loc["ICC(2,1)", "icc"] == pytest.approx(j_single, abs=1e-12)
    assert judges.loc["ICC(2,k)", "icc"] == pytest.approx(j_average, abs=1e-12)
    assert set(table["raters"]) == {"all", "judges", "humans"}


def test_icc_drops_incomplete_targets_and_says_so():
    rows = [r[:] for r in SHROUT_FLEISS] + [[5, NAN, 4, 4]]     # a 7th target one rater did not rate
    table = icc_table(tidy(rows, ["judge"] * 4), sets=("all",)).set_index("type")
    single, _ = hand_icc2(np.array(SHROUT_FLEISS, dtype=float))  # the 6 complete targets only
    assert table.loc["ICC(2,1)", "icc"] == pytest.approx(single, abs=1e-12)
    assert table.loc["ICC(2,1)", "n_dropped"] == 1 and table.loc["ICC(2,1)", "n_targets"] == 6
    assert "1 target(s) left out: not rated by every one of the 4 raters" in table.loc["ICC(2,1)", "note"]


def test_alpha_matches_coincidence_matrix_by_hand_and_krippendorff_published_value():
    ratings = tidy(KRIPPENDORFF, ["judge", "judge", "human", "human"], by_rater_rows=True)
    table = alpha_table(ratings)
    assert table.columns.tolist() == ALPHA_COLUMNS
    every = table.set_index("raters").loc["all"]
    expected = hand_ordinal_alpha(KRIPPENDORFF)
    assert every["alpha"] == pytest.approx(expected, abs=1e-12)
    assert round(expected, 3) == 0.815                                  # as published
    # units 11 and 12... : unit 12 has one value only, so 11 units are pairable
    assert every["n_targets"] == 11 and every["n_raters"] == 4
    assert "1 target(s) with a level from only one rater" in every["note"]
    humans = table.set_index("raters").loc["humans"]
    assert humans["alpha"] == pytest.approx(hand_ordinal_alpha(KRIPPENDORFF[2:]), abs=1e-12)


def test_not_estimable_cases_are_nan_with_a_reason():
    one_rater = tidy([[1], [2], [3], [2]], ["judge"])
    icc = icc_table(one_rater)
    assert icc["icc"].isna().all() and icc["note"].str.startswith("not estimable: fewer than 2 raters").all()
    assert set(icc["raters"]) == {"all", "judges"}                      # no human: no 'humans' rows
    alpha = alpha_table(one_rater)
    assert alpha["alpha"].isna().all() and alpha["note"].str.startswith("not estimable").all()

    two_targets = tidy([[1, 2], [2, 3]], ["judge", "human"])
    icc = icc_table(two_targets).set_index("raters")
    assert icc.loc["all", "note"].str.startswith("not estimable: 2 target(s)").all()
    assert icc.loc[["judges", "humans"], "note"].str.startswith("not estimable: fewer than 2 raters").all()
    assert alpha_table(two_targets)["alpha"].isna().all()

    same = tidy([[2, 2], [2, 2], [2, 2], [2, 2]], ["judge", "judge"])
    assert icc_table(same)["note"].str.contains("no variance").all()
    assert alpha_table(same)["note"].str.contains("no variance").all()


def test_judge_against_human_mean_bias_and_correlations_by_hand():
    # 5 targets; judge j, people h1 and h2 (h2 did not rate target 4)
    matrix = [[3, 2, 2], [2, 2, 1], [3, 3, 3], [1, 1, NAN], [2, 1, 2]]
    ratings = tidy(matrix, ["judge", "human", "human"], ids=["j", "h1", "h2"])
    table = judge_vs_human(ratings)
    assert table.columns.tolist() == JUDGE_HUMAN_COLUMNS
    row = table.iloc[0]
    judge = np.array([3, 2, 3, 1, 2], dtype=float)
    human = np.array([2, 1.5, 3, 1, 1.5])                # mean of the people who rated each target
    diff = judge - human
    half = stats.t.ppf(0.975, len(diff) - 1) * diff.std(ddof=1) / math.sqrt(len(diff))
    assert row["n"] == 5 and row["n_humans"] == 2 and row["judge_id"] == "j"
    assert row["bias"] == pytest.approx(diff.mean())
    assert row["bias_ci_low"] == pytest.approx(diff.mean() - half)
    assert row["bias_ci_high"] == pytest.approx(diff.mean() + half)
    assert row["pearson_r"] == pytest.approx(np.corrcoef(judge, human)[0, 1])
    ranks = [stats.rankdata(judge), stats.rankdata(human)]
    assert row["spearman_rho"] == pytest.approx(np.corrcoef(*ranks)[0, 1])


def test_judge_against_human_not_estimable_cases():
    few = judge_vs_human(tidy([[3, 2], [2, 2]], ["judge", "human"]))
    assert math.isnan(few.iloc[0]["bias"]) and few.iloc[0]["note"].startswith("not estimable: 2 target")
    flat = judge_vs_human(tidy([[2, 1], [2, 2], [2, 3], [2, 3]], ["judge", "human"])).iloc[0]
    assert flat["bias"] == pytest.approx(2 - np.mean([1, 2, 3, 3]))     # the judge always says 2
    assert math.isnan(flat["pearson_r"]) and "r not estimable: the judge gave every target the same level" in flat["note"]
    assert judge_vs_human(tidy([[1], [2], [3]], ["judge"])).empty    # no people: no rows
