"""Reliability: α, ω, item–total statistics, retest ICC and the per-subscale table.

Every expectation comes from somewhere other than the code under test: a hand formula written out
here, a published table (Shrout & Fleiss 1979), the documented examples of pingouin, or the
population value of a simulated model.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats

import psyq.analysis.statistics.reliability as rel
from psyq import load_instrument

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"

# 6 respondents × 4 items on a 1–5 scale.
TABLE = pd.DataFrame({
    "i1": [4, 3, 5, 2, 4, 1],
    "i2": [5, 3, 4, 2, 3, 2],
    "i3": [4, 2, 5, 3, 4, 1],
    "i4": [3, 3, 4, 1, 5, 2],
}, dtype=float)


def hand_alpha(table: pd.DataFrame) -> float:
    """k/(k−1) · (1 − Σσ²ᵢ/σ²ₜ) with sample variances (ddof = 1)."""
    x = table.to_numpy(dtype=float)
    k = x.shape[1]
    item_var = x.var(axis=0, ddof=1).sum()
    total_var = x.sum(axis=1).var(ddof=1)
    return k / (k - 1) * (1 - item_var / total_var)


def test_alpha_matches_the_hand_formula():
    # Item variances: i1 65/30 = 2.1667, i2 41/30 = 1.3667, i3 2.1667, i4 2.0 → Σ = 7.7;
    # totals 16, 11, 18, 8, 16, 6 (mean 12.5) → σ²ₜ = 119.5/5 = 23.9;
    # α = 4/3 · (1 − 7.7/23.9) = 0.903766.
    alpha, low, high = rel.cronbach_alpha(TABLE)
    assert alpha == pytest.approx(hand_alpha(TABLE), abs=1e-12)
    assert alpha == pytest.approx(0.903766, abs=1e-6)
    assert low < alpha < high


def test_alpha_reproduces_pingouins_documented_examples():
    # pingouin.cronbach_alpha docstring (0.7): on data without missing values, listwise deletion
    # changes nothing, so the documented values apply unchanged.
    wide = pg.read_dataset("cronbach_wide_missing")
    alpha, low, high = rel.cronbach_alpha(wide.fillna(wide.median()))
    assert alpha == pytest.approx(0.7380191693290734, abs=1e-12)
    assert (low, high) == pytest.approx((0.447, 0.911), abs=1e-9)

    likert = pg.read_dataset("cronbach_alpha").pivot(index="Subj", columns="Items", values="Scores")
    alpha, low, high = rel.cronbach_alpha(likert)
    assert alpha == pytest.approx(0.5917188485995826, abs=1e-12)
    assert (low, high) == pytest.approx((0.195, 0.84), abs=1e-9)


def test_alpha_is_listwise_with_the_complete_case_n_in_feldts_interval():
    wide = pg.read_dataset("cronbach_wide_missing")
    alpha, low, high = rel.cronbach_alpha(wide)
    # Documented listwise α (R: psych::alpha(data, use = "complete.obs")).
    assert alpha == pytest.approx(0.8016949152542373, abs=1e-12)
    # Feldt's interval by hand, with n = complete rows (pingouin's own listwise option would use
    # the n before deletion and print [0.581, 0.933]).
    n, k = wide.dropna().shape
    df1, df2 = n - 1, (n - 1) * (k - 1)
    hand_low = 1 - (1 - alpha) * stats.f.ppf(0.975, df1, df2)
    hand_high = 1 - (1 - alpha) * stats.f.ppf(0.025, df1, df2)
    assert n < len(wide)
    assert (low, high) == pytest.approx((hand_low, hand_high), abs=5e-4)  # pingouin rounds to 3 dp


@pytest.mark.parametrize("confidence", [0.90, 0.99])
def test_alpha_interval_has_the_coverage_asked_for(confidence):
    """Feldt's interval at a coverage other than 95 %, against Feldt's F-based interval written out
    here with scipy.stats.f (Feldt, Woodruff & Salih, 1987): with γ = 1 − confidence,
    [1 − (1 − α)·F(1 − γ/2; n − 1, (n − 1)(k − 1)), 1 − (1 − α)·F(γ/2; n − 1, (n − 1)(k − 1))]."""
    alpha, low, high = rel.cronbach_alpha(TABLE, confidence=confidence)
    n, k = TABLE.shape
    df1, df2 = n - 1, (n - 1) * (k - 1)

    def feldt(coverage: float) -> tuple[float, float]:
        tail = (1 - coverage) / 2
        return (1 - (1 - alpha) * stats.f.ppf(1 - tail, df1, df2), 1 - (1 - alpha) * stats.f.ppf(tail, df1, df2))

    assert (low, high) == pytest.approx(feldt(confidence), abs=5e-4)   # pingouin rounds to 3 dp
    # The 95 % interval is far enough from this one that returning it instead cannot pass.
    low95, high95 = feldt(0.95)
    assert abs(low - low95) > 0.01 and abs(high - high95) > 0.002


@pytest.mark.filterwarnings("error")
def test_alpha_degenerate_tables_give_nan_without_warnings():
    assert np.isnan(rel.cronbach_alpha(pd.DataFrame({"a": [3.0] * 5, "b": [4.0] * 5}))).all()
    # Constant totals although items vary: σ²ₜ = 0.
    assert np.isnan(rel.cronbach_alpha(pd.DataFrame({"a": [1.0, 2, 3], "b": [3.0, 2, 1]}))).all()
    assert np.isnan(rel.cronbach_alpha(TABLE.iloc[:1])).all()          # one respondent
    assert np.isnan(rel.cronbach_alpha(TABLE[["i1"]])).all()           # one item
    # A constant item alone leaves α defined: it adds 0 to Σσ²ᵢ.
    with_constant = TABLE.assign(i5=3.0)
    assert rel.cronbach_alpha(with_constant)[0] == pytest.approx(hand_alpha(with_constant), abs=1e-12)


def simulated_one_factor(n: int, k: int, loading: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    factor = rng.standard_normal(n)
    noise = rng.standard_normal((n, k)) * np.sqrt(1 - loading**2)
    return pd.DataFrame(loading * factor[:, None] + noise, columns=[f"x{j}" for j in range(k)])


# Population ω for λ = .7 on 6 items, ψ = 1 − .49 = .51: (4.2)² / ((4.2)² + 3.06) = 0.85217.
POPULATION_OMEGA = 4.2**2 / (4.2**2 + 6 * 0.51)
# Tolerance: the items are τ-equivalent, so ω = α, whose asymptotic SE under normality with equal
# covariances is √(2k(1−α)² / ((k−1)n)) (van Zyl, Neudecker & Nel, 2000, Psychometrika 65):
# √(2·6·0.148² / (5·5000)) = 0.0032. 0.015 is more than 4.5 SE.
OMEGA_TOLERANCE = 0.015


def test_omega_recovers_the_population_value_of_a_simulated_one_factor_model():
    assert POPULATION_OMEGA == pytest.approx(0.85217, abs=1e-5)
    items = simulated_one_factor(5000, 6, 0.7, seed=20260101)
    assert rel.mcdonald_omega(items) == pytest.approx(POPULATION_OMEGA, abs=OMEGA_TOLERANCE)
    fit = rel.one_factor(items)
    assert (fit["method"] == "ml").all()
    assert fit["loading"].to_numpy() == pytest.approx(np.full(6, 0.7), abs=0.05)


def test_omega_falls_back_to_principal_axis_when_ml_fails(monkeypatch):
    items = simulated_one_factor(5000, 6, 0.7, seed=7)
    real_fit = rel._fit_factor
    monkeypatch.setattr(rel, "_fit_factor", lambda x, method: None if method == "ml" else real_fit(x, method))
    assert (rel.one_factor(items)["method"] == "pa").all()
    assert rel.mcdonald_omega(items) == pytest.approx(POPULATION_OMEGA, abs=OMEGA_TOLERANCE)


def simulated_loadings(n: int, loadings: list[float], seed: int) -> pd.DataFrame:
    """One-factor data with a loading per item (negative: a reverse-keyed item left unreversed)."""
    lam = np.asarray(loadings)
    rng = np.random.default_rng(seed)
    factor = rng.standard_normal(n)
    noise = rng.standard_normal((n, lam.size)) * np.sqrt(1 - lam**2)
    return pd.DataFrame(factor[:, None] * lam + noise, columns=[f"x{j}" for j in range(lam.size)])


def iterated_principal_axis(x: np.ndarray, tol: float = 1e-10, max_iter: int = 5000) -> np.ndarray:
    """One-factor iterated principal axis factoring written out here (Harman, 1976, ch. 8):
    communalities start at the squared multiple correlations 1 − 1/diag(R⁻¹), replace the diagonal
    of R, and λ = √w·v of the largest eigenpair gives the next communalities λ², until they stop
    changing. The sign of v (so of λ) is whatever the eigensolver returns."""
    r = np.corrcoef(x, rowvar=False)
    h = 1 - 1 / np.diag(np.linalg.inv(r))
    for _ in range(max_iter):
        reduced = r.copy()
        np.fill_diagonal(reduced, h)
        w, v = np.linalg.eigh(reduced)
        lam = v[:, -1] * np.sqrt(w[-1])
        if np.max(np.abs(lam**2 - h)) < tol:
            break
        h = lam**2
    return lam


def hand_phi(a: np.ndarray, b: np.ndarray) -> float:
    """Tucker's congruence coefficient Σab / √(Σa²·Σb²)."""
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


