"""Measurement invariance between groups (a cohort and humans) by multi-group confirmatory factor analysis.

:func:`measurement_invariance` fits one factor model to every group at three levels of equality
and returns one row per level (the report's sentence on each row:
:func:`psyq.analysis.report.readings.invariance_verdicts`). The levels (Meredith, 1993; Vandenberg & Lance, 2000):

* **configural** — the same items load on the same factors in every group; every parameter free
  per group (factor means fixed to 0);
* **metric** (weak) — the loadings are equal across groups; factor variances and covariances,
  residual variances and intercepts stay free in every group;
* **scalar** (strong) — loadings and intercepts are equal; the factor means are fixed to 0 in the
  first group and free in the others, so that a group difference in the items is carried by the
  factors only. Only under scalar invariance do mean scale scores compare between the groups.

Estimation reproduces lavaan's defaults for continuous items (``cfa(model, data, group=...,
group.equal=...)``; Rosseel, 2012), written here on numpy/scipy because no Python SEM package we
checked (semopy 2.3 fits each group on its own) puts equality constraints across groups:

* normal-theory maximum likelihood with a mean structure, likelihood "normal": per group the
  sample covariance S with divisor N_g and the mean vector ȳ, the discrepancy
  F_g = log|Σ| + tr(SΣ⁻¹) − log|S| − p + (ȳ − μ)'Σ⁻¹(ȳ − μ) and the test statistic
  χ² = Σ_g N_g·F_g, minimised by L-BFGS-B with the analytic gradient;
* identification by marker variables (the first item of each factor loads 1); factors covary;
* residual variances and factor variances are kept positive by a bound just above 0; an estimate
  stopped at that bound is a Heywood case (the unbounded solution would be improper) and is named
  in ``note``, never hidden;
* CFI and TLI against lavaan's independence baseline (per group: free means and variances, zero
  covariances; df = G·p(p−1)/2), the same baseline for every level;
* RMSEA as lavaan for G groups: sqrt(max(0, (χ² − df)/(df·N)))·sqrt(G) (Steiger, 1998), its 90 %
  interval from the noncentral χ² (Browne & Cudeck, 1993), also times sqrt(G);
* SRMR as lavaan's default for continuous ML with a mean structure (``srmr_bentler``): per group
  the root mean square of the covariance residuals divided by the sample SDs (sᵢⱼ − σᵢⱼ)/(sᵢ·sⱼ),
  diagonal included, and of the mean residuals (ȳᵢ − μᵢ)/sᵢ, over p(p+1)/2 + p elements; groups
  combined as Σ_g (N_g/N)·SRMR_g;
* Δχ² is the plain likelihood-ratio difference of two nested ML fits (no scaling).

Decision rules (Chen, 2007, for equal groups of N > 300): a step signals non-invariance when CFI
drops by .010 or more (ΔCFI ≤ −.010) *together with* RMSEA rising by .015 or more (ΔRMSEA ≥ .015)
or SRMR rising by .030 or more for loadings (.010 for intercepts). The Δχ² test rejects trivial
differences in large samples and is reported beside them, not instead of them. Chen advises
stricter cut-offs (ΔCFI ≤ −.005, ΔRMSEA ≥ .010) for small or unequal groups.

Nothing is a number that is not estimable: a row whose model cannot be fitted (a group with no more
respondents than items, an item constant within a group, a singular sample covariance, a factor
with one item, a model with df ≤ 0, an optimizer that does not converge) has ``estimable`` False,
NaN statistics and the reason in ``note``. Respondents with a missing item answer are dropped
listwise, and every row's ``note`` says how many (``attrs["dropped"]`` too).

Example (two groups of 150 simulated respondents, one with two shifted intercepts):
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> def sample(n, shift):
    ...     eta = rng.multivariate_normal([0, 0], [[1, .4], [.4, 1]], n)
    ...     x = eta @ np.array([[1, .8, .9, 0, 0, 0], [0, 0, 0, 1, .7, .8]]) + rng.normal(0, .6, (n, 6))
    ...     return pd.DataFrame(x + shift, columns=["a1", "a2", "a3", "b1", "b2", "b3"])
    >>> data = pd.concat([sample(150, 0).assign(group="cohort"),
    ...                   sample(150, [0, .8, 0, 0, 0, -.8]).assign(group="human")])
    >>> fit = measurement_invariance(data, {"A": ["a1", "a2", "a3"], "B": ["b1", "b2", "b3"]}, "group")
    >>> fit[["step", "df", "estimable"]]
             step  df  estimable
    0  configural  16       True
    1      metric  20       True
    2      scalar  24       True
    >>> bool(fit.loc[1, "delta_p"] > .05), bool(fit.loc[2, "delta_p"] < .001)
    (True, True)

References:
    Browne, M. W., & Cudeck, R. (1993). Alternative ways of assessing model fit. In K. A. Bollen &
    J. S. Long (Eds.), *Testing structural equation models* (pp. 136–162). Sage.
    Chen, F. F. (2007). Sensitivity of goodness of fit indexes to lack of measurement invariance.
    *Structural Equation Modeling, 14*(3), 464–504. https://doi.org/10.1080/10705510701301834
    Meredith, W. (1993). Measurement invariance, factor analysis and factorial invariance.
    *Psychometrika, 58*(4), 525–543.
    Rosseel, Y. (2012). lavaan: An R package for structural equation modeling. *Journal of
    Statistical Software, 48*(2), 1–36.
    Steiger, J. H. (1998). A note on multiple sample extensions of the RMSEA fit index.
    *Structural Equation Modeling, 5*(4), 411–419.
    Vandenberg, R. J., & Lance, C. E. (2000). A review and synthesis of the measurement invariance
    literature. *Organizational Research Methods, 3*(1), 4–70.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import linalg, optimize, stats


try:   # installed with scikit-learn, which pingouin requires
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    def threadpool_limits(limits: int) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

STEPS = ("configural", "metric", "scalar")
COLUMNS = ["step", "chi2", "df", "p", "cfi", "tli", "rmsea", "rmsea_low", "rmsea_high", "srmr", "n", "groups",
           "delta_chi2", "delta_df", "delta_p", "delta_cfi", "delta_rmsea", "delta_srmr", "estimable", "note"]
METHOD = ("Multi-group CFA, normal-theory maximum likelihood with mean structure (lavaan's defaults: "
          "likelihood 'normal', marker-variable identification), fitted by psyq.measurement_invariance "
          "(numpy/scipy L-BFGS-B, analytic gradient); CFI/TLI against the independence model with free "
          "means and variances per group; RMSEA × sqrt(G) with 90 % CI; SRMR = lavaan's srmr_bentler "
          "(mean residuals included, groups weighted by N_g/N)")

# Chen (2007), equal groups of N > 300: CFI falls by at least .010 together with RMSEA rising by at
# least .015 or SRMR by at least .030 (loadings) / .010 (intercepts).
CHEN_DELTA_CFI = -0.010
CHEN_DELTA_RMSEA = 0.015
CHEN_DELTA_SRMR = {"metric": 0.030, "scalar": 0.010}
# Conventional bounds of an acceptable configural fit (CFI ≥ .90, RMSEA ≤ .10; Browne & Cudeck, 1993).
ACCEPTABLE_CFI = 0.90
ACCEPTABLE_RMSEA = 0.10

# A variance is bounded below by this share of its item's (marker's) sample variance: the bound keeps
# Σ positive definite; an estimate within BOUND_TOLERANCE of it is reported as a Heywood case.
VARIANCE_FLOOR = 1e-6
BOUND_TOLERANCE = 1e-4
# The optimizer's answer is accepted when the largest projected gradient of F = χ²/N is below this.
GRADIENT_TOLERANCE = 1e-5


@dataclass(frozen=True)
class _Sample:
    """The sufficient statistics of one group: size, mean vector, covariance with divisor N."""
    label: str
    n: int
    mean: np.ndarray
    cov: np.ndarray


@dataclass(frozen=True)
class _Layout:
    """Where each group's model matrices take their values in the parameter vector (−1: fixed).

    Loadings: item i loads on factor ``factor_of[i]``; a −1 there is a marker fixed to 1. Factor
    means: a −1 is fixed to 0. An index shared by several groups is an equality constraint.
    """
    loadings: np.ndarray        # (G, p)
    residuals: np.ndarray       # (G, p)
    factor_cov: np.ndarray      # (G, m, m), symmetric
    intercepts: np.ndarray      # (G, p)
    factor_means: np.ndarray    # (G, m)
    n_params: int


def _layout(step: str, n_groups: int, factor_of: np.ndarray, marker: np.ndarray) -> _Layout:
    """The parameter layout of one invariance level (lavaan's ``group.equal`` and its identification)."""
    p, m = len(factor_of), int(factor_of.max()) + 1
    counter = itertools.count()

    def free_loadings() -> np.ndarray:
        return np.array([-1 if marker[i] else next(counter) for i in range(p)])

    def free_factor_cov() -> np.ndarray:
        cov = np.empty((m, m), dtype=int)
        for j, k in zip(*np.tril_indices(m)):
            cov[j, k] = cov[k, j] = next(counter)
        return cov

    equal_loadings = step in ("metric", "scalar")
    equal_intercepts = step == "scalar"
    shared_loadings = free_loadings() if equal_loadings else None
    shared_intercepts = np.array([next(counter) for _ in range(p)]) if equal_intercepts else None
    loadings, residuals, factor_cov, intercepts, factor_means = [], [], [], [], []
    for g in range(n_groups):
        loadings.append(shared_loadings if equal_loadings else free_loadings())
        residuals.append(np.array([next(counter) for _ in range(p)]))
        factor_cov.append(free_factor_cov())
        intercepts.append(shared_intercepts if equal_intercepts else np.array([next(counter) for _ in range(p)]))
        # Factor means are identified only once intercepts are equal, and then relative to group 1.
        free_means = equal_intercepts and g > 0
        factor_means.append(np.array([next(counter) if free_means else -1 for _ in range(m)]))
    return _Layout(np.array(loadings), np.array(residuals), np.array(factor_cov), np.array(intercepts),
                   np.array(factor_means), next(counter))


def _implied(theta: np.ndarray, layout: _Layout, g: int, factor_of: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group g's model matrices (Λ, Φ, α) and implied moments: Σ = ΛΦΛ' + Θ, μ = ν + Λα."""
    p, m = layout.loadings.shape[1], layout.factor_cov.shape[1]
    load_idx = layout.loadings[g]
    lam = np.zeros((p, m))
    lam[np.arange(p), factor_of] = np.where(load_idx >= 0, theta[np.maximum(load_idx, 0)], 1.0)
    phi = theta[layout.factor_cov[g]]
    mean_idx = layout.factor_means[g]
    alpha = np.where(mean_idx >= 0, theta[np.maximum(mean_idx, 0)], 0.0)
    sigma = lam @ phi @ lam.T + np.diag(theta[layout.residuals[g]])
    mu = theta[layout.intercepts[g]] + lam @ alpha
    return lam, phi, alpha, sigma, mu


def _discrepancy(theta: np.ndarray, layout: _Layout, samples: Sequence[_Sample], factor_of: np.ndarray,
                 per_group: list[float] | None = None) -> tuple[float, np.ndarray]:
    """F = Σ_g (N_g/N)·F_g (so χ² = N·F) and its gradient with respect to the parameter vector;
    each F_g is appended to `per_group` when given.

    With d = ȳ − μ, W = Σ⁻¹(Σ − S − dd')Σ⁻¹ and b = Σ⁻¹d: ∂F_g/∂Λ = 2WΛΦ − 2bα', ∂F_g/∂Φ = Λ'WΛ,
    ∂F_g/∂θᵢ = Wᵢᵢ, ∂F_g/∂ν = −2b, ∂F_g/∂α = −2Λ'b.
    """
    n_total = sum(s.n for s in samples)
    value, grad = 0.0, np.zeros_like(theta)
    p = len(factor_of)
    for g, sample in enumerate(samples):
        lam, phi, alpha, sigma, mu = _implied(theta, layout, g, factor_of)
        try:
            chol = linalg.cho_factor(sigma, lower=True)
        except linalg.LinAlgError:
            # Not positive definite: an impossible point, which the line search backs away from.
            return 1e10, np.zeros_like(theta)
        sigma_inv = linalg.cho_solve(chol, np.eye(p))
        d = sample.mean - mu
        b = sigma_inv @ d
        log_det = 2.0 * np.sum(np.log(np.diag(chol[0])))
        _, log_det_s = np.linalg.slogdet(sample.cov)
        f_g = log_det + np.trace(sample.cov @ sigma_inv) - log_det_s - p + d @ b
        weight = sample.n / n_total
        value += weight * f_g
        if per_group is not None:
            per_group.append(float(f_g))

        w = sigma_inv @ (sigma - sample.cov - np.outer(d, d)) @ sigma_inv
        d_lam = 2.0 * w @ lam @ phi - 2.0 * np.outer(b, alpha)
        load_idx = layout.loadings[g]
        free = load_idx >= 0
        np.add.at(grad, load_idx[free], weight * d_lam[np.arange(p), factor_of][free])
        np.add.at(grad, layout.factor_cov[g].ravel(), weight * (lam.T @ w @ lam).ravel())
        np.add.at(grad, layout.residuals[g], weight * np.diag(w))
        np.add.at(grad, layout.intercepts[g], weight * -2.0 * b)
        mean_idx = layout.factor_means[g]
        np.add.at(grad, mean_idx[mean_idx >= 0], weight * (-2.0 * lam.T @ b)[mean_idx >= 0])
    return value, grad


def _start_values(layout: _Layout, samples: Sequence[_Sample], factor_of: np.ndarray, marker: np.ndarray
                  ) -> np.ndarray:
    """Start values: per group and factor, the first principal component of the factor's items gives the
    loadings relative to the marker and the factor variance; residual variances half the item
    variances, factor covariances 0. Shared parameters take the N-weighted average of the groups'.
    Intercepts start at group 1's means and factor means at the groups' differences on the markers.
    """
    theta = np.zeros(layout.n_params)
    weight = np.zeros(layout.n_params)
    m = layout.factor_cov.shape[1]
    markers = np.flatnonzero(marker)
    first = samples[0]
    for g, sample in enumerate(samples):
        lam = np.ones(len(factor_of))
        phi = np.empty(m)
        for f in range(m):
            items = np.flatnonzero(factor_of == f)
            values, vectors = np.linalg.eigh(sample.cov[np.ix_(items, items)])
            axis = vectors[:, -1] * np.sqrt(max(values[-1], 0.0))
            marker_loading = axis[items == markers[f]][0]
            if abs(marker_loading) > 1e-8:
                lam[items] = np.clip(axis / marker_loading, -10, 10)
            phi[f] = max(marker_loading ** 2, sample.cov[markers[f], markers[f]] * 0.05)
        equal_intercepts = np.array_equal(layout.intercepts[0], layout.intercepts[-1]) and len(samples) > 1
        intercepts = first.mean if equal_intercepts else sample.mean
        means = sample.mean[markers] - first.mean[markers]
        for index, value in [*zip(layout.loadings[g], lam), *zip(layout.residuals[g], np.diag(sample.cov) / 2),
                             *zip(layout.intercepts[g], intercepts), *zip(layout.factor_means[g], means),
                             *zip(np.diag(layout.factor_cov[g]), phi)]:
            if index >= 0:
                theta[index] += sample.n * value
                weight[index] += sample.n
    filled = weight > 0
    theta[filled] /= weight[filled]
    return theta  # the factor covariances (never filled) start at 0


def _lower_bounds(layout: _Layout, samples: Sequence[_Sample], marker: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residual and factor variances stay above VARIANCE_FLOOR times their item's (marker's) variance.

    Returns the lower bound of every parameter (−inf when free) and the variance it was scaled by
    (NaN when free).
    """
    scale = np.full(layout.n_params, np.nan)
    markers = np.flatnonzero(marker)
    for g, sample in enumerate(samples):
        variances = np.diag(sample.cov)
        scale[layout.residuals[g]] = variances
        scale[np.diag(layout.factor_cov[g])] = variances[markers]
    return np.where(np.isnan(scale), -np.inf, VARIANCE_FLOOR * scale), scale


@dataclass
class _Fit:
    chi2: float
    group_chi2: dict[str, float]   # N_g·F_g: each group's share of χ²
    theta: np.ndarray
    heywood: list[str]
    converged: bool
    message: str


def _fit(step: str, samples: Sequence[_Sample], factor_of: np.ndarray, marker: np.ndarray,
         items: Sequence[str], factor_names: Sequence[str]) -> tuple[_Layout, _Fit]:
    """Minimise the multi-group ML discrepancy of one invariance level."""
    layout = _layout(step, len(samples), factor_of, marker)
    lower, scale = _lower_bounds(layout, samples, marker)
    bounds = optimize.Bounds(lower, np.inf)
    # The matrices are small: a threaded BLAS only adds waiting (ten times slower on a busy 2-core machine).
    with threadpool_limits(1):
        result = optimize.minimize(_discrepancy, _start_values(layout, samples, factor_of, marker),
                                   args=(layout, samples, factor_of), jac=True, method="L-BFGS-B", bounds=bounds,
                                   options={"maxiter": 20000, "maxfun": 40000, "ftol": 1e-15, "gtol": 1e-9})
    theta = result.x
    group_f: list[float] = []
    _, grad = _discrepancy(theta, layout, samples, factor_of, group_f)
    at_bound = np.zeros(len(theta), dtype=bool)
    bounded = np.isfinite(lower)
    at_bound[bounded] = theta[bounded] <= lower[bounded] + BOUND_TOLERANCE * scale[bounded]
    # At a lower bound only a gradient pushing further down is allowed (the KKT condition).
    projected = np.where(at_bound, np.minimum(grad, 0.0), grad)
    converged = bool(np.all(np.isfinite(theta))) and float(np.max(np.abs(projected))) < GRADIENT_TOLERANCE
    heywood = []
    for g, sample in enumerate(samples):
        for i, index in enumerate(layout.residuals[g]):
            if at_bound[index]:
                heywood.append(f"residual variance of {items[i]} in group '{sample.label}'")
        for f, index in enumerate(np.diag(layout.factor_cov[g])):
            if at_bound[index]:
                heywood.append(f"variance of factor {factor_names[f]} in group '{sample.label}'")
    n_total = sum(s.n for s in samples)
    group_chi2 = {s.label: s.n * f for s, f in zip(samples, group_f)}
    return layout, _Fit(n_total * float(result.fun), group_chi2, theta, heywood, converged, str(result.message))


def _srmr(theta: np.ndarray, layout: _Layout, samples: Sequence[_Sample], factor_of: np.ndarray) -> float:
    """lavaan's srmr_bentler: residuals standardised by the sample SDs, means included, N_g/N-weighted."""
    n_total = sum(s.n for s in samples)
    total = 0.0
    for g, sample in enumerate(samples):
        _, _, _, sigma, mu = _implied(theta, layout, g, factor_of)
        sd = np.sqrt(np.diag(sample.cov))
        cov_residuals = ((sample.cov - sigma) / np.outer(sd, sd))[np.tril_indices(len(sd))]
        mean_residuals = (sample.mean - mu) / sd
        elements = len(cov_residuals) + len(mean_residuals)
        total += sample.n / n_total * np.sqrt((np.sum(cov_residuals ** 2) + np.sum(mean_residuals ** 2)) / elements)
    return float(total)


def _rmsea_interval(chi2: float, df: int, n: int, n_groups: int, level: float = 0.90) -> tuple[float, float]:
    """The RMSEA confidence interval from the noncentral χ² (Browne & Cudeck, 1993), as lavaan: the
    noncentrality λ where χ² sits at the (1 + level)/2 and (1 − level)/2 quantiles, sqrt(λ/(N·df))·sqrt(G)."""
    upper_quantile, lower_quantile = (1 + level) / 2, (1 - level) / 2

    def cdf(ncp: float) -> float:
        # The noncentral χ² with ncp 0 is the central one (scipy's ncx2 wants ncp > 0).
        return float(stats.chi2.cdf(chi2, df) if ncp <= 0 else stats.ncx2.cdf(chi2, df, ncp))

    def to_rmsea(ncp: float) -> float:
        return float(np.sqrt(ncp / (n * df)) * np.sqrt(n_groups))

    low = 0.0
    if cdf(0.0) >= upper_quantile:
        low = to_rmsea(optimize.brentq(lambda ncp: cdf(ncp) - upper_quantile, 0.0, chi2))
    high = 0.0
    ceiling = max(n, 4 * chi2)
    if cdf(0.0) >= lower_quantile and cdf(ceiling) <= lower_quantile:
        high = to_rmsea(optimize.brentq(lambda ncp: cdf(ncp) - lower_quantile, 0.0, ceiling))
    return low, high


def _baseline(samples: Sequence[_Sample]) -> tuple[float, int]:
    """χ² and df of the independence model (free means and variances, zero covariances, per group):
    at its optimum Σ = diag(S) and μ = ȳ, so F_g = Σᵢ log sᵢᵢ − log|S|."""
    p = len(samples[0].mean)
    chi2 = sum(s.n * (np.sum(np.log(np.diag(s.cov))) - np.linalg.slogdet(s.cov)[1]) for s in samples)
    return float(chi2), len(samples) * p * (p - 1) // 2


def _cfi_tli(chi2: float, df: int, base_chi2: float, base_df: int) -> tuple[float, float]:
    """CFI (Bentler, 1990) and TLI (Tucker & Lewis, 1973) as lavaan computes them."""
    model_excess = max(chi2 - df, 0.0)
    base_excess = max(chi2 - df, base_chi2 - base_df, 0.0)
    cfi = 1.0 if base_excess == 0 else 1.0 - model_excess / base_excess
    ratio_gain, base_gain = base_chi2 / base_df - chi2 / df, base_chi2 / base_df - 1.0
    tli = 1.0 if ratio_gain < 0 and base_gain < 0 else ratio_gain / base_gain
    return cfi, tli


def _data_problem(samples: Sequence[_Sample], items: Sequence[str], factors: Mapping[str, Sequence[str]]) -> str | None:
    """Why no level can be estimated from these groups and this model, or None."""
    if len(samples) < 2:
        return f"{len(samples)} group{'s' if len(samples) != 1 else ''} with complete answers: invariance needs two or more"
    for name, members in factors.items():
        if len(members) < 2:
            return f"factor {name} has {len(members)} item: a factor needs two or more to be identified"
    if len(factors) == 1 and len(items) < 3:
        return f"a single factor with {len(items)} items is not identified: it needs three or more"
    p = len(items)
    for sample in samples:
        if sample.n <= p:
            return f"group '{sample.label}' has {sample.n} respondents for {p} items"
    for sample in samples:
        constant = [item for item, variance in zip(items, np.diag(sample.cov)) if variance <= 0]
        if constant:
            return f"item{'s' if len(constant) > 1 else ''} {', '.join(constant)} constant in group '{sample.label}'"
    for sample in samples:
        sd = np.sqrt(np.diag(sample.cov))
        eigenvalues = np.linalg.eigvalsh(sample.cov / np.outer(sd, sd))
        if eigenvalues[0] < 1e-10:
            return f"the sample covariance of group '{sample.label}' is singular (items linearly dependent)"
    return None


def _degrees_of_freedom(step: str, n_groups: int, factor_of: np.ndarray, marker: np.ndarray) -> int:
    p = len(factor_of)
    moments = n_groups * (p * (p + 1) // 2 + p)
    return moments - _layout(step, n_groups, factor_of, marker).n_params


def measurement_invariance(data: pd.DataFrame, factors: Mapping[str, Sequence[str]], group: str,
                           steps: Sequence[str] = STEPS) -> pd.DataFrame:
    """Configural, metric and scalar invariance of a factor model across the groups of `data`.

    `data` has one row per respondent, the items of `factors` (factor name -> its item columns;
    simple structure, the first item of each factor is its marker) as numeric columns (ordinal
    answers are treated as continuous) and the `group` column (two or more groups; the first group
    is the first category of a categorical column, else the first in the data: its factor means
    are the scalar model's reference). `steps` is a leading part of ("configural", "metric",
    "scalar").

    Returns one row per step: ``chi2, df, p`` (ML χ² test), ``cfi, tli, rmsea`` with its 90 % CI
    ``rmsea_low, rmsea_high``, ``srmr``, ``n`` (respondents used), ``groups`` (their number), the
    change from the step before (``delta_chi2, delta_df, delta_p, delta_cfi, delta_rmsea,
    delta_srmr``; NaN on the first row), ``estimable`` and ``note``. ``attrs`` holds the baseline
    model (``{"chi2", "df"}``), ``group_sizes``, ``group_chi2`` (per estimable step, each group's
    share N_g·F_g of χ²), ``dropped`` (respondents dropped for a missing
    item answer) and ``method`` (estimator and software). The module docstring gives the formulas,
    the decision rules (Chen, 2007) and an example.
    """
    steps = tuple(steps)
    if not steps or steps != STEPS[:len(steps)]:
        raise ValueError(f"steps must be a leading part of {STEPS}, not {steps}")
    items = [item for members in factors.values() for item in members]
    if len(set(items)) != len(items):
        raise ValueError("an item is listed under two factors: the model is simple structure, one factor per item")
    missing_columns = [c for c in [*items, group] if c not in data.columns]
    if missing_columns:
        raise ValueError(f"columns not in the data: {', '.join(missing_columns)}")
    if not factors:
        raise ValueError("no factors given")

    answers = data[items].apply(pd.to_numeric)
    complete = answers.notna().all(axis=1) & data[group].notna()
    dropped = int((~complete).sum())
    labels = data.loc[complete, group]
    order = ([c for c in labels.cat.categories if (labels == c).any()] if isinstance(labels.dtype, pd.CategoricalDtype)
             else list(pd.unique(labels)))
    samples = []
    for label in order:
        values = answers.loc[complete & (data[group] == label)].to_numpy(dtype=float)
        mean = values.mean(axis=0)
        # Divisor N (lavaan's likelihood "normal"), not N − 1.
        cov = (values - mean).T @ (values - mean) / len(values)
        samples.append(_Sample(str(label), len(values), mean, cov))

    factor_names = list(factors)
    factor_of = np.array([f for f, members in enumerate(factors.values()) for _ in members])
    marker = np.array([j == 0 for members in factors.values() for j in range(len(members))])
    n_total, n_groups = sum(s.n for s in samples), len(samples)
    dropped_note = (f"{dropped} respondent{'s' if dropped != 1 else ''} with a missing item answer or group "
                    f"dropped (listwise)") if dropped else None

    problem = _data_problem(samples, items, factors)
    base_chi2, base_df = _baseline(samples) if problem is None else (float("nan"), n_groups * len(items) * (len(items) - 1) // 2)
    rows, group_chi2 = [], {}
    for step in steps:
        row = dict.fromkeys(COLUMNS, float("nan"))
        row.update(step=step, n=n_total, groups=n_groups, estimable=False)
        df = _degrees_of_freedom(step, n_groups, factor_of, marker) if n_groups else 0
        notes = []
        reason = problem or (f"df {df}: the model has as many parameters as moments or more, nothing to test"
                             if df <= 0 else None)
        if reason is None:
            layout, fit = _fit(step, samples, factor_of, marker, items, factor_names)
            if not fit.converged:
                reason = f"the optimizer did not converge ({fit.message})"
        if reason is not None:
            notes.append(f"not estimable: {reason}")
        else:
            cfi, tli = _cfi_tli(fit.chi2, df, base_chi2, base_df)
            rmsea = float(np.sqrt(max(0.0, (fit.chi2 - df) / (df * n_total))) * np.sqrt(n_groups))
            rmsea_low, rmsea_high = _rmsea_interval(fit.chi2, df, n_total, n_groups)
            row.update(chi2=fit.chi2, df=df, p=float(stats.chi2.sf(fit.chi2, df)), cfi=cfi, tli=tli, rmsea=rmsea,
                       rmsea_low=rmsea_low, rmsea_high=rmsea_high, srmr=_srmr(fit.theta, layout, samples, factor_of),
                       estimable=True)
            group_chi2[step] = fit.group_chi2
            if fit.heywood:
                notes.append("Heywood case (estimate held at its lower bound near 0): " + "; ".join(fit.heywood))
        if dropped_note:
            notes.append(dropped_note)
        row["note"] = "; ".join(notes)
        rows.append(row)

    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["df"] = frame["df"].astype("Int64")
    for k in range(1, len(frame)):
        before, after = frame.iloc[k - 1], frame.iloc[k]
        if before["estimable"] and after["estimable"]:
            delta_chi2 = after["chi2"] - before["chi2"]
            delta_df = int(after["df"] - before["df"])
            frame.loc[k, ["delta_chi2", "delta_df", "delta_p", "delta_cfi", "delta_rmsea", "delta_srmr"]] = [
                delta_chi2, delta_df, float(stats.chi2.sf(delta_chi2, delta_df)), after["cfi"] - before["cfi"],
                after["rmsea"] - before["rmsea"], after["srmr"] - before["srmr"]]
    frame["delta_df"] = frame["delta_df"].astype("Int64")
    frame.attrs["baseline"] = {"chi2": base_chi2, "df": base_df}
    frame.attrs["group_sizes"] = {s.label: s.n for s in samples}
    frame.attrs["group_chi2"] = group_chi2
    frame.attrs["dropped"] = dropped
    frame.attrs["method"] = METHOD
    return frame
