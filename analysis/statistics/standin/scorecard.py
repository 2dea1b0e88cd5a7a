"""Can these personas stand in for people? One row per group of personas (a backend), instrument,
criterion and subscale, each a figure with its interval and one of four marks.

:func:`scorecard` gathers what the other statistics compute, personas against people's raw answers
to the same instrument. Each figure has a 90 % interval and an *equivalence region* — where the
personas would be as good as people for that criterion — and is marked by
:func:`~psyq.analysis.statistics.standin.equivalence.interval_mark`: ``meets`` (the interval inside the
region: two one-sided tests at α = .05, Lakens 2017), ``falls short`` (the interval wholly outside
it: equivalence rejected), ``inconclusive`` (the data cannot decide yet) or ``not estimable`` (no
figure; the ``note`` says why). One convention for every criterion and for the report's norm
comparison: TOST at α = .05, which is the 90 % interval inside the bounds.

===============  =========  ==============================================  =======================================
criterion        per        figure and its 90 % interval                    region (source)
===============  =========  ==============================================  =======================================
level            subscale   Hedges' g, personas − people (pingouin's CI)    ±`bound` SD (equivalence as in TOST,
                                                                            Lakens 2017; ±0.3 SD: psyq's default)
spread           subscale   SD ratio personas / people (Bonett's 2006       0.80–1.25 (psyq's convention; stricter
                            robust interval)                                than Rubin's, 2001, variance ratio 0.5–2)
reliability      subscale   α personas − α people (Feldt's intervals        ±.10 (psyq's convention)
                            joined by MOVER, Bonett & Wright 2015)
structure        instrument the invariance level reached, configural fit    scalar invariance, full or partial, on a
                            required; each sample's own RMSEA in the note   configural model that fits (CFI ≥ .90,
                                                                            RMSEA ≤ .10; Putnick & Bornstein 2016)
latent_mean      subscale   latent mean d under the (partial) scalar model  ±`bound`
distinguishable  instrument classifier AUC (:func:`.distinguishability`;    AUC ≤ .60 (psyq's convention: .70 is
                            DeLong, simultaneous for the two classifiers)   "acceptable discrimination", Hosmer &
                                                                            Lemeshow 2000); ≥ 50 per side to decide
style            subscale   style shift in scale points (Welch)             ±0.20 points (psyq's convention)
relations        effect     personas − people: each attribute's g (±        g: ±`bound`; r: ±.15 (psyq's convention,
                            z·√(SE²+SE²)) and each subscale                 about Cohen's q = .15)
                            intercorrelation's r (Zou 2007)
individuals      instrument twin − other twins, mean per-person r of        above .20 (psyq's convention)
                            answers (bootstrap over persons; twins only)
worth            subscale   people each measured person is worth with       ≥ 1.10 (psyq's convention); no interval
                            twins (:func:`.prediction_powered`)             yet: marked inconclusive, a figure only
===============  =========  ==============================================  =======================================

A criterion measured on several rows (subscales, effects) meets only when every row meets and
falls short when any row does (:func:`criterion_marks`). Where a structure fit pools two samples of
very different sizes (more than 4 to 1), the larger dominates it: the row says so and a "reached"
level is read as inconclusive, never as meets.

Nothing is marked on a figure that could not be estimated. The regions are module constants
(:data:`CUTOFFS`); docs/comparing.md gives them with their sources and docs/reading-report.md how
often each mark is wrong (bench/verdict_calibration.py).

Checked in tests/test_scorecard.py: each figure is the one of the statistic it comes from, called
directly (an independent path through the data); the intervals of spread and reliability against
statpsych's published examples (tests/test_equivalence.py); the marks against cohorts built to meet,
fall short or be undecidable by design, and structure's rules on hand-made fit tables.

Example
-------
300 of the shipped people standing in for 300 others:

>>> import warnings; warnings.simplefilter("ignore")       # the shipped file's codebook notice
>>> from psyq import human_data, load_instrument
>>> iri = load_instrument("iri")
>>> people = human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri)
>>> card = scorecard(people.iloc[:600:2], people.iloc[1:600:2], iri, structure=False, permutations=100)
>>> card.query("criterion == 'level'")["mark"].tolist()
['meets', 'meets', 'meets', 'meets']
>>> criterion_marks(card).set_index("criterion")["mark"].to_dict()["spread"]
'meets'

References
----------
Lakens, D. (2017). Equivalence tests. *Social Psychological and Personality Science, 8*,
355–362. Bonett, D. G. (2006). Robust confidence interval for a ratio of standard deviations.
*Applied Psychological Measurement, 30*, 432–439. Bonett, D. G., & Wright, T. A. (2015). Cronbach's
alpha reliability. *Journal of Organizational Behavior, 36*, 3–15. Rubin, D. B. (2001). Using
propensity scores to help design observational studies. *Health Services and Outcomes Research
Methodology, 2*, 169–188. Putnick, D. L., & Bornstein, M. H. (2016). Measurement invariance
conventions and reporting. *Developmental Review, 41*, 71–90. Hosmer, D. W., & Lemeshow, S. (2000).
*Applied logistic regression* (2nd ed.), p. 162. Zou, G. Y. (2007). Toward using confidence
intervals to compare correlations. *Psychological Methods, 12*, 399–413.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pingouin as pg

from psyq.engine.design.instrument import Instrument
from psyq.engine.design.persona import BASELINE
from psyq.engine.trials.scoring import score_wide

from psyq.analysis.statistics.standin.distinguishability import distinguishability
from psyq.analysis.statistics.standin.equivalence import (CONFIDENCE, FALLS_SHORT, INCONCLUSIVE, MEETS, NOT_ESTIMABLE,
                                                  allow_for_rows, alpha_difference_interval, combine_marks, interval_mark,
                                                  rescale_interval, sd_ratio_interval)
from psyq.analysis.statistics.human_comparison import compare_with_humans
from psyq.analysis.statistics.invariance import level_reached
from psyq.analysis.statistics.invariance.against_people import PEOPLE, PERSONAS, invariance_against_people
from psyq.analysis.statistics.standin.prediction_powered import people_needed, prediction_powered
from psyq.analysis.statistics.standin.relations import relations
from psyq.analysis.statistics.standin.style_trait import style_and_trait
from psyq.analysis.statistics.standin.twins import match_twins, twin_agreement, twin_summary

CRITERIA = ("level", "spread", "reliability", "structure", "latent_mean", "distinguishable", "style", "relations",
            "individuals", "worth")
"""The criteria, in the order of the scorecard's columns."""
SD_RATIO = (0.80, 1.25)
ALPHA_GAP = 0.10
AUC_MAX = 0.60
AUC_MIN_PER_SIDE = 50
"""Respondents per side below which the classifier test cannot decide: half of them train two
classifiers (trees of at least 20 respondents a leaf cannot split below 40), the other half test
them, and DeLong's interval on a dozen per side is too unsure of itself to be trusted."""
MIN_FOR_CORRELATIONAL = 30
"""Personas below which α's and r's intervals do not decide: Feldt's and Fisher's intervals assume
normal scores, and on a dozen Likert answers they are too narrow — 150 draws of 13 of the shipped
people against the others, before this rule, fell short on reliability in 8 draws (5.3 %) and on an
intercorrelation in 6 (4 %), real people told they cannot stand in for people. With it, none
(bench/verdict_calibration.py: 0 % at 13 in 200 draws). Below it those rows are inconclusive
whatever their interval."""
STYLE_MAX = 0.20
RELATION_R = 0.15
INDIVIDUALS_MIN = 0.20
WORTH_MIN = 1.10
MIN_TWINS = 3
POOLED_RATIO = 4.0
"""A two-sample fit pooling more than this many respondents on one side per one on the other is
dominated by the larger side: a level "reached" then says little of the smaller."""
CUTOFFS = {
    "level": "90 % CI of g inside ±{bound} SD (TOST at α = .05, Lakens 2017; bound: psyq's default)",
    "spread": "90 % CI of the SD ratio inside 0.80–1.25 (Bonett 2006; psyq's convention, stricter than Rubin's, "
              "2001, variance ratio 0.5–2)",
    "reliability": "90 % CI of α personas − α people inside ±.10 (Feldt's intervals by MOVER, Bonett & Wright "
                   "2015; psyq's convention)",
    "structure": "scalar invariance reached, full or partial (Putnick & Bornstein 2016), on a configural model that "
                 "fits (CFI ≥ .90, RMSEA ≤ .10), each step holding by Chen's (2007) cut-offs; falls short when a "
                 "step fails them with its Δχ² p < .05, or when the personas' own answers misfit a model that fits "
                 "the people; a pooled fit more than 4 to 1 is not read as meeting",
    "latent_mean": "90 % CI of the latent mean d inside ±{bound}",
    "distinguishable": "90 % CI of the classifier AUC below .60 (psyq's convention; .70 is acceptable "
                       "discrimination, Hosmer & Lemeshow 2000); fewer than 50 per side cannot decide",
    "style": "90 % CI of the style shift inside ±0.20 scale points (psyq's convention)",
    "relations": "each effect's personas − people difference, its 90 % CI inside ±{bound} (g) or ±.15 (r) "
                 "(psyq's convention; Bisbee et al. 2024)",
    "individuals": "90 % CI of twin − other twins (per-person r of answers) above .20 (psyq's convention)",
    "worth": "each person measured worth ≥ 1.10 people with twins (psyq's convention); no interval yet, so never "
             "marked meets",
}
COLUMNS = ["group", "instrument", "criterion", "subscale", "value", "low", "high", "people", "mark", "level", "note"]


