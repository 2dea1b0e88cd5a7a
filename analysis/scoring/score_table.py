"""Scores as a table for R, SPSS or a spreadsheet: one row per respondent × repeat × backend.

The long scores of :func:`psyq.analysis.scoring.scores.score_answers` (or :func:`psyq.analysis.scoring.scores.human_scores`)
are spread wide: the respondent keys (``backend_id, model, respondent_id, repeat``), the persona
attributes, then per instrument × subscale three columns: ``<instrument>_<subscale>`` (the
score), ``<instrument>_<subscale>_n`` (items answered) and ``<instrument>_<subscale>_prorated``
(1 when items were missing and the score was still computed, 0 otherwise).

SPSS variable names (``.sav``) must start with a letter, hold only letters, digits, ``_``, ``.``,
``@``, ``#`` or ``$``, not end with a dot, and have at most 64 bytes; they are case-insensitive.
:func:`spss_names` maps every column name to such a name: characters other than letters, digits
and ``_`` become ``_`` (dots too, which SPSS allows but R and Stata do not), a name that does not
start with a letter gets a ``v`` in front, an SPSS keyword (``ALL``, ``BY``, ``TO`` …) gets a
``_`` after it, names are cut to 64 characters and made unique
(case-insensitively) with a numeric suffix. Each variable keeps its original name in its label
when no better label exists; the mapping is returned so a caller can print it.

Example:
    >>> long = pd.DataFrame({"backend_id": "human", "model": "", "respondent_id": ["r1", "r2"],
    ...                      "repeat": 1, "gender": ["F", "M"], "instrument": "iri", "subscale": "PT",
    ...                      "score": [14.0, 20.0], "n_answered": [7, 6], "n_items": 7,
    ...                      "prorated": [False, True]})
    >>> wide_scores(long)[["respondent_id", "gender", "iri_PT", "iri_PT_n", "iri_PT_prorated"]]
      respondent_id gender  iri_PT  iri_PT_n  iri_PT_prorated
    0            r1      F    14.0         7                0
    1            r2      M    20.0         6                1
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import Instrument

from psyq.analysis.scoring.scores import RESPONDENT_KEYS, SCORE_VALUES

FORMATS = ("csv", "parquet", "sav")
SPSS_MAX_NAME = 64
# SPSS keywords that cannot be variable names (IBM SPSS Statistics, "Variable names").
SPSS_RESERVED = {"ALL", "AND", "BY", "EQ", "GE", "GT", "LE", "LT", "NE", "NOT", "OR", "TO", "WITH"}
# A text attribute with more distinct values than this stays text in .sav (an id, free text).
MAX_LABELLED_LEVELS = 50


def _attributes(scores: pd.DataFrame) -> list[str]:
    return [c for c in scores.columns if c not in RESPONDENT_KEYS and c not in SCORE_VALUES]


def wide_scores(scores: pd.DataFrame, prefix: bool = True) -> pd.DataFrame:
    """One row per backend × respondent × repeat; score, ``_n`` and ``_prorated`` columns.

    Parameters
    ----------
    scores : pandas.DataFrame
        Long scores (columns of :func:`psyq.analysis.scoring.scores.score_answers`); ``prorated`` may be
        absent (then all 0).
    prefix : bool
        Name score columns ``<instrument>_<subscale>`` (True) or only ``<subscale>`` (False; for
        a table of one instrument).

    Returns
    -------
    pandas.DataFrame
        Respondent keys, attributes (first value per respondent), then per instrument ×
        subscale in the order they appear: the score (float, NaN when not scored), items
        answered (int) and prorated (0/1). Rows in the order respondents first appear.

    Example
    -------
    See the module docstring.
    """
    attributes = _attributes(scores)
    data = scores.copy()
    if "prorated" not in data.columns:
        data["prorated"] = False
    keys = [k for k in RESPONDENT_KEYS if k in data.columns]
    # "" for a missing key value: pandas drops NaN group keys, and a human table has no model.
    for key in keys:
        if not pd.api.types.is_numeric_dtype(data[key]):
            data[key] = data[key].astype(object).where(data[key].notna(), "")
    people = data[keys + attributes].drop_duplicates(keys).reset_index(drop=True)
    if prefix:
        data["column"] = data["instrument"].astype(str) + "_" + data["subscale"].astype(str)
    else:
        data["column"] = data["subscale"].astype(str)
    order = list(dict.fromkeys(data["column"]))
    row = pd.MultiIndex.from_frame(data[keys])
    parts = []
    for value, suffix in (("score", ""), ("n_answered", "_n"), ("prorated", "_prorated")):
        frame = pd.DataFrame({"row": row, "column": data["column"] + suffix, "v": data[value].to_numpy()})
        parts.append(frame)
    spread = pd.concat(parts).pivot(index="row", columns="column", values="v")
    spread.index = pd.MultiIndex.from_tuples(spread.index, names=keys)
    columns = [c + s for c in order for s in ("", "_n", "_prorated")]
    spread = spread.reindex(columns=columns)
    out = people.merge(spread.reset_index(), on=keys, how="left")
    for column in order:
        out[column] = out[column].astype(float)
        out[column + "_n"] = out[column + "_n"].astype(float).astype("Int64")
        out[column + "_prorated"] = out[column + "_prorated"].map(
            lambda v: pd.NA if v is None or (isinstance(v, float) and np.isnan(v)) else int(bool(v))).astype("Int64")
    return out


def spss_names(columns: list[str]) -> dict[str, str]:
    """A valid, unique SPSS variable name for every column (see the module docstring).

    Example
    -------
    >>> spss_names(["iri_PT", "2nd.item", "persona age", "a" * 70])["2nd.item"]
    'v2nd_item'
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for column in columns:
        name = re.sub(r"[^A-Za-z0-9_]", "_", str(column)) or "v"
        if not re.match(r"[A-Za-z]", name):
            name = "v" + name
        if name.upper() in SPSS_RESERVED:
            name += "_"
        name = name[:SPSS_MAX_NAME]
        candidate, i = name, 1
        while candidate.lower() in taken:
            i += 1
            candidate = name[:SPSS_MAX_NAME - len(str(i)) - 1] + f"_{i}"
        taken.add(candidate.lower())
        out[column] = candidate
    return out


