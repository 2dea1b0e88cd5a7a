"""Three marks from an interval: does a figure lie inside the region where personas would stand in
for people, outside it, or can the data not tell yet?

Every criterion of the verdict has an *equivalence region* (level: g within ±0.3 SD; spread: the SD
ratio within 0.80–1.25; …) and an interval of its figure. :func:`interval_mark` reads the two as
two one-sided tests (TOST, Schuirmann 1987; Lakens 2017) at α = .05, which is the same decision as
a 90 % confidence interval (:data:`CONFIDENCE`):

* ``meets``: the interval lies inside the region (equivalence shown);
* ``falls short``: the interval lies wholly outside it (a minimal-effect test rejects
  equivalence: the figure is beyond the bound by more than its uncertainty);
* ``inconclusive``: the interval straddles a bound — the data cannot decide;
* ``not estimable``: no figure or no interval (the reason travels with the figure).

The intervals the verdict needs and no other module computes are here:

* :func:`sd_ratio_interval`: Bonett's (2006) robust interval for a ratio of two standard
  deviations (a log-ratio with a pooled kurtosis estimate, so it does not assume normal scores;
  the pooled kurtosis is recomputed at each bound, as statpsych's ``ci.ratio.sd2`` does, so the
  variances need not be equal);
* :func:`alpha_difference_interval`: the difference of two independent Cronbach's α, each with
  Feldt's (1965) exact F interval, joined by Zou's (2007) MOVER (Bonett & Wright 2015; statpsych's
  ``ci.cronbach2``);
* :func:`sample_size_to_decide`: how many respondents would make an inconclusive interval decide,
  if the estimate stayed where it is (the interval narrowing as 1/√n).

Checked in tests/test_equivalence.py against the published examples of statpsych (Bonett's R
package): ``ci.ratio.sd2(.05, y1, y2)`` gives 0.486279 to 1.728396 for its two samples of ten, and
``ci.cronbach2(.05, .88, .76, 8, 8, 200, 250)`` gives 0.06973411 to 0.173236; and the coverage of
both intervals on random halves of the 1,973 Briganti et al. (2018) people.

Example
-------
>>> interval_mark(-0.1, 0.2, -0.3, 0.3), interval_mark(0.35, 0.8, -0.3, 0.3), interval_mark(0.1, 0.5, -0.3, 0.3)
('meets', 'falls short', 'inconclusive')
>>> [round(x, 4) for x in sd_ratio_interval([32, 39, 26, 35, 43, 27, 40, 37, 34, 29],
...                                         [36, 44, 47, 42, 49, 39, 46, 31, 33, 48], confidence=0.95)]
[0.8854, 0.4863, 1.7284]

References
----------
Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure and the power approach
for assessing the equivalence of average bioavailability. *Journal of Pharmacokinetics and
Biopharmaceutics, 15*, 657–680. Lakens, D. (2017). Equivalence tests. *Social Psychological and
Personality Science, 8*, 355–362. Bonett, D. G. (2006). Robust confidence interval for a ratio of
standard deviations. *Applied Psychological Measurement, 30*, 432–439. Feldt, L. S. (1965). The
approximate sampling distribution of Kuder-Richardson reliability coefficient twenty.
*Psychometrika, 30*, 357–370. Zou, G. Y. (2007). Toward using confidence intervals to compare
correlations. *Psychological Methods, 12*, 399–413. Bonett, D. G., & Wright, T. A. (2015). Cronbach's
alpha reliability: Interval estimation, hypothesis testing, and sample size planning. *Journal of
Organizational Behavior, 36*, 3–15.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from psyq.analysis.statistics.intervals import z_quantile

MEETS, FALLS_SHORT, INCONCLUSIVE, NOT_ESTIMABLE = "meets", "falls short", "inconclusive", "not estimable"
MARKS = (MEETS, FALLS_SHORT, INCONCLUSIVE, NOT_ESTIMABLE)
"""The four marks, in the order the verdict reads them."""
CONFIDENCE = 0.90
"""The intervals' level: TOST at α = .05 on each side is the 90 % interval inside the region."""


