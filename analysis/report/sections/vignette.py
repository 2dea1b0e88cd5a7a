"""The report's section of vignettes: empathic accuracy of the cohort (and of human perceivers)
per vignette and overall (the statistics: :mod:`psyq.analysis.statistics.empathic_accuracy`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from psyq.engine.design.instrument import Instrument
from psyq.engine.design.persona import BASELINE
from psyq.engine.kinds.vignette.accuracy import target_profiles, with_self_reports
from psyq.engine.kinds.vignette.accuracy_csv import read_perceiver_csv, read_target_reports_csv

from psyq.analysis.statistics import human_comparison as human
from psyq.analysis.statistics.standin.design_verdict import accuracy_scorecard
from psyq.analysis.statistics.empathic_accuracy import (Accuracy, cohort_accuracy, group_summary,
                                                        inference_levels, judged_percent, score_perceivers,
                                                        vignette_summary)
from psyq.analysis.report.figures import new_figure, message_figure, series_style, in_order
from psyq.analysis.report.apa import say_num, say_p, say_pct
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section


class VignetteSection(ReportSection):
    """A section "Empathic accuracy (vignettes: <instrument>)" per instrument with vignettes; the
    instruments' ``--human`` files are perceiver ratings, ``--targets`` files targets' own reports."""

    name = "vignette"
    kind = "vignette"
    human_data = "perceiver ratings of vignettes"
    data_label = "vignettes"
    takes_targets = True

    def sections(self, report: ReportContext) -> list[Section]:
        perceivers = report.kind_people.get(self.kind, {})
        sections = []
        for inst_id in report.kind_instruments(self.kind):
            instrument = report.instruments[inst_id]
            cohort, human_acc = scored_perceivers(report.table, instrument,
                                                  perceivers[inst_id].file if inst_id in perceivers else None,
                                                  report.targets.get(inst_id))
            sections.append(ea_section(instrument, report.judgements, cohort, human_acc))
            # The verdict's card: the personas' accuracy against the human perceivers' ("not estimable" without);
            # the model answering as itself is one respondent, not a cohort, left out as in the questionnaires'.
            personas = cohort.perceivers[cohort.perceivers["respondent_id"].astype(str) != BASELINE.id]
            report.design_cards.append(accuracy_scorecard(
                personas, human_acc.perceivers if human_acc is not None else None, instrument=inst_id,
                design_intended=cohort.design_intended, bound=report.bound))
        return sections


def scored_perceivers(table: pd.DataFrame, instrument: Instrument, perceivers_csv: str | Path | None,
                      targets_csv: str | Path | None) -> tuple[Accuracy, Accuracy | None]:
    """The cohort's accuracy and the human perceivers' (None without their file), both scored against the
    instrument's target profiles, the targets' own reports (`targets_csv`) replacing the design's."""
    targets = target_profiles(instrument)
    if targets_csv:
        targets = with_self_reports(targets, read_target_reports_csv(targets_csv, instrument))
    cohort = cohort_accuracy(table, instrument, targets)
    human_acc = None
    if perceivers_csv:
        human_acc = score_perceivers(read_perceiver_csv(perceivers_csv, instrument), targets, ["respondent_id"])
    return cohort, human_acc


