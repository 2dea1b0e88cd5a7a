"""Can these personas stand in for people? One row per group of personas (a backend), instrument,
criterion and subscale, each a figure and a mark by a stated cut-off.

:func:`scorecard` gathers what the other statistics compute, personas against people's raw answers
to the same instrument, and marks each figure ``meets``, ``falls short`` or ``not estimable``:

===============  =========  ==============================================  =======================================
criterion        per        figure                                          meets when (source)
===============  =========  ==============================================  =======================================
level            subscale   Hedges' g, personas − people, 95 % CI           the CI lies inside ±`bound` SD
                                                                            (equivalence as in TOST, Lakens 2017;
                                                                            ±0.3 SD: psyq's default bound)
spread           subscale   SD ratio personas / people                      0.80–1.25 (psyq's convention: within a
                                                                            fifth either way on the log scale;
                                                                            stricter than the variance ratio 0.5–2
                                                                            of Rubin 2001)
reliability      subscale   Cronbach's α of the personas (people's beside)  within .10 of the people's α (psyq's
                                                                            convention)
structure        instrument CFI of the configural model; the invariance     scalar invariance, full or partial
                            level reached (``level``)                       (Putnick & Bornstein 2016)
latent_mean      subscale   latent mean d under the (partial) scalar model  the CI lies inside ±`bound`
distinguishable  instrument classifier AUC (:func:`.distinguishability`)    AUC ≤ .60 (psyq's convention: .70 is
                                                                            "acceptable discrimination", Hosmer &
                                                                            Lemeshow 2000)
style            subscale   style shift in scale points                     |style| ≤ 0.20 points and its CI
                            (:func:`.style_and_trait`)                      includes 0 … or |style| ≤ 0.10 (psyq's
                                                                            convention)
relations        instrument share of the people's effects (CI excluding 0)  ≥ .80 (psyq's convention; Bisbee et
                            the personas replicate: their own CI excludes   al. 2024 found 32 % of signs flipped);
                            0 on the same side (:func:`.relations`), of     not estimable when the cohort has power
                            those the cohort has power ≥ .80 to show        ≥ .80 for none
individuals      instrument twin − other twins, mean per-person r of        the CI lies above 0
                            answers (twins only; :func:`.twin_agreement`)
worth            subscale   people each measured person is worth with       ≥ 1.10 (psyq's convention)
                            twins (:func:`.prediction_powered`)
===============  =========  ==============================================  =======================================

Nothing is marked on a figure that could not be estimated: its mark is ``not estimable`` and its
``note`` says why. The cut-offs are module constants (:data:`CUTOFFS`), and docs/comparing.md gives
them with their sources; the report states them in the table's note.

Checked: each figure is the one of the statistic it comes from (tests/test_scorecard.py compares
them); the marks against three stub cohorts built to meet or miss each criterion by design.

Example
-------
300 of the shipped people standing in for 300 others: every mark a person earns:

>>> import warnings; warnings.simplefilter("ignore")       # the shipped file's codebook notice
>>> from psyq import human_data, load_instrument
>>> iri = load_instrument("iri")
>>> people = human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri)
>>> card = scorecard(people.iloc[:600:2], people.iloc[1:600:2], iri, structure=False, permutations=100)
>>> card.query("criterion == 'level'")["mark"].tolist()
['meets', 'meets', 'meets', 'meets']
>>> card.query("criterion in ['distinguishable', 'relations']")[["criterion", "mark"]].to_numpy().tolist()
[['distinguishable', 'meets'], ['relations', 'meets']]

References
----------
Lakens, D. (2017). Equivalence tests. *Social Psychological and Personality Science, 8*,
355–362. Rubin, D. B. (2001). Using propensity scores to help design observational studies.
*Health Services and Outcomes Research Methodology, 2*, 169–188. Putnick, D. L., & Bornstein, M. H.
(2016). Measurement invariance conventions and reporting. *Developmental Review, 41*, 71–90.
Hosmer, D. W., & Lemeshow, S. (2000). *Applied logistic regression* (2nd ed.), p. 162. Bisbee, J.
et al. (2024). Synthetic replacements for human survey data? *Political Analysis*.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import score_wide

from psyq.analysis.statistics.distinguishability import distinguishability
from psyq.analysis.statistics.human_comparison import compare_with_humans
from psyq.analysis.statistics.invariance import level_reached
from psyq.analysis.statistics.invariance.against_people import invariance_against_people
from psyq.analysis.statistics.prediction_powered import people_needed, prediction_powered
from psyq.analysis.statistics.relations import relations
from psyq.analysis.statistics.style_trait import style_and_trait
from psyq.analysis.statistics.twins import match_twins, twin_agreement, twin_summary

MEETS, FALLS_SHORT, NOT_ESTIMABLE = "meets", "falls short", "not estimable"
CRITERIA = ("level", "spread", "reliability", "structure", "latent_mean", "distinguishable", "style", "relations",
            "individuals", "worth")
"""The criteria, in the order of the scorecard's columns."""
CUTOFFS = {
    "level": "95 % CI of g inside ±{bound} SD (equivalence, Lakens 2017; bound: psyq's default)",
    "spread": "SD ratio 0.80–1.25 (psyq's convention; stricter than Rubin's, 2001, variance ratio 0.5–2)",
    "reliability": "α within .10 of the people's (psyq's convention)",
    "structure": "scalar invariance reached, full or partial (Putnick & Bornstein 2016), each step holding by "
                 "Chen's (2007) cut-offs (ΔCFI > −.010, ΔRMSEA < .015, ΔSRMR below the step's; a step on which "
                 "they disagree is not reached); the configural CFI is shown, not judged (an instrument may fit "
                 "people poorly too)",
    "latent_mean": "95 % CI of the latent mean d inside ±{bound}",
    "distinguishable": "classifier AUC ≤ .60 (psyq's convention; .70 is acceptable discrimination, Hosmer & "
                       "Lemeshow 2000)",
    "style": "|style| ≤ 0.20 scale points with its CI including 0, or |style| ≤ 0.10 (psyq's convention)",
    "relations": "≥ 80 % of the people's effects (CI excluding 0) replicated among personas, their CI excluding 0 "
                 "on the same side, counting the effects the cohort has power ≥ .80 to show (psyq's convention; "
                 "Bisbee et al. 2024)",
    "individuals": "twin − other twins (per-person r of answers) with its 95 % CI above 0",
    "worth": "each person measured worth ≥ 1.10 people with twins (psyq's convention)",
}
SD_RATIO = (0.80, 1.25)
ALPHA_GAP = 0.10
AUC_MAX = 0.60
STYLE_MAX, STYLE_SMALL = 0.20, 0.10
SIGN_SHARE = 0.80
RELATION_POWER = 0.80
WORTH_MIN = 1.10
MIN_TWINS = 3
COLUMNS = ["group", "instrument", "criterion", "subscale", "value", "low", "high", "people", "mark", "level", "note"]


