"""Persona scores against published human norms: matched norm groups, Welch tests, Hedges' g,
and equivalence tests (the report's sentence on each row:
:func:`psyq.analysis.report.readings.norm_readings`).

The human side of every comparison is a published summary (mean, SD, n per group); the persona
side is the scores of the respondents matched to that group. Everything is computed from summary
statistics, so the same functions serve for re-checking published tables.

Every norm sample of an instrument is compared (each row names its `norm_sample`, and carries
its `norm_verified` status); :func:`group_matching` says which respondents fell in which group.
Human data scored with :func:`psyq.engine.trials.scoring.score` work as well (see :func:`as_norm_scores`).

Example
-------
>>> from psyq.analysis.scoring.scores import score_answers                          # doctest: +SKIP
>>> scores = score_answers(table, instruments)                         # doctest: +SKIP
>>> compare_with_norms(scores, instruments)[["norm_sample", "subscale", "norm_group", "g"]]  # doctest: +SKIP
>>> compare_with_norms(score(iri, humans), {"iri": iri})                # doctest: +SKIP
>>> compare_with_norms(score_wide(iri, humans).assign(gender=humans["gender"]), {"iri": iri})  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.meta_analysis import effectsize_smd
from statsmodels.stats.multitest import multipletests

from psyq.engine.design.instrument import TRUSTED, Instrument, NormSample, Range, Subscale
from psyq.engine.files.codebook import WEIGHT_COLUMN

from psyq.analysis.scoring.scores import RESPONDENT_KEYS

POOLED = "pooled"
"""`norm_group` label of the row for respondents that match no group of the norm sample."""

SCORE_COLUMNS = ["instrument", "subscale", "score", "n_answered", "n_items", "prorated"]
"""Columns of a scores table that are not persona attributes (with RESPONDENT_KEYS)."""

HUMAN = "human"
"""`backend_id` and `model` given to scores without them (human data scored with
:func:`psyq.engine.trials.scoring.score`)."""

FLAGS = {"secondary-source": "norms read only in a secondary source",
         "unverified": "norms unverified"}
"""What the report says next to every number from a norm sample, by its `verified` status
(nothing for ``source-table`` and ``raw-data``)."""

COLUMNS = ["backend_id", "instrument", "subscale", "norm_sample", "norm_group", "norm_derived",
           "norm_verified", "n", "mean", "sd", "norm_n", "norm_mean", "norm_sd", "diff", "t", "df", "p", "p_adj",
           "g", "g_low", "g_high", "tost_p", "equivalent", "sd_ratio"]

CORRECTIONS = {"holm": "Holm", "fdr_bh": "BH"}
"""Multiplicity corrections accepted by :func:`compare_with_norms` and their label in a sentence."""


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
    """What a norm on `sample.metric` is multiplied by to be on the subscale's own metric."""
    k = len(instrument.subscale_items(subscale.id))
    if sample.metric == subscale.score:
        return 1.0
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
    >>> iri = load_instrument("iri")                     # doctest: +SKIP
    >>> norm_stats(iri, iri.norms[0], "EC", "women")                      # doctest: +SKIP
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


