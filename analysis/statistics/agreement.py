"""Agreement between two scorers of the same answers (lexicon vs judge model, hand vs automatic).

Checked in tests/test_judge.py (``test_level_agreement_by_hand``): exact and within-one agreement,
mean difference, Pearson r and ICC(A,1) worked out by hand from the two-way ANOVA mean squares
(Shrout & Fleiss, 1979; McGraw & Wong, 1996).

Example
-------
>>> level_agreement([0, 3, 4, 2, 3], [0, 3, 3, 2, 3])["exact"]
0.8
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pingouin as pg
from scipy import stats

AGREEMENT_COLUMNS = ["n", "pearson_r", "icc_a1", "exact", "within_one", "mean_difference"]


def level_agreement(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Agreement of two scorers' levels on the same answers (pairs with a missing level dropped).

    ``pearson_r`` (scipy), ``icc_a1``: ICC(A,1), two-way random, absolute agreement, single rater
    (pingouin's ICC2), ``exact`` and ``within_one``: shares of answers with equal levels and levels at
    most one apart, ``mean_difference``: mean of b − a. r and ICC are NaN when either scorer gives
    every answer the same level (no variance) or fewer than three pairs remain.

    Example
    -------
    >>> round(level_agreement([0, 1, 2, 3], [0, 1, 2, 4])["pearson_r"], 3)
    0.983
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = len(x)
    out = {"n": n, "pearson_r": np.nan, "icc_a1": np.nan,
           "exact": float(np.mean(x == y)) if n else np.nan,
           "within_one": float(np.mean(np.abs(x - y) <= 1)) if n else np.nan,
           "mean_difference": float(np.mean(y - x)) if n else np.nan}
    if n >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        out["pearson_r"] = float(stats.pearsonr(x, y)[0])
        long = pd.DataFrame({"answer": np.tile(np.arange(n), 2), "scorer": np.repeat(["a", "b"], n),
                             "level": np.concatenate([x, y])})
        icc = pg.intraclass_corr(long, targets="answer", raters="scorer", ratings="level").set_index("Type")
        out["icc_a1"] = float(icc.loc["ICC(A,1)", "ICC"])
    return out
