"""Confidence intervals shared by the other statistics: the two-sided t quantile and the t interval
of a mean, written once so that every interval of psyq takes its quantile the same way.

* :func:`z_quantile` — the two-sided quantile of the normal at a confidence level (1.645 at .90).
* :func:`t_quantile` — the two-sided quantile of Student's t at a confidence level (normal when
  the degrees of freedom are infinite); the Welch intervals of :mod:`.change` and
  :mod:`.standin.style_trait` and Hedges' g of :mod:`.standin.relations` multiply it by their own
  standard error.
* :func:`mean_interval` — mean ± t_{n−1} · SD / √n, as R's ``t.test(x)$conf.int``.

Checked in tests/test_intervals.py against R's ``qt`` and ``qnorm`` (R 4.x, values as R prints
them) and ``t.test(x)$conf.int``, and against the cases that give no interval.

Example
-------
>>> round(t_quantile(0.95, 10), 6)
2.228139
>>> [round(x, 6) for x in mean_interval(3.0, 1.5811388300841898, 5)]
[1.036757, 4.963243]
"""

from __future__ import annotations

import math
from functools import lru_cache

from scipy import stats

CONFIDENCE = 0.95


@lru_cache(maxsize=256)
def z_quantile(confidence: float) -> float:
    """The two-sided quantile of the standard normal at `confidence`: the z with P(|Z| ≤ z) =
    confidence, ``qnorm(0.5 + confidence / 2)`` in R.

    Example
    -------
    >>> round(z_quantile(0.90), 6), round(z_quantile(0.95), 6)
    (1.644854, 1.959964)
    """
    return float(stats.norm.ppf(0.5 + confidence / 2))


# Cached: the verdict's simulations ask for the same few quantiles thousands of times.
@lru_cache(maxsize=1024)
def t_quantile(confidence: float, df: float) -> float:
    """The two-sided quantile of Student's t with `df` degrees of freedom at `confidence`: the q with
    P(|T| ≤ q) = confidence, ``qt(0.5 + confidence / 2, df)`` in R. With infinite `df`, the normal
    quantile (``qnorm``), as the limit.

    Example
    -------
    >>> round(t_quantile(0.95, 10), 6), round(t_quantile(0.95, math.inf), 6)
    (2.228139, 1.959964)
    """
    if math.isinf(df):
        return z_quantile(confidence)
    return float(stats.t.ppf(0.5 + confidence / 2, df))


def _finite(x: object) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def mean_interval(mean: float, sd: float, n: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The t confidence interval of a mean: mean ± t_{n−1} · sd / √n (sd with divisor n − 1), as R's
    ``t.test(x, conf.level = confidence)$conf.int``; (nan, nan) when n < 2 or a value is missing. An
    sd of 0 gives an interval of zero width: whether that says anything is the caller's to say.

    Example
    -------
    x = 1, 2, 3, 4, 5 (mean 3, SD √2.5); R's ``t.test(1:5)$conf.int`` is 1.036757 4.963243:

    >>> [round(x, 6) for x in mean_interval(3.0, math.sqrt(2.5), 5)]
    [1.036757, 4.963243]
    >>> mean_interval(3.0, float("nan"), 5), mean_interval(3.0, 1.0, 1)
    ((nan, nan), (nan, nan))
    """
    if not (_finite(mean) and _finite(sd) and _finite(n)) or n < 2:
        return math.nan, math.nan
    half = t_quantile(confidence, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half
