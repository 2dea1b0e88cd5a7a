"""How every figure of the report is made: the palette (Okabe–Ito, colour-blind-safe, each colour
paired with a marker or line style), a new figure drawn without a display, a figure that only says
why it is empty, text fitted to a figure's width, and a figure saved to files or encoded as a
``data:`` URI for self-contained HTML. The report's figures of its statistics are in
:mod:`psyq.analysis.report.plots`; the sections that draw figures of their own draw them with
these.

Every figure is a :class:`matplotlib.figure.Figure` built directly (no pyplot, so no global figure
state is shared or leaked) with an Agg canvas attached.

Example
-------
>>> fig = message_figure("no norms for this instrument")
>>> figure_to_data_uri(fig)[:22]
'data:image/png;base64,'
>>> save_figure(fig, "plots/iri-profile")       # writes files  # doctest: +SKIP
[PosixPath('plots/iri-profile.png'), PosixPath('plots/iri-profile.svg')]
"""

from __future__ import annotations

import base64
import io
import math
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# Okabe & Ito (2008) colour-blind-safe palette, without yellow (too pale on white).
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
MARKERS = ["o", "s", "D", "^", "v", "P", "X"]
LINESTYLES = ["-", "--", ":", "-."]
BAND_COLOUR = "#BBBBBB"
NORM_COLOUR = "#333333"
SAMPLE_COLOURS = [NORM_COLOUR, "#8C564B", "#7F7F7F", "#17BECF"]   # norm curves, by sample


def new_figure(width: float, height: float) -> Figure:
    """A figure of `width` × `height` inches with constrained layout, drawn without a display.

    Example:
        >>> new_figure(6, 2).get_size_inches().tolist()
        [6.0, 2.0]
    """
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def message_figure(message: str, title: str | None = None) -> Figure:
    """A small figure that only says `message` (for empty inputs), so that a figure's place in the
    report says why it is empty.

    Example:
        >>> message_figure("no norms for this instrument").axes[0].texts[0].get_text()
        'no norms for this instrument'
    """
    fig = new_figure(6, 2.2)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12, color=NORM_COLOUR,
            transform=ax.transAxes)
    if title:
        fig.suptitle(title, fontsize=12)
    return fig


def series_style(i: int) -> dict[str, Any]:
    """Colour and marker of the `i`-th series (colour-blind-safe colours, one marker each).

    Example:
        >>> series_style(0)
        {'color': '#0072B2', 'marker': 'o'}
    """
    return {"color": COLOURS[i % len(COLOURS)], "marker": MARKERS[i % len(MARKERS)]}


def in_order(values: pd.Series) -> list:
    """Distinct values in order of first appearance.

    Example:
        >>> in_order(pd.Series(["b", "a", "b"]))
        ['b', 'a']
    """
    return list(dict.fromkeys(pd.unique(values).tolist()))   # distinct first: a column may hold millions


def is_finite(x: Any) -> bool:
    """Whether `x` is a finite number (None, NaN, infinities and text are not).

    Example:
        >>> is_finite(1.5), is_finite(float("nan")), is_finite("x")
        (True, False, False)
    """
    try:
        return x is not None and not pd.isna(x) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def wrap_to_width(text: str, width_in: float, fontsize: float) -> str:
    """`text` broken into lines that fit `width_in` inches at `fontsize` points (each line of
    `text` wrapped on its own), so a title never runs past the figure's edge and is cut off.

    The width of a character is taken as 0.6 em, a safe upper estimate for DejaVu Sans text.

    Example
    -------
    >>> wrap_to_width("cohort mean against the norm", 1, 12).split("\\n")   # 10 characters a line
    ['cohort', 'mean', 'against', 'the norm']
    """
    chars = max(8, int(width_in * 72 / (0.6 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) if line else line for line in text.split("\n"))


def legend_columns(labels: list[str], width_in: float, fontsize: float, most: int) -> int:
    """As many legend columns as fit side by side in `width_in` inches (at least 1, at most `most`).

    Example:
        >>> legend_columns(["cohort", "humans"], 6, 9, 4)
        2
    """
    longest = max((len(t) for t in labels), default=1)
    per_column = (longest * 0.6 * fontsize + 30) / 72     # text plus the handle and the gap
    return max(1, min(most, len(labels), int(width_in // per_column)))


def save_figure(fig: Figure, stem: str | Path) -> list[Path]:
    """Write ``stem.png`` (150 dpi) and ``stem.svg``, creating folders; returns both paths.

    The suffixes are appended, so a stem like ``plots/iri.profile`` keeps its dot.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    if fig.canvas is None or not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    paths = [stem.parent / f"{stem.name}.png", stem.parent / f"{stem.name}.svg"]
    fig.savefig(paths[0], format="png", dpi=150)
    fig.savefig(paths[1], format="svg")
    return paths


MIME = {"png": "image/png", "svg": "image/svg+xml", "jpg": "image/jpeg", "jpeg": "image/jpeg",
        "pdf": "application/pdf"}


def figure_to_data_uri(fig: Figure, fmt: str = "png") -> str:
    """The figure as a ``data:`` URI (e.g. ``data:image/png;base64,...``) for self-contained HTML."""
    fmt = fmt.lower()
    if fmt not in MIME:
        raise ValueError(f"unsupported figure format {fmt!r} (use one of {', '.join(MIME)})")
    buffer = io.BytesIO()
    if fig.canvas is None or not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.savefig(buffer, format=fmt, dpi=150 if fmt in ("png", "jpg", "jpeg") else None)
    return f"data:{MIME[fmt]};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
