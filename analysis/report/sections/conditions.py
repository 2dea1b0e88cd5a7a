"""The report section "Conditions compared", for a run with conditions (engine/design/conditions.py):
which model, persona template and way of asking comes closest to people, each group of answers
(backend × condition) against the same people, head to head.

What each condition changes and the trials it planned come first (the plan's facts, which need no
people). With people's item answers (``--human``), per instrument: every pair of groups on every
criterion (:func:`psyq.compare_conditions`: the difference in distance from people with its 95 %
interval, Holm over pairs × criteria), the groups ranked per criterion
(:func:`psyq.rank_conditions`: shared ranks unless one is distinguishably closer), the answer
distributions item by item summarised per group (:func:`psyq.distribution_distances`: mean TVD and
Wasserstein-1 beside the people's own split-half ceiling, SimBench's score) and one figure of the
groups on the main criteria with their intervals (:func:`conditions_chart`). Without people, the
section says that conditions cannot be compared with people. The verdict names the most
people-like condition for each use from the same frames (:attr:`ReportContext.condition_comparison`).

Example:
    >>> distances = pd.DataFrame({"criterion": ["level", "level", "tvd", "tvd"], "condition": ["a", "b"] * 2,
    ...     "distance": [0.1, 0.5, 0.2, 0.3], "low": [0.05, 0.4, 0.15, 0.25], "high": [0.2, 0.6, 0.25, 0.35]})
    >>> fig = conditions_chart(distances, {"tvd": 0.04}, "iri")
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['Level (|g|)', 'TVD']
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from psyq.analysis.report.apa import say_pct
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.figures import (NORM_COLOUR, in_order, is_finite, legend_columns, message_figure,
                                          new_figure, series_style, wrap_to_width)
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.report.verdict_views import DISTANCE_HEADERS

TITLE = "Conditions compared"
MAIN_CRITERIA = ("level", "spread", "reliability", "distinguishable", "tvd", "w1")
"""The criteria the figure shows (those the comparison holds), in this order."""
NO_PEOPLE = ("Conditions cannot be compared with people: no instrument of this run has people's item answers "
             "(psyq report RUN --human INSTRUMENT=FILE), so only what each condition changes and what it asked are "
             "shown.")
METHODS = ("The conditions were compared head to head (psyq.compare_conditions): each group of answers (backend × "
           "condition) was reduced on each criterion to one distance from the people (mean |g| of the subscale "
           "scores, mean |ln SD ratio|, mean |Δα|, the held-out classifier's AUC − .5, mean |style shift|, mean "
           "|Δr| of the relations, and the mean over items of the total variation distance and Wasserstein-1 of "
           "the answer distributions); each pair's difference had a bootstrap interval (1,000 resamples, the "
           "people resampled once and shared, the same personas resampled together), with Holm's correction "
           "over every pair and criterion; groups shared a rank unless one was distinguishably closer "
           "(psyq.rank_conditions).")


def _changes_text(changes: Mapping) -> str:
    """What a condition changes, in a line: its protocol fields, template and sampling."""
    parts = []
    for key, value in changes.items():
        if isinstance(value, Mapping):
            parts.append(", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            parts.append(f"{key}: {value}")
    return "; ".join(parts) or "nothing (the study as written)"


def plan_facts(report: ReportContext) -> pd.DataFrame:
    """One row per condition of the run: its factor levels, what it changes, the backends that ask it,
    the trials it planned (the manifest's) and the share of its item answers read.

    Example:
        >>> from pathlib import Path
        >>> from psyq.analysis.report.context import ConditionGroup
        >>> report = ReportContext(Path("."), {"conditions": [{"id": "x", "factors": {"asking": "ssr"},
        ...     "changes": {"protocol": {"answer": "ssr"}}, "backends": None}], "trials_planned_by_condition": {"x": 4}},
        ...     pd.DataFrame({"backend_id": "a · x", "status": ["answered", "missing"]}), {}, pd.DataFrame(),
        ...     condition_groups={"a · x": ConditionGroup("a · x", "a", "x", {"asking": "ssr"})})
        >>> plan_facts(report).to_dict("records")
        [{'condition': 'x', 'asking': 'ssr', 'changes': 'answer=ssr', 'backends': 'a', 'trials_planned': 4, 'answers_read': '50 %'}]
    """
    conditions = report.manifest.get("conditions") or []
    factors = list(dict.fromkeys(f for c in conditions for f in (c.get("factors") or {})))
    planned = report.manifest.get("trials_planned_by_condition") or {}
    read = (report.table["status"] == "answered").groupby(report.table["backend_id"]).agg(["sum", "count"])
    rows = []
    for condition in conditions:
        cid = str(condition["id"])
        groups = [g for g in report.condition_groups.values() if g.condition == cid]
        counts = read.reindex([g.label for g in groups]).fillna(0).sum()
        rows.append({"condition": cid, **{f: (condition.get("factors") or {}).get(f, "") for f in factors},
                     "changes": _changes_text(condition.get("changes") or {}),
                     "backends": ", ".join(g.backend for g in groups) or "none",
                     "trials_planned": int(planned.get(cid, 0)),
                     "answers_read": say_pct(counts["sum"] / counts["count"]) if counts["count"] else "none"})
    return pd.DataFrame(rows)


def distance_summary(distances: pd.DataFrame, comparison: pd.DataFrame) -> pd.DataFrame:
    """Per condition, the item distances of :func:`psyq.distribution_distances` averaged over the items
    (TVD, W1, the people's split-half ceilings, SimBench's score and its ceiling), with the mean TVD's
    and W1's distance and percentile interval from the head-to-head comparison's
    ``attrs["distances"]`` (the same mean, bootstrapped).

    Example:
        >>> items = pd.DataFrame({"condition": "a", "n_personas": [20, 19], "tvd": [0.2, 0.4], "w1": [0.5, 0.7],
        ...     "ceiling_tvd": [0.03, 0.05], "ceiling_w1": [0.05, 0.07], "score": [50.0, 30.0], "score_ceiling": [90.0, 88.0]})
        >>> own = pd.DataFrame({"criterion": ["tvd", "w1"], "condition": "a", "distance": [0.3, 0.6],
        ...                     "low": [0.25, 0.5], "high": [0.35, 0.7]})
        >>> comparison = pd.DataFrame(); comparison.attrs["distances"] = own
        >>> distance_summary(items, comparison).round(2).to_dict("records")[0]["tvd_high"]
        0.35
    """
    own = comparison.attrs.get("distances", pd.DataFrame(columns=["criterion", "condition", "distance", "low",
                                                                    "high"]))
    rows = []
    for condition, part in distances.groupby("condition", sort=False):
        row = {"condition": condition, "n": int(part["n_personas"].max()), "items": len(part)}
        for criterion in ("tvd", "w1"):
            mine = own[(own["criterion"] == criterion) & (own["condition"] == condition)]
            if len(mine):
                row.update({criterion: float(mine["distance"].iloc[0]), f"{criterion}_low": float(mine["low"].iloc[0]),
                            f"{criterion}_high": float(mine["high"].iloc[0])})
            else:
                row.update({criterion: float(part[criterion].mean()), f"{criterion}_low": math.nan,
                            f"{criterion}_high": math.nan})
            row[f"ceiling_{criterion}"] = float(part[f"ceiling_{criterion}"].mean())
        row.update(score=float(part["score"].mean()), score_ceiling=float(part["score_ceiling"].mean()))
        rows.append(row)
    columns = ["condition", "n", "items", "tvd", "tvd_low", "tvd_high", "ceiling_tvd", "w1", "w1_low", "w1_high",
               "ceiling_w1", "score", "score_ceiling"]
    return pd.DataFrame(rows, columns=columns)


def conditions_chart(distances: pd.DataFrame, ceilings: Mapping[str, float], instrument_id: str,
                     backends: Mapping[str, str] | None = None, best: Mapping[str, set[str]] | None = None) -> Figure:
    """Each condition's distance from people (0 = as people) with its 95 % interval, one panel per
    main criterion (:data:`MAIN_CRITERIA`, those in `distances`: the ``attrs["distances"]`` of
    :func:`psyq.compare_conditions`), the conditions as rows in the order given; `ceilings` draws the
    people's own split-half value as a dashed line on the panels it names (TVD, W1), `backends` gives
    each condition's backend (one colour and marker each), `best` per criterion the conditions that
    share the first rank (drawn filled; the others hollow)."""
    title = f"{instrument_id}: each condition's distance from people (95 % CI; smaller is closer)"
    criteria = [c for c in MAIN_CRITERIA if (distances["criterion"] == c).any()] if len(distances) else []
    if not criteria:
        return message_figure("no distances from people to show", title)
    conditions = in_order(distances["condition"])
    backends = dict(backends or {})
    series = in_order(pd.Series([backends.get(c, "") for c in conditions]))
    n_cols = min(3, len(criteria))
    n_rows = math.ceil(len(criteria) / n_cols)
    label_width = min(3.2, 0.07 * max(len(str(c)) for c in conditions) + 0.3)
    width = label_width + 2.2 * n_cols
    fig = new_figure(width, n_rows * (0.24 * len(conditions) + 1.0) + 0.9)
    grid = fig.subplots(n_rows, n_cols, squeeze=False, sharey=True)
    axes = list(grid.ravel())
    for unused in axes[len(criteria):]:
        unused.set_visible(False)
    y = np.arange(len(conditions))
    for ax, criterion in zip(axes, criteria):
        rows = distances[distances["criterion"] == criterion].set_index("condition")
        for k, condition in enumerate(conditions):
            if condition not in rows.index or not is_finite(rows.loc[condition, "distance"]):
                ax.annotate("not estimable", (0, k), xytext=(4, 0), textcoords="offset points", va="center",
                            fontsize=7, color=NORM_COLOUR)
                continue
            r = rows.loc[condition]
            style = series_style(series.index(backends.get(condition, "")))
            if is_finite(r["low"]) and is_finite(r["high"]):   # a percentile interval: near 0 it may lie above the estimate
                ax.hlines(k, r["low"], r["high"], color=style["color"], lw=1.2, zorder=2,
                          gid=f"interval:{criterion}:{condition}")
            filled = best is None or condition in best.get(criterion, set())
            ax.plot([r["distance"]], [k], ls="none", marker=style["marker"], color=style["color"], markersize=5,
                    markerfacecolor=style["color"] if filled else "white", zorder=3,
                    gid=f"condition:{criterion}:{condition}")
        if is_finite(ceilings.get(criterion)):
            ax.axvline(float(ceilings[criterion]), color=NORM_COLOUR, lw=1.1, ls="--", zorder=1,
                       gid=f"ceiling:{criterion}")
        ax.axvline(0, color=NORM_COLOUR, lw=0.8, zorder=1)
        ax.set_title(DISTANCE_HEADERS.get(criterion, criterion), fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(axis="x", color="#E5E5E5", lw=0.8, zorder=0)
        ax.set_axisbelow(True)
    for row in grid:
        row[0].set_yticks(y, [str(c) for c in conditions], fontsize=7)
        row[0].set_ylim(len(conditions) - 0.5, -0.5)
    handles = [Line2D([], [], ls="none", markersize=6, label=name or "conditions", **series_style(s))
               for s, name in enumerate(series)]
    if best is not None:
        handles.append(Line2D([], [], ls="none", marker="o", color=NORM_COLOUR, markerfacecolor="white",
                              label="not of the first rank (hollow)"))
    if any(is_finite(ceilings.get(c)) for c in criteria):
        handles.append(Line2D([], [], color=NORM_COLOUR, lw=1.1, ls="--", label="people's split-half ceiling"))
    fig.legend(handles=handles, loc="outside lower center", frameon=False, fontsize=8,
               ncol=legend_columns([h.get_label() for h in handles], width, 8, 4))
    fig.suptitle(wrap_to_width(title, width, 11), fontsize=11)
    return fig


class ConditionsSection(ReportSection):
    """"Conditions compared": what each condition changes, and with people's answers every pair of
    groups head to head, the ranks, the item distances and a figure."""

    name = "conditions"

    def applies(self, report: ReportContext) -> bool:
        return not report.staged and bool(report.condition_groups)

    def sections(self, report: ReportContext) -> list[Section]:
        section = Section(TITLE)
        groups = report.condition_groups
        backends = list(dict.fromkeys(g.backend for g in groups.values()))
        conditions = list(dict.fromkeys(g.condition for g in groups.values()))
        section.readings.append(
            f"{len(conditions)} condition(s) asked by {len(backends)} backend(s): {len(groups)} groups of answers, "
            "each named backend · condition.")
        section.add_table("Conditions: what each changes, the backends that ask it and the trials it planned",
                          plan_facts(report))
        if not report.condition_comparison:
            section.readings.append(NO_PEOPLE if not report.human_items else
                                    "Conditions cannot be compared with people: fewer than two groups answered an "
                                    "instrument with people's answers.")
            return [section]
        section.methods = METHODS
        several = len(report.condition_comparison) > 1
        for inst_id, comparison in report.condition_comparison.items():
            ranks = report.condition_ranks[inst_id]
            lead = f"{inst_id}: " if several else ""
            pairs = comparison[["condition_a", "condition_b"]].drop_duplicates()
            criteria = list(dict.fromkeys(comparison["criterion"]))
            apart = comparison[comparison["distinguishable"]]
            section.readings.append(
                f"{lead}{len(pairs)} pairs of groups on {len(criteria)} criteria ({', '.join(criteria)}): "
                f"{len(apart)} of the {len(comparison)} differences are distinguishable from 0 (Holm-adjusted "
                f"p < .05); {apart[['condition_a', 'condition_b']].drop_duplicates().shape[0]} pairs differ on at "
                "least one criterion.")
            noted = sorted({n for n in comparison["note"] if n and "favours the larger" in n})
            if noted:
                section.readings.append(f"{lead}Groups of very different sizes: a distance grows with sampling noise, "
                                        "which favours the larger group (see the full table's note column).")
            summary = distance_summary(report.condition_distances[inst_id], comparison)
            section.add_table(f"Head to head: {inst_id}, each pair of groups on each criterion (A − B in distance "
                              "from people; Holm-adjusted)", comparison, view="condition_pairs")
            section.add_table(f"Ranks: {inst_id}, the groups on each criterion (1 = closest to people; shared unless "
                              "distinguishably apart)", ranks, view="condition_ranks")
            section.add_table(f"Answer distributions: {inst_id}, each group against the people, averaged over the "
                              "items, beside the people's own split-half ceiling", summary, view="condition_distances")
            ceilings = {c: float(summary[f"ceiling_{c}"].mean()) for c in ("tvd", "w1") if len(summary)}
            best = {c: set(part.loc[part["rank"] == 1, "condition"]) for c, part in ranks.groupby("criterion")}
            section.figures.append((f"Each group's distance from people on the main criteria, 95 % CI: {inst_id}",
                                    conditions_chart(comparison.attrs["distances"], ceilings, inst_id,
                                                     {label: g.backend for label, g in groups.items()}, best)))
        return [section]