def _row(group, instrument, criterion, subscale="", value=np.nan, low=np.nan, high=np.nan, people=np.nan, mark=None,
         level="", note="", region: tuple[float, float] | None = None, log: bool = False, widen=None) -> dict:
    """One scorecard row; with `region` (the equivalence region, on the log scale when `log`) the mark
    is the interval's, and the region is kept for :func:`~psyq.analysis.statistics.standin.equivalence.allow_for_rows`,
    with `widen`: the function giving the row's interval at another level (default: the 90 % one
    rescaled, keeping each side's standard error)."""
    if mark is None and region is not None:
        mark = interval_mark(low, high, *region)
    if mark is None or pd.isna(value):
        mark = NOT_ESTIMABLE if pd.isna(value) else mark
    lower, upper = region if region is not None else (np.nan, np.nan)

    def widened(level: float) -> tuple[float, float]:       # on the region's scale
        if widen is not None:
            at = widen(level)
            return (math.log(at[0]), math.log(at[1])) if log else at
        v, lo, hi = (math.log(value), math.log(low), math.log(high)) if log else (value, low, high)
        return rescale_interval(v, lo, hi, CONFIDENCE, level)
    return dict(group=group, instrument=instrument, criterion=criterion, subscale=subscale, value=value, low=low,
                high=high, people=people, mark=mark, level=level, note=note if mark == NOT_ESTIMABLE or note else "",
                _lower=lower, _upper=upper, _widen=widened)


