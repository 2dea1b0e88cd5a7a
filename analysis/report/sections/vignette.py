"""Empathic accuracy of a cohort (and of human perceivers) on vignettes, from a run's answers, and
the report section of vignettes.

The scores themselves are :mod:`psyq.engine.kinds.vignette.accuracy`'s (profile r through Fisher z, MAE, Lin's CCC,
distinctive r; judge similarity as percent of maximum); this module takes them from an exported
run and summarises them per vignette and per perceiver group, so that a cohort and human
perceivers scored against the same targets sit side by side.

Example:
    >>> table = export_table("runs/ea_vignettes/ab12")                       # doctest: +SKIP
    >>> acc = cohort_accuracy(table, instruments["ea_vignettes_psyq"])      # doctest: +SKIP
    >>> vignette_summary(acc.vignettes, ["backend_id"])                      # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from psyq.engine.design.instrument import Instrument
from psyq.engine.kinds import instruments_with
from psyq.engine.kinds.vignette.accuracy import (fisher_z, judge_percent, perceiver_accuracy,
    read_perceiver_csv, read_target_reports_csv, stop_accuracy, target_profiles, vignette_accuracy,
    with_self_reports)

from psyq.analysis.statistics import human_comparison as human
from psyq.analysis.report.plots import _figure, _message_figure, _style, _unique
from psyq.analysis.report.sections import KindReport, ReportInput

PERCEIVER_KEYS = ["backend_id", "respondent_id", "repeat"]


def perceiver_ratings(table: pd.DataFrame, instrument_id: str) -> pd.DataFrame:
    """The emotion ratings of one vignette instrument from an exported run, as the long table
    :func:`psyq.engine.kinds.vignette.accuracy.stop_accuracy` reads: ``backend_id, respondent_id, repeat, vignette,
    stop, emotion, rating`` (rows ``<vignette>:<stop>:<emotion>``; missing ratings stay NaN)."""
    rows = table[(table["instrument"] == instrument_id)]
    parts = rows["item_id"].astype(str).str.split(":", expand=True)
    if parts.shape[1] != 3:
        return pd.DataFrame(columns=PERCEIVER_KEYS + ["vignette", "stop", "emotion", "rating"])
    keep = parts[2] != "thoughts"
    out = rows.loc[keep, PERCEIVER_KEYS].copy()
    out["vignette"], out["stop"], out["emotion"] = parts.loc[keep, 0], parts.loc[keep, 1].astype(int), parts.loc[keep, 2]
    out["rating"] = rows.loc[keep, "value"].astype(float)
    return out.reset_index(drop=True)


def inference_levels(judgements: pd.DataFrame, instrument_id: str, rubric_id: str = "ea_similarity") -> pd.DataFrame:
    """Judge similarity levels of the free-text inferences (rows ``<vignette>:<stop>:thoughts``) as
    :func:`psyq.engine.kinds.vignette.accuracy.judge_percent` reads them, per judge."""
    rows = judgements[(judgements["instrument"] == instrument_id) & (judgements["rubric_id"] == rubric_id)
                      & judgements["item_id"].astype(str).str.endswith(":thoughts")]
    parts = rows["item_id"].str.split(":", expand=True)
    out = rows[PERCEIVER_KEYS + ["judge_id", "level"]].copy()
    if not rows.empty:
        out["vignette"], out["stop"] = parts[0], parts[1].astype(int)
    return out.reset_index(drop=True)


@dataclass
class Accuracy:
    """Scores of one group of perceivers: per stop, per vignette and overall per perceiver."""

    stops: pd.DataFrame
    vignettes: pd.DataFrame
    perceivers: pd.DataFrame
    design_intended: bool        # True when any target profile used is not a self-report


def score_perceivers(ratings: pd.DataFrame, targets: pd.DataFrame, keys: Sequence[str]) -> Accuracy:
    """Every accuracy score of `ratings` against `targets` (see :mod:`psyq.engine.kinds.vignette.accuracy`)."""
    stops = stop_accuracy(ratings, targets, keys)
    return Accuracy(stops, vignette_accuracy(stops, keys), perceiver_accuracy(stops, keys),
                    bool((targets["source"] != "self-report").any()))


def cohort_accuracy(table: pd.DataFrame, instrument: Instrument, targets: pd.DataFrame | None = None) -> Accuracy:
    """The run's perceivers scored against `targets` (default: the instrument's own reports)."""
    targets = target_profiles(instrument) if targets is None else targets
    return score_perceivers(perceiver_ratings(table, instrument.id), targets, PERCEIVER_KEYS)


def vignette_summary(vignette_scores: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """Per vignette and group: perceivers, mean accuracy r (Fisher z averaged over perceivers),
    mean MAE and CCC, distinctive r (likewise through z)."""
    return _over_perceivers(vignette_scores, [*group, "vignette"]).drop(columns="z_sd")


def group_summary(perceiver_scores: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """Per group: perceivers, mean and SD of the perceivers' overall Fisher z, the mean back
    transformed to r, mean MAE and CCC, distinctive r."""
    return _over_perceivers(perceiver_scores, list(group))


def _over_perceivers(scores: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    out = scores.groupby(by, sort=False).agg(
        perceivers=("z", "count"), z=("z", "mean"), z_sd=("z", "std"), mae=("mae", "mean"), ccc=("ccc", "mean"),
        distinctive_z=("distinctive_z", "mean")).reset_index()
    out.insert(out.columns.get_loc("z"), "r", np.tanh(out["z"]))
    out["distinctive_r"] = np.tanh(out.pop("distinctive_z"))
    return out


def judged_percent(levels: pd.DataFrame) -> pd.DataFrame:
    """Percent of maximum similarity per judge and perceiver (Ickes-style accuracy of inferences)."""
    if levels.empty:
        return pd.DataFrame(columns=["judge_id", *PERCEIVER_KEYS, "n_judged", "points", "percent"])
    return judge_percent(levels, ["judge_id", *PERCEIVER_KEYS])


class VignetteReport(KindReport):
    """A section "Empathic accuracy (vignettes: <instrument>)" per instrument with vignettes; the
    instruments' ``--human`` files are perceiver ratings, ``--targets`` files targets' own reports."""

    name = "vignette"
    human_data = "perceiver ratings of vignettes"
    data_label = "vignettes"
    takes_targets = True

    def sections(self, run: ReportInput) -> list[Any]:
        return [ea_section(run.table, run.instruments[inst_id], run.judgements, run.human_csv.get(inst_id),
                           run.targets_csv.get(inst_id), run)
                for inst_id in instruments_with(self.name, run.instruments)]


def ea_section(table: pd.DataFrame, instrument: Instrument, judgements: pd.DataFrame,
               perceivers_csv: str | Path | None, targets_csv: str | Path | None, run: ReportInput) -> Any:
    """Accuracy per vignette and overall for the cohort (and human perceivers when given)."""
    Section, _num, _pct, _fmt_p = run.section, run.num, run.pct, run.fmt_p
    targets = target_profiles(instrument)
    if targets_csv:
        targets = with_self_reports(targets, read_target_reports_csv(targets_csv, instrument))
    cohort = cohort_accuracy(table, instrument, targets)
    name = "agreement with design-intended profiles" if cohort.design_intended else "empathic accuracy"
    section = Section(f"Empathic accuracy (vignettes: {instrument.id})")
    if cohort.design_intended:
        section.readings.append(
            f"{instrument.id}: some target profiles are design-intended (written by the vignettes' authors), not "
            "self-reports of real targets, so the scores below measure agreement with that design, not empathic "
            "accuracy in Ickes' sense; no human norms exist for them.")
    vignettes = vignette_summary(cohort.vignettes.assign(group=cohort.vignettes["backend_id"]), ["group"])
    overall = group_summary(cohort.perceivers.assign(group=cohort.perceivers["backend_id"]), ["group"])
    human_acc = None
    if perceivers_csv:
        ratings = read_perceiver_csv(perceivers_csv, instrument)
        human_acc = score_perceivers(ratings, targets, ["respondent_id"])
        vignettes = pd.concat([vignettes, vignette_summary(human_acc.vignettes.assign(group="human perceivers"),
                                                              ["group"])], ignore_index=True)
        overall = pd.concat([overall, group_summary(human_acc.perceivers.assign(group="human perceivers"),
                                                       ["group"])], ignore_index=True)
    for row in overall.itertuples():
        section.readings.append(
            f"{row.group}: {name} r = {_num(row.r)} over {row.perceivers} perceiver(s) (Fisher-z mean of per-stop "
            f"profile correlations, vignettes weighted equally); MAE {_num(row.mae)} scale points, CCC "
            f"{_num(row.ccc)}, distinctive r {_num(row.distinctive_r)} (after removing the average target profile).")
    for backend_id, stops in cohort.stops.groupby("backend_id"):
        flat = int((stops["r"].isna() & (stops["n"] >= 3)).sum())
        if flat:
            section.readings.append(
                f"{backend_id}: {flat} of {len(stops)} stop ratings ({_pct(flat / len(stops))}) gave every emotion the "
                "same rating (a flat profile, or the target's was flat), for which no profile correlation exists; "
                "MAE and CCC still compare the levels.")
    if human_acc is not None:
        for backend_id, rows in cohort.perceivers.groupby("backend_id"):
            cmp = human.compare_samples(rows["z"], human_acc.perceivers["z"])
            section.readings.append(
                f"{backend_id} against human perceivers (per-perceiver Fisher z): g = {_num(cmp['g'])} (95 % CI "
                f"{_num(cmp['g_low'])} to {_num(cmp['g_high'])}), Welch p {_fmt_p(cmp['p'])}; variance ratio "
                f"{_num(cmp['variance_ratio'])}.")
    section.tables.append(("Overall per perceiver group (a backend's cohort, or human perceivers)", overall))
    section.tables.append(("Per vignette", vignettes))
    judged = judged_percent(inference_levels(judgements, instrument.id)) if not judgements.empty else None
    if judged is not None and not judged.empty:
        by_judge = judged.groupby(["judge_id", "backend_id"]).agg(perceivers=("percent", "count"),
                                                                  percent=("percent", "mean")).reset_index()
        section.tables.append(("Free-text inferences: judge similarity, percent of maximum", by_judge))
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
        return _message_figure("no vignette answers to show", title)
    if not np.isfinite(pd.to_numeric(summary["r"], errors="coerce")).any():
        # An empty frame of axes would read as "nothing happened"; say why there are no points.
        return _message_figure(f"{label} not computable for any vignette (flat profiles: no variance to correlate)",
                               title)
    vignettes = _unique(summary["vignette"])
    groups = _unique(summary["group"])
    fig = _figure(7, max(2.8, 0.32 * len(vignettes) + 1.6))
    ax = fig.add_subplot()
    offsets = np.linspace(-0.15, 0.15, len(groups)) if len(groups) > 1 else np.zeros(1)
    for g, group in enumerate(groups):
        style = _style(g)
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


__all__ = ["Accuracy", "PERCEIVER_KEYS", "cohort_accuracy", "fisher_z", "group_summary", "inference_levels",
           "judged_percent", "perceiver_ratings", "score_perceivers", "vignette_summary", "VignetteReport",
           "ea_section", "vignette_accuracy_chart"]
