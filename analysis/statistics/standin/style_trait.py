"""Response style or trait: is a cohort − people gap shared by all items whatever their keying?

A persona cohort can differ from people in two ways that both move subscale scores:

* a **response style** (acquiescence when positive, disacquiescence when negative): higher (or
  lower) *raw* answers on forward and reverse-keyed items alike, whatever the items say;
* a **trait-like**, keyed shift: forward items up and reversed items down in raw terms (the same
  direction once the reversed items are keyed), as a real difference in the construct would do.

:func:`style_and_trait` tells them apart per rating subscale, with the extreme and midpoint
response styles (ERS, MRS; Baumgartner & Steenkamp, 2001) beside them. Within one cohort,
:func:`psyq.analysis.statistics.standin.fidelity.acquiescence` gives the balanced acquiescence index
against the scale midpoint; here the same balanced index is compared between the cohort and
people, and set against the keyed part of the gap.

Checked in tests/test_style_trait.py on the 1,973 Briganti et al. (2018) people: the style and trait
parts against numpy's least squares and the keyed gap computed from item means, the interval against
scipy's Welch t interval, and shifts planted by design (every raw answer +1: style; keyed +1:
trait).

References
----------
Baumgartner, H., & Steenkamp, J.-B. E. M. (2001). Response styles in marketing research: A
cross-national investigation. *Journal of Marketing Research*, 38(2), 143–156 (acquiescence
on balanced item sets, ERS, MRS). Paulhus, D. L. (1991). Measurement and control of response
bias. In J. P. Robinson, P. R. Shaver, & L. S. Wrightsman (Eds.), *Measures of personality and
social psychological attitudes* (pp. 17–59). Academic Press. Meyer, Garcia & Wulff (2026,
preprint): a one-directional response bias explains most differences between language models.
Welch, B. L. (1947). The generalization of "Student's" problem when several different population
variances are involved. *Biometrika*, 34(1–2), 28–35.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import Instrument

from psyq.analysis.statistics.intervals import t_quantile

COLUMNS = ["instrument", "subscale", "n_forward", "n_reversed", "n_cohort", "n_people", "n_cohort_left_out",
           "n_people_left_out", "style", "style_low", "style_high", "trait", "trait_low", "trait_high", "gap",
           "style_share", "trait_share", "style_abs_share", "extreme", "extreme_low", "extreme_high", "midpoint",
           "midpoint_low", "midpoint_high", "note"]
NEGLIGIBLE = 0.01
"""A gap (or a displacement |style| + |trait|) smaller than this, in scale points per item, is too
small to be shared out: the shares are NaN with a note."""
LEVEL = 0.95


def _welch(c: np.ndarray, h: np.ndarray, what: str, confidence: float = LEVEL) -> tuple[float, float, float, str]:
    """mean(c) − mean(h) and its Welch 95 % CI: diff ± t(0.975, ν)·√(s²c/nc + s²h/nh), ν the
    Welch–Satterthwaite df; with the reason in the last element when something is missing."""
    if c.size == 0 or h.size == 0:
        side = "cohort" if c.size == 0 else "people"
        return math.nan, math.nan, math.nan, f"{what} not estimable: no {side} respondent to compare"
    diff = float(c.mean() - h.mean())
    if c.size < 2 or h.size < 2:
        return diff, math.nan, math.nan, f"{what} CI not estimable: fewer than 2 respondents on one side"
    vc, vh = c.var(ddof=1) / c.size, h.var(ddof=1) / h.size
    se = math.sqrt(vc + vh)
    if se == 0:
        return diff, math.nan, math.nan, f"{what} CI not estimable: no spread on either side"
    df = (vc + vh) ** 2 / (vc ** 2 / (c.size - 1) + vh ** 2 / (h.size - 1))
    half = t_quantile(confidence, df) * se
    return diff, diff - half, diff + half, ""


def _indices(raw: np.ndarray, forward: np.ndarray, ends: tuple[float, float], middle: float | None) -> dict:
    """Per respondent (rows of `raw`, the subscale's items as columns): the style index u, the trait
    index v (NaN without an answered forward or reversed item), the shares of answered items at the
    scale's ends and at its middle option (NaN without answers), and who answered anything."""
    answered = ~np.isnan(raw)
    n_answered = answered.sum(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a respondent without answers on one side: NaN
        mean_f = np.nanmean(raw[:, forward], axis=1) if forward.any() else np.full(len(raw), np.nan)
        mean_r = np.nanmean(raw[:, ~forward], axis=1) if (~forward).any() else np.full(len(raw), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        extreme = np.where(answered & ((raw == ends[0]) | (raw == ends[1])), 1, 0).sum(axis=1) / n_answered
        midpoint = (np.where(answered & (raw == middle), 1, 0).sum(axis=1) / n_answered
                    if middle is not None else np.full(len(raw), np.nan))
    return {"u": (mean_f + mean_r) / 2, "v": (mean_f - mean_r) / 2, "any": n_answered > 0,
            "extreme": extreme, "midpoint": midpoint}


def style_and_trait(cohort_items: pd.DataFrame, human_items: pd.DataFrame, instrument: Instrument, *,
                    confidence: float = LEVEL) -> pd.DataFrame:
    """Per rating subscale, the cohort − people gap split into a response style shared by forward
    and reversed items and a keyed, trait-like shift, with the extreme and midpoint response styles.

    `cohort_items` and `human_items` hold *raw* answers (reverse items not reversed), one row per
    respondent, one column per item id; other columns (attributes, ``backend_id``) are ignored.

    For a subscale with forward items F and reversed items R (nF, nR of them, n = nF + nR), each
    respondent with at least one answered item on each side gets

    * the style index u = (mean raw answer over answered F + mean raw answer over answered R) / 2,
    * the trait index v = (mean raw answer over answered F − mean raw answer over answered R) / 2,

    and ``style`` = mean_cohort(u) − mean_people(u), ``trait`` = mean_cohort(v) − mean_people(v),
    in scale points per item, each with a Welch CI at `confidence` (default 95 %; the verdict reads
    it at 90 %, TOST at α = .05) (``style_low``/``style_high``,
    ``trait_low``/``trait_high``). Respondents who answered items of the subscale but none on one
    side are left out of style and trait (``n_cohort_left_out``, ``n_people_left_out``; ``n_cohort``,
    ``n_people`` are the respondents used).

    Why these are the style and the trait: with complete answers, let d_i be the difference of the
    item means (cohort − people, raw) and d̄_F, d̄_R their means over F and over R. Then
    mean(u) differs by (d̄_F + d̄_R)/2 and mean(v) by (d̄_F − d̄_R)/2. This is the least-squares fit
    of d_i = s + t·k_i (k_i = +1 forward, −1 reversed) with each side weighted equally (weight
    1/nF on an F item, 1/nR on an R item): with a = s + t and b = s − t the loss
    Σ_F (d_i − a)²/nF + Σ_R (d_i − b)²/nR separates into two means, a = d̄_F and b = d̄_R, hence
    s = (d̄_F + d̄_R)/2 = style and t = (d̄_F − d̄_R)/2 = trait. A pure style moves every raw
    answer by s (t = 0); a pure keyed shift moves keyed answers by t (s = 0).

    The subscale's keyed gap per item: a reversed item's keyed difference is −d_i, so the mean
    keyed item difference is ``gap`` = (nF·d̄_F − nR·d̄_R)/n = trait + style·(nF − nR)/n (computed
    from the estimated style and trait, which with complete answers is the mean keyed item
    difference exactly). ``style_share`` = style·(nF − nR)/n ÷ gap and ``trait_share`` = trait ÷
    gap are the parts of the gap each explains (they add up to 1, and one is negative, the other
    above 1, when style and trait pull the score in opposite directions; NaN with a note when
    |gap| < 0.01 points: a share of nothing is not a number). On a balanced subscale (nF = nR) style
    cannot move the score at all, so its share is 0 even when every item moved by style alone;
    ``style_abs_share`` = |style| / (|style| + |trait|) says how much of the *item-level*
    displacement is style whatever the keying balance: near 1, "the gap is style", even where the
    balanced keying cancels it in the score (NaN with a note when |style| + |trait| < 0.01).

    A subscale without reversed (or without forward) items cannot tell style from trait: its
    style, trait and shares are NaN with the note "no reversed items: style and trait cannot be
    told apart".

    Beside them, over respondents with at least one answered item of the subscale: ``extreme``,
    the difference in the mean per-respondent share of answered items at the lowest or highest
    scale value (ERS), and ``midpoint``, the same at the middle option (MRS; NaN with a note when
    the scale has an even number of options), each with a Welch 95 % CI.

    Checked in ``tests/test_style_trait.py`` against: a +1 shift of every raw answer (style) and of
    every keyed answer (trait) of the 1,973 Briganti et al. (2018) people, with the expected
    values computed from the shifted item means; the equal-weight least-squares fit of d_i = s +
    t·k_i with numpy; the CI of :func:`scipy.stats.ttest_ind` (``equal_var=False``) on the
    per-respondent indices.

    Returns
    -------
    DataFrame
        One row per rating subscale: ``instrument, subscale, n_forward, n_reversed, n_cohort,
        n_people, n_cohort_left_out, n_people_left_out, style, style_low, style_high, trait,
        trait_low, trait_high, gap, style_share, trait_share, style_abs_share, extreme,
        extreme_low, extreme_high, midpoint, midpoint_low, midpoint_high, note``.

    Example
    -------
    The cohort answers every raw answer one point higher: a pure style. On X, one forward and one
    reversed item, the keyed gap is 0 and the shares are not defined, yet all of the displacement is
    style; on Y, two forward items and one reversed, style explains all of the gap:

    >>> from psyq import load_instrument
    >>> mini = load_instrument("tests/data/mini_1to7.yaml")
    >>> people = pd.DataFrame({"a": [1, 3, 5, 2], "b": [2, 6, 4, 3], "c": [3, 5, 1, 4], "d": [4, 2, 6, 5]})
    >>> out = style_and_trait(people + 1, people, mini)
    >>> out[["subscale", "style", "trait", "gap", "style_share", "style_abs_share"]].round(3)
      subscale  style  trait    gap  style_share  style_abs_share
    0        X    1.0    0.0  0.000          NaN              1.0
    1        Y    1.0    0.0  0.333          1.0              1.0
    2        Z    1.0    0.0  0.000          NaN              1.0
    >>> out.loc[0, "note"]
    'keyed gap negligible (|gap| < 0.01 points per item): shares not defined'
    """
    items = {i.id: i for i in instrument.rating_items}
    values = sorted(float(o.value) for o in instrument.scale)
    ends = (values[0], values[-1])
    middle = values[len(values) // 2] if len(values) % 2 == 1 else None
    rows = []
    for subscale in instrument.rating_subscales:
        members = [i for i in instrument.subscale_items(subscale.id) if i.id in items]
        ids = [i.id for i in members]
        forward = np.array([not i.reverse for i in members], dtype=bool)
        n_f, n_r = int(forward.sum()), int((~forward).sum())
        cohort = _indices(cohort_items.reindex(columns=ids).to_numpy(dtype=float), forward, ends, middle)
        people = _indices(human_items.reindex(columns=ids).to_numpy(dtype=float), forward, ends, middle)
        split_c, split_p = ~np.isnan(cohort["u"]), ~np.isnan(people["u"])
        notes: list[str] = []
        row = {"instrument": instrument.id, "subscale": subscale.id, "n_forward": n_f, "n_reversed": n_r,
               "n_cohort": int(split_c.sum()), "n_people": int(split_p.sum()),
               "n_cohort_left_out": int((cohort["any"] & ~split_c).sum()),
               "n_people_left_out": int((people["any"] & ~split_p).sum())}
        if n_r == 0 or n_f == 0:
            notes.append(f"no {'reversed' if n_r == 0 else 'forward'} items: style and trait cannot be told apart")
            row.update({k: math.nan for k in ("style", "style_low", "style_high", "trait", "trait_low",
                                               "trait_high", "gap", "style_share", "trait_share",
                                               "style_abs_share")})
        else:
            if row["n_cohort_left_out"] or row["n_people_left_out"]:
                notes.append(f"left out of style and trait (no answered forward or no answered reversed item): "
                             f"{row['n_cohort_left_out']} cohort, {row['n_people_left_out']} people respondents")
            style, s_low, s_high, s_note = _welch(cohort["u"][split_c], people["u"][split_p], "style", confidence)
            trait, t_low, t_high, t_note = _welch(cohort["v"][split_c], people["v"][split_p], "trait", confidence)
            notes += [n for n in (s_note, t_note) if n]
            style_part = style * (n_f - n_r) / (n_f + n_r)
            gap = trait + style_part
            row.update(style=style, style_low=s_low, style_high=s_high, trait=trait, trait_low=t_low,
                       trait_high=t_high, gap=gap, style_share=math.nan, trait_share=math.nan,
                       style_abs_share=math.nan)
            if not math.isnan(gap):
                if abs(gap) < NEGLIGIBLE:
                    notes.append(f"keyed gap negligible (|gap| < {NEGLIGIBLE} points per item): shares not defined")
                else:
                    row.update(style_share=style_part / gap, trait_share=trait / gap)
                moved = abs(style) + abs(trait)
                if moved < NEGLIGIBLE:
                    notes.append(f"no displacement (|style| + |trait| < {NEGLIGIBLE}): style_abs_share not defined")
                else:
                    row["style_abs_share"] = abs(style) / moved
        any_c, any_p = cohort["any"], people["any"]
        for what in ("extreme", "midpoint"):
            if what == "midpoint" and middle is None:
                notes.append(f"midpoint not defined: the scale has an even number of options ({len(values)})")
                diff = low = high = math.nan
            else:
                diff, low, high, note = _welch(cohort[what][any_c], people[what][any_p], what, confidence)
                if note:
                    notes.append(note)
            row.update({what: diff, f"{what}_low": low, f"{what}_high": high})
        row["note"] = "; ".join(dict.fromkeys(notes))
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