def _stopped_at(fit: pd.DataFrame, reached: str) -> tuple[str, float]:
    """The step after `reached` (and its partial form) that did not hold or was doubtful, with its changes
    in fit; and the smallest Δχ² p among them (NaN when none has one)."""
    steps = fit["step"].tolist()
    after = fit.iloc[steps.index(reached) + 1:] if reached in steps else fit.iloc[0:0]
    if len(after):
        stopped = after["step"].iloc[0].removeprefix("partial ")
        after = after[after["step"].str.removeprefix("partial ") == stopped]
    said = [f"{r.step}: not estimable" if not r.estimable else
            f"{r.step}: ΔCFI {r.delta_cfi:+.3f}, ΔRMSEA {r.delta_rmsea:+.3f}, ΔSRMR {r.delta_srmr:+.3f}"
            for r in after.itertuples()]
    p = after["delta_p"].astype(float).min() if "delta_p" in after and len(after) else np.nan
    return (("not held or doubtful (Chen 2007): " + "; ".join(said)) if said else ""), float(p) if pd.notna(p) else np.nan


def _sample_rmsea(fit: pd.DataFrame) -> dict[str, float]:
    """Each sample's own RMSEA in the configural model, from its share of the χ² (the configural model
    constrains nothing across samples, so each sample's part is its own fit): √(max(0, χ²/df − 1)/(n − 1))."""
    chi2 = (fit.attrs.get("group_chi2") or {}).get("configural") or {}
    sizes = fit.attrs.get("group_sizes") or {}
    first = fit[fit["step"] == "configural"]
    if not chi2 or first.empty or len(chi2) < 2:
        return {}
    df = float(first["df"].iloc[0]) / len(chi2)
    return {label: math.sqrt(max(0.0, value / df - 1) / (sizes[label] - 1))
            for label, value in chi2.items() if label in sizes and sizes[label] > 1 and df > 0}