# Three items loading .6 and one loading −.95 (a reverse-keyed item not reversed).
MIXED = np.array([0.6, 0.6, 0.6, -0.95])


def test_principal_axis_fallback_aligns_loading_signs_on_mixed_sign_items():
    # 40 respondents: the −.95 item's sample loading reaches −1, ML runs into this Heywood case
    # (uniqueness → 0) and reports no convergence, so one_factor falls back to principal axis on
    # its own: nothing is patched.
    items = simulated_loadings(40, MIXED, seed=41)
    fit = rel.one_factor(items)
    assert (fit["method"] == "pa").all()
    loading = fit["loading"].to_numpy()
    # The same solution as principal axis written out here, up to sign …
    assert np.abs(loading) == pytest.approx(np.abs(iterated_principal_axis(items.to_numpy())), abs=1e-4)
    # … and statsmodels' raw principal-axis loadings come out with the opposite orientation here
    # (sum < 0), so this data needs the alignment (were this to change, the test would no longer
    # test it and says so).
    assert rel._fit_factor(items.to_numpy(), "pa")[0].sum() < 0
    # Aligned: the loadings sum to ≥ 0, so the three .6 items load positively and the reversed
    # item negatively, as in the population, and φ with the population loadings is high.
    assert loading.sum() >= 0
    assert np.sign(loading).tolist() == np.sign(MIXED).tolist()
    assert hand_phi(loading, MIXED) > 0.95


