"""Change from before to after an evoked situation (EmotionBench design): change scores, paired
tests, and the cohort's change against humans' change.

A multi-stage protocol measures a state (e.g. PANAS) before and after a respondent imagines a
situation. The engine writes tidy scores with a ``stage`` and a ``phase`` ("before"/"after");
this module turns them into one change score per respondent × repeat × situation × subscale
(:func:`change_scores`), tests the change within the cohort (:func:`paired_change`) and compares
it with humans who did the same (:func:`compare_change_with_humans`, humans read by
:func:`psyq.analysis.scoring.human_data.read_human_change_csv`).

Every function is pure: tidy frames in, tidy frames out. A statistic that cannot be estimated
is NaN in its numeric column and the ``note`` column says why; nothing is made up.

Checked in tests/test_change.py against formulas written out by hand and scipy: the paired tests and
d_z with its noncentral-t interval, the Wilcoxon p against exact enumeration, Holm's correction by
hand, Welch's t, g and the Wasserstein distance against their formulas.

Example
-------
>>> scores = pd.DataFrame({
...     "backend_id": "m", "respondent_id": ["a", "a", "b", "b"], "repeat": 0,
...     "situation_id": "anger_01", "emotion": "anger", "stage": [0, 2, 0, 2],
...     "phase": ["before", "after"] * 2, "instrument": "panas", "subscale": "PA",
...     "score": [30.0, 26, 28, 27]})
>>> res = change_scores(scores)
>>> res.changes["change"].tolist(), res.dropped
([-4.0, -1.0], 0)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import optimize, stats

from psyq.analysis.statistics.human_comparison import compare_samples
from psyq.analysis.statistics.intervals import t_quantile
from psyq.analysis.statistics.multiple_testing import holm

KEYS = ["backend_id", "respondent_id", "repeat", "situation_id", "emotion", "instrument", "subscale"]
"""What identifies one change score."""
CHANGE_COLUMNS = [*KEYS, "before", "after", "change", "before_stage", "after_stage"]
DROPPED_COLUMNS = [*KEYS, "reason"]
OVERALL = "overall"
"""The value of the `by` columns in the row that pools every group."""

PAIRED_STATS = ["n", "mean_before", "mean_after", "mean_change", "sd_change", "t", "df", "p", "w",
                "p_wilcoxon", "dz", "dz_low", "dz_high", "p_holm", "p_wilcoxon_holm", "note"]
HUMAN_STATS = ["n_cohort", "n_human", "change_cohort", "change_human", "sd_cohort", "sd_human", "diff",
               "diff_low", "diff_high", "t", "df", "p", "g", "g_low", "g_high", "wasserstein", "p_holm",
               "flag", "note"]


class ChangeScores(NamedTuple):
    """The change scores and how many (respondent × repeat × situation × subscale) units were
    dropped for lacking a before or an after score; `dropped_rows` names them and why."""

    changes: pd.DataFrame
    dropped: int
    dropped_rows: pd.DataFrame


# --------------------------------------------------------------------------------------------
# Change scores


def change_scores(scores: pd.DataFrame) -> ChangeScores:
    """One change score (after − before) per backend × respondent × repeat × situation × subscale.

    Parameters
    ----------
    scores : pandas.DataFrame
        Tidy scores with stages: ``backend_id, respondent_id, repeat, situation_id, emotion,
        stage, phase, instrument, subscale, score``. Only rows whose phase is "before" or
        "after" take part; other rows (a measure with no evoke stage around it) are ignored.

    Returns
    -------
    ChangeScores
        ``changes`` with columns ``backend_id, respondent_id, repeat, situation_id, emotion,
        instrument, subscale, before, after, change, before_stage, after_stage``. When a protocol
        measures several times before (or after) the situation, ``before`` is the **last**
        measure before it and ``after`` the **first** measure after it (the two closest to the
        situation); the stages used are in ``before_stage`` / ``after_stage``.
        ``dropped`` counts the units that have no (non-missing) before or no after score; they
        are left out of ``changes`` and listed in ``dropped_rows`` with the reason, so nothing is
        dropped silently.

    Example
    -------
    >>> s = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "a", "a", "b"], "repeat": 0,
    ...                   "situation_id": "s1", "emotion": "fear", "stage": [0, 2, 4, 0],
    ...                   "phase": ["before", "after", "after", "before"], "instrument": "panas",
    ...                   "subscale": "NA", "score": [12.0, 20, 18, 11]})
    >>> res = change_scores(s)          # a: 20 − 12 (first after); b has no after: dropped
    >>> res.changes[["respondent_id", "before", "after", "change"]].to_dict("records"), res.dropped
    ([{'respondent_id': 'a', 'before': 12.0, 'after': 20.0, 'change': 8.0}], 1)
    """
    missing = [c for c in [*KEYS, "stage", "phase", "score"] if c not in scores.columns]
    if missing:
        raise KeyError("the scores lack the column(s) " + ", ".join(missing))
    rows = scores[scores["phase"].isin(["before", "after"])]
    units = rows[KEYS].drop_duplicates()
    valid = rows[rows["score"].notna()]
    # The measure closest to the situation on each side: last before, first after.
    before = (valid[valid["phase"] == "before"].sort_values("stage").groupby(KEYS, dropna=False).tail(1)
              .rename(columns={"score": "before", "stage": "before_stage"})[[*KEYS, "before", "before_stage"]])
    after = (valid[valid["phase"] == "after"].sort_values("stage").groupby(KEYS, dropna=False).head(1)
             .rename(columns={"score": "after", "stage": "after_stage"})[[*KEYS, "after", "after_stage"]])
    both = units.merge(before, on=KEYS, how="left").merge(after, on=KEYS, how="left")
    lacking = both["before"].isna() | both["after"].isna()
    dropped_rows = both[lacking].copy()
    dropped_rows["reason"] = np.select(
        [dropped_rows["before"].isna() & dropped_rows["after"].isna(), dropped_rows["before"].isna()],
        ["no before and no after score", "no before score"], "no after score")
    changes = both[~lacking].copy()
    changes["change"] = changes["after"] - changes["before"]
    changes = changes[CHANGE_COLUMNS].reset_index(drop=True)
    return ChangeScores(changes, int(lacking.sum()), dropped_rows[DROPPED_COLUMNS].reset_index(drop=True))


# --------------------------------------------------------------------------------------------
# Paired tests within the cohort


def _groups(changes: pd.DataFrame, by: Sequence[str]) -> list[tuple[dict, pd.DataFrame]]:
    """(labels, rows) per backend × instrument × subscale × `by` group, then the same without
    `by` (the `by` columns set to "overall")."""
    base = ["backend_id", "instrument", "subscale"]
    out = []
    for keys, rows in changes.groupby(base + list(by), sort=True, dropna=False):
        out.append((dict(zip(base + list(by), keys)), rows))
    if by:
        for keys, rows in changes.groupby(base, sort=True, dropna=False):
            out.append((dict(zip(base, keys)) | {col: OVERALL for col in by}, rows))
    return out


def per_person(rows: pd.DataFrame, columns: Sequence[str] = ("before", "after", "change")) -> pd.DataFrame:
    """One row per respondent: the mean of `columns` over that respondent's rows (repeats and,
    within a group, situations), so that n counts people, never rows.

    Example
    -------
    >>> per_person(pd.DataFrame({"respondent_id": ["a", "a", "b"], "change": [1.0, 3, 5]}), ["change"])
    ... # doctest: +NORMALIZE_WHITESPACE
      respondent_id  change
    0             a     2.0
    1             b     5.0
    """
    return rows.groupby("respondent_id", sort=True)[list(columns)].mean().reset_index()


def dz_ci(dz: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Confidence interval of Cohen's dz = mean(change) / sd(change) from the noncentral t
    distribution: t = dz·√n has a noncentral t distribution with n − 1 df and noncentrality
    δ = dz_population·√n; the bounds are the δ whose distributions put t at their 97.5th and
    2.5th percentiles (found by root search), divided by √n (Steiger & Fouladi, 1997; Cumming,
    2012). NaN when n < 2 or dz is not finite.

    Example
    -------
    >>> [round(x, 3) for x in dz_ci(0.5, 20)]
    [0.028, 0.96]

    References
    ----------
    Steiger, J. H., & Fouladi, R. T. (1997). Noncentrality interval estimation and the evaluation
    of statistical models. In L. L. Harlow et al. (Eds.), *What if there were no significance
    tests?* (pp. 221–257). Erlbaum.
    """
    if n < 2 or not math.isfinite(dz):
        return math.nan, math.nan
    df, t = n - 1, abs(dz) * math.sqrt(n)
    alpha = 1 - level

    def bound(p: float) -> float:
        # nct.cdf(t; δ) falls as δ rises. The bracket is widened step by step from t: far out
        # in the upper tail scipy's nct.cdf underflows to NaN, so no wide fixed bracket.
        f = lambda delta: stats.nct.cdf(t, df, delta) - p   # noqa: E731
        low, high = t - 1.0, t + 1.0
        while f(low) < 0:
            low -= 1.0
        while f(high) > 0:
            high += 1.0
        return optimize.brentq(f, low, high, xtol=1e-12)

    # Computed for |dz| and mirrored for a negative dz (the distribution of −t is that of t
    # with −δ), which keeps the search where nct.cdf is accurate.
    low, high = bound(1 - alpha / 2) / math.sqrt(n), bound(alpha / 2) / math.sqrt(n)
    return (low, high) if dz >= 0 else (-high, -low)


