"""Cohort against raw human data: each statistic against a second, independent computation.

The second computation is a hand formula written out here, another library (statsmodels), or an
exact enumeration of all relabellings of a small pooled sample.
"""

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.weightstats import ttest_ind as sm_ttest_ind

from psyq.analysis.statistics.human_comparison import (COMPARISON_COLUMNS, SAMPLE_KEYS, compare_samples,
    compare_with_humans, one_factor_loadings, tucker_phi)
from psyq.analysis.statistics.reliability import cronbach_alpha
from psyq import load_instrument, score_wide

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"

RNG = np.random.default_rng(11)
# Likert-like scores with many ties and unequal spread/size.
COHORT = np.clip(np.rint(RNG.normal(4.6, 0.8, 30)), 1, 7)
HUMAN = np.clip(np.rint(RNG.normal(4.0, 1.5, 45)), 1, 7)


@pytest.fixture(scope="module")
def res():
    return compare_samples(COHORT, HUMAN)


def test_keys_and_descriptives(res):
    assert list(res) == SAMPLE_KEYS
    assert (res["n_cohort"], res["n_human"]) == (30, 45)
    assert res["mean_cohort"] == pytest.approx(COHORT.sum() / 30)
    assert res["sd_human"] == pytest.approx(np.sqrt(((HUMAN - HUMAN.mean()) ** 2).sum() / 44))
    # NaN is dropped, not counted.
    assert compare_samples(np.append(COHORT, np.nan), pd.Series(HUMAN))["n_cohort"] == 30


def test_welch_by_hand_and_by_statsmodels(res):
    n1, n2 = COHORT.size, HUMAN.size
    v1, v2 = COHORT.var(ddof=1) / n1, HUMAN.var(ddof=1) / n2
    t = (COHORT.mean() - HUMAN.mean()) / np.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))      # Welch–Satterthwaite
    assert res["t"] == pytest.approx(t, rel=1e-12)
    assert res["df"] == pytest.approx(df, rel=1e-12)
    assert res["p"] == pytest.approx(2 * stats.t.sf(abs(t), df), rel=1e-9)
    sm_t, sm_p, sm_df = sm_ttest_ind(COHORT, HUMAN, usevar="unequal")
    assert (res["t"], res["p"], res["df"]) == pytest.approx((sm_t, sm_p, sm_df), rel=1e-9)


def test_hedges_g_and_interval_by_hand(res):
    n1, n2 = COHORT.size, HUMAN.size
    pooled = np.sqrt(((n1 - 1) * COHORT.var(ddof=1) + (n2 - 1) * HUMAN.var(ddof=1)) / (n1 + n2 - 2))
    g = (COHORT.mean() - HUMAN.mean()) / pooled * (1 - 3 / (4 * (n1 + n2) - 9))
    se = np.sqrt((n1 + n2) / (n1 * n2) + g**2 / (2 * (n1 + n2)))
    crit = stats.t.ppf(0.975, n1 + n2 - 2)
    assert res["g"] == pytest.approx(g, rel=1e-12)
    assert (res["g_low"], res["g_high"]) == pytest.approx((g - crit * se, g + crit * se), rel=1e-9)


def test_mann_whitney_by_pair_counting_and_normal_approximation(res):
    # U of the cohort = #(cohort > human) + ½ #(ties), over all pairs.
    diff = COHORT[:, None] - HUMAN[None, :]
    u = (diff > 0).sum() + 0.5 * (diff == 0).sum()
    assert res["u"] == pytest.approx(u)
    # Both samples > 8 with ties: normal approximation, tie-corrected variance, continuity 0.5.
    n1, n2 = COHORT.size, HUMAN.size
    n = n1 + n2
    _, counts = np.unique(np.concatenate([COHORT, HUMAN]), return_counts=True)
    var = n1 * n2 / 12 * ((n + 1) - (counts**3 - counts).sum() / (n * (n - 1)))
    z = (abs(u - n1 * n2 / 2) - 0.5) / np.sqrt(var)
    assert res["p_mwu"] == pytest.approx(2 * stats.norm.sf(z), rel=1e-9)


# Small samples without ties: exact p-values by enumerating all C(9, 4) = 126 relabellings.
SMALL_C = np.array([1.2, 3.4, 5.1, 6.3, 7.7])
SMALL_H = np.array([0.5, 2.2, 2.9, 4.0])


