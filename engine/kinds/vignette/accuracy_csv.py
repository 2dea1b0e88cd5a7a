"""The CSV files empathic accuracy is scored from: targets' own reports
(:func:`read_target_reports_csv`) and human perceivers' ratings (:func:`read_perceiver_csv`),
each checked against the instrument's vignettes, stops, emotions and emotion scale, with every
problem raised at once naming its file, line and column. The scores are :mod:`.accuracy`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from psyq.engine.files.csvfile import read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.kinds.vignette.accuracy import TARGET_COLUMNS, sorted_in_order, vignette_items

if TYPE_CHECKING:
    from psyq.engine.design.instrument import Instrument

TARGET_CSV = ("vignette_id", "segment", "emotion", "intensity")
PERCEIVER_CSV = ("respondent_id", "vignette_id", "segment", "emotion", "rating")


@dataclass(frozen=True)
class _Row:
    line: int                  # the row's first line in the file (a quoted cell may span lines)
    cells: dict[str, str]


class _Cells:
    """Collects the problems of one CSV file, located like ``human_data``: file, line, column."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def bad(self, line: int, column: str, message: str) -> None:
        self.problems.append(Problem(self.file, line, None, f"column '{column}'", message))

    def raise_if_any(self) -> None:
        if self.problems:
            raise InputError(sorted(self.problems, key=lambda p: (p.line or 0, p.field)))


def _read_rows(path: str | Path, required: Sequence[str], optional: Sequence[str]) -> tuple[list[str], list[_Row]]:
    """Rows of a CSV as stripped text cells with their line numbers; blank lines are skipped.
    Header problems (missing, unknown or repeated columns) and rows of the wrong length raise
    at once (:func:`psyq.engine.files.csvfile.read_csv_table`)."""
    file = str(path)
    table = read_csv_table(path, required)   # shape checked: every row has the header's cells
    header = table.header
    _check_header(file, header, required, optional)
    return header, [_Row(line, dict(zip(header, cells))) for line, cells in zip(table.lines, table.rows)]


def _check_header(file: str, header: list[str], required: Sequence[str], optional: Sequence[str]) -> None:
    if not header:
        raise InputError.single(file, "the file is empty (no header line)")
    problems = []
    if missing := [c for c in required if c not in header]:
        problems.append("missing column(s): " + ", ".join(missing))
    if unknown := [c for c in header if c not in (*required, *optional)]:
        problems.append(f"unknown column(s): {', '.join(unknown)} (expected {', '.join((*required, *optional))})")
    if repeated := sorted({c for c in header if header.count(c) > 1}):
        problems.append("duplicated column(s): " + ", ".join(repeated))
    if problems:
        raise InputError([Problem(file, 1, None, "", message) for message in problems])


def _whole_number(text: str) -> int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def _stop_key(row: _Row, instrument: Instrument, stops: dict[str, int], cells: _Cells) -> tuple[str, int, str] | None:
    """(vignette, stop, emotion) of a row, or None after reporting what is wrong. `stops` is
    the number of segments of each vignette."""
    vignette, segment, emotion = row.cells["vignette_id"], row.cells["segment"], row.cells["emotion"]
    stop = _whole_number(segment)
    ok = True
    if vignette not in stops:
        cells.bad(row.line, "vignette_id", f"{vignette!r} is not a vignette of {instrument.id} "
                                           f"({', '.join(stops)})")
        ok = False
    if stop is None or stop < 1:
        cells.bad(row.line, "segment", f"{segment!r} is not a stop number (1, 2, … in story order)")
        ok = False
    elif vignette in stops and stop > stops[vignette]:
        cells.bad(row.line, "segment", f"{vignette} has {stops[vignette]} segment(s), so no stop {stop}")
        ok = False
    if emotion not in instrument.emotions:
        cells.bad(row.line, "emotion", f"{emotion!r} is not one of the emotions of {instrument.id} "
                                       f"({', '.join(instrument.emotions)})")
        ok = False
    return (vignette, stop, emotion) if ok else None


