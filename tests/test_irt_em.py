"""The graded response model's EM-then-Newton fit (psyq.analysis.statistics.irt): the fit of the shipped
people's four IRI subscales against PyPI mirt's (stored; mirt is not needed here), the analytic
Hessians against differenced gradients, answer patterns counted rather than repeated, and the early
verdict on noise-like answers. Speed is measured in bench/grm_vs_mirt.py only."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import psyq
from psyq.analysis.scoring.human_answers import read_answers_csv
from psyq.analysis.statistics import irt
from psyq.analysis.statistics.invariance.against_people import factor_structure
from psyq.engine.trials.scoring import keyed_answers

LEVELS5 = [0, 1, 2, 3, 4]
REFERENCE = Path(__file__).parent / "data" / "grm_mirt_reference.json"


@pytest.fixture(scope="module")
def people() -> tuple[pd.DataFrame, dict[str, list[str]]]:
    iri = psyq.load_instrument("iri")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the notice that the codebook beside the file was read
        answers = read_answers_csv("iri_briganti2018_keyed", iri, keyed=True)
    subscales, problem = factor_structure(iri)
    assert not problem
    return keyed_answers(iri, answers), subscales


def thresholds(fit: pd.DataFrame, prefix: str = "threshold_") -> np.ndarray:
    return fit[[f"{prefix}{k}" for k in range(1, 5)]].to_numpy(dtype=float)


def test_fit_of_the_people_equals_mirts(people):
    """Checked against mirt 1.2.0 (PyPI), script bench/grm_vs_mirt.py: its EM fit (61 Gauss–Hermite
    points, tolerance 1e-6 on the log-likelihood change) of each subscale of the 1,973 people. mirt
    stops its EM a little short of the maximum (its log-likelihood is 3e-6 to 1.4e-5 below ours), so
    an extreme threshold (FS b_1 = −5.42) is up to 1.5e-3 off; the rest agree to ~1e-4."""
    reference = json.loads(REFERENCE.read_text())
    assert reference["package"] == "mirt 1.2.0 (PyPI)" and reference["script"].startswith("bench/grm_vs_mirt.py")
    data, subscales = people
    assert set(reference["subscales"]) == set(subscales) == {"PT", "FS", "EC", "PD"}
    for sub, theirs in reference["subscales"].items():
        assert theirs["items"] == subscales[sub] and theirs["converged"]
        # mirt bounds a to [0.1, 5] and b to [−6, 6]: none at a bound, so both solve the same problem
        assert 0.1 < min(theirs["discrimination"]) and max(theirs["discrimination"]) < 5
        assert np.max(np.abs(theirs["thresholds"])) < 6
        fit = irt.graded_response_model(data, theirs["items"], LEVELS5, quadrature_points=reference["quadrature_points"])
        assert fit["estimable"].all() and fit.attrs["converged"] and fit.attrs["max_abs_gradient"] < 1e-2
        assert fit.attrs["method"] == "EM (Bock–Aitkin) then Newton–Raphson"
        assert fit.attrs["log_likelihood"] == pytest.approx(theirs["log_likelihood"], abs=1e-3)
        assert fit.attrs["log_likelihood"] >= theirs["log_likelihood"] - 1e-6        # at the maximum, not short
        np.testing.assert_allclose(fit["discrimination"], theirs["discrimination"], atol=1e-3)
        np.testing.assert_allclose(thresholds(fit), theirs["thresholds"], atol=1e-3, rtol=5e-4)
        np.testing.assert_allclose(fit["se_discrimination"], theirs["se_discrimination"], atol=1e-3)
        np.testing.assert_allclose(thresholds(fit, "se_threshold_"), theirs["se_thresholds"], atol=1e-3, rtol=5e-4)


def noise_like(seed: int = 35, n: int = 3000, items: int = 7) -> pd.DataFrame:
    """Answers as a small model gives them to a scale it does not read: independent noise, piled on two
    of five options (B and C), E never chosen, every other item reverse keyed (4 − x), so that the
    items correlate weakly and with mixed signs and a category is unused on every item."""
    rng = np.random.default_rng(seed)
    out = {}
    for j in range(items):
        raw = np.searchsorted([-1.6, 0.1, 1.5], rng.standard_normal(n) + rng.normal(0, 0.3))
        out[f"i{j}"] = 4 - raw if j % 2 else raw
    return pd.DataFrame(out)


def test_noise_like_answers_are_not_estimable_early_and_say_why():
    """No common factor: the slopes shrink towards 0 under EM; maximising on, Newton would crawl along a
    flat ridge to a Heywood case (one slope past 10, its likelihood 50+ evaluations away). The fit stops
    once EM stops gaining, in a few evaluations, with the reason on every item."""
    data = noise_like()
    r = np.corrcoef(data.to_numpy(dtype=float).T)[np.triu_indices(7, 1)]
    assert (r > 0).any() and (r < 0).any() and np.abs(r).max() < 0.1
    fit = irt.graded_response_model(data, list(data), LEVELS5)
    assert not fit["estimable"].any() and fit["discrimination"].isna().all()
    assert fit["note"].str.contains("not estimable: the slopes collapsed towards 0").all()
    assert fit["note"].str.contains("levels never chosen").all()
    assert fit.attrs["newton_iterations"] == 0 and fit.attrs["em_iterations"] <= 25
    assert fit.attrs["likelihood_evaluations"] <= 26 and not fit.attrs["converged"]


def test_a_slope_running_off_stops_the_fit():
    """An item that splits the respondents on the others' total: its slope runs off while EM climbs;
    the fit stops when it passes 10, not after Newton has chased it."""
    rng = np.random.default_rng(4)
    theta = rng.standard_normal(1500)
    x = (1.5 * theta[:, None] + rng.logistic(size=(1500, 4)) > [-1.0, 0.0, 0.5, 1.0]).astype(int)
    data = pd.DataFrame(x, columns=["q1", "q2", "q3", "q4"])
    total = data.sum(axis=1)
    data["step"] = (total > total.median()).astype(int)
    fit = irt.graded_response_model(data, list(data), [0, 1])
    assert not fit["estimable"].any()
    assert fit["note"].str.contains("not estimable: the estimate ran off").all()
    assert fit.attrs["newton_iterations"] == 0 and fit.attrs["likelihood_evaluations"] <= 30


def test_identical_answer_patterns_are_counted_not_repeated():
    """Every respondent twice: the same estimates, twice the log-likelihood, standard errors / √2 (the
    patterns are fitted once, weighted by their counts)."""
    rng = np.random.default_rng(8)
    theta = rng.standard_normal(300)
    x = (theta[:, None] * [1.0, 1.5, 2.0, 0.8] + rng.logistic(size=(300, 4)) > np.array([[-1], [0.5]])[:, None]).sum(0)
    data = pd.DataFrame(x, columns=list("abcd"))
    once = irt.graded_response_model(data, list(data), [0, 1, 2])
    twice = irt.graded_response_model(pd.concat([data, data]), list(data), [0, 1, 2])
    assert once["estimable"].all() and twice["estimable"].all()
    assert twice.attrs["log_likelihood"] == pytest.approx(2 * once.attrs["log_likelihood"], rel=1e-10)
    np.testing.assert_allclose(twice["discrimination"], once["discrimination"], atol=1e-6)
    np.testing.assert_allclose(twice["se_discrimination"], once["se_discrimination"] / np.sqrt(2), rtol=1e-5)


def test_analytic_hessian_equals_differenced_gradient():
    """The Hessian of the marginal log-likelihood (standard errors, Newton steps) against central
    differences of the analytic gradient, with missing answers and items of 2, 3 and 5 categories."""
    rng = np.random.default_rng(1)
    theta = rng.standard_normal(400)
    x = (rng.random((400, 5, 1)) < 1 / (1 + np.exp(-np.linspace(0.8, 2, 5)[:, None] * (theta[:, None, None]
                                                                                     - np.array([-1.5, -0.3, 0.6, 1.5]))))).sum(2)
    x[:, 1] = np.minimum(x[:, 1], 2)
    x[:, 3] = np.minimum(x[:, 3], 1)
    x[rng.random(x.shape) < 0.1] = -1
    n_categories = [int(x[:, j].max()) + 1 for j in range(5)]
    model = irt._Grm(x, n_categories, 21)
    natural = irt._start_values(x, n_categories) + rng.normal(0, 0.1, sum(n_categories))

    def gradient(point: np.ndarray) -> np.ndarray:
        eta = model.start(point)
        return model.gradient(eta, model.e_step(eta)[2])

    h = 1e-5
    differenced = np.column_stack([(gradient(natural + h * e) - gradient(natural - h * e)) / (2 * h)
                                   for e in np.eye(len(natural))])
    eta = model.start(natural)
    _, posterior, expected = model.e_step(eta)
    np.testing.assert_allclose(model.hessian(eta, posterior, expected), differenced, atol=1e-5 * np.abs(differenced).max())


def test_an_item_unrelated_to_the_others_is_said_to_barely_relate_not_to_separate():
    """A rare answer given independently of the trait: its slope is flat, so b = −d / a runs past
    10. The note names that cause, not near-perfect separation (which is a slope running off)."""
    rng = np.random.default_rng(4)
    theta = rng.standard_normal(2000)
    data = pd.DataFrame({f"i{j}": (1.5 * theta + rng.logistic(size=2000) > [[-1.5], [0], [1.5]]).sum(axis=0)
                         for j in range(5)})
    data["rare"] = (rng.random(2000) < 0.03).astype(int)       # 3 % answer 1, whoever they are
    fit = irt.graded_response_model(data, list(data), [0, 1, 2, 3]).set_index("item")
    assert fit.loc[[f"i{j}" for j in range(5)], "estimable"].all()
    assert not fit.loc["rare", "estimable"]
    assert "barely relates to the others" in fit.loc["rare", "note"] and "separation" not in fit.loc["rare", "note"]


def _marginal_gradient(codes: np.ndarray, a: np.ndarray, d: np.ndarray, points: int) -> np.ndarray:
    """∂ log L / ∂ (a_j, d_j1, …, d_jm) of the GRM's marginal likelihood, written out here with numpy alone:
    θ ~ N(0, 1) on `points` Gauss–Hermite nodes (probabilists', weights normalised), P*_t(θ) =
    logistic(a θ + d_t), P_c = P*_c − P*_{c+1}; per respondent the posterior over the nodes, and
    ∂ log L = Σ_i Σ_q post_iq ∂P_{j x_ij}(θ_q) / P_{j x_ij}(θ_q), with ∂P_c/∂d_t = ψ_t([c = t] − [c = t − 1]) and
    ∂P_c/∂a = θ (ψ_c − ψ_{c+1}), ψ_t = P*_t (1 − P*_t) (ψ_0 = ψ_{m+1} = 0). Complete answers."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(points)
    n_items, m = d.shape
    star = np.zeros((n_items, m + 2, points))
    star[:, 0] = 1.0
    star[:, 1:m + 1] = 1.0 / (1.0 + np.exp(-(a[:, None, None] * nodes + d[:, :, None])))
    prob, psi = star[:, :-1] - star[:, 1:], star * (1.0 - star)          # items × categories × nodes
    chosen = prob[np.arange(n_items), codes]                                # respondents × items × nodes
    with np.errstate(divide="ignore"):
        log_joint = np.log(chosen).sum(axis=1) + np.log(weights / weights.sum())
    post = np.exp(log_joint - log_joint.max(axis=1, keepdims=True))
    post /= post.sum(axis=1, keepdims=True)
    gradient = np.zeros((n_items, m + 1))
    for j in range(n_items):
        c = codes[:, j]
        # post / P, 0 where the posterior is 0 (P underflows to 0 at a far node: no weight there)
        share = np.divide(post, chosen[:, j], out=np.zeros_like(post), where=post > 0)
        d_prob_a = nodes * (psi[j, c] - psi[j, c + 1])                     # ∂P_c/∂a, respondents × nodes
        gradient[j, 0] = np.sum(share * d_prob_a)
        for t in range(1, m + 1):
            d_prob_t = psi[j, t] * ((c == t)[:, None].astype(float) - (c == t - 1)[:, None])
            gradient[j, t] = np.sum(share * d_prob_t)
    return gradient


def test_the_fit_is_the_maximum_to_the_newton_tolerance(people):
    """Guards the Newton loop's stopping rule (max |gradient| < NEWTON_TOLERANCE = 1e-6, not the looser
    convergence bound MAX_ABS_GRADIENT = 1e-2): mirt's stored fit is itself ~1e-4 short of the maximum,
    so it cannot tell a fit stopped at 1e-2 (its max |gradient| 3e-5 to 1.5e-4 on these subscales) from
    one stopped at 1e-6. The gradient of the marginal log-likelihood in (a, d = −a b) at the reported
    estimates, computed here with numpy alone (:func:`_marginal_gradient`) on the same 61 nodes, must be
    below 1e-6 on each of the four IRI subscales of the 1,973 people. That the hand-written gradient
    is right: it equals central differences of the log-likelihood away from the maximum."""
    reference = json.loads(REFERENCE.read_text())
    data, subscales = people
    points = reference["quadrature_points"]
    for sub, items in subscales.items():
        fit = irt.graded_response_model(data, items, LEVELS5, quadrature_points=points)
        assert fit["estimable"].all()
        codes = data[items].to_numpy(dtype=int)
        assert codes.min() == 0 and codes.max() == 4          # the answers 0–4 are the category codes
        a = fit["discrimination"].to_numpy()
        d = -a[:, None] * thresholds(fit)
        gradient = _marginal_gradient(codes, a, d, points)
        assert np.max(np.abs(gradient)) < 1e-6, f"{sub}: max |∂ log L| = {np.max(np.abs(gradient)):.2e} at the estimate"

    # the hand-written gradient against central differences of the log-likelihood, at a point off the maximum
    nodes, weights = np.polynomial.hermite_e.hermegauss(points)
    codes = data[subscales["PT"]].to_numpy(dtype=int)

    def log_lik(a: np.ndarray, d: np.ndarray) -> float:
        star = np.concatenate([np.ones((len(a), 1, points)),
                               1.0 / (1.0 + np.exp(-(a[:, None, None] * nodes + d[:, :, None]))),
                               np.zeros((len(a), 1, points))], axis=1)
        chosen = (star[:, :-1] - star[:, 1:])[np.arange(len(a)), codes]
        return float(np.sum(np.log(np.exp(np.log(chosen).sum(axis=1)) @ (weights / weights.sum()))))

    a0, d0 = np.full(7, 1.1), np.tile([2.5, 1.0, -0.3, -2.0], (7, 1))
    h = 1e-5
    numeric = np.zeros((7, 5))
    for j in range(7):
        for t in range(5):
            up, down = (a0.copy(), d0.copy()), (a0.copy(), d0.copy())
            if t == 0:
                up[0][j] += h
                down[0][j] -= h
            else:
                up[1][j, t - 1] += h
                down[1][j, t - 1] -= h
            numeric[j, t] = (log_lik(*up) - log_lik(*down)) / (2 * h)
    np.testing.assert_allclose(_marginal_gradient(codes, a0, d0, points), numeric, rtol=1e-5, atol=1e-3)
