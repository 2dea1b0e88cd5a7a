"""Do the relations found among personas replicate among people?

A cohort can match people's mean scores and still get the *relations* wrong: which group scores
higher, how a score moves with age, how two subscales go together. Bisbee et al. (2024) found that
48 % of the regression coefficients estimated on synthetic (LLM) respondents differed from those
of the human survey they imitated, and 32 % had the opposite sign. :func:`relations` sets each
relation among personas beside the same relation among people, as a standardised effect with a
95 % CI on each side, their difference with a 95 % CI, and whether the signs agree.

Inputs are *score frames*, as :func:`psyq.score_wide` gives them (one column per subscale id,
indexed by respondent), with attribute columns joined (``gender``, ``age``, …).

Checked in tests/test_relations.py against pingouin's ``compute_effsize`` / ``compute_esci``
(Hedges' g and its CI), scipy's ``pearsonr`` and pingouin's ``corr`` (r and its Fisher-z CI), Zou's
(2007) published example for the difference of two independent correlations, and two random halves
of the Briganti et al. (2018) people, whose relations must agree.

Example
-------
Three women and three men on each side; among people the men score 2 points higher on PT, among
personas 1 point lower:

>>> cohort = pd.DataFrame({"PT": [13.0, 14, 15, 12, 13, 14], "EC": [10.0, 12, 14, 11, 12, 16],
...                        "gender": ["female"] * 3 + ["male"] * 3})
>>> people = pd.DataFrame({"PT": [10.0, 12, 14, 12, 14, 16], "EC": [11.0, 12, 14, 12, 13, 16],
...                        "gender": ["female"] * 3 + ["male"] * 3})
>>> out = relations(cohort, people)
>>> out[["attribute", "subscale", "contrast", "effect_cohort", "effect_people", "same_sign"]].round(2)
  attribute subscale       contrast  effect_cohort  effect_people  same_sign
0    gender       PT  male − female          -0.80           0.80      False
1    gender       EC  male − female           0.34           0.58       True
2        EC       PT                          0.66           0.96       True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from psyq.engine.design.instrument import Instrument
from psyq.engine.files.codebook import WEIGHT_COLUMN

from psyq.analysis.statistics.intervals import t_quantile, z_quantile
from psyq.analysis.statistics.validity import level_text, pearson_pairwise, label_mismatch, part_whole

CONFIDENCE = 0.95
CATEGORICAL, NUMERIC, SUBSCALE = "categorical", "numeric", "subscale"
G, R = "g", "r"
MIN_PER_LEVEL = 2
RELATION_COLUMNS = ["attribute", "subscale", "kind", "contrast", "measure", "n_cohort", "n_people",
                    "effect_cohort", "effect_cohort_low", "effect_cohort_high",
                    "effect_people", "effect_people_low", "effect_people_high",
                    "difference", "difference_low", "difference_high", "same_sign", "agree", "replicated", "power", "note"]


@dataclass
class _Effect:
    """One side's effect: value, CI, its standard error (g only), n, and why it is missing ("")."""

    value: float = math.nan
    low: float = math.nan
    high: float = math.nan
    se: float = math.nan
    n: int = 0
    why: str = ""


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def _levels(column: pd.Series) -> pd.Series:
    """An attribute's values as stripped text (case kept; 1.0 written 1), None where missing or blank."""
    return level_text(column).map(lambda v: (v.strip() or None) if isinstance(v, str) else None)