def _paired_row(people: pd.DataFrame) -> dict:
    """The paired statistics of one group, one row per respondent."""
    d = people["change"].to_numpy(dtype=float)
    n = d.size
    out: dict = dict.fromkeys(PAIRED_STATS, np.nan)
    out.update(n=n, note="")
    notes = []
    if n == 0:
        out["note"] = "no respondent: nothing is estimable"
        return out
    out.update(mean_before=float(people["before"].mean()), mean_after=float(people["after"].mean()),
               mean_change=float(d.mean()))
    if n < 2:
        out["note"] = "one respondent: t, Wilcoxon and dz need at least 2"
        return out
    sd = float(d.std(ddof=1))
    out["sd_change"] = sd
    if sd == 0:
        notes.append("every respondent changed by the same amount (SD of change 0): t and dz are not defined")
    else:
        res = stats.ttest_rel(people["after"].to_numpy(dtype=float), people["before"].to_numpy(dtype=float))
        dz = float(d.mean() / sd)
        low, high = dz_ci(dz, n)
        out.update(t=float(res.statistic), df=float(n - 1), p=float(res.pvalue), dz=dz, dz_low=low, dz_high=high)
    if np.all(d == 0):
        notes.append("all changes are zero: Wilcoxon not defined")
    else:
        with warnings.catch_warnings():
            # scipy warns when it falls back from the exact to the normal distribution
            # (ties or zeros); the method is named in the docstring.
            warnings.simplefilter("ignore")
            res = stats.wilcoxon(d)
        out.update(w=float(res.statistic), p_wilcoxon=float(res.pvalue))
    out["note"] = "; ".join(notes)
    return out