def _scale_value(row: _Row, column: str, instrument: Instrument, cells: _Cells, required: bool) -> float:
    """The cell as a value on ``emotion_scale`` (NaN if empty and allowed, or after a problem)."""
    text = row.cells[column]
    allowed = [o.value for o in instrument.emotion_scale]
    if text == "":
        if required:
            cells.bad(row.line, column, f"is empty; every row needs a value here")
        return np.nan
    value = _whole_number(text)
    if value not in allowed:
        cells.bad(row.line, column, f"{text!r} is not on the emotion scale "
                                    f"(whole numbers {min(allowed)} to {max(allowed)})")
        return np.nan
    return float(value)


def _describe(stop: tuple) -> str:
    """'v03 stop 1', or 'respondent p1: v03 stop 1' when the key starts with a respondent."""
    *who, vignette, number = stop
    return (f"respondent {who[0]}: " if who else "") + f"{vignette} stop {number}"


def _check_stops(rows: list[tuple[_Row, tuple]], instrument: Instrument, cells: _Cells) -> dict[tuple, str | None]:
    """Per stop (key = (*prefix, vignette, stop)): one row per emotion, thoughts on one row at
    most. Returns each stop's thoughts (None if none)."""
    by_stop: dict[tuple, dict[str, _Row]] = {}
    thoughts: dict[tuple, str | None] = {}
    thoughts_line: dict[tuple, int] = {}
    for row, (*head, emotion) in rows:
        stop = tuple(head)
        seen = by_stop.setdefault(stop, {})
        where = _describe(stop)
        if emotion in seen:
            cells.bad(row.line, "emotion", f"{where} already has a row for {emotion} (line {seen[emotion].line})")
            continue
        seen[emotion] = row
        text = row.cells.get("thoughts", "")
        if text and stop in thoughts_line:
            cells.bad(row.line, "thoughts", f"{where} already has thoughts (line {thoughts_line[stop]}); "
                                            "write them on one row of the stop")
        elif text:
            thoughts[stop], thoughts_line[stop] = text, row.line
        thoughts.setdefault(stop, None)
    for stop, seen in by_stop.items():
        if missing := [e for e in instrument.emotions if e not in seen]:
            first = min(r.line for r in seen.values())
            cells.bad(first, "emotion", f"{_describe(stop)} has no row for {', '.join(missing)} "
                                        "(each stop needs one row per emotion)")
    return thoughts


def _rated_stops(path: str | Path, instrument: Instrument, columns: Sequence[str], value_column: str, *,
                 by_respondent: bool) -> tuple[list[str], list[tuple], list[float], dict[tuple, str | None]]:
    """A targets' or perceivers' CSV, checked: its header, each row's key ((respondent,) vignette,
    stop, emotion) and value on the emotion scale (required for a target's intensity, NaN for a
    perceiver's empty rating), and each stop's thoughts; every problem raised at once."""
    (header, rows), cells = _read_rows(path, columns, ("thoughts",)), _Cells(str(path))
    stops = {item.id: len(item.segments) for item in vignette_items(instrument)}
    keyed, values = [], []
    for row in rows:
        who: tuple[str, ...] = ()
        if by_respondent:
            who = (row.cells["respondent_id"],)
            if who[0] == "":
                cells.bad(row.line, "respondent_id", "respondent_id is empty")
        key = _stop_key(row, instrument, stops, cells)
        value = _scale_value(row, value_column, instrument, cells, required=not by_respondent)
        if key is not None and all(who):
            keyed.append((row, (*who, *key)))
            values.append(value)
    thoughts = _check_stops(keyed, instrument, cells)
    cells.raise_if_any()
    return header, [key for _, key in keyed], values, thoughts


