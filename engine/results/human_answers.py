"""Reading human item responses from CSV, checked cell by cell against an instrument.

The CSV has a ``respondent_id`` column and one column per item id holding scale values; other
columns (age, gender …) are kept as respondent attributes for grouping and norm matching (a
column whose every non-empty cell is a number becomes numeric; empty cells are missing). Empty
item cells are missing answers. Every bad cell is reported with its line and column: a value
silently dropped would bias a comparison.

Data published *already keyed* (reverse-keyed items stored after reversal, as in many shared
data sets) must be declared with ``keyed=True``: those items are then turned back into raw
answers (min + max − x), so that scoring reverses them exactly once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from psyq.engine.files.csvfile import read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.design.instrument import Instrument

ID_COLUMN = "respondent_id"


def read_answers_csv(path: str | Path, instrument: Instrument, keyed: bool = False) -> pd.DataFrame:
    """Read a wide CSV of item answers; return it indexed by ``respondent_id``.

    Item columns become floats (NaN = missing) holding *raw* answers: with ``keyed=True`` the
    file's reverse-keyed items are taken as already reversed and are un-reversed here (see
    :func:`raw_from_keyed`). Other columns are attributes: numeric when every non-empty cell
    is a number, else text; empty cells are missing.

    Example:
        >>> answers = read_answers_csv("tests/data/iri_humans.csv", load_instrument("instruments/iri.yaml"))  # doctest: +SKIP
    """
    file = str(path)
    item_ids = [item.id for item in instrument.rating_items]
    # Shape checked before any value is read (psyq.engine.files.csvfile): no row is shifted into other columns.
    csv_table = read_csv_table(path, required=(ID_COLUMN, *item_ids))
    table = pd.DataFrame(csv_table.rows, columns=csv_table.header, dtype=str)
    line_of = csv_table.lines   # data row r starts on line line_of[r] (blank rows are skipped)
    header = [c for c in (ID_COLUMN, *item_ids) if c not in table.columns]
    if header:
        raise InputError.single(file, "missing column(s): " + ", ".join(header), line=1)
    if dup := sorted({c for c in table.columns if list(table.columns).count(c) > 1}):
        raise InputError.single(file, "duplicated column(s): " + ", ".join(dup), line=1)

    problems: list[Problem] = []
    ids = table[ID_COLUMN].str.strip()
    for r in np.flatnonzero((ids == "").to_numpy()):
        problems.append(Problem(file, line_of[r], None, f"column '{ID_COLUMN}'", "respondent_id is empty"))
    for r in np.flatnonzero(ids.duplicated().to_numpy() & (ids != "").to_numpy()):
        problems.append(Problem(file, line_of[r], None, f"column '{ID_COLUMN}'",
                                f"respondent_id {ids.iloc[r]!r} appears more than once"))

    allowed = {o.value for o in instrument.scale}
    values = {}
    for item_id in item_ids:
        cells = table[item_id].str.strip()
        numbers = pd.to_numeric(cells.replace("", None), errors="coerce")
        not_number = (cells != "") & numbers.isna()
        off_scale = numbers.notna() & ~numbers.isin(allowed)
        for r in np.flatnonzero(not_number.to_numpy()):
            problems.append(Problem(file, line_of[r], None, f"column '{item_id}'",
                                    f"{cells.iloc[r]!r} is not a number"))
        for r in np.flatnonzero(off_scale.to_numpy()):
            problems.append(Problem(file, line_of[r], None, f"column '{item_id}'",
                                    f"{cells.iloc[r]} is not on the scale "
                                    f"({', '.join(str(v) for v in sorted(allowed))})"))
        values[item_id] = numbers.astype(float)
    if problems:
        problems.sort(key=lambda p: (p.line or 0, p.field))
        raise InputError(problems)

    out = table.drop(columns=item_ids).assign(**values)
    out[ID_COLUMN] = ids
    out = typed_attributes(out.set_index(ID_COLUMN), item_ids)
    return raw_from_keyed(instrument, out) if keyed else out


def typed_attributes(answers: pd.DataFrame, item_ids: list[str]) -> pd.DataFrame:
    """Attribute (non-item) text columns with empty cells as missing, numeric when every
    non-empty cell is a number (so an ``age`` column can match a norm group's age range).

    Example:
        >>> typed_attributes(pd.DataFrame({"age": ["21", ""], "g": ["F", "M"]}), []).dtypes.tolist()
        [dtype('float64'), dtype('O')]
    """
    out = answers.copy()
    for column in out.columns:
        if column in item_ids:
            continue
        cells = out[column].astype(str).str.strip()
        present = cells != ""
        numbers = pd.to_numeric(cells.where(present), errors="coerce")
        if present.any() and numbers[present].notna().all():
            out[column] = numbers.astype(float)
        else:
            out[column] = cells.where(present, None).astype(object)
    return out


def raw_from_keyed(instrument: Instrument, answers: pd.DataFrame) -> pd.DataFrame:
    """Answers stored already keyed, turned back into raw answers: reverse-keyed items become
    min + max − x (its own inverse), other columns are unchanged.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> mini = load_instrument("tests/data/mini_1to7.yaml")   # items a and c are reversed
        >>> raw_from_keyed(mini, pd.DataFrame({"a": [7.0], "b": [7.0], "c": [2.0]})).iloc[0].tolist()
        [1.0, 7.0, 6.0]
    """
    out = answers.copy()
    for item in instrument.rating_items:
        if item.reverse and item.id in out.columns:
            out[item.id] = instrument.scale_min + instrument.scale_max - out[item.id].astype(float)
    return out
