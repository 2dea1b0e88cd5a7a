"""The report section "Is it the same construct?": a cohort against people, item by item and model by model.

For every rating instrument given with human item answers it fits, on the instrument's
first-order subscales (composite/total subscales left out, reverse items keyed first):

* the measurement-invariance sequence configural → metric → scalar of a two-group confirmatory
  factor model, personas against people (:func:`psyq.analysis.statistics.invariance.measurement_invariance`),
  with one plain sentence per step (:func:`psyq.analysis.report.readings.invariance_verdicts`);
* a graded response model per subscale in each sample
  (:func:`psyq.analysis.statistics.irt.graded_response_model`), side by side, with both samples' test
  information curves in one plot;
* differential item functioning per item between the samples
  (:func:`psyq.analysis.statistics.dif.differential_item_functioning`).

Whatever cannot be estimated (too few personas, an item nobody varied on, a model that does not
converge) is a reading "not estimable: reason", never a number; a table that would hold no
estimated value (or the rows of a sample whose model was not estimable) is left out.

Example:
    >>> section = construct_section({"iri": (iri, cohort_items, human_items)})   # fits IRT and DIF: seconds  # doctest: +SKIP
    >>> section.title                                                          # fits IRT and DIF: seconds  # doctest: +SKIP
    'Is it the same construct?'
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import Instrument

from psyq.analysis.report import plots
from psyq.analysis.report.apa import fmt_num
from psyq.analysis.statistics.invariance.against_people import (PEOPLE, PERSONAS, SAMPLE, factor_structure,
                                                                 invariance_against_people, keyed_samples)
from psyq.analysis.report.readings import invariance_verdicts
from psyq.analysis.statistics.dif import differential_item_functioning
from psyq.analysis.statistics.irt import graded_response_model, test_information
from psyq.analysis.report.context import ReportContext, estimator_choice
from psyq.analysis.report.section import ReportSection, Section

TITLE = "Is it the same construct?"
THETA = np.linspace(-4, 4, 81)

METHODS = ("Measurement invariance between personas and people was examined by two-group confirmatory factor "
           "analysis (items on their first-order subscales, reverse items keyed), fitted with psyq's multi-group "
           "estimators on NumPy/SciPy, which reproduce lavaan 0.6.14 and semTools 0.5.6 to three decimals "
           "(tests/data/lavaan). Items with seven answer categories or fewer were treated as ordinal: WLSMV "
           "(diagonally weighted least squares on thresholds and polychoric correlations, mean- and "
           "variance-adjusted χ², delta parameterisation) through the steps of Wu and Estabrook (2016): "
           "configural, equal thresholds, equal thresholds and loadings, and equal intercepts; otherwise maximum "
           "likelihood with the items continuous (configural, metric, scalar); the estimator of each instrument "
           "is named in its table. Decisions followed Chen (2007), on the estimator's own indices: ΔCFI ≤ −.010 with "
           "ΔRMSEA ≥ .015 or ΔSRMR ≥ .030 (loadings) / .010 (thresholds, intercepts) signals non-invariance. When a "
           "step failed, its equality constraints were released one at a time by the largest univariate score test "
           "(lavaan's lavTestScore), only when significant at .05 and while at least half of a factor's items kept "
           "the equality, until the step held (partial invariance); latent means were then compared under the "
           "(partial) scalar model. Each subscale was fitted with Samejima's graded response model "
           "in each sample (marginal maximum likelihood, psyq.analysis.statistics.irt), and differential item functioning "
           "was tested by ordinal logistic regression on the purified total score (Swaminathan & Rogers, 1990; Zumbo, "
           "1999; French & Maller, 2007), Holm-corrected, flagged when Nagelkerke ΔR² ≥ .035 (Jodoin & Gierl, 2001).")


def _grm_side_by_side(fits: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per item and sample (items in the fitted order, the samples of each item together):
    discrimination and thresholds with their SEs."""
    table = pd.concat([f.assign(**{SAMPLE: label}) for label, f in fits.items()], ignore_index=True)
    first = table.groupby("item", sort=False).ngroup()     # items in the order they were fitted
    table = table.assign(_order=first).sort_values("_order", kind="stable").drop(columns="_order")
    front = ["subscale", "item", SAMPLE]
    return table[front + [c for c in table.columns if c not in front]].reset_index(drop=True)


