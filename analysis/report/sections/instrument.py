"""How the instrument behaved in the cohort: reliability, LLM-fidelity diagnostics, model and
persona effects, and the item responses."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import pandas as pd

from psyq.analysis.report import apa, plots, views
from psyq.analysis.report.apa import say_pct
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.statistics import effects, reliability
from psyq.analysis.statistics.standin import fidelity


class ReliabilitySection(ReportSection):
    """"Reliability": Cronbach's α with its CI and McDonald's ω per subscale (keyed items, first
    repeat); with repeats, test–retest ICCs."""

    name = "reliability"

    def sections(self, report: ReportContext) -> list[Section]:
        rated, scores, table = report.rated, report.scores, report.table
        rel = Section("Reliability")
        rel_table = reliability.reliability_table(report.items, rated) if rated else pd.DataFrame()
        if rated:
            rel.add_table("Internal consistency (keyed items, first repeat)", rel_table, view="internal_consistency")
        for row in rel_table.itertuples():
            if isinstance(row.alpha, float) and not math.isnan(row.alpha):
                omega = (f"ω = {apa.fmt_r(row.omega)}" if isinstance(row.omega, float) and not math.isnan(row.omega)
                         else f"ω not estimable{': ' + row.note.split(': ', 1)[-1] if row.note else ''}")
                remark = views.alpha_remark(row.alpha)
                rel.readings.append(f"{row.instrument} {row.subscale}: Cronbach's α = {apa.fmt_r(row.alpha)} "
                                    f"(95 % CI {apa.fmt_r(row.alpha_low)} to {apa.fmt_r(row.alpha_high)}), {omega}"
                                    + (f"; {remark}." if remark else "."))
            else:
                rel.readings.append(f"{row.instrument} {row.subscale}: {row.note or 'α not estimable'}.")
        if table["repeat"].nunique() > 1 and not scores.empty:
            for (b, inst, sub), rows in scores.groupby(["backend_id", "instrument", "subscale"]):
                icc = reliability.test_retest_icc(rows[["respondent_id", "repeat", "score"]].dropna())
                icc.insert(0, "subscale", sub)
                icc.insert(0, "instrument", inst)
                rel.add_table(f"Test–retest ICC, {b} {inst} {sub}", icc, view="retest_icc")
                if not icc["estimable"].all():
                    rel.readings.append(f"Test–retest ICC, {b} {inst} {sub}: not estimable — {icc['note'].iloc[0]}.")
        return [rel] if rel.tables else []


FIDELITY_CAPTIONS = {"sd_ratio": "SD of the cohort relative to the norm", "straightlining": "Straight-lining",
                     "acquiescence": "Acquiescence", "response_styles": "Response styles",
                     "missingness": "Missing answers", "option_order_effect": "Option order effect",
                     "item_order_effect": "Item order effect", "answer_entropy": "Answer entropy"}
"""The caption of each table of :func:`psyq.analysis.statistics.standin.fidelity.fidelity_summary`, by its key."""
FIDELITY_VIEWS = {"sd_ratio": "sd_ratio", "missingness": "answers_by_status"}
"""The view of those tables that have one of their own (:data:`psyq.analysis.report.views.VIEWS`); the
others are printed by the plain view."""


def fidelity_readings(diag: Mapping[str, pd.DataFrame]) -> list[str]:
    """One plain sentence per diagnostic of :func:`psyq.analysis.statistics.standin.fidelity.fidelity_summary`
    that has something to say.

    Example:
        >>> frame = pd.DataFrame({"backend_id": ["b"], "instrument": ["iri"], "share": [0.25]})
        >>> fidelity_readings({"straightlining": frame})
        ['Straight-lining (b, iri): 25 % of respondent sets gave the same answer to every item.']
    """
    out = []
    frame = diag.get("sd_ratio")
    if frame is not None and not frame.empty:
        collapsed = frame[frame["collapsed"]]
        out.append(f"Variance: {len(collapsed)} of {len(frame)} subscale × group comparisons show a collapsed "
                   "spread (cohort SD less than half the norm's, CI excluded 0.5)." if len(collapsed) else
                   "Variance: no subscale's spread is collapsed below half the norm's SD.")
    frame = diag.get("straightlining")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            out.append(f"Straight-lining ({row.backend_id}, {row.instrument}): {say_pct(row.share)} of respondent "
                       f"sets gave the same answer to every item.")
    frame = diag.get("acquiescence")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            out.append(f"Acquiescence ({row.backend_id}, {row.instrument}): with forward and reversed items "
                       f"weighted equally, raw answers sit {apa.fmt_signed(row.balanced)} scale points from the "
                       f"midpoint (95 % CI {apa.fmt_signed(row.balanced_ci_low)} to "
                       f"{apa.fmt_signed(row.balanced_ci_high)}); positive = agreeing regardless of content, "
                       "negative = disagreeing.")
    frame = diag.get("response_styles")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            mid = "" if pd.isna(row.midpoint) else f", {say_pct(row.midpoint)} at the midpoint"
            out.append(f"Response style ({row.backend_id}, {row.instrument}): {say_pct(row.extreme)} of answers at "
                       f"an end point of the scale{mid}.")
    frame = diag.get("option_order_effect")
    if frame is not None and not frame.empty:
        for row in frame[frame["answer"] == "keyed"].itertuples():
            out.append(f"Option order ({row.backend_id}, {row.instrument}): keyed answers differ by "
                       f"{apa.fmt_signed(row.difference)} points between options as written and reversed "
                       f"(95 % CI {apa.fmt_signed(row.ci_low)} to {apa.fmt_signed(row.ci_high)}); a CI excluding 0 "
                       "means the answers depend on where an option stands, not only on what it says.")
    frame = diag.get("answer_entropy")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            out.append(f"Answer certainty ({row.backend_id}, {row.instrument}): mean option entropy "
                       f"{row.entropy_bits:.2f} bits; the model put {say_pct(row.option_mass)} of its probability on "
                       f"valid options before renormalising.")
    return out


class FidelitySection(ReportSection):
    """"LLM-fidelity diagnostics": spread against the norm, straight-lining, acquiescence, response
    styles, missing answers, option and item order effects, answer entropy."""

    name = "fidelity"

    def sections(self, report: ReportContext) -> list[Section]:
        if not report.rated:
            return []
        fid = Section("LLM-fidelity diagnostics")
        comp = report.norm_comparison
        diag = fidelity.fidelity_summary(report.rated_table, report.rated, comp if not comp.empty else None)
        for name, frame in diag.items():
            if frame is not None and not frame.empty:
                fid.add_table(FIDELITY_CAPTIONS.get(name, name.replace("_", " ").capitalize()), frame,
                              view=FIDELITY_VIEWS.get(name, views.PLAIN))
        fid.readings.extend(fidelity_readings(diag))
        if "sd_ratio" in diag and diag["sd_ratio"] is not None and not diag["sd_ratio"].empty:
            fid.figures.append(("SD of the cohort relative to the norm (1 = human-like spread)",
                                plots.sd_ratio_chart(diag["sd_ratio"])))
        return [fid]


class EffectsSection(ReportSection):
    """"Model and persona effects": a regression of subscale scores on backend and persona
    attributes (random intercept per respondent with repeats)."""

    name = "effects"

    def applies(self, report: ReportContext) -> bool:
        return not report.staged and not report.scores.empty

    def sections(self, report: ReportContext) -> list[Section]:
        scores = report.scores
        eff = Section("Model and persona effects")
        # A regression on a small cohort cannot carry every attribute: keep numeric ones and
        # categorical ones with at most 3 levels, and say which were left out.
        varying = [c for c in report.attributes if scores[c].notna().sum() > 2 and scores[c].nunique() > 1]
        predictors = [c for c in varying if pd.api.types.is_numeric_dtype(scores[c]) or scores[c].nunique() <= 3]
        if set(varying) - set(predictors):
            eff.readings.append("Left out of the model (more than 3 categories for this cohort size): "
                                + ", ".join(sorted(set(varying) - set(predictors))) + ".")
        if predictors or scores["backend_id"].nunique() > 1:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fx = effects.model_effects(scores, predictors)
            # Models that could not be fitted (too few respondents for the terms) are said, not hidden.
            eff.readings.extend(dict.fromkeys(str(w.message) for w in caught))
            eff.add_table("Regression of subscale score on backend and persona attributes", fx, view="regression")
            eff.readings.append("Coefficients are differences in subscale points (categorical terms against "
                                "their reference level); with repeats the model has a random intercept per "
                                "respondent.")
        else:
            eff.readings.append("No varying persona attributes or backends: no effects to estimate.")
        return [eff]


class ItemResponsesSection(ReportSection):
    """"Item responses": the share of answers per item and option, one heatmap per instrument."""

    name = "items"

    def sections(self, report: ReportContext) -> list[Section]:
        if not report.rated:
            return []
        section = Section("Item responses")
        for inst_id, instrument in report.rated.items():
            section.figures.append((f"Share of answers per item and option: {inst_id}",
                                    plots.item_heatmap(report.table[report.table["instrument"] == inst_id],
                                                       instrument)))
        return [section]