def _as_text(value: Any) -> str | None:
    """A value as the case-folded text compared by :func:`match_group` (None when missing)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).casefold()
    if isinstance(value, Real):
        number = float(value)
        if math.isnan(number):
            return None
        return str(int(number)) if number.is_integer() else repr(number)
    return str(value).strip().casefold()


def _as_number(value: Any) -> float | None:
    """A value as a number for a range condition (None when missing or not a number)."""
    if value is None or value is pd.NA or isinstance(value, (bool, np.bool_)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def condition_holds(condition: Any, value: Any) -> bool:
    """Whether an attribute value meets one `where` condition: equal to a value (as text,
    ignoring case), equal to any value of a list, or a number within a range (ends included).

    Example
    -------
    >>> condition_holds(["female", "woman"], "Woman"), condition_holds(Range(min=18, max=25), 25.0)
    (True, True)
    """
    if isinstance(condition, Range):
        number = _as_number(value)
        return number is not None and (condition.min is None or number >= condition.min) and (
            condition.max is None or number <= condition.max)
    got = _as_text(value)
    if got is None:
        return False
    wanted = condition if isinstance(condition, list) else [condition]
    return any(got == _as_text(w) for w in wanted)


def describe_condition(key: str, condition: Any) -> str:
    """A `where` item in words, e.g. ``gender = female``, ``age 18–25``.

    Example
    -------
    >>> describe_condition("age", Range(min=18, max=25)), describe_condition("gender", ["f", "w"])
    ('age 18–25', 'gender = f or w')
    """
    if isinstance(condition, Range):
        if condition.min is not None and condition.max is not None:
            return f"{key} {condition.min:g}–{condition.max:g}"
        return f"{key} ≥ {condition.min:g}" if condition.min is not None else f"{key} ≤ {condition.max:g}"
    values = condition if isinstance(condition, list) else [condition]
    return f"{key} = " + " or ".join(str(v) for v in values)


def match_group(sample: NormSample, attributes: Mapping[str, Any]) -> str | None:
    """The norm group whose every `where` item the persona's attributes meet.

    A `where` item is a value, a list of values (any of them) or a numeric range
    ``{min, max}`` (ends included; see :func:`condition_holds`). Values are compared as text,
    ignoring case and surrounding spaces (``"Female"`` matches ``female``; ``30.0`` matches
    ``30``). A missing attribute matches nothing. Groups with an empty `where` (the whole sample)
    are not matched here: they are the pooled group. When several groups match, the most
    specific one (most `where` items) wins, then the first listed.

    Parameters
    ----------
    sample : NormSample
    attributes : mapping
        The persona's attributes (e.g. ``{"gender": "female", "age": 34}``).

    Returns
    -------
    str or None
        The group id, or None when no group matches (e.g. the baseline respondent, or a
        non-binary persona against norms published by sex).

    Example
    -------
    >>> match_group(iri.norms[0], {"gender": "Female", "age": 34})      # doctest: +SKIP
    'women'
    """
    best, best_size = None, 0
    for group in sample.groups:
        if len(group.where) > best_size and all(
                condition_holds(want, attributes.get(key)) for key, want in group.where.items()):
            best, best_size = group.id, len(group.where)
    return best


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
    z = stats.norm.ppf(0.5 + confidence / 2)
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


# --------------------------------------------------------------------------------------------
# Persona scores against the norms


SampleChoice = Iterable[str] | Mapping[str, Iterable[str]] | None
"""Which norm samples to compare: None (all of every instrument), sample ids (each instrument's
samples with these ids), or instrument id -> sample ids (other instruments keep all)."""


def _attribute_columns(scores: pd.DataFrame, subscales: Iterable[str] = ()) -> list[str]:
    """Persona attributes of a scores table: not the keys, the scores, nor survey weights (human data).

    `subscales`: the score columns of a wide table (with their ``_n`` and ``_prorated`` columns
    when it has them, as :func:`psyq.analysis.scoring.score_table.wide_scores` writes them).
    """
    wide = {f"{s}{suffix}" for s in subscales for suffix in ("", "_n", "_prorated")}
    return [c for c in scores.columns if c not in RESPONDENT_KEYS and c not in SCORE_COLUMNS
            and c != WEIGHT_COLUMN and c not in wide]


def as_norm_scores(scores: pd.DataFrame, instruments: Mapping[str, Instrument]) -> pd.DataFrame:
    """`scores` with the key columns the norm functions need, filled in when absent.

    The table of :func:`psyq.engine.trials.scoring.score` (human data) has no ``instrument``,
    ``backend_id``, ``model`` or ``repeat``: the instrument is the only one given (ValueError if
    several were given), ``backend_id`` and ``model`` are ``"human"``, ``repeat`` is 0. Tables
    that have these columns are returned unchanged.

    Example
    -------
    >>> as_norm_scores(score(iri, humans), {"iri": iri})          # doctest: +SKIP
    """
    missing = [c for c in ("instrument", "backend_id", "model", "repeat") if c not in scores.columns]
    if not missing:
        return scores
    out = scores.copy()
    if "instrument" in missing:
        if len(instruments) != 1:
            raise ValueError("the scores have no `instrument` column, so give exactly one instrument "
                             f"(got {len(instruments)}: {', '.join(instruments) or 'none'})")
        out.insert(0, "instrument", next(iter(instruments)))
    defaults = {"backend_id": HUMAN, "model": HUMAN, "repeat": 0}
    for column in ("repeat", "model", "backend_id"):
        if column in missing:
            out.insert(0, column, defaults[column])
    return out


def _wanted(instrument: Instrument, choice: SampleChoice) -> list[NormSample]:
    if choice is None or (isinstance(choice, Mapping) and instrument.id not in choice):
        return list(instrument.norms)      # an instrument the mapping does not name keeps all
    ids = set(choice[instrument.id] if isinstance(choice, Mapping) else choice)
    return [s for s in instrument.norms if s.id in ids]


def chosen_samples(instruments: Mapping[str, Instrument], choice: SampleChoice = None
                   ) -> dict[str, list[NormSample]]:
    """The norm samples compared for each instrument, in the instrument's order.

    `choice` is None (every sample), a list of sample ids (each instrument's samples with those
    ids) or a mapping of instrument id to sample ids (instruments it does not name keep every
    sample). A named sample that no instrument has is a
    KeyError, so that a typing slip never silently compares nothing.

    Example
    -------
    >>> [s.id for s in chosen_samples({"iri": iri}, ["davis1980"])["iri"]]   # doctest: +SKIP
    ['davis1980']
    """
    if choice is not None:
        if isinstance(choice, Mapping):
            choice = {k: list(v) for k, v in choice.items()}
            unknown = [f"{i} {sid}" for i, ids in choice.items() for sid in ids
                       if i not in instruments or sid not in {s.id for s in instruments[i].norms}]
        else:
            choice = list(choice)
            have = {s.id for inst in instruments.values() for s in inst.norms}
            unknown = [sid for sid in choice if sid not in have]
        if unknown:
            raise KeyError(f"no such norm sample: {', '.join(unknown)}")
    return {inst_id: _wanted(inst, choice) for inst_id, inst in instruments.items()}


def _samples(scores: pd.DataFrame | None, instruments: Mapping[str, Instrument],
             choice: SampleChoice) -> dict[str, list[NormSample]]:
    """The norm samples used for each instrument in `scores` ([]: no norms, skipped); None for
    scores without an ``instrument`` column (a wide table of the one instrument given)."""
    # unique() first: millions of rows, few instruments
    named = set(instruments) if scores is None else set(scores["instrument"].unique())
    missing = sorted(named - set(instruments))
    if missing:
        raise KeyError(f"scores name instruments that were not given: {', '.join(missing)}")
    chosen = chosen_samples({i: instruments[i] for i in sorted(named)}, choice)
    if choice is not None and chosen and not any(chosen.values()):
        raise KeyError(f"no instrument in the scores has the norm samples asked for ({choice})")
    return chosen


def _choice(samples: SampleChoice, sample_id: str | None) -> SampleChoice:
    if sample_id is not None:
        if samples is not None:
            raise ValueError("give `samples` or `sample_id`, not both")
        return [sample_id]
    return samples


def verification_flag(verified: str) -> str:
    """The words a report puts next to numbers from a norm sample with this `verified` status
    ("" for ``source-table`` and ``raw-data``).

    Example
    -------
    >>> verification_flag("unverified"), verification_flag("raw-data")
    ('norms unverified', '')
    """
    return "" if verified in TRUSTED else FLAGS.get(verified, f"norms {verified}")


def group_matching(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                   samples: SampleChoice = None) -> pd.DataFrame:
    """How the respondents fell into the groups of every norm sample compared.

    One row per instrument × norm sample × group, plus a row ``norm_group = "pooled"`` for the
    respondents that matched no group (they are compared with the pooled norm). Respondents are
    counted once (distinct ``respondent_id``), from their attributes as in :func:`match_group`.

    Returns
    -------
    DataFrame
        ``instrument, norm_sample, norm_verified, norm_group, where, matches_on, n_respondents,
        of_respondents, cohort_attributes``: `where` is the group's condition in words,
        `matches_on` the attributes any group of the sample uses, `cohort_attributes` the
        attribute columns the scores have.

    Example
    -------
    >>> group_matching(score(iri, humans), {"iri": iri})[["norm_sample", "norm_group", "n_respondents"]]  # doctest: +SKIP
    """
    scores = as_norm_scores(scores, instruments)
    attributes = _attribute_columns(scores)
    rows: list[dict[str, Any]] = []
    for inst_id, sample_list in _samples(scores, instruments, samples).items():
        people = scores.loc[scores["instrument"] == inst_id].drop_duplicates("respondent_id")
        records = people[attributes].to_dict("records") if attributes else [{}] * len(people)
        for sample in sample_list:
            matched = pd.Series([match_group(sample, r) for r in records], dtype=object)
            keys = sorted({k for g in sample.groups for k in g.where})
            base = {"instrument": inst_id, "norm_sample": sample.id, "norm_verified": sample.verified,
                    "matches_on": ", ".join(keys), "of_respondents": len(people),
                    "cohort_attributes": ", ".join(attributes)}
            for group in sample.groups:
                if group.where:
                    rows.append(base | {"norm_group": group.id, "n_respondents": int((matched == group.id).sum()),
                                        "where": "; ".join(describe_condition(k, c) for k, c in group.where.items())})
            whole = whole_sample_group(sample)
            rows.append(base | {"norm_group": whole or POOLED, "n_respondents": int(matched.isna().sum()),
                                "where": "matched no group" + (" (the whole sample)" if whole else "")})
    columns = ["instrument", "norm_sample", "norm_verified", "norm_group", "where", "matches_on",
               "n_respondents", "of_respondents", "cohort_attributes"]
    return pd.DataFrame(rows, columns=columns).astype({"n_respondents": "int64", "of_respondents": "int64"})


MISMATCH_COLUMNS = ["instrument", "norm_sample", "attribute", "norm_values", "data_values"]


def value_mismatches(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                     samples: SampleChoice = None) -> pd.DataFrame:
    """Norm samples and attributes whose text values the data never match: the attribute is there,
    but written otherwise than the groups' `where` (``F`` for ``female``), so every respondent falls
    out of the groups. Ranges (numbers) are not checked. One row per sample and attribute, with the
    values the groups name and (at most ten of) those the data hold, as lists.

    Example
    -------
    >>> value_mismatches(human_scores_with_F_and_M, {"iri": iri})[["attribute", "data_values"]]  # doctest: +SKIP
      attribute data_values
    0    gender      [F, M]
    """
    scores = as_norm_scores(scores, instruments)
    attributes = set(_attribute_columns(scores))
    rows = []
    for inst_id, sample_list in _samples(scores, instruments, samples).items():
        people = scores.loc[scores["instrument"] == inst_id].drop_duplicates("respondent_id")
        for sample in sample_list:
            wanted: dict[str, list[Any]] = {}
            for group in sample.groups:
                for key, condition in group.where.items():
                    if not isinstance(condition, Range):
                        wanted.setdefault(key, []).extend(condition if isinstance(condition, list) else [condition])
            for key, values in wanted.items():
                if key not in attributes:
                    continue
                present = sorted({str(v).strip() for v in people[key] if _as_text(v) is not None})
                if present and not any(condition_holds(values, v) for v in present):
                    rows.append({"instrument": inst_id, "norm_sample": sample.id, "attribute": key,
                                 "norm_values": list(values), "data_values": present[:10]})
    return pd.DataFrame(rows, columns=MISMATCH_COLUMNS)


def whole_sample_group(sample: NormSample) -> str | None:
    """The id of the sample's whole-sample group as the file writes it (the first group with an
    empty `where`), or None when the source publishes none (psyq then pools the groups).

    Example
    -------
    >>> whole_sample_group(iri.norms[0])      # doctest: +SKIP
    'all'
    """
    return next((g.id for g in sample.groups if not g.where), None)


def unmatched_respondents(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                          samples: SampleChoice = None) -> dict[tuple[str, str], list[str]]:
    """(instrument, norm sample) -> ids of the respondents that match no group of the sample."""
    scores = as_norm_scores(scores, instruments)
    attributes = _attribute_columns(scores)
    out = {}
    for inst_id, sample_list in _samples(scores, instruments, samples).items():
        people = scores.loc[scores["instrument"] == inst_id].drop_duplicates("respondent_id")
        records = people[attributes].to_dict("records") if attributes else [{}] * len(people)
        for sample in sample_list:
            out[(inst_id, sample.id)] = [str(rid) for rid, r in zip(people["respondent_id"], records)
                                         if match_group(sample, r) is None]
    return out


def _assign(instrument: Instrument, sample: NormSample, subscale_id: str, group_id: str | None,
            cache: dict) -> tuple[str, NormStats] | None:
    """The row label and norm for a respondent matched to `group_id` (None: unmatched).

    A matched group without a norm for this subscale counts as no match (pooled group).
    """
    key = (instrument.id, sample.id, subscale_id, group_id)
    if key not in cache:
        norm = norm_stats(instrument, sample, subscale_id, group_id) if group_id else None
        if norm is not None:
            cache[key] = (group_id, norm)
        else:
            pooled = norm_stats(instrument, sample, subscale_id, None)
            # A whole-sample group the file writes (empty `where`) keeps its id; only a norm psyq
            # pooled from the groups itself is labelled "pooled".
            cache[key] = None if pooled is None else (pooled.group_id, pooled)
    return cache[key]


def _attribute_combinations(block: pd.DataFrame, attributes: list[str]) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Each row's code of its distinct combination of attribute values (numbered by first
    appearance, missing values a value of their own) and each combination's values (its first row).

    One hash pass per column on integer codes instead of a group-by over the string columns.
    """
    if not attributes:
        return np.zeros(len(block), dtype=np.int16), [{}]
    codes = None
    for name in attributes:
        column = block[name]
        # Object columns may mix types that hash alike (True and 1) but read differently: key on text.
        column_codes, uniques = pd.factorize(column.astype(str) if column.dtype == object else column,
                                             use_na_sentinel=False)
        codes = column_codes if codes is None else pd.factorize(codes * len(uniques) + column_codes)[0]
    n_combinations = int(codes.max()) + 1 if codes.size else 0
    if n_combinations <= 64:    # a handful: one scan each beats hashing a million codes
        first = np.array([np.argmax(codes == k) for k in range(n_combinations)], dtype=np.intp)
    else:
        first = pd.Series(codes).drop_duplicates().index.to_numpy()   # combination k first appears at first[k]
    return _small(codes), block[attributes].iloc[first].to_dict("records")