def construct_section(pairs: Mapping[str, tuple[Instrument, pd.DataFrame, pd.DataFrame]],
                      estimator: str | None = None, fits: dict[str, pd.DataFrame] | None = None) -> Section:
    """The section for every instrument id -> (instrument, cohort's raw answers, humans' raw answers).

    Answers are raw (as answered: reverse items not yet reversed), one row per respondent, one
    column per item id; other columns are ignored. `estimator` overrides the choice of
    :func:`~psyq.analysis.statistics.invariance.against_people.default_estimator`; `fits`, when given, receives each instrument's invariance frame
    (the verdict reads them rather than fit them again).
    """
    section = Section(TITLE, methods=METHODS)
    section.readings.append(
        "Do the items measure the same thing in personas and in people? Loadings equal (metric invariance) "
        "mean the subscales are made of the same item weights; intercepts equal (scalar invariance) are "
        "needed before cohort and human means can be compared. Likert items of seven categories or fewer are "
        "analysed as ordinal (WLSMV, as lavaan's ordered= and Mplus' default), where thresholds come first: "
        "equal thresholds mean the samples use the answer categories alike.")
    chen = ("Chen (2007): a drop in CFI of .010 or more (ΔCFI ≤ −.010) together with a rise in RMSEA of "
            ".015 or more (ΔRMSEA ≥ .015) or in SRMR of .030 or more for loadings (.010 for intercepts) "
            "signals that the added equality constraints do not hold. "
            "Δχ² is the likelihood-ratio test of the nested models; with hundreds of respondents it rejects "
            "small differences.")
    for inst_id, (instrument, cohort, humans) in pairs.items():
        factors, problem = factor_structure(instrument)
        data = keyed_samples(instrument, cohort, humans).astype({SAMPLE: str})     # for the GRM and DIF
        if problem:
            section.readings.append(f"{inst_id}: measurement invariance and IRT not estimable: {problem}.")
            continue
        mi = invariance_against_people(instrument, cohort, humans, estimator=estimator, factors=factors)
        if mi.attrs["fallback"]:
            section.readings.append(f"{inst_id}: the ordinal fit (WLSMV) is not estimable ({mi.attrs['fallback']}); "
                                    "the items were fitted as continuous (ML) instead, which a scale with few used "
                                    "categories strains.")
        if fits is not None:
            fits[inst_id] = mi
        if mi["estimable"].any():       # a table of dashes says nothing the reading below does not
            section.note = chen             # how to read the steps' fit indices
            section.add_table(f"Measurement invariance, personas against people: {inst_id} "
                              f"({', '.join(factors)}; estimator {mi.attrs['estimator']})", mi, view="invariance_steps")
        sizes = mi.attrs.get("group_sizes", {})
        shares = mi.attrs.get("group_chi2", {}).get("configural", {})
        if sizes:
            section.readings.append(
                f"{inst_id}: {' and '.join(f'{n:,} {label}' for label, n in sizes.items())} with every item answered"
                + (" (of the configural χ², "
                   + " and ".join(f"{label} {fmt_num(chi2, 1)}" for label, chi2 in shares.items())
                   + ": how far each sample is from the factor model)" if shares else "") + ".")
        verdicts = invariance_verdicts(mi)
        reasons = {v.split(": not estimable: ", 1)[-1] for v in verdicts}
        if not mi["estimable"].any() and len(reasons) == 1:      # one reason for every step: say it once
            section.readings.append(f"{inst_id}: measurement invariance not estimable: {reasons.pop()}.")
        else:
            section.readings.extend(f"{inst_id} {v}." for v in verdicts)
            section.readings.extend(_who_moved(inst_id, mi))
            if mi["estimable"].all() and not mi["step"].str.startswith("partial").any():
                section.readings.append(f"{inst_id}: no equality was released: no step failed by Chen's rule (score "
                                        "tests are run for a step that fails, to find what differs).")
            section.readings.extend(_latent_mean_readings(inst_id, mi))
            means = mi.attrs.get("latent_means")
            if means is not None and len(means):
                section.add_table(f"Latent means, personas against people: {inst_id} (estimator "
                                  f"{mi.attrs['estimator']})", means, view="latent_means")

        levels = [o.value for o in instrument.scale]
        grm_fits: dict[str, list[pd.DataFrame]] = {PERSONAS: [], PEOPLE: []}
        unfitted: dict[str, dict[str, str]] = {PERSONAS: {}, PEOPLE: {}}     # sample -> subscale -> why
        curves, dif_frames = [], []
        for sub, items in factors.items():
            for label in (PERSONAS, PEOPLE):
                fit = graded_response_model(data[data[SAMPLE] == label], items, levels)
                fit.insert(0, "subscale", sub)
                grm_fits[label].append(fit)
                if fit["estimable"].all():
                    info = test_information(fit, THETA).query("item == 'test'").drop(columns="item")
                    info["subscale"], info["group"] = sub, label
                    curves.append(info)
                else:
                    unfitted[label][sub] = _reason(fit)
            dif = differential_item_functioning(data, items, SAMPLE, levels, focal=PERSONAS, reference=PEOPLE)
            dif.insert(0, "subscale", sub)
            dif_frames.append(dif)
        section.readings.extend(_unfitted_readings(inst_id, unfitted, list(factors)))
        grm = _grm_side_by_side({k: pd.concat(v, ignore_index=True) for k, v in grm_fits.items()})
        section.readings.extend(_against_the_subscale(inst_id, grm))
        # A subscale × sample with no estimable parameter is a row of dashes per item: its reason is a
        # reading above, and the table keeps what was estimated.
        fitted = grm.groupby(["subscale", SAMPLE], sort=False)["estimable"].transform("any")
        shown = grm[fitted].reset_index(drop=True)
        samples = _samples_text(shown[SAMPLE].unique())
        if len(shown):
            section.add_table(f"Graded response model per subscale: {inst_id}, {samples} (discrimination a, "
                              "thresholds b; standard errors)", shown, view="graded_response")
        if curves:
            drawn = _samples_text(pd.concat(curves)["group"].unique())
            section.figures.append((f"Test information per subscale: {inst_id}, {drawn}",
                                    plots.information_curves(pd.concat(curves, ignore_index=True),
                                                             f"{inst_id}: test information")))
        dif = pd.concat(dif_frames, ignore_index=True)
        if dif["estimable"].any():
            section.add_table(f"Differential item functioning, personas against people: {inst_id} (ordinal "
                              "logistic regression on the matching score; Holm-corrected)", dif,
                              view="item_functioning")
        section.readings.append(_dif_reading(inst_id, dif))
    return section


