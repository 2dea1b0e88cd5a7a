"""Corrections for multiple tests: one function per correction, arrays of p-values in, adjusted
p-values out.

Holm's (1979) step-down correction is written here rather than called from statsmodels, whose
``multipletests`` runs ``gc.collect()`` on every call (a quarter of a second in a large report,
where norms, DIF and change each correct their own family); it computes the same products and
running maximum in the same order, so it gives the same numbers to the last bit. NaN (a test that
could not be run) stays NaN and is not counted in the family.

Checked in tests/test_multiple_testing.py against statsmodels' ``multipletests(method="holm")``
bit for bit (ties included) and against Holm's adjustment worked out by hand.

Example
-------
>>> holm([0.01, 0.04, 0.03, np.nan, 0.005]).round(3).tolist()
[0.03, 0.06, 0.06, nan, 0.02]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of `p`, in `p`'s order: the k-th smallest of m is
    multiplied by m − k + 1, a running maximum keeps them ordered, and none exceeds 1. NaN stays
    NaN and is not counted in m.

    Example
    -------
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(3).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    order = tested[np.argsort(p[tested])]
    adjusted = np.maximum.accumulate(p[order] * np.arange(len(order), 0, -1))
    out[order] = np.minimum(adjusted, 1.0)
    return out
