"""Ordinal measurement invariance (WLSMV, delta parameterisation, Wu & Estabrook's steps) against lavaan
0.6.14 / semTools 0.5.6 (the stored output of tests/data/lavaan/invariance.R: measEq.syntax(...,
ID.cat = "Wu.Estabrook.2016", estimator = "WLSMV") on the Briganti IRI answers by gender), and the
release of planted non-invariant parameters in simulated ordinal answers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq.analysis import invariance_verdicts
from psyq.analysis.statistics.invariance import measurement_invariance

ROOT = Path(__file__).resolve().parents[1]
LAVAAN = json.loads((ROOT / "tests" / "data" / "lavaan" / "invariance_out.json").read_text())
PEOPLE = pd.read_csv(ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv")
SUBSCALES = LAVAAN["data"]["subscales"]
OURS = {"configural": "configural", "thresholds": "thresholds", "thresholds_loadings": "metric",
        "thresholds_loadings_intercepts": "scalar"}
WLSMV = {"chisq": "chi2", "df": "df", "chisq.scaled": "chi2_scaled", "chisq.scaling.factor": "scaling",
         "cfi.scaled": "cfi_scaled", "tli.scaled": "tli_scaled", "rmsea.scaled": "rmsea_scaled", "srmr": "srmr",
         "cfi": "cfi", "rmsea": "rmsea"}


@pytest.fixture(scope="module", params=list(SUBSCALES))
def subscale_fit(request):
    subscale = request.param
    fit = measurement_invariance(PEOPLE, {subscale: SUBSCALES[subscale]}, "gender", estimator="WLSMV", partial=False)
    return subscale, fit.set_index("step")


def test_wlsmv_steps_equal_lavaan(subscale_fit):
    """χ², df, scaled-and-shifted χ² with its scaling factor and shift, scaled CFI/TLI/RMSEA and SRMR of
    the four steps, to three decimals."""
    subscale, ours = subscale_fit
    print("\n" + ours[list(WLSMV.values()) + ["shift"]].round(4).to_string())
    for step in LAVAAN["wlsmv"][subscale]["steps"]:
        row = ours.loc[OURS[step["step"]]]
        for r_name, column in WLSMV.items():
            theirs = step["fit"][r_name]
            tolerance = 1e-3 * max(1.0, abs(theirs)) if r_name.startswith("chisq") else 1e-3
            assert row[column] == pytest.approx(theirs, abs=tolerance), f"{subscale} {step['step']} {r_name}"
        assert row["shift"] == pytest.approx(step["scaled_shifted"]["shift.parameter"], abs=1e-3)
        assert row["equal"] == step["equal"].replace(",", ", ")


def test_satorra_2000_differences_equal_lavtestlrt(subscale_fit):
    subscale, ours = subscale_fit
    for test in LAVAAN["wlsmv"][subscale]["lrt"]:
        assert test["method"] == "satorra.2000"
        row = ours.loc[OURS[test["to"]]]
        assert row["delta_df"] == test["df_diff"]
        assert row["delta_chi2"] == pytest.approx(test["chisq_diff"], abs=1e-3, rel=1e-4)


def test_latent_mean_equals_lavaan_default_ordinal_model():
    """Under thresholds, loadings and intercepts equal the model is lavaan's own default ordinal
    invariance model (the R script checks both fits agree); its group-2 latent mean in the marker's
    metric and its robust SE are lavaan's."""
    ours = measurement_invariance(PEOPLE, {"FS": SUBSCALES["FS"]}, "gender", estimator="WLSMV",
                                  partial=False).attrs["latent_means"].iloc[0]
    theirs = LAVAAN["wlsmv_lavaan_default_FS"]["latent_mean_group2"]
    assert LAVAAN["wlsmv_lavaan_default_FS"]["equals_WE_thresholds_loadings_intercepts"]
    assert ours["estimate"] == pytest.approx(theirs["est"], abs=1e-4)
    assert ours["se"] == pytest.approx(theirs["se"], abs=1e-4)


def simulate(rng, n, label, *, mean=0.0, variance=1.0, threshold_shift=None, intercept_shift=None):
    """Five-category answers to six items cut from y* = λη + ε (unit variance in the first group) at
    common thresholds; optionally one item's one threshold or all its thresholds (its intercept) moved."""
    loadings = np.array([0.55, 0.5, 0.5, 0.45, 0.5, 0.5])
    eta = rng.normal(mean, np.sqrt(variance), n)
    latent = eta[:, None] * loadings + rng.normal(0, 1, (n, 6)) * np.sqrt(1 - loadings ** 2)
    cuts = np.tile([-1.2, -0.4, 0.4, 1.2], (6, 1))
    if threshold_shift:
        item, k, by = threshold_shift
        cuts[item, k] += by
    if intercept_shift:
        item, by = intercept_shift
        latent[:, item] += by
    answers = np.column_stack([np.searchsorted(cuts[j], latent[:, j]) for j in range(6)])
    return pd.DataFrame(answers, columns=[f"i{j + 1}" for j in range(6)]).assign(group=label)


FACTOR = {"F": [f"i{j + 1}" for j in range(6)]}


