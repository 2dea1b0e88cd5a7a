"""The report section on change (before → after an evoked situation): readings, tables, a figure.

Built from the tidy scores with stages and, when given, humans' change (the "Human change CSV").
Returns a :class:`psyq.analysis.report.section.Section` (title, readings, tables, figures, note), so the
report shows it as one of its sections;
the tables are the raw frames of :mod:`psyq.analysis.statistics.change`, printed by :func:`psyq.analysis.report.views.apa_table`.

Example:
    >>> section = change_section(scores, humans)              # needs a staged run  # doctest: +SKIP
    >>> section.readings[0]                                   # needs a staged run  # doctest: +SKIP
    'After imagining anger situations, PA fell by 3.20 points (dz = −0.80 [−1.10, −0.50], p(Holm) < .001, n = 12); humans: −2.10 (n = 40).'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from psyq.engine.design.persona import BASELINE

from psyq.analysis.report import apa
from psyq.analysis.statistics.change import (EB_ALPHA, OVERALL, change_scores, compare_change_with_humans,
    emotionbench_comparison, human_paired_change, paired_change, per_person)
from psyq.analysis.statistics.standin.design_verdict import change_scorecard
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section, Table
from psyq.analysis.report.figures import (NORM_COLOUR, new_figure, is_finite, legend_columns, message_figure, series_style,
    in_order, wrap_to_width)

TITLE = "Change after the evoked situations"
HUMAN_STYLE = {"color": NORM_COLOUR, "marker": "s"}


def _points(x: float) -> str:
    return apa.fmt_num(abs(x))


def _direction(x: float) -> str:
    return "rose" if x > 0 else "fell" if x < 0 else "did not change"


def paired_reading(row: pd.Series, by: Sequence[str], human: pd.Series | None = None,
                   several_backends: bool = False) -> str:
    """One sentence for a row of :func:`psyq.analysis.statistics.change.paired_change` (and the matching row of
    :func:`psyq.analysis.statistics.change.compare_change_with_humans`).

    Example
    -------
    >>> row = pd.Series({"backend_id": "m", "instrument": "panas", "subscale": "PA", "emotion": "anger",
    ...                  "n": 12, "mean_change": -3.2, "dz": -0.8, "dz_low": -1.1, "dz_high": -0.5,
    ...                  "p_holm": 0.0002, "note": ""})
    >>> paired_reading(row, ["emotion"])
    'After imagining anger situations, PA fell by 3.20 points (dz = −0.80 [−1.10, −0.50], p(Holm) < .001, n = 12).'
    """
    groups = [str(row[c]) for c in by if str(row[c]) != OVERALL]
    what = " ".join(groups) + " situations" if groups else "any situation (all pooled)"
    who = f"{row['backend_id']}: " if several_backends else ""
    change = row["mean_change"]
    if not is_finite(change):
        return f"{who}After imagining {what}, {row['subscale']}: no change score (n = {int(row['n'])})."
    text = f"{who}After imagining {what}, {row['subscale']} {_direction(change)}"
    text += f" by {_points(change)} points" if change != 0 else ""
    if is_finite(row["dz"]):
        text += (f" (dz = {apa.fmt_num(row['dz'])} {apa.fmt_ci(row['dz_low'], row['dz_high'])}, "
                 f"p(Holm) {apa.p_clause(row['p_holm'])}, n = {int(row['n'])})")
    else:
        text += f" (n = {int(row['n'])}; dz and t not estimable: {row['note']})"
    if human is not None:
        if is_finite(human["change_human"]):
            text += f"; humans: {apa.fmt_num(human['change_human'])} (n = {int(human['n_human'])})"
        else:
            text += "; no humans in this group"
        flag = str(human["flag"])
        if flag.startswith("not estimable"):
            text += f"; comparison {flag}"
        elif flag:
            text += (f"; {flag} compared with humans (difference {apa.fmt_num(human['diff'])} "
                     f"{apa.fmt_ci(human['diff_low'], human['diff_high'])})")
    return text + "."


def before_after_reading(who: str, row: pd.Series) -> str:
    """One sentence on a group's mean before and after and its paired t (a row of
    :func:`psyq.analysis.statistics.change.paired_change` or :func:`psyq.analysis.statistics.change.human_paired_change`).

    Example
    -------
    >>> row = pd.Series({"subscale": "PA", "n": 3, "mean_before": 27.667, "mean_after": 24.333,
    ...                  "t": -2.7735, "df": 2.0, "p": 0.109, "note": ""})
    >>> before_after_reading("Humans", row)
    'Humans, PA (n = 3): before 27.67, after 24.33, paired t(2) = −2.77, p = .109.'
    """
    text = (f"{who}, {row['subscale']} (n = {int(row['n'])}): before {apa.fmt_num(row['mean_before'])}, "
            f"after {apa.fmt_num(row['mean_after'])}")
    if is_finite(row["t"]):
        return text + f", paired t({int(row['df'])}) = {apa.fmt_num(row['t'])}, p {apa.p_clause(row['p'])}."
    return text + f"; paired t not estimable: {row['note'] or 'fewer than 2 respondents'}."


def _overall(frame: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The pooled rows (every `by` column "overall") of a paired table."""
    keep = np.ones(len(frame), dtype=bool)
    for col in by:
        keep &= (frame[col].astype(str) == OVERALL).to_numpy()
    return frame[keep]


