"""Graded response model, test information and DIF (psyq.analysis.statistics.irt): parameter recovery on
simulated data, a published ltm fit reproduced, independent computations of the likelihood, the
information and the DIF tests, and the cases that are not estimable."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from scipy import integrate, stats
from statsmodels.miscmodels.ordinal_model import OrderedModel
from statsmodels.stats.multitest import multipletests

from psyq.analysis.statistics import irt
from psyq.analysis.report import plots

LEVELS5 = [0, 1, 2, 3, 4]


def simulate_grm(rng: np.random.Generator, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Answers 0..K−1 of a GRM, P(X ≥ k | θ) = logistic(a (θ − b_k)), written out independently of irt.py."""
    above = 1 / (1 + np.exp(-a[None, :, None] * (theta[:, None, None] - b[None, :, :])))
    return (rng.random((len(theta), len(a), 1)) < above).sum(axis=2)


def frame(x: np.ndarray, prefix: str = "q") -> pd.DataFrame:
    return pd.DataFrame(x, columns=[f"{prefix}{j}" for j in range(x.shape[1])])


TRUE_A = np.array([0.8, 1.1, 1.4, 1.7, 2.0, 2.25, 2.5])
TRUE_B = np.array([np.array([-2.0, -0.8, 0.3, 1.4]) + s for s in np.linspace(-0.6, 0.6, 7)])


@pytest.fixture(scope="module")
def recovery():
    rng = np.random.default_rng(20240611)
    data = frame(simulate_grm(rng, rng.standard_normal(2000), TRUE_A, TRUE_B))
    return data, irt.graded_response_model(data, list(data), LEVELS5)


def thresholds(fit: pd.DataFrame, prefix: str = "threshold_") -> np.ndarray:
    return fit[[f"{prefix}{k}" for k in range(1, 5)]].to_numpy(dtype=float)


# --------------------------------------------------------------------------------------------
# graded_response_model


def test_recovers_known_parameters(recovery):
    data, fit = recovery
    assert list(fit.columns) == ["item", "discrimination", "threshold_1", "threshold_2", "threshold_3", "threshold_4",
                                 "se_discrimination", "se_threshold_1", "se_threshold_2", "se_threshold_3",
                                 "se_threshold_4", "n", "estimable", "note"]
    assert fit["estimable"].all() and (fit["n"] == 2000).all()
    a, b = fit["discrimination"].to_numpy(), thresholds(fit)
    assert np.corrcoef(TRUE_A, a)[0, 1] >= 0.95
    assert np.corrcoef(TRUE_B.ravel(), b.ravel())[0, 1] >= 0.95
    assert np.mean(np.abs(a - TRUE_A)) < 0.08
    assert np.mean(np.abs(b - TRUE_B)) < 0.08
    assert fit.attrs["n_respondents"] == 2000 and fit.attrs["converged"]
    assert fit.attrs["quadrature_points"] == irt.QUADRATURE_POINTS and np.isfinite(fit.attrs["log_likelihood"])


def test_standard_errors_cover_the_true_values(recovery):
    # 35 parameters: with honest SEs about 95 % of the 95 % intervals hold the true value (under 80 %
    # has probability < .001 for 35 independent intervals); and the SEs are not inflated either.
    _, fit = recovery
    est = np.concatenate([fit["discrimination"], thresholds(fit).ravel()])
    se = np.concatenate([fit["se_discrimination"], thresholds(fit, "se_threshold_").ravel()])
    z = (est - np.concatenate([TRUE_A, TRUE_B.ravel()])) / se
    assert np.mean(np.abs(z) < 1.96) >= 0.80
    assert 0.6 < np.sqrt(np.mean(z ** 2)) < 1.5


def test_standard_errors_match_the_spread_over_replications():
    # Smaller replicate study (3 items, 400 respondents, 12 samples): the mean SE of a against
    # the empirical SD of â.
    a, b = np.array([1.0, 1.5, 2.0]), np.array([[-1.0, 0.0, 1.0]] * 3)
    est, ses = [], []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        fit = irt.graded_response_model(frame(simulate_grm(rng, rng.standard_normal(400), a, b)),
                                        ["q0", "q1", "q2"], [0, 1, 2, 3], quadrature_points=21)
        est.append(fit["discrimination"].to_numpy())
        ses.append(fit["se_discrimination"].to_numpy())
    ratio = np.mean(ses, axis=0) / np.std(est, axis=0, ddof=1)
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio


# Bock & Lieberman (1970), LSAT section 6: counts of the 32 answer patterns of 5 items (pattern i
# is the binary expansion of i, item 1 first). The same data as ltm's LSAT.
LSAT6_COUNTS = [3, 6, 2, 11, 1, 1, 3, 4, 1, 8, 0, 16, 0, 3, 2, 15, 10, 29, 14, 81, 3, 28, 15, 80, 16, 56, 21, 173,
                11, 61, 28, 298]
# summary(ltm(LSAT ~ z1, IRT.param = TRUE)), ltm 2PL by MML with 21 Gauss–Hermite points, as printed
# with the package's LSAT example (Rizopoulos 2006, J Stat Softw 17(5)): value (std.err).
LTM_DIFFICULTY = [(-3.3597, 0.8669), (-1.3696, 0.3073), (-0.2799, 0.0997), (-1.8659, 0.4341), (-3.1236, 0.8700)]
LTM_DISCRIMINATION = [(0.8254, 0.2581), (0.7229, 0.1867), (0.8905, 0.2326), (0.6886, 0.1852), (0.6575, 0.2100)]
LTM_LOGLIK = -2466.653


def test_reproduces_ltm_on_lsat6():
    # Two categories: the GRM is the 2PL, so ltm's printed fit checks a, b, their SEs and log L.
    patterns = np.array([[int(c) for c in format(i, "05b")] for i in range(32)])
    data = frame(np.repeat(patterns, LSAT6_COUNTS, axis=0), prefix="item")
    fit = irt.graded_response_model(data, list(data), [0, 1], quadrature_points=21)
    assert fit["estimable"].all()
    # ltm stopped at max |gradient| 0.024 (printed); ours is at < 1e-2, so agreement to ~3 decimals.
    np.testing.assert_allclose(fit["threshold_1"], [v for v, _ in LTM_DIFFICULTY], atol=0.005)
    np.testing.assert_allclose(fit["se_threshold_1"], [s for _, s in LTM_DIFFICULTY], atol=0.005)
    np.testing.assert_allclose(fit["discrimination"], [v for v, _ in LTM_DISCRIMINATION], atol=0.002)
    np.testing.assert_allclose(fit["se_discrimination"], [s for _, s in LTM_DISCRIMINATION], atol=0.002)
    assert fit.attrs["log_likelihood"] == pytest.approx(LTM_LOGLIK, abs=0.001)


def brute_force_loglik(data: pd.DataFrame, fit: pd.DataFrame) -> float:
    """Σ_i log ∫ Π_(observed j) P(x_ij | θ) φ(θ) dθ by Simpson's rule on 4,001 points of [−10, 10]
    (not Gauss–Hermite: an independent integration)."""
    grid = np.linspace(-10, 10, 4001)
    a = fit["discrimination"].to_numpy()
    b = fit[["threshold_1", "threshold_2"]].to_numpy(dtype=float)
    x = data.to_numpy(dtype=float)
    integrand = np.tile(stats.norm.pdf(grid), (len(x), 1))
    for j in range(x.shape[1]):
        cum = np.vstack([np.ones_like(grid), 1 / (1 + np.exp(-a[j] * (grid[None, :] - b[j][:, None]))),
                         np.zeros_like(grid)])
        answered = ~np.isnan(x[:, j])
        k = x[answered, j].astype(int)
        integrand[answered] *= cum[k] - cum[k + 1]
    return float(np.sum(np.log(integrate.simpson(integrand, x=grid, axis=1))))


def test_log_likelihood_equals_brute_force_integration_with_missing_answers():
    rng = np.random.default_rng(3)
    x = simulate_grm(rng, rng.standard_normal(80), np.array([1.0, 1.6, 2.2]), np.array([[-0.8, 0.6]] * 3)).astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    x[0] = np.nan                                                        # one respondent without answers
    data = frame(x)
    fit = irt.graded_response_model(data, list(data), [0, 1, 2], quadrature_points=101)
    assert fit["estimable"].all()
    empty = np.isnan(x).all(axis=1)
    assert fit.attrs["n_dropped_empty"] == empty.sum() >= 1 and fit.attrs["n_respondents"] == 80 - empty.sum()
    assert fit.attrs["n_with_missing"] == int(np.isnan(x[~empty]).any(axis=1).sum()) > 0
    assert "missing answers" in fit["note"].iloc[0]
    kept = data.dropna(how="all")
    assert fit.attrs["log_likelihood"] == pytest.approx(brute_force_loglik(kept, fit), abs=1e-5)
    # ... and it is a maximum: moving any estimate lowers the brute-force likelihood.
    best = brute_force_loglik(kept, fit)
    for column in ("discrimination", "threshold_1"):
        for step in (-0.05, 0.05):
            moved = fit.copy()
            moved.loc[1, column] += step
            assert brute_force_loglik(kept, moved) < best