def _enumerate(statistic, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    pooled = np.concatenate([a, b])
    values = []
    for idx in combinations(range(pooled.size), a.size):
        mask = np.zeros(pooled.size, bool)
        mask[list(idx)] = True
        values.append(statistic(pooled[mask], pooled[~mask]))
    return np.array(values)


def _u(a, b):
    return (a[:, None] > b[None, :]).sum()


def _ks(a, b):
    grid = np.concatenate([a, b])
    ecdf_a = (a[None, :] <= grid[:, None]).mean(axis=1)
    ecdf_b = (b[None, :] <= grid[:, None]).mean(axis=1)
    return np.abs(ecdf_a - ecdf_b).max()


def test_exact_mann_whitney_p_by_enumeration():
    got = compare_samples(SMALL_C, SMALL_H)
    u_obs = _u(SMALL_C, SMALL_H)
    null = _enumerate(_u, SMALL_C, SMALL_H)
    mu = SMALL_C.size * SMALL_H.size / 2
    assert got["u"] == u_obs
    assert got["p_mwu"] == pytest.approx(np.mean(np.abs(null - mu) >= abs(u_obs - mu) - 1e-12), rel=1e-9)


def test_kolmogorov_smirnov_by_ecdfs_and_enumeration(res):
    assert res["ks"] == pytest.approx(_ks(COHORT, HUMAN), abs=1e-12)
    got = compare_samples(SMALL_C, SMALL_H)
    d_obs = _ks(SMALL_C, SMALL_H)
    assert got["ks"] == pytest.approx(d_obs, abs=1e-12)
    null = _enumerate(_ks, SMALL_C, SMALL_H)
    assert got["p_ks"] == pytest.approx(np.mean(null >= d_obs - 1e-12), rel=1e-9)


def test_wasserstein_equal_sizes_is_mean_gap_of_sorted_samples():
    a = np.array([3.0, 1, 4, 1, 5, 9, 2, 6])
    b = np.array([2.0, 7, 1, 8, 2, 8, 1, 8])
    # sorted a: 1 1 2 3 4 5 6 9; sorted b: 1 1 2 2 7 8 8 8 → gaps 0 0 0 1 3 3 2 1 → mean 10/8.
    assert compare_samples(a, b)["wasserstein"] == pytest.approx(1.25, abs=1e-12)
    assert compare_samples(a, b)["wasserstein"] == pytest.approx(np.abs(np.sort(a) - np.sort(b)).mean())


def test_variance_ratio_and_brown_forsythe_by_hand(res):
    assert res["variance_ratio"] == pytest.approx(COHORT.var(ddof=1) / HUMAN.var(ddof=1), rel=1e-12)
    # Brown–Forsythe: one-way ANOVA F on |x − median| of each group.
    groups = [np.abs(COHORT - np.median(COHORT)), np.abs(HUMAN - np.median(HUMAN))]
    grand = np.concatenate(groups).mean()
    n = sum(g.size for g in groups)
    between = sum(g.size * (g.mean() - grand) ** 2 for g in groups) / (2 - 1)
    within = sum(((g - g.mean()) ** 2).sum() for g in groups) / (n - 2)
    assert res["bf_stat"] == pytest.approx(between / within, rel=1e-12)
    assert res["p_bf"] == pytest.approx(stats.f.sf(between / within, 1, n - 2), rel=1e-9)


def test_tucker_phi_by_hand():
    # Σab = .48 + .49 + .48 = 1.45; Σa² = Σb² = .64 + .49 + .36 = 1.49 → φ = 1.45 / 1.49.
    assert tucker_phi(np.array([0.8, 0.7, 0.6]), np.array([0.6, 0.7, 0.8])) == pytest.approx(1.45 / 1.49)
    assert tucker_phi(np.array([0.5, 0.4]), np.array([-0.5, -0.4])) == pytest.approx(-1.0)
    assert tucker_phi(np.array([0.5, 0.4]), np.array([1.0, 0.8])) == pytest.approx(1.0)  # scale-free
    assert np.isnan(tucker_phi(np.zeros(3), np.ones(3)))
    assert np.isnan(tucker_phi(np.array([0.5, np.nan]), np.ones(2)))
    with pytest.raises(ValueError):
        tucker_phi(np.ones(2), np.ones(3))


def test_one_factor_loadings_are_sign_aligned():
    rng = np.random.default_rng(5)
    f = rng.standard_normal(2000)
    items = pd.DataFrame(0.6 * f[:, None] + 0.8 * rng.standard_normal((2000, 5)), columns=list("pqrst"))
    for data in (items, -items):                       # the factor's sign is arbitrary; ours is not
        loadings = one_factor_loadings(data)
        assert list(loadings.index) == list("pqrst")
        assert loadings.to_numpy() == pytest.approx(np.full(5, 0.6), abs=0.06)


@pytest.mark.filterwarnings("error")
def test_constant_cohort_does_not_crash_or_warn():
    got = compare_samples(np.full(25, 4.0), HUMAN)
    assert got["sd_cohort"] == 0 and got["variance_ratio"] == 0
    # A constant cohort still has a well-defined Welch test: only the human variance is left.
    n2 = HUMAN.size
    assert got["t"] == pytest.approx((4.0 - HUMAN.mean()) / np.sqrt(HUMAN.var(ddof=1) / n2))
    assert got["df"] == pytest.approx(n2 - 1)
    assert np.isfinite([got["g"], got["u"], got["ks"], got["wasserstein"], got["bf_stat"]]).all()
    both = compare_samples(np.full(10, 4.0), np.full(12, 4.0))
    for key in ("t", "df", "p", "g", "g_low", "g_high", "variance_ratio", "bf_stat", "p_bf"):
        assert np.isnan(both[key]), key
    assert both["wasserstein"] == 0 and both["ks"] == 0
    empty = compare_samples(np.array([np.nan]), HUMAN)
    assert empty["n_cohort"] == 0 and np.isnan(empty["mean_cohort"])


def _mini_answers(n: int, seed: int, loading: float = 1.3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Raw answers on the 1–7 mini instrument from one factor; also the keyed values."""
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(n)
    keyed = pd.DataFrame(np.clip(np.rint(4 + loading * f[:, None] + rng.standard_normal((n, 4))), 1, 7),
                         columns=list("abcd"))
    raw = keyed.copy()
    raw[["a", "c"]] = 8 - raw[["a", "c"]]                # a and c are reverse-keyed
    return raw, keyed


@pytest.mark.filterwarnings("error")
def test_compare_with_humans_scores_keys_and_compares_every_subscale():
    mini = load_instrument(MINI)
    cohort_raw, cohort_keyed = _mini_answers(300, seed=1, loading=1.0)
    human_raw, human_keyed = _mini_answers(500, seed=2)
    human_raw["age"] = "30"                              # extra columns are ignored
    table = compare_with_humans({"mini": cohort_raw}, {"mini": human_raw, "other": human_raw}, {"mini": mini})
    assert list(table.columns) == COMPARISON_COLUMNS
    assert list(table["subscale"]) == ["X", "Y", "Z"] and set(table["instrument"]) == {"mini"}
    z = table.set_index("subscale").loc["Z"]
    expected = compare_samples(score_wide(mini, cohort_raw)["Z"], score_wide(mini, human_raw)["Z"])
    assert z[SAMPLE_KEYS].to_dict() == pytest.approx(expected)
    assert z["mean_human"] == pytest.approx(human_keyed.sum(axis=1).mean())   # keyed sum of 4 items
    assert z["alpha_cohort"] == pytest.approx(cronbach_alpha(cohort_keyed)[0])
    assert z["alpha_diff"] == pytest.approx(z["alpha_cohort"] - z["alpha_human"])
    assert z["phi"] > 0.95                               # same one-factor structure in both samples
    assert np.isnan(table.set_index("subscale").loc["X", "phi"])   # 2 items: no one-factor model


@pytest.mark.filterwarnings("error")
def test_compare_with_humans_constant_answer_cohort():
    mini = load_instrument(MINI)
    human_raw, _ = _mini_answers(200, seed=4)
    same = pd.DataFrame(4.0, index=range(40), columns=list("abcd"))
    table = compare_with_humans({"mini": same}, {"mini": human_raw}, {"mini": mini}).set_index("subscale")
    assert table[["alpha_cohort", "alpha_diff", "phi"]].isna().all().all()
    assert table["alpha_human"].notna().all()
    assert (table["sd_cohort"] == 0).all() and table["t"].notna().all() and table["ks"].notna().all()