def ea_section(instrument: Instrument, judgements: pd.DataFrame, cohort: Accuracy, human_acc: Accuracy | None
               ) -> Section:
    """Accuracy per vignette and overall for the cohort (and human perceivers when given), from
    :func:`scored_perceivers`."""
    name = "agreement with design-intended profiles" if cohort.design_intended else "empathic accuracy"
    section = Section(f"Empathic accuracy (vignettes: {instrument.id})")
    if cohort.design_intended:
        section.readings.append(
            f"{instrument.id}: some target profiles are design-intended (written by the vignettes' authors), not "
            "self-reports of real targets, so the scores below measure agreement with that design, not empathic "
            "accuracy in Ickes' sense; no human norms exist for them.")
    vignettes = vignette_summary(cohort.vignettes.assign(group=cohort.vignettes["backend_id"]), ["group"])
    overall = group_summary(cohort.perceivers.assign(group=cohort.perceivers["backend_id"]), ["group"])
    if human_acc is not None:
        vignettes = pd.concat([vignettes, vignette_summary(human_acc.vignettes.assign(group="human perceivers"),
                                                              ["group"])], ignore_index=True)
        overall = pd.concat([overall, group_summary(human_acc.perceivers.assign(group="human perceivers"),
                                                       ["group"])], ignore_index=True)
    for row in overall.itertuples():
        section.readings.append(
            f"{row.group}: {name} r = {say_num(row.r)} over {row.perceivers} perceiver(s) (Fisher-z mean of per-stop "
            f"profile correlations, vignettes weighted equally); MAE {say_num(row.mae)} scale points, CCC "
            f"{say_num(row.ccc)}, distinctive r {say_num(row.distinctive_r)} (after removing the average target profile).")
    for backend_id, stops in cohort.stops.groupby("backend_id"):
        flat = int((stops["r"].isna() & (stops["n"] >= 3)).sum())
        if flat:
            section.readings.append(
                f"{backend_id}: {flat} of {len(stops)} stop ratings ({say_pct(flat / len(stops))}) gave every emotion the "
                "same rating (a flat profile, or the target's was flat), for which no profile correlation exists; "
                "MAE and CCC still compare the levels.")
    if human_acc is not None:
        for backend_id, rows in cohort.perceivers.groupby("backend_id"):
            cmp = human.compare_samples(rows["z"], human_acc.perceivers["z"])
            section.readings.append(
                f"{backend_id} against human perceivers (per-perceiver Fisher z): g = {say_num(cmp['g'])} (95 % CI "
                f"{say_num(cmp['g_low'])} to {say_num(cmp['g_high'])}), Welch p {say_p(cmp['p'])}; variance ratio "
                f"{say_num(cmp['variance_ratio'])}.")
    section.add_table("Overall per perceiver group (a backend's cohort, or human perceivers)", overall)
    section.add_table("Per vignette", vignettes)
    judged = judged_percent(inference_levels(judgements, instrument.id)) if not judgements.empty else None
    if judged is not None and not judged.empty:
        by_judge = judged.groupby(["judge_id", "backend_id"]).agg(perceivers=("percent", "count"),
                                                                  percent=("percent", "mean")).reset_index()
        section.add_table("Free-text inferences: judge similarity, percent of maximum", by_judge)
        for row in by_judge.itertuples():
            section.readings.append(f"{row.backend_id}: the inferences reach {row.percent:.0f} % of the maximum "
                                    f"similarity to the targets' own words (judge '{row.judge_id}', "
                                    f"{row.perceivers} perceivers).")
    else:
        section.readings.append("The free-text inferences are stored but not judged (psyq judge RUN --rubric "
                                "ea_similarity scores them 0/1/2 against the targets' own words).")
    section.figures.append((f"{instrument.id}: {name} per vignette", vignette_accuracy_chart(vignettes)))
    return section


def vignette_accuracy_chart(summary: pd.DataFrame, label: str = "profile r") -> Figure:
    """Mean accuracy r per vignette (rows), one marker set per perceiver group (column
    ``group``), from :func:`vignette_summary` output; a line at 0."""
    title = f"Accuracy per vignette ({label}; Fisher-z mean over perceivers)"
    if summary is None or summary.empty:
        return message_figure("no vignette answers to show", title)
    if not np.isfinite(pd.to_numeric(summary["r"], errors="coerce")).any():
        # An empty frame of axes would read as "nothing happened"; say why there are no points.
        return message_figure(f"{label} not computable for any vignette (flat profiles: no variance to correlate)",
                               title)
    vignettes = in_order(summary["vignette"])
    groups = in_order(summary["group"])
    fig = new_figure(7, max(2.8, 0.32 * len(vignettes) + 1.6))
    ax = fig.add_subplot()
    offsets = np.linspace(-0.15, 0.15, len(groups)) if len(groups) > 1 else np.zeros(1)
    for g, group in enumerate(groups):
        style = series_style(g)
        rows = summary[summary["group"] == group].set_index("vignette").reindex(vignettes)
        ax.plot(rows["r"].to_numpy(dtype=float), np.arange(len(vignettes)) + offsets[g], linestyle="none",
                marker=style["marker"], color=style["color"], label=str(group), gid=f"vignette-r:{group}")
    ax.axvline(0, color="0.5", linewidth=1)
    ax.set_yticks(np.arange(len(vignettes)), vignettes)
    ax.invert_yaxis()
    ax.set_xlim(-1, 1)
    ax.set_xlabel(label)
    ax.set_title(title)
    ax.legend(frameon=False, loc="lower left")
    return fig


__all__ = ["VignetteSection", "ea_section", "scored_perceivers", "vignette_accuracy_chart"]