def test_maximum_likelihood_loadings_are_sign_aligned_too():
    # ML's orientation is arbitrary as well: on these 500 respondents it returns the three
    # positive items negative (raw sum < 0); aligned, the signs are the population's.
    population = np.array([0.7, 0.7, -0.7, 0.7])
    items = simulated_loadings(500, population, seed=0)
    fit = rel.one_factor(items)
    assert (fit["method"] == "ml").all()
    assert rel._fit_factor(items.to_numpy(), "ml")[0].sum() < 0
    assert np.sign(fit["loading"]).tolist() == np.sign(population).tolist()
    assert hand_phi(fit["loading"].to_numpy(), population) > 0.95


@pytest.mark.filterwarnings("error")
def test_omega_is_nan_for_constant_items_too_few_items_or_improper_solutions():
    assert np.isnan(rel.mcdonald_omega(TABLE.assign(i5=3.0)))       # a constant item
    assert np.isnan(rel.mcdonald_omega(TABLE[["i1", "i2"]]))         # 2 items: not identified
    assert np.isnan(rel.mcdonald_omega(pd.DataFrame({"a": [2.0] * 9, "b": [2.0] * 9, "c": [5.0] * 9})))
    # 4 respondents, 3 items: ML does not converge and principal axis gives a Heywood case
    # (communality > 1), so no proper solution exists.
    tiny = pd.DataFrame({"a": [1, 2, 3, 4], "b": [2, 2, 3, 5], "c": [1, 3, 3, 4]}, dtype=float)
    assert np.isnan(rel.mcdonald_omega(tiny))


def test_item_total_by_hand():
    got = rel.item_total(TABLE).set_index("item_id")
    assert list(got.columns) == ["r_corrected", "alpha_if_deleted", "note"]
    assert list(got.index) == ["i1", "i2", "i3", "i4"]
    assert (got["note"] == "").all()
    rest = TABLE[["i1", "i3", "i4"]].sum(axis=1)
    assert got.loc["i2", "r_corrected"] == pytest.approx(np.corrcoef(TABLE["i2"], rest)[0, 1], abs=1e-12)
    assert got.loc["i2", "alpha_if_deleted"] == pytest.approx(hand_alpha(TABLE[["i1", "i3", "i4"]]), abs=1e-12)


@pytest.mark.filterwarnings("error")
def test_item_total_constant_item_gives_nan_correlation():
    got = rel.item_total(TABLE.assign(i5=3.0)).set_index("item_id")
    assert np.isnan(got.loc["i5", "r_corrected"]) and got.loc["i5", "note"] == "item without variance"
    assert got.loc["i5", "alpha_if_deleted"] == pytest.approx(hand_alpha(TABLE), abs=1e-12)
    assert got.loc[["i1", "i2", "i3", "i4"], "r_corrected"].notna().all()