def test_recovery_with_answers_missing_at_random(recovery):
    data, full = recovery
    rng = np.random.default_rng(9)
    holey = data.astype(float).mask(rng.random(data.shape) < 0.2)
    fit = irt.graded_response_model(holey, list(holey), LEVELS5)
    assert fit["estimable"].all() and fit.attrs["n_with_missing"] > 1500
    assert np.corrcoef(TRUE_A, fit["discrimination"])[0, 1] >= 0.95
    assert np.mean(np.abs(thresholds(fit) - TRUE_B)) < 0.1
    assert (fit["se_discrimination"] > full["se_discrimination"]).all()   # less information, wider SEs


def test_unused_category_thresholds_are_not_estimable_and_said(recovery):
    data, _ = recovery
    data = data.copy()
    data.loc[data["q0"] == 2, "q0"] = 3            # nobody chose level 2 on q0
    data.loc[data["q6"] == 4, "q6"] = 3            # nor the top level on q6
    fit = irt.graded_response_model(data, list(data), LEVELS5).set_index("item")
    assert fit["estimable"].all()
    assert np.isnan(fit.loc["q0", "threshold_2"]) and np.isnan(fit.loc["q0", "se_threshold_2"])
    assert np.isfinite(fit.loc["q0", ["threshold_1", "threshold_3", "threshold_4"]].astype(float)).all()
    assert "levels never chosen: [2]" in fit.loc["q0", "note"] and "threshold_2 not estimable" in fit.loc["q0", "note"]
    assert np.isnan(fit.loc["q6", "threshold_4"]) and "threshold_4 not estimable" in fit.loc["q6", "note"]
    assert fit.loc["q3", "note"] == ""
    # Answers 2 became 3: the boundary "≥ 3" of q0 is now the true one of "≥ 2".
    assert fit.loc["q0", "threshold_3"] == pytest.approx(TRUE_B[0, 1], abs=0.2)


def test_not_estimable_cases_give_no_numbers(recovery):
    data, _ = recovery
    numbers = ["discrimination", "threshold_1", "se_discrimination", "se_threshold_1"]

    few = irt.graded_response_model(data.head(40), list(data), LEVELS5)
    assert not few["estimable"].any() and few[numbers].isna().all().all()
    assert few["note"].str.contains("40 respondents").all()

    two = irt.graded_response_model(data, ["q0", "q1"], LEVELS5)
    assert not two["estimable"].any() and two["note"].str.contains("at least 3 needed").all()

    constant = data.assign(q2=3)
    fit = irt.graded_response_model(constant, list(constant), LEVELS5).set_index("item")
    assert not fit.loc["q2", "estimable"] and "constant item" in fit.loc["q2", "note"]
    assert fit.loc["q2", numbers].isna().all() and fit.drop(index="q2")["estimable"].all()

    # An item that splits the respondents perfectly on the others' total: its slope runs off.
    total = data[["q1", "q2", "q3", "q4"]].sum(axis=1)
    separated = data[["q1", "q2", "q3", "q4"]].assign(step=(total > total.median()).astype(int))
    fit = irt.graded_response_model(separated, list(separated), LEVELS5).set_index("item")
    assert not fit.loc["step", "estimable"] and "not estimable" in fit.loc["step", "note"]
    assert fit.loc["step", numbers].isna().all()

    with pytest.raises(ValueError, match="not among the levels"):
        irt.graded_response_model(data.assign(q0=7), list(data), LEVELS5)


# --------------------------------------------------------------------------------------------
# test_information