def _row(group, instrument, criterion, subscale="", value=np.nan, low=np.nan, high=np.nan, people=np.nan, mark=None,
         level="", note="") -> dict:
    if mark is None or pd.isna(value):
        mark = NOT_ESTIMABLE if pd.isna(value) else mark
    return dict(group=group, instrument=instrument, criterion=criterion, subscale=subscale, value=value, low=low,
                high=high, people=people, mark=mark, level=level, note=note if mark == NOT_ESTIMABLE or note else "")


def _mark(ok: bool) -> str:
    return MEETS if ok else FALLS_SHORT


def _inside(low: float, high: float, bound: float) -> bool:
    return -bound < low and high < bound


def _stopped_at(fit: pd.DataFrame, reached: str) -> str:
    """The step after `reached` (and its partial form) that did not hold or was doubtful, with its changes
    in fit."""
    steps = fit["step"].tolist()
    after = fit.iloc[steps.index(reached) + 1:] if reached in steps else fit.iloc[0:0]
    if len(after):
        stopped = after["step"].iloc[0].removeprefix("partial ")
        after = after[after["step"].str.removeprefix("partial ") == stopped]
    said = [f"{r.step}: not estimable" if not r.estimable else
            f"{r.step}: ΔCFI {r.delta_cfi:+.3f}, ΔRMSEA {r.delta_rmsea:+.3f}, ΔSRMR {r.delta_srmr:+.3f}"
            for r in after.itertuples()]
    return ("not held or doubtful (Chen 2007): " + "; ".join(said)) if said else ""