def paired_change(changes: pd.DataFrame, by: Sequence[str] = ("emotion",)) -> pd.DataFrame:
    """Paired tests of after against before per backend × instrument × subscale × `by` group and
    overall.

    Each respondent counts once per group: their changes are first averaged over repeats (and
    over the group's situations), so ``n`` is the number of people, not of rows.

    Parameters
    ----------
    changes : pandas.DataFrame
        The ``changes`` of :func:`change_scores`.
    by : sequence of str
        Grouping columns (e.g. ``["emotion"]`` or ``["emotion", "situation_id"]``); a row with
        every `by` column "overall" pools all groups. ``[]`` gives the overall rows only.

    Returns
    -------
    pandas.DataFrame
        ``backend_id, instrument, subscale, *by, n, mean_before, mean_after, mean_change,
        sd_change, t, df, p, w, p_wilcoxon, dz, dz_low, dz_high, p_holm, p_wilcoxon_holm, note``.
        ``t, df, p``: paired t (:func:`scipy.stats.ttest_rel`, after − before, df = n − 1);
        ``w, p_wilcoxon``: Wilcoxon signed-rank test (:func:`scipy.stats.wilcoxon`, defaults:
        zero changes dropped, exact p for small samples without ties, else normal approximation;
        ``w`` is the smaller of the positive and negative rank sums); ``dz = mean / SD`` of the
        change with its 95 % CI by the noncentral t (:func:`dz_ci`); ``p_holm`` and
        ``p_wilcoxon_holm``: Holm correction over every row of the table (statsmodels
        ``multipletests``). Not estimable (NaN, reason in ``note``): everything but the means when
        n < 2; t and dz when every change is the same; Wilcoxon when every change is zero.

    Example
    -------
    >>> ch = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b", "c"], "repeat": 0,
    ...                    "situation_id": "s1", "emotion": "anger", "instrument": "panas",
    ...                    "subscale": "PA", "before": [30.0, 28, 25], "after": [26.0, 27, 20]})
    >>> ch["change"] = ch["after"] - ch["before"]
    >>> row = paired_change(ch, by=[]).iloc[0]
    >>> int(row["n"]), round(float(row["mean_change"]), 3), round(float(row["t"]), 3), round(float(row["dz"]), 3)
    (3, -3.333, -2.774, -1.601)
    """
    by = list(by)
    rows = []
    for labels, group in _groups(changes, by):
        rows.append(labels | _paired_row(per_person(group)))
    out = pd.DataFrame(rows, columns=["backend_id", "instrument", "subscale", *by, *PAIRED_STATS])
    out["n"] = out["n"].astype(int)
    out["p_holm"] = holm(out["p"])
    out["p_wilcoxon_holm"] = holm(out["p_wilcoxon"])
    return out


