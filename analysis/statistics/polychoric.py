"""Polychoric correlations of ordinal items, their thresholds and asymptotic covariance (lavaan's WLSMV step 1).

Ordinal answers are read as a continuous normal variable cut at thresholds (Pearson, 1900; Olsson,
1979). Per group of respondents, and as lavaan 0.6 computes the sample statistics of its
categorical estimators (``cfa(..., ordered = TRUE, estimator = "WLSMV")``; Rosseel, 2012;
lavaan's ``muthen1984``), in two steps:

1. **thresholds**, item by item, from the marginal proportions: τ_jk = Φ⁻¹(P(answer ≤ k)), the
   univariate maximum-likelihood estimate (lavaan's step 1, no covariates);
2. **polychoric correlations**, pair by pair, by bivariate maximum likelihood with the thresholds
   of step 1 held fixed (Olsson's two-step estimator; lavaan's step 2): the ρ in [−0.999, 0.999]
   that maximises Σ_ab f_ab log π_ab(ρ), π_ab the bivariate normal probability of the table's cell.
   As lavaan, a cell whose probability falls below √ε (ε the double-precision epsilon) counts as √ε
   in the likelihood and is left out of its derivatives, and a 2 × 2 table with one empty cell gets
   0.5 added to it and to the diagonally opposite cell, 0.5 taken from the other two (margins kept).
   Our maximum is exact to ~1e-13; lavaan's nlminb stops ~1e-8 short of it. Where that objective
   has a second, lower maximum on the bound (a cell's probability running below √ε as ρ → ±0.999),
   nlminb can end there from its Pearson start; we do not (:func:`_solve_rho`);
3. **the asymptotic covariance** of the whole vector (thresholds, correlations) — lavaan's NACOV,
   ``lavInspect(fit, "gamma")`` — by the sandwich of Muthén (1984) built from each respondent's
   scores: the derivatives of the log-likelihood of his own answer under the univariate model
   (per threshold) and under each pair's bivariate model (per correlation). With S the N × m matrix
   of these scores (thresholds item by item, then correlations), INNER = SᵀS, A11 the block-diagonal
   of INNER over each item's thresholds, A22 the diagonal of INNER over the correlations and A21 the
   sums over respondents of each correlation's score times the derivatives of the same bivariate
   log-likelihood with respect to the two items' thresholds (the information the correlation shares
   with the thresholds it was estimated at):

       B⁻¹ = [[A11⁻¹, 0], [−A22⁻¹·A21·A11⁻¹, A22⁻¹]],      Γ = N · B⁻¹ · INNER · B⁻¹ᵀ.

   Γ is N times the asymptotic covariance matrix (lavaan's default ``gamma.n.minus.one = FALSE``: N,
   not N − 1); the second row of B⁻¹ is the correction for the thresholds being estimated first.

The vector's order is lavaan's ``lavInspect(fit, "wls.obs")`` for ordinal items without covariates:
every threshold of the first item, of the second, …, then the correlations in lavaan's ``vech`` order
without the diagonal, the lower triangle column by column: (2,1), (3,1), …, (p,1), (3,2), …, (p,p−1).
:attr:`OrdinalMoments.labels` names them as lavaan does (``item|t1``, ``item1~~item2``).

The bivariate normal distribution function is Genz's (2004) version of Drezner & Wesolowsky's (1990)
method (Gauss–Legendre quadrature, 20 points), the method of the Fortran code behind R's
``pbivnorm`` that lavaan calls, written here vectorised on numpy.

An item whose category has no answer in the group (a constant item among them) has no finite
threshold: :func:`ordinal_moments` raises :class:`NotEstimable` with the reason in plain words; so
does a pair of two-category items whose 2 × 2 table has two empty cells (lavaan returns ρ = ±1 there
with a warning; we say it is not estimable).

Checked against lavaan 0.6-14 on R 4.2.2 (tests/test_polychoric.py with the script and output in
tests/data/lavaan/): thresholds, correlations and Γ of the IRI's Fantasy and Personal Distress items,
for everyone and by gender.

References
----------
Olsson, U. (1979). Maximum likelihood estimation of the polychoric correlation coefficient.
*Psychometrika, 44*, 443–460. Muthén, B. (1984). A general structural equation model with dichotomous,
ordered categorical, and continuous latent variable indicators. *Psychometrika, 49*, 115–132.
Genz, A. (2004). Numerical computation of rectangular bivariate and trivariate normal and t
probabilities. *Statistics and Computing, 14*, 251–260. Rosseel, Y. (2012). lavaan: An R package for
structural equation modeling. *Journal of Statistical Software, 48*(2).

Example
-------
Pingouin's style, a frame in and a frame out: three items with four categories, cut from a latent
normal with correlations .6, .3 and .4; one respondent's missing answer drops him:

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> latent = rng.multivariate_normal([0, 0, 0], [[1, .6, .3], [.6, 1, .4], [.3, .4, 1]], size=2001)
>>> answers = pd.DataFrame(np.digitize(latent, [-1, 0, 1]) + 1, columns=["a", "b", "c"])
>>> answers.loc[0, "c"] = None
>>> r = polychoric(answers)
>>> r.round(3)
       a      b      c
a  1.000  0.606  0.305
b  0.606  1.000  0.399
c  0.305  0.399  1.000
>>> r.attrs["thresholds"].round(3).head(3)
  item  threshold  value
0    a          1 -1.083
1    a          2 -0.070
2    a          3  0.966
>>> r.attrs["n"], r.attrs["dropped"]
(2000, 1)

May import: numpy, scipy, pandas; nothing of psyq (a statistic never writes report text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

__all__ = ["NotEstimable", "OrdinalMoments", "bivariate_normal_cdf", "bivariate_normal_pdf", "ordinal_moments",
           "polychoric"]

# lavaan's bounds for a polychoric correlation (nlminb's lower and upper in lav_bvord_cor_twostep_fit).
RHO_BOUND = 0.999
# The smallest cell probability lavaan lets into the bivariate likelihood, √ε.
_SMALL = np.sqrt(np.finfo(float).eps)
# Stands for ±∞ as a category bound in the scores (lavaan's ±100: Φ is exactly 0 or 1, φ exactly 0 there).
_FAR = 100.0
# Gauss–Legendre nodes and weights on [−1, 1], 20 points (Genz's largest rule).
_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)


class NotEstimable(ValueError):
    """The sample gives no finite estimate (an empty category, a constant item, a perfect 2 × 2 table).

    ``str(error)`` is the reason in plain words; ``item`` and ``category`` say where, when one item is to blame.
    """

    def __init__(self, reason: str, item: str | None = None, category: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.item = item
        self.category = category


@dataclass(frozen=True, eq=False)
class OrdinalMoments:
    """One group's ordinal sample statistics, as lavaan's WLS estimators see them.

    ``thresholds[j]`` holds item j's K_j − 1 thresholds; ``correlations`` is the p × p polychoric matrix
    (ones on the diagonal); ``gamma`` is N times the asymptotic covariance matrix of :attr:`wls_obs`
    (lavaan's NACOV, ``lavInspect(fit, "gamma")``), in that vector's order.
    """

    n: int
    items: tuple[str, ...]
    thresholds: list[np.ndarray]
    correlations: np.ndarray
    gamma: np.ndarray
    pairs: tuple[tuple[int, int], ...] = field(default=())

    @property
    def wls_obs(self) -> np.ndarray:
        """The sample statistics in lavaan's order: every item's thresholds, then the correlations (i, j), i > j."""
        rows, cols = np.array(self.pairs, dtype=int).reshape(-1, 2).T
        return np.concatenate([*self.thresholds, self.correlations[rows, cols]])

    @property
    def labels(self) -> list[str]:
        """lavaan's names of :attr:`wls_obs` (``item|t1``, …, ``item_j~~item_i``), the row names of its gamma."""
        names = [f"{item}|t{k + 1}" for item, th in zip(self.items, self.thresholds) for k in range(len(th))]
        return names + [f"{self.items[j]}~~{self.items[i]}" for i, j in self.pairs]

    @property
    def n_thresholds(self) -> int:
        return sum(len(th) for th in self.thresholds)


# --- the bivariate normal distribution ---------------------------------------------------------------


def bivariate_normal_pdf(x, y, rho) -> np.ndarray:
    """φ₂(x, y; ρ), the standard bivariate normal density (0 where x or y is infinite)."""
    x, y, rho = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x, y, rho)))
    finite = np.isfinite(x) & np.isfinite(y)
    xf, yf = np.where(finite, x, 0.0), np.where(finite, y, 0.0)
    one_minus = 1.0 - rho * rho
    density = np.exp(-0.5 * (xf * xf - 2.0 * rho * xf * yf + yf * yf) / one_minus) / (2.0 * np.pi * np.sqrt(one_minus))
    return np.where(finite, density, 0.0)