def fisher_ci(r: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Confidence interval of a Pearson r from n pairs by Fisher's z: tanh(atanh(r) ± z_{1−α/2}/√(n − 3)).

    The interval of :func:`scipy.stats.pearsonr`'s ``confidence_interval`` and of R's
    ``cor.test``; (−1, 1) with 3 pairs, NaN with fewer.

    Example
    -------
    >>> [round(v, 3) for v in fisher_ci(0.49, 145)]
    [0.355, 0.605]
    """
    if not np.isfinite(r) or n < 3:
        return math.nan, math.nan
    if n == 3:
        return -1.0, 1.0
    half = z_quantile(confidence) / math.sqrt(n - 3)
    with np.errstate(divide="ignore"):
        z = np.arctanh(r)
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def correlation_difference_ci(r_a: float, n_a: int, r_b: float, n_b: int,
                              confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Zou's (2007) confidence interval for the difference r_a − r_b of two independent correlations.

    With (l, u) the Fisher-z interval of each r (:func:`fisher_ci`):
    L = r_a − r_b − √((r_a − l_a)² + (u_b − r_b)²), U = r_a − r_b + √((u_a − r_a)² + (r_b − l_b)²).
    Unlike a symmetric interval on r_a − r_b, it keeps the asymmetry of each r's interval near ±1.

    Example
    -------
    Zou, 2007, p. 406: r = .49 from 145 people against r = .36 from 87 gives (−.087, .359):

    >>> [round(v, 3) for v in correlation_difference_ci(0.49, 145, 0.36, 87)]
    [-0.087, 0.359]
    """
    l_a, u_a = fisher_ci(r_a, n_a, confidence)
    l_b, u_b = fisher_ci(r_b, n_b, confidence)
    d = r_a - r_b
    return d - math.hypot(r_a - l_a, u_b - r_b), d + math.hypot(u_a - r_a, r_b - l_b)


def _hedges_g(x: np.ndarray, y: np.ndarray, level: str, reference: str, subscale: str) -> _Effect:
    """Hedges' g of x − y with its CI, as pingouin's ``compute_effsize``/``compute_esci`` give them."""
    nx, ny = x.size, y.size
    out = _Effect(n=nx + ny)
    if nx < MIN_PER_LEVEL or ny < MIN_PER_LEVEL:
        few = ", ".join(f"{n} with {name}" for n, name in ((nx, level), (ny, reference)) if n < MIN_PER_LEVEL)
        out.why = f"{few} and a {subscale} score: g needs at least {MIN_PER_LEVEL} respondents per level"
        return out
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        out.why = f"{subscale} has no variance within {level} and within {reference}"
        return out
    dof = nx + ny - 2
    pooled = ((nx - 1) * x.var(ddof=1) + (ny - 1) * y.var(ddof=1)) / dof
    g = (x.mean() - y.mean()) / math.sqrt(pooled) * (1 - 3 / (4 * (nx + ny) - 9))
    se = math.sqrt((nx + ny) / (nx * ny) + g ** 2 / (2 * (nx + ny)))
    half = t_quantile(CONFIDENCE, dof) * se
    out.value, out.low, out.high, out.se = float(g), float(g - half), float(g + half), se
    return out


def _correlation(x: pd.Series, y: pd.Series) -> _Effect:
    r, n, why = pearson_pairwise(x, y)
    low, high = fisher_ci(r, n)
    return _Effect(value=r, low=low, high=high, n=n, why=why)


def _sign_agreement(cohort: _Effect, people: _Effect) -> tuple[object, object, object]:
    """same_sign (NA unless both are numbers other than 0); agree and replicated (NA unless the
    people's CI excludes 0 and the cohort has a number)."""
    same = agree = replicated = pd.NA
    if np.isfinite(cohort.value) and np.isfinite(people.value):
        if cohort.value != 0 and people.value != 0:
            same = bool(np.sign(cohort.value) == np.sign(people.value))
        if people.low > 0 or people.high < 0:
            agree = bool(np.sign(cohort.value) == np.sign(people.value))
            # A sign alone agrees half the time by chance; the cohort's own CI must exclude 0 on that side.
            replicated = bool(cohort.low > 0 if people.low > 0 else cohort.high < 0)
    return same, agree, replicated


def _power(measure: str, cohort: _Effect, people: _Effect) -> float:
    """The power of the cohort's two-sided test at 1 − CONFIDENCE to find an effect as large as the
    people's, from the cohort's own standard error (normal approximation): g on its SE, r on Fisher's z
    with SE 1/√(n − 3). NaN where either side has no number."""
    if measure == G:
        shift = abs(people.value) / cohort.se if cohort.se > 0 else math.nan
    else:
        shift = abs(math.atanh(max(-0.999999, min(0.999999, people.value)))) * math.sqrt(cohort.n - 3) \
            if cohort.n > 3 else math.nan
    if not math.isfinite(shift):
        return math.nan
    z = z_quantile(CONFIDENCE)
    return float(stats.norm.cdf(shift - z) + stats.norm.cdf(-shift - z))


def _row(attribute: str, subscale: str, kind: str, contrast: str, measure: str, cohort: _Effect, people: _Effect,
         extra: Sequence[str] = (), confidence: float = CONFIDENCE) -> dict:
    difference = cohort.value - people.value
    if measure == G:
        half = z_quantile(confidence) * math.hypot(cohort.se, people.se)
        low, high = difference - half, difference + half
    else:
        low, high = correlation_difference_ci(cohort.value, cohort.n, people.value, people.n, confidence)
    same, agree, replicated = _sign_agreement(cohort, people)
    notes = [f"{side}: {e.why}" for side, e in (("cohort", cohort), ("people", people)) if e.why]
    return {"attribute": attribute, "subscale": subscale, "kind": kind, "contrast": contrast, "measure": measure,
            "n_cohort": int(cohort.n), "n_people": int(people.n),
            "effect_cohort": cohort.value, "effect_cohort_low": cohort.low, "effect_cohort_high": cohort.high,
            "effect_people": people.value, "effect_people_low": people.low, "effect_people_high": people.high,
            "difference": difference, "difference_low": low, "difference_high": high,
            "same_sign": same, "agree": agree, "replicated": replicated,
            "power": _power(measure, cohort, people) if np.isfinite(people.value) else math.nan, "note": "; ".join([*notes, *extra])}


def _categorical_rows(attribute: str, cohort: pd.DataFrame, people: pd.DataFrame, subs: list[str],
                      confidence: float = CONFIDENCE) -> list[dict]:
    lc, lh = _levels(cohort[attribute]).to_numpy(), _levels(people[attribute]).to_numpy()
    seen = {"cohort": set(lc[pd.notna(lc)]), "people": set(lh[pd.notna(lh)])}
    levels = sorted(seen["cohort"] | seen["people"])
    if len(levels) < 2:
        shown = "; ".join(f"{side}: {', '.join(sorted(v)) or 'none'}" for side, v in seen.items())
        return [_row(attribute, s, CATEGORICAL, "", G, _Effect(), _Effect(),
                     [f"not estimable: {attribute} takes fewer than 2 values ({shown})"], confidence) for s in subs]
    if len(levels) == 2:
        reference = levels[0]
    else:
        counts = pd.Series(lh if seen["people"] else lc).value_counts()
        reference = min(counts.index[counts == counts.max()])    # most frequent among people; ties: first as text
    mismatch = label_mismatch(attribute, seen["cohort"], seen["people"])
    rows = []
    for level in (v for v in levels if v != reference):
        contrast = f"{level} − {reference}"
        extra = []
        for v in (level, reference):
            for side, values in seen.items():
                if v not in values:
                    clause = mismatch.get((attribute, v), f": the {side} has no {attribute} value")
                    extra.append("not estimable: " + clause.removeprefix(": "))
        extra = list(dict.fromkeys(extra))
        for sub in subs:
            effects = {}
            for side, frame, text in (("cohort", cohort, lc), ("people", people, lh)):
                if not {level, reference} <= seen[side]:
                    effects[side] = _Effect()      # the note above says why
                    continue
                scores = frame[sub].to_numpy(dtype=float)
                x, y = scores[text == level], scores[text == reference]
                effects[side] = _hedges_g(x[~np.isnan(x)], y[~np.isnan(y)], level, reference, sub)
            rows.append(_row(attribute, sub, CATEGORICAL, contrast, G, effects["cohort"], effects["people"], extra,
                             confidence))
    return rows


def _resolve(cohort: pd.DataFrame, people: pd.DataFrame, attributes: Sequence[str] | None,
             subscales: Sequence[str] | None, instrument: Instrument | None) -> tuple[list[str], list[str]]:
    shared = [c for c in cohort.columns if c in people.columns and c != WEIGHT_COLUMN]
    for name, given in (("attribute", attributes), ("subscale", subscales)):
        missing = [c for c in (given or ()) if c not in cohort.columns or c not in people.columns]
        if missing:
            raise ValueError(f"{name}(s) not a column of both frames: {', '.join(map(str, missing))}")
    if subscales is not None:
        subs = list(subscales)
    elif instrument is not None:
        subs = [s.id for s in instrument.rating_subscales if s.id in shared]
    else:
        excluded = set(attributes or ())
        subs = [c for c in shared if c not in excluded and _is_numeric(cohort[c]) and _is_numeric(people[c])]
    if not subs:
        raise ValueError("no subscale column shared by both frames: pass subscales= or instrument=")
    attrs = list(attributes) if attributes is not None else [c for c in shared if c not in subs]
    both = [c for c in attrs if c in subs]
    if both:
        raise ValueError(f"column(s) given both as attribute and as subscale: {', '.join(map(str, both))}")
    return attrs, subs


def relations(cohort_scores: pd.DataFrame, human_scores: pd.DataFrame, attributes: Sequence[str] | None = None, *,
              subscales: Sequence[str] | None = None, instrument: Instrument | None = None,
              confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Each relation of the scores with an attribute or another subscale, among personas beside among people.

    Parameters
    ----------
    cohort_scores, human_scores : pandas.DataFrame
        Score frames (:func:`psyq.score_wide`: one column per subscale id, one row per
        respondent) with attribute columns joined. Missing values are left out relation by
        relation (pairwise).
    attributes : sequence of str, optional
        The attribute columns to relate the scores to. Default: every column both frames share
        that is not a subscale (the survey weight ``survey_weight`` never). A column that is
        numeric in both frames (``age``) is *numeric*; any other (text, bool, numeric on one side
        only) is *categorical*, its values compared as text (stripped, case kept, 1.0 written 1):
        cast a numeric code (0/1) to text to have it treated as groups.
    subscales : sequence of str, optional
        The score columns. Default: the instrument's rating subscales present in both frames
        when `instrument` is given, else every column numeric in both frames that is not
        among `attributes` (so with neither given, a numeric attribute such as age would count
        as a subscale: name `attributes`, `subscales` or `instrument` when one is joined).
    instrument : Instrument, optional
        Gives the default subscales, and notes a part–whole pair of subscales (a total and one
        of its parts, :func:`psyq.analysis.statistics.validity.part_whole`), whose r is high by
        construction.
    confidence : float
        The level of the ``difference`` interval (default .95; the verdict reads it at .90, TOST
        at α = .05). Each side's own interval, ``replicated`` and ``power`` stay at .95.

    Returns
    -------
    pandas.DataFrame
        One row per attribute (per contrast) × subscale, then one per pair of subscales:

        * ``kind`` "categorical": ``measure`` "g", Hedges' g of one level against another
          (pooled SD, small-sample correction J = 1 − 3/(4(n₁ + n₂) − 9)), CI
          g ± t₀.₉₇₅,ₙ₁₊ₙ₂₋₂ · SE with SE² = (n₁ + n₂)/(n₁n₂) + g²/(2(n₁ + n₂)) (Hedges & Olkin,
          1985; as :func:`pingouin.compute_esci`). With two levels, the one later as text
          minus the earlier, on both sides (``contrast`` "male − female"); with more, each
          level minus the reference, the level most frequent among people (ties: the first as
          text). A level found on one side only makes its contrasts not estimable on that side,
          the ``note`` naming the levels of each side (as
          :func:`psyq.analysis.statistics.validity.label_mismatch` does); the other side's g is
          still given. Not estimable: fewer than 2 respondents with a level, no variance within
          both levels.
        * ``kind`` "numeric": ``measure`` "r", Pearson r of the subscale with the attribute, CI by
          Fisher's z (:func:`fisher_ci`). Not estimable: fewer than 3 pairs, a constant side.
        * ``kind`` "subscale": Pearson r of two subscales, each pair once (``subscale`` the one
          listed first, ``attribute`` the other), as
          :func:`psyq.analysis.statistics.validity.subscale_correlations` gives them.

        Columns: ``attribute, subscale, kind, contrast, measure, n_cohort, n_people`` (respondents
        entering the effect: both levels, or pairs), ``effect_cohort, effect_cohort_low,
        effect_cohort_high, effect_people, effect_people_low, effect_people_high`` (95 % CIs),
        ``difference`` = cohort − people with ``difference_low, difference_high``: for g,
        difference ± z₀.₉₇₅ · √(SE_cohort² + SE_people²) (independent samples, large-sample
        variances; Borenstein et al., 2009, ch. 4); for r, Zou's (2007) interval
        (:func:`correlation_difference_ci`), which keeps the asymmetry of r's interval.
        ``same_sign``: the two effects have the same sign (nullable boolean: NA when either is
        not estimable or exactly 0). ``agree``: where the people's CI excludes 0, whether the
        cohort's effect has the people's sign (False also for a cohort effect of exactly 0); NA
        where the people show no direction to reproduce (CI includes 0) or either effect is not
        estimable — so ``agree.mean()`` is the share of the people's established relations
        whose direction the cohort reproduces. ``replicated``: where ``agree`` is defined,
        whether the cohort's own CI excludes 0 on the people's side — the effect is shown among
        the personas, not only its sign, which a cohort without the relation gets right half the
        time. ``power``: the power of the cohort's two-sided 5 % test to find an effect as large as the
        people's, from the cohort's own standard error (g) or size (r, Fisher's z), normal
        approximation: how well a cohort of this size could show the relation at all. ``note``: why a value is missing ("cohort: …",
        "people: …", or the levels of each side), and the part–whole remark. A missing value
        is NaN, never a number.

    Raises
    ------
    ValueError
        A named attribute or subscale is not a column of both frames, a column is named as
        both, or no subscale column is found.

    Notes
    -----
    Checked in ``tests/test_relations.py`` against :func:`pingouin.compute_effsize` and
    :func:`pingouin.compute_esci` (g and its CI), :func:`scipy.stats.pearsonr` and
    :func:`pingouin.corr` (r and its Fisher-z CI), Zou's (2007) published example (the
    difference of two independent r), and two random halves of the 1,973 people of Briganti et
    al. (2018), whose relations must agree in sign wherever both CIs exclude 0 and whose
    difference CIs must cover 0 about 95 % of the time.

    Example
    -------
    See the module docstring.

    References
    ----------
    Bisbee, J., Clinton, J. D., Dorff, C., Kenkel, B., & Larson, J. M. (2024). Synthetic
    replacements for human survey data? The perils of large language models. Political
    Analysis, 32(4), 401–416.
    Hedges, L. V., & Olkin, I. (1985). Statistical methods for meta-analysis. Academic Press.
    Borenstein, M., Hedges, L. V., Higgins, J. P. T., & Rothstein, H. R. (2009). Introduction to
    meta-analysis. Wiley. (Ch. 4, the variance of g.)
    Fisher, R. A. (1921). On the "probable error" of a coefficient of correlation deduced from a
    small sample. Metron, 1, 3–32.
    Zou, G. Y. (2007). Toward using confidence intervals to compare correlations. Psychological
    Methods, 12(4), 399–413.
    """
    attrs, subs = _resolve(cohort_scores, human_scores, attributes, subscales, instrument)
    rows: list[dict] = []
    for attribute in attrs:
        c_attr, h_attr = cohort_scores[attribute], human_scores[attribute]
        if _is_numeric(c_attr) and _is_numeric(h_attr):
            for sub in subs:
                rows.append(_row(attribute, sub, NUMERIC, "", R, _correlation(c_attr, cohort_scores[sub]),
                                 _correlation(h_attr, human_scores[sub]), confidence=confidence))
        else:
            rows.extend(_categorical_rows(attribute, cohort_scores, human_scores, subs, confidence))
    for i, a in enumerate(subs):
        for b in subs[i + 1:]:
            whole = part_whole(instrument, a, b) if instrument is not None else None
            rows.append(_row(b, a, SUBSCALE, "", R, _correlation(cohort_scores[a], cohort_scores[b]),
                             _correlation(human_scores[a], human_scores[b]), [whole] if whole else [], confidence))
    out = pd.DataFrame(rows, columns=RELATION_COLUMNS)
    for flag in ("same_sign", "agree", "replicated"):
        out[flag] = out[flag].astype("boolean")
    return out.astype({"n_cohort": int, "n_people": int})
