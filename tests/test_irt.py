"""Graded response model and test information (psyq.analysis.statistics.irt): parameter recovery on
simulated data, a published ltm fit reproduced, independent computations of the likelihood and the
information, and the cases that are not estimable. DIF is tested in tests/test_dif.py."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from scipy import integrate, stats

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