def _structure_rows(group: str, inst: Instrument, fit: pd.DataFrame | None, bound: float) -> list[dict]:
    def no_means(why: str) -> dict:
        return _row(group, inst.id, "latent_mean", note=f"latent means need scalar invariance; {why}")
    if fit is None:
        return [_row(group, inst.id, "structure", note="not fitted"), no_means("structure not fitted")]
    first = fit[fit["step"] == "configural"]
    cfi_column, rmsea_column = fit.attrs.get("deciding", ("cfi", "rmsea"))
    if first.empty or not bool(first["estimable"].iloc[0]):
        why = str(first["note"].iloc[0]) if len(first) else fit.attrs.get("problem") or "no configural model"
        return [_row(group, inst.id, "structure", note=why.removeprefix("not estimable: ")),
                no_means("the configural model is not estimable")]
    cfi, rmsea = float(first[cfi_column].iloc[0]), float(first[rmsea_column].iloc[0])
    own = _sample_rmsea(fit)
    sizes = fit.attrs.get("group_sizes") or {}
    said = []
    if own:
        said.append("each sample's own RMSEA: " + ", ".join(f"{k} {v:.3f}" for k, v in own.items()))
    fallback = fit.attrs.get("fallback")
    if fallback:
        said.append(f"fitted as continuous (ML): the ordinal fit was not estimable ({fallback})")
    ratio = max(sizes.values()) / min(sizes.values()) if len(sizes) == 2 and min(sizes.values()) > 0 else 1.0
    dominated = ratio > POOLED_RATIO
    if dominated:
        big = max(sizes, key=sizes.get)
        said.append(f"the pooled fit is dominated by the {big} ({sizes[big]:,} to {min(sizes.values()):,}, "
                    f"{ratio:.1f} to 1): invariance holding there says little of the other sample")
    reached = level_reached(fit, require_fit=True)
    if reached == "none":
        # The configural model misfits. Whose answers does it misfit? Where the people fit (RMSEA ≤ .08,
        # by their own share of the χ²) and the personas do not (> .10), the personas' answers do not have
        # the structure; otherwise invariance cannot be judged on a model that fits neither well.
        people_fit, personas_fit = own.get(PEOPLE, np.nan), own.get(PERSONAS, np.nan)
        if people_fit <= 0.08 and personas_fit > 0.10:
            mark = FALLS_SHORT
            said.insert(0, f"the personas' answers misfit the instrument's structure (RMSEA {personas_fit:.3f}) "
                           f"where the people's fit it ({people_fit:.3f})")
        else:
            mark = NOT_ESTIMABLE
            said.insert(0, f"the configural model fits poorly (CFI {cfi:.3f}, RMSEA {rmsea:.3f}; needs CFI ≥ .90 and "
                           "RMSEA ≤ .10): invariance is not judged on a model that does not fit "
                           "(Putnick & Bornstein 2016)")
        rows = [_row(group, inst.id, "structure", value=cfi if mark != NOT_ESTIMABLE else np.nan, level=reached,
                     mark=mark, note="; ".join(said))]
        return rows + [no_means(f"reached: {reached}")]
    stopped, p = _stopped_at(fit, reached)
    if reached.endswith("scalar"):
        mark = INCONCLUSIVE if dominated else MEETS
    elif p < 0.05:
        mark = FALLS_SHORT
        stopped += f" (Δχ² p = {p:.3g})"
    else:
        mark = INCONCLUSIVE
        if stopped:
            stopped += " without a Δχ² p below .05"
    rows = [_row(group, inst.id, "structure", value=cfi, level=reached, mark=mark,
                 note="; ".join(p for p in [stopped, *said] if p))]
    means = fit.attrs.get("latent_means")
    if reached.endswith("scalar") and means is not None and len(means):
        for m in means.itertuples():
            low, high = rescale_interval(m.d, m.d_ci_low, m.d_ci_high, 0.95)
            rows.append(_row(group, inst.id, "latent_mean", m.factor, m.d, low, high, level=reached,
                             region=(-bound, bound)))
    else:
        rows.append(no_means(f"reached: {reached}"))
    return rows


def _too_few(n: int) -> str:
    return f"{int(n)} personas: α's and r's intervals need {MIN_FOR_CORRELATIONAL} to decide"