def _range_text(instrument: Instrument, subscale_id: str) -> str | None:
    sub = next((s for s in instrument.rating_subscales if s.id == subscale_id), None)
    if sub is None:
        return None
    if sub.score == "mean":
        return f"mean, {instrument.scale_min}–{instrument.scale_max}"
    k = len(instrument.subscale_items(subscale_id))
    return f"sum, {k * instrument.scale_min}–{k * instrument.scale_max}"


def variable_labels(wide: pd.DataFrame, instruments: Mapping[str, Instrument], prefix: bool = True) -> dict[str, str]:
    """Human-readable labels for the columns of :func:`wide_scores`.

    E.g. ``iri_PT`` → "IRI Perspective Taking (sum, 0–28)", ``iri_PT_n`` → "IRI Perspective
    Taking: items answered (of 7)", ``iri_PT_prorated`` → "IRI Perspective Taking: score
    prorated over answered items".

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> mini = load_instrument("tests/data/mini_1to7.yaml")
    >>> variable_labels(pd.DataFrame(columns=["mini_X", "mini_X_n"]), {"mini": mini})
    {'mini_X': 'MINI Sum of a and b (sum, 2–14)', 'mini_X_n': 'MINI Sum of a and b: items answered (of 2)'}
    """
    labels: dict[str, str] = {"backend_id": "Backend (human = human respondents)", "model": "Model",
                              "respondent_id": "Respondent", "repeat": "Administration (repeat)"}
    for inst_id, instrument in instruments.items():
        for sub in instrument.subscales:
            base = f"{inst_id}_{sub.id}" if prefix else sub.id
            name = f"{inst_id.upper()} {sub.name}"
            extent = _range_text(instrument, sub.id)
            labels[base] = f"{name} ({extent})" if extent else name
            k = len(instrument.subscale_items(sub.id))
            labels[base + "_n"] = f"{name}: items answered (of {k})"
            labels[base + "_prorated"] = f"{name}: score prorated over answered items"
    return {c: labels[c] for c in wide.columns if c in labels}