def _latent_mean_readings(inst_id: str, mi: pd.DataFrame) -> list[str]:
    """The substantive answer: each factor's latent mean difference on the common scale, or why there is none."""
    means = mi.attrs.get("latent_means")
    if means is None or not len(means):
        if "scalar" in set(mi["step"]) and mi["estimable"].any():
            return [f"{inst_id}: latent means are not compared: scalar invariance does not hold, even partially, "
                    "so the samples' scores are not on one scale."]
        return []
    verdicts = dict(zip(mi["step"], invariance_verdicts(mi)))
    caveats = []
    if verdicts.get("configural", "").startswith("configural: the factor model fits poorly"):
        caveats.append("the configural model fits poorly")
    if "doubtful" in verdicts.get(means["step"].iloc[0], ""):
        caveats.append("equality of the intercepts is doubtful")
    caveat = f" Read them with care: {' and '.join(caveats)}." if caveats else ""
    out = []
    for row in means.itertuples():
        direction = "below" if row.estimate < 0 else "above"
        released = mi.loc[mi["step"] == row.step, "released"]
        under = f"{row.step} invariance" + (f", {released.iloc[0]} free" if len(released) and released.iloc[0] else "")
        out.append(f"{inst_id} {row.factor}: the latent mean of the {row.group} is d = {fmt_num(row.d)} "
                   f"[{fmt_num(row.d_ci_low)}, {fmt_num(row.d_ci_high)}] SD {direction} that of the {row.reference}, "
                   f"on the same scale ({under}).")
    if out:
        out[-1] += caveat
    return out


def _samples_text(samples) -> str:
    """"personas and people", "people only" …: which samples a table or figure holds."""
    present = [s for s in (PERSONAS, PEOPLE) if s in set(samples)]
    return " and ".join(present) if len(present) > 1 else f"{present[0]} only" if present else "no sample"


def _unfitted_readings(inst_id: str, unfitted: Mapping[str, Mapping[str, str]], subscales: list[str]) -> list[str]:
    """Why the graded response model of a sample was not estimable: one sentence per sample when no
    subscale could be fitted for the same reason, else one per subscale."""
    out = []
    for label, why in unfitted.items():
        if len(why) == len(subscales) and len(set(why.values())) == 1:
            out.append(f"{inst_id}: graded response model of the {label} not estimable in any subscale "
                       f"({', '.join(subscales)}): {next(iter(why.values()))}.")
        else:
            out.extend(f"{inst_id} {sub}: graded response model of the {label} not estimable: {reason}."
                       for sub, reason in why.items())
    return out


