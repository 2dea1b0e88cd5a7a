"""What a multivariate normal says about its own mean and covariance: lavaan's vech order, the
expected information of one case about (μ, vech Σ) (the normal weight W), Δ'WΔ taken without forming
W, each case's scores, and the saturated model's tr(A₁⁻¹B₁). Pure functions of Σ, μ and the cases:
nothing here knows of factors, groups or parameter layouts. The factor model for continuous items
(:mod:`.continuous`) reads them for ML's expected information, MLR's sandwich standard errors and
Yuan–Bentler scaling, and the score tests.

May import numpy and scipy.

Checked in tests/test_report_at_scale.py (Δ'WΔ against the dense normal weight) and
tests/test_invariance_lavaan.py (the MLR scaled χ², its baseline and the robust standard errors,
which rest on the case-wise scores and the saturated trace, against lavaan 0.6.14); the examples
below give the normal weight and scores of one item by hand.

Example
-------
>>> normal_weight(np.array([[4.0]])).tolist()
[[0.25, 0.0], [0.0, 0.03125]]
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import linalg


@lru_cache(maxsize=64)
def vech_indices(p: int) -> tuple[np.ndarray, np.ndarray]:
    """lavaan's vech order: the rows and columns of the lower triangle, column by column (cached: the fits
    ask thousands of times).

    Example
    -------
    >>> [idx.tolist() for idx in vech_indices(3)]
    [[0, 1, 2, 1, 2, 2], [0, 0, 0, 1, 1, 2]]
    """
    cols, rows = np.triu_indices(p)
    return rows, cols


def normal_weight(sigma: np.ndarray) -> np.ndarray:
    """The expected information of one case about (μ, vech Σ) of a multivariate normal:
    blockdiag(Σ⁻¹, ½·D'(Σ⁻¹ ⊗ Σ⁻¹)D), D the duplication matrix; written out over vech, the
    (ij, kl) entry is c_ij·c_kl·¼(a_ik·a_jl + a_il·a_jk) with A = Σ⁻¹ and c = 2 off the diagonal.

    Example
    -------
    One item of variance 2: 1/σ² for its mean, 1/(2σ⁴) for its variance.

    >>> normal_weight(np.array([[2.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.125]]
    """
    a = np.linalg.inv(sigma)
    rows, cols = vech_indices(len(sigma))
    c = np.where(rows == cols, 1.0, 2.0)
    block = np.outer(c, c) * 0.25 * (a[np.ix_(rows, rows)] * a[np.ix_(cols, cols)]
                                     + a[np.ix_(rows, cols)] * a[np.ix_(cols, rows)])
    return linalg.block_diag(a, block)


def casewise_scores(values: np.ndarray, sigma: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Each case's derivative of its normal log-likelihood with respect to (μ, vech Σ) at (μ, Σ).

    Example
    -------
    >>> casewise_scores(np.array([[1.0], [3.0]]), np.array([[2.0]]), np.array([1.0])).tolist()
    [[0.0, -0.25], [1.0, 0.25]]
    """
    p = len(mu)
    sigma_inv = np.linalg.inv(sigma)
    centred = (values - mu) @ sigma_inv              # Σ⁻¹(y − μ), one row per case
    rows, cols = vech_indices(p)
    outer = centred[:, rows] * centred[:, cols] - sigma_inv[rows, cols]
    # ∂ℓ/∂σ_ij = ½(Σ⁻¹(y−μ)(y−μ)'Σ⁻¹ − Σ⁻¹)_ij, counted twice off the diagonal (σ_ij = σ_ji).
    return np.hstack([centred, np.where(rows == cols, 0.5, 1.0) * outer])


def weighted_cross(delta: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Δ'WΔ for W = :func:`normal_weight` (Σ), Δ's rows (μ, vech Σ): the mean part Δ_μ'Σ⁻¹Δ_μ plus, with
    each column's vech part as a symmetric matrix X_j, ½·tr(Σ⁻¹X_iΣ⁻¹X_j) — what W's covariance block
    gives over vech, computed in p² per pair instead of a vech × vech matrix.

    Example
    -------
    >>> delta, sigma = np.eye(2), np.array([[2.0]])
    >>> bool(np.allclose(weighted_cross(delta, sigma), delta.T @ normal_weight(sigma) @ delta))
    True
    """
    p = len(sigma)
    a = np.linalg.inv(sigma)
    means = delta[:p]
    rows, cols = vech_indices(p)
    x = np.zeros((delta.shape[1], p, p))
    x[:, rows, cols] = delta[p:].T
    x[:, cols, rows] = delta[p:].T
    y = a @ x @ a                                            # Σ⁻¹ X_j Σ⁻¹, every column at once
    return means.T @ a @ means + 0.5 * y.reshape(len(x), -1) @ x.reshape(len(x), -1).T


def saturated_trace(values: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> float:
    """tr(A₁⁻¹B₁) of the saturated model at the sample moments (`mean`, `cov` of divisor N of the cases
    `values`): A₁ its expected information, B₁ the mean outer product of the cases' scores; it is the
    number of moments, p + p(p+1)/2, when the cases are normal, larger when their tails are heavier.

    Example
    -------
    >>> x = np.random.default_rng(0).normal(size=(20000, 2))
    >>> round(saturated_trace(x, x.mean(axis=0), np.cov(x.T, bias=True)), 1)
    5.0
    """
    scores = casewise_scores(values, cov, mean)
    b1 = scores.T @ scores / len(values)
    return float(np.sum(np.linalg.inv(normal_weight(cov)) * b1.T))