def _structure_rows(group: str, inst: Instrument, fit: pd.DataFrame | None, bound: float) -> list[dict]:
    def no_means(why: str) -> dict:
        return _row(group, inst.id, "latent_mean", note=f"latent means need scalar invariance; {why}")
    if fit is None:
        return [_row(group, inst.id, "structure", note="not fitted"), no_means("structure not fitted")]
    first = fit[fit["step"] == "configural"]
    cfi_column = fit.attrs.get("deciding", ("cfi", "rmsea"))[0]
    if first.empty or not bool(first["estimable"].iloc[0]):
        why = str(first["note"].iloc[0]) if len(first) else fit.attrs.get("problem") or "no configural model"
        return [_row(group, inst.id, "structure", note=why.removeprefix("not estimable: ")),
                no_means("the configural model is not estimable")]
    # Whether personas and people differ, not whether the model fits either: an instrument may fit
    # people poorly too (the IRI's four factors: CFI about .82 among the 1,973 people, WLSMV).
    reached = level_reached(fit, require_fit=False)
    fallback = fit.attrs.get("fallback")
    said = [f"fitted as continuous (ML): the ordinal fit was not estimable ({fallback})" if fallback else "",
            _stopped_at(fit, reached)]
    rows = [_row(group, inst.id, "structure", value=float(first[cfi_column].iloc[0]), level=reached,
                 mark=_mark(reached.endswith("scalar")), note="; ".join(p for p in said if p))]
    means = fit.attrs.get("latent_means")
    if reached.endswith("scalar") and means is not None and len(means):
        for m in means.itertuples():
            rows.append(_row(group, inst.id, "latent_mean", m.factor, m.d, m.d_ci_low, m.d_ci_high,
                             mark=_mark(_inside(m.d_ci_low, m.d_ci_high, bound)), level=reached))
    else:
        rows.append(_row(group, inst.id, "latent_mean", note=f"latent means need scalar invariance; reached: {reached}"))
    return rows


def _relation_rows(group: str, inst: Instrument, cohort: pd.DataFrame, people: pd.DataFrame,
                   attributes: list[str]) -> list[dict]:
    subscales = [s.id for s in inst.rating_subscales]
    cohort_scores = score_wide(inst, cohort).join(cohort[[a for a in attributes if a in cohort.columns]])
    people_scores = score_wide(inst, people).join(people[[a for a in attributes if a in people.columns]])
    shared = [a for a in attributes if a in cohort.columns and a in people.columns]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = relations(cohort_scores, people_scores, shared, subscales=subscales)
    # `replicated` is defined where the people's CI excludes 0: does the cohort's CI exclude 0 on that side?
    # Only effects the cohort is large enough to show (power ≥ .80 against the people's effect) are
    # counted: a small cohort that shows none of them has not failed to reproduce them.
    established = frame[frame["replicated"].notna()]
    if established.empty:
        return [_row(group, inst.id, "relations", note="no effect among people with a CI excluding 0 to replicate")]
    found = established[established["power"] >= RELATION_POWER]
    if found.empty:
        return [_row(group, inst.id, "relations",
                     note=f"the cohort is too small to show any of the people's {len(established)} effects (power "
                          f"< {RELATION_POWER:.2f} for each; at most {established['power'].max():.2f})")]
    share = float(found["replicated"].astype(bool).mean())
    worst = frame.loc[frame["difference"].abs().idxmax()] if frame["difference"].notna().any() else None
    said = "" if worst is None else (f"largest difference {worst['attribute']}–{worst['subscale']}: "
                                     f"{worst['difference']:+.2f}")
    return [_row(group, inst.id, "relations", value=share, people=float(len(found)), mark=_mark(share >= SIGN_SHARE),
                 note=said)]