def _who_moved(inst_id: str, mi: pd.DataFrame) -> list[str]:
    """Which sample's fit worsened at each equality step (its part of Δχ²), and, for groups of very
    different sizes, why a small change in fit is weak evidence of equality."""
    out = []
    by_step = mi.attrs.get("group_chi2", {})
    steps = list(mi["step"])
    for before, after in zip(steps, steps[1:]):
        if before in by_step and after in by_step:
            parts = {g: by_step[after][g] - by_step[before][g] for g in by_step[after]}
            out.append(f"{inst_id} {after}: of Δχ² = {fmt_num(sum(parts.values()), 1)}, "
                       + " and ".join(f"{g} {fmt_num(d, 1)}" for g, d in parts.items())
                       + " (the sample whose share is larger is the one the equal parameters fit worse).")
    sizes = list(mi.attrs.get("group_sizes", {}).values())
    if len(sizes) == 2 and min(sizes) > 0 and max(sizes) / min(sizes) > 2:
        out.append(f"{inst_id}: the samples differ in size ({min(sizes):,} and {max(sizes):,}); the fit indices are "
                   "dominated by the larger one, and changes in fit are smaller when groups are unequal (Chen, "
                   "2007), so a change below the cut-offs is weaker evidence of equality than it would be with equal "
                   "groups: read the Δχ² shares above and the item parameters below.")
    return out


def _against_the_subscale(inst_id: str, grm: pd.DataFrame) -> list[str]:
    """Items whose discrimination is credibly negative in a sample: once keyed they run against the
    rest of their subscale (e.g. a reverse-worded item answered like a forward one)."""
    fitted = grm[grm["estimable"] & (grm["discrimination"] + 1.96 * grm["se_discrimination"] < 0)]
    out = []
    for label, rows in fitted.groupby(SAMPLE, sort=False):
        items = ", ".join(f"{r.item} ({r.subscale}, a = {fmt_num(r.discrimination)})" for r in rows.itertuples())
        out.append(f"{inst_id}: {len(rows)} item(s) discriminate negatively among the {label} (95 % CI below 0): "
                   f"{items}; once keyed they run against their subscale, as when a reverse-worded item is answered "
                   "like a forward one.")
    return out


def _reason(fit: pd.DataFrame) -> str:
    """Why a fitted frame has rows that are not estimable: the "not estimable: …" part of the first
    such row's note (its other parts, such as unused categories, stay in the table)."""
    notes = fit.loc[~fit["estimable"], "note"]
    note = str(notes.iloc[0] if len(notes) else fit["note"].iloc[0])
    parts = [p.removeprefix("not estimable: ") for p in note.split("; ") if p.startswith("not estimable: ")]
    return "; ".join(parts) or note


def _dif_reading(inst_id: str, dif: pd.DataFrame) -> str:
    """One sentence: which items work differently, or why that could not be tested."""
    estimable = dif[dif["estimable"]]
    if estimable.empty:
        return f"{inst_id}: differential item functioning not estimable: {_reason(dif)}."
    flagged = estimable[estimable["flag"]]
    untested = dif[~dif["estimable"]]
    text = (f"{inst_id}: {len(flagged)} of {len(estimable)} tested items work differently for personas than for "
            "people at the same trait level" + (": " + ", ".join(f"item {r.item} ({r.subscale}, {r.effect} effect)"
                                                               for r in flagged.itertuples()) if len(flagged) else ""))
    if len(untested):
        text += f"; {len(untested)} item(s) could not be tested ({_reason(untested)})"
    return text + "."


class SameConstructSection(ReportSection):
    """"Is it the same construct?": measurement invariance, the graded response model and DIF of the
    cohort against the people's item answers, per rating instrument with people's data."""

    name = "same_construct"

    def applies(self, report: ReportContext) -> bool:
        return not report.staged and bool(report.cohort_answers)

    def sections(self, report: ReportContext) -> list[Section]:
        fits: dict[str, pd.DataFrame] = {}
        section = construct_section({i: (report.rated[i], cohort, report.human_items[i])
                                     for i, cohort in report.cohort_answers.items()},
                                    estimator_choice(report.run_path, report.estimator), fits)
        report.invariance_fits.update({(i, report.first_backend): mi for i, mi in fits.items()})
        return [section]
