"""model_effects: OLS against a hand least-squares fit, MixedLM against known simulated variances."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.statistics.effects import model_effects
from psyq.analysis.scoring.scores import score_answers
from test_fidelity import make_instrument, make_table


def make_scores(rows: list[dict]) -> pd.DataFrame:
    """A scores table with score_answers' columns and the export's dtypes (string / Int64 attributes)."""
    frame = pd.DataFrame([{"backend_id": "b1", "model": "m", "repeat": 0, "instrument": "inst",
                           "subscale": "all", "n_answered": 1, "n_items": 1, **r} for r in rows])
    frame["gender"] = frame["gender"].astype("string")
    frame["age"] = frame["age"].astype("Int64")
    return frame[["backend_id", "model", "respondent_id", "repeat", "gender", "age", "instrument", "subscale",
                  "score", "n_answered", "n_items"]]


def ols_by_hand(X: np.ndarray, y: np.ndarray):
    """Coefficients, classical SEs, 95 % t CIs and p from the normal equations."""
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    n, k = X.shape
    resid = y - X @ beta
    s2 = resid @ resid / (n - k)
    se = np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X)))
    q = stats.t.ppf(0.975, n - k)
    return beta, se, beta - q * se, beta + q * se, 2 * stats.t.sf(np.abs(beta / se), n - k)


def test_ols_matches_least_squares_from_an_answer_table():
    # One-item instrument on 1..7: each respondent's score is the value answered.
    inst = {"one": make_instrument("one", 1, scale=(1, 7))}
    rng = np.random.default_rng(3)
    rows, people = [], []
    for backend in ("b1", "b2"):
        for r in range(10):
            gender, age, value = ("male" if r % 2 else "female"), 20 + 5 * r, int(rng.integers(1, 8))
            rows.append({"backend_id": backend, "respondent_id": f"p{r}", "gender": gender, "age": age,
                         "instrument": "one", "item_id": "1", "value": value})
            people.append((backend == "b2", gender == "male", age, value))
        # the baseline: no persona attributes; it must be dropped
        rows.append({"backend_id": backend, "respondent_id": "baseline", "gender": pd.NA, "age": pd.NA,
                     "instrument": "one", "item_id": "1", "value": 7})
    table = make_table(rows, inst)
    table["gender"] = table["gender"].astype("string")
    table.insert(table.columns.get_loc("gender") + 1, "age", pd.array([r["age"] for r in rows], dtype="Int64"))
    scores = score_answers(table, inst)

    got = model_effects(scores, ["gender", "age"])
    assert got["model"].unique().tolist() == ["ols"]
    assert got["term"].tolist() == ["Intercept", "C(backend_id)[T.b2]", "C(gender)[T.male]", "age"]
    assert (got["n"] == 20).all()                                   # 2 backends × 10, baselines dropped

    X = np.array([[1.0, b2, male, age] for b2, male, age, _ in people])
    y = np.array([v for *_, v in people], dtype=float)
    beta, se, low, high, p = ols_by_hand(X, y)
    np.testing.assert_allclose(got["estimate"], beta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got["se"], se, rtol=1e-9)
    np.testing.assert_allclose(got["ci_low"], low, rtol=1e-9)
    np.testing.assert_allclose(got["ci_high"], high, rtol=1e-9)
    np.testing.assert_allclose(got["p"], p, rtol=1e-6)


def test_single_backend_has_no_backend_term_and_each_subscale_its_own_model():
    rows = []
    for sub, shift in (("A", 0.0), ("B", 10.0)):
        for r in range(8):
            rows.append({"respondent_id": f"p{r}", "gender": "male" if r < 4 else "female", "age": 30 + r,
                         "subscale": sub, "score": shift + r + (r < 4)})
    with pytest.warns(UserWarning, match="reproduce every score exactly"):
        got = model_effects(make_scores(rows), ["gender", "age"])
    assert got.groupby("subscale")["term"].apply(list).to_dict() == {
        "A": ["Intercept", "C(gender)[T.male]", "age"], "B": ["Intercept", "C(gender)[T.male]", "age"]}
    # score = shift + age − 30 + male exactly, so: intercept shift − 30, male 1, age 1.
    est = got.set_index(["subscale", "term"])["estimate"]
    assert est[("A", "Intercept")] == pytest.approx(-30.0)
    assert est[("B", "Intercept")] == pytest.approx(-20.0)
    assert est[("A", "C(gender)[T.male]")] == pytest.approx(1.0)
    assert est[("B", "age")] == pytest.approx(1.0)
    # An exact fit: no residual variance, so no SE, CI or p (statsmodels would give SE ≈ 1e-15, p ≈ 0).
    assert got[["se", "ci_low", "ci_high", "p"]].isna().all().all() and (~got["estimable"]).all()


def test_identical_repeats_make_the_mixed_model_not_estimable():
    # Two repeats with identical scores per respondent (a temperature-0 model): the within-respondent
    # variance is 0, so the random-intercept model has no residual variance (statsmodels returns
    # e.g. 2.6e-09 and meaningless SEs). Every row must say not estimable, with no number.
    rows = [{"respondent_id": f"p{r}", "gender": "male" if r % 2 else "female", "age": 20 + r, "repeat": rep,
             "score": float((r * 7) % 5 + r)} for r in range(10) for rep in (0, 1)]
    with pytest.warns(UserWarning, match="same score on every repeat"):
        got = model_effects(make_scores(rows), ["gender", "age"])
    assert set(got["model"]) == {"mixedlm"} and (~got["estimable"]).all()
    assert got[["estimate", "se", "ci_low", "ci_high", "p"]].isna().all().all()
    assert "var(residual)" in set(got["term"]) and got["note"].str.contains("residual variance 0").all()


def test_collinear_predictors_are_not_estimable():
    # age = 30 for every woman and 40 for every man: C(gender) and age are the same contrast.
    rows = [{"respondent_id": f"p{r}", "gender": "male" if r % 2 else "female", "age": 40 if r % 2 else 30,
             "score": float(r)} for r in range(10)]
    with pytest.warns(UserWarning, match="singular"):
        got = model_effects(make_scores(rows), ["gender", "age"])
    assert (~got["estimable"]).all() and got["estimate"].isna().all()


def test_constant_predictor_is_left_out_with_a_warning_and_unknown_one_is_an_error():
    rows = [{"respondent_id": f"p{r}", "gender": "female", "age": 20 + r, "score": float(r % 3)} for r in range(6)]
    with pytest.warns(UserWarning, match="gender"):
        got = model_effects(make_scores(rows), ["gender", "age"])
    assert got["term"].tolist() == ["Intercept", "age"]
    with pytest.raises(ValueError, match="height"):
        model_effects(make_scores(rows), ["height"])


def test_mixedlm_recovers_random_intercept_variance():
    # Simulated: score = 10 + 2·male + 0.05·age + u_respondent + e, u ~ N(0, τ² = 1), e ~ N(0, σ² = 0.5),
    # G = 300 respondents × m = 4 repeats, balanced.
    rng = np.random.default_rng(20240611)
    G, m, tau2, sigma2 = 300, 4, 1.0, 0.5
    male = rng.integers(0, 2, G)
    age = rng.integers(18, 80, G)
    u = rng.normal(0, math.sqrt(tau2), G)
    rows = []
    for g in range(G):
        for rep in range(m):
            rows.append({"respondent_id": f"p{g}", "repeat": rep, "gender": "male" if male[g] else "female",
                         "age": int(age[g]),
                         "score": 10 + 2 * male[g] + 0.05 * age[g] + u[g] + rng.normal(0, math.sqrt(sigma2))})
    scores = make_scores(rows)
    got = model_effects(scores, ["gender", "age"]).set_index("term")
    assert (got["model"] == "mixedlm").all() and (got["n"] == G * m).all()

    # Tolerance: REML in a balanced one-way design equals the ANOVA estimator
    # τ̂² = (MSB − MSW)/m, whose sampling SD is
    # sqrt(2(σ² + mτ²)²/(G − 1) + 2σ⁴/(G(m − 1))) / m ≈ 0.092 here, and σ̂² = MSW has SD
    # σ² sqrt(2/(G(m − 1))) ≈ 0.024. Three SDs keeps a false failure below 0.3 % (normal
    # approximation) while an estimator that confused the two components (off by 0.5) fails.
    sd_tau = math.sqrt(2 * (sigma2 + m * tau2) ** 2 / (G - 1) + 2 * sigma2**2 / (G * (m - 1))) / m
    sd_sigma = sigma2 * math.sqrt(2 / (G * (m - 1)))
    assert abs(got.loc["var(respondent)", "estimate"] - tau2) < 3 * sd_tau
    assert abs(got.loc["var(residual)", "estimate"] - sigma2) < 3 * sd_sigma
    assert got.loc[["var(respondent)", "var(residual)"], "se"].isna().all()

    # Predictors constant within respondent and a balanced design: GLS equals OLS exactly
    # (the column space of X is invariant under the compound-symmetric covariance), so the
    # fixed effects must match plain least squares on the stacked data.
    X = np.column_stack([np.ones(G * m), (scores["gender"] == "male").to_numpy(float),
                         scores["age"].to_numpy(float)])
    beta, *_ = np.linalg.lstsq(X, scores["score"].to_numpy(float), rcond=None)
    np.testing.assert_allclose(got.loc[["Intercept", "C(gender)[T.male]", "age"], "estimate"], beta, rtol=1e-6)
    # and the true effects lie inside their intervals
    for term, true in (("C(gender)[T.male]", 2.0), ("age", 0.05)):
        assert got.loc[term, "ci_low"] < true < got.loc[term, "ci_high"]


def test_baseline_dropped_even_without_predictors():
    # Backend-only model: b2 − b1 is the difference of persona means; the baseline (score 100) must not count.
    rows = [{"backend_id": b, "respondent_id": f"p{r}", "gender": "female", "age": 30, "score": s}
            for b, scores in (("b1", [1.0, 2.0, 3.0]), ("b2", [5.0, 6.0, 10.0])) for r, s in enumerate(scores)]
    rows += [{"backend_id": b, "respondent_id": "baseline", "gender": pd.NA, "age": pd.NA, "score": 100.0}
             for b in ("b1", "b2")]
    got = model_effects(make_scores(rows), []).set_index("term")
    assert got["n"].unique().tolist() == [6]
    assert got.loc["Intercept", "estimate"] == pytest.approx(2.0)
    assert got.loc["C(backend_id)[T.b2]", "estimate"] == pytest.approx(7.0 - 2.0)