def _small(codes: np.ndarray) -> np.ndarray:
    """`codes` (0 … k − 1, or −1) in 16 bits when k allows: a quarter of the memory per million rows."""
    return codes.astype(np.int16) if codes.size and int(codes.max()) < np.iinfo(np.int16).max else codes


def _blocks(backend_ids: pd.Series, instrument_ids: pd.Series) -> list[tuple[tuple[Any, Any], np.ndarray | slice]]:
    """(backend_id, instrument) -> its rows, in the order of ``groupby(..., sort=True)`` (rows with
    a missing key left out), found with integer codes: a group-by over millions of strings is slow.
    `backend_ids` and `instrument_ids` are the rows' two keys."""
    backends, insts = backend_ids.unique(), instrument_ids.unique()
    if len(backends) == 1 and len(insts) == 1 and not pd.isna(backends[0]) and not pd.isna(insts[0]):
        return [((backends[0], insts[0]), slice(None))]   # the usual case: no codes, no copy of the rows
    backend_codes, backends = pd.factorize(backend_ids)
    inst_codes, insts = pd.factorize(instrument_ids)
    keyed = (backend_codes >= 0) & (inst_codes >= 0)
    pair = backend_codes * len(insts) + inst_codes
    codes = pd.unique(pair[keyed])
    blocks = [((backends[code // len(insts)], insts[code % len(insts)]), np.flatnonzero(keyed & (pair == code)))
              for code in codes]
    return sorted(blocks, key=lambda block: block[0])


def _respondent_means(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per respondent × instrument × subscale: the score averaged over repeats.

    Rows whose score is missing stay in when there is one repeat (its score is then already the
    mean; the caller leaves missing scores out by position): filtering a million rows of string
    columns costs more than the whole comparison. With repeats they are left out of the mean.
    """
    attributes = _attribute_columns(scores)
    keys = ["backend_id", "model", "respondent_id", "instrument", "subscale"]
    if "repeat" in scores.columns and (scores["repeat"].nunique() <= 1 or pd.Series(
            scores["repeat"].to_numpy()[scores["score"].notna().to_numpy()]).nunique() <= 1):
        return scores[keys + ["score"] + attributes]   # one row each already; selecting columns copies nothing
    answered = scores.dropna(subset=["score"])
    aggregations = {"score": ("score", "mean")} | {a: (a, "first") for a in attributes}
    return answered.groupby(keys, sort=False, dropna=False).agg(**aggregations).reset_index()


Columns = Iterator[tuple[str, np.ndarray, np.ndarray]]
"""Each subscale scored (in the instrument's order), its answered scores (averaged over repeats)
and each score's attribute-combination code; one subscale at a time, so that a million
respondents' selections are not all held at once."""
Blocks = Iterator[tuple[tuple[Any, str], Columns]]
"""(backend_id, instrument id) and its :data:`Columns`: what :func:`_block_rows` compares."""


def _long_columns(scores: pd.DataFrame, instruments: Mapping[str, Instrument], choice: SampleChoice
                  ) -> tuple[dict[str, list[NormSample]], list[dict[str, Any]], Blocks]:
    """The long table (one row per respondent × subscale) as the norm samples to compare, the
    distinct attribute combinations, and each block's scores by subscale (found with integer codes)."""
    scores = as_norm_scores(scores, instruments)
    chosen = _samples(scores, instruments, choice)
    people = _respondent_means(scores)
    combination_codes, combinations = _attribute_combinations(people, _attribute_columns(scores))
    sub_codes, sub_ids = pd.factorize(people["subscale"])
    sub_codes = _small(sub_codes)
    sub_index = {sub_id: k for k, sub_id in enumerate(sub_ids)}
    values = people["score"].to_numpy(dtype=float)

    def columns(inst_id: str, rows_at: np.ndarray | slice) -> Columns:
        block_subs, block_values, block_codes = sub_codes[rows_at], values[rows_at], combination_codes[rows_at]
        answered = ~np.isnan(block_values)   # missing scores (one repeat) are left out
        for subscale in instruments[inst_id].subscales:
            if subscale.id in sub_index:
                keep = (block_subs == sub_index[subscale.id]) & answered
                yield subscale.id, block_values[keep], block_codes[keep]
    blocks = _blocks(people["backend_id"], people["instrument"])
    return chosen, combinations, ((key, columns(key[1], rows_at)) for key, rows_at in blocks)


def _wide_columns(scores: pd.DataFrame, instruments: Mapping[str, Instrument], choice: SampleChoice
                  ) -> tuple[dict[str, list[NormSample]], list[dict[str, Any]], Blocks]:
    """The same for a wide table of one instrument (one row per respondent, a column per subscale
    id, as :func:`psyq.engine.trials.scoring.score_wide` returns it, with attribute columns): no
    string keys to factorize, each subscale's scores are a column."""
    if len(instruments) != 1:
        raise ValueError("scores without a `subscale` column are a wide table (a column per subscale) of one "
                         f"instrument: give exactly one (got {len(instruments)}: {', '.join(instruments) or 'none'})")
    (inst_id, instrument), = instruments.items()
    subscales = [s.id for s in instrument.subscales if s.id in scores.columns]
    if not subscales:
        raise KeyError(f"the scores have neither a `subscale` column (a long table) nor a column named after a "
                       f"subscale of '{inst_id}' (a wide table)")
    chosen = _samples(None, instruments, choice)
    attributes = _attribute_columns(scores, subscales)
    people = _wide_means(scores, subscales, attributes)
    combination_codes, combinations = _attribute_combinations(people, attributes)
    if "backend_id" in people.columns:
        found = _blocks(people["backend_id"], pd.Series(inst_id, index=people.index, dtype=object))
    else:
        found = [((HUMAN, inst_id), slice(None))]

    def columns(rows_at: np.ndarray | slice) -> Columns:
        codes = combination_codes[rows_at]
        for sub in subscales:
            values = people[sub].to_numpy(dtype=float)[rows_at]
            answered = ~np.isnan(values)
            yield sub, values[answered], codes[answered]
    return chosen, combinations, ((key, columns(rows_at)) for key, rows_at in found)


def _wide_means(scores: pd.DataFrame, subscales: list[str], attributes: list[str]) -> pd.DataFrame:
    """A wide table with one row per respondent: each subscale's score averaged over repeats
    (missing scores left out), the respondent being ``backend_id``, ``model`` and ``respondent_id``
    (or the index) as far as the table has them. Without repeats, the table itself."""
    if "repeat" not in scores.columns or scores["repeat"].nunique() <= 1:
        return scores
    keys = [scores[k] for k in ("backend_id", "model") if k in scores.columns]
    keys.append(scores["respondent_id"] if "respondent_id" in scores.columns
                else scores.index.to_series().rename(scores.index.name or "respondent_id"))
    aggregations = {s: "mean" for s in subscales} | {a: "first" for a in attributes}
    return scores.groupby(keys, sort=False, dropna=False).agg(aggregations).reset_index()


def _block_rows(key: tuple[Any, str], instrument: Instrument, samples: list[NormSample], columns: Columns,
                combinations: list[dict[str, Any]], bound: float, alpha: float, cache: dict) -> list[dict[str, Any]]:
    """The comparison rows of one backend × instrument, sample by sample and subscale by subscale:
    each subscale's answered scores split by the norm group their attribute combination is matched
    to (the pooled norm when none, or when the group has no norm for the subscale), each part
    compared with its norm."""
    backend, inst_id = key
    # Integer codes for matched groups: comparing millions of strings is slow.
    group_ids = [[match_group(sample, rec) for rec in combinations] for sample in samples]
    orders = [{g.id: i for i, g in enumerate(sample.groups)} | {POOLED: len(sample.groups)} for sample in samples]
    rows: list[tuple[int, int, dict[str, Any]]] = []    # (sample, subscale, row): sorted at the end
    for position, (subscale_id, sub_values, sub_groups) in enumerate(columns):
        present = np.flatnonzero(np.bincount(sub_groups, minlength=len(combinations)))
        for s, sample in enumerate(samples):
            # Each combination present -> its row label (None: no norm); rows keep their order.
            labels: list[str] = []
            norms: dict[str, NormStats] = {}
            label_of = np.full(len(combinations), -1, dtype=np.intp)
            for code in present:
                hit = _assign(instrument, sample, subscale_id, group_ids[s][code], cache)
                if hit is not None:
                    if hit[0] not in norms:
                        norms[hit[0]] = hit[1]
                        labels.append(hit[0])
                    label_of[code] = labels.index(hit[0])
            row_labels = label_of[sub_groups]
            for label in sorted(labels, key=orders[s].__getitem__):
                rows.append((s, position, {
                    "backend_id": backend, "instrument": inst_id, "subscale": subscale_id,
                    "norm_sample": sample.id, "norm_group": label, "norm_derived": norms[label].derived,
                    "norm_verified": sample.verified}
                    | _compare(sub_values[row_labels == labels.index(label)], norms[label], bound, alpha)))
    rows.sort(key=lambda row: row[:2])     # stable: sample by sample, subscales in order, groups in order
    return [row for _, _, row in rows]


def _compare(values: np.ndarray, norm: NormStats, bound: float, alpha: float) -> dict[str, Any]:
    n = int(values.size)
    mean = float(values.mean()) if n else math.nan
    sd = float(values.std(ddof=1)) if n >= 2 else math.nan
    row: dict[str, Any] = {
        "n": n, "mean": mean, "sd": sd, "norm_n": norm.n, "norm_mean": norm.mean,
        "norm_sd": norm.sd, "diff": mean - norm.mean, "sd_ratio": sd / norm.sd,
        "t": math.nan, "df": math.nan, "p": math.nan, "g": math.nan, "g_low": math.nan,
        "g_high": math.nan, "tost_p": math.nan, "equivalent": pd.NA}
    if n >= 2:
        summary = (mean, sd, n, norm.mean, norm.sd, norm.n)
        row["t"], row["df"], row["p"] = welch_from_summary(*summary)
        row["g"], row["g_low"], row["g_high"] = hedges_g(*summary)
        row["tost_p"], row["equivalent"] = tost_from_summary(*summary, bound=bound, alpha=alpha)
    return row


def compare_with_norms(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                       sample_id: str | None = None, bound: float = 0.3, correction: str = "holm",
                       alpha: float = 0.05, samples: SampleChoice = None) -> pd.DataFrame:
    """Compare persona (or human) scores with the published norms, sample by sample, group by group.

    Every norm sample of every instrument is compared (unless `samples` restricts them), each in
    its own rows named by `norm_sample`; `norm_verified` carries the sample's `verified` status
    (the report's sentence on a row from a sample not read in its source table nor recomputed
    from raw data ends with a flag, "— norms unverified": :func:`verification_flag`).

    Each respondent's score is first averaged over repeats (missing scores are left out, never
    imputed), so a respondent counts once however many repeats were run. Respondents are matched
    to a norm group with :func:`match_group` on their persona attributes; those matching no
    group (the baseline respondent, personas whose attributes the norms do not cover, or a
    matched group without a norm for this subscale) are compared with the pooled group
    (:func:`norm_stats` with ``group_id=None``) in a separate row whose `norm_group` is
    ``"pooled"``.

    For each backend × instrument × subscale × norm group with at least one respondent:
    Welch's t test (:func:`welch_from_summary`), Hedges' g with its 95 % CI
    (:func:`hedges_g`; positive g = personas above the norm), the TOST equivalence test within
    ±`bound` norm SDs (:func:`tost_from_summary`, at `alpha`, not adjusted for multiplicity), and
    ``sd_ratio`` = persona SD / norm SD (well below 1 flags personas that are too alike). `p_adj`
    adjusts the Welch p values of the whole table together with
    :func:`statsmodels.stats.multitest.multipletests` (``"holm"`` or ``"fdr_bh"``): the rows of
    all norm samples form one family, because comparing the same respondents with several
    samples is several tests of one question, and a family per sample would let the number of
    samples inflate the error rate. Groups with fewer than two respondents get NaN statistics.

    Parameters
    ----------
    scores : DataFrame
        The long table of :func:`psyq.analysis.scoring.scores.score_answers`, or the table of
        :func:`psyq.engine.trials.scoring.score` for human data with the attribute columns added (see
        :func:`as_norm_scores` for the columns filled in). Or, for one instrument, a wide table
        (no ``subscale`` column): the frame of :func:`psyq.engine.trials.scoring.score_wide`, one
        row per respondent and a column per subscale id, with the attribute columns added (the
        same numbers; the fast way for a million respondents: no string key columns). Its
        ``backend_id`` (``"human"`` when absent), ``model``, ``respondent_id`` (else the index)
        and ``repeat`` columns are keys as in the long table; ``<subscale>_n`` and
        ``<subscale>_prorated`` columns are ignored.
    instruments : mapping of instrument id to Instrument
        Every instrument named in `scores` (exactly one for a wide table); instruments without
        norms are skipped.
    sample_id : str, optional
        Compare only the norm sample with this id (the same as ``samples=[sample_id]``).
    samples : list of sample ids, or mapping of instrument id to sample ids, optional
        Compare only these samples (default: all). KeyError for an id no instrument has.
    bound : float
        Equivalence margin in SD units of the norm.
    correction : {"holm", "fdr_bh"}
        Multiplicity correction over all rows.
    alpha : float
        Level of the equivalence tests and of the multiplicity correction.

    Returns
    -------
    DataFrame
        Columns ``backend_id, instrument, subscale, norm_sample, norm_group, norm_derived, n,
        mean, sd, norm_n, norm_mean, norm_sd, diff, t, df, p, p_adj, g, g_low, g_high, tost_p,
        equivalent, sd_ratio``; norms are on each subscale's own scoring metric.

    Example
    -------
    >>> table = compare_with_norms(scores, {"iri": iri}, correction="fdr_bh")   # doctest: +SKIP
    >>> table.loc[table["subscale"] == "EC", ["norm_group", "n", "g", "p_adj"]]  # doctest: +SKIP

    Human answers in a wide table (items and a ``gender`` column), scored wide:

    >>> from psyq.engine.design.instrument import load_instrument
    >>> from psyq.engine.trials.scoring import score_wide
    >>> iri = load_instrument("iri")
    >>> items = [item.id for item in iri.rating_items]
    >>> answers = pd.DataFrame([[k % 5] * 28 for k in range(6)], columns=items)
    >>> wide = score_wide(iri, answers).assign(gender=["female", "male", "female", "male", "F", "other"])
    >>> table = compare_with_norms(wide, {"iri": iri}, samples=["davis1980"])
    >>> table.loc[table["subscale"] == "PT", ["norm_group", "n", "mean"]]
      norm_group  n  mean
    0        men  2  14.0
    1      women  3  14.0
    2     pooled  1   8.0

    References
    ----------
    Welch (1947) and Satterthwaite (1946) for the test, Borenstein et al. (2009, ch. 4) for g,
    Schuirmann (1987) and Lakens (2017) for TOST (see the functions above).
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scandinavian
    Journal of Statistics*, 6(2), 65–70.
    Benjamini, Y., & Hochberg, Y. (1995). Controlling the false discovery rate. *Journal of the
    Royal Statistical Society B*, 57(1), 289–300.
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, not {correction!r}")
    columns_of = _long_columns if "subscale" in scores.columns else _wide_columns
    chosen, combinations, blocks = columns_of(scores, instruments, _choice(samples, sample_id))
    rows: list[dict[str, Any]] = []
    cache: dict = {}
    for key, columns in blocks:
        rows += _block_rows(key, instruments[key[1]], chosen[key[1]], columns, combinations, bound, alpha, cache)
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "p_adj"])
    p = table["p"].to_numpy(dtype=float)
    tested = np.isfinite(p)
    p_adj = np.full(p.shape, np.nan)
    if tested.any():
        p_adj[tested] = multipletests(p[tested], alpha=alpha, method=correction)[1]
    table.insert(COLUMNS.index("p_adj"), "p_adj", p_adj)
    table["equivalent"] = table["equivalent"].astype("boolean")
    table = table.astype({"n": "int64", "norm_n": "int64", "norm_derived": "bool"})
    return table[COLUMNS]


def respondent_z(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                 sample_id: str | None = None, samples: SampleChoice = None) -> pd.DataFrame:
    """Each score as a z score and normal percentile against the respondent's norm group.

    The group is the one :func:`match_group` finds for the respondent's attributes, else the
    pooled group (``norm_group = "pooled"``), exactly as in :func:`compare_with_norms`; rows are
    not averaged over repeats. ``z = (score - norm mean) / norm SD`` and ``percentile =
    100 Φ(z)``, which assumes normally distributed norm scores. With several norm samples each
    score gets one row per sample (`norm_sample`, `norm_verified` say which); instruments
    without norms get one row with missing values.

    Returns
    -------
    DataFrame
        `scores` (with the key columns of :func:`as_norm_scores`) and the columns
        ``norm_sample``, ``norm_verified``, ``norm_group``, ``z`` and ``percentile`` added.

    Example
    -------
    >>> respondent_z(scores, {"iri": iri})[["respondent_id", "subscale", "norm_sample", "z"]]  # doctest: +SKIP

    References
    ----------
    The norm mean and SD are treated as population values. For small norm samples, Crawford, J.
    R., & Howell, D. C. (1998). Comparing an individual's test score against norms derived from
    small samples. *The Clinical Neuropsychologist*, 12(4), 482–486, give a t-based alternative
    that this function does not apply.
    """
    scores = as_norm_scores(scores, instruments)
    chosen = _samples(scores, instruments, _choice(samples, sample_id))
    attributes = _attribute_columns(scores)
    cache: dict = {}
    rows: list[int] = []
    names: list[Any] = []
    status: list[Any] = []
    labels: list[Any] = []
    means: list[float] = []
    sds: list[float] = []
    records = scores[["instrument", "subscale"] + attributes].to_dict("records")
    for i, rec in enumerate(records):
        instrument = instruments[rec["instrument"]]
        for sample in chosen[rec["instrument"]] or [None]:
            hit = None
            if sample is not None:
                group_id = match_group(sample, {a: rec[a] for a in attributes})
                hit = _assign(instrument, sample, rec["subscale"], group_id, cache)
            rows.append(i)
            names.append(pd.NA if sample is None else sample.id)
            status.append(pd.NA if sample is None else sample.verified)
            labels.append(pd.NA if hit is None else hit[0])
            means.append(math.nan if hit is None else hit[1].mean)
            sds.append(math.nan if hit is None else hit[1].sd)
    out = scores.iloc[rows].reset_index(drop=True)
    out["norm_sample"] = pd.array(names, dtype="string")
    out["norm_verified"] = pd.array(status, dtype="string")
    out["norm_group"] = pd.array(labels, dtype="string")
    out["z"] = (out["score"].to_numpy(dtype=float) - np.asarray(means)) / np.asarray(sds)
    out["percentile"] = stats.norm.cdf(out["z"]) * 100
    return out
