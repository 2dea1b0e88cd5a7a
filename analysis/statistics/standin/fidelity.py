"""Fidelity diagnostics: the known failure modes of LLM respondents, made visible.

Each function reads the tidy answers table of :func:`psyq.engine.results.export.export_table` (or, for
:func:`sd_ratio`, a norm-comparison table) and returns one row per ``backend_id × instrument``
(× subscale × norm group for :func:`sd_ratio`), with stable column names and an empty frame with
the same columns when the diagnostic does not apply.

One concern: each function is one known failure mode of LLM respondents, counted in the units below
with the same few helpers, and the report reads them together through :func:`fidelity_summary`;
split by diagnostic, every part would import the units and helpers back from the others.

Units, used throughout:

* an *answer* is one row of the table; it *counts* when ``status == 'answered'`` and ``value`` is
  present (every other status leaves the value missing);
* a *set* is one respondent's answers to one instrument in one repeat
  (``backend_id, respondent_id, repeat, instrument``);
* a *respondent* is ``backend_id × respondent_id``: the same persona simulated by two backends
  is two respondents, and the repeats of a respondent are pooled (averaged) before any
  respondent-level statistic, so that repeats never pose as independent people.

Confidence intervals are 95 %. Shares of answers or of sets (straight-lining, response styles)
get Wilson intervals that treat answers (sets) as independent; answers are nested in
respondents, so those intervals are too narrow when respondents differ in style. Respondent-level
statistics (acquiescence, option-order effect) and the cluster-robust item-order slope do not
have that problem.

Checked in tests/test_fidelity.py on answer tables built by hand: every expected number computed in
the test with the textbook formula (scipy for the F interval of the SD ratio and the t and Wilson
intervals), the item-order slope and its cluster-robust SE by hand.

Example
-------
`run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml, 4 personas, one refusal:

>>> from psyq import export_table
>>> from psyq.engine.results.run import open_run
>>> table = export_table(run_dir)
>>> report = fidelity_summary(table, open_run(run_dir).instruments)
>>> report["missingness"][["instrument", "n_answers", "answered_rate", "refusal_rate"]]
  instrument  n_answers  answered_rate  refusal_rate
0       mini         16         0.9375        0.0625
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from psyq.engine.design.instrument import Instrument

CONFIDENCE = 0.95
ALPHA = 1.0 - CONFIDENCE
MIN_STRAIGHTLINE_ITEMS = 5
# Every status an answer can have (psyq.engine.trials.parsing.Status, the logprob reader's no_option_tokens, and
# failed trials): an unknown one is an error rather than a silently uncounted answer.
STATUSES = ("answered", "refusal", "out_of_range", "unparseable", "empty", "no_option_tokens", "too_long",
            "unreadable_response", "parse_error", "token_budget_exhausted", "failed")
GROUP = ["backend_id", "instrument"]
READ = ["backend_id", "instrument", "respondent_id", "repeat", "item_id", "position", "option_order", "status",
        "disclaimer", "value", "keyed_value", "reasks", "distribution", "option_mass"]
"""The columns of the answers table the diagnostics read (:func:`fidelity_summary` passes only these)."""
RESPONDENT = ["backend_id", "respondent_id"]
SET = ["backend_id", "respondent_id", "repeat", "instrument"]

SD_RATIO_COLUMNS = ["backend_id", "instrument", "subscale", "norm_sample", "norm_group", "n", "sd", "norm_n",
                    "norm_sd", "sd_ratio", "ci_low", "ci_high", "collapsed"]
STRAIGHTLINING_COLUMNS = GROUP + ["n_sets", "n_excluded", "n_straight", "share", "ci_low", "ci_high"]
ACQUIESCENCE_COLUMNS = GROUP + ["n_respondents", "n_forward_items", "n_reversed_items", "midpoint",
                                "mean_forward", "mean_reversed", "acquiescence", "ci_low", "ci_high",
                                "balanced", "balanced_ci_low", "balanced_ci_high"]
RESPONSE_STYLE_COLUMNS = GROUP + ["n_answers", "n_extreme", "extreme", "extreme_ci_low", "extreme_ci_high",
                                  "n_midpoint", "midpoint", "midpoint_ci_low", "midpoint_ci_high"]
MISSINGNESS_COLUMNS = (GROUP + ["n_answers"]
                       + [f"{s}_{stat}" for s in STATUSES for stat in ("n", "rate")]
                       + ["disclaimer_n", "disclaimer_rate", "mean_reasks"])
OPTION_ORDER_COLUMNS = GROUP + ["answer", "n_as_written", "n_reversed", "mean_as_written", "mean_reversed",
                                "difference", "ci_low", "ci_high", "p"]
ITEM_ORDER_COLUMNS = GROUP + ["n_answers", "n_respondents", "n_positions", "slope", "se", "ci_low", "ci_high",
                              "p"]
ENTROPY_COLUMNS = GROUP + ["n_answers", "n_options", "entropy_bits", "normalised_entropy", "option_mass"]


# ---------------------------------------------------------------------------------------------- helpers

def _answered(table: pd.DataFrame) -> pd.DataFrame:
    """Rows whose answer counts: status 'answered' and a value."""
    return table[(table["status"] == "answered") & table["value"].notna()]


def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame({c: [] for c in columns})


def _wilson(count: int, n: int) -> tuple[float, float]:
    """Wilson score interval (Wilson 1927) via statsmodels; NaN when n is 0."""
    if n == 0:
        return math.nan, math.nan
    low, high = proportion_confint(count, n, alpha=ALPHA, method="wilson")
    return float(low), float(high)


def _t_interval(x: np.ndarray) -> tuple[float, float]:
    """t-based CI of a mean; NaN with fewer than two observations."""
    x = x[~np.isnan(x)]
    if len(x) < 2:
        return math.nan, math.nan
    low, high = DescrStatsW(x).tconfint_mean(alpha=ALPHA)
    return float(low), float(high)


def _instrument(instruments: dict[str, Instrument], inst_id: str) -> Instrument:
    try:
        return instruments[inst_id]
    except KeyError:
        raise KeyError(f"instrument '{inst_id}' is in the table but not in `instruments` "
                       f"({', '.join(sorted(instruments))})") from None


def _midpoint(instrument: Instrument) -> float:
    return (instrument.scale_min + instrument.scale_max) / 2


# ---------------------------------------------------------------------------------------------- diagnostics

def sd_ratio(comparison: pd.DataFrame) -> pd.DataFrame:
    """Ratio of the simulated SD to the human norm SD, with an F-distribution 95 % CI.

    LLM samples often show far less person-to-person variance than humans. The CI is the
    classical one for a ratio of two normal variances, ``F = sd² / norm_sd²`` on
    ``(n − 1, norm_n − 1)`` degrees of freedom: ``[F / F_{0.975}, F / F_{0.025}]``, then the
    square root of both ends. It assumes normal scores and independent respondents (it is
    sensitive to non-normality, as every F test of variances is). A row is flagged
    ``collapsed`` when even the upper end of the CI is below 0.5, i.e. the simulated spread is
    credibly less than half the human one.

    Parameters
    ----------
    comparison : DataFrame
        One row per backend × instrument × subscale × norm group with columns ``backend_id,
        instrument, subscale, norm_group, sd, norm_sd`` and the two sample sizes the F
        distribution needs: ``n`` (simulated respondents) and ``norm_n`` (the norm group's n).
        The table of :func:`psyq.analysis.statistics.norms.compare_with_norms` has them all; its ``norm_sample``
        is carried through when present.

    Returns
    -------
    DataFrame
        ``backend_id, instrument, subscale, norm_sample, norm_group, n, sd, norm_n, norm_sd,
        sd_ratio, ci_low, ci_high, collapsed`` (``norm_sample`` None when the input has none); CI
        NaN (and ``collapsed`` False) when a sample has n < 2.

    Example
    -------
    >>> cmp = pd.DataFrame({"backend_id": ["b"], "instrument": ["iri"], "subscale": ["PT"],
    ...                     "norm_group": ["all"], "n": [30], "sd": [1.0], "norm_n": [500], "norm_sd": [4.0]})
    >>> sd_ratio(cmp)[["sd_ratio", "collapsed"]].values.tolist()
    [[0.25, True]]

    References
    ----------
    Snedecor, G. W., & Cochran, W. G. (1989). *Statistical Methods* (8th ed.), ch. 6 (F test of
    two variances and its confidence interval). Bisbee, J., Clinton, J. D., Dorff, C., Kenkel, B.,
    & Larson, J. M. (2024). Synthetic replacements for human survey data? The perils of large
    language models. *Political Analysis*, 32(4), 401–416 (variance collapse of LLM samples).
    """
    required = ["backend_id", "instrument", "subscale", "norm_group", "n", "sd", "norm_n", "norm_sd"]
    missing = [c for c in required if c not in comparison.columns]
    if missing:
        raise ValueError(f"the comparison table lacks {', '.join(missing)} (the F interval needs both n's)")
    out = comparison[required].copy().reset_index(drop=True)
    out["norm_sample"] = (comparison["norm_sample"].to_numpy() if "norm_sample" in comparison.columns
                          else None)
    n = out["n"].to_numpy(dtype=float)
    norm_n = out["norm_n"].to_numpy(dtype=float)
    f_obs = (out["sd"].to_numpy(dtype=float) / out["norm_sd"].to_numpy(dtype=float)) ** 2
    ok = (n >= 2) & (norm_n >= 2)
    df1, df2 = np.where(ok, n - 1, np.nan), np.where(ok, norm_n - 1, np.nan)
    out["sd_ratio"] = np.sqrt(f_obs)
    out["ci_low"] = np.sqrt(f_obs / stats.f.ppf(1 - ALPHA / 2, df1, df2))
    out["ci_high"] = np.sqrt(f_obs / stats.f.ppf(ALPHA / 2, df1, df2))
    out["collapsed"] = (out["ci_high"] < 0.5).fillna(False).astype(bool)
    return out[SD_RATIO_COLUMNS]


def straightlining(table: pd.DataFrame) -> pd.DataFrame:
    """Share of sets answered with one and the same raw value throughout (straight-lining).

    A set (respondent × repeat × instrument) is straight-lined when all its counted answers have
    the same raw value; only sets with at least 5 counted answers are judged (fewer identical
    answers are too likely by chance), the others are counted in ``n_excluded``. Raw values are
    used, so a set that agrees equally with items of both keyed directions counts: that is the
    inconsistent pattern the indicator is for.

    Returns
    -------
    DataFrame
        ``backend_id, instrument, n_sets, n_excluded, n_straight, share, ci_low, ci_high``:
        ``share = n_straight / n_sets`` with a Wilson 95 % CI (NaN when no set was judged).

    Example
    -------
    >>> table = pd.DataFrame({"backend_id": "b", "instrument": "bes", "respondent_id": ["r1"] * 5 + ["r2"] * 5,
    ...                       "repeat": 0, "status": "answered", "value": [3, 3, 3, 3, 3, 1, 2, 3, 4, 5]})
    >>> straightlining(table).round(3)
      backend_id instrument  n_sets  n_excluded  n_straight  share  ci_low  ci_high
    0          b        bes       2           0           1    0.5   0.095    0.905

    References
    ----------
    Herzog, A. R., & Bachman, J. G. (1981). Effects of questionnaire length on response quality.
    *Public Opinion Quarterly*, 45(4), 549–559. Kim, Y., Dykema, J., Stevenson, J., Black, P., &
    Moberg, D. P. (2019). Straightlining: Overview of measurement, comparison of indicators, and
    effects in mail–web mixed-mode surveys. *Social Science Computer Review*, 37(2), 214–233.
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
    *JASA*, 22(158), 209–212.
    """
    counted = _answered(table)
    per_set = counted.groupby(SET)["value"].agg(n="size", distinct="nunique")
    all_sets = table[SET].drop_duplicates().set_index(SET).index
    per_set = per_set.reindex(all_sets, fill_value=0).reset_index()
    rows = []
    for (backend, inst), sets in per_set.groupby(GROUP, sort=True):
        judged = sets[sets["n"] >= MIN_STRAIGHTLINE_ITEMS]
        n_sets, n_straight = len(judged), int((judged["distinct"] == 1).sum())
        low, high = _wilson(n_straight, n_sets)
        rows.append({"backend_id": backend, "instrument": inst, "n_sets": n_sets,
                     "n_excluded": len(sets) - n_sets, "n_straight": n_straight,
                     "share": n_straight / n_sets if n_sets else math.nan, "ci_low": low, "ci_high": high})
    return _frame(rows, STRAIGHTLINING_COLUMNS)


def acquiescence(table: pd.DataFrame, instruments: dict[str, Instrument]) -> pd.DataFrame:
    """Acquiescence: agreeing regardless of content, on instruments keyed in both directions.

    Per respondent (repeats pooled), the mean raw answer over all counted answers minus the scale
    midpoint: the net acquiescence response style (NARS) of Baumgartner & Steenkamp (2001), which
    with graded agreement coding (ARS − DARS) equals the mean raw answer minus the midpoint, in
    scale points. ``acquiescence`` is its mean over respondents with a t-based 95 % CI.

    The index is content-free only when the items are balanced between the two keyed directions
    (Paulhus 1991); on an unbalanced instrument (IRI: 19 forward, 9 reversed) the respondent's
    trait level leaks into it. ``balanced`` therefore weighs the two directions equally: the mean
    over respondents of ``(mean forward + mean reversed) / 2 − midpoint``, again with a t CI. An
    acquiescent respondent has ``mean_forward`` and ``mean_reversed`` both above the midpoint,
    although consistent answers put them on opposite sides.

    Returns
    -------
    DataFrame
        ``backend_id, instrument, n_respondents, n_forward_items, n_reversed_items, midpoint,
        mean_forward, mean_reversed, acquiescence, ci_low, ci_high, balanced, balanced_ci_low,
        balanced_ci_high``. Means of forward / reversed items are means over respondents of each
        respondent's mean raw answer on those items. Instruments with a single keyed direction
        are left out.

    Example
    -------
    `run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml (items a and c reversed, scale 1–7).

    >>> from psyq import export_table, open_run
    >>> table, instruments = export_table(run_dir), open_run(run_dir).instruments
    >>> columns = ["n_respondents", "midpoint", "mean_forward", "mean_reversed", "acquiescence", "balanced"]
    >>> acquiescence(table, instruments)[columns].round(3)
       n_respondents  midpoint  mean_forward  mean_reversed  acquiescence  balanced
    0              4       4.0         2.875          2.375        -1.396    -1.375

    References
    ----------
    Baumgartner, H., & Steenkamp, J.-B. E. M. (2001). Response styles in marketing research: A
    cross-national investigation. *Journal of Marketing Research*, 38(2), 143–156 (NARS).
    Paulhus, D. L. (1991). Measurement and control of response bias. In J. P. Robinson, P. R.
    Shaver, & L. S. Wrightsman (Eds.), *Measures of personality and social psychological
    attitudes* (pp. 17–59). Academic Press (acquiescence on balanced keys).
    """
    rows = []
    counted = _answered(table)
    for (backend, inst_id), answers in counted.groupby(GROUP, sort=True):
        instrument = _instrument(instruments, inst_id)
        reversed_ids = {i.id for i in instrument.rating_items if i.reverse}
        n_rev = len(reversed_ids)
        n_fwd = len(instrument.items) - n_rev
        if n_rev == 0 or n_fwd == 0:
            continue
        mid = _midpoint(instrument)
        is_rev = answers["item_id"].isin(reversed_ids)
        per = pd.DataFrame({
            "all": answers.groupby("respondent_id")["value"].mean(),
            "forward": answers[~is_rev].groupby("respondent_id")["value"].mean(),
            "reversed": answers[is_rev].groupby("respondent_id")["value"].mean(),
        })
        index = (per["all"] - mid).to_numpy(dtype=float)
        balanced = ((per["forward"] + per["reversed"]) / 2 - mid).to_numpy(dtype=float)
        low, high = _t_interval(index)
        b_low, b_high = _t_interval(balanced)
        rows.append({"backend_id": backend, "instrument": inst_id, "n_respondents": len(per),
                     "n_forward_items": n_fwd, "n_reversed_items": n_rev, "midpoint": mid,
                     "mean_forward": per["forward"].mean(), "mean_reversed": per["reversed"].mean(),
                     "acquiescence": float(np.mean(index)), "ci_low": low, "ci_high": high,
                     "balanced": float(np.nanmean(balanced)) if np.any(~np.isnan(balanced)) else math.nan,
                     "balanced_ci_low": b_low, "balanced_ci_high": b_high})
    return _frame(rows, ACQUIESCENCE_COLUMNS)


def response_styles(table: pd.DataFrame, instruments: dict[str, Instrument]) -> pd.DataFrame:
    """Extreme and midpoint response styles: shares of counted answers at the end points / midpoint.

    ``extreme`` is the share of answers at either end point of the scale (ERS), ``midpoint`` the
    share at the middle option (MRS); on a scale with an even number of options there is no
    middle option and the midpoint columns are NaN. Each share has a Wilson 95 % CI over answers
    (answers treated as independent; see the module note).

    Returns
    -------
    DataFrame
        ``backend_id, instrument, n_answers, n_extreme, extreme, extreme_ci_low, extreme_ci_high,
        n_midpoint, midpoint, midpoint_ci_low, midpoint_ci_high``.

    Example
    -------
    `run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml (scale 1–7, midpoint 4).

    >>> from psyq import export_table, open_run
    >>> table, instruments = export_table(run_dir), open_run(run_dir).instruments
    >>> response_styles(table, instruments)[["instrument", "n_answers", "extreme", "midpoint"]].round(3)
      instrument  n_answers  extreme  midpoint
    0       mini         15    0.067       0.2

    References
    ----------
    Weijters, B., Geuens, M., & Schillewaert, N. (2010). The stability of individual response
    styles. *Psychological Methods*, 15(1), 96–110 (ERS and MRS as proportions of responses).
    Wilson (1927), see :func:`straightlining`.
    """
    rows = []
    for (backend, inst_id), answers in _answered(table).groupby(GROUP, sort=True):
        instrument = _instrument(instruments, inst_id)
        values = answers["value"].to_numpy(dtype=float)
        n = len(values)
        n_ext = int(np.isin(values, [instrument.scale_min, instrument.scale_max]).sum())
        row = {"backend_id": backend, "instrument": inst_id, "n_answers": n, "n_extreme": n_ext,
               "extreme": n_ext / n}
        row["extreme_ci_low"], row["extreme_ci_high"] = _wilson(n_ext, n)
        if len(instrument.scale) % 2 == 1:
            n_mid = int((values == _midpoint(instrument)).sum())
            low, high = _wilson(n_mid, n)
            row.update(n_midpoint=float(n_mid), midpoint=n_mid / n, midpoint_ci_low=low, midpoint_ci_high=high)
        else:
            row.update(n_midpoint=math.nan, midpoint=math.nan, midpoint_ci_low=math.nan,
                       midpoint_ci_high=math.nan)
        rows.append(row)
    return _frame(rows, RESPONSE_STYLE_COLUMNS)


def missingness(table: pd.DataFrame) -> pd.DataFrame:
    """What became of the answers: count and rate of every answer status, disclaimers, re-asks.

    For each status (``answered, refusal, out_of_range, unparseable, empty, no_option_tokens,
    too_long, unreadable_response, parse_error, token_budget_exhausted, failed``) ``<status>_n`` and ``<status>_rate`` (share of all answers): ``refusal_rate`` is
    the refusal rate, ``failed_rate`` the share lost to backend failures. ``disclaimer_rate`` is
    the share of *answered* answers that came with refusal or AI-disclaimer language (a value was
    given anyway). ``mean_reasks`` is the mean number of re-asks per answer (a trial's re-asks
    count once for each item the trial asked; the export carries no trial id).

    Returns
    -------
    DataFrame
        ``backend_id, instrument, n_answers``, then ``<status>_n, <status>_rate`` for the eleven
        statuses in the order above, then ``disclaimer_n, disclaimer_rate, mean_reasks``.

    Raises
    ------
    ValueError
        If the table holds a status not in the list (it would otherwise go uncounted).

    Example
    -------
    `run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml; one of its 16 answers is a refusal.

    >>> from psyq import export_table
    >>> missingness(export_table(run_dir))[["instrument", "answered_rate", "refusal_rate"]]
      instrument  answered_rate  refusal_rate
    0       mini         0.9375        0.0625

    References
    ----------
    Statuses and disclaimer detection: :mod:`psyq.engine.trials.parsing` (psyq's answer parser).
    """
    unknown = sorted(set(table["status"].dropna().unique()) - set(STATUSES))
    if unknown:
        raise ValueError(f"unknown answer status(es): {', '.join(map(str, unknown))}")
    rows = []
    for (backend, inst_id), answers in table.groupby(GROUP, sort=True):
        n = len(answers)
        counts = answers["status"].value_counts()
        row: dict = {"backend_id": backend, "instrument": inst_id, "n_answers": n}
        for status in STATUSES:
            row[f"{status}_n"] = int(counts.get(status, 0))
            row[f"{status}_rate"] = row[f"{status}_n"] / n
        answered = answers["status"] == "answered"
        n_disc = int((answers["disclaimer"].astype(bool) & answered).sum())
        row["disclaimer_n"] = n_disc
        row["disclaimer_rate"] = n_disc / int(answered.sum()) if answered.any() else math.nan
        row["mean_reasks"] = float(answers["reasks"].mean())
        rows.append(row)
    return _frame(rows, MISSINGNESS_COLUMNS)


def option_order_effect(table: pd.DataFrame, instruments: dict[str, Instrument]) -> pd.DataFrame:
    """Difference in mean answer between option orders (as written − reversed), per instrument.

    Only backend × instrument cells where both orders occur are reported. Each respondent's mean
    answer is taken within each order (repeats pooled); the two groups of respondent means are
    compared with Welch's t (unequal variances). Two rows per cell:

    * ``answer = 'keyed'``: mean keyed answer. A true trait does not depend on the order in
      which the options were listed, so a difference means the order moved the measured trait.
    * ``answer = 'raw'``: mean raw value. ``as_written`` lists the scale from its first option
      (lowest value) to its last, ``reversed`` from the last. A negative difference means answers
      drift toward whichever option was shown first (primacy); a positive one toward the last
      (recency).

    With psyq's counterbalancing, order alternates between respondents, so the two groups are
    different respondents and Welch's two-sample interval is the right one.

    Returns
    -------
    DataFrame
        ``backend_id, instrument, answer, n_as_written, n_reversed`` (respondents),
        ``mean_as_written, mean_reversed, difference, ci_low, ci_high, p``; CI and p NaN when a
        group has fewer than two respondents.

    Example
    -------
    Four respondents answer item b of the toy instrument (forward-keyed, so keyed = raw), in turn as
    written (1 first) and reversed (7 first); the lower answers under ``as_written`` are primacy:

    >>> from psyq import load_instrument
    >>> table = pd.DataFrame({"backend_id": "b", "instrument": "mini", "respondent_id": ["r1", "r2", "r3", "r4"],
    ...                       "option_order": ["as_written", "reversed"] * 2, "item_id": "b",
    ...                       "status": "answered", "value": [2, 5, 3, 6]}).assign(keyed_value=lambda t: t["value"])
    >>> effect = option_order_effect(table, {"mini": load_instrument("tests/data/mini_1to7.yaml")})
    >>> effect[["answer", "n_as_written", "n_reversed", "mean_as_written", "mean_reversed", "difference"]]
      answer  n_as_written  n_reversed  mean_as_written  mean_reversed  difference
    0  keyed             2           2              2.5            5.5        -3.0
    1    raw             2           2              2.5            5.5        -3.0

    References
    ----------
    Krosnick, J. A., & Alwin, D. F. (1987). An evaluation of a cognitive theory of response-order
    effects in survey measurement. *Public Opinion Quarterly*, 51(2), 201–219. Welch, B. L.
    (1947). The generalization of "Student's" problem when several different population variances
    are involved. *Biometrika*, 34(1–2), 28–35.
    """
    rows = []
    for (backend, inst_id), answers in _answered(table).groupby(GROUP, sort=True):
        _instrument(instruments, inst_id)
        if not {"as_written", "reversed"} <= set(answers["option_order"].unique()):
            continue
        for answer, column in (("keyed", "keyed_value"), ("raw", "value")):
            means = answers.groupby(["option_order", "respondent_id"])[column].mean()
            a = means.loc["as_written"].dropna().to_numpy(dtype=float)
            b = means.loc["reversed"].dropna().to_numpy(dtype=float)
            row = {"backend_id": backend, "instrument": inst_id, "answer": answer, "n_as_written": len(a),
                   "n_reversed": len(b), "mean_as_written": a.mean(), "mean_reversed": b.mean(),
                   "difference": a.mean() - b.mean(), "ci_low": math.nan, "ci_high": math.nan, "p": math.nan}
            if len(a) >= 2 and len(b) >= 2:
                compare = CompareMeans(DescrStatsW(a), DescrStatsW(b))
                row["ci_low"], row["ci_high"] = map(float, compare.tconfint_diff(alpha=ALPHA, usevar="unequal"))
                row["p"] = float(compare.ttest_ind(usevar="unequal")[1])
            rows.append(row)
    return _frame(rows, OPTION_ORDER_COLUMNS)


def item_order_effect(table: pd.DataFrame) -> pd.DataFrame:
    """Drift of keyed answers with the position at which an item was asked (shuffled orders only).

    Reported for backend × instrument cells where at least one item was asked at more than one
    position (with a fixed order, position and item are confounded and nothing can be said). The
    model is OLS ``keyed_value ~ position + C(item_id)`` (item fixed effects, statsmodels
    formula), so the slope compares the same item asked earlier or later; ``slope`` is the change
    in keyed answer per position step. Answers of one respondent are not independent, so the
    standard error is cluster-robust by respondent (CR1, t on ``n_respondents − 1`` df); with
    fewer than two respondents the CI and p are NaN.

    Returns
    -------
    DataFrame
        ``backend_id, instrument, n_answers, n_respondents, n_positions, slope, se, ci_low,
        ci_high, p``.

    Example
    -------
    Three respondents answer items b and d in shuffled orders (positions 1 and 2):

    >>> table = pd.DataFrame({"backend_id": "b", "instrument": "mini", "status": "answered",
    ...                       "respondent_id": ["r1", "r1", "r2", "r2", "r3", "r3"],
    ...                       "item_id": ["b", "d"] * 3, "position": [1, 2, 2, 1, 1, 2],
    ...                       "value": [5, 4, 4, 6, 6, 4]}).assign(keyed_value=lambda t: t["value"])
    >>> item_order_effect(table)[["n_answers", "n_respondents", "n_positions", "slope", "se", "p"]].round(3)
       n_answers  n_respondents  n_positions  slope    se      p
    0          6              3            2  -1.75  0.28  0.025

    References
    ----------
    Galesic, M., & Bosnjak, M. (2009). Effects of questionnaire length on participation and
    indicators of response quality in a web survey. *Public Opinion Quarterly*, 73(2), 349–360
    (position effects). Cameron, A. C., & Miller, D. L. (2015). A practitioner's guide to
    cluster-robust inference. *Journal of Human Resources*, 50(2), 317–372.
    """
    rows = []
    counted = _answered(table)
    counted = counted[counted["keyed_value"].notna()]
    for (backend, inst_id), answers in counted.groupby(GROUP, sort=True):
        if not (answers.groupby("item_id")["position"].nunique() > 1).any():
            continue
        data = pd.DataFrame({"keyed_value": answers["keyed_value"].to_numpy(dtype=float),
                             "position": answers["position"].to_numpy(dtype=float),
                             "item_id": answers["item_id"].astype(str).to_numpy()})
        clusters = pd.factorize(answers["respondent_id"])[0]
        n_clusters = len(set(clusters))
        model = smf.ols("keyed_value ~ position + C(item_id)", data)
        fit = (model.fit(cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True)
               if n_clusters >= 2 else model.fit())
        low, high = fit.conf_int(alpha=ALPHA).loc["position"] if n_clusters >= 2 else (math.nan, math.nan)
        rows.append({"backend_id": backend, "instrument": inst_id, "n_answers": len(data),
                     "n_respondents": n_clusters, "n_positions": int(data["position"].nunique()),
                     "slope": float(fit.params["position"]),
                     "se": float(fit.bse["position"]) if n_clusters >= 2 else math.nan,
                     "ci_low": float(low), "ci_high": float(high),
                     "p": float(fit.pvalues["position"]) if n_clusters >= 2 else math.nan})
    return _frame(rows, ITEM_ORDER_COLUMNS)


def answer_entropy(table: pd.DataFrame) -> pd.DataFrame:
    """Spread of the model's probability over the options (answer mode ``logprobs`` only).

    For each answer with a stored distribution, the Shannon entropy in bits of the option
    probabilities (scipy), and the same divided by ``log2(k)`` for ``k`` options (0 = all mass on
    one option, 1 = uniform: Pielou's evenness). A human sample varies across people; a model
    that is near-certain on every item (entropy near 0) will produce identical personas unless
    the persona shifts that certainty. ``option_mass`` is the probability the model put on valid
    option tokens at all (low mass: the distribution is renormalised from a small remainder).
    All rows with a distribution count, whatever their status.

    Returns
    -------
    DataFrame
        ``backend_id, instrument, n_answers, n_options, entropy_bits, normalised_entropy,
        option_mass`` (means over answers; ``n_options`` is the largest k seen).

    Example
    -------
    Two answers in answer mode ``logprobs``: one split evenly over two options (1 bit), one certain (0 bits):

    >>> table = pd.DataFrame({"backend_id": "b", "instrument": "iri", "option_mass": [0.9, 1.0],
    ...                       "distribution": ['{"1": 0.5, "2": 0.5}', '{"1": 1.0, "2": 0.0}']})
    >>> answer_entropy(table)[["instrument", "n_answers", "entropy_bits", "normalised_entropy", "option_mass"]]
      instrument  n_answers  entropy_bits  normalised_entropy  option_mass
    0        iri          2           0.5                 0.5         0.95

    References
    ----------
    Shannon, C. E. (1948). A mathematical theory of communication. *Bell System Technical
    Journal*, 27, 379–423. Pielou, E. C. (1966). The measurement of diversity in different types
    of biological collections. *Journal of Theoretical Biology*, 13, 131–144. Santurkar, S.,
    Durmus, E., Ladhak, F., Lee, C., Liang, P., & Hashimoto, T. (2023). Whose opinions do language
    models reflect? *ICML* (option distributions of LLM answers).
    """
    has = table["distribution"].notna() & (table["distribution"].astype(str).str.strip() != "")
    rows = []
    for (backend, inst_id), answers in table[has].groupby(GROUP, sort=True):
        dists = [np.array(list(json.loads(d).values()), dtype=float) for d in answers["distribution"]]
        k = np.array([len(p) for p in dists])
        h = np.array([stats.entropy(p, base=2) if p.sum() > 0 else math.nan for p in dists])
        normalised = np.where(k > 1, h / np.log2(np.maximum(k, 2)), math.nan)
        rows.append({"backend_id": backend, "instrument": inst_id, "n_answers": len(dists),
                     "n_options": int(k.max()), "entropy_bits": float(np.nanmean(h)),
                     "normalised_entropy": float(np.nanmean(normalised)),
                     "option_mass": float(answers["option_mass"].astype(float).mean())})
    return _frame(rows, ENTROPY_COLUMNS)


def fidelity_summary(table: pd.DataFrame, instruments: dict[str, Instrument],
                     comparison: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Every diagnostic that applies to this run, by function name.

    A diagnostic is left out when it has no rows: ``sd_ratio`` without a comparison table,
    ``acquiescence`` without instruments keyed both ways, ``option_order_effect`` unless both
    option orders occur, ``item_order_effect`` unless item positions vary, ``answer_entropy``
    unless distributions were stored.

    Example
    -------
    `run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml, options as written, items in
    their order, answers as text (so no option-order, item-order or entropy diagnostic).

    >>> from psyq import export_table, open_run
    >>> sorted(fidelity_summary(export_table(run_dir), open_run(run_dir).instruments))
    ['acquiescence', 'missingness', 'response_styles', 'straightlining']
    """
    # Only the columns the diagnostics read: each selects rows, which copies every column it is given
    # (persona attributes and texts are most of a large run's table).
    table = table[[c for c in READ if c in table.columns]]
    results = {
        "sd_ratio": sd_ratio(comparison) if comparison is not None else None,
        "straightlining": straightlining(table),
        "acquiescence": acquiescence(table, instruments),
        "response_styles": response_styles(table, instruments),
        "missingness": missingness(table),
        "option_order_effect": option_order_effect(table, instruments),
        "item_order_effect": item_order_effect(table),
        "answer_entropy": answer_entropy(table),
    }
    return {name: frame for name, frame in results.items() if frame is not None and len(frame)}
