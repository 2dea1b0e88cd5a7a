"""Agreement between two scorers of the same answers (lexicon vs judge model, hand vs automatic):
exact and within-one agreement, r, ICC(A,1) (:func:`level_agreement`) and Cohen's weighted κ
(:func:`weighted_kappa`, :func:`kappa_from_table`).

Checked in tests/test_judge.py (``test_level_agreement_by_hand``): exact and within-one agreement,
mean difference, Pearson r and ICC(A,1) worked out by hand from the two-way ANOVA mean squares
(Shrout & Fleiss, 1979; McGraw & Wong, 1996). Checked in tests/test_leas_agreement.py: weighted κ
against ``sklearn.metrics.cohen_kappa_score`` (linear, quadratic and no weights), against the values
Cohen (1968) publishes for his Table 1 (κ = .492, κ_w = .348 with his weights 1, 3, 6), and against
R 4.2.2 psych 2.2.9 ``cohen.kappa`` (script and output in tests/data/weighted_kappa_psych.R and
weighted_kappa_psych.txt).

Example
-------
>>> level_agreement([0, 3, 4, 2, 3], [0, 3, 3, 2, 3])["exact"]
0.8
>>> round(weighted_kappa([0, 3, 4, 2, 3], [0, 3, 3, 2, 3]), 3)
0.848
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

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


KAPPA_WEIGHTS = ("none", "linear", "quadratic")
"""The disagreement weights :func:`weighted_kappa` knows: none (Cohen's 1960 κ), the levels' distance
|a − b| (linear) and its square (quadratic)."""


def kappa_from_table(counts: Sequence[Sequence[float]] | np.ndarray, disagreement: Sequence[Sequence[float]] | np.ndarray
                     ) -> float:
    """Cohen's (1968) weighted κ of a cross-table of two scorers' categories (rows one scorer,
    columns the other; counts or proportions): κ_w = 1 − Σ v·p_o / Σ v·p_e, with `disagreement` the
    weights v (0 on the diagonal, larger for graver disagreements), p_o the observed proportions and
    p_e the products of the margins (what two scorers with these margins would give by chance).
    Weights 1 off the diagonal give Cohen's (1960) κ. NaN when the expected disagreement is 0 (both
    scorers put everything in the same category).

    Example
    -------
    Cohen's (1968) Table 1 (200 cases, three diagnoses) with his disagreement weights 1, 3 and 6:

    >>> table = [[.44, .07, .09], [.05, .20, .05], [.01, .03, .06]]
    >>> round(kappa_from_table(table, [[0, 1, 3], [1, 0, 6], [3, 6, 0]]), 3)
    0.348
    >>> round(kappa_from_table(table, 1 - np.eye(3)), 3)     # unweighted
    0.492
    """
    p = np.asarray(counts, dtype=float)
    v = np.asarray(disagreement, dtype=float)
    p = p / p.sum()
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    chance = float((v * expected).sum())
    return 1.0 - float((v * p).sum()) / chance if chance > 0 else np.nan


def weighted_kappa(a: Sequence[float], b: Sequence[float],
                   weights: Literal["none", "linear", "quadratic"] = "linear") -> float:
    """Cohen's weighted κ of two scorers' levels of the same answers (pairs with a missing level
    dropped): agreement beyond what the two scorers' own distributions of levels give by chance,
    1 perfect, 0 chance, below 0 worse than chance (:func:`kappa_from_table`).

    The weights are the levels' own distance: ``linear`` |a − b|, ``quadratic`` (a − b)², ``none``
    every disagreement alike. Linear is the usual choice for LEAS levels: they are ordered steps
    (bodily, action, one emotion, a blend), not equal intervals, and a disagreement counts by the
    number of levels apart, as "within one level" does; quadratic weights make a two-level
    disagreement four times a one-level one, treat the levels as an interval scale, and give nearly
    the ICC (Fleiss & Cohen, 1973), so they are shown beside it, not instead of it.

    Weights come from the level values, not from their rank among the levels used: with no answer
    at level 1, 0 against 2 is still two levels apart (``sklearn.metrics.cohen_kappa_score`` counts
    steps between the labels it is given, so it agrees when given every level,
    ``labels=[0, 1, 2, 3, 4]``). NaN (not estimable) when no pair is left or either scorer gives
    every answer the same level: κ is then 0 whatever the other says, which would read as chance
    agreement where none could be measured.

    Example
    -------
    >>> a, b = [0, 1, 2, 3, 4, 3], [0, 2, 2, 3, 3, 3]
    >>> [round(weighted_kappa(a, b, w), 3) for w in KAPPA_WEIGHTS]
    [0.556, 0.75, 0.887]
    >>> weighted_kappa([3, 3, 3], [2, 3, 4])
    nan
    """
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(KAPPA_WEIGHTS)}, not {weights!r}")
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) == 0 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return np.nan
    levels = np.union1d(x, y)
    counts = np.zeros((len(levels), len(levels)))
    np.add.at(counts, (np.searchsorted(levels, x), np.searchsorted(levels, y)), 1)
    distance = np.abs(levels[:, None] - levels[None, :])
    disagreement = {"none": (distance > 0).astype(float), "linear": distance, "quadratic": distance ** 2}[weights]
    return kappa_from_table(counts, disagreement)