def _relation_rows(group: str, inst: Instrument, cohort_scores: pd.DataFrame, people_scores: pd.DataFrame,
                   attributes: list[str], bound: float) -> list[dict]:
    """One row per effect (attribute contrast × subscale, subscale pair): the personas − people difference
    and its interval against ±`bound` (g) or ±:data:`RELATION_R` (r)."""
    subscales = [s.id for s in inst.rating_subscales]
    shared = [a for a in attributes if a in cohort_scores.columns and a in people_scores.columns]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = relations(cohort_scores, people_scores, shared, subscales=subscales, confidence=CONFIDENCE)
        m = int(frame["difference_low"].notna().sum())
        wide = (relations(cohort_scores, people_scores, shared, subscales=subscales,
                          confidence=1 - (1 - CONFIDENCE) / m) if m > 1 else frame)
    rows = []
    for r, w in zip(frame.itertuples(), wide.itertuples()):
        width = bound if r.measure == "g" else RELATION_R
        what = (f"{r.attribute} {r.contrast}".strip() if r.kind != "subscale" else f"r with {r.attribute}")
        figure = f"{r.measure}: personas {r.effect_cohort:+.2f}, people {r.effect_people:+.2f}"
        few = r.measure != "g" and r.n_cohort < MIN_FOR_CORRELATIONAL and pd.notna(r.difference)
        note = "; ".join(p for p in [figure if pd.notna(r.difference) else "", _too_few(r.n_cohort) if few else "",
                                     r.note] if p)
        rows.append(_row(group, inst.id, "relations", f"{r.subscale}: {what}", r.difference, r.difference_low,
                         r.difference_high, people=r.effect_people, note=note, region=(-width, width),
                         mark=INCONCLUSIVE if few else None,
                         widen=lambda level, w=w: (w.difference_low, w.difference_high)))
    if not rows:
        rows.append(_row(group, inst.id, "relations", note="no attribute both samples share and fewer than two "
                                                            "subscales: no relation to compare"))
    return rows


def _twin_rows(group: str, inst: Instrument, cohort: pd.DataFrame, people: pd.DataFrame) -> list[dict]:
    match = match_twins(cohort.index, people.index)
    if len(match.matched) < MIN_TWINS:
        return []
    ids = pd.Index(match.matched)
    twins = cohort.set_axis(cohort.index.astype(str).str.strip()).loc[ids]
    persons = people.set_axis(people.index.astype(str).str.strip()).loc[ids]
    rows = []
    summary = twin_summary(twin_agreement(twins, persons, inst), confidence=CONFIDENCE)
    diff = summary[(summary["metric"] == "r") & (summary["comparison"] == "twin_minus_others")]
    if diff.empty or pd.isna(diff["mean"].iloc[0]):
        rows.append(_row(group, inst.id, "individuals", note=diff["note"].iloc[0] if len(diff) else "no twin r"))
    else:
        d = diff.iloc[0]
        rows.append(_row(group, inst.id, "individuals", value=d["mean"], low=d["ci_low"], high=d["ci_high"],
                         people=float(d["n"]), mark=interval_mark(d["ci_low"], d["ci_high"], INDIVIDUALS_MIN)))
    others = cohort.set_axis(cohort.index.astype(str).str.strip())
    others = others.loc[~others.index.isin(persons.index)]
    y, f = score_wide(inst, persons), score_wide(inst, twins)
    no_interval = "no interval for this ratio yet: a figure, never marked meets"
    if len(others):          # twins whose people are not used: PPI's effective number of people
        ppi = prediction_powered(y, f, score_wide(inst, others))
        for r in ppi[ppi["quantity"] == "mean"].itertuples():
            ratio = r.effective_n / r.n if r.n else np.nan
            rows.append(_row(group, inst.id, "worth", r.subscale, ratio, people=float(r.n), mark=INCONCLUSIVE,
                             note="; ".join(p for p in [r.note or f"PPI++ with {r.N} twins without their people",
                                                        no_interval] if p)))
    else:                    # every twin's person is measured: what one person is worth with unlimited twins
        for sub in y.columns:
            n = int(y[sub].notna().sum())
            width = 2 * 1.959963984540054 * y[sub].std(ddof=1) / np.sqrt(n)
            need = people_needed(y[[sub]], f[[sub]], width)
            value = n / float(need["people_needed"].iloc[0]) if need["people_needed"].notna().iloc[0] else np.nan
            rows.append(_row(group, inst.id, "worth", sub, value, people=float(n), mark=INCONCLUSIVE,
                             note="; ".join(p for p in [need["note"].iloc[0] or "people needed with unlimited twins "
                                                        "for the CI these people give alone", no_interval] if p)))
    return rows