def _human_means(human_changes: pd.DataFrame, subscale: str, emotion: str) -> tuple[float, float, int]:
    rows = human_changes[(human_changes["subscale"] == subscale) & (human_changes["emotion"] == emotion)]
    if rows.empty:
        return math.nan, math.nan, 0
    people = per_person(rows, ["before", "after"])
    return float(people["before"].mean()), float(people["after"].mean()), len(people)


def before_after_plot(changes: pd.DataFrame, human_changes: pd.DataFrame | None = None) -> Figure:
    """Mean before (hollow) and after (filled) score per emotion, an arrow from one to the other;
    one panel per instrument × subscale, one marker set per backend, humans (grey squares) beside
    the cohort when given. Means are over people (each respondent averaged over repeats and the
    emotion's situations first)."""
    title = "Mean score before (hollow) and after (filled) imagining the situation, per emotion"
    if changes.empty:
        return message_figure("no change scores: nothing to plot", title)
    panels = in_order(changes[["instrument", "subscale"]].apply(tuple, axis=1))
    emotions = sorted(in_order(changes["emotion"].astype(str)))
    backends = in_order(changes["backend_id"])
    series = [("backend", b) for b in backends] + ([("human", "humans")] if human_changes is not None else [])
    offsets = np.linspace(-0.25, 0.25, len(series)) if len(series) > 1 else np.zeros(1)
    # Panels side by side only while two fit a page (about 9 inches); many emotions or series
    # give one panel a row, at most 9 inches wide, so the report never shrinks the text.
    panel_width = min(9.0, max(3.6, 0.55 * len(emotions) * max(1, len(series) ** 0.5) + 1.2))
    n_cols = min(len(panels), 2 if panel_width <= 4.5 else 1)
    n_rows = math.ceil(len(panels) / n_cols)
    width = panel_width * n_cols
    fig = new_figure(width, 3.9 * n_rows + 0.9)
    grid = fig.subplots(n_rows, n_cols, squeeze=False)
    axes = list(grid.ravel())
    for unused in axes[len(panels):]:
        unused.set_visible(False)
    for ax, (inst, sub) in zip(axes, panels):
        rows = changes[(changes["instrument"] == inst) & (changes["subscale"] == sub)]
        for s, (kind, name) in enumerate(series):
            style = HUMAN_STYLE if kind == "human" else series_style(s)
            for x, emotion in enumerate(emotions):
                if kind == "human":
                    before, after, n = _human_means(human_changes, sub, emotion)
                else:
                    cell = rows[(rows["backend_id"] == name) & (rows["emotion"].astype(str) == emotion)]
                    people = per_person(cell, ["before", "after"]) if len(cell) else cell
                    before = float(people["before"].mean()) if len(cell) else math.nan
                    after = float(people["after"].mean()) if len(cell) else math.nan
                if not (is_finite(before) and is_finite(after)):
                    continue
                xx = x + offsets[s]
                ax.annotate("", (xx, after), (xx, before), zorder=2,
                            arrowprops={"arrowstyle": "-|>", "color": style["color"], "lw": 1.4,
                                        "shrinkA": 4, "shrinkB": 4})
                ax.plot([xx], [before], ls="none", marker=style["marker"], markersize=7, color=style["color"],
                        markerfacecolor="white", zorder=3, gid=f"before:{name}:{inst}:{sub}:{emotion}")
                ax.plot([xx], [after], ls="none", marker=style["marker"], markersize=7, color=style["color"],
                        zorder=3, gid=f"after:{name}:{inst}:{sub}:{emotion}")
        ax.set_xticks(range(len(emotions)), emotions, rotation=30 if len(emotions) > 4 else 0,
                      ha="right" if len(emotions) > 4 else "center", rotation_mode="anchor")
        ax.set_xlim(-0.6, len(emotions) - 0.4)
        ax.margins(y=0.12)
        ax.set_title(wrap_to_width(f"{inst} {sub}", panel_width - 0.4, 10), fontsize=10)
        ax.set_xlabel("Emotion of the situation")
        ax.grid(axis="y", color="#E5E5E5", lw=0.8, zorder=0)
        ax.set_axisbelow(True)
    for row in grid:
        row[0].set_ylabel("Mean score")
    handles = [Line2D([], [], ls="none", markersize=7, label=f"{name}: before → after",
                      **(HUMAN_STYLE if kind == "human" else series_style(s)))
               for s, (kind, name) in enumerate(series)]
    fig.legend(handles=handles, loc="outside lower center", frameon=False, fontsize=9,
               ncol=legend_columns([h.get_label() for h in handles], width, 9, 4))
    fig.suptitle(wrap_to_width(title, width, 12), fontsize=12)
    return fig