def test_information_equals_numerical_derivative_formula(recovery):
    _, fit = recovery
    theta = np.linspace(-3, 3, 13)
    curve = irt.test_information(fit, theta)
    assert curve.groupby("item").size().to_dict() == {**{f"q{j}": 13 for j in range(7)}, "test": 13}
    expected = np.zeros_like(theta)
    for row in fit.itertuples():
        b = np.array([row.threshold_1, row.threshold_2, row.threshold_3, row.threshold_4])

        def probs(t, a=row.discrimination, b=b):
            cum = np.concatenate([np.ones((1, len(t))), 1 / (1 + np.exp(-a * (t[None, :] - b[:, None]))),
                                  np.zeros((1, len(t)))])
            return cum[:-1] - cum[1:]
        h = 1e-5
        slope = (probs(theta + h) - probs(theta - h)) / (2 * h)      # numerical dP/dθ
        info = np.sum(slope ** 2 / probs(theta), axis=0)
        np.testing.assert_allclose(curve.query(f"item == '{row.item}'")["information"], info, rtol=1e-6)
        expected += info
    test = curve.query("item == 'test'")
    np.testing.assert_allclose(test["information"], expected, rtol=1e-6)
    np.testing.assert_allclose(test["se_theta"], 1 / np.sqrt(expected), rtol=1e-6)


def test_information_skips_items_that_are_not_estimable():
    params = pd.DataFrame({"item": ["x", "y"], "discrimination": [1.5, np.nan], "threshold_1": [0.0, np.nan],
                           "estimable": [True, False]})
    curve = irt.test_information(params, np.array([0.0, 1.0]))
    assert curve.attrs["left_out"] == ["y"] and set(curve["item"]) == {"test", "x"}
    np.testing.assert_allclose(curve.query("item == 'test'")["information"],
                               [1.5 ** 2 * 0.25, 1.5 ** 2 * stats.logistic.cdf(1.5) * stats.logistic.sf(1.5)])


# --------------------------------------------------------------------------------------------
# differential_item_functioning

DIF_ITEMS = [f"i{j}" for j in range(10)]


def dif_sample(seed: int, n: int = 1000) -> pd.DataFrame:
    """Two groups of n; the focal group is 0.5 SD higher on θ (impact, not DIF). Item i0: uniform
    DIF (focal thresholds 1.0 higher); item i1: non-uniform DIF (discrimination +1.5 in the
    reference group, −1.0 in the focal group: the item works the other way round, as a misread
    reverse-keyed item would). The other 8 items are the same in both groups."""
    rng = np.random.default_rng(seed)
    a = np.linspace(1.0, 2.0, 10)
    b = np.array([np.array([-1.5, -0.5, 0.5, 1.5]) + s for s in np.linspace(-0.5, 0.5, 10)])
    b[1] = [-0.45, -0.15, 0.15, 0.45]
    a_ref, a_foc, b_foc = a.copy(), a.copy(), b.copy()
    b_foc[0] += 1.0
    a_ref[1], a_foc[1] = 1.5, -1.0
    reference = simulate_grm(rng, rng.standard_normal(n), a_ref, b)
    focal = simulate_grm(rng, rng.standard_normal(n) + 0.5, a_foc, b_foc)
    data = frame(np.vstack([reference, focal]), prefix="i")
    data["sample"] = ["humans"] * n + ["cohort"] * n
    return data


def run_dif(data: pd.DataFrame, purify: bool = True) -> pd.DataFrame:
    return irt.differential_item_functioning(data, DIF_ITEMS, "sample", LEVELS5, focal="cohort", reference="humans",
                                             purify=purify)


def test_dif_finds_planted_items_and_few_false_positives():
    reps = 12
    power, false_flags, false_significant, unpurified_significant = [], 0, 0, 0
    for seed in range(reps):
        result = run_dif(dif_sample(seed)).set_index("item")
        assert list(result.reset_index().columns) == irt.DIF_COLUMNS and result["estimable"].all()
        power.append(bool(result.loc["i0", "flag"] and result.loc["i1", "flag"]))
        # the planted kinds are told apart: i0 mostly uniform, i1 mostly non-uniform
        assert result.loc["i0", "chi2_uniform"] > result.loc["i0", "chi2_nonuniform"]
        assert result.loc["i1", "chi2_nonuniform"] > result.loc["i1", "chi2_uniform"]
        clean = result.drop(index=["i0", "i1"])
        false_flags += int(clean["flag"].sum())
        false_significant += int((clean["p_holm"] < 0.05).sum())
        if seed < 3:   # without purification the contaminated score makes clean items significant
            raw = run_dif(dif_sample(seed), purify=False).set_index("item").drop(index=["i0", "i1"])
            unpurified_significant += int((raw["p_holm"] < 0.05).sum())
    assert np.mean(power) >= 0.9
    # Flags on 8 × 12 = 96 clean items: if each were flagged with probability α = .05 (Holm alone
    # keeps it below), more than this count has probability < .001.
    bound = stats.binom.ppf(0.999, 8 * reps, 0.05)
    assert false_flags <= bound
    print(f"power {np.mean(power):.2f}, false flags {false_flags}/{8 * reps}, "
          f"Holm-significant clean items {false_significant}/{8 * reps}, "
          f"without purification {unpurified_significant}/24")
    assert false_significant < unpurified_significant * reps / 3