def _subscale_rows(group: str, inst: Instrument, part: pd.DataFrame, people: pd.DataFrame,
                   cohort_scores: pd.DataFrame, people_scores: pd.DataFrame, bound: float) -> list[dict]:
    """level, spread and reliability per subscale."""
    rows = []
    cmp = compare_with_humans({inst.id: part}, {inst.id: people}, {inst.id: inst}, congruence=False)
    for r in cmp.itertuples():
        note = r.note or ""
        low = high = np.nan
        if pd.notna(r.g) and r.n_eff_cohort > 1 and r.n_eff_human > 1:
            low, high = pg.compute_esci(stat=r.g, nx=r.n_eff_cohort, ny=r.n_eff_human, eftype="hedges",
                                        confidence=CONFIDENCE, decimals=15)
        rows.append(_row(group, inst.id, "level", r.subscale, r.g, low, high, note=note, region=(-bound, bound)))
        ratio, low, high = (sd_ratio_interval(cohort_scores[r.subscale], people_scores[r.subscale])
                            if r.subscale in cohort_scores and r.subscale in people_scores else (np.nan,) * 3)
        rows.append(_row(group, inst.id, "spread", r.subscale, ratio, low, high, note=note,
                         region=(math.log(SD_RATIO[0]), math.log(SD_RATIO[1])), log=True,
                         mark=interval_mark(low, high, *SD_RATIO),
                         widen=lambda level, sub=r.subscale: sd_ratio_interval(
                             cohort_scores[sub], people_scores[sub], confidence=level)[1:]))
        k = len(inst.subscale_items(r.subscale))
        sizes = (r.alpha_cohort, int(r.n_cohort), k, r.alpha_human, int(r.n_human), k)
        gap, low, high = alpha_difference_interval(*sizes)
        few = r.n_cohort < MIN_FOR_CORRELATIONAL and pd.notna(gap)
        rows.append(_row(group, inst.id, "reliability", r.subscale, gap, low, high, people=r.alpha_human,
                         mark=INCONCLUSIVE if few else None,
                         region=(-ALPHA_GAP, ALPHA_GAP),
                         widen=lambda level, sizes=sizes: alpha_difference_interval(*sizes, confidence=level)[1:],
                         note="; ".join(p for p in [f"α personas {r.alpha_cohort:.2f}, people {r.alpha_human:.2f}"
                                                    if pd.notna(gap) else "", _too_few(r.n_cohort) if few else "",
                                                    note] if p)))
    return rows