def write_scores(wide: pd.DataFrame, path: str | Path, fmt: str,
                 instruments: Mapping[str, Instrument], prefix: bool = True) -> dict[str, str]:
    """Write a :func:`wide_scores` table as CSV, Parquet or SPSS ``.sav``.

    For ``.sav`` (via :func:`pyreadstat.write_sav`): names mapped by :func:`spss_names`,
    variable labels from :func:`variable_labels` (the original column name when there is none),
    value labels 0 = no / 1 = yes on ``_prorated`` columns, and text attributes with at most
    50 distinct values stored as codes 1, 2, … (sorted) with their text as value labels.

    Returns the mapping from column names to the names written (identity for CSV and Parquet).

    Example
    -------
    `run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml; the file goes to a temporary folder.

    >>> import tempfile
    >>> import pyreadstat
    >>> from psyq import load_run_scores, open_run
    >>> wide = wide_scores(load_run_scores(run_dir))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     names = write_scores(wide, Path(folder) / "scores.sav", "sav", open_run(run_dir).instruments)
    ...     meta = pyreadstat.read_sav(Path(folder) / "scores.sav", metadataonly=True)[1]
    >>> names["mini_Y_n"], meta.column_names_to_labels["mini_Y_n"]
    ('mini_Y_n', 'MINI Mean of b c d: items answered (of 3)')
    """
    path = Path(path)
    if fmt == "csv":
        wide.to_csv(path, index=False)
        return {c: c for c in wide.columns}
    if fmt == "parquet":
        wide.to_parquet(path, index=False)
        return {c: c for c in wide.columns}
    if fmt != "sav":
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    import pyreadstat

    frame, value_labels = _spss_frame(wide)
    names = spss_names(list(frame.columns))
    labels = variable_labels(wide, instruments, prefix)
    pyreadstat.write_sav(
        frame.rename(columns=names), str(path),
        column_labels={names[c]: labels.get(c, c) for c in frame.columns},
        variable_value_labels={names[c]: v for c, v in value_labels.items()})
    return names


def _spss_frame(wide: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Columns as types SPSS stores (float or text) and the value labels to attach."""
    out = pd.DataFrame(index=wide.index)
    value_labels: dict[str, dict] = {}
    keys = set(RESPONDENT_KEYS)
    for column in wide.columns:
        values = wide[column]
        if column.endswith("_prorated") and pd.api.types.is_integer_dtype(values):
            out[column] = values.astype(float)
            value_labels[column] = {0.0: "no", 1.0: "yes"}
        elif pd.api.types.is_bool_dtype(values):
            out[column] = values.astype(float)
            value_labels[column] = {0.0: "false", 1.0: "true"}
        elif pd.api.types.is_numeric_dtype(values):
            out[column] = values.astype(float)
        else:
            text = values.astype(object).where(values.notna(), None)
            levels = sorted({str(v) for v in text if v is not None and str(v) != ""})
            if column not in keys and 0 < len(levels) <= MAX_LABELLED_LEVELS:
                codes = {level: float(i) for i, level in enumerate(levels, start=1)}
                out[column] = [codes.get(str(v), np.nan) if v is not None else np.nan for v in text]
                value_labels[column] = {code: level for level, code in codes.items()}
            else:
                out[column] = ["" if v is None else str(v) for v in text]
    return out, value_labels