# --------------------------------------------------------------------------------------------
# Humans' change


def human_paired_change(human_changes: pd.DataFrame, by: Sequence[str] = ("emotion",)) -> pd.DataFrame:
    """Humans' own before → after: the paired statistics of :func:`paired_change` per subscale ×
    `by` group and pooled ("overall"), from :func:`psyq.analysis.scoring.human_data.read_human_change_csv`.

    Each person counts once per group (their rows averaged first, as for the cohort), so the
    overall paired t of a crowd where each person saw one situation is the t over all of them,
    after − before (the sign EmotionBench's crowd workbook reports).

    Example
    -------
    >>> hu = pd.DataFrame({"respondent_id": ["x", "y", "z"], "emotion": "anger", "situation_id": "",
    ...                    "subscale": "PA", "before": [30.0, 28, 25], "after": [26.0, 27, 20]})
    >>> row = human_paired_change(hu, by=[]).iloc[0]
    >>> row["subscale"], int(row["n"]), round(float(row["mean_after"]), 3), round(float(row["t"]), 3)
    ('PA', 3, 24.333, -2.774)
    """
    by = list(by)
    frame = human_changes.assign(change=human_changes["after"] - human_changes["before"])
    rows = []
    for keys, group in frame.groupby(["subscale", *by], sort=True, dropna=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        rows.append(dict(zip(["subscale", *by], keys)) | _paired_row(per_person(group)))
    if by:
        for subscale, group in frame.groupby("subscale", sort=True):
            rows.append({"subscale": subscale} | {c: OVERALL for c in by} | _paired_row(per_person(group)))
    out = pd.DataFrame(rows, columns=["subscale", *by, *PAIRED_STATS])
    out["n"] = out["n"].astype(int)
    out["p_holm"] = holm(out["p"])
    out["p_wilcoxon_holm"] = holm(out["p_wilcoxon"])
    return out


def _diff_ci(c: np.ndarray, h: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """mean(c) − mean(h) with its CI on Welch–Satterthwaite df: diff ± t·√(s²c/nc + s²h/nh)."""
    vc, vh = c.var(ddof=1) / c.size, h.var(ddof=1) / h.size
    se = math.sqrt(vc + vh)
    diff = float(c.mean() - h.mean())
    if se == 0:
        return diff, math.nan, math.nan
    df = (vc + vh) ** 2 / (vc ** 2 / (c.size - 1) + vh ** 2 / (h.size - 1))
    half = t_quantile(level, df) * se
    return diff, diff - half, diff + half


def change_flag(change_cohort: float, change_human: float, low: float, high: float) -> str:
    """How the cohort's mean change differs from humans' when the CI of the difference
    (cohort − human) excludes zero: "opposite direction" (the two changes have opposite signs),
    "numb" (the cohort's change is closer to zero), "over-reacting" (larger in magnitude in the
    same direction, or any change where humans' mean change is exactly zero); "" when the CI
    includes zero or is missing.

    Example
    -------
    >>> change_flag(-0.5, -3.0, 1.0, 4.0), change_flag(-6.0, -3.0, -4.0, -2.0), change_flag(2.0, -3.0, 3.0, 7.0)
    ('numb', 'over-reacting', 'opposite direction')
    """
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 <= high:
        return ""
    if change_cohort * change_human < 0:
        return "opposite direction"
    return "numb" if abs(change_cohort) < abs(change_human) else "over-reacting"


def _human_row(c: np.ndarray, h: np.ndarray) -> dict:
    out: dict = dict.fromkeys(HUMAN_STATS, np.nan)
    out.update(n_cohort=c.size, n_human=h.size, flag="", note="")
    if c.size:
        out["change_cohort"] = float(c.mean())
    if h.size:
        out["change_human"] = float(h.mean())
    if c.size < 2 or h.size < 2:
        small = [name for name, x in (("cohort", c), ("humans", h)) if x.size < 2]
        out["flag"] = out["note"] = f"not estimable: fewer than 2 respondents ({' and '.join(small)})"
        return out
    with warnings.catch_warnings():
        # compare_samples also runs a Kolmogorov–Smirnov test (not used here) whose exact method
        # falls back with a warning on ties; the statistics taken below are unaffected.
        warnings.filterwarnings("ignore", message="ks_2samp", category=RuntimeWarning)
        res = compare_samples(c, h)
    out.update({k: res[k] for k in ("sd_cohort", "sd_human", "t", "df", "p", "g", "g_low", "g_high", "wasserstein")})
    if res["sd_cohort"] == 0 and res["sd_human"] == 0:
        out["diff"] = out["change_cohort"] - out["change_human"]
        out["flag"] = out["note"] = "not estimable: no variance of change in either group"
        return out
    out["diff"], out["diff_low"], out["diff_high"] = _diff_ci(c, h)
    out["flag"] = change_flag(out["change_cohort"], out["change_human"], out["diff_low"], out["diff_high"])
    return out


def compare_change_with_humans(changes: pd.DataFrame, human_changes: pd.DataFrame,
                               by: Sequence[str] = ("emotion",)) -> pd.DataFrame:
    """The cohort's change against humans' change per backend × instrument × subscale × `by`
    group and overall.

    Both sides count people: each respondent's changes are averaged over repeats and the
    group's situations first. Humans are matched on ``subscale`` and the `by` columns (the
    human file has no instrument; its subscales are taken to be the instrument's). With
    ``situation_id`` in `by`, humans with an empty situation_id match no situation (their group
    then has n_human = 0 and is "not estimable"); they still count in the "overall" row.

    Parameters
    ----------
    changes : pandas.DataFrame
        The ``changes`` of :func:`change_scores`.
    human_changes : pandas.DataFrame
        From :func:`psyq.analysis.scoring.human_data.read_human_change_csv`.
    by : sequence of str
        Grouping columns present in both frames; a row with "overall" pools all groups.

    Returns
    -------
    pandas.DataFrame
        ``backend_id, instrument, subscale, *by, n_cohort, n_human, change_cohort,
        change_human, sd_cohort, sd_human, diff, diff_low, diff_high, t, df, p, g, g_low,
        g_high, wasserstein, p_holm, flag, note``. ``diff`` = cohort − human mean change with
        its 95 % CI on Welch–Satterthwaite df; ``t, df, p``: Welch's t
        (:func:`scipy.stats.ttest_ind`, ``equal_var=False``); ``g``: Hedges' g with its CI;
        ``wasserstein``: Wasserstein-1 distance between the two distributions of change, in
        score points (all three via :func:`psyq.analysis.statistics.human_comparison.compare_samples`); ``p_holm``: Holm
        over every row; ``flag``: :func:`change_flag`, or "not estimable: …" when a group has
        fewer than 2 respondents or neither group's change varies (then the numbers that need a
        variance are NaN).

    Example
    -------
    >>> ch = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b", "c"], "repeat": 0,
    ...                    "situation_id": "s1", "emotion": "anger", "instrument": "panas",
    ...                    "subscale": "PA", "before": 30.0, "after": [30.0, 29, 31]})
    >>> ch["change"] = ch["after"] - ch["before"]
    >>> hu = pd.DataFrame({"respondent_id": ["x", "y", "z"], "emotion": "anger", "situation_id": "",
    ...                    "subscale": "PA", "before": 30.0, "after": [25.0, 26, 24]})
    >>> hu["change"] = hu["after"] - hu["before"]
    >>> compare_change_with_humans(ch, hu, by=[])[["change_cohort", "change_human", "flag"]].to_dict("records")
    [{'change_cohort': 0.0, 'change_human': -5.0, 'flag': 'numb'}]
    """
    by = list(by)
    if lacking := [c for c in ["respondent_id", "subscale", *by] if c not in human_changes.columns]:
        raise KeyError("the human change data lack the column(s) " + ", ".join(lacking))
    if "change" not in human_changes.columns:
        human_changes = human_changes.assign(change=human_changes["after"] - human_changes["before"])
    rows = []
    for labels, group in _groups(changes, by):
        humans = human_changes[human_changes["subscale"] == labels["subscale"]]
        for col in by:
            if labels[col] != OVERALL:
                humans = humans[humans[col].astype(str) == str(labels[col])]
        c = per_person(group, ["change"])["change"].to_numpy(dtype=float)
        h = per_person(humans, ["change"])["change"].to_numpy(dtype=float)
        rows.append(labels | _human_row(c, h))
    out = pd.DataFrame(rows, columns=["backend_id", "instrument", "subscale", *by, *HUMAN_STATS])
    out[["n_cohort", "n_human"]] = out[["n_cohort", "n_human"]].astype(int)
    out["p_holm"] = holm(out["p"])
    return out


# --------------------------------------------------------------- EmotionBench's own comparison

EB_COLUMNS = ["backend_id", "subscale", "level", "emotion", "factor", "n_default", "mean_default", "sd_default",
              "n_situation", "mean_situation", "sd_situation", "difference", "f", "f_df1", "f_df2", "p_f", "test",
              "t", "df", "p", "direction", "note"]
EB_ALPHA = 0.01          # EmotionBench's default significance level (its --significance-level)
EB_EPSILON = 1e-8        # added to both SDs by EmotionBench, so that constant answers still give a t


def _eb_row(situation: np.ndarray, default: np.ndarray, alpha: float) -> dict:
    """One comparison of situation sums with default sums, the way EmotionBench's analysis does it."""
    n1, n2 = situation.size, default.size
    out = dict.fromkeys(EB_COLUMNS[5:], np.nan) | {"n_default": n2, "n_situation": n1, "test": "", "direction": "",
                                                   "note": ""}
    if n1 == 0 or n2 == 0:
        out["note"] = f"no {'situation' if n1 == 0 else 'default'} scores"
        return out
    m1, m2 = float(situation.mean()), float(default.mean())
    out.update(mean_situation=m1, mean_default=m2, difference=m1 - m2)
    if n1 < 2 or n2 < 2:
        out["note"] = "fewer than 2 scores on a side: no SD, no test"
        return out
    s1, s2 = float(situation.std(ddof=1)), float(default.std(ddof=1))
    out.update(sd_situation=s1, sd_default=s2)
    s1, s2 = s1 + EB_EPSILON, s2 + EB_EPSILON
    # F test of equal variances, larger over smaller, two-sided p; it chooses Student's or Welch's t.
    (big, n_big), (small, n_small) = sorted([(s1, n1), (s2, n2)], key=lambda x: -x[0])
    f = big ** 2 / small ** 2
    p_f = float(min(1.0, 2 * stats.f.sf(f, n_big - 1, n_small - 1)))
    equal = p_f > alpha
    res = stats.ttest_ind_from_stats(m1, s1, n1, m2, s2, n2, equal_var=equal)
    v1, v2 = s1 ** 2 / n1, s2 ** 2 / n2
    df = n1 + n2 - 2 if equal else (v1 + v2) ** 2 / (v1 ** 2 / (n1 - 1) + v2 ** 2 / (n2 - 1))
    t, p = float(res.statistic), float(res.pvalue)
    out.update(f=f, f_df1=n_big - 1, f_df2=n_small - 1, p_f=p_f, test="Student" if equal else "Welch", t=t,
               df=float(df), p=p, direction="−" if not p < alpha else ("↑" if t > 0 else "↓"))
    if s1 - EB_EPSILON == 0 or s2 - EB_EPSILON == 0:
        out["note"] = "an SD is 0: t rests on EmotionBench's added 1e-8"
    return out


def emotionbench_comparison(defaults: pd.DataFrame, scores: pd.DataFrame, alpha: float = EB_ALPHA) -> pd.DataFrame:
    """EmotionBench's own comparison of a model's PANAS after the situations with its Default.

    psyq's change analysis pairs each situation test with the General test of the same number
    (:data:`psyq.engine.importers.emotionbench.PAIRING_NOTE`). EmotionBench's analysis (Huang et
    al., 2024; its ``utils.py``, GPL-3.0, not copied here) does otherwise, and this function does
    what it describes, so that its published figures can be reproduced beside psyq's:

    - Default = the PA and NA sums of *every* General test column (mean, SD with n − 1, n);
    - a group (a factor of an emotion, an emotion, all situations) = the sums of every situation
      test column in it, each column one observation;
    - difference = mean of the group − mean of the Default;
    - an F test of equal variances (larger variance over smaller, two-sided p) at `alpha`
      chooses the two-sample t: Student's (pooled) when p_F > alpha, else Welch's; both SDs get
      1e-8 added first, as in EmotionBench, so that constant answers still give a t;
    - ``direction``: ↑ or ↓ when the t test's p < `alpha` (EmotionBench's default .01), else −.

    Parameters
    ----------
    defaults : DataFrame
        ``backend_id, column, PA, NA``: one row per General test column (the imported run's
        ``default_scores``); an empty sum (None/NaN) is left out.
    scores : DataFrame
        The imported run's stage scores (``phase`` "after" rows are the situation tests;
        ``situation_id`` ``<emotion>_f<factor>_s<n>``).

    Returns
    -------
    DataFrame
        :data:`EB_COLUMNS`: per backend × subscale, one row per factor (``level`` "factor"),
        per emotion ("emotion", ``factor`` "overall") and for all situations ("overall").

    Example
    -------
    >>> defaults = pd.DataFrame({"backend_id": "m", "column": ["g0", "g1", "g2"], "PA": [40.0, 42, 44], "NA": [10.0, 10, 12]})
    >>> after = pd.DataFrame({"backend_id": "m", "situation_id": ["anger_f1_s1"] * 2, "emotion": "anger", "phase": "after",
    ...                       "subscale": ["PA", "PA"], "score": [30.0, 34]})
    >>> table = emotionbench_comparison(defaults, after)
    >>> row = table[(table["level"] == "overall") & (table["subscale"] == "PA")].iloc[0]
    >>> int(row["n_default"]), float(row["difference"]), row["test"], round(float(row["t"]), 3), row["direction"]
    (3, -10.0, 'Student', -4.743, '−')

    (Pooled variance (2·2² + 1·2.83²)/3 = 16/3; t = −10 / √(16/3 · (1/3 + 1/2)) = −4.743, df 3,
    p = .018: not below .01, so no arrow.)

    References
    ----------
    Huang, J., Lam, M. H., Li, E. J., Ren, S., Wang, W., Jiao, W., Tu, Z., & Lyu, M. R. (2024).
    Apathetic or empathetic? Evaluating LLMs' emotional alignments with humans. NeurIPS 37.
    https://github.com/CUHK-ARISE/EmotionBench (the comparison in its analysis code).
    """
    rows = []
    after = scores[scores["phase"] == "after"].copy()
    after["factor"] = after["situation_id"].astype(str).str.extract(r"_f(\d+)_s\d+$")[0].fillna("?")
    for backend in pd.unique(pd.concat([defaults["backend_id"], after["backend_id"]])):
        own = after[after["backend_id"] == backend]
        for subscale in ("PA", "NA"):
            default = pd.to_numeric(defaults.loc[defaults["backend_id"] == backend, subscale], errors="coerce")
            default = default.dropna().to_numpy(dtype=float)
            sums = own[own["subscale"] == subscale]
            blocks = []
            for emotion, by_emotion in sums.groupby("emotion", sort=False):
                for factor, by_factor in by_emotion.groupby("factor", sort=False):
                    blocks.append(("factor", emotion, f"f{factor}", by_factor))
                blocks.append(("emotion", emotion, OVERALL, by_emotion))
            blocks.append(("overall", OVERALL, OVERALL, sums))
            for level, emotion, factor, block in blocks:
                values = pd.to_numeric(block["score"], errors="coerce").dropna().to_numpy(dtype=float)
                rows.append({"backend_id": backend, "subscale": subscale, "level": level, "emotion": emotion,
                             "factor": factor, **_eb_row(values, default, alpha)})
    return pd.DataFrame(rows, columns=EB_COLUMNS)