def test_item_total_drops_incomplete_rows():
    holes = TABLE.copy()
    holes.loc[0, "i3"] = np.nan
    pd.testing.assert_frame_equal(rel.item_total(holes), rel.item_total(TABLE.iloc[1:]))


# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SF_RATINGS = np.array([
    [9, 2, 5, 8],
    [6, 1, 3, 2],
    [8, 4, 6, 8],
    [7, 1, 2, 6],
    [10, 5, 6, 9],
    [6, 2, 4, 7],
], dtype=float)


def to_long(ratings: np.ndarray) -> pd.DataFrame:
    n, k = ratings.shape
    return pd.DataFrame({"respondent_id": np.repeat(np.arange(n), k), "repeat": np.tile(np.arange(k), n),
                         "score": ratings.ravel()})


def hand_icc(x: np.ndarray) -> dict:
    """Two-way ANOVA mean squares and the Shrout & Fleiss ICC(2,1), ICC(3,1) with ICC(3,1)'s CI."""
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_err = ((x - grand) ** 2).sum() - ss_rows - ss_cols
    bms, jms, ems = ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))
    f0 = bms / ems
    fl = f0 / stats.f.ppf(0.975, n - 1, (n - 1) * (k - 1))
    fu = f0 * stats.f.ppf(0.975, (n - 1) * (k - 1), n - 1)
    return {
        "icc2": (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n),
        "icc3": (bms - ems) / (bms + (k - 1) * ems),
        "f": f0,
        "icc3_ci": ((fl - 1) / (fl + k - 1), (fu - 1) / (fu + k - 1)),
    }


def test_icc_against_a_hand_two_way_anova_and_shrout_fleiss_table_4():
    got = rel.test_retest_icc(to_long(SF_RATINGS)).set_index("type")
    assert list(got.index) == ["ICC2", "ICC3"]
    assert list(got.reset_index().columns) == rel.ICC_COLUMNS
    hand = hand_icc(SF_RATINGS)
    assert got.loc["ICC2", "icc"] == pytest.approx(hand["icc2"], abs=1e-12)
    assert got.loc["ICC3", "icc"] == pytest.approx(hand["icc3"], abs=1e-12)
    assert got.loc["ICC3", "f"] == pytest.approx(hand["f"], abs=1e-9)
    assert (got.loc["ICC3", "ci_low"], got.loc["ICC3", "ci_high"]) == pytest.approx(hand["icc3_ci"], abs=1e-9)
    # Published (Table 4): ICC(2,1) = .29, ICC(3,1) = .71.
    assert round(got.loc["ICC2", "icc"], 2) == 0.29
    assert round(got.loc["ICC3", "icc"], 2) == 0.71
    assert (got["n"] == 6).all() and (got["k"] == 4).all()
    assert (got["df1"] == 5).all() and (got["df2"] == 15).all()


def test_icc_reproduces_pingouins_documented_wine_example():
    # pingouin.intraclass_corr docstring: ICC(A,1) 0.728 [0.43, 0.93], ICC(C,1) 0.729 [0.43, 0.93].
    wine = pg.read_dataset("icc").rename(columns={"Wine": "respondent_id", "Judge": "repeat", "Scores": "score"})
    got = rel.test_retest_icc(wine).set_index("type")
    assert got.loc["ICC2", "icc"] == pytest.approx(0.728, abs=5e-4)
    assert got.loc["ICC3", "icc"] == pytest.approx(0.729, abs=5e-4)
    for row in ("ICC2", "ICC3"):
        assert (got.loc[row, "ci_low"], got.loc[row, "ci_high"]) == pytest.approx((0.43, 0.93), abs=5e-3)


def test_icc_drops_respondents_missing_a_repeat():
    long = to_long(SF_RATINGS)
    extra = pd.DataFrame({"respondent_id": [99, 99], "repeat": [0, 1], "score": [3.0, 4.0]})
    got = rel.test_retest_icc(pd.concat([long, extra])).set_index("type")
    assert (got["n"] == 6).all()
    assert got.loc["ICC3", "icc"] == pytest.approx(hand_icc(SF_RATINGS)["icc3"], abs=1e-12)


