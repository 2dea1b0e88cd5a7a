"""Robustness of ratings to perturbed texts: how far a rater's score moves when only the surface
of a reply changes (typos, leetspeak, a paraphrase ...), per perturbation × dimension × rater.

Each perturbed target (``original_id`` set, see :mod:`psyq.engine.judging.perturbed_replies`) is paired with its original
as rated by the *same* rater on the same rubric dimension; the change is perturbed − original
level. Per perturbation × rubric × dimension × rater the table gives the number of pairs, the
mean change with a 95 % confidence interval from the t distribution (mean ± t(0.975, n − 1) · SD / √n,
pairs treated as independent: one per original reply), and the share of pairs whose level changed,
went up and went down. A cell with no pair, or one pair (no SD, so no interval), has NaN with the
reason in column ``reason``; nothing is left out without a word.

Example:
    >>> ratings = read_ratings(store, "empathy_ceb")        # doctest: +SKIP
    >>> robustness_table(ratings)                          # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from psyq.analysis.plots import _figure, _finite, _message_figure, _style, _unique, wrap_to_width

CELL = ["perturbation", "rubric_id", "dimension", "rater_kind", "rater_id"]
PAIR_COLUMNS = [*CELL, "original_id", "response_id", "original_level", "perturbed_level", "change"]
TABLE_COLUMNS = [*CELL, "n_perturbed", "n_pairs", "mean_original", "mean_perturbed", "mean_change", "sd_change",
                 "ci_low", "ci_high", "share_changed", "share_up", "share_down", "reason"]
CI_METHOD = "t-based 95 % CI: mean ± t(0.975, n − 1) · SD / √n over pairs (one pair per original reply)"


def paired_changes(ratings: pd.DataFrame) -> pd.DataFrame:
    """Every perturbed rating next to the same rater's rating of the original, with the change.

    `ratings` is :func:`psyq.engine.store.ratings.read_ratings`'s frame. A perturbed rating whose level, or
    whose original's level, is missing (or whose original this rater did not rate) keeps the row
    with ``change`` NaN, so the summary can count it.

    Example:
        >>> r = pd.DataFrame({"response_id": ["a", "b"], "original_id": [None, "a"],
        ...                   "perturbation": [None, "typos"], "rubric_id": "x", "dimension": "level",
        ...                   "rater_kind": "judge", "rater_id": "j", "level": [3.0, 2.0]})
        >>> paired_changes(r)["change"].tolist()
        [-1.0]
    """
    keys = ["rubric_id", "dimension", "rater_kind", "rater_id"]
    perturbed = ratings[ratings["original_id"].notna()]
    originals = ratings[ratings["original_id"].isna()][["response_id", *keys, "level"]]
    merged = perturbed[["response_id", "original_id", "perturbation", *keys, "level"]].merge(
        originals.rename(columns={"response_id": "original_id", "level": "original_level"}),
        on=["original_id", *keys], how="left")
    merged = merged.rename(columns={"level": "perturbed_level"})
    merged["change"] = merged["perturbed_level"] - merged["original_level"]
    return merged[PAIR_COLUMNS].reset_index(drop=True)


def mean_change_ci(changes: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float, str | None]:
    """(mean, SD, CI low, CI high, reason) of paired changes; NaN with a reason when not estimable.

    Example:
        >>> [round(x, 3) for x in mean_change_ci(np.array([0.0, -1.0, -2.0]))[:4]]
        [-1.0, 1.0, -3.484, 1.484]
    """
    n = len(changes)
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan, "no pair with both levels"
    mean = float(np.mean(changes))
    if n == 1:
        return mean, math.nan, math.nan, math.nan, "one pair only: no SD, so no confidence interval"
    sd = float(np.std(changes, ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    reason = "every pair changed by the same amount: the interval has zero width" if sd == 0 else None
    return mean, sd, mean - half, mean + half, reason


def robustness_table(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per perturbation × rubric × dimension × rater: pairs, mean change with 95 % CI (t-based),
    and the shares of pairs whose level changed, went up, went down (columns :data:`TABLE_COLUMNS`).

    Example:
        >>> r = pd.DataFrame({"response_id": ["a", "b", "c", "d"], "original_id": [None, None, "a", "b"],
        ...                   "perturbation": [None, None, "p", "p"], "rubric_id": "x", "dimension": "level",
        ...                   "rater_kind": "judge", "rater_id": "j", "level": [3.0, 2.0, 2.0, 2.0]})
        >>> robustness_table(r)[["n_pairs", "mean_change", "share_changed", "share_down"]].values.tolist()
        [[2.0, -0.5, 0.5, 0.5]]
    """
    pairs = paired_changes(ratings)
    rows: list[dict[str, Any]] = []
    for cell, group in pairs.groupby(CELL, sort=False):
        changes = group["change"].dropna().to_numpy(dtype=float)
        mean, sd, low, high, reason = mean_change_ci(changes)
        missing = len(group) - len(changes)
        if missing:
            why = (f"{missing} of {len(group)} perturbed text(s) left out: no level for it or for its original "
                   "from this rater")
            reason = f"{reason}; {why}" if reason else why
        n = len(changes)
        complete = group.dropna(subset=["change"])
        rows.append({**dict(zip(CELL, cell)), "n_perturbed": len(group), "n_pairs": n,
                     "mean_original": float(complete["original_level"].mean()) if n else math.nan,
                     "mean_perturbed": float(complete["perturbed_level"].mean()) if n else math.nan,
                     "mean_change": mean, "sd_change": sd, "ci_low": low, "ci_high": high,
                     "share_changed": float(np.mean(changes != 0)) if n else math.nan,
                     "share_up": float(np.mean(changes > 0)) if n else math.nan,
                     "share_down": float(np.mean(changes < 0)) if n else math.nan,
                     "reason": reason})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


