"""The factor model for items treated as continuous: normal-theory ML with a mean structure, and MLR.

Per group g: x = ν + Λη + ε, Σ = ΛΦΛ' + Θ (Θ diagonal), μ = ν + Λα. The parameter kinds of
:class:`~.layout.Layout` are ``loadings`` (the first item of each factor is its marker, fixed at 1),
``residuals`` (diag Θ), ``factor_cov`` (the lower triangle of Φ, row by row), ``intercepts`` (ν) and
``factor_means`` (α; fixed at 0 unless intercepts are held equal, and then fixed in group 1 only).

ML (lavaan's ``likelihood = "normal"``): F_g = log|Σ| + tr(SΣ⁻¹) − log|S| − p + (ȳ − μ)'Σ⁻¹(ȳ − μ)
with S of divisor N_g, F = Σ_g (N_g/N)·F_g and χ² = N·F. MLR (lavaan's ``estimator = "MLR"``) keeps
those estimates and corrects the test by the Yuan–Bentler scaling factor as Mplus computes it
(lavaan's ``test = "yuan.bentler.mplus"``): c = Σ_g [tr(A₁⁻¹B₁)_g − (N_g/N)·tr(B₀_g E⁻¹)] / df, with A₁
and B₁ the expected and first-order (case-wise) information of the saturated model at the sample
moments, B₀_g the first-order information of the model in group g and E the model's observed
information; its standard errors are the sandwich E⁻¹B₀E⁻¹/N (Huber–White).

May import numpy, scipy and the siblings :mod:`.layout`, :mod:`.fisher` and :mod:`.normal_theory` (the
multivariate normal's information about its moments, which this module's ML and MLR rest on).

Checked in tests/test_invariance.py (lavaan's published Holzinger & Swineford fit; the configural
fit as the sum of per-group semopy fits; the analytic gradient against the numerical derivative of
the discrepancy) and tests/test_invariance_lavaan.py (ML and MLR χ², df, CFI, TLI, RMSEA, SRMR,
robust SEs and latent means against lavaan 0.6.14, stored output of tests/data/lavaan/invariance.R).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
from scipy import linalg

from psyq.analysis.statistics.invariance import fisher
from psyq.analysis.statistics.invariance.layout import Layout
from psyq.analysis.statistics.invariance.normal_theory import (casewise_scores, normal_weight, saturated_trace,
                                                               vech_indices, weighted_cross)

try:   # installed with scikit-learn, which pingouin requires
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    def threadpool_limits(limits: int) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

# A variance is bounded below by this share of its item's (marker's) sample variance: the bound keeps
# Σ positive definite; an estimate within BOUND_TOLERANCE of it is reported as a Heywood case.
VARIANCE_FLOOR = 1e-6
BOUND_TOLERANCE = 1e-4
# The optimizer's answer is accepted when the largest projected gradient of F = χ²/N is below this
# (it aims a thousand times lower).
GRADIENT_TOLERANCE = 1e-5
# A loading beyond this many times its factor's marker (in standard units) has run off: the marker
# barely measures its factor, whose scale it sets, and the fit would crawl towards an infinite loading.
MAX_LOADING_RATIO = 20.0
KINDS = ("loadings", "residuals", "factor_cov", "intercepts", "factor_means")


@dataclass(frozen=True)
class Sample:
    """One group's answers (complete cases) and their moments: mean and covariance with divisor N."""
    label: str
    values: np.ndarray

    @property
    def n(self) -> int:
        return len(self.values)

    @cached_property
    def mean(self) -> np.ndarray:
        return self.values.mean(axis=0)

    @cached_property
    def cov(self) -> np.ndarray:
        centred = self.values - self.mean
        return centred.T @ centred / self.n

    @cached_property
    def log_det_cov(self) -> float:
        return float(np.linalg.slogdet(self.cov)[1])


@dataclass(frozen=True)
class Structure:
    """Which factor each item loads on and which items are markers."""
    factor_of: np.ndarray
    marker: np.ndarray

    @property
    def p(self) -> int:
        return len(self.factor_of)

    @property
    def m(self) -> int:
        return int(self.factor_of.max()) + 1