def interval_mark(low: float, high: float, lower: float = -math.inf, upper: float = math.inf) -> str:
    """The mark of an interval [low, high] against the region [lower, upper] (either end may be
    infinite: a one-sided region such as AUC ≤ .60).

    Example
    -------
    >>> interval_mark(0.52, 0.58, upper=0.60), interval_mark(0.62, 0.70, upper=0.60)
    ('meets', 'falls short')
    >>> interval_mark(float("nan"), 0.5, -0.3, 0.3)
    'not estimable'
    """
    if math.isnan(low) or math.isnan(high):
        return NOT_ESTIMABLE
    if lower < low and high < upper:
        return MEETS
    if high < lower or low > upper:
        return FALLS_SHORT
    return INCONCLUSIVE


def combine_marks(marks: Sequence[str]) -> str:
    """One mark for several rows of one criterion (the subscales, the effects): ``falls short`` when
    any falls short, ``meets`` when every one meets, ``not estimable`` when none is estimable, else
    ``inconclusive`` (some meet and some cannot tell, or some are not estimable).

    Example
    -------
    >>> combine_marks(["meets", "falls short", "inconclusive"]), combine_marks(["meets", "meets"])
    ('falls short', 'meets')
    >>> combine_marks(["meets", "not estimable"]), combine_marks([])
    ('inconclusive', 'not estimable')
    """
    marks = list(marks)
    if FALLS_SHORT in marks:
        return FALLS_SHORT
    if marks and all(m == MEETS for m in marks):
        return MEETS
    if all(m == NOT_ESTIMABLE for m in marks):
        return NOT_ESTIMABLE
    return INCONCLUSIVE


def allow_for_rows(card: pd.DataFrame, *, confidence: float = CONFIDENCE,
                   by: Sequence[str] = ("group", "instrument", "criterion")) -> pd.DataFrame:
    """A scorecard's "falls short" allowed for the rows of its criterion. A criterion measured on m rows
    falls short when any row does, so one row's 5 % chance of lying beyond a bound by chance would
    become nearly m × 5 %: a row's "falls short" stands only when its interval at 1 − (1 −
    `confidence`)/m (Bonferroni) lies outside the region too; otherwise it is ``inconclusive``, and its
    note says so. "meets" needs no correction: every row must meet (an intersection–union test, Berger
    1982).

    `card` has, beside the scorecard's columns, ``_lower`` and ``_upper`` (the region; NaN: a row
    without one, never changed) and ``_widen``: a function of a level giving the row's interval at it,
    on the region's scale. Returns the card without those three columns.

    Example
    -------
    g = 0.45 (90 % CI 0.32 to 0.58) is outside ±0.3, but not at 97.5 %, the level of one of four rows:
    >>> card = pd.DataFrame({"group": "m", "instrument": "iri", "criterion": "level", "value": [0.45, 0.0],
    ...     "low": [0.32, -0.1], "high": [0.58, 0.1], "mark": ["falls short", "meets"], "note": "",
    ...     "_lower": -0.3, "_upper": 0.3})
    >>> card["_widen"] = [lambda level, r=r: rescale_interval(r.value, r.low, r.high, 0.90, level)
    ...                   for r in card[["value", "low", "high"]].itertuples()]
    >>> allow_for_rows(card.iloc[:1])["mark"].tolist()                       # one row: stands
    ['falls short']
    >>> allow_for_rows(pd.concat([card, card]).reset_index(drop=True))["mark"].tolist()   # four rows
    ['inconclusive', 'meets', 'inconclusive', 'meets']
    """
    card = card.copy()
    for _, part in card.groupby(list(by), sort=False):
        m = int((part["mark"] != NOT_ESTIMABLE).sum())
        if m < 2:
            continue
        wide = 1 - (1 - confidence) / m
        for i in part.index[(part["mark"] == FALLS_SHORT) & part["_lower"].notna()]:
            low, high = card.at[i, "_widen"](wide)
            if interval_mark(low, high, card.at[i, "_lower"], card.at[i, "_upper"]) != FALLS_SHORT:
                card.at[i, "mark"] = INCONCLUSIVE
                card.at[i, "note"] = "; ".join(p for p in [
                    f"outside the region at {100 * confidence:.0f} %, not at {100 * wide:.1f} % (Bonferroni for the "
                    f"{m} rows of this criterion)", card.at[i, "note"]] if p)
    return card.drop(columns=["_lower", "_upper", "_widen"])