# --- the report part ------------------------------------------------------------------------------

def robustness_chart(table: pd.DataFrame) -> Figure:
    """Mean change (perturbed − original) with its 95 % CI per perturbation (rows; · rater when
    there are several) and dimension (one marker set each); a line at 0 (no change)."""
    title = "Change in rating under each perturbation (perturbed − original, 95 % CI)"
    if table is None or table.empty:
        return _message_figure("no perturbed texts rated: no changes to show", title)
    several = table[["rater_kind", "rater_id"]].drop_duplicates().shape[0] > 1
    table = table.assign(row=table["perturbation"] + (" · " + table["rater_id"] if several else ""),
                         dim=table["rubric_id"] + ": " + table["dimension"])
    rows, dims = _unique(table["row"]), _unique(table["dim"])
    fig = _figure(7, max(2.8, 0.38 * len(rows) * max(1, len(dims) ** 0.5) + 1.8))
    ax = fig.add_subplot()
    offsets = np.linspace(-0.25, 0.25, len(dims)) if len(dims) > 1 else np.zeros(1)
    for d, dim in enumerate(dims):
        style = _style(d)
        labelled = False
        for y, row in enumerate(rows):
            cell = table[(table["row"] == row) & (table["dim"] == dim)]
            if cell.empty:
                continue
            r = cell.iloc[0]
            if not _finite(r["mean_change"]):
                # Said on the row (the reason is in the table): a blank row would read as "no change".
                # From the left edge of the axes, so the note stays inside the figure however wide.
                note = ax.annotate(f"{dim}: not estimable (n = {int(r['n_pairs'])})", (0.01, y + offsets[d]),
                                   xycoords=("axes fraction", "data"), va="center", fontsize=8,
                                   color=style["color"], gid=f"robustness-missing:{row}:{dim}")
                note.set_in_layout(False)
                continue
            has_ci = _finite(r["ci_low"]) and _finite(r["ci_high"])
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


def robustness_sections(run: Any, ratings: pd.DataFrame, log: pd.DataFrame | None = None) -> list[Any]:
    """The report's section on perturbation robustness (none when the run has no perturbed texts
    with ratings and no perturbation log). `run` is the :class:`psyq.analysis.kinds.ReportInput`;
    `ratings` :func:`psyq.engine.store.ratings.read_ratings`; `log` :func:`psyq.engine.judging.perturbed_replies.read_log` (for
    rewrites that came back unusable and rules that changed nothing).

    Example:
        >>> sections = robustness_sections(report_input, read_ratings(store), read_log(store))  # doctest: +SKIP
    """
    has_perturbed = not ratings.empty and ratings["original_id"].notna().any()
    if not has_perturbed and (log is None or log.empty):
        return []
    num, pct = run.num, run.pct
    section = run.section("Robustness of ratings to perturbed replies")
    table = robustness_table(ratings) if has_perturbed else pd.DataFrame(columns=TABLE_COLUMNS)
    section.readings.append(
        "Each perturbed reply is paired with its original as rated by the same rater on the same dimension; the "
        f"change is perturbed − original level. Intervals: {CI_METHOD}. A rater whose scores follow the content "
        "of a reply rather than its surface shows changes near 0 for the character-level perturbations.")
    for r in table.itertuples():
        where = f"{r.perturbation}, {r.rubric_id} {r.dimension} ({r.rater_kind} {r.rater_id})"
        if not _finite(r.mean_change):
            section.readings.append(f"{where}: change not estimable ({r.reason}).")
            continue
        ci = f"95 % CI {num(r.ci_low)} to {num(r.ci_high)}" if _finite(r.ci_low) else "no CI"
        moved = ""
        if _finite(r.ci_low) and (r.ci_low > 0 or r.ci_high < 0):
            moved = " The interval excludes 0: this rater's scores move under this perturbation."
        section.readings.append(
            f"{where}: mean change {num(r.mean_change)} ({ci}) over {r.n_pairs} pair(s); the level changed for "
            f"{pct(r.share_changed)} (up {pct(r.share_up)}, down {pct(r.share_down)}).{moved}"
            + (f" Note: {r.reason}." if isinstance(r.reason, str) and _finite(r.ci_low) else ""))
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
        section.tables.append(("Change in rating per perturbation, dimension and rater (perturbed − original)", table))
        section.figures.append(("Change in rating per perturbation and dimension (95 % CI, t-based)",
                                robustness_chart(table)))
    else:
        section.readings.append("No perturbed reply is rated yet: rate them (psyq judge) to see the changes.")
    return [section]


__all__ = ["CI_METHOD", "PAIR_COLUMNS", "TABLE_COLUMNS", "mean_change_ci", "paired_changes", "robustness_chart",
           "robustness_sections", "robustness_table"]