def _twin_rows(group: str, inst: Instrument, cohort: pd.DataFrame, people: pd.DataFrame) -> list[dict]:
    match = match_twins(cohort.index, people.index)
    if len(match.matched) < MIN_TWINS:
        return []
    ids = pd.Index(match.matched)
    twins = cohort.set_axis(cohort.index.astype(str).str.strip()).loc[ids]
    persons = people.set_axis(people.index.astype(str).str.strip()).loc[ids]
    rows = []
    summary = twin_summary(twin_agreement(twins, persons, inst))
    diff = summary[(summary["metric"] == "r") & (summary["comparison"] == "twin_minus_others")]
    if diff.empty or pd.isna(diff["mean"].iloc[0]):
        rows.append(_row(group, inst.id, "individuals", note=diff["note"].iloc[0] if len(diff) else "no twin r"))
    else:
        d = diff.iloc[0]
        rows.append(_row(group, inst.id, "individuals", value=d["mean"], low=d["ci_low"], high=d["ci_high"],
                         people=float(d["n"]), mark=_mark(d["ci_low"] > 0)))
    others = cohort.set_axis(cohort.index.astype(str).str.strip())
    others = others.loc[~others.index.isin(persons.index)]
    y, f = score_wide(inst, persons), score_wide(inst, twins)
    if len(others):          # twins whose people are not used: PPI's effective number of people
        ppi = prediction_powered(y, f, score_wide(inst, others))
        for r in ppi[ppi["quantity"] == "mean"].itertuples():
            ratio = r.effective_n / r.n if r.n else np.nan
            rows.append(_row(group, inst.id, "worth", r.subscale, ratio, people=float(r.n),
                             mark=_mark(ratio >= WORTH_MIN), note=r.note or f"PPI++ with {r.N} twins without their people"))
    else:                    # every twin's person is measured: what one person is worth with unlimited twins
        width = {}
        for sub in y.columns:
            sd = y[sub].std(ddof=1)
            width[sub] = 2 * 1.959963984540054 * sd / np.sqrt(y[sub].notna().sum())
        for sub, w in width.items():
            need = people_needed(y[[sub]], f[[sub]], w)
            n = int(y[sub].notna().sum())
            value = n / float(need["people_needed"].iloc[0]) if need["people_needed"].notna().iloc[0] else np.nan
            rows.append(_row(group, inst.id, "worth", sub, value, people=float(n),
                             mark=_mark(value >= WORTH_MIN) if pd.notna(value) else None,
                             note=need["note"].iloc[0] or "people needed with unlimited twins for the CI these people "
                                                          "give alone"))
    return rows