@pytest.mark.parametrize("purify", [False, True])
def test_dif_tests_equal_statsmodels_ordered_logit_on_the_total_score(purify):
    data = dif_sample(0, n=300)
    result = run_dif(data, purify=purify).set_index("item")
    left_out = result.attrs["anchors_left_out"]
    assert left_out == (result.index[result["flag"]].tolist() if purify else [])
    assert ("i1" in left_out) == purify
    group = (data["sample"] == "cohort").to_numpy(dtype=float)
    for item in ("i0", "i1", "i5"):
        # total score, studied item included; purified: without the other flagged items
        score = data[[i for i in DIF_ITEMS if i == item or i not in left_out]].sum(axis=1).to_numpy(dtype=float)
        y = data[item].to_numpy()
        llf = [OrderedModel(y, np.column_stack(x), distr="logit").fit(method="bfgs", disp=False, maxiter=2000).llf
               for x in ([score], [score, group], [score, group, score * group])]
        assert result.loc[item, "chi2_uniform"] == pytest.approx(2 * (llf[1] - llf[0]), abs=2e-3)
        assert result.loc[item, "chi2_nonuniform"] == pytest.approx(2 * (llf[2] - llf[1]), abs=2e-3)
        assert result.loc[item, "chi2_dif"] == pytest.approx(2 * (llf[2] - llf[0]), abs=2e-3)
        assert result.loc[item, "p"] == pytest.approx(stats.chi2.sf(2 * (llf[2] - llf[0]), 2), rel=1e-2, abs=1e-12)
        counts = np.bincount(y)
        ll0 = np.sum(counts * np.log(counts / len(y)))
        nagelkerke = [(1 - np.exp(2 * (ll0 - ll) / len(y))) / (1 - np.exp(2 * ll0 / len(y))) for ll in llf]
        assert result.loc[item, "delta_r2"] == pytest.approx(nagelkerke[2] - nagelkerke[0], abs=1e-5)
        assert result.loc[item, "delta_r2_mcfadden"] == pytest.approx((llf[2] - llf[0]) / -ll0, abs=1e-5)


def test_holm_correction_and_flag_rule():
    result = run_dif(dif_sample(1, n=300))
    ok = result["estimable"].to_numpy()
    expected = multipletests(result.loc[ok, "p"], method="holm")[1]
    np.testing.assert_allclose(result.loc[ok, "p_holm"], expected, rtol=1e-10)
    assert (result["p_holm"] >= result["p"]).all()
    np.testing.assert_array_equal(result["flag"], (result["p_holm"] < 0.05) & (result["delta_r2"] >= 0.035))
    assert result.loc[ok, "effect"].tolist() == [jodoin_gierl(d) for d in result.loc[ok, "delta_r2"]]


def jodoin_gierl(delta_r2: float) -> str:
    """Jodoin & Gierl's (2001) bands of the Nagelkerke R² change, written out here: < .035
    negligible, .035 to .070 moderate, > .070 large."""
    if delta_r2 < 0.035:
        return "negligible"
    return "moderate" if delta_r2 <= 0.070 else "large"


def test_dif_effect_label_follows_each_items_nagelkerke_change():
    """One data set with an item in each band: i0 (uniform DIF) moderate, i1 (reversed
    discrimination) large, the clean items negligible. Each item's ΔR² is recomputed from
    statsmodels' ordered logit fits on the (purified) total score and its band read from the
    thresholds, so a label taken from another item or another R² (McFadden's is about half) fails."""
    data = dif_sample(1, n=500)
    result = run_dif(data).set_index("item")
    left_out = result.attrs["anchors_left_out"]
    group = (data["sample"] == "cohort").to_numpy(dtype=float)
    expected = {"i0": "moderate", "i1": "large", "i2": "negligible", "i7": "negligible"}
    for item, label in expected.items():
        score = data[[i for i in DIF_ITEMS if i == item or i not in left_out]].sum(axis=1).to_numpy(dtype=float)
        y = data[item].to_numpy()
        llf = [OrderedModel(y, np.column_stack(x), distr="logit").fit(method="bfgs", disp=False, maxiter=2000).llf
               for x in ([score], [score, group, score * group])]
        counts = np.bincount(y)
        ll0 = np.sum(counts * np.log(counts / len(y)))
        r2 = [(1 - np.exp(2 * (ll0 - ll) / len(y))) / (1 - np.exp(2 * ll0 / len(y))) for ll in llf]
        delta = r2[1] - r2[0]
        assert jodoin_gierl(delta) == label, (item, delta)
        assert result.loc[item, "effect"] == label, item
        # the McFadden change of i0 sits in another band: the label must not come from it
        if item == "i0":
            assert jodoin_gierl(result.loc[item, "delta_r2_mcfadden"]) == "negligible"
    assert (result.drop(index=["i0", "i1"])["effect"] == "negligible").all()