@pytest.mark.filterwarnings("error")
def test_icc_degenerate_scores_do_not_warn():
    same = rel.test_retest_icc(to_long(np.full((5, 3), 12.0)))
    assert same[["icc", "f", "p", "ci_low", "ci_high"]].isna().all().all()
    assert (~same["estimable"]).all() and same["note"].str.contains("every score is equal").all()
    one = rel.test_retest_icc(to_long(SF_RATINGS[:1]))
    assert one["icc"].isna().all() and (one["n"] == 1).all()
    assert one["note"].str.contains("1 respondent").all()
    assert rel.test_retest_icc(to_long(SF_RATINGS))["estimable"].all()
    with pytest.raises(ValueError, match="more than one row"):
        rel.test_retest_icc(pd.concat([to_long(SF_RATINGS)] * 2))


@pytest.mark.filterwarnings("error")
def test_identical_repeats_give_no_icc_and_say_why():
    # Temperature-0 respondents: identical score on every repeat, different between respondents.
    # The two-way ANOVA's error mean square is 0, so F = MS_rows / 0 is undefined (pingouin prints a
    # number like -5e15 from floating-point noise); the row must say so instead of showing it.
    perfect = rel.test_retest_icc(to_long(np.repeat(np.array([[10.0], [12], [15], [9]]), 2, axis=1)))
    assert perfect[["icc", "f", "df1", "df2", "p", "ci_low", "ci_high"]].isna().all().all()
    assert (~perfect["estimable"]).all()
    assert perfect["note"].str.contains("same on every repeat").all()
    # A shift common to all respondents (repeat 2 = repeat 1 + 1) also leaves no residual variance.
    shifted = np.array([[10.0, 11], [12, 13], [15, 16], [9, 10]])
    assert (~rel.test_retest_icc(to_long(shifted))["estimable"]).all()
    # One respondent changing by one point is enough for an estimable ICC.
    shifted[0, 1] = 12
    assert rel.test_retest_icc(to_long(shifted))["estimable"].all()


@pytest.mark.filterwarnings("error")
def test_reliability_table_says_why_alpha_or_omega_is_missing():
    mini = load_instrument(MINI)
    # Every respondent answers 4 everywhere: totals constant → α not estimable; items constant → ω too.
    flat = pd.DataFrame(4.0, index=range(6), columns=["a", "b", "c", "d"])
    got = rel.reliability_table({"mini": flat}, {"mini": mini}).set_index("subscale")
    assert got["alpha"].isna().all()
    assert got.loc["Z", "note"] == ("α not estimable: every respondent has the same total (no variance); "
                                    "ω not estimable: item(s) without variance: a, b, c, d")
    assert "needs at least 3" in got.loc["X", "note"]


@pytest.mark.filterwarnings("error")
def test_reliability_table_keys_items_and_covers_every_subscale():
    mini = load_instrument(MINI)   # a (reversed; X, Z), b (X, Y, Z), c (reversed; Y, Z), d (Y, Z); scale 1–7
    rng = np.random.default_rng(3)
    factor = rng.standard_normal(400)
    keyed = np.clip(np.rint(4 + 1.3 * factor[:, None] + rng.standard_normal((400, 4))), 1, 7)
    raw = pd.DataFrame(keyed, columns=["a", "b", "c", "d"])
    raw["a"] = 8 - raw["a"]                                # store reversed items as answered
    raw["c"] = 8 - raw["c"]
    raw.loc[0, "d"] = np.nan                               # respondent 0 lacks d: out of Y and Z only
    table = rel.reliability_table({"mini": raw}, {"mini": mini})
    assert list(table.columns) == rel.RELIABILITY_COLUMNS
    assert list(table["subscale"]) == ["X", "Y", "Z"]
    got = table.set_index("subscale")
    assert list(got["n"]) == [400, 399, 399] and list(got["k"]) == [2, 3, 4]
    hand_keyed = pd.DataFrame(keyed, columns=["a", "b", "c", "d"]).iloc[1:]
    assert got.loc["Z", "alpha"] == pytest.approx(hand_alpha(hand_keyed), abs=1e-12)
    assert got.loc["Y", "alpha"] == pytest.approx(hand_alpha(hand_keyed[["b", "c", "d"]]), abs=1e-12)
    assert got.loc["Z", "alpha"] > 0.7 and got.loc["Z", "omega"] >= got.loc["Z", "alpha"] - 0.01
    assert np.isnan(got.loc["X", "omega"])                 # 2 items
    assert got.loc["X", "note"].startswith("ω not estimable: 2 item(s)") and got.loc["Z", "note"] == ""
    assert got.loc["Z", "alpha_low"] < got.loc["Z", "alpha"] < got.loc["Z", "alpha_high"]
