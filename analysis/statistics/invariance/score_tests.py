"""Univariate score (Lagrange multiplier) tests of equality constraints, as lavaan's ``lavTestScore``.

For the constraints R θ = 0 of a fitted model (θ the split vector, every group's parameter in its own
place), the score s of one case and the information J over θ at the constrained estimate, lavaan
tests constraint r alone by N·s'J₋ᵣ⁻s, where J₋ᵣ⁻ = Z(Z'JZ)⁻¹Z' and the columns of Z span the θ that
keep every *other* constraint (R₋ᵣθ = 0): the χ²(1) by which the fit would improve if that one
equality were released, the others kept (Sörbom, 1989; Rosseel, 2012).

The equalities here are shared places (:class:`~.layout.Layout`), so Z is known without a null
space: the fold K of the reduced vector (every constraint kept) and the unit vector e of the one
group's place that the release lets move. With A = K'JK, b = K'Je, c = e'Je, u = K's and w = e's,
block inversion gives s'J₋ᵣ⁻s = u'A⁻¹u + (w − b'A⁻¹u)²/(c − b'A⁻¹b): one factorisation of A for all
constraints.

May import numpy and scipy.

Checked in tests/test_invariance_lavaan.py
(``test_score_tests_of_the_scalar_model_equal_lavtestscore``): the univariate score tests of the
scalar model against lavaan 0.6.14's ``lavTestScore`` on the Briganti IRI answers by gender (stored
output of tests/data/lavaan/invariance.R).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import linalg


def univariate_score_tests(score: np.ndarray, information: np.ndarray, fold: np.ndarray, released: Sequence[int],
                           n: int) -> np.ndarray:
    """One χ²(1) statistic per split place in `released`: the test of letting that place leave the
    reduced place it shares (`fold` K: split = K·reduced).

    Example
    -------
    Two groups' copies of one parameter held equal; the score pulls them apart:

    >>> fold = np.array([[1.0], [1.0]])
    >>> float(univariate_score_tests(np.array([0.1, -0.1]), np.eye(2), fold, [1], 100)[0])
    2.0
    """
    a = fold.T @ information @ fold
    u = fold.T @ score
    factor = linalg.cho_factor(a)
    a_inv_u = linalg.cho_solve(factor, u)
    base = float(u @ a_inv_u)
    statistics = np.empty(len(released))
    for k, place in enumerate(released):
        b = fold.T @ information[:, place]
        a_inv_b = linalg.cho_solve(factor, b)
        schur = information[place, place] - b @ a_inv_b
        w = score[place]
        statistics[k] = n * (base + (w - b @ a_inv_u) ** 2 / schur)
    return statistics