def bivariate_normal_cdf(x, y, rho) -> np.ndarray:
    """Φ₂(x, y; ρ) = P(X ≤ x, Y ≤ y) for standard normal X, Y with correlation ρ, elementwise.

    Genz's (2004) double-precision form of Drezner & Wesolowsky's (1990) method: for |ρ| < 0.925
    Sheppard's integral over θ from 0 to asin ρ, otherwise an expansion around |ρ| = 1 plus a
    correction integral, each by 20-point Gauss–Legendre quadrature. Arguments may be ±∞; |ρ| ≤ 1.
    Accurate to about 1e-15.
    """
    x, y, rho = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x, y, rho)))
    out = np.empty(x.shape)
    # Limits first: an argument at −∞ gives 0, at +∞ the other's marginal.
    low = (x == -np.inf) | (y == -np.inf)
    out[low] = 0.0
    x_top, y_top = (x == np.inf) & ~low, (y == np.inf) & ~low
    out[x_top] = ndtr(y[x_top])                    # (Φ(+∞) = 1 when both are +∞)
    out[y_top & ~x_top] = ndtr(x[y_top & ~x_top])
    finite = ~(low | x_top | y_top)
    # Genz writes the upper probability P(X > h, Y > k); by symmetry Φ₂(x, y; ρ) is it at h = −x, k = −y.
    out[finite] = _upper_probability(-x[finite], -y[finite], rho[finite])
    return out