@pytest.mark.parametrize(("delta_r2", "label"), [
    (0.0, "negligible"), (0.0349, "negligible"), (0.035, "moderate"), (0.05, "moderate"), (0.070, "moderate"),
    (0.0701, "large"), (0.4, "large"), (float("nan"), "")])
def test_dif_effect_bands_at_their_bounds(delta_r2, label):
    """Jodoin & Gierl (2001): negligible below .035, moderate from .035 to .070 inclusive, large above."""
    assert irt._effect_label(delta_r2) == label


def test_dif_not_estimable_cases():
    data = dif_sample(2, n=200)
    small = pd.concat([data[data["sample"] == "humans"], data[data["sample"] == "cohort"].head(20)])
    result = run_dif(small)
    assert not result["estimable"].any() and result["p"].isna().all() and not result["flag"].any()
    assert result["note"].str.contains("20 focal").all()

    one_category = data.copy()
    one_category.loc[one_category["sample"] == "cohort", "i3"] = 2
    result = run_dif(one_category).set_index("item")
    assert not result.loc["i3", "estimable"] and np.isnan(result.loc["i3", "chi2_dif"])
    assert "single category used in the focal group" in result.loc["i3", "note"]
    assert result.drop(index="i3")["estimable"].all()

    holey = data.copy()
    holey.loc[:4, "i5"] = np.nan
    result = run_dif(holey)
    assert result.attrs["n_dropped_missing"] == 5 and result["n_reference"].iloc[0] == 195


# --------------------------------------------------------------------------------------------
# plot and docstrings


def test_information_curves_plot_one_panel_per_subscale_one_line_per_group(recovery):
    _, fit = recovery
    theta = np.linspace(-3, 3, 25)
    curves = pd.concat([irt.test_information(fit, theta).assign(group=g, subscale=s)
                        for g in ("cohort", "humans") for s in ("A", "B")])
    fig = plots.information_curves(curves, "information")
    assert isinstance(fig, Figure)
    drawn = [ax for ax in fig.axes if ax.get_visible()]
    assert len(drawn) == 2
    gids = sorted(line.get_gid() for ax in drawn for line in ax.get_lines() if line.get_gid())
    assert gids == ["information:A:cohort", "information:A:humans", "information:B:cohort", "information:B:humans"]
    line = next(l for ax in drawn for l in ax.get_lines() if l.get_gid() == "information:A:cohort")
    np.testing.assert_allclose(line.get_ydata(), curves.query("item == 'test'")["information"].iloc[:25])
    empty = plots.information_curves(curves.iloc[0:0], "information")
    assert "no information curve" in " ".join(t.get_text() for t in empty.findobj(lambda a: hasattr(a, "get_text")))


def test_information_of_a_negatively_discriminating_item_mirrors_the_positive_one():
    """An item with a < 0 (thresholds descending, as fitted) is the mirror image in θ of the same
    item with a > 0: I(θ; −a, −b) = I(−θ; a, b). Sorting the thresholds would break its category
    probabilities (the information ran to 1e298 on a real cohort)."""
    theta = np.linspace(-4, 4, 41)
    positive = pd.DataFrame({"item": ["x"], "discrimination": [1.3], "threshold_1": [-1.5], "threshold_2": [0.2],
                             "threshold_3": [1.1], "estimable": [True]})
    negative = pd.DataFrame({"item": ["x"], "discrimination": [-1.3], "threshold_1": [1.5], "threshold_2": [-0.2],
                             "threshold_3": [-1.1], "estimable": [True]})
    up = irt.test_information(positive, theta).query("item == 'test'")["information"].to_numpy()
    down = irt.test_information(negative, theta).query("item == 'test'")["information"].to_numpy()
    assert np.all(np.isfinite(down)) and down.max() < 1.3 ** 2
    assert np.allclose(down, up[::-1])
