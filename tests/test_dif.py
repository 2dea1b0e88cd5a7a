"""Differential item functioning (psyq.analysis.statistics.dif): planted DIF found in simulated
graded-response data, the likelihood-ratio tests and pseudo-R² changes against statsmodels' ordered
logit, Holm's correction against statsmodels, the effect bands at their bounds, the ordinal
regressions' analytic derivatives against central differences, and the cases that are not
estimable."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.miscmodels.ordinal_model import OrderedModel
from statsmodels.stats.multitest import multipletests

from psyq.analysis.statistics import dif
from test_irt import LEVELS5, frame, simulate_grm   # the GRM written out independently of psyq

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
    return dif.differential_item_functioning(data, DIF_ITEMS, "sample", LEVELS5, focal="cohort", reference="humans",
                                             purify=purify)


def test_dif_finds_planted_items_and_few_false_positives():
    reps = 12
    power, false_flags, false_significant, unpurified_significant = [], 0, 0, 0
    for seed in range(reps):
        result = run_dif(dif_sample(seed)).set_index("item")
        assert list(result.reset_index().columns) == dif.DIF_COLUMNS and result["estimable"].all()
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
    assert dif._effect_label(delta_r2) == label


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


def test_ordinal_regression_derivatives_and_warm_start():
    """DIF's proportional-odds fits: the analytic gradient and Hessian against central differences, and
    a fit started from the nested model's estimate ends where a cold start does."""
    rng = np.random.default_rng(5)
    score, group = rng.normal(size=600), (rng.random(600) < 0.5).astype(float)
    y = np.searchsorted([-1.5, 0.0, 1.2, 2.5], 1.2 * score + 0.5 * group + rng.logistic(size=600))
    exog = np.column_stack([score, group, score * group])
    params = np.array([1.0, 0.2, -0.9, -2.0, 0.8, 0.3, -0.1])
    _, grad, hess = dif._ordinal_terms(y, exog, params)
    h = 1e-6
    steps = np.eye(len(params)) * h
    num_grad = [(dif._ordinal_terms(y, exog, params + e)[0] - dif._ordinal_terms(y, exog, params - e)[0]) / (2 * h)
                for e in steps]
    num_hess = np.column_stack([(dif._ordinal_terms(y, exog, params + e)[1] - dif._ordinal_terms(y, exog, params - e)[1])
                                / (2 * h) for e in steps])
    np.testing.assert_allclose(grad, num_grad, atol=1e-5)
    np.testing.assert_allclose(hess, num_hess, atol=1e-5)
    ll2, fit2 = dif._cumulative_logit(y, exog[:, :2])
    warm, _ = dif._cumulative_logit(y, exog, start=np.append(fit2, 0.0))
    cold, _ = dif._cumulative_logit(y, exog)
    assert warm == pytest.approx(cold, abs=1e-9) and warm >= ll2