def _upper_probability(h: np.ndarray, k: np.ndarray, r: np.ndarray) -> np.ndarray:
    """P(X > h, Y > k; r) for finite h, k (flat arrays)."""
    result = np.empty(h.shape)
    near = np.abs(r) >= 0.925
    # |r| < 0.925: P = Φ(−h)Φ(−k) + (1/2π) ∫₀^{asin r} exp(−(h² + k² − 2hk sin θ) / (2 cos² θ)) dθ.
    m = ~near
    if m.any():
        hm, km, rm = h[m], k[m], r[m]
        half_sq = (hm * hm + km * km) / 2.0
        angle = np.arcsin(rm)
        sin_t = np.sin(np.outer(angle, 1.0 + _GL_X) / 2.0)          # θ = asin(r)·(1 + x)/2
        integrand = np.exp((sin_t * (hm * km)[:, None] - half_sq[:, None]) / (1.0 - sin_t * sin_t))
        result[m] = integrand @ _GL_W * angle / (4.0 * np.pi) + ndtr(-hm) * ndtr(-km)
    if near.any():
        result[near] = _upper_probability_near_one(h[near], k[near], r[near])
    return np.clip(result, 0.0, 1.0)


def _upper_probability_near_one(h: np.ndarray, k: np.ndarray, r: np.ndarray) -> np.ndarray:
    """P(X > h, Y > k; r) for |r| ≥ 0.925: Drezner & Wesolowsky's expansion in 1 − r², Genz's form."""
    negative = r < 0
    k = np.where(negative, -k, k)                   # work with |r|: Y ↦ −Y
    hk = h * k
    bvn = np.zeros(h.shape)
    inner = np.abs(r) < 1.0
    if inner.any():
        hi, ki, hki, ri = h[inner], k[inner], hk[inner], r[inner]
        a_sq = (1.0 - ri) * (1.0 + ri)
        a = np.sqrt(a_sq)
        b_sq = (hi - ki) ** 2
        c = (4.0 - hki) / 8.0
        d = (12.0 - hki) / 16.0
        exponent = -(b_sq / a_sq + hki) / 2.0
        value = np.where(exponent > -100.0,
                         a * np.exp(np.maximum(exponent, -100.0))
                         * (1.0 - c * (b_sq - a_sq) * (1.0 - d * b_sq / 5.0) / 3.0 + c * d * a_sq * a_sq / 5.0),
                         0.0)
        b = np.sqrt(b_sq)
        tail = (np.exp(-np.minimum(hki, 100.0) / 2.0) * np.sqrt(2.0 * np.pi) * ndtr(-b / a) * b
                * (1.0 - c * b_sq * (1.0 - d * b_sq / 5.0) / 3.0))
        value = value - np.where(hki < 100.0, tail, 0.0)
        # The correction integral over x from 0 to √(1 − r²), Gauss–Legendre on (0, a).
        half = a / 2.0
        xs = (half[:, None] * (1.0 + _GL_X)) ** 2
        rs = np.sqrt(1.0 - xs)
        exponent = -(b_sq[:, None] / xs + hki[:, None]) / 2.0
        term = (np.exp(np.maximum(exponent, -100.0))
                * (np.exp(-hki[:, None] * (1.0 - rs) / (2.0 * (1.0 + rs))) / rs
                   - (1.0 + c[:, None] * xs * (1.0 + d[:, None] * xs))))
        value = value + half * (np.where(exponent > -100.0, term, 0.0) @ _GL_W)
        bvn[inner] = -value / (2.0 * np.pi)
    positive = ~negative
    bvn[positive] += ndtr(-np.maximum(h[positive], k[positive]))
    bvn[negative] = -bvn[negative] + np.maximum(0.0, ndtr(-h[negative]) - ndtr(-k[negative]))
    return bvn


