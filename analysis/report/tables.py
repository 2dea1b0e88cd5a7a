"""A report table as it is printed (APA 7th edition style): :class:`ApaTable`, a frame of text
with the sentences of its note; :func:`assemble`, which lays out a view's columns, moves the context
columns holding one value in every row into the note and keeps short cells on one line; and the
plain view, :func:`generic`, which prints any frame by its columns' kinds. The views of the report's
own tables are in :mod:`psyq.analysis.report.views`, the numbers in :mod:`psyq.analysis.report.apa`.

Example
-------
>>> generic(pd.DataFrame({"subscale": ["EC"], "p": [0.0004], "n": [12]})).frame.to_dict("records")
[{'subscale': 'EC', 'p': '<\xa0.001', 'n': '12'}]

References
----------
American Psychological Association (2020). *Publication Manual of the American Psychological
Association* (7th ed.), section 7.21 (table notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd

from psyq.analysis.report.apa import DASH, fmt_ci, fmt_int, fmt_num, fmt_p, fmt_r, is_missing


@dataclass
class ApaTable:
    """A table ready to print: `frame` holds text only; `notes` are sentences for below it."""

    frame: pd.DataFrame
    notes: list[str]


def _constant_notes(frame: pd.DataFrame, columns: dict[str, str]) -> tuple[list[str], list[str]]:
    """Of the `columns` (name -> label), those holding one value in every row: their labels and
    values go to the note ("Backend: local.") and they leave the table."""
    dropped, notes = [], []
    if len(frame) < 2:
        return dropped, notes
    for col, label in columns.items():
        if col in frame.columns and frame[col].nunique(dropna=False) == 1:
            dropped.append(col)
            notes.append(f"{label}: {frame[col].iloc[0]}.")
    return dropped, notes


def assemble(frame: pd.DataFrame, columns: dict[str, Callable[[pd.Series], Any]], context: dict[str, str],
             notes: list[str]) -> ApaTable:
    """Build the printed table from `columns` (label -> function of a row), with the `context`
    columns (name -> label) shown only where they vary (a column with one value moves to the note).

    Example
    -------
    >>> frame = pd.DataFrame({"backend_id": ["local", "local"], "subscale": ["PT", "EC"], "alpha": [0.7, 0.81]})
    >>> table = assemble(frame, {"Subscale": lambda r: r["subscale"], "α": lambda r: fmt_r(r["alpha"])},
    ...                  {"backend_id": "Backend"}, [])
    >>> table.frame.to_dict("records"), table.notes
    ([{'Subscale': 'PT', 'α': '.70'}, {'Subscale': 'EC', 'α': '.81'}], ['Backend: local.'])
    """
    dropped, head_notes = _constant_notes(frame, context)
    shown = {label: (lambda r, c=col: str(r[c])) for col, label in context.items()
             if col in frame.columns and col not in dropped}
    shown.update(columns)
    rows = [{label: _keep_together(fn(row)) for label, fn in shown.items()} for _, row in frame.iterrows()]
    return ApaTable(pd.DataFrame(rows, columns=list(shown)), head_notes + notes)


NBSP = "\u00a0"
SHORT = 28
"""Cells up to this many characters (a statistic with its CI) are kept on one line."""


def _keep_together(text: str) -> str:
    """A short cell with non-breaking spaces, so "0.35 [−0.45, 1.15]" never breaks inside; longer
    text keeps its spaces and wraps."""
    return text.replace(" ", NBSP) if len(text) <= SHORT else text


P_COLUMNS = ("p", "p_adj", "tost_p", "p_bf")
BOUNDED = ("r", "alpha", "omega", "icc", "phi", "ccc", "distinctive_r", "pearson_r", "icc_a1", "kappa_linear",
           "kappa_quadratic")


def _merge_cis(frame: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Columns `X_ci_low`, `X_ci_high` belong to `X`; bare `ci_low`, `ci_high` to the column just
    before `ci_low`. Returns estimate -> (low, high); the CI columns are then shown with it."""
    cols = [str(c) for c in frame.columns]
    merged: dict[str, tuple[str, str]] = {}
    for i, col in enumerate(cols):
        if not col.endswith("ci_low") or col.replace("ci_low", "ci_high") not in cols:
            continue
        high = col.replace("ci_low", "ci_high")
        estimate = col[: -len("_ci_low")] if col != "ci_low" else (cols[i - 1] if i else "")
        if estimate in cols and pd.api.types.is_numeric_dtype(frame[estimate]) and estimate not in merged:
            merged[estimate] = (col, high)
    return merged


def generic(frame: pd.DataFrame) -> ApaTable:
    """Any other table: numbers formatted (p and bounded quantities without the leading zero,
    counts as integers, the rest with two decimals), underscores in headers read as spaces; in a
    table of more than six columns, text columns with one value in every row move to the note.

    Example
    -------
    >>> generic(pd.DataFrame({"r": [0.5], "n": [3]})).frame.to_dict("records")
    [{'r': '.50', 'n': '3'}]
    """
    flat = frame
    if not isinstance(frame.index, pd.RangeIndex):      # a key-value table: the keys are a column
        flat = frame.reset_index(names=frame.index.name or "Field")
        flat = flat.rename(columns={"": "Value"})
    merged = _merge_cis(flat)
    constant = [c for c in flat.columns if len(flat.columns) > 6 and len(flat) >= 2 and flat[c].dtype == object
                and flat[c].nunique(dropna=False) == 1]
    notes = [f"{str(c).replace('_', ' ')}: {flat[c].iloc[0]}." for c in constant]
    columns: dict[str, Callable[[pd.Series], Any]] = {}
    hidden = {c for pair in merged.values() for c in pair}
    for col in flat.columns:
        if col in constant or col in hidden:
            continue
        label = str(col).replace("_", " ")
        if col in merged:
            low, high = merged[col]
            fmt = fmt_r if col in BOUNDED else fmt_num
            columns[label + " [95 % CI]"] = lambda r, c=col, lo=low, hi=high, f=fmt: (
                DASH if is_missing(r[c]) else f"{f(r[c])} {fmt_ci(r[lo], r[hi], f)}")
        elif col in P_COLUMNS or str(col).endswith("_p"):
            columns[label] = lambda r, c=col: fmt_p(r[c])
        elif pd.api.types.is_bool_dtype(flat[col]):
            columns[label] = lambda r, c=col: "yes" if r[c] else "no"
        elif pd.api.types.is_integer_dtype(flat[col]) or (
                (col == "n" or str(col).startswith("n_")) and pd.api.types.is_numeric_dtype(flat[col])):
            columns[label] = lambda r, c=col: fmt_int(r[c])
        elif pd.api.types.is_float_dtype(flat[col]):
            fmt = fmt_r if col in BOUNDED else fmt_num
            columns[label] = lambda r, c=col, f=fmt: f(r[c])
        else:
            columns[label] = lambda r, c=col: "" if is_missing(r[c]) else str(r[c])
    rows = [{label: _keep_together(fn(row)) for label, fn in columns.items()} for _, row in flat.iterrows()]
    return ApaTable(pd.DataFrame(rows, columns=list(columns)), notes)