def change_section(scores: pd.DataFrame, human_changes: pd.DataFrame | None = None,
                   by: Sequence[str] = ("emotion",)) -> Section:
    """The report section on change: readings (one sentence per group, then pooled), the paired
    table, the comparison with humans (when `human_changes` is given, from
    :func:`psyq.analysis.scoring.human_data.read_human_change_csv`) and the before/after figure.

    Example
    -------
    >>> s = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "a", "b", "b", "c"], "repeat": 0,
    ...                   "situation_id": "s1", "emotion": "anger", "stage": [0, 2, 0, 2, 0],
    ...                   "phase": ["before", "after", "before", "after", "before"],
    ...                   "instrument": "panas", "subscale": "PA", "score": [30.0, 26, 28, 27, 25]})
    >>> sec = change_section(s)
    >>> sec.readings[0]
    '1 change score (respondent × repeat × situation × subscale) could not be computed and is left out: 1 with no after score.'
    >>> [caption for caption, _ in sec.tables][1:2]
    ['Paired change (after − before) per emotion and pooled']
    """
    by = list(by)
    result = change_scores(scores)
    changes = result.changes
    section = Section(TITLE)
    if result.dropped:
        reasons = result.dropped_rows["reason"].value_counts()
        n = result.dropped
        section.readings.append(
            f"{n} change score{'s' if n != 1 else ''} (respondent × repeat × situation × subscale) could not be "
            f"computed and {'is' if n == 1 else 'are'} left out: "
            + "; ".join(f"{count} with {why}" for why, count in reasons.items()) + ".")
        section.add_table("Scores left out of the change analysis (no before or no after score)",
                          result.dropped_rows)
    if changes.empty:
        section.readings.append("No respondent has both a before and an after score: no change to analyse.")
        return section
    paired = paired_change(changes, by)
    compared = compare_change_with_humans(changes, human_changes, by) if human_changes is not None else None
    several = changes["backend_id"].nunique() > 1
    # Before and after means with the paired t, pooled over every situation: humans first (their
    # own change, as a crowd study reports it), then each backend.
    humans_paired = human_paired_change(human_changes, by) if human_changes is not None else None
    if humans_paired is not None:
        for _, row in _overall(humans_paired, by).iterrows():
            section.readings.append(before_after_reading("Humans, all situations pooled", row))
    for _, row in _overall(paired, by).iterrows():
        who = f"{row['backend_id']}, all situations pooled" if several or humans_paired is not None else \
            "All situations pooled"
        section.readings.append(before_after_reading(f"{who} ({row['instrument']})", row))
    keys = ["backend_id", "instrument", "subscale", *by]
    for i, row in paired.iterrows():
        human = compared.iloc[i] if compared is not None else None   # same groups, same order
        if human is not None:
            assert all(str(human[k]) == str(row[k]) for k in keys)
        section.readings.append(paired_reading(row, by, human, several))
    section.add_table("Paired change (after − before) per " + ", ".join(c.replace("_", " ") for c in by)
                      + " and pooled" if by else "Paired change (after − before)", paired, view="paired_change")
    if humans_paired is not None:
        section.add_table("Humans' paired change (after − before) per " + ", ".join(c.replace("_", " ") for c in by)
                          + " and pooled" if by else "Humans' paired change (after − before)", humans_paired,
                          view="paired_change")
    if compared is not None:
        section.add_table("Change of the cohort against humans' change", compared, view="change_vs_humans")
    section.figures.append(("Mean score before and after imagining the situation, per emotion"
                            + (", cohort beside humans" if human_changes is not None else ""),
                            before_after_plot(changes, human_changes)))
    section.note = ("Change = after − before, per respondent, repeat, situation and subscale (the last measure "
                    "before the situation and the first after it). Each respondent counts once per group "
                    "(averaged over repeats and situations); n = respondents. dz = mean change / SD of change, "
                    "95 % CI by the noncentral t; p(Holm) corrected over every row of the table. The flags against "
                    "humans (numb, over-reacting, opposite direction) use the unadjusted 95 % CI of the "
                    "difference in mean change.")
    return section