# --- thresholds and polychoric correlations ---------------------------------------------------------


def _check_items(codes: np.ndarray, n_categories: Sequence[int], items: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The per-item category counts (p × K_max); NotEstimable for an empty category or a constant item."""
    n, p = codes.shape
    k = np.asarray(n_categories, dtype=int)
    if len(k) != p or len(items) != p:
        raise ValueError(f"{p} columns of codes, {len(k)} category counts and {len(items)} item names")
    if p and (codes.min(initial=0) < 0 or (codes >= k[None, :]).any()):
        raise ValueError("codes must lie in 0 .. n_categories − 1 of their item")
    counts = np.zeros((p, max(k.max(initial=1), 1)), dtype=int)
    for j in range(p):
        counts[j, :k[j]] = np.bincount(codes[:, j], minlength=k[j])
    for j, item in enumerate(items):
        answered = np.flatnonzero(counts[j, :k[j]])
        if k[j] < 2:
            raise NotEstimable(f"item {item} has a single category: it cannot have a threshold", item)
        if len(answered) == 0:
            raise NotEstimable(f"item {item} has no answers in this group", item)
        if len(answered) == 1:
            raise NotEstimable(f"item {item} is constant in this group: everyone answered category {answered[0]} "
                               f"(of categories 0–{k[j] - 1})", item, int(answered[0]))
        empty = np.flatnonzero(counts[j, :k[j]] == 0)
        if len(empty):
            raise NotEstimable(f"item {item} has no answer in category {empty[0]} (of categories 0–{k[j] - 1}) "
                               f"in this group", item, int(empty[0]))
    return k, counts


def _cell_grids(bounds_i: np.ndarray, bounds_j: np.ndarray, rho: np.ndarray):
    """Per pair, the cell probabilities π_ab (P × Kmax × Kmax) and their derivatives ∂π/∂ρ and ∂²π/∂ρ²."""
    u = bounds_i[:, :, None]
    v = bounds_j[:, None, :]
    r = rho[:, None, None]
    cdf = bivariate_normal_cdf(u, v, r)
    dens = bivariate_normal_pdf(u, v, r)
    # ∂φ₂/∂ρ = φ₂ · g(u, v, ρ), g = (uv(1 − ρ²) − ρ(u² − 2ρuv + v²) + ρ(1 − ρ²)) / (1 − ρ²)²; 0 at ±∞.
    finite = np.isfinite(u) & np.isfinite(v)
    uf, vf = np.where(finite, u, 0.0), np.where(finite, v, 0.0)
    one_minus = 1.0 - r * r
    g = (uf * vf * one_minus - r * (uf * uf - 2.0 * r * uf * vf + vf * vf) + r * one_minus) / (one_minus * one_minus)
    dens_d = dens * g

    def cells(grid):
        return grid[:, 1:, 1:] - grid[:, :-1, 1:] - grid[:, 1:, :-1] + grid[:, :-1, :-1]

    return cells(cdf), cells(dens), cells(dens_d)


def _loglik(freq: np.ndarray, real: np.ndarray, bounds_i, bounds_j, rho) -> np.ndarray:
    """Σ f log π per pair, π at least √ε (lavaan's objective, lav_bvord_logl_cache)."""
    pi = _cell_grids(bounds_i, bounds_j, rho)[0]
    return np.where(real, freq * np.log(np.where(real, np.maximum(pi, _SMALL), 1.0)), 0.0).sum(axis=(1, 2))


def _loglik_derivatives(freq: np.ndarray, real: np.ndarray, bounds_i, bounds_j, rho, floor: float = _SMALL):
    """First and second derivatives in ρ of Σ f log π per pair, cells of probability at most `floor` left out
    (lavaan's gradient and Hessian with the default floor √ε; the plain likelihood's with a floor near 0)."""
    pi, dpi, d2pi = _cell_grids(bounds_i, bounds_j, rho)
    used = real & (pi > floor)
    safe = np.where(used, pi, 1.0)
    w = np.where(used, freq, 0.0) / safe
    gradient = (w * dpi).sum(axis=(1, 2))
    hessian = (w * d2pi).sum(axis=(1, 2)) - (w / safe * dpi * dpi).sum(axis=(1, 2))
    return gradient, hessian


def _bracketed_newton(derivatives, start: np.ndarray, max_iter: int = 200, tol: float = 1e-13) -> np.ndarray:
    """A zero of the score in [−0.999, 0.999] for every pair at once, a maximum when the score falls through it.

    `derivatives(idx, rho)` gives the score and its derivative of the pairs `idx` at `rho`. Newton's
    steps are kept inside a bracket that shrinks to the side where the score changes sign; bisection
    when a step would leave it or the curvature is not negative. A score that keeps its sign drives
    the estimate to the bound it points to (where lavaan's nlminb stops too).
    """
    lo = np.full(len(start), -RHO_BOUND)
    hi = np.full(len(start), RHO_BOUND)
    rho = np.clip(np.asarray(start, dtype=float), -RHO_BOUND, RHO_BOUND).copy()
    active = np.ones(len(rho), dtype=bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        r = rho[idx]
        g, h = derivatives(idx, r)
        lo[idx] = np.where(g > 0, r, lo[idx])
        hi[idx] = np.where(g < 0, r, hi[idx])
        newton = r - g / np.where(h < 0, h, -np.inf)
        inside = (h < 0) & (newton > lo[idx]) & (newton < hi[idx])
        new = np.where(g == 0, r, np.where(inside, newton, (lo[idx] + hi[idx]) / 2.0))
        done = (np.abs(new - r) <= tol) | (g == 0) | (hi[idx] - lo[idx] <= tol)
        rho[idx] = new
        active[idx[done]] = False
    return rho


def _solve_rho(freq, real, bounds_i, bounds_j, start: np.ndarray) -> np.ndarray:
    """The ρ in lavaan's bounds [−0.999, 0.999] that maximises lavaan's bivariate objective, every pair at once.

    lavaan's objective counts a cell of probability below √ε as √ε and leaves it out of its derivatives;
    it can then have a second, lower maximum towards ±0.999, where a cell's probability vanishes, and
    lavaan's nlminb, started from the Pearson correlation, can end there (see tests/test_polychoric.py).
    Hence two steps: the maximum of the plain likelihood from the Pearson correlation (a floor of 1e-150
    on the cells only), then from there the stationary point of lavaan's objective (the same point
    unless a cell with answers has a probability below √ε there, whose answers lavaan then ignores).
    """
    def plain(idx, r):
        return _loglik_derivatives(freq[idx], real[idx], bounds_i[idx], bounds_j[idx], r, floor=1e-150)

    def lavaan(idx, r):
        return _loglik_derivatives(freq[idx], real[idx], bounds_i[idx], bounds_j[idx], r)

    return _bracketed_newton(lavaan, _bracketed_newton(plain, start))


def _pair_indices(p: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j), i > j, in lavaan's vech order: column by column of the lower triangle."""
    rows, cols = [], []
    for j in range(p - 1):
        for i in range(j + 1, p):
            rows.append(i)
            cols.append(j)
    return np.array(rows, dtype=int), np.array(cols, dtype=int)


def ordinal_moments(codes: np.ndarray, n_categories: Sequence[int], items: Sequence[str]) -> OrdinalMoments:
    """Thresholds, polychoric correlations and Γ (N × their asymptotic covariance) of one group, as lavaan.

    `codes` is an N × p integer matrix of category codes 0 .. K_j − 1 (no missing values), `n_categories`
    the K_j of each item (so that a category nobody chose is seen), `items` their names. Raises
    :class:`NotEstimable` when an item has an empty category (or is constant) in this group, or when two
    two-category items form a 2 × 2 table with two empty cells.
    """
    return _moments(codes, n_categories, items)


def _moments(codes, n_categories, items, rho: np.ndarray | None = None) -> OrdinalMoments:
    """:func:`ordinal_moments`; with `rho` (one per pair, lavaan's order) Γ at these correlations instead of
    the estimated ones (the tests reproduce lavaan's Γ at lavaan's own, less exactly converged, estimates)."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or not np.issubdtype(codes.dtype, np.integer):
        raise ValueError("codes must be a 2-dimensional integer array (respondents × items)")
    items = tuple(str(item) for item in items)
    k, counts = _check_items(codes, n_categories, items)
    n, p = codes.shape
    k_max = counts.shape[1]

    # Step 1: thresholds from the cumulative proportions; bounds[j] = (−∞, τ_j1, …, τ_j,K−1, +∞, +∞ …).
    proportions = counts / n
    thresholds = [ndtri(np.cumsum(proportions[j, :k[j] - 1])) for j in range(p)]
    bounds = np.full((p, k_max + 1), np.inf)
    bounds[:, 0] = -np.inf
    for j in range(p):
        bounds[j, 1:k[j]] = thresholds[j]

    # Step 2: every pair's contingency table at once (one-hot codes, their cross-product), then ρ.
    rows, cols = _pair_indices(p)
    # P × Kmax × Kmax, item i down, item j across: each pair's cells counted from the codes (an N × p × Kmax
    # one-hot array and its cross-product would hold 0.1–0.2 GB for 10⁵ respondents)
    freq = np.stack([np.bincount(codes[:, i] * k_max + codes[:, j], minlength=k_max * k_max).reshape(k_max, k_max)
                     for i, j in zip(rows, cols)]).astype(float) if len(rows) else np.zeros((0, k_max, k_max))
    real = (np.arange(k_max)[None, :, None] < k[rows][:, None, None]) & \
           (np.arange(k_max)[None, None, :] < k[cols][:, None, None])
    freq_fit = _two_by_two_zero_cells(freq, k, rows, cols, items)
    if rho is None:
        rho = _solve_rho(freq_fit, real, bounds[rows], bounds[cols], _pearson(codes, rows, cols))
    rho = np.asarray(rho, dtype=float)
    correlations = np.eye(p)
    correlations[rows, cols] = correlations[cols, rows] = rho

    gamma = _gamma(codes, k, thresholds, proportions, bounds, rows, cols, freq, real, rho)
    return OrdinalMoments(n=n, items=items, thresholds=thresholds, correlations=correlations, gamma=gamma,
                          pairs=tuple(zip(rows.tolist(), cols.tolist())))


def _pearson(codes: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The Pearson correlation of the codes of each pair: the starting value (lavaan's too)."""
    z = codes - codes.mean(axis=0)
    sd = np.sqrt((z * z).sum(axis=0))
    cross = z.T @ z                    # every pair's sum of products at once (not an N × pairs array)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cross[rows, cols] / (sd[rows] * sd[cols])
    return np.where(np.isfinite(r) & (np.abs(r) < 1), r, 0.0)


def _two_by_two_zero_cells(freq, k, rows, cols, items) -> np.ndarray:
    """lavaan's zero-cell rule for 2 × 2 tables (zero.add = 0.5, margins kept); larger tables stay as they are."""
    freq = freq.copy()
    for pair in np.flatnonzero((k[rows] == 2) & (k[cols] == 2)):
        table = freq[pair, :2, :2]
        zeros = table == 0
        if zeros.sum() >= 2:
            i, j = items[rows[pair]], items[cols[pair]]
            raise NotEstimable(f"items {j} and {i} have two categories each and two empty cells in their 2 × 2 "
                               "table in this group: the answers agree perfectly and the correlation is ±1")
        if zeros.sum() == 1:
            sign = 1.0 if zeros[0, 0] or zeros[1, 1] else -1.0
            table += sign * np.array([[0.5, -0.5], [-0.5, 0.5]])
    return freq


_BLOCK = 20_000        # respondents whose scores are held at once while Γ is summed


def _gamma(codes, k, thresholds, proportions, bounds, rows, cols, freq, real, rho) -> np.ndarray:
    """Γ = N · B⁻¹ · INNER · B⁻¹ᵀ from the respondents' scores (Muthén, 1984; lavaan's muthen1984)."""
    n, p = codes.shape
    n_pairs = len(rows)
    n_th = k - 1
    th_start = np.concatenate([[0], np.cumsum(n_th)[:-1]]).astype(int)
    total_th = int(n_th.sum())

    # Univariate scores: ∂ log π_c / ∂τ_k = φ(τ_k)·([c = k] − [c = k + 1]) / π_c, a table per item (category × threshold).
    tables = []
    for j in range(p):
        dens = np.exp(-0.5 * thresholds[j] ** 2) / np.sqrt(2.0 * np.pi)
        table = np.zeros((k[j], n_th[j]))
        table[np.arange(n_th[j]), np.arange(n_th[j])] = dens / proportions[j, :n_th[j]]
        table[np.arange(1, k[j]), np.arange(n_th[j])] = -dens / proportions[j, 1:k[j]]
        tables.append(table)

    def threshold_scores(block: slice) -> np.ndarray:
        """The univariate scores of the respondents in `block` (respondents × thresholds)."""
        return np.hstack([tables[j][codes[block, j]] for j in range(p)]) if p else np.zeros((0, 0))

    # Bivariate scores of each pair, per cell: for ρ, ∂π/∂ρ / π; for the thresholds of item i (rows)
    # and item j (columns), the derivatives of π at the cell's upper (1) and lower (2) bound, over π.
    pi, dpi, _ = _cell_grids(bounds[rows], bounds[cols], rho)
    lik = np.where(real, np.maximum(pi, _SMALL), 1.0)
    used = real & (lik > _SMALL)                   # lavaan drops a respondent's score in a cell below √ε
    score_rho = np.where(used, dpi / lik, 0.0)
    far_i = np.clip(bounds[rows], -_FAR, _FAR)
    far_j = np.clip(bounds[cols], -_FAR, _FAR)
    upper_i, lower_i = far_i[:, 1:, None], far_i[:, :-1, None]
    upper_j, lower_j = far_j[:, None, 1:], far_j[:, None, :-1]
    r = rho[:, None, None]
    sd = np.sqrt(1.0 - r * r)

    def edge(at, other_upper, other_lower):
        """∂π/∂(bound of one item) at the bound `at`: φ(at)·[Φ((u − ρ·at)/√(1−ρ²)) − Φ((l − ρ·at)/√(1−ρ²))]."""
        return np.exp(-0.5 * at * at) / np.sqrt(2.0 * np.pi) * (ndtr((other_upper - r * at) / sd)
                                                                 - ndtr((other_lower - r * at) / sd))

    i_upper, i_lower = edge(upper_i, upper_j, lower_j), edge(lower_i, upper_j, lower_j)
    j_upper, j_lower = edge(upper_j, upper_i, lower_i), edge(lower_j, upper_i, lower_i)

    # A21: Σ over respondents of the ρ-score times the bivariate threshold scores, summed cell by cell.
    # Threshold t of an item is the upper bound of its category t and the lower bound of category t + 1.
    weight = np.where(used, freq * score_rho / lik, 0.0)
    by_row_upper, by_row_lower = (weight * i_upper).sum(axis=2), (weight * i_lower).sum(axis=2)
    by_col_upper, by_col_lower = (weight * j_upper).sum(axis=1), (weight * j_lower).sum(axis=1)
    a21 = np.zeros((n_pairs, total_th))
    for pair, (i, j) in enumerate(zip(rows, cols)):
        a21[pair, th_start[i]:th_start[i] + n_th[i]] = by_row_upper[pair, :n_th[i]] - by_row_lower[pair, 1:k[i]]
        a21[pair, th_start[j]:th_start[j] + n_th[j]] = by_col_upper[pair, :n_th[j]] - by_col_lower[pair, 1:k[j]]

    # The respondents' ρ-scores (N × pairs) and INNER = SᵀS, a block of respondents at a time (the scores of
    # 10⁵ respondents would be N × (thresholds + pairs) doubles: 0.4 GB for the IRI).
    inner = np.zeros((total_th + n_pairs, total_th + n_pairs))
    a22 = np.zeros(n_pairs)
    for start in range(0, n, _BLOCK):
        block = slice(start, start + _BLOCK)
        sc_rho = score_rho[np.arange(n_pairs)[None, :], codes[block][:, rows], codes[block][:, cols]]
        scores = np.hstack([threshold_scores(block), sc_rho])
        inner += scores.T @ scores
        a22 += np.einsum("ij,ij->j", sc_rho, sc_rho)

    a11_inv = np.zeros((total_th, total_th))
    for j in range(p):
        block = slice(th_start[j], th_start[j] + n_th[j])
        a11_inv[block, block] = np.linalg.inv(inner[block, block])
    a22_inv = np.diag(1.0 / a22)
    b_inv = np.zeros((total_th + n_pairs, total_th + n_pairs))
    b_inv[:total_th, :total_th] = a11_inv
    b_inv[total_th:, :total_th] = -a22_inv @ a21 @ a11_inv
    b_inv[total_th:, total_th:] = a22_inv
    return n * (b_inv @ inner @ b_inv.T)


# --- the public frame-in, frame-out function ---------------------------------------------------------


def polychoric(data: pd.DataFrame, items: Sequence[str] | None = None) -> pd.DataFrame:
    """The polychoric correlation matrix of ordinal items (like ``DataFrame.corr()``), as lavaan computes it.

    `data` holds one row per respondent and the items' answers as integers (or any ordered numbers) or
    ordered categoricals; `items` picks and orders the columns (all of them by default). The
    categories of an item are its distinct answers, sorted (an ordered categorical's in its order).
    Respondents with a missing answer are dropped listwise. Thresholds by the marginal proportions,
    correlations by bivariate maximum likelihood at fixed thresholds (Olsson, 1979; lavaan's
    ``lavCor(data, ordered = names(data))``; the module's docstring has the details).

    Returns the p × p matrix; ``attrs["thresholds"]`` is a tidy frame (``item``, ``threshold`` 1 …
    K − 1, ``value``), ``attrs["n"]`` the respondents used and ``attrs["dropped"]`` those dropped.
    Raises :class:`NotEstimable` (a ValueError) for an item with a single answer.
    """
    items = list(data.columns) if items is None else list(items)
    missing = [item for item in items if item not in data.columns]
    if missing:
        raise KeyError(f"no column {', '.join(map(str, missing))} in the data")
    frame = data[items]
    complete = frame.notna().all(axis=1)
    frame = frame[complete]
    codes = np.empty(frame.shape, dtype=np.int64)
    n_categories = []
    for j, item in enumerate(items):
        column = frame[item]
        if isinstance(column.dtype, pd.CategoricalDtype):
            if not column.cat.ordered:
                raise ValueError(f"column {item} is an unordered categorical: its categories have no order")
            observed = column.cat.codes.to_numpy()
            levels = np.unique(observed)
        elif pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
            observed = column.to_numpy()
            levels = np.unique(observed)
        else:
            raise ValueError(f"column {item} is neither numeric nor an ordered categorical")
        if len(levels) == 1:
            raise NotEstimable(f"item {item} is constant: every respondent answered {column.iloc[0]}", str(item))
        codes[:, j] = np.searchsorted(levels, observed)
        n_categories.append(len(levels))
    moments = ordinal_moments(codes, n_categories, [str(item) for item in items])
    result = pd.DataFrame(moments.correlations, index=items, columns=items)
    result.index.name = None
    result.attrs["thresholds"] = pd.DataFrame(
        [(item, t + 1, float(value)) for item, th in zip(items, moments.thresholds) for t, value in enumerate(th)],
        columns=["item", "threshold", "value"])
    result.attrs["n"] = int(moments.n)
    result.attrs["dropped"] = int((~complete).sum())
    return result