def scorecard(cohort_items: pd.DataFrame, human_items: pd.DataFrame, instrument: Instrument, *,
              by: str | None = "backend_id", bound: float = 0.3,
              structure: bool | Mapping[str, pd.DataFrame] = True, attributes: list[str] | None = None,
              permutations: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Personas against people on every criterion, one row per group × criterion × subscale.

    Parameters
    ----------
    cohort_items, human_items : pandas.DataFrame
        Raw answers (reverse items not reversed), one column per item id, indexed by respondent;
        other columns are attributes. Personas whose id is a respondent id of the people are
        their twins (:func:`~psyq.analysis.statistics.twins.match_twins`): the criteria
        ``individuals`` and ``worth`` are computed for them.
    instrument : Instrument
    by : str or None
        The column of `cohort_items` whose levels are the groups (a backend each); absent or None:
        one group, "cohort".
    bound : float
        The equivalence bound in SD units (level, latent means).
    structure : bool or mapping
        True: fit the invariance sequence per group; False: leave structure out (not estimable,
        "not fitted"); a mapping group → a :func:`measurement_invariance` frame already fitted.
    attributes : list of str, optional
        Attribute columns for ``relations`` (default: every non-item column both frames share but `by`).
    permutations, seed
        Passed to :func:`~psyq.analysis.statistics.distinguishability.distinguishability`.

    Returns
    -------
    pandas.DataFrame
        ``group, instrument, criterion, subscale, value, low, high, people, mark, level, note``;
        ``people`` holds the people's figure beside the value where there is one (α), or how many
        effects or persons a figure rests on; ``level`` the invariance level reached.
    """
    items = [i.id for i in instrument.rating_items]
    cohort = cohort_items.copy()
    if not by or by not in cohort.columns:
        by = "_group"
        cohort[by] = "cohort"
    if attributes is None:
        attributes = [c for c in cohort.columns if c in human_items.columns and c not in items and c != by]
    subs = [s.id for s in instrument.rating_subscales]
    rows: list[dict] = []
    auc = distinguishability(cohort, human_items, instrument, by=by, permutations=permutations, seed=seed)
    for group, part in cohort.groupby(by, sort=False):
        part = part.drop(columns=[by])
        cmp = compare_with_humans({instrument.id: part}, {instrument.id: human_items}, {instrument.id: instrument})
        for r in cmp.itertuples():
            note = r.note or ""
            rows.append(_row(group, instrument.id, "level", r.subscale, r.g, r.g_low, r.g_high,
                             mark=_mark(_inside(r.g_low, r.g_high, bound)), note=note))
            ratio = np.sqrt(r.variance_ratio) if pd.notna(r.variance_ratio) else np.nan
            rows.append(_row(group, instrument.id, "spread", r.subscale, ratio,
                             mark=_mark(SD_RATIO[0] <= ratio <= SD_RATIO[1]), note=note))
            rows.append(_row(group, instrument.id, "reliability", r.subscale, r.alpha_cohort, people=r.alpha_human,
                             mark=_mark(abs(r.alpha_cohort - r.alpha_human) <= ALPHA_GAP), note=note))
        if structure is False:
            rows.extend(_structure_rows(group, instrument, None, bound))
        else:
            given = structure.get(group) if isinstance(structure, Mapping) else None
            fit = given if given is not None else invariance_against_people(instrument, part, human_items)
            rows.extend(_structure_rows(group, instrument, fit, bound))
        a = auc[auc[by] == group].iloc[0]
        rows.append(_row(group, instrument.id, "distinguishable", value=a["auc"], low=a["auc_low"], high=a["auc_high"],
                         mark=_mark(a["auc"] <= AUC_MAX), note=a.get("note") or ""))
        st = style_and_trait(part, human_items, instrument)
        for r in st.itertuples():
            small = abs(r.style) <= STYLE_SMALL or (abs(r.style) <= STYLE_MAX and r.style_low <= 0 <= r.style_high)
            rows.append(_row(group, instrument.id, "style", r.subscale, r.style, r.style_low, r.style_high,
                             people=getattr(r, "style_abs_share", np.nan), mark=_mark(small), note=r.note or ""))
        rows.extend(_relation_rows(group, instrument, part, human_items, attributes))
        rows.extend(_twin_rows(group, instrument, part[items], human_items[items]))
    out = pd.DataFrame(rows, columns=COLUMNS)
    order = {c: k for k, c in enumerate(CRITERIA)}
    sub_order = {s: k for k, s in enumerate(["", *subs])}
    out = out.assign(_c=out["criterion"].map(order), _s=out["subscale"].map(sub_order).fillna(len(subs) + 1))
    groups = {g: k for k, g in enumerate(cohort[by].drop_duplicates())}
    out = out.assign(_g=out["group"].map(groups)).sort_values(["_g", "_c", "_s"], kind="stable")
    return out.drop(columns=["_c", "_s", "_g"]).reset_index(drop=True)


def norm_scorecard(comparison: pd.DataFrame, *, bound: float = 0.3) -> pd.DataFrame:
    """The level and spread criteria of :func:`scorecard` from a comparison with published norms
    (:func:`~psyq.analysis.statistics.norms.compare_with_norms`), when no people's answers are at
    hand: per backend, instrument and subscale, the norm group with the largest |g| (a subscale
    meets only when every norm group does) and the SD ratio furthest from 1.

    Example
    -------
    >>> comparison = pd.DataFrame({"backend_id": "m", "instrument": "iri", "subscale": ["PT", "PT"],
    ...     "norm_group": ["women", "men"], "g": [0.1, 0.5], "g_low": [-0.1, 0.3], "g_high": [0.3, 0.7],
    ...     "sd": [4.0, 4.0], "norm_sd": [4.5, 4.4]})
    >>> norm_scorecard(comparison)[["criterion", "value", "mark"]]
      criterion     value         mark
    0     level  0.500000  falls short
    1    spread  0.888889        meets
    """
    rows = []
    for (group, inst, sub), part in comparison.groupby(["backend_id", "instrument", "subscale"], sort=False):
        worst = part.loc[part["g"].abs().idxmax()] if part["g"].notna().any() else None
        if worst is None:
            rows.append(_row(group, inst, "level", sub, note="g not estimable against any norm group"))
        else:
            ok = all(_inside(r.g_low, r.g_high, bound) for r in part.itertuples())
            rows.append(_row(group, inst, "level", sub, worst["g"], worst["g_low"], worst["g_high"], mark=_mark(ok),
                             level=str(worst["norm_group"])))
        ratios = (part["sd"] / part["norm_sd"]).dropna()
        if ratios.empty:
            rows.append(_row(group, inst, "spread", sub, note="no SD to compare"))
        else:
            far = ratios.loc[np.log(ratios).abs().idxmax()]
            ok = bool(ratios.between(*SD_RATIO).all())
            rows.append(_row(group, inst, "spread", sub, float(far), mark=_mark(ok)))
    return pd.DataFrame(rows, columns=COLUMNS)