def rescale_interval(value: float, low: float, high: float, confidence_from: float,
                     confidence_to: float = CONFIDENCE) -> tuple[float, float]:
    """A symmetric normal-theory (Wald) interval at one level moved to another: the same estimate and
    standard error, the half-width times z(to)/z(from). Exact for Wald intervals (a latent mean's
    d, DeLong's AUC); not for asymmetric or t-based ones, which take the level as a parameter.

    Example
    -------
    >>> [round(x, 4) for x in rescale_interval(0.2, 0.2 - 1.96, 0.2 + 1.96, 0.95)]
    [-1.4449, 1.8449]
    """
    scale = z_quantile(confidence_to) / z_quantile(confidence_from)
    return value - (value - low) * scale, value + (high - value) * scale


def _trimmed_mean(y: np.ndarray) -> float:
    """The mean trimmed by 1/(2√(n − 4)) at each end (Bonett 2006), whole observations cut as R's
    ``mean(trim=)`` and scipy's ``trim_mean`` cut them."""
    return float(stats.trim_mean(y, 1 / (2 * math.sqrt(len(y) - 4))))


def sd_ratio_interval(first: Sequence[float] | np.ndarray, second: Sequence[float] | np.ndarray, *,
                      confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """SD(first) / SD(second) and Bonett's (2006) robust interval for it (NaN where a sample has
    fewer than 5 values or no spread). Missing values are left out.

    The log of the variance ratio, with a small-sample adjustment c, ± z·se, where se² sums
    (κ − (n − 3)/n)/(n − 1) over the two samples and κ is the pooled kurtosis about the samples'
    trimmed means; κ is recomputed with the second sample rescaled to each bound in turn, ten
    times, so that unequal variances do not bias it (the iteration of statpsych's
    ``ci.ratio.sd2``).

    Example
    -------
    >>> ratio, low, high = sd_ratio_interval([1, 2, 3, 4, 5, 6], [2, 4, 6, 8, 10, 12, 14])
    >>> round(ratio, 3), bool(low < ratio < high)
    (0.433, True)
    """
    y1 = np.asarray(first, dtype=float)
    y2 = np.asarray(second, dtype=float)
    y1, y2 = y1[~np.isnan(y1)], y2[~np.isnan(y2)]
    n1, n2 = len(y1), len(y2)
    if min(n1, n2) < 5:
        return math.nan, math.nan, math.nan
    v1, v2 = float(y1.var(ddof=1)), float(y2.var(ddof=1))
    if v1 == 0 or v2 == 0:
        return (math.sqrt(v1 / v2) if v2 else math.nan), math.nan, math.nan
    z = z_quantile(confidence)
    c0 = (n1 / (n1 - z)) * ((n2 - z) / n2)
    k1, k2 = (n1 - 3) / n1, (n2 - 3) / n2
    a1 = float(np.sum((y1 - _trimmed_mean(y1)) ** 4))
    a2 = float(np.sum((y2 - _trimmed_mean(y2)) ** 4))
    log_ratio = math.log(c0 * v1 / v2)
    bounds = [1.0, 1.0]
    for _ in range(10):
        out = []
        for sign, r in zip((-1, 1), bounds):
            kurtosis = (n1 + n2) * (a1 + r ** 4 * a2) / ((n1 - 1) * v1 + r ** 2 * (n2 - 1) * v2) ** 2
            se = math.sqrt(max((kurtosis - k1) / (n1 - 1) + (kurtosis - k2) / (n2 - 1), 0.0))
            out.append(math.sqrt(math.exp(log_ratio + sign * z * se)))
        bounds = out
    return math.sqrt(v1 / v2), bounds[0], bounds[1]


def alpha_interval(alpha: float, n: int, k: int, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Feldt's (1965) exact interval for Cronbach's α of `k` items answered by `n` respondents
    (assuming essentially parallel, normal items): (1 − α)/(1 − α_pop) is F(n − 1, (n − 1)(k − 1))
    distributed. Negative α is allowed (random answers); NaN when α ≥ 1, n < 2 or k < 2.

    The denominator's degrees of freedom are (n − 1)(k − 1), Feldt's; statpsych's ``ci.cronbach``
    uses n(k − 1), which differs by less than 1/n.

    Example
    -------
    >>> [round(x, 3) for x in alpha_interval(0.75, 200, 7, confidence=0.95)]
    [0.693, 0.8]
    """
    if not (alpha < 1) or n < 2 or k < 2 or math.isnan(alpha):
        return math.nan, math.nan
    tail = (1 - confidence) / 2
    df1, df2 = n - 1, (n - 1) * (k - 1)
    low = 1 - (1 - alpha) * stats.f.ppf(1 - tail, df1, df2)
    high = 1 - (1 - alpha) * stats.f.ppf(tail, df1, df2)
    return float(low), float(high)


def alpha_difference_interval(alpha_1: float, n_1: int, k_1: int, alpha_2: float, n_2: int, k_2: int, *,
                              confidence: float = CONFIDENCE, feldt_df: str = "feldt") -> tuple[float, float, float]:
    """α₁ − α₂ of two independent samples and its interval: each α's Feldt interval joined by Zou's
    (2007) method of variance estimates recovery (MOVER), as Bonett & Wright (2015) give it.

    `feldt_df` "statpsych" takes n(k − 1) denominator degrees of freedom as statpsych's
    ``ci.cronbach2`` does (for the check against its published example); "feldt", the default,
    Feldt's (n − 1)(k − 1).

    Example
    -------
    >>> [round(x, 5) for x in alpha_difference_interval(.88, 200, 8, .76, 250, 8, confidence=.95,
    ...                                                  feldt_df="statpsych")]
    [0.12, 0.06973, 0.17324]
    """
    def interval(alpha: float, n: int, k: int) -> tuple[float, float]:
        if feldt_df == "statpsych":
            if not (alpha < 1) or n < 2 or k < 2:
                return math.nan, math.nan
            tail = (1 - confidence) / 2
            df1, df2 = n - 1, n * (k - 1)
            f0 = 1 / (1 - alpha)
            return (1 - stats.f.ppf(1 - tail, df1, df2) / f0, 1 - 1 / (f0 * stats.f.ppf(1 - tail, df2, df1)))
        return alpha_interval(alpha, n, k, confidence=confidence)

    low_1, high_1 = interval(alpha_1, n_1, k_1)
    low_2, high_2 = interval(alpha_2, n_2, k_2)
    d = alpha_1 - alpha_2
    if any(math.isnan(x) for x in (low_1, high_1, low_2, high_2)):
        return d, math.nan, math.nan
    low = d - math.sqrt((alpha_1 - low_1) ** 2 + (high_2 - alpha_2) ** 2)
    high = d + math.sqrt((high_1 - alpha_1) ** 2 + (alpha_2 - low_2) ** 2)
    return float(d), float(low), float(high)


def sample_size_to_decide(value: float, low: float, high: float, n: float, lower: float = -math.inf,
                          upper: float = math.inf) -> float:
    """How many respondents (where `n` gave [low, high]) would make the interval decide, were the
    estimate to stay at `value` and the interval to narrow as 1/√n: the n at which it would lie
    inside the region, or wholly outside it. NaN when the estimate sits on a bound (no n decides)
    or the interval is not finite; `n` itself when it decides already.

    It plans, it does not promise: the estimate will move. The verdict says "about N".

    Example
    -------
    g = 0.10 with the interval −0.12 to 0.32 from 50 personas: about 61 would put it inside ±0.3:
    >>> round(sample_size_to_decide(0.10, -0.12, 0.32, 50, -0.3, 0.3))
    61
    """
    if any(math.isnan(x) for x in (value, low, high, n)) or n <= 0:
        return math.nan
    below, above = value - low, high - value            # the two half-widths (they may differ)
    if lower < value < upper:
        room_low, room_high = value - lower, upper - value
        need = max((below / room_low) ** 2 if math.isfinite(room_low) else 0.0,
                   (above / room_high) ** 2 if math.isfinite(room_high) else 0.0)
    elif value > upper:
        need = (below / (value - upper)) ** 2
    elif value < lower:
        need = (above / (lower - value)) ** 2
    else:
        return math.nan
    return float(n * max(need, 1.0)) if math.isfinite(need) else math.nan