def free_parameters(structure: Structure, n_groups: int, equal: Sequence[str]) -> dict[str, np.ndarray]:
    """The free flags of every kind in every group for a level that holds the `equal` kinds equal."""
    p, m = structure.p, structure.m
    means_free = np.zeros((n_groups, m), dtype=bool)
    if "intercepts" in equal:
        # Factor means are identified once intercepts are equal, and then relative to group 1.
        means_free[1:] = True
    return {"loadings": np.tile(~structure.marker, (n_groups, 1)),
            "residuals": np.ones((n_groups, p), dtype=bool),
            "factor_cov": np.ones((n_groups, m * (m + 1) // 2), dtype=bool),
            "intercepts": np.ones((n_groups, p), dtype=bool),
            "factor_means": means_free}


def values(theta: np.ndarray, places: np.ndarray, default: float) -> np.ndarray:
    """A kind's values in every group from a parameter vector and its places (−1: the default)."""
    return np.where(places >= 0, theta[np.maximum(places, 0)], default)


def matrices(theta_split: np.ndarray, layout: Layout, structure: Structure, g: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group g's Λ, Φ, α, diag Θ and ν from the split vector."""
    p, m = structure.p, structure.m
    lam = np.zeros((p, m))
    lam[np.arange(p), structure.factor_of] = values(theta_split, layout.split["loadings"][g], 1.0)
    phi = np.zeros((m, m))
    rows, cols = _tril(m)
    phi[rows, cols] = values(theta_split, layout.split["factor_cov"][g], 0.0)
    phi[cols, rows] = phi[rows, cols]
    alpha = values(theta_split, layout.split["factor_means"][g], 0.0)
    residuals = values(theta_split, layout.split["residuals"][g], 0.0)
    nu = values(theta_split, layout.split["intercepts"][g], 0.0)
    return lam, phi, alpha, residuals, nu


def implied(theta_split: np.ndarray, layout: Layout, structure: Structure, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Group g's implied covariance Σ = ΛΦΛ' + Θ and mean μ = ν + Λα."""
    lam, phi, alpha, residuals, nu = matrices(theta_split, layout, structure, g)
    return lam @ phi @ lam.T + np.diag(residuals), nu + lam @ alpha


def discrepancy(theta: np.ndarray, layout: Layout, samples: Sequence[Sample], structure: Structure,
                per_group: list[float] | None = None, split: bool = False) -> tuple[float, np.ndarray]:
    """F = Σ_g (N_g/N)·F_g (so χ² = N·F) and its gradient (over the reduced vector, or the split one
    when `split`); each F_g is appended to `per_group` when given.

    With d = ȳ − μ, W = Σ⁻¹(Σ − S − dd')Σ⁻¹ and b = Σ⁻¹d: ∂F_g/∂Λ = 2WΛΦ − 2bα', ∂F_g/∂Φ = Λ'WΛ,
    ∂F_g/∂θᵢ = Wᵢᵢ, ∂F_g/∂ν = −2b, ∂F_g/∂α = −2Λ'b.
    """
    theta_split = theta if split else layout.expand(theta)
    n_total = sum(s.n for s in samples)
    value, grad = 0.0, np.zeros(layout.n_split)
    p, m = structure.p, structure.m
    rows, cols = _tril(m)
    for g, sample in enumerate(samples):
        lam, phi, alpha, residuals, nu = matrices(theta_split, layout, structure, g)
        sigma, mu = lam @ phi @ lam.T + np.diag(residuals), nu + lam @ alpha
        try:
            chol = linalg.cho_factor(sigma, lower=True)
        except linalg.LinAlgError:
            # Not positive definite: an impossible point, which the line search backs away from.
            return 1e10, np.zeros(layout.n_split if split else layout.n_reduced)
        sigma_inv = linalg.cho_solve(chol, np.eye(p))
        cov = sample.cov
        d = sample.mean - mu
        b = sigma_inv @ d
        log_det = 2.0 * np.sum(np.log(np.diag(chol[0])))
        f_g = log_det + np.trace(cov @ sigma_inv) - sample.log_det_cov - p + d @ b
        weight = sample.n / n_total
        value += weight * f_g
        if per_group is not None:
            per_group.append(float(f_g))

        w = sigma_inv @ (sigma - cov - np.outer(d, d)) @ sigma_inv
        d_lam = (2.0 * w @ lam @ phi - 2.0 * np.outer(b, alpha))[np.arange(p), structure.factor_of]
        d_phi = lam.T @ w @ lam
        d_phi = np.where(rows == cols, d_phi[rows, cols], 2.0 * d_phi[rows, cols])   # Φ is symmetric
        for kind, derivative in (("loadings", d_lam), ("factor_cov", d_phi), ("residuals", np.diag(w)),
                                 ("intercepts", -2.0 * b), ("factor_means", -2.0 * lam.T @ b)):
            places = layout.split[kind][g]
            grad[places[places >= 0]] += weight * derivative[places >= 0]
    return value, (grad if split else layout.fold(grad))


def loadings_ran_off(layout: Layout, structure: Structure, items: Sequence[str], labels: Sequence[str],
                     units: np.ndarray) -> Callable[[np.ndarray], str]:
    """:func:`.fisher.minimise`'s `ran_off` check: the reason when a loading, in standard units
    (times `units`: each item's SD over its marker's, or 1), is beyond ±MAX_LOADING_RATIO, else ""."""
    places = layout.reduced("loadings")

    def check(theta: np.ndarray) -> str:
        ratios = np.where(places >= 0, theta[np.maximum(places, 0)], 1.0) / units
        g, i = np.unravel_index(int(np.argmax(np.abs(ratios))), ratios.shape)
        if abs(ratios[g, i]) <= MAX_LOADING_RATIO:
            return ""
        marker = items[int(np.flatnonzero(structure.marker & (structure.factor_of == structure.factor_of[i]))[0])]
        return (f"the estimate ran off: item {items[i]}'s loading in group '{labels[g]}' passed "
                f"±{MAX_LOADING_RATIO:g} times that of its marker, item {marker} (which barely measures the factor "
                "there)")
    return check


def marker_start(matrix: np.ndarray, structure: Structure, floors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Loadings and factor variances to start from: per factor, the first principal component of its
    items' block of `matrix` (a covariance or correlation matrix), relative to the marker's loading;
    each variance at least its `floors` entry. Returns (loadings, Φ's lower triangle)."""
    m = structure.m
    markers = np.flatnonzero(structure.marker)
    diagonal = np.flatnonzero(np.equal(*_tril(m)))
    lam = np.ones(structure.p)
    phi = np.zeros(m * (m + 1) // 2)
    for f in range(m):
        items = np.flatnonzero(structure.factor_of == f)
        eigenvalues, vectors = np.linalg.eigh(matrix[np.ix_(items, items)])
        axis = vectors[:, -1] * np.sqrt(max(eigenvalues[-1], 0.0))
        marker_loading = axis[items == markers[f]][0]
        if abs(marker_loading) > 1e-8:
            lam[items] = np.clip(axis / marker_loading, -10, 10)
        phi[diagonal[f]] = max(marker_loading ** 2, floors[f])
    return lam, phi


def start_values(layout: Layout, samples: Sequence[Sample], structure: Structure) -> np.ndarray:
    """Start values (reduced vector): loadings and factor variances from :func:`marker_start` on each
    group's covariance, residual variances half the item variances, factor covariances 0; intercepts
    at the group's means (group 1's where they are held equal), factor means at the groups'
    differences on the markers. Shared parameters take the N-weighted average of the groups'."""
    markers = np.flatnonzero(structure.marker)
    first = samples[0]
    held = layout.reduced("intercepts")
    starts = []
    for g, sample in enumerate(samples):
        cov, mean = sample.cov, sample.mean
        lam, phi = marker_start(cov, structure, 0.05 * np.diag(cov)[markers])
        starts.append({"loadings": lam, "residuals": np.diag(cov) / 2, "factor_cov": phi,
                       "intercepts": np.where(held[g] == held[0], first.mean, mean),
                       "factor_means": mean[markers] - first.mean[markers]})
    return layout.average(starts, [s.n for s in samples])


def _standard_units(samples: Sequence[Sample], structure: Structure) -> np.ndarray:
    """Each item's SD over its factor's marker's, pooled over the groups: a loading divided by it is in
    standard units (items on different scales compare)."""
    values = np.vstack([s.values for s in samples])
    sd = values.std(axis=0)
    markers = np.flatnonzero(structure.marker)
    with np.errstate(divide="ignore", invalid="ignore"):
        units = sd / sd[markers][structure.factor_of]
    return np.where(np.isfinite(units) & (units > 0), units, 1.0)


def lower_bounds(layout: Layout, samples: Sequence[Sample], structure: Structure) -> tuple[np.ndarray, np.ndarray]:
    """Residual and factor variances stay above VARIANCE_FLOOR times their item's (marker's) variance.

    Returns the lower bound of every reduced parameter (−inf when free) and the variance it was
    scaled by (NaN when free).
    """
    scale = np.full(layout.n_reduced, np.nan)
    markers = np.flatnonzero(structure.marker)
    diagonal = np.flatnonzero(np.equal(*_tril(structure.m)))
    for g, sample in enumerate(samples):
        variances = np.diag(sample.cov)
        residuals = layout.reduced("residuals")[g]
        scale[residuals[residuals >= 0]] = variances[residuals >= 0]
        factor_variances = layout.reduced("factor_cov")[g][diagonal]
        scale[factor_variances] = variances[markers]
    return np.where(np.isnan(scale), -np.inf, VARIANCE_FLOOR * scale), scale


@dataclass
class Fit:
    """One fitted level: the reduced estimates, χ² = N·F and each group's share, and what went wrong."""
    layout: Layout
    theta: np.ndarray
    chi2: float
    group_chi2: list[float]
    heywood: list[str]
    converged: bool
    message: str

    @property
    def theta_split(self) -> np.ndarray:
        return self.layout.expand(self.theta)


def expected_information(theta_split: np.ndarray, layout: Layout, samples: Sequence[Sample],
                         structure: Structure) -> np.ndarray:
    """Σ_g (N_g/N)·Δ_g'W_gΔ_g over the split vector: the expected information of one case, W_g the
    normal weight of :func:`normal_weight` (Δ'WΔ taken through :func:`weighted_cross`, without W)."""
    n_total = sum(s.n for s in samples)
    total = np.zeros((layout.n_split, layout.n_split))
    for g, sample in enumerate(samples):
        delta = jacobian(theta_split, layout, structure, g)
        sigma, _ = implied(theta_split, layout, structure, g)
        total += sample.n / n_total * weighted_cross(delta, sigma)
    return total


def hessian(theta: np.ndarray, layout: Layout, samples: Sequence[Sample], structure: Structure) -> np.ndarray:
    """F's Hessian over the reduced vector, analytically. Per group, with A = Σ⁻¹, d = ȳ − μ, b = Ad,
    W = A(Σ − S − dd')A (F_g's gradient is tr(WΣ_i) − 2b'μ_i, Σ_i = ∂Σ/∂θ_i, μ_i = ∂μ/∂θ_i):
    ∂²F_g/∂θ_i∂θ_j = tr(AΣ_iAΣ_j) − 2tr(AΣ_iWΣ_j) + 2b'Σ_iAμ_j + 2b'Σ_jAμ_i + 2μ_i'Aμ_j + tr(WΣ_ij) − 2b'μ_ij,
    the second derivatives of the moments being those of the bilinear ΛΦΛ' and Λα: ∂²σ_kl/∂λ_k∂λ_l =
    φ_{f_k f_l} (twice on the diagonal), ∂²Σ/∂λ_k∂φ_rs = e_k e_{f_k}'E_rsΛ' + its transpose, ∂²μ_k/∂λ_k∂α_{f_k}
    = 1. tests/test_report_at_scale.py checks it against central differences of the analytic gradient
    (how it was computed before, at 2 × parameters evaluations of F)."""
    theta_split = layout.expand(theta)
    n_total = sum(s.n for s in samples)
    p, m = structure.p, structure.m
    factor_of = structure.factor_of
    rows, cols = vech_indices(p)
    tril_r, tril_c = _tril(m)
    total = np.zeros((layout.n_split, layout.n_split))
    for g, sample in enumerate(samples):
        lam, phi, alpha, residuals, nu = matrices(theta_split, layout, structure, g)
        sigma, mu = lam @ phi @ lam.T + np.diag(residuals), nu + lam @ alpha
        a = np.linalg.inv(sigma)
        d = sample.mean - mu
        b = a @ d
        w = a @ (sigma - sample.cov - np.outer(d, d)) @ a
        own = np.unique(np.concatenate([places[g][places[g] >= 0] for places in layout.split.values()]))
        delta = jacobian(theta_split, layout, structure, g)[:, own]
        means = delta[:p].T                                   # μ_i, one row per parameter
        x = np.zeros((len(own), p, p))                        # Σ_i
        x[:, rows, cols] = delta[p:].T
        x[:, cols, rows] = delta[p:].T
        ax, wx = a @ x, w @ x
        flat = len(own), p * p
        h = (ax.reshape(flat) @ ax.transpose(0, 2, 1).reshape(flat).T
             - 2.0 * ax.reshape(flat) @ wx.transpose(0, 2, 1).reshape(flat).T)
        cross = (x @ b) @ (means @ a).T                        # b'Σ_iAμ_j
        h += 2.0 * (cross + cross.T) + 2.0 * means @ a @ means.T
        # tr(WΣ_ij) − 2b'μ_ij: the moments' own second derivatives
        local = np.full(layout.n_split, -1)
        local[own] = np.arange(len(own))
        at_loading = np.where(layout.split["loadings"][g] >= 0, local[np.maximum(layout.split["loadings"][g], 0)], -1)
        free = np.flatnonzero(at_loading >= 0)
        k, l = np.meshgrid(free, free, indexing="ij")
        h[at_loading[k], at_loading[l]] += 2.0 * phi[factor_of[k], factor_of[l]] * w[k, l]
        lam_w = lam.T @ w                                      # (Λ'W)_{c,k}
        at_cov = layout.split["factor_cov"][g]
        for e, (r, c) in enumerate(zip(tril_r, tril_c)):
            if at_cov[e] < 0:
                continue
            j = local[at_cov[e]]
            for i_item in free:
                f = factor_of[i_item]
                if f not in (r, c):
                    continue
                other = c if f == r else r
                value = 2.0 * lam_w[other, i_item]
                h[at_loading[i_item], j] += value
                h[j, at_loading[i_item]] += value
        at_mean = layout.split["factor_means"][g]
        for i_item in free:
            f = factor_of[i_item]
            if at_mean[f] >= 0:
                j = local[at_mean[f]]
                h[at_loading[i_item], j] -= 2.0 * b[i_item]
                h[j, at_loading[i_item]] -= 2.0 * b[i_item]
        total[np.ix_(own, own)] += sample.n / n_total * h
    folded = layout.fold_columns(layout.fold_columns(total).T)
    return (folded + folded.T) / 2


DEFAULTS = {"loadings": 1.0, "residuals": 0.0, "factor_cov": 0.0, "intercepts": 0.0, "factor_means": 0.0}


def fit(layout: Layout, samples: Sequence[Sample], structure: Structure, items: Sequence[str],
        factor_names: Sequence[str], start: Fit | None = None) -> Fit:
    """Minimise the multi-group ML discrepancy of one layout by Newton steps (:mod:`.fisher`), from
    the estimates of `start` (a fit of a neighbouring layout) when given."""
    lower, scale = lower_bounds(layout, samples, structure)
    fold = layout.fold_matrix()

    def expected(theta: np.ndarray) -> np.ndarray:
        # F's expected Hessian: F_g ≈ −2/N_g · log-likelihood
        return 2.0 * fold.T @ expected_information(layout.expand(theta), layout, samples, structure) @ fold

    def information(theta: np.ndarray) -> np.ndarray:
        """Far from the optimum (gradient above 1e-3) the expected information, cheap and positive
        definite; near it F's Hessian by central differences of the analytic gradient (Newton converges
        fast however badly the model fits, where the expected information's rate falls with the
        misfit), or the expected information where that Hessian is not positive definite."""
        if float(np.max(np.abs(discrepancy(theta, layout, samples, structure)[1]))) > 1e-3:
            return expected(theta)
        second = hessian(theta, layout, samples, structure)
        try:
            np.linalg.cholesky(second)
        except np.linalg.LinAlgError:
            return expected(theta)
        return second

    # The matrices are small: a threaded BLAS only adds waiting (ten times slower on a busy 2-core machine).
    with threadpool_limits(1):
        result = fisher.minimise(lambda t: discrepancy(t, layout, samples, structure), information,
                                 start_values(layout, samples, structure) if start is None else
                                 layout.carried(start.layout, start.theta_split, DEFAULTS), lower,
                                 slack=np.nan_to_num(BOUND_TOLERANCE * scale), tolerance=GRADIENT_TOLERANCE * 1e-3,
                                 ties=layout.variance_ties(structure.m),
                                 ran_off=loadings_ran_off(layout, structure, items, [s.label for s in samples],
                                                          _standard_units(samples, structure)))
    theta = result.theta
    group_f: list[float] = []
    _, grad = discrepancy(theta, layout, samples, structure, group_f)
    projected, at_bound = fisher.projected(grad, theta, lower, np.nan_to_num(BOUND_TOLERANCE * scale),
                                           layout.variance_ties(structure.m))
    converged = fisher.accepted(result, projected, GRADIENT_TOLERANCE)
    heywood = []
    diagonal = np.flatnonzero(np.equal(*_tril(structure.m)))
    for g, sample in enumerate(samples):
        for i, index in enumerate(layout.reduced("residuals")[g]):
            if index >= 0 and at_bound[index]:
                heywood.append(f"residual variance of {items[i]} in group '{sample.label}'")
        for f, index in enumerate(layout.reduced("factor_cov")[g][diagonal]):
            if at_bound[index]:
                heywood.append(f"variance of factor {factor_names[f]} in group '{sample.label}'")
    n_total = sum(s.n for s in samples)
    return Fit(layout, theta, n_total * float(result.value), [s.n * f for s, f in zip(samples, group_f)], heywood,
               converged, f"{result.message} after {result.iterations} Fisher-scoring steps")


# --- the implied moments and their Jacobian (score tests, MLR) ------------------------------------

@lru_cache(maxsize=64)
def _tril(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Φ's lower triangle, row by row (cached)."""
    return np.tril_indices(m)


def moments(theta_split: np.ndarray, layout: Layout, structure: Structure, g: int) -> np.ndarray:
    """Group g's implied moments (μ, vech Σ)."""
    sigma, mu = implied(theta_split, layout, structure, g)
    rows, cols = vech_indices(structure.p)
    return np.concatenate([mu, sigma[rows, cols]])


def jacobian(theta_split: np.ndarray, layout: Layout, structure: Structure, g: int) -> np.ndarray:
    """Δ_g = ∂(μ, vech Σ)/∂θ over the split vector, analytically. With μ = ν + Λα, Σ = ΛΦΛ' + Θ and
    simple structure (item i on factor f_i, loading λ_i): ∂μ_i/∂ν_i = 1, ∂μ_i/∂λ_i = α_{f_i},
    ∂μ_i/∂α_{f_i} = λ_i; ∂σ_kl/∂θ_k = 1 (k = l); ∂σ_kl/∂λ_k = λ_lφ_{f_k f_l} and ∂σ_kl/∂λ_l =
    λ_kφ_{f_k f_l} (both, 2λ_kφ, when k = l); ∂σ_kl/∂φ_rs = λ_kλ_l when {f_k, f_l} = {r, s} (Φ's lower
    triangle, each element standing for both of its places). tests/test_report_at_scale.py checks it
    against central differences of the moments."""
    lam, phi, alpha, _, _ = matrices(theta_split, layout, structure, g)
    p, m = structure.p, structure.m
    factor_of = structure.factor_of
    loading = lam[np.arange(p), factor_of]
    items = np.arange(p)
    k, l = vech_indices(p)                      # σ_kl, k ≥ l, lavaan's order
    rows_s = p + np.arange(len(k))
    phi_kl = phi[factor_of[k], factor_of[l]]
    tril_r, tril_c = _tril(m)
    element = np.full((m, m), -1)
    element[tril_r, tril_c] = element[tril_c, tril_r] = np.arange(len(tril_r))
    diagonal = k == l
    parts = (("intercepts", items, items, np.ones(p)),
             ("loadings", items, items, alpha[factor_of]),
             ("factor_means", items, factor_of, loading),
             ("residuals", rows_s[diagonal], k[diagonal], np.ones(p)),
             ("loadings", rows_s, k, loading[l] * phi_kl),
             ("loadings", rows_s, l, loading[k] * phi_kl),
             ("factor_cov", rows_s, element[factor_of[k], factor_of[l]], loading[k] * loading[l]))
    jac = np.zeros((p + len(k), layout.n_split))
    for kind, rows, elements, values in parts:
        places = layout.split[kind][g][elements]
        keep = places >= 0
        np.add.at(jac, (rows[keep], places[keep]), values[keep])
    return jac


class ContinuousModel:
    """The groups' complete answers and the factor structure, fitted by ML or MLR.

    Every method works on a :class:`~.layout.Layout` made from :meth:`free` (which kinds are held
    equal, which are released) and on the :class:`Fit` that :meth:`fit` returns.
    """

    moment_name = "means and covariances"

    def __init__(self, samples: Sequence[Sample], structure: Structure, items: Sequence[str],
                 factor_names: Sequence[str], estimator: str):
        self.samples, self.structure = list(samples), structure
        self.items, self.factor_names, self.estimator = list(items), list(factor_names), estimator
        self.n = sum(s.n for s in samples)
        self.weights = np.array([s.n / self.n for s in samples])

    def free(self, equal: Sequence[str]) -> dict[str, np.ndarray]:
        return free_parameters(self.structure, len(self.samples), equal)

    def pinned(self, equal: Sequence[str]) -> tuple[str, ...]:
        return ()

    def n_moments(self) -> int:
        p = self.structure.p
        return len(self.samples) * (p * (p + 1) // 2 + p)

    def fit(self, layout: Layout, start: Fit | None = None) -> Fit:
        return fit(layout, self.samples, self.structure, self.items, self.factor_names, start)

    # -- information ------------------------------------------------------------------------------
    def _deltas(self, result: Fit) -> list[np.ndarray]:
        return [jacobian(result.theta_split, result.layout, self.structure, g) for g in range(len(self.samples))]

    def expected_information(self, result: Fit) -> np.ndarray:
        """Σ_g (N_g/N)·Δ_g'W_gΔ_g over the split vector: the information of one case."""
        return expected_information(result.theta_split, result.layout, self.samples, self.structure)

    def observed_information(self, result: Fit) -> np.ndarray:
        """½ the Hessian of F over the reduced vector (F = −2/N·log-likelihood + constant)."""
        return 0.5 * hessian(result.theta, result.layout, self.samples, self.structure)

    def _first_order(self, result: Fit, deltas: list[np.ndarray]) -> list[np.ndarray]:
        """B₀_g: the mean outer product of the cases' scores over the split vector, per group."""
        blocks = []
        for g, (sample, delta) in enumerate(zip(self.samples, deltas)):
            sigma, mu = implied(result.theta_split, result.layout, self.structure, g)
            scores = casewise_scores(sample.values, sigma, mu) @ delta
            blocks.append(scores.T @ scores / sample.n)
        return blocks

    def information(self, result: Fit) -> np.ndarray:
        """The information of the reduced vector the estimator's standard errors rest on: expected for
        ML (lavaan's default), observed for MLR (lavaan's default for MLR)."""
        if self.estimator == "MLR":
            return self.observed_information(result)
        expected = self.expected_information(result)
        fold = result.layout.fold_matrix()
        return fold.T @ expected @ fold

    def vcov(self, result: Fit) -> np.ndarray:
        """The covariance of the reduced estimates: E⁻¹/N (ML) or the sandwich E⁻¹B₀E⁻¹/N (MLR)."""
        information_inv = np.linalg.pinv(self.information(result))
        if self.estimator != "MLR":
            return information_inv / self.n
        fold = result.layout.fold_matrix()
        meat = sum(w * fold.T @ b @ fold for w, b in zip(self.weights, self._first_order(result, self._deltas(result))))
        return information_inv @ meat @ information_inv / self.n

    # -- tests ------------------------------------------------------------------------------------
    def scaling(self, result: Fit, df: int) -> tuple[float, float]:
        """The Yuan–Bentler scaling factor c (Mplus' variant, lavaan's ``yuan.bentler.mplus``) and the shift
        (0: the scaled statistic is χ²/c)."""
        deltas = self._deltas(result)
        fold = result.layout.fold_matrix()
        information_inv = np.linalg.pinv(self.information(result))
        trace = 0.0
        for g, (sample, b0) in enumerate(zip(self.samples, self._first_order(result, deltas))):
            trace += (saturated_trace(sample.values, sample.mean, sample.cov)
                      - self.weights[g] * np.sum((fold.T @ b0 @ fold) * information_inv.T))
        return float(trace / df), 0.0

    def baseline(self) -> dict[str, float]:
        """The independence model (free means and variances, zero covariances, per group): at its optimum
        Σ = diag(S) and μ = ȳ, so F_g = Σᵢ log sᵢᵢ − log|S|; with MLR also its scaling factor."""
        p = self.structure.p
        chi2 = sum(s.n * (np.sum(np.log(np.diag(s.cov))) - np.linalg.slogdet(s.cov)[1]) for s in self.samples)
        df = len(self.samples) * p * (p - 1) // 2
        out = {"chi2": float(chi2), "df": df, "scaling": float("nan"), "shift": 0.0}
        if self.estimator == "MLR":
            rows, cols = vech_indices(p)
            select = np.zeros((p + len(rows), 2 * p))
            select[np.arange(p), np.arange(p)] = 1.0
            select[p + np.flatnonzero(rows == cols), p + np.arange(p)] = 1.0
            trace = 0.0
            for sample, weight in zip(self.samples, self.weights):
                sigma = np.diag(np.diag(sample.cov))
                information = select.T @ normal_weight(sigma) @ select   # this group's own parameters only
                scores = casewise_scores(sample.values, sigma, sample.mean) @ select
                b0 = scores.T @ scores / sample.n
                trace += saturated_trace(sample.values, sample.mean, sample.cov) - np.sum(b0 * np.linalg.inv(information).T)
            out["scaling"] = float(trace / df)
        return out

    def srmr(self, result: Fit) -> float:
        """lavaan's srmr_bentler: residuals standardised by the sample SDs, means included, N_g/N-weighted."""
        total = 0.0
        for g, sample in enumerate(self.samples):
            sigma, mu = implied(result.theta_split, result.layout, self.structure, g)
            cov = sample.cov
            sd = np.sqrt(np.diag(cov))
            cov_residuals = ((cov - sigma) / np.outer(sd, sd))[np.tril_indices(len(sd))]
            mean_residuals = (sample.mean - mu) / sd
            elements = len(cov_residuals) + len(mean_residuals)
            total += self.weights[g] * np.sqrt((np.sum(cov_residuals ** 2) + np.sum(mean_residuals ** 2)) / elements)
        return float(total)

    def score_and_information(self, result: Fit) -> tuple[np.ndarray, np.ndarray]:
        """The score of one case (−½ ∂F/∂θ) and the expected information, over the split vector: what
        lavaan's ``lavTestScore`` uses (its default ``information = "expected"``)."""
        _, gradient = discrepancy(result.theta_split, result.layout, self.samples, self.structure, split=True)
        return -0.5 * gradient, self.expected_information(result)

    def factor_variance(self, result: Fit, g: int, f: int) -> float:
        """Factor f's latent variance in group g."""
        return float(matrices(result.theta_split, result.layout, self.structure, g)[1][f, f])