EB_COMMAND = "psyq import emotionbench-results"


def emotionbench_part(manifest: dict[str, Any], scores: pd.DataFrame) -> tuple[list[str], list[Table]]:
    """EmotionBench's own comparison for an imported EmotionBench run, beside psyq's pairing:
    (readings, tables); nothing for other runs.

    psyq pairs each situation test with the General test of its number; EmotionBench compares
    the mean of every situation test with the mean of *every* General test by a two-sample t
    (:func:`psyq.analysis.statistics.change.emotionbench_comparison`). The readings give EmotionBench's
    figures, labelled as its own, so that a user reproduces the paper; a run imported before the
    default scores were kept says to import it again.
    """
    if manifest.get("command") != EB_COMMAND:
        return [], []
    if "default_scores" not in manifest:
        return (["EmotionBench's own comparison (Default = the mean of all General tests, two-sample t) is not shown: "
                 "this run was imported before psyq kept every General test's scores; import the file again with "
                 f"`{EB_COMMAND}` to see it."], [])
    defaults = pd.DataFrame(manifest["default_scores"], columns=["backend_id", "column", "PA", "NA"])
    table = emotionbench_comparison(defaults, scores)
    readings = [f"EmotionBench's own comparison, as its analysis code computes it (Huang et al., 2024), beside psyq's "
                "pairing above: Default = the PANAS sums of every General test (not only those sharing a number "
                "with a situation test), each situation test one observation, difference = situation mean − Default "
                "mean, two-sample t (Student's when an F test of the variances gives p > .01, else Welch's), "
                f"↑/↓ when p < {apa.fmt_p(EB_ALPHA)}, − otherwise. These are the figures of EmotionBench's tables; "
                "psyq's paired change differs because its before scores are a subset of the Default."]
    overall = table[table["level"] == "overall"]
    for row in overall.itertuples():
        if not is_finite(row.t):
            readings.append(f"EmotionBench's comparison, {row.backend_id} {row.subscale}: not estimable ({row.note}).")
            continue
        readings.append(
            f"EmotionBench's comparison, {row.backend_id} {row.subscale}, all situations: Default "
            f"{apa.fmt_num(row.mean_default)} (SD {apa.fmt_num(row.sd_default)}, n = {int(row.n_default)} General tests), "
            f"after the situations {apa.fmt_num(row.mean_situation)} (n = {int(row.n_situation)} tests): "
            f"{row.direction} ({'+' if row.difference > 0 else ''}{apa.fmt_num(row.difference, 1)}), {row.test} t({apa.fmt_num(row.df, 1) if row.test == 'Welch' else int(row.df)}) "
            f"= {apa.fmt_num(row.t)}, p {apa.p_clause(row.p)}.")
    return readings, [Table("EmotionBench's own comparison: situation tests against the mean of all General tests "
                            "(two-sample t), per factor, emotion and overall", table)]


def add_change_card(report: ReportContext, scores: pd.DataFrame, humans: pd.DataFrame | None) -> None:
    """Append the verdict's ``change`` card (:func:`psyq.analysis.statistics.standin.design_verdict.change_scorecard`:
    the personas' change per emotion against people's, ``not estimable`` rows without people's change) to
    ``report.design_cards``, when any change score could be computed. The model answering as itself (the
    baseline respondent) is one respondent, not a cohort, and is left out, as in the questionnaires' verdict."""
    changes = change_scores(scores[scores["respondent_id"].astype(str) != BASELINE.id]).changes
    if not changes.empty:
        report.design_cards.append(change_scorecard(changes, humans, bound=report.bound))


class ChangeSection(ReportSection):
    """"Change after the evoked situations", the report of a run with stages (measure, evoke,
    measure): change scores, compared with the people's before and after (``--human-change``) when
    given, and the verdict's ``change`` card (:func:`add_change_card`). Norms, reliability and item
    analyses are not computed for such a run."""

    name = "change"

    def applies(self, report: ReportContext) -> bool:
        return report.staged

    def sections(self, report: ReportContext) -> list[Section]:
        from psyq.analysis.scoring.stage_scores import load_stage_scores
        from psyq.analysis.scoring.human_data import read_human_change_csv

        humans = read_human_change_csv(report.human_change) if report.human_change is not None else None
        scores = load_stage_scores(report.run_path)
        section = change_section(scores, humans)
        section.readings.append("Norm comparison, reliability and item analyses are not computed for a run with "
                                "stages: each respondent answers the measure once per stage and situation.")
        add_change_card(report, scores, humans)
        return [section]