def scorecard(cohort_items: pd.DataFrame, human_items: pd.DataFrame, instrument: Instrument, *,
              by: str | None = "backend_id", bound: float = 0.3,
              structure: bool | Mapping[str, pd.DataFrame] = True, attributes: list[str] | None = None,
              permutations: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Personas against people on every criterion, one row per group × criterion × subscale (or effect).

    Parameters
    ----------
    cohort_items, human_items : pandas.DataFrame
        Raw answers (reverse items not reversed), one column per item id, indexed by respondent;
        other columns are attributes. Personas whose id is a respondent id of the people are
        their twins (:func:`~psyq.analysis.statistics.standin.twins.match_twins`): the criteria
        ``individuals`` and ``worth`` are computed for them. The respondent ``baseline`` (the
        model answering as itself, :data:`psyq.BASELINE`) is left out.
    instrument : Instrument
    by : str or None
        The column of `cohort_items` whose levels are the groups (a backend each); absent or None:
        one group, "cohort".
    bound : float
        The equivalence bound in SD units (level, latent means, relations' g).
    structure : bool or mapping
        True: fit the invariance sequence per group; False: leave structure out (not estimable,
        "not fitted"); a mapping group → a :func:`measurement_invariance` frame already fitted.
    attributes : list of str, optional
        Attribute columns for ``relations`` (default: every non-item column both frames share but `by`).
    permutations, seed
        Passed to :func:`~psyq.analysis.statistics.standin.distinguishability.distinguishability` (the
        permutation p is not read by the mark, which the AUC's interval decides).

    Returns
    -------
    pandas.DataFrame
        ``group, instrument, criterion, subscale, value, low, high, people, mark, level, note``;
        ``low``/``high`` the 90 % interval; ``mark`` one of ``meets``, ``falls short``,
        ``inconclusive``, ``not estimable``; ``people`` the people's figure beside the value where
        there is one (α, an effect among people); ``level`` the invariance level reached; for
        ``relations`` the ``subscale`` column names the effect (``"EC: gender male − female"``,
        ``"PT: r with FS"``).

    Example
    -------
    See the module docstring.
    """
    items = [i.id for i in instrument.rating_items]
    # The model answering as itself is one respondent, not a persona of the cohort: never judged with them.
    cohort = cohort_items[cohort_items.index.astype(str) != BASELINE.id].copy()
    if not by or by not in cohort.columns:
        by = "_group"
        cohort[by] = "cohort"
    if attributes is None:
        attributes = [c for c in cohort.columns if c in human_items.columns and c not in items and c != by]
    subs = [s.id for s in instrument.rating_subscales]
    people_attributes = human_items[[a for a in attributes if a in human_items.columns]]
    people_scores = score_wide(instrument, human_items).join(people_attributes)
    rows: list[dict] = []
    auc = distinguishability(cohort, human_items, instrument, by=by, permutations=permutations, seed=seed,
                             confidence=CONFIDENCE)
    for group, part in cohort.groupby(by, sort=False):
        part = part.drop(columns=[by])
        cohort_scores = score_wide(instrument, part).join(part[[a for a in attributes if a in part.columns]])
        rows.extend(_subscale_rows(group, instrument, part, human_items, cohort_scores, people_scores, bound))
        if structure is False:
            rows.extend(_structure_rows(group, instrument, None, bound))
        else:
            given = structure.get(group) if isinstance(structure, Mapping) else None
            fit = given if given is not None else invariance_against_people(instrument, part, human_items)
            rows.extend(_structure_rows(group, instrument, fit, bound))
        a = auc[auc[by] == group].iloc[0]
        mark = interval_mark(a["auc_low"], a["auc_high"], upper=AUC_MAX)
        note = a.get("note") or ""
        if pd.notna(a["auc"]) and a["n_used"] < AUC_MIN_PER_SIDE and mark != NOT_ESTIMABLE:
            mark = INCONCLUSIVE
            note = "; ".join(p for p in [f"{int(a['n_used'])} per side: a classifier test needs {AUC_MIN_PER_SIDE} "
                                         "to decide (half of them train it)", note] if p)
        rows.append(_row(group, instrument.id, "distinguishable", value=a["auc"], low=a["auc_low"], high=a["auc_high"],
                         mark=mark, note=note))
        st = style_and_trait(part, human_items, instrument, confidence=CONFIDENCE)
        for r in st.itertuples():
            rows.append(_row(group, instrument.id, "style", r.subscale, r.style, r.style_low, r.style_high,
                             people=getattr(r, "style_abs_share", np.nan), note=r.note or "",
                             region=(-STYLE_MAX, STYLE_MAX)))
        rows.extend(_relation_rows(group, instrument, cohort_scores, people_scores, attributes, bound))
        rows.extend(_twin_rows(group, instrument, part[items], human_items[items]))
    out = allow_for_rows(pd.DataFrame(rows, columns=[*COLUMNS, "_lower", "_upper", "_widen"]))
    order = {c: k for k, c in enumerate(CRITERIA)}
    sub_order = {s: k for k, s in enumerate(["", *subs])}
    out = out.assign(_c=out["criterion"].map(order), _s=out["subscale"].map(sub_order).fillna(len(subs) + 1))
    groups = {g: k for k, g in enumerate(cohort[by].drop_duplicates())}
    out = out.assign(_g=out["group"].map(groups)).sort_values(["_g", "_c", "_s"], kind="stable")
    return out.drop(columns=["_c", "_s", "_g"]).reset_index(drop=True)


def row_region(row: Mapping, bound: float = 0.3) -> tuple[float, float]:
    """The equivalence region of a scorecard row, on the scale of its ``value``: (lower, upper),
    either end possibly infinite; (NaN, NaN) for a criterion without one (structure, worth).

    Example
    -------
    >>> row_region({"criterion": "spread"}), row_region({"criterion": "relations", "note": "r: personas +0.5"})
    ((0.8, 1.25), (-0.15, 0.15))
    """
    criterion = row["criterion"]
    if criterion in ("level", "latent_mean"):
        return -bound, bound
    if criterion == "relations":
        width = RELATION_R if str(row.get("note", "")).startswith("r:") else bound
        return -width, width
    return {"spread": SD_RATIO, "reliability": (-ALPHA_GAP, ALPHA_GAP), "distinguishable": (-math.inf, AUC_MAX),
            "style": (-STYLE_MAX, STYLE_MAX), "individuals": (INDIVIDUALS_MIN, math.inf)}.get(criterion,
                                                                                            (math.nan, math.nan))


def criterion_marks(card: pd.DataFrame) -> pd.DataFrame:
    """One mark per group, instrument and criterion of a scorecard
    (:func:`~psyq.analysis.statistics.standin.equivalence.combine_marks` over its rows: meets when every row
    meets, falls short when any does), with the number of rows of each mark.

    Example
    -------
    >>> card = pd.DataFrame({"group": "m", "instrument": "iri", "criterion": ["level", "level", "spread"],
    ...                      "mark": ["meets", "inconclusive", "meets"]})
    >>> criterion_marks(card)[["criterion", "mark", "rows"]].to_numpy().tolist()
    [['level', 'inconclusive', 2], ['spread', 'meets', 1]]
    """
    out = []
    for (group, inst, criterion), part in card.groupby(["group", "instrument", "criterion"], sort=False):
        counts = part["mark"].value_counts()
        out.append({"group": group, "instrument": inst, "criterion": criterion,
                    "mark": combine_marks(part["mark"]), "rows": len(part),
                    **{m.replace(" ", "_"): int(counts.get(m, 0)) for m in (MEETS, FALLS_SHORT, INCONCLUSIVE,
                                                                             NOT_ESTIMABLE)}})
    return pd.DataFrame(out, columns=["group", "instrument", "criterion", "mark", "rows", "meets", "falls_short",
                                      "inconclusive", "not_estimable"])


def norm_scorecard(comparison: pd.DataFrame, *, bound: float = 0.3) -> pd.DataFrame:
    """The level and spread criteria of :func:`scorecard` from a comparison with published norms
    (:func:`~psyq.analysis.statistics.norms.compare_with_norms`), when no people's answers are at
    hand: per backend, instrument and subscale, the norm group with the largest |g| (a subscale
    meets only when every norm group does, and falls short when any does) and the SD ratio
    furthest from 1. Intervals at 90 %: g's by pingouin from the two n; the SD ratio's from the F
    distribution (normal scores assumed: a norm table gives no kurtosis).

    Example
    -------
    >>> comparison = pd.DataFrame({"backend_id": "m", "instrument": "iri", "subscale": ["PT", "PT"],
    ...     "norm_group": ["women", "men"], "g": [0.1, 0.5], "n": 200, "norm_n": 400,
    ...     "sd": [4.0, 4.0], "norm_sd": [4.5, 4.4]})
    >>> norm_scorecard(comparison)[["criterion", "value", "mark"]]
      criterion     value         mark
    0     level  0.500000  falls short
    1    spread  0.888889        meets
    """
    from scipy import stats

    rows = []
    for (group, inst, sub), part in comparison.groupby(["backend_id", "instrument", "subscale"], sort=False):
        part = part.reset_index(drop=True)
        ci = [pg.compute_esci(stat=r.g, nx=r.n, ny=r.norm_n, eftype="hedges", confidence=CONFIDENCE, decimals=15)
              if pd.notna(r.g) and r.n > 1 and r.norm_n > 1 else (np.nan, np.nan) for r in part.itertuples()]
        if not part["g"].notna().any():
            rows.append(_row(group, inst, "level", sub, note="g not estimable against any norm group"))
        else:
            k = int(part["g"].abs().idxmax())
            mark = combine_marks([interval_mark(low, high, -bound, bound) for low, high in ci])
            rows.append(_row(group, inst, "level", sub, part.loc[k, "g"], *ci[k], mark=mark,
                             level=str(part.loc[k, "norm_group"])))
        usable = part[(part["sd"] > 0) & (part["norm_sd"] > 0)]
        if usable.empty:
            rows.append(_row(group, inst, "spread", sub, note="no SD to compare"))
            continue
        marks, far = [], None
        for r in usable.itertuples():
            ratio = r.sd / r.norm_sd
            tail = (1 - CONFIDENCE) / 2
            low = ratio / math.sqrt(stats.f.ppf(1 - tail, r.n - 1, r.norm_n - 1))
            high = ratio * math.sqrt(stats.f.ppf(1 - tail, r.norm_n - 1, r.n - 1))
            marks.append(interval_mark(low, high, *SD_RATIO))
            if far is None or abs(math.log(ratio)) > abs(math.log(far[0])):
                far = (ratio, low, high)
        rows.append(_row(group, inst, "spread", sub, *far, mark=combine_marks(marks)))
    return allow_for_rows(pd.DataFrame(rows, columns=[*COLUMNS, "_lower", "_upper", "_widen"]))
