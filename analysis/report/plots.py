"""The report's figures of its statistics: cohort profiles against norm bands and score
distributions over the norms' curves (the norms section), item heatmaps and SD ratios (the
instrument), item distances, correlation heatmaps and factor congruence against people's data, and
test information curves (the same construct). Each returns a figure; an empty input gives a figure
that says what is missing. How a figure is made, saved and encoded (palette, new figure, message
figure, data URI) is :mod:`psyq.analysis.report.figures`.

Not run: the figures need a norm comparison of a run; tests/test_plots.py, tests/test_apa_report.py,
tests/test_validity.py and tests/test_irt.py draw them.

Example
-------
>>> fig = profile_plot(comparison, "iri")                 # doctest: +SKIP
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from scipy import stats

from psyq.analysis.statistics.intervals import mean_interval
from psyq.analysis.report.figures import (BAND_COLOUR, COLOURS, LINESTYLES, NORM_COLOUR, SAMPLE_COLOURS, in_order,
                                          is_finite, legend_columns, message_figure, new_figure, series_style,
                                          wrap_to_width)

NO_NORMS = "no norms for this instrument"


def _verification_note(rows: pd.DataFrame) -> str:
    """' (norms unverified)' and the like when the rows' norm sample is not verified from its
    source table or raw data (column `norm_verified` of the norm table; nothing without it)."""
    if "norm_verified" not in rows.columns or rows.empty:
        return ""
    status = str(rows["norm_verified"].iloc[0])
    return {"unverified": " (norms unverified)", "secondary-source": " (norms from a secondary source)"}.get(status, "")


def _truthy(x: Any) -> bool:
    return False if x is None or (not isinstance(x, str) and pd.isna(x)) else bool(x)


def _n_text(values: list) -> str:
    """"cohort n = 6 respondents" (or a range); the noun agrees with the largest n."""
    ns = sorted({int(v) for v in values if is_finite(v)})
    if not ns:
        return "cohort n = 0 respondents"
    counted = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    return f"cohort n = {counted} respondent{'s' if ns[-1] != 1 else ''}"


def respondents_text(frame: pd.DataFrame) -> str:
    """How many people a set of scores or answers comes from, and how many repeats each:
    "15 respondents (4 repeats each)"; rows are (respondent_id, repeat) pairs, so n counts people,
    never rows.

    Example
    -------
    >>> respondents_text(pd.DataFrame({"respondent_id": ["a", "a", "b", "b"], "repeat": [0, 1, 0, 1]}))
    '2 respondents (2 repeats each)'
    """
    if frame.empty:
        return "0 respondents"
    people = frame["respondent_id"].nunique()
    text = f"{people} respondent{'s' if people != 1 else ''}"
    if "repeat" not in frame.columns:
        return text
    per = frame.drop_duplicates(["respondent_id", "repeat"]).groupby("respondent_id").size()
    lo, hi = int(per.min()), int(per.max())
    if hi <= 1:
        return text
    return text + (f" ({lo} repeats each)" if lo == hi else f" ({lo}–{hi} repeats each)")


# --------------------------------------------------------------------------------------------
# Profile: cohort means with CIs against norm bands


PANELS_PER_ROW = 3


def profile_plot(comparison: pd.DataFrame, instrument_id: str) -> Figure:
    """Cohort mean per subscale with its 95 % CI (mean ± t_{n−1,.975}·sd/√n) next to the norm
    mean ± 1 SD (shaded band, line at the mean); one panel per norm group, one marker set per backend.

    `comparison` has the columns of :func:`psyq.analysis.statistics.norms.compare_with_norms` (``backend_id,
    instrument, subscale, norm_sample, norm_group, n, mean, sd, norm_n, norm_mean, norm_sd`` are used).
    The band artists carry ``gid = "norm-band:<sample>:<group>:<subscale>"``.
    """
    rows = comparison[comparison["instrument"] == instrument_id] if not comparison.empty else comparison
    if rows.empty:
        return message_figure(NO_NORMS, f"{instrument_id}: cohort means against human norms")
    subscales = in_order(rows["subscale"])
    groups = in_order(rows[["norm_sample", "norm_group"]].apply(tuple, axis=1))
    backends = in_order(rows["backend_id"])
    n_panels = len(groups)
    # At most three panels a row: with several norm samples, one row of six panels would shrink
    # every panel (and its text) below legibility in a page 1,200 px wide.
    n_cols = min(n_panels, PANELS_PER_ROW)
    n_rows = math.ceil(n_panels / n_cols)
    # A panel at least 2.8 inches wide: narrower, its three-line title is cut (one subscale).
    width = max(2.8, min(4.8, 1.3 + 0.75 * len(subscales) * max(1, len(backends) ** 0.5)))
    fig_width = max(4.5, width * n_cols)
    fig = new_figure(fig_width, 4.6 * n_rows)
    grid = fig.subplots(n_rows, n_cols, sharey=True, squeeze=False)
    axes = list(grid.ravel())
    for unused in axes[n_panels:]:
        unused.set_visible(False)
    offsets = (np.linspace(-0.22, 0.22, len(backends)) if len(backends) > 1 else np.zeros(1))
    for ax, (sample, group) in zip(axes, groups):
        panel = rows[(rows["norm_sample"] == sample) & (rows["norm_group"] == group)]
        for x, sub in enumerate(subscales):
            norm = panel[panel["subscale"] == sub]
            if norm.empty or not is_finite(norm["norm_mean"].iloc[0]):
                continue
            m, sd = float(norm["norm_mean"].iloc[0]), float(norm["norm_sd"].iloc[0])
            sd = sd if is_finite(sd) else 0.0
            ax.add_patch(Rectangle((x - 0.4, m - sd), 0.8, 2 * sd, facecolor=BAND_COLOUR, alpha=0.55,
                                   edgecolor="none", zorder=1, gid=f"norm-band:{sample}:{group}:{sub}"))
            ax.plot([x - 0.4, x + 0.4], [m, m], color=NORM_COLOUR, lw=1.4, zorder=2,
                    gid=f"norm-mean:{sample}:{group}:{sub}")
        for b, backend in enumerate(backends):
            style = series_style(b)
            for x, sub in enumerate(subscales):
                cell = panel[(panel["backend_id"] == backend) & (panel["subscale"] == sub)]
                if cell.empty or not is_finite(cell["mean"].iloc[0]):
                    continue
                r = cell.iloc[0]
                low, high = mean_interval(float(r["mean"]), r["sd"], r["n"])
                yerr = [[r["mean"] - low], [high - r["mean"]]] if is_finite(low) else None
                ax.errorbar([x + offsets[b]], [r["mean"]], yerr=yerr, fmt=style["marker"],
                            color=style["color"], markersize=7, capsize=4, elinewidth=1.6,
                            markeredgecolor="white", markeredgewidth=0.6, zorder=3,
                            gid=f"cohort:{backend}:{sample}:{group}:{sub}")
        ax.set_xticks(range(len(subscales)), [str(s) for s in subscales])
        ax.set_xlim(-0.6, len(subscales) - 0.4)
        ax.set_xlabel("Subscale")
        derived = " (derived)" if panel["norm_derived"].map(_truthy).any() else ""
        norm_n = panel["norm_n"].dropna()
        norm_n_text = f"norm n = {int(norm_n.iloc[0])}" if len(norm_n) and is_finite(norm_n.iloc[0]) else ""
        flagged = _verification_note(panel).strip(" ()")
        # Three short lines: a panel is about 4 inches wide, too narrow for one long title.
        second = "; ".join(t for t in (flagged, norm_n_text) if t)
        ax.set_title(wrap_to_width(f"{sample} — {group}{derived}\n{second}\n{_n_text(panel['n'].tolist())}",
                                   width - 0.5, 10), fontsize=10)
        ax.grid(axis="y", color="#E5E5E5", lw=0.8, zorder=0)
        ax.set_axisbelow(True)
    for row in grid:
        row[0].set_ylabel("Subscale score (norm's metric)")
    handles = [Line2D([], [], ls="none", markersize=7, label=f"{backend}: cohort mean, 95 % CI", **series_style(b))
               for b, backend in enumerate(backends)]
    handles.append(Patch(facecolor=BAND_COLOUR, alpha=0.55, label="human norm: mean ± 1 SD"))
    fig.legend(handles=handles, loc="outside lower center", frameon=False, fontsize=9,
               ncol=legend_columns([h.get_label() for h in handles], fig_width, 9, 3))
    fig.suptitle(wrap_to_width(f"{instrument_id}: cohort mean (95 % CI) vs human norm mean ± 1 SD, per norm group",
                               fig_width, 12), fontsize=12)
    return fig


# --------------------------------------------------------------------------------------------
# Distribution: cohort histogram over the norm's normal curves


def distribution_plot(scores: pd.DataFrame, comparison: pd.DataFrame, instrument_id: str,
                      subscale: str, score_range: tuple[float, float] | None = None) -> Figure:
    """Histogram (density) of the cohort's scores on one subscale, one per backend, over the normal
    density N(norm_mean, norm_sd) of each norm group. Scores of all repeats are pooled; missing
    scores are left out and counted in the legend.

    `score_range` (lowest, highest possible score) bounds the x axis, and the normal curves are drawn
    only within it (not renormalised: they stay the norms' N(mean, SD²), which puts some mass on
    scores no one can have; the axis label says they are cut there). Without it the axis spans
    ±3.5 SD around every norm mean.

    Without norms for the subscale the histogram is drawn alone and the title says so; without
    scores as well, the figure says "no norms for this instrument".
    """
    title = f"{instrument_id} {subscale}: cohort score distribution vs human norms"
    if not scores.empty:
        sel = scores[(scores["instrument"] == instrument_id) & (scores["subscale"] == subscale)]
    else:
        sel = scores
    norms = comparison[(comparison["instrument"] == instrument_id) & (comparison["subscale"] == subscale)] \
        if not comparison.empty else comparison
    values = pd.to_numeric(sel["score"], errors="coerce") if not sel.empty else pd.Series(dtype=float)
    if norms.empty and values.dropna().empty:
        return message_figure(NO_NORMS, title)
    norm_rows = norms.drop_duplicates(["norm_sample", "norm_group"]) if not norms.empty else norms
    norm_rows = norm_rows[norm_rows["norm_mean"].map(is_finite) & norm_rows["norm_sd"].map(is_finite)] \
        if not norm_rows.empty else norm_rows

    present = values.dropna()
    bins = None
    if len(present):
        whole = np.allclose(present, np.round(present))
        if whole and present.max() - present.min() <= 60:
            bins = np.arange(present.min() - 0.5, present.max() + 1.5, 1.0)
        else:
            bins = np.histogram_bin_edges(present, bins="auto")

    # x range: every histogram bin and ±3.5 SD around every norm mean, within the possible scores
    lows, highs = [], []
    if bins is not None:
        lows.append(bins[0])
        highs.append(bins[-1])
    for r in norm_rows.itertuples():
        lows.append(r.norm_mean - 3.5 * r.norm_sd)
        highs.append(r.norm_mean + 3.5 * r.norm_sd)
    if score_range is not None:
        # a bar around a score at an end reaches half a bin beyond it
        lows = [max(x, score_range[0]) for x in lows] + ([bins[0]] if bins is not None else [])
        highs = [min(x, score_range[1]) for x in highs] + ([bins[-1]] if bins is not None else [])
    lo, hi = float(min(lows)), float(max(highs))
    pad = 0.02 * (hi - lo) if hi > lo else 1.0
    curve_lo, curve_hi = (lo - pad, hi + pad) if score_range is None else score_range
    lo, hi = lo - pad, hi + pad

    fig = new_figure(7, 4.3)
    ax = fig.add_subplot()
    if bins is not None:
        backends = in_order(sel["backend_id"])
        for b, backend in enumerate(backends):
            v = pd.to_numeric(sel.loc[sel["backend_id"] == backend, "score"], errors="coerce")
            got, missing = v.dropna(), int(v.isna().sum())
            # n counts people: with repeats, one person gives several scores to the histogram.
            who = respondents_text(sel.loc[v.dropna().index]) if {"respondent_id"} <= set(sel.columns) \
                else f"{len(got)} scores"
            label = f"{backend} cohort (n = {who}" + (f"; {missing} score{'s' if missing != 1 else ''} missing)" if missing else ")")
            if len(got):
                ax.hist(got, bins=bins, density=True, histtype="stepfilled", alpha=0.45 if len(backends) > 1 else 0.6,
                        color=COLOURS[b % len(COLOURS)], edgecolor=COLOURS[b % len(COLOURS)], linewidth=1.2,
                        label=label)
    grid = np.linspace(curve_lo, curve_hi, 400)
    # One colour per norm sample, one line style per group within it: no two curves look alike.
    sample_colour = {sample: SAMPLE_COLOURS[i % len(SAMPLE_COLOURS)]
                     for i, sample in enumerate(in_order(norm_rows["norm_sample"]))}
    group_number: dict[str, int] = {}
    for r in norm_rows.itertuples():
        g = group_number[r.norm_sample] = group_number.get(r.norm_sample, -1) + 1
        n_text = f", n = {int(r.norm_n)}" if is_finite(r.norm_n) else ""
        ax.plot(grid, stats.norm.pdf(grid, r.norm_mean, r.norm_sd), color=sample_colour[r.norm_sample],
                ls=LINESTYLES[g % len(LINESTYLES)], lw=1.8,
                label=f"norm {r.norm_group} ({r.norm_sample}{_verification_note(pd.DataFrame([r._asdict()]))}): "
                      f"N({r.norm_mean:.2f}, {r.norm_sd:.2f}²){n_text}",
                gid=f"norm-density:{r.norm_sample}:{r.norm_group}")
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom=0)
    extent = "" if score_range is None else f"possible scores {score_range[0]:g}\u2013{score_range[1]:g}"
    if extent and len(norm_rows):
        extent += "; normal curves cut at its ends"
    ax.set_xlabel(f"{subscale} score" + (" (norm's metric" + (f"; {extent})" if extent else ")") if len(norm_rows)
                                         else f" ({extent})" if extent else ""))
    ax.set_ylabel("Density")
    ax.grid(axis="y", color="#E5E5E5", lw=0.8)
    ax.set_axisbelow(True)
    # Below the axes, not over the bars: with several norm samples the legend is long.
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8.5, frameon=False, loc="outside lower center")
    fig.suptitle(wrap_to_width(title if len(norm_rows) else f"{title} ({NO_NORMS})", 7, 12), fontsize=12)
    return fig


# --------------------------------------------------------------------------------------------
# Item heatmap


def _option_label(option: Any, width: int = 12) -> str:
    if option.label:
        return f"{option.value}\n" + "\n".join(textwrap.wrap(option.label, width))
    return str(option.value)


def _item_label(item: Any, width: int = 56) -> str:
    text = " ".join(item.text.split())
    text = text if len(text) <= width else text[: width - 1].rstrip() + "…"
    return f"{item.id}{' (R)' if item.reverse else ''}  {text}"


def item_shares(table: pd.DataFrame, instrument: Any) -> pd.DataFrame:
    """Share of answers per item (rows, published order) and raw scale value (columns), plus a final
    ``missing`` column (answers without a value); each row sums to 1 over the answers present."""
    rows = table[table["instrument"] == instrument.id] if "instrument" in table.columns else table
    columns = [o.value for o in instrument.scale] + ["missing"]
    item_ids = [i.id for i in instrument.rating_items]
    values = pd.to_numeric(rows["value"], errors="coerce").to_numpy(dtype=float)
    present = ~np.isnan(values)
    items = rows["item_id"].astype(str).to_numpy()
    # counted as whole values (a value is an option's), missing answers in their own column
    counts = pd.crosstab(items[present], values[present].astype(int)) if present.any() else pd.DataFrame()
    counts = counts.reindex(index=item_ids, columns=columns, fill_value=0).fillna(0)
    counts["missing"] = pd.Series(items[~present]).value_counts().reindex(item_ids, fill_value=0).to_numpy()
    totals = counts.sum(axis=1)
    return counts.div(totals.where(totals > 0), axis=0)


def item_heatmap(table: pd.DataFrame, instrument) -> Figure:
    """Share of answers per item (rows, in published order) and response option (columns: raw scale
    values with their labels, then missing answers), annotated; one panel per backend, repeats pooled.

    Shares are of raw (unkeyed) values; reverse-keyed items are marked (R).
    """
    title = f"{instrument.id}: share of answers per item and response option (raw values)"
    rows = table[table["instrument"] == instrument.id] if not table.empty else table
    if rows.empty:
        return message_figure(f"no answers for {instrument.id}", title)
    backends = in_order(rows["backend_id"])
    columns = [_option_label(o) for o in instrument.scale] + ["missing"]
    n_items = len(instrument.rating_items)
    panel_width = 0.62 * len(columns) + 0.4
    fig_width = 3.6 + panel_width * len(backends) + 0.9
    fig = new_figure(fig_width, max(3.6, 0.27 * n_items + 2.0))
    axes = fig.subplots(1, len(backends), sharey=True, squeeze=False)[0]
    image = None
    for ax, backend in zip(axes, backends):
        part = rows[rows["backend_id"] == backend]
        shares = item_shares(part, instrument)
        matrix = shares.to_numpy(dtype=float)
        image = ax.imshow(matrix, cmap="viridis", vmin=0, vmax=1, aspect="auto", interpolation="nearest",
                          gid=f"heatmap:{backend}")
        for (i, j), share in np.ndenumerate(matrix):
            if is_finite(share) and share > 0:
                ax.text(j, i, f"{100 * share:.0f}", ha="center", va="center", fontsize=7.5,
                        color="white" if share < 0.55 else "black")
        ax.set_xticks(range(len(columns)), columns, fontsize=7.5)
        ax.xaxis.tick_top()
        ax.tick_params(axis="x", length=0)
        ax.set_yticks(range(n_items), [_item_label(i) for i in instrument.rating_items], fontsize=7.5)
        ax.tick_params(axis="y", length=0)
        ax.set_xticks(np.arange(-0.5, len(columns)), minor=True)
        ax.set_yticks(np.arange(-0.5, n_items), minor=True)
        ax.grid(which="minor", color="white", lw=0.6)
        ax.tick_params(which="minor", length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        per_item = part.groupby("item_id").size()
        ax.set_xlabel(wrap_to_width(f"{backend}: {_n_answers_text(per_item)} per item, from "
                                    f"{respondents_text(part)}", panel_width, 9), fontsize=9)
    cbar = fig.colorbar(image, ax=list(axes), shrink=0.6, pad=0.02)
    cbar.set_label("Share of answers (cell labels in %)", fontsize=9)
    fig.suptitle(wrap_to_width(title + "\n(R) = reverse-keyed item; missing = no usable answer", fig_width, 11),
                 fontsize=11)
    return fig


def _n_answers_text(per_item: pd.Series) -> str:
    if per_item.empty:
        return "0 answers"
    lo, hi = int(per_item.min()), int(per_item.max())
    return f"{lo} answers" if lo == hi else f"{lo}–{hi} answers"


# --------------------------------------------------------------------------------------------
# SD ratios


def sd_ratio_chart(ratios: pd.DataFrame) -> Figure:
    """Cohort SD / norm SD with 95 % CI per instrument × subscale × norm group (one row each, as
    returned by :func:`psyq.analysis.statistics.standin.fidelity.sd_ratio`), one marker set per ``backend_id``; reference lines at 1 (human-like spread) and 0.5 (half the human SD).
    Rows flagged ``collapsed`` are drawn hollow and labelled."""
    title = "Cohort SD relative to the human norm SD (95 % CI)"
    if ratios is None or ratios.empty:
        return message_figure("no norms: no SD ratios to show", title)
    keys = in_order(ratios[["instrument", "subscale", "norm_group"]].apply(tuple, axis=1))
    backends = in_order(ratios["backend_id"])
    offsets = (np.linspace(-0.2, 0.2, len(backends)) if len(backends) > 1 else np.zeros(1))
    fig = new_figure(7, max(2.8, 0.42 * len(keys) * max(1, len(backends) ** 0.5) + 1.8))
    ax = fig.add_subplot()
    top = []
    any_collapsed = False
    for b, backend in enumerate(backends):
        style = series_style(b)
        for y, (inst, sub, group) in enumerate(keys):
            cell = ratios[(ratios["backend_id"] == backend) & (ratios["instrument"] == inst)
                          & (ratios["subscale"] == sub) & (ratios["norm_group"] == group)]
            if cell.empty:
                continue
            if not is_finite(cell["sd_ratio"].iloc[0]):
                # Said on the row, not left blank: e.g. one respondent has no SD.
                n = cell["n"].iloc[0] if "n" in cell.columns else None
                why = f" (n = {int(n)})" if is_finite(n) else ""
                ax.annotate(f"{backend}: not estimable{why}", (0, y + offsets[b]), xytext=(6, 0),
                            textcoords="offset points", va="center", fontsize=8, color=style["color"],
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1}, zorder=4,
                            gid=f"sd-ratio-missing:{backend}:{inst}:{sub}:{group}")
                continue
            r = cell.iloc[0]
            ratio = float(r["sd_ratio"])
            has_ci = is_finite(r["ci_low"]) and is_finite(r["ci_high"])
            xerr = [[ratio - r["ci_low"]], [r["ci_high"] - ratio]] if has_ci else None
            collapsed = _truthy(r["collapsed"])
            any_collapsed |= collapsed
            ax.errorbar([ratio], [y + offsets[b]], xerr=xerr, fmt=style["marker"], color=style["color"],
                        markersize=7, capsize=4, elinewidth=1.6, zorder=3,
                        markerfacecolor="white" if collapsed else style["color"],
                        gid=f"sd-ratio:{backend}:{inst}:{sub}:{group}")
            if collapsed:
                ax.annotate("collapsed", (float(r["ci_high"]) if has_ci else ratio, y + offsets[b]),
                            xytext=(6, 0), textcoords="offset points", va="center", fontsize=8,
                            color=style["color"])
            end = (float(r["ci_high"]) if has_ci else ratio) * 1.08
            top.append(end + 0.3 if collapsed else end)   # room for the "collapsed" label
    ax.axvline(1.0, color=NORM_COLOUR, lw=1.3, ls="-", zorder=1, gid="ref:1")
    ax.axvline(0.5, color=NORM_COLOUR, lw=1.1, ls="--", zorder=1, gid="ref:0.5")
    ax.set_yticks(range(len(keys)), [f"{inst} {sub} · {group}" for inst, sub, group in keys])
    ax.set_ylim(len(keys) - 0.5, -0.5)
    ax.set_xlim(0, max([1.25] + top))
    ax.set_xlabel("SD ratio (cohort SD / human norm SD)")
    ax.set_ylabel("Instrument subscale · norm group")
    ax.grid(axis="x", color="#E5E5E5", lw=0.8, zorder=0)
    ax.set_axisbelow(True)
    handles = [Line2D([], [], ls="none", markersize=7, label=backend, **series_style(b)) for b, backend in enumerate(backends)]
    handles += [Line2D([], [], color=NORM_COLOUR, lw=1.3, label="1 = human-like spread"),
                Line2D([], [], color=NORM_COLOUR, lw=1.1, ls="--", label="0.5 = half the human SD")]
    if any_collapsed:
        handles.append(Line2D([], [], ls="none", marker="o", color=NORM_COLOUR, markerfacecolor="white",
                              label="collapsed (hollow)"))
    fig.legend(handles=handles, loc="outside lower center", frameon=False, fontsize=9,
               ncol=legend_columns([h.get_label() for h in handles], 7, 9, 4))
    fig.suptitle(wrap_to_width(title, 7, 12), fontsize=12)
    return fig


# --------------------------------------------------------------------------------------------
# Construct validity against human data (psyq.analysis.statistics.validity)


def item_distance_chart(distances: pd.DataFrame, instrument_id: str) -> Figure:
    """Total-variation distance per item, cohort against humans, for the whole sample (group
    ``all``), from :func:`psyq.analysis.statistics.validity.item_distributions`; a dashed tick marks each item's
    TV of uniform guessing (bars beyond it: worse than answering at random). Items that are not
    estimable are listed, not drawn."""
    title = f"{instrument_id}: answer distributions, cohort against humans (total variation per item)"
    rows = distances[(distances["instrument"] == instrument_id) & (distances["group_by"] == "all")]
    drawn = rows[rows["estimable"].astype(bool)]
    if drawn.empty:
        return message_figure("no item could be compared (no answers on one side)", title)
    fig = new_figure(7, max(2.8, 0.26 * len(drawn) + 1.8))
    ax = fig.add_subplot()
    y = np.arange(len(drawn))
    ax.barh(y, drawn["tv"].to_numpy(dtype=float), color=COLOURS[0], height=0.7, zorder=2, gid="tv-bars",
            label="cohort vs humans")
    ax.plot(drawn["tv_uniform"].to_numpy(dtype=float), y, linestyle="none", marker="|", markersize=12,
            markeredgewidth=2, color=COLOURS[1], zorder=3, gid="tv-uniform", label="uniform guessing vs humans")
    ax.set_yticks(y, [str(i) for i in drawn["item_id"]])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("total-variation distance (0 = same distribution, 1 = no overlap)")
    ax.set_ylabel("item")
    ax.grid(axis="x", color="#E5E5E5", lw=0.8, zorder=0)
    skipped = rows[~rows["estimable"].astype(bool)]
    if len(skipped):
        ax.set_title(f"not estimable: {', '.join(map(str, skipped['item_id']))}", fontsize=9)
    fig.legend(loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=11)
    return fig


def correlation_heatmaps(correlations: pd.DataFrame, instrument_id: str) -> Figure:
    """Side-by-side subscale intercorrelation matrices (cohort, humans, difference) from
    :func:`psyq.analysis.statistics.validity.subscale_correlations`; cells that are not estimable are hatched
    and say "n/e", never coloured as a value."""
    title = f"{instrument_id}: subscale intercorrelations (Pearson r)"
    rows = correlations[(correlations["instrument"] == instrument_id) & (correlations["subscale_b"] != "")]
    if rows.empty:
        return message_figure("fewer than 2 subscales: no intercorrelations", title)
    subs = in_order(pd.concat([rows["subscale_a"], rows["subscale_b"]]))
    index = {s: i for i, s in enumerate(subs)}
    fig = new_figure(4 + 2.2 * len(subs), 1.6 + 0.75 * len(subs))
    axes = fig.subplots(1, 3)
    image = None
    for ax, (column, name) in zip(axes, (("r_cohort", "cohort"), ("r_human", "humans"),
                                         ("difference", "cohort − humans"))):
        matrix = np.full((len(subs), len(subs)), np.nan)
        np.fill_diagonal(matrix, np.nan if column == "difference" else 1.0)
        for r in rows.itertuples():
            i, j = index[r.subscale_a], index[r.subscale_b]
            matrix[i, j] = matrix[j, i] = getattr(r, column)
        image = ax.imshow(matrix, cmap="RdBu_r", vmin=-1, vmax=1, gid=f"heatmap:{column}")
        for i in range(len(subs)):
            for j in range(len(subs)):
                if i == j and column == "difference":
                    continue
                value = matrix[i, j]
                if np.isnan(value):
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", color=BAND_COLOUR))
                    ax.text(j, i, "n/e", ha="center", va="center", fontsize=8, color=NORM_COLOUR)
                else:
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                            color="white" if abs(value) > 0.6 else NORM_COLOUR)
        ax.set_xticks(range(len(subs)), subs)
        ax.set_yticks(range(len(subs)), subs)
        ax.set_title(name, fontsize=10)
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="r (difference: r cohort − r humans)")
    fig.suptitle(title + "; n/e = not estimable", fontsize=11)
    return fig


def congruence_chart(congruence: pd.DataFrame) -> Figure:
    """Tucker's φ per factor (one per subscale, and "all") from
    :func:`psyq.analysis.statistics.validity.factor_congruence`, with the conventional thresholds .85 (fair
    similarity) and .95 (equal factors). Factors that are not estimable are named, not drawn."""
    title = "Factor congruence with human data (Tucker's φ after target rotation)"
    drawn = congruence[congruence["estimable"].astype(bool)]
    if drawn.empty:
        reason = congruence["note"].iloc[0] if len(congruence) else "no instrument to compare"
        return message_figure("\n".join(textwrap.wrap(f"not estimable: {reason}", 70)), title)
    labels = [f"{r.instrument} {r.factor}" for r in drawn.itertuples()]
    fig = new_figure(7, max(2.6, 0.35 * len(drawn) + 1.8))
    ax = fig.add_subplot()
    y = np.arange(len(drawn))
    ax.barh(y, drawn["phi"].to_numpy(dtype=float), color=COLOURS[2], height=0.6, zorder=2, gid="phi-bars")
    ax.axvline(0.85, color=NORM_COLOUR, lw=1.1, ls="--", label=".85 fair similarity")
    ax.axvline(0.95, color=NORM_COLOUR, lw=1.3, label=".95 equal factors")
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(min(0.0, float(drawn["phi"].min()) - 0.05), 1.0)
    ax.set_xlabel("Tucker's φ (cohort loadings vs human loadings)")
    ax.grid(axis="x", color="#E5E5E5", lw=0.8, zorder=0)
    skipped = congruence[~congruence["estimable"].astype(bool)]
    if len(skipped):
        ax.set_title("not estimable: " + ", ".join(f"{r.instrument} {r.factor}" for r in skipped.itertuples()),
                     fontsize=9)
    fig.legend(loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=11)
    return fig


# --------------------------------------------------------------------------------------------
# Item response theory (psyq.analysis.statistics.irt)


def information_curves(curves: pd.DataFrame, title: str) -> Figure:
    """Test information against θ, one line per group (e.g. cohort and humans), one panel per
    subscale, from :func:`psyq.analysis.statistics.irt.test_information` frames stacked with a ``group``
    column (and ``subscale``, when there are several). Only the test rows (``item`` "test") are
    drawn when an ``item`` column is present. Each θ scale is the group's own N(0, 1) metric: the
    curves compare where each sample's scale measures precisely, not the positions of the groups.
    Lines carry ``gid = "information:<subscale>:<group>"``; a dotted line marks I = 4 (SE(θ) = 0.5)."""
    rows = curves
    if "item" in rows.columns:
        rows = rows[rows["item"] == "test"]
    rows = rows.dropna(subset=["information"]) if "information" in rows.columns else rows.iloc[0:0]
    if rows.empty:
        return message_figure("no information curve: no estimable model", title)
    rows = rows.assign(subscale=rows["subscale"] if "subscale" in rows.columns else "",
                       group=rows["group"] if "group" in rows.columns else "")
    subscales, groups = in_order(rows["subscale"]), in_order(rows["group"])
    n_cols = min(len(subscales), PANELS_PER_ROW)
    n_rows = math.ceil(len(subscales) / n_cols)
    fig = new_figure(max(4.8, 3.6 * n_cols), 3.2 * n_rows + 0.9)
    grid = fig.subplots(n_rows, n_cols, sharex=True, squeeze=False)
    axes = list(grid.ravel())
    for unused in axes[len(subscales):]:
        unused.set_visible(False)
    for ax, sub in zip(axes, subscales):
        panel = rows[rows["subscale"] == sub]
        for g, group in enumerate(groups):
            line = panel[panel["group"] == group].sort_values("theta")
            if line.empty:
                continue
            ax.plot(line["theta"].to_numpy(dtype=float), line["information"].to_numpy(dtype=float),
                    color=COLOURS[g % len(COLOURS)], ls=LINESTYLES[g % len(LINESTYLES)], lw=1.8,
                    label=str(group), gid=f"information:{sub}:{group}")
        ax.axhline(4.0, color=BAND_COLOUR, lw=1.0, ls=":", zorder=0)
        ax.set_ylim(bottom=0)
        if sub != "":
            ax.set_title(str(sub), fontsize=10)
        ax.grid(color="#E5E5E5", lw=0.8, zorder=0)
        ax.set_axisbelow(True)
    for row in grid:
        row[0].set_ylabel("test information I(θ)")
    for ax in grid[-1]:
        ax.set_xlabel("θ (each group's own metric)")
    handles = [Line2D([], [], color=COLOURS[g % len(COLOURS)], ls=LINESTYLES[g % len(LINESTYLES)], lw=1.8,
                      label=str(group)) for g, group in enumerate(groups)]
    handles.append(Line2D([], [], color=BAND_COLOUR, ls=":", label="I = 4 (SE of θ = 0.5)"))
    fig.legend(handles=handles, loc="outside lower center", frameon=False, fontsize=9,
               ncol=legend_columns([h.get_label() for h in handles], 3.6 * n_cols, 9, 4))
    fig.suptitle(wrap_to_width(title, 3.6 * n_cols, 11), fontsize=11)
    return fig