@pytest.mark.parametrize("seed", [7, 9, 11])
def test_planted_threshold_and_intercept_are_exactly_what_is_released(seed):
    """Group b: item 3's second threshold moved by .7 and item 5's intercept by .6 (all its thresholds);
    the factor's mean and variance differ too, which invariance allows."""
    rng = np.random.default_rng(seed)
    data = pd.concat([simulate(rng, 800, "a"),
                      simulate(rng, 800, "b", mean=0.3, variance=1.2, threshold_shift=(2, 1, 0.7),
                               intercept_shift=(4, 0.6))])
    fit = measurement_invariance(data, FACTOR, "group", estimator="WLSMV")
    print("\n" + fit[["step", "released", "chi2_scaled", "df", "cfi_scaled", "delta_cfi", "delta_rmsea"]].round(4).to_string())
    assert list(fit["step"]) == ["configural", "thresholds", "partial thresholds", "metric", "scalar", "partial scalar"]
    assert fit.set_index("step").loc["partial scalar", "released"] == "i3|t2, i5~1"
    assert fit.attrs["score_tests"].query("released")["parameter"].tolist() == ["i3|t2", "i5~1"]
    verdicts = invariance_verdicts(fit)
    assert verdicts[2].startswith("partial thresholds: with i3|t2 free in each group, the other thresholds are equal")
    assert verdicts[5].endswith("latent means compare on the same scale")
    means = fit.attrs["latent_means"].iloc[0]
    assert means["step"] == "partial scalar" and means["ci_low"] > 0


def test_invariant_ordinal_groups_release_nothing():
    rng = np.random.default_rng(8)
    data = pd.concat([simulate(rng, 800, "a"), simulate(rng, 800, "b", mean=0.3, variance=1.2)])
    fit = measurement_invariance(data, FACTOR, "group", estimator="WLSMV")
    assert list(fit["step"]) == ["configural", "thresholds", "metric", "scalar"]
    assert (fit["released"] == "").all() and fit.attrs["score_tests"].empty
    # The factor mean of b is 0.3 in η's units; the model's is in the marker's metric (λ₁ = .55 on
    # y*), so d, its standardised difference, is the figure to compare: 0.3/sqrt(1.1) = .29.
    assert fit.attrs["latent_means"].iloc[0]["d_ci_low"] < 0.3 / np.sqrt(1.1) < fit.attrs["latent_means"].iloc[0]["d_ci_high"]


def test_empty_category_in_one_group_gives_no_number_and_says_where():
    rng = np.random.default_rng(3)
    a, b = simulate(rng, 300, "a"), simulate(rng, 300, "b")
    b.loc[b["i2"] == 4, "i2"] = 3              # nobody in group b chose the top answer to i2
    fit = measurement_invariance(pd.concat([a, b]), FACTOR, "group", estimator="WLSMV")
    assert not fit["estimable"].any() and fit["chi2"].isna().all()
    assert fit.loc[0, "note"].startswith("not estimable: item i2: nobody in group 'b' answered 4, which others did")


def test_wlsmv_refuses_what_it_does_not_fit():
    rng = np.random.default_rng(3)
    data = pd.concat([simulate(rng, 100, "a"), simulate(rng, 100, "b")])
    with pytest.raises(ValueError, match="estimator must be one of"):
        measurement_invariance(data, FACTOR, "group", estimator="WLS")
    with pytest.raises(ValueError, match="ordered items are fitted by WLSMV"):
        measurement_invariance(data, FACTOR, "group", estimator="ML", ordered=True)
    with pytest.raises(ValueError, match="leading part"):
        measurement_invariance(data, FACTOR, "group", estimator="WLSMV", steps=("configural", "metric"))


def test_analytic_jacobian_is_the_derivative_of_the_implied_moments():
    """Δ of the delta parameterisation (ordinal.py) against central differences of the implied
    thresholds and correlations, two factors, every kind free somewhere (a released intercept too)."""
    from psyq.analysis.statistics.invariance.continuous import Sample, Structure
    from psyq.analysis.statistics.invariance.layout import Layout
    from psyq.analysis.statistics.invariance.ordinal import OrdinalModel
    items = [f"davi{i}" for i in (1, 5, 7, 12, 3, 8, 11, 15)]
    samples = [Sample(g, rows[items].to_numpy(float)) for g, rows in PEOPLE.groupby("gender", sort=False)]
    model = OrdinalModel(samples, Structure(np.repeat([0, 1], 4), np.array([1, 0, 0, 0] * 2, bool)), items, ["A", "B"])
    rng = np.random.default_rng(0)
    for equal in ((), ("thresholds",), ("thresholds", "loadings", "intercepts")):
        layout = Layout.build(model.free(equal), equal, released=[("intercepts", 2)], pinned=model.pinned(equal))
        theta = rng.normal(0.5, 0.3, layout.n_split)
        for g in range(2):
            numeric = np.array([(model.implied(theta + 1e-6 * e, layout, g) - model.implied(theta - 1e-6 * e, layout, g))
                                / 2e-6 for e in np.eye(layout.n_split)]).T
            assert np.abs(model._jacobian(theta, layout, g) - numeric).max() < 1e-8
