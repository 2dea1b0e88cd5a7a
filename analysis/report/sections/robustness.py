"""The report's section on perturbation robustness: how far ratings move when only the surface of a
reply changes (the statistics: :mod:`psyq.analysis.statistics.robustness`).

Example:
    >>> sections = robustness_sections(read_ratings(store), read_log(store))  # needs a store with ratings  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from psyq.analysis.report.apa import say_num, say_pct
from psyq.analysis.report.section import Section
from psyq.analysis.report.figures import new_figure, is_finite, message_figure, series_style, in_order, wrap_to_width
from psyq.analysis.statistics.robustness import CI_METHOD, TABLE_COLUMNS, robustness_table


def robustness_chart(table: pd.DataFrame) -> Figure:
    """Mean change (perturbed − original) with its 95 % CI per perturbation (rows; · rater when
    there are several) and dimension (one marker set each); a line at 0 (no change)."""
    title = "Change in rating under each perturbation (perturbed − original, 95 % CI)"
    if table is None or table.empty:
        return message_figure("no perturbed texts rated: no changes to show", title)
    several = table[["rater_kind", "rater_id"]].drop_duplicates().shape[0] > 1
    table = table.assign(row=table["perturbation"] + (" · " + table["rater_id"] if several else ""),
                         dim=table["rubric_id"] + ": " + table["dimension"])
    rows, dims = in_order(table["row"]), in_order(table["dim"])
    fig = new_figure(7, max(2.8, 0.38 * len(rows) * max(1, len(dims) ** 0.5) + 1.8))
    ax = fig.add_subplot()
    offsets = np.linspace(-0.25, 0.25, len(dims)) if len(dims) > 1 else np.zeros(1)
    for d, dim in enumerate(dims):
        style = series_style(d)
        labelled = False
        for y, row in enumerate(rows):
            cell = table[(table["row"] == row) & (table["dim"] == dim)]
            if cell.empty:
                continue
            r = cell.iloc[0]
            if not is_finite(r["mean_change"]):
                # Said on the row (the reason is in the table): a blank row would read as "no change".
                # From the left edge of the axes, so the note stays inside the figure however wide.
                note = ax.annotate(f"{dim}: not estimable (n = {int(r['n_pairs'])})", (0.01, y + offsets[d]),
                                   xycoords=("axes fraction", "data"), va="center", fontsize=8,
                                   color=style["color"], gid=f"robustness-missing:{row}:{dim}")
                note.set_in_layout(False)
                continue
            has_ci = is_finite(r["ci_low"]) and is_finite(r["ci_high"])
            xerr = [[r["mean_change"] - r["ci_low"]], [r["ci_high"] - r["mean_change"]]] if has_ci else None
            ax.errorbar([r["mean_change"]], [y + offsets[d]], xerr=xerr, fmt=style["marker"], color=style["color"],
                        capsize=3, markersize=6, label=None if labelled else dim, gid=f"robustness:{row}:{dim}")
            labelled = True
    ax.axvline(0, color="0.5", linewidth=1)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("change in level (perturbed − original)")
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", frameon=False, fontsize=9, ncol=min(3, len(labels)))
    fig.suptitle(wrap_to_width(title, 7, 12), fontsize=12)
    return fig


def robustness_sections(ratings: pd.DataFrame, log: pd.DataFrame | None = None) -> list[Section]:
    """The report's section on perturbation robustness (none when the run has no perturbed texts
    with ratings and no perturbation log). `ratings` :func:`psyq.engine.store.ratings.read_ratings`; `log` :func:`psyq.engine.judging.perturbed_replies.read_log` (for
    rewrites that came back unusable and rules that changed nothing).

    Example:
        >>> sections = robustness_sections(read_ratings(store), read_log(store))  # needs a store with ratings  # doctest: +SKIP
    """
    has_perturbed = not ratings.empty and ratings["original_id"].notna().any()
    if not has_perturbed and (log is None or log.empty):
        return []
    section = Section("Robustness of ratings to perturbed replies")
    table = robustness_table(ratings) if has_perturbed else pd.DataFrame(columns=TABLE_COLUMNS)
    section.readings.append(
        "Each perturbed reply is paired with its original as rated by the same rater on the same dimension; the "
        f"change is perturbed − original level. Intervals: {CI_METHOD}. A rater whose scores follow the content "
        "of a reply rather than its surface shows changes near 0 for the character-level perturbations.")
    for r in table.itertuples():
        where = f"{r.perturbation}, {r.rubric_id} {r.dimension} ({r.rater_kind} {r.rater_id})"
        if not is_finite(r.mean_change):
            section.readings.append(f"{where}: change not estimable ({r.reason}).")
            continue
        ci = f"95 % CI {say_num(r.ci_low)} to {say_num(r.ci_high)}" if is_finite(r.ci_low) else "no CI"
        moved = ""
        if is_finite(r.ci_low) and (r.ci_low > 0 or r.ci_high < 0):
            moved = " The interval excludes 0: this rater's scores move under this perturbation."
        section.readings.append(
            f"{where}: mean change {say_num(r.mean_change)} ({ci}) over {r.n_pairs} pair(s); the level changed for "
            f"{say_pct(r.share_changed)} (up {say_pct(r.share_up)}, down {say_pct(r.share_down)}).{moved}"
            + (f" Note: {r.reason}." if isinstance(r.reason, str) and is_finite(r.ci_low) else ""))
    if log is not None and not log.empty:
        for p, rows in log.groupby("perturbation", sort=False):
            unusable, unchanged = int((rows["status"] == "unusable").sum()), int((rows["status"] == "unchanged").sum())
            failed = int((rows["status"] == "failed").sum())
            if unusable:
                section.readings.append(f"{p}: {unusable} of {len(rows)} rewrite(s) were unusable (empty, a refusal "
                                        "or too long) and have no perturbed text; their originals are not in this "
                                        "perturbation's pairs.")
            if failed:
                section.readings.append(f"{p}: {failed} of {len(rows)} rewrite(s) failed (no answer from the backend) "
                                        "and are not in the pairs; `psyq perturb` again asks for them.")
            if unchanged:
                section.readings.append(f"{p}: the rule found nothing to change in {unchanged} of {len(rows)} "
                                        "text(s); they are rated with the original's text and count as pairs.")
    if has_perturbed:
        section.add_table("Change in rating per perturbation, dimension and rater (perturbed − original)", table)
        section.figures.append(("Change in rating per perturbation and dimension (95 % CI, t-based)",
                                robustness_chart(table)))
    else:
        section.readings.append("No perturbed reply is rated yet: rate them (psyq judge) to see the changes.")
    return [section]