def read_target_reports_csv(path: str | Path, instrument: Instrument) -> pd.DataFrame:
    """Read targets' own reports: CSV ``vignette_id,segment,emotion,intensity[,thoughts]``.

    Each stop needs exactly one row per emotion of the instrument; ``intensity`` is a whole
    number on ``emotion_scale``; ``thoughts`` may be written on one row of a stop. Returns the
    columns of :func:`.accuracy.target_profiles` with source ``self-report``; every problem is raised in
    one :class:`~psyq.engine.files.errors.InputError` naming file, line and column.

    Example (a report of the shipped vignette v01's one stop, written to a temporary folder):
        >>> import tempfile
        >>> from psyq.engine.design.instrument import load_instrument
        >>> ea = load_instrument("ea_vignettes_psyq")
        >>> rows = [f"v01,1,{e},{n}" for e, n in zip(ea.emotions, [3, 4, 1, 0, 0, 0, 0, 1, 0, 0])]
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "self.csv"
        ...     _ = path.write_text("\\n".join(["vignette_id,segment,emotion,intensity", *rows]) + "\\n",
        ...                         encoding="utf-8")
        ...     reports = read_target_reports_csv(path, ea)
        >>> reports[["vignette", "stop", "emotion", "intensity", "source"]].head(2)
          vignette  stop   emotion  intensity       source
        0      v01     1  interest          3  self-report
        1      v01     1       joy          4  self-report
    """
    _, keys, values, thoughts = _rated_stops(path, instrument, TARGET_CSV, "intensity", by_respondent=False)
    table = pd.DataFrame([(v, s, e, int(value), "self-report", thoughts[(v, s)])
                          for (v, s, e), value in zip(keys, values)], columns=TARGET_COLUMNS)
    return _in_instrument_order(table.astype({"stop": int, "intensity": int}), instrument)


def read_perceiver_csv(path: str | Path, instrument: Instrument) -> pd.DataFrame:
    """Read human perceivers' ratings: CSV ``respondent_id,vignette_id,segment,emotion,rating[,thoughts]``.

    An empty ``rating`` is a missing rating (NaN); others are whole numbers on
    ``emotion_scale``. Each stop a respondent answered needs one row per emotion, and
    ``thoughts`` (their free-text inference) on one row at most. Returns ``respondent_id,
    vignette, stop, emotion, rating`` (plus ``thoughts``, the stop's text on each of its rows,
    when the file has that column), ready for :func:`.accuracy.stop_accuracy` with keys
    ``["respondent_id"]``. Problems are raised as in :func:`read_target_reports_csv`.

    Example (one person's ratings of the shipped vignette v01, written to a temporary folder):
        >>> import tempfile
        >>> from psyq.engine.design.instrument import load_instrument
        >>> ea = load_instrument("ea_vignettes_psyq")
        >>> ratings_of_p1 = dict(zip(ea.emotions, [2, 4, 1, 0, 0, 0, 0, 2, 0, 0]))
        >>> text = "respondent_id,vignette_id,segment,emotion,rating\\n" + "".join(
        ...     f"p1,v01,1,{emotion},{rating}\\n" for emotion, rating in ratings_of_p1.items())
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = (Path(folder) / "people.csv").write_text(text, encoding="utf-8")
        ...     ratings = read_perceiver_csv(Path(folder) / "people.csv", ea)
        >>> from psyq.engine.kinds.vignette.accuracy import stop_accuracy, target_profiles
        >>> stop_accuracy(ratings, target_profiles(ea), ["respondent_id"])[["respondent_id", "n", "r", "mae"]].round(3)
          respondent_id   n      r  mae
        0            p1  10  0.758  0.5
    """
    header, keys, values, thoughts = _rated_stops(path, instrument, PERCEIVER_CSV, "rating", by_respondent=True)
    table = pd.DataFrame([(p, v, s, e, value) for (p, v, s, e), value in zip(keys, values)],
                         columns=["respondent_id", "vignette", "stop", "emotion", "rating"])
    if "thoughts" in header:
        table["thoughts"] = [thoughts[(p, v, s)] for p, v, s, _e in keys]
    return _in_instrument_order(table.astype({"stop": int, "rating": float}), instrument, first=["respondent_id"])


def _in_instrument_order(table: pd.DataFrame, instrument: Instrument, first: Sequence[str] = ()) -> pd.DataFrame:
    orders = {column: table[column].unique() for column in first}
    orders |= {"vignette": [item.id for item in vignette_items(instrument)], "emotion": instrument.emotions}
    return sorted_in_order(table, orders)
