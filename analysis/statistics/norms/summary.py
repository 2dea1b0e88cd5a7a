"""Norm statistics and tests from summary statistics: a norm group's mean, SD and n on a subscale's
scoring metric (pooled from the published groups where the source gives none for the whole
sample), and Welch's t, Hedges' g and the TOST equivalence test computed from two groups' means,
SDs and ns, so that the same functions serve for re-checking published tables.

Checked in tests/test_norms.py: Welch's t and Hedges' g against the hand formulas and against
pingouin and scipy run on raw data built to have the given means and SDs, Zhao et al.'s (2020)
published Table 2 sex row reproduced, TOST on constructed cases, Davis' (1980) published groups
pooled by hand.

Example
-------
>>> g, low, high = hedges_g(10.0, 2.0, 20, 12.0, 4.0, 30)
>>> round(g, 2)
-0.59
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.meta_analysis import effectsize_smd

from psyq.engine.design.instrument import SCORE_KINDS, Instrument, NormSample, Subscale
from psyq.engine.kinds import get_kind
from psyq.analysis.statistics.intervals import z_quantile


POOLED = "pooled"
"""`norm_group` label of the row for respondents that match no group of the norm sample."""


@dataclass(frozen=True)
class NormStats:
    """A norm group's mean, SD and n on the scoring metric of one subscale.

    `derived` is True when psyq pooled the statistics from the published groups rather than
    reading them from the source (see :func:`pool_groups`).
    """

    mean: float
    sd: float
    n: int
    sample_id: str
    group_id: str
    derived: bool


# --------------------------------------------------------------------------------------------
# Norm statistics


def pool_groups(ns: Iterable[int], means: Iterable[float],
                sds: Iterable[float]) -> tuple[float, float, int]:
    """Mean, SD and n of the union of several groups, from each group's n, mean and SD.

    The mean is the n-weighted mean; the variance is the total sum of squares (within-group
    ``(n_g - 1) SD_g²`` plus between-group ``n_g (M_g - M)²``) over ``N - 1``. This is exact for
    the union of the groups when each SD has the usual n − 1 denominator.

    Parameters
    ----------
    ns, means, sds : iterables of the same length
        Size, mean and standard deviation of each group.

    Returns
    -------
    mean, sd, n : float, float, int

    Example
    -------
    >>> m, s, n = pool_groups([10, 10], [0.0, 2.0], [1.0, 1.0])
    >>> round(m, 3), round(s, 4), n
    (1.0, 1.4142, 20)

    References
    ----------
    Higgins, J. P. T., & Green, S. (Eds.) (2011). *Cochrane Handbook for Systematic Reviews of
    Interventions* (version 5.1.0), Table 7.7.a: formulae for combining groups.
    """
    n = np.asarray(list(ns), dtype=float)
    m = np.asarray(list(means), dtype=float)
    s = np.asarray(list(sds), dtype=float)
    total = n.sum()
    mean = float((n * m).sum() / total)
    sum_squares = ((n - 1) * s**2).sum() + (n * (m - mean) ** 2).sum()
    return mean, float(np.sqrt(sum_squares / (total - 1))), int(total)


def _subscale(instrument: Instrument, subscale_id: str) -> Subscale:
    for subscale in instrument.subscales:
        if subscale.id == subscale_id:
            return subscale
    raise KeyError(f"instrument '{instrument.id}' has no subscale '{subscale_id}'")


def _metric_factor(instrument: Instrument, sample: NormSample, subscale: Subscale) -> float:
    """What a norm on `sample.metric` is multiplied by to be on the subscale's own metric: the metric
    its scoring rule has (:attr:`psyq.engine.kinds.ItemKind.score_metrics`; a LEAS total is a sum), and
    1 for a rule that is neither a sum nor a mean (an accuracy correlation)."""
    own = get_kind(SCORE_KINDS[subscale.score]).score_metrics.get(subscale.score)
    if own is None or sample.metric == own:
        return 1.0
    k = len(instrument.subscale_items(subscale.id))
    return float(k) if sample.metric == "mean" else 1.0 / k


def norm_stats(instrument: Instrument, sample: NormSample, subscale_id: str,
               group_id: str | None) -> NormStats | None:
    """A norm group's statistics for one subscale, on the subscale's own scoring metric.

    A norm published as an item mean is multiplied by the number of items when the subscale is
    scored as a sum (mean and SD alike), and a summed norm is divided by it for a subscale
    scored as a mean.

    Parameters
    ----------
    instrument : Instrument
        The instrument `sample` belongs to.
    sample : NormSample
        One of ``instrument.norms``.
    subscale_id : str
        The subscale (KeyError if the instrument has none by that id).
    group_id : str or None
        A group of `sample` (KeyError if none by that id). None asks for the whole sample: a
        group whose `where` is empty when the source publishes one, else the groups that have
        this subscale pooled by :func:`pool_groups` (``group_id="pooled"``, ``derived=True``).

    Returns
    -------
    NormStats or None
        None when the group (or, for the pooled group, every group) has no norm for the subscale.

    Example
    -------
    >>> from psyq import load_instrument
    >>> iri = load_instrument("iri")
    >>> norm_stats(iri, iri.norms[0], "EC", "women")
    NormStats(mean=20.54, sd=4.29, n=1135, sample_id='briganti2018', group_id='women', derived=False)

    References
    ----------
    Higgins, J. P. T., & Green, S. (Eds.) (2011). *Cochrane Handbook for Systematic Reviews of
    Interventions* (version 5.1.0), Table 7.7.a (pooling groups).
    """
    factor = _metric_factor(instrument, sample, _subscale(instrument, subscale_id))
    if group_id is not None:
        group = next((g for g in sample.groups if g.id == group_id), None)
        if group is None:
            raise KeyError(f"norm sample '{sample.id}' has no group '{group_id}'")
        candidates = [group]
    else:
        candidates = [g for g in sample.groups if not g.where]
    for group in candidates:
        if subscale_id in group.scores:
            score = group.scores[subscale_id]
            return NormStats(score.mean * factor, score.sd * factor, group.n, sample.id, group.id,
                             derived=False)
    if group_id is not None:
        return None
    groups = [g for g in sample.groups if subscale_id in g.scores]
    if not groups:
        return None
    mean, sd, n = pool_groups([g.n for g in groups], [g.scores[subscale_id].mean for g in groups],
                              [g.scores[subscale_id].sd for g in groups])
    return NormStats(mean * factor, sd * factor, n, sample.id, POOLED, derived=True)


# --------------------------------------------------------------------------------------------
# Tests and effect sizes from summary statistics


def welch_from_summary(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int, *,
                       equal_var: bool = False) -> tuple[float, float, float]:
    """Welch's two-sample t test of ``m1 - m2`` from means, SDs and sizes.

    t and the two-sided p come from :func:`scipy.stats.ttest_ind_from_stats`; the
    Welch–Satterthwaite degrees of freedom are
    ``(v1 + v2)² / (v1² / (n1 - 1) + v2² / (n2 - 1))`` with ``v = s² / n``.
    ``equal_var=True`` gives Student's pooled-variance test instead (df = n1 + n2 − 2), for
    checking published tables that used it.

    Returns
    -------
    t, df, p : float

    Example
    -------
    >>> t, df, p = welch_from_summary(10.0, 2.0, 20, 12.0, 4.0, 30)
    >>> round(t, 4), round(df, 2), round(p, 4)
    (-2.3355, 45.14, 0.024)

    References
    ----------
    Welch, B. L. (1947). The generalization of "Student's" problem when several different
    population variances are involved. *Biometrika*, 34(1/2), 28–35.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
    *Biometrics Bulletin*, 2(6), 110–114.
    """
    m1, s1, m2, s2 = (np.float64(x) for x in (m1, s1, m2, s2))
    with np.errstate(divide="ignore", invalid="ignore"):
        result = stats.ttest_ind_from_stats(m1, s1, n1, m2, s2, n2, equal_var=equal_var)
        if equal_var:
            df = np.float64(n1 + n2 - 2)
        else:
            v1, v2 = s1**2 / n1, s2**2 / n2
            df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    return float(result.statistic), float(df), float(result.pvalue)


def hedges_g(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int,
             confidence: float = 0.95) -> tuple[float, float, float]:
    """Hedges' g of ``m1 - m2`` and its confidence interval.

    ``d = (m1 - m2) / s_pooled`` with ``s_pooled² = ((n1-1)s1² + (n2-1)s2²) / (n1+n2-2)``;
    ``g = J d`` with the small-sample correction ``J = 1 - 3 / (4 (n1+n2-2) - 1)`` (g from
    :func:`statsmodels.stats.meta_analysis.effectsize_smd`). Its standard error is
    ``J sqrt((n1+n2)/(n1 n2) + d² / (2 (n1+n2)))`` and the interval is ``g ± z SE`` with the
    normal quantile z, as in Borenstein et al. (2009).

    Returns
    -------
    g, low, high : float

    Example
    -------
    >>> g, low, high = hedges_g(103.0, 5.5, 50, 100.0, 4.5, 50)
    >>> round(g, 4), round(low, 4), round(high, 4)
    (0.5924, 0.1949, 0.99)

    References
    ----------
    Hedges, L. V., & Olkin, I. (1985). *Statistical Methods for Meta-Analysis*. Academic Press,
    ch. 5 (g, J and the large-sample variance of d).
    Borenstein, M., Hedges, L. V., Higgins, J. P. T., & Rothstein, H. R. (2009). *Introduction
    to Meta-Analysis*. Wiley, ch. 4 (d, V_d, J, g, V_g = J² V_d).
    """
    m1, s1, m2, s2 = (np.float64(x) for x in (m1, s1, m2, s2))
    with np.errstate(divide="ignore", invalid="ignore"):
        g, _ = effectsize_smd(m1, s1, n1, m2, s2, n2)
        j = 1 - 3 / (4 * (n1 + n2 - 2) - 1)
        d = g / j
        se = j * np.sqrt((n1 + n2) / (n1 * n2) + d**2 / (2 * (n1 + n2)))
    z = z_quantile(confidence)
    return float(g), float(g - z * se), float(g + z * se)


def tost_from_summary(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int, bound: float,
                      *, alpha: float = 0.05) -> tuple[float, bool]:
    """Two one-sided Welch tests of equivalence of ``m1`` with the norm ``m2``.

    The equivalence margin is given in SD units of the norm: ``delta = bound × s2``. The tests
    are H0 ``m1 - m2 <= -delta`` and H0 ``m1 - m2 >= +delta`` (each a one-sided Welch test from
    :func:`scipy.stats.ttest_ind_from_stats`); equivalence is shown when both are rejected,
    i.e. when the larger p is below `alpha`.

    Returns
    -------
    p, equivalent : float, bool
        The larger of the two one-sided p values, and ``p < alpha``.

    Example
    -------
    >>> p, ok = tost_from_summary(20.1, 4.0, 200, 20.0, 4.0, 1000, bound=0.3)
    >>> round(p, 4), ok
    (0.0002, True)

    References
    ----------
    Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure and the power
    approach for assessing the equivalence of average bioavailability. *Journal of
    Pharmacokinetics and Biopharmaceutics*, 15(6), 657–680.
    Lakens, D. (2017). Equivalence tests: A practical primer for t tests, correlations, and
    meta-analyses. *Social Psychological and Personality Science*, 8(4), 355–362.
    """
    m1, s1, m2, s2 = (np.float64(x) for x in (m1, s1, m2, s2))
    delta = bound * s2
    with np.errstate(divide="ignore", invalid="ignore"):
        above = stats.ttest_ind_from_stats(m1 + delta, s1, n1, m2, s2, n2, equal_var=False,
                                           alternative="greater").pvalue
        below = stats.ttest_ind_from_stats(m1 - delta, s1, n1, m2, s2, n2, equal_var=False,
                                           alternative="less").pvalue
    p = float(np.max([above, below]))  # NaN if either is NaN
    return p, bool(p < alpha)

