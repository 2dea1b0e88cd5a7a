"""Polychoric correlations, thresholds and their asymptotic covariance (analysis/statistics/polychoric.py).

Checked against lavaan 0.6-14 on R 4.2.2 (pbivnorm 0.6.0): tests/data/lavaan/polychoric.R fits
``cfa(..., ordered = items, estimator = "WLSMV")`` to the IRI's Fantasy and Personal Distress items of
instruments/data/iri_briganti2018_keyed.csv, for everyone and by gender (``group = "gender"``), and
stores ``lavInspect(fit, "sampstat")``, ``"wls.obs"`` and ``"gamma"`` in
tests/data/lavaan/polychoric_out.json; the suite reads the stored file and never needs R.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq.analysis.statistics import polychoric as poly
from psyq.analysis.statistics.polychoric import (NotEstimable, bivariate_normal_cdf, ordinal_moments,
                                                 polychoric)

ROOT = Path(__file__).resolve().parents[1]
LAVAAN = ROOT / "tests" / "data" / "lavaan"
STORED = json.loads((LAVAAN / "polychoric_out.json").read_text())


def _data() -> pd.DataFrame:
    """The IRI answers, with the derived items of the script's "mixed" set (2, 3 and 5 categories)."""
    data = pd.read_csv(ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv")
    data["bin1"] = (data["davi1"] >= 3).astype(int)
    data["bin2"] = ((data["davi1"] >= 3) & (data["davi5"] >= 2)).astype(int)
    data["tri5"] = np.where(data["davi5"] <= 1, 0, np.where(data["davi5"] == 2, 1, 2))
    return data


DATA = _data()


# Made once by: rng = np.random.default_rng(11); latent = rng.normal(size=(800, 1)) * np.sqrt(0.9)
# + rng.normal(size=(800, 3)) * np.sqrt(0.1); codes = np.digitize(latent, [-1.2, -0.4, 0.4, 1.2]), plus one
# respondent answering 0, 4, 0 (columns y1, y2, y3). His cells have a probability of ~3e-9 and ~4e-10 at
# the estimates, below √ε: lavaan leaves his answers out of the correlations' scores.
OUTLIER = pd.read_csv(LAVAAN / "polychoric_outlier.csv")


def _case_codes(case) -> tuple[np.ndarray, list[int]]:
    data = OUTLIER if case["subscale"] == "outlier" else DATA
    rows = data if case["group"] == "all" else data[data["gender"] == case["group"]]
    codes = rows[case["items"]].to_numpy()
    return codes, [int(codes[:, j].max()) + 1 for j in range(codes.shape[1])]


def _name(case) -> str:
    return f"{case['subscale']}-{case['group']}"


# lavaan's optimizer stopped at its bound 0.999 for bin1~~bin2 among the women (see the test below):
# that correlation and its row and column of gamma are compared there, not here.
LAVAAN_AT_BOUND = {("mixed", "F"): "bin1~~bin2"}


def test_the_stored_output_is_lavaan_0_6_14_on_r_4_2_2():
    assert STORED["lavaan"] == "0.6.14" and STORED["R"].startswith("R version 4.2.2")
    assert [_name(c) for c in STORED["cases"]] == ["FS-all", "FS-F", "FS-M", "PD-all", "PD-F", "PD-M",
                                                    "mixed-all", "mixed-F", "mixed-M", "outlier-all"]
    assert [c["n"] for c in STORED["cases"][:3]] == [1973, 1135, 838]


@pytest.mark.parametrize("case", STORED["cases"], ids=_name)
def test_thresholds_correlations_and_gamma_reproduce_lavaan(case):
    codes, n_categories = _case_codes(case)
    moments = ordinal_moments(codes, n_categories, case["items"])
    assert moments.n == case["n"]
    # lavaan's order: thresholds item by item, then the correlations (2,1), (3,1), …, (p,p−1).
    assert moments.labels == case["gamma_names"] == case["wls_obs_names"]
    keep = np.ones(len(moments.labels), dtype=bool)
    if (case["subscale"], case["group"]) in LAVAAN_AT_BOUND:
        keep[moments.labels.index(LAVAAN_AT_BOUND[case["subscale"], case["group"]])] = False

    th_diff = np.abs(np.concatenate(moments.thresholds) - case["thresholds"]).max()
    wls_diff = np.abs(moments.wls_obs - case["wls_obs"])[keep].max()
    cor = np.array(case["correlations"])
    gamma = np.array(case["gamma"])
    gamma_diff = np.abs(moments.gamma - gamma)[np.ix_(keep, keep)]
    rel = gamma_diff / np.abs(gamma[np.ix_(keep, keep)])
    print(f"{_name(case)}: max |Δ| thresholds {th_diff:.1e}, correlations {wls_diff:.1e}, "
          f"gamma {gamma_diff.max():.1e} (relative {rel.max():.1e}, largest |gamma| {np.abs(gamma).max():.1f})")
    # Thresholds are closed-form: equal to rounding. Correlations and gamma differ by lavaan's nlminb
    # stopping about 1e-8 short of the maximum (its score there is ~3e-8 per respondent; ours ~1e-15),
    # which the next test shows.
    assert th_diff < 1e-12
    assert wls_diff < 1e-7
    assert gamma_diff.max() < 1e-6
    assert np.allclose(moments.correlations, moments.correlations.T) and np.all(np.diag(moments.correlations) == 1)
    if keep.all():
        assert np.abs(moments.correlations - cor).max() < 1e-7


@pytest.mark.parametrize("case", STORED["cases"], ids=_name)
def test_gamma_at_lavaans_own_correlations_is_lavaans_to_rounding(case):
    """Γ computed at lavaan's (slightly less converged) correlations: the sandwich itself is exact."""
    codes, n_categories = _case_codes(case)
    cor = np.array(case["correlations"])
    rows, cols = poly._pair_indices(len(case["items"]))
    moments = poly._moments(codes, n_categories, case["items"], rho=cor[rows, cols])
    gamma = np.array(case["gamma"])
    if (case["subscale"], case["group"]) in LAVAAN_AT_BOUND:
        return          # ρ = 0.999 puts a cell's probability at ~1e-8: Γ is ~1e48 there in lavaan, ~1e35 here
    diff = np.abs(moments.gamma - gamma)
    print(f"{_name(case)}: max |Δ| gamma at lavaan's ρ {diff.max():.1e} (relative {(diff / np.abs(gamma)).max():.1e})")
    assert diff.max() < 1e-11
    assert (diff / np.abs(gamma)).max() < 1e-9


def test_where_lavaans_optimizer_stops_at_its_bound_ours_finds_the_maximum():
    """bin1 and bin2 among the women: a 2 × 2 table with one empty cell, which lavaan fills with 0.5
    (margins kept). Its objective counts a cell below √ε as √ε, so that it rises again slowly towards
    ρ = 0.999 after its maximum at 0.975; lavaan's nlminb, started from the Pearson correlation 0.67,
    ends on the bound (and its Γ is ~1e48). Ours is the maximum of lavaan's own objective."""
    case = next(c for c in STORED["cases"] if (c["subscale"], c["group"]) == ("mixed", "F"))
    codes, n_categories = _case_codes(case)
    moments = ordinal_moments(codes, n_categories, case["items"])
    assert np.array(case["correlations"])[1, 0] == 0.999
    rho = moments.correlations[1, 0]
    assert rho == pytest.approx(0.97504529529, abs=1e-9)
    table = np.array([[[np.sum((codes[:, 1] == a) & (codes[:, 0] == b)) for b in range(2)] for a in range(2)]],
                     dtype=float)
    assert table[0, 1, 0] == 0                                    # bin2 = 1 never comes with bin1 = 0
    filled = table + np.array([[-0.5, 0.5], [0.5, -0.5]])
    bounds_i = np.array([[-np.inf, moments.thresholds[1][0], np.inf]])
    bounds_j = np.array([[-np.inf, moments.thresholds[0][0], np.inf]])
    real = np.ones((1, 2, 2), dtype=bool)
    ours = poly._loglik(filled, real, bounds_i, bounds_j, np.array([rho]))
    theirs = poly._loglik(filled, real, bounds_i, bounds_j, np.array([0.999]))
    assert ours - theirs > 4                                      # −1125.83 against −1130.47
    # From any start, even one in the slowly rising stretch near the bound, the same maximum.
    for start in (-0.9, 0.0, 0.67, 0.997):
        solved = poly._solve_rho(filled, real, bounds_i, bounds_j, np.array([start]))
        assert solved[0] == pytest.approx(rho, abs=1e-10), start
    # The men's table has its empty cell too, and there lavaan found the same maximum.
    men = next(c for c in STORED["cases"] if (c["subscale"], c["group"]) == ("mixed", "M"))
    codes_m, k_m = _case_codes(men)
    assert ordinal_moments(codes_m, k_m, men["items"]).correlations[1, 0] == pytest.approx(
        np.array(men["correlations"])[1, 0], abs=1e-8)


def test_gamma_is_n_times_the_acov_with_the_correction_for_estimated_thresholds():
    """Without the A21 correction, or with N − 1 instead of N, Γ leaves lavaan's by far more than rounding."""
    case = STORED["cases"][2]                                     # FS, men: N = 838
    codes, n_categories = _case_codes(case)
    moments = ordinal_moments(codes, n_categories, case["items"])
    gamma = np.array(case["gamma"])
    assert np.abs(moments.gamma * (case["n"] - 1) / case["n"] - gamma).max() > 1e-3
    th = moments.n_thresholds
    # A threshold's own entry is the delta method's for τ = Φ⁻¹(P): N·var(τ̂) = P(1 − P)/φ(τ)².
    p_cum = (codes[:, 0][:, None] <= np.arange(4)[None, :]).mean(axis=0)
    tau = moments.thresholds[0]
    expected = p_cum * (1 - p_cum) / (np.exp(-tau ** 2 / 2) / np.sqrt(2 * np.pi)) ** 2
    assert np.allclose(np.diag(moments.gamma)[:4], expected, rtol=1e-10)
    assert np.allclose(np.diag(gamma)[:4], expected, rtol=1e-9)
    assert th == 28 and moments.gamma.shape == (49, 49)


def test_the_simulated_latent_correlation_is_recovered():
    rng = np.random.default_rng(20240601)
    latent = rng.multivariate_normal([0, 0], [[1, 0.5], [0.5, 1]], size=20_000)
    codes = np.column_stack([np.digitize(latent[:, 0], [-1.0, 0.0, 0.8]), np.digitize(latent[:, 1], [-0.5, 0.5])])
    moments = ordinal_moments(codes, [4, 3], ["x", "y"])
    assert moments.correlations[1, 0] == pytest.approx(0.5, abs=0.02)
    assert np.allclose(moments.thresholds[0], [-1.0, 0.0, 0.8], atol=0.03)
    assert np.allclose(moments.thresholds[1], [-0.5, 0.5], atol=0.03)
    # Its standard error from Γ: sqrt(Γ_ρρ / N), the order of the one known for a polychoric of n = 20,000.
    se = np.sqrt(moments.gamma[-1, -1] / moments.n)
    assert 0.003 < se < 0.012


def test_bivariate_normal_cdf_against_an_independent_computation():
    """Against Sheppard's formula Φ₂(x, y; ρ) = Φ(x)Φ(y) + ∫₀^ρ φ₂(x, y; t) dt with mpmath at 30 digits."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30

    def sheppard(x, y, r):
        x, y, r = mp.mpf(x), mp.mpf(y), mp.mpf(r)
        density = lambda t: mp.exp(-(x * x - 2 * t * x * y + y * y) / (2 * (1 - t * t))) / (2 * mp.pi * mp.sqrt(1 - t * t))
        return float(mp.ncdf(x) * mp.ncdf(y) + mp.quad(density, [0, r]))

    rng = np.random.default_rng(7)
    x = np.r_[rng.uniform(-4, 4, 120), [0, 1.5, -1.5, -2.5, 2.5, 0.3, -6, 6]]
    y = np.r_[rng.uniform(-4, 4, 120), [0, 1.5, -1.5, 2.5, -2.5, 0.3, -6, 6]]
    # Both of Genz's branches (|ρ| below and above 0.925) and their edge, both signs.
    rho = np.r_[rng.uniform(-1, 1, 80),
                [-0.9999, -0.999, -0.99, -0.95, -0.926, -0.925, -0.924, -0.9, -0.5, -0.3, 0.0, 0.3, 0.5, 0.75,
                 0.9, 0.924, 0.925, 0.926, 0.95, 0.99, 0.999, 0.9999],
                [0.999, 0.95, -0.95, -0.999, 0.3, 0.5, 0.2, -0.2, 0.999, 0.999, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6,
                 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]]
    expected = np.array([sheppard(a, b, r) for a, b, r in zip(x, y, rho)])
    got = bivariate_normal_cdf(x, y, rho)
    print(f"max |Δ| against Sheppard's integral: {np.abs(got - expected).max():.1e}")
    assert np.abs(got - expected).max() < 1e-9
    # Its limits, and scipy's own computation on a few points.
    assert bivariate_normal_cdf(-np.inf, 1.0, 0.5) == 0.0
    assert bivariate_normal_cdf(np.inf, 0.0, 0.5) == pytest.approx(0.5)
    assert bivariate_normal_cdf(np.inf, np.inf, -0.3) == 1.0
    assert bivariate_normal_cdf(0.0, 0.0, 0.5) == pytest.approx(1 / 4 + np.arcsin(0.5) / (2 * np.pi), abs=1e-15)
    from scipy.stats import multivariate_normal
    for a, b, r in [(0.3, -0.2, 0.4), (-1.1, 0.7, -0.95), (1.9, 1.2, 0.97)]:
        scipy_value = multivariate_normal(cov=[[1, r], [r, 1]]).cdf([a, b])
        assert bivariate_normal_cdf(a, b, r) == pytest.approx(scipy_value, abs=1e-9)


def test_an_empty_category_or_a_constant_item_is_not_estimable_with_the_reason():
    codes = np.array([[0, 1, 2], [1, 1, 0], [2, 1, 1], [0, 1, 2], [1, 1, 0]])
    with pytest.raises(NotEstimable, match=r"item b is constant in this group: everyone answered category 1") as info:
        ordinal_moments(codes, [3, 3, 3], ["a", "b", "c"])
    assert info.value.item == "b" and info.value.category == 1
    codes[:, 1] = [0, 1, 0, 1, 0]
    with pytest.raises(NotEstimable, match=r"item b has no answer in category 2 \(of categories 0–2\) in this group"):
        ordinal_moments(codes, [3, 3, 3], ["a", "b", "c"])
    assert isinstance(NotEstimable("x"), ValueError)
    # Two two-category items that always agree: a 2 × 2 table with two empty cells.
    with pytest.raises(NotEstimable, match="two empty cells"):
        ordinal_moments(np.array([[0, 0], [1, 1], [0, 0], [1, 1]]), [2, 2], ["a", "b"])
    # The public function: a constant column.
    with pytest.raises(NotEstimable, match="item q is constant: every respondent answered 3"):
        polychoric(pd.DataFrame({"p": [1, 2, 3, 1], "q": [3, 3, 3, 3]}))


def test_polychoric_frame_in_frame_out():
    items = ["davi1", "davi5", "davi7", "davi12", "davi16", "davi23", "davi26"]
    data = DATA[items + ["gender"]].copy()
    data.loc[[3, 10], "davi7"] = np.nan
    result = polychoric(data, items)
    assert list(result.index) == list(result.columns) == items
    assert result.attrs["n"] == 1971 and result.attrs["dropped"] == 2
    thresholds = result.attrs["thresholds"]
    assert list(thresholds.columns) == ["item", "threshold", "value"] and len(thresholds) == 28
    assert thresholds["threshold"].tolist()[:5] == [1, 2, 3, 4, 1]
    # The same as the internal API on the complete rows, and as lavaan on everyone (two of 1,973 dropped).
    complete = data.dropna()
    moments = ordinal_moments(complete[items].to_numpy().astype(int), [5] * 7, items)
    assert np.allclose(result.to_numpy(), moments.correlations, atol=1e-15)
    assert np.abs(result.to_numpy() - np.array(STORED["cases"][0]["correlations"])).max() < 0.01
    # Ordered categoricals: their categories' order, not the labels' alphabetical one.
    labels = pd.Categorical.from_codes(DATA["davi1"], ["never", "rarely", "sometimes", "often", "always"],
                                       ordered=True)
    as_labels = polychoric(pd.DataFrame({"a": labels, "b": DATA["davi5"]}))
    as_codes = polychoric(DATA[["davi1", "davi5"]].rename(columns={"davi1": "a", "davi5": "b"}))
    assert np.allclose(as_labels.to_numpy(), as_codes.to_numpy(), atol=1e-15)
    # Categories are the distinct answers: codes 1, 3, 7 are three ordered categories.
    spaced = DATA[["davi1", "davi5"]].replace({0: 1, 1: 1, 2: 3, 3: 7, 4: 7})
    squeezed = DATA[["davi1", "davi5"]].replace({0: 0, 1: 0, 2: 1, 3: 2, 4: 2})
    assert np.allclose(polychoric(spaced).to_numpy(), polychoric(squeezed).to_numpy(), atol=1e-15)
    with pytest.raises(ValueError, match="unordered"):
        polychoric(pd.DataFrame({"a": pd.Categorical(["x", "y", "x"]), "b": [1, 2, 1]}))



@pytest.mark.parametrize(("table", "adjusted"), [
    ([[5, 3], [4, 0]], [[5.5, 2.5], [3.5, 0.5]]),    # the empty cell on the diagonal
    ([[5, 0], [4, 3]], [[4.5, 0.5], [4.5, 2.5]]),    # and off it
])
def test_a_two_by_two_table_with_an_empty_cell_gets_lavaans_zero_cell_rule(table, adjusted):
    """A 2 × 2 table (x down, y across) with one empty cell, on the diagonal or off it. The documented rule
    (lavaan's zero.add = 0.5 with zero.keep.margins): 0.5 added to the empty cell and the diagonally opposite
    one, 0.5 taken from the other two (the adjusted tables written out by hand); the thresholds from the
    unchanged margins. The tetrachoric ρ is computed here independently: Φ₂ by quadrature of
    φ(u)·Φ((k − ρu)/√(1 − ρ²)) with scipy, the likelihood Σ f·log π maximised by scipy's bounded minimiser."""
    from scipy import integrate, optimize, stats

    table, adjusted = np.array(table), np.array(adjusted)
    x = np.repeat([0, 0, 1, 1], table.ravel())
    y = np.repeat([0, 1, 0, 1], table.ravel())
    result = polychoric(pd.DataFrame({"x": x, "y": y}))
    rho = result.loc["x", "y"]
    assert np.isfinite(rho) and result.loc["y", "x"] == rho

    assert (adjusted.sum(axis=0) == table.sum(axis=0)).all() and (adjusted.sum(axis=1) == table.sum(axis=1)).all()
    tau_x, tau_y = stats.norm.ppf(table[0].sum() / 12), stats.norm.ppf(table[:, 0].sum() / 12)

    def phi2(h, k, r):
        integrand = lambda u: stats.norm.pdf(u) * stats.norm.cdf((k - r * u) / np.sqrt(1 - r * r))  # noqa: E731
        return integrate.quad(integrand, -np.inf, h, epsabs=1e-14, epsrel=1e-12)[0]

    def minus_loglik(r):
        p00, px, py = phi2(tau_x, tau_y, r), stats.norm.cdf(tau_x), stats.norm.cdf(tau_y)
        return -(adjusted * np.log([[p00, px - p00], [py - p00, 1 - px - py + p00]])).sum()

    independent = optimize.minimize_scalar(minus_loglik, bounds=(-0.999, 0.999), method="bounded",
                                           options={"xatol": 1e-10}).x
    assert rho == pytest.approx(independent, abs=1e-6)
    assert np.sign(rho) == (-1 if table[1, 1] == 0 else 1)   # an empty (1, 1) cell: never high together
    thresholds = result.attrs["thresholds"].set_index("item")["value"]
    assert thresholds.to_dict() == pytest.approx({"x": tau_x, "y": tau_y}, abs=1e-12)


def test_an_ordered_categorical_with_an_unused_category_equals_its_integer_codes():
    """The docstring: an item's categories are its distinct answers (an ordered categorical's in its
    order). A category nobody chose ("rarely") is therefore no category of the item: the result is that of
    the integer codes of the answers given (0, 2, 3, 4), and nothing is raised."""
    names = ["never", "rarely", "sometimes", "often", "always"]
    codes = DATA["davi1"].replace({1: 0})   # nobody answers 1 ("rarely") any more
    assert 1 not in set(codes)
    labels = pd.Categorical.from_codes(codes, names, ordered=True)
    assert "rarely" in labels.categories
    as_labels = polychoric(pd.DataFrame({"a": labels, "b": DATA["davi5"]}))
    as_codes = polychoric(pd.DataFrame({"a": codes, "b": DATA["davi5"]}))
    assert np.allclose(as_labels.to_numpy(), as_codes.to_numpy(), atol=1e-15)
    assert as_labels.attrs["thresholds"].equals(as_codes.attrs["thresholds"])
    assert (as_labels.attrs["thresholds"]["item"] == "a").sum() == 3   # four categories answered


def test_28_items_of_5000_respondents_take_well_under_a_second():
    rng = np.random.default_rng(3)
    latent = rng.normal(size=(5000, 1)) @ rng.uniform(0.4, 0.8, (1, 28)) + 0.7 * rng.normal(size=(5000, 28))
    codes = np.digitize(latent, [-1.2, -0.4, 0.3, 1.1])
    items = [f"i{j}" for j in range(28)]
    ordinal_moments(codes, [5] * 28, items)
    start = time.perf_counter()
    moments = ordinal_moments(codes, [5] * 28, items)
    elapsed = time.perf_counter() - start
    print(f"28 items × 5,000 respondents: {elapsed:.3f} s")
    assert moments.gamma.shape == (28 * 4 + 378,) * 2
    assert elapsed < 2.0                # ~0.1 s alone on two cores; generous for a shared machine


def _rscript_with_lavaan() -> str | None:
    rscript = shutil.which("Rscript")
    if rscript is None:
        return None
    found = subprocess.run([rscript, "-e", "cat(requireNamespace('lavaan', quietly = TRUE))"],
                           capture_output=True, text=True)
    return rscript if found.stdout.strip() == "TRUE" else None


@pytest.mark.slow
def test_the_r_script_reproduces_the_stored_output(tmp_path):
    rscript = _rscript_with_lavaan()
    if rscript is None:
        pytest.skip("Rscript with lavaan is not installed")
    out = tmp_path / "polychoric_out.json"
    done = subprocess.run([rscript, str(LAVAAN / "polychoric.R"),
                           str(ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv"), str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    fresh = json.loads(out.read_text())
    if fresh["lavaan"] != STORED["lavaan"]:
        pytest.skip(f"lavaan {fresh['lavaan']} here, the stored output is lavaan {STORED['lavaan']}'s")
    for new, old in zip(fresh["cases"], STORED["cases"], strict=True):
        assert new["gamma_names"] == old["gamma_names"] and new["n"] == old["n"]
        for key in ("thresholds", "wls_obs", "correlations", "gamma"):
            assert np.allclose(np.array(new[key], dtype=float), np.array(old[key], dtype=float),
                               rtol=1e-10, atol=1e-12), (new["subscale"], new["group"], key)
