"""Empathic accuracy on vignettes: target profiles, perceiver ratings and profile-accuracy scores.

A vignette tells a story in segments; at the end of each segment, the *stop*, a perceiver rates
how strongly the target feels each of the instrument's ``emotions``. Everything here is in long
pandas tables (one row per stop × emotion), and every function is pure:

- :func:`target_profiles` takes the targets' reports from an instrument;
  :func:`read_target_reports_csv` reads real targets' self-reports from a CSV and
  :func:`with_self_reports` puts them in place of the shipped (design-intended) ones;
- :func:`read_perceiver_csv` reads human perceivers' ratings;
- :func:`stop_accuracy` scores each perceiver at each stop (profile Pearson r and its Fisher z,
  MAE, Lin's CCC, distinctive r), :func:`vignette_accuracy` and :func:`perceiver_accuracy`
  combine stops, and :func:`judge_percent` sums raters' 0/1/2 similarity judgements of the
  free-text inferences (Ickes et al. 1990).

Stops are numbered from 1 in story order (the segment's position in the vignette). The draft
section ``instruments/ea_README_draft.md`` describes the CSV formats and the scoring.
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
from psyq.engine.kinds.vignette import VignetteItem

if TYPE_CHECKING:
    from psyq.engine.design.instrument import Instrument

STOP = ["vignette", "stop"]
TARGET_COLUMNS = ["vignette", "stop", "emotion", "intensity", "source", "thoughts"]
STOP_SCORES = ["n", "r", "z", "mae", "ccc", "distinctive_r"]
R_CLIP = 0.9999      # |r| is clipped to this before Fisher's z, so that z(1) = 4.95 stays finite
MIN_N_FOR_R = 3      # fewer emotions rated by both: no correlation
JUDGE_LEVELS = (0, 1, 2)


# ---------------------------------------------------------------------------------------------
# Target profiles


def _vignettes(instrument: Instrument) -> list[VignetteItem]:
    """The instrument's vignette items, in file order."""
    return [item for item in instrument.items if isinstance(item, VignetteItem)]


def target_profiles(instrument: Instrument) -> pd.DataFrame:
    """The targets' reports as a long table: one row per vignette × stop × emotion.

    Columns ``vignette, stop, emotion, intensity, source, thoughts``; ``thoughts`` repeats the
    stop's text on each of its rows (None when the report has none). A segment without a
    ``target_report`` gives no rows (its stop number is still counted).

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> t = target_profiles(load_instrument("ea_vignettes_psyq"))
        >>> len(t), t.groupby(["vignette", "stop"]).ngroups
        (220, 22)
    """
    rows = [(item.id, stop, emotion, report.intensities[emotion], report.source, report.thoughts)
            for item in _vignettes(instrument)
            for stop, segment in enumerate(item.segments, start=1)
            if (report := segment.target_report) is not None
            for emotion in instrument.emotions]
    return pd.DataFrame(rows, columns=TARGET_COLUMNS).astype({"stop": int, "intensity": int})


def with_self_reports(targets: pd.DataFrame, reports: pd.DataFrame) -> pd.DataFrame:
    """`targets` with every stop that `reports` covers replaced by the reports' rows.

    Stops of `reports` that `targets` lacks are added. Rows keep the order of first appearance
    of vignettes and emotions (targets first), then stop number.

    Example (the shipped vignettes, v01's one stop replaced by a self-report):
        >>> from psyq.engine.design.instrument import load_instrument
        >>> targets = target_profiles(load_instrument("ea_vignettes_psyq"))
        >>> reports = targets[targets["vignette"] == "v01"].assign(intensity=[3, 4, 1, 0, 0, 0, 0, 1, 0, 0],
        ...                                                        source="self-report")
        >>> merged = with_self_reports(targets, reports)
        >>> len(merged), merged.groupby("source").size().to_dict()
        (220, {'design-intended': 210, 'self-report': 10})
    """
    replaced = pd.MultiIndex.from_frame(targets[STOP]).isin(pd.MultiIndex.from_frame(reports[STOP]))
    combined = pd.concat([targets.loc[~replaced, TARGET_COLUMNS], reports[TARGET_COLUMNS]], ignore_index=True)
    return _sorted(combined, {"vignette": combined["vignette"].unique(), "emotion": combined["emotion"].unique()})


def normative_profile(targets: pd.DataFrame) -> pd.Series:
    """Mean target intensity per emotion over all stops in `targets` (Furr 2008's normative profile).

    Example:
        >>> normative_profile(pd.DataFrame({"emotion": ["joy", "fear", "joy", "fear"],
        ...                                 "intensity": [4, 0, 2, 1]})).to_dict()
        {'joy': 3.0, 'fear': 0.5}
    """
    return targets.groupby("emotion", sort=False)["intensity"].mean()


# ---------------------------------------------------------------------------------------------
# Scores


def fisher_z(r: np.ndarray | pd.Series | float) -> np.ndarray | pd.Series | float:
    """Fisher's z = arctanh(r), with r first clipped to ±0.9999 (`R_CLIP`).

    Without the clip a perfect match (r = 1, common on 10 integer ratings) has z = ∞ and
    swamps every mean it enters; with it, z(1) = arctanh(0.9999) ≈ 4.95. NaN stays NaN.

    Example:
        >>> round(float(fisher_z(0.5)), 4), round(float(fisher_z(1.0)), 4)
        (0.5493, 4.9517)
    """
    return np.arctanh(np.clip(r, -R_CLIP, R_CLIP))


@dataclass(frozen=True)
class _Moments:
    """Row-wise moments of paired profiles over the cells where both are present."""

    n: np.ndarray
    mean_x: np.ndarray
    mean_y: np.ndarray
    sxx: np.ndarray        # sums of squared (cross-)deviations, not divided by n
    syy: np.ndarray
    sxy: np.ndarray
    flat_x: np.ndarray     # no spread (also true when n = 0)
    flat_y: np.ndarray


def _moments(x: np.ndarray, y: np.ndarray) -> _Moments:
    both = ~np.isnan(x) & ~np.isnan(y)
    n = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_x = np.where(both, x, 0.0).sum(axis=1) / n
        mean_y = np.where(both, y, 0.0).sum(axis=1) / n
    dx = np.where(both, x - mean_x[:, None], 0.0)
    dy = np.where(both, y - mean_y[:, None], 0.0)

    def flat(v: np.ndarray) -> np.ndarray:
        return ~(np.where(both, v, -np.inf).max(axis=1) > np.where(both, v, np.inf).min(axis=1))

    return _Moments(n, mean_x, mean_y, (dx * dx).sum(axis=1), (dy * dy).sum(axis=1),
                    (dx * dy).sum(axis=1), flat(x), flat(y))


def _pearson(m: _Moments) -> np.ndarray:
    """Pearson r per row; NaN when either profile is flat or fewer than 3 pairs."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(m.sxy / np.sqrt(m.sxx * m.syy), -1.0, 1.0)
    return np.where(m.flat_x | m.flat_y | (m.n < MIN_N_FOR_R), np.nan, r)


def _ccc(m: _Moments) -> np.ndarray:
    """Lin's (1989) concordance correlation, 2·s_xy / (s_x² + s_y² + (x̄ − ȳ)²), with population
    (÷ n) moments; the n's cancel. NaN when both profiles are flat (or nothing was rated)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ccc = 2 * m.sxy / (m.sxx + m.syy + m.n * (m.mean_x - m.mean_y) ** 2)
    return np.where(m.flat_x & m.flat_y, np.nan, ccc)


def stop_accuracy(ratings: pd.DataFrame, targets: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Score each perceiver at each stop against the target's profile.

    `ratings` has columns ``*keys, vignette, stop, emotion, rating`` (NaN = not rated);
    `targets` has at least ``vignette, stop, emotion, intensity`` and must hold **all** stops of
    the instrument (e.g. :func:`target_profiles`), because the normative profile is its mean per
    emotion. Ratings of stops or emotions without a target row are ignored. Returns one row per
    perceiver × vignette × stop that has ratings, sorted, with:

    - ``n``: emotions with both a rating and an intensity (missing ratings are dropped);
    - ``r``: Pearson r of the two profiles over those emotions; NaN if either is flat or n < 3;
    - ``z``: :func:`fisher_z` of r (clipped at ±0.9999);
    - ``mae``: mean absolute difference;
    - ``ccc``: Lin's (1989) concordance correlation (population moments); NaN if both are flat;
    - ``distinctive_r``: Pearson r after subtracting the normative profile from both profiles
      (Furr 2008), same NaN rules as ``r``.

    Example (target 4,1,0,1 on joy, sadness, anger, fear; perceiver 3,2,0,1):
        >>> t = pd.DataFrame({"vignette": "v", "stop": 1, "emotion": ["joy", "sadness", "anger", "fear"],
        ...                   "intensity": [4, 1, 0, 1]})
        >>> s = stop_accuracy(t.drop(columns="intensity").assign(p="a", rating=[3, 2, 0, 1]), t, ["p"])
        >>> s[["n", "r", "mae", "ccc"]].round(4).values.tolist()
        [[4.0, 0.8944, 0.5, 0.8571]]
    """
    index = [*keys, *STOP]
    merged = ratings[[*index, "emotion", "rating"]].merge(
        targets[[*STOP, "emotion", "intensity"]], on=[*STOP, "emotion"], how="inner", validate="many_to_one")
    if merged.duplicated([*index, "emotion"]).any():
        raise ValueError("ratings hold more than one rating for a perceiver, stop and emotion")
    if merged.empty:
        return pd.DataFrame(columns=[*index, *STOP_SCORES])
    wide = merged.set_index([*index, "emotion"])[["rating", "intensity"]].unstack("emotion")
    emotions = wide["rating"].columns
    x = wide["rating"].to_numpy(dtype=float)
    y = wide["intensity"][emotions].to_numpy(dtype=float)
    norm = normative_profile(targets).reindex(emotions).to_numpy(dtype=float)
    raw, distinctive = _moments(x, y), _moments(x - norm, y - norm)
    r = _pearson(raw)
    with np.errstate(invalid="ignore", divide="ignore"):
        mae = np.where(np.isnan(x - y), 0.0, np.abs(x - y)).sum(axis=1) / raw.n
    scores = pd.DataFrame({"n": raw.n, "r": r, "z": fisher_z(r), "mae": mae, "ccc": _ccc(raw),
                           "distinctive_r": _pearson(distinctive)})
    return pd.concat([wide.index.to_frame(index=False), scores], axis=1)


def vignette_accuracy(stop_scores: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Combine a perceiver's stops within each vignette.

    ``z`` is the mean Fisher z over the vignette's stops with a correlation and ``r`` = tanh(z);
    ``distinctive_z``/``distinctive_r`` likewise; ``mae`` and ``ccc`` are plain means;
    ``n_stops`` counts the stops with a correlation (those averaged into z).

    Example (stops with r = 0.8 and 0.2: z = (1.0986 + 0.2027) / 2 = 0.6507, r = 0.5721):
        >>> s = pd.DataFrame({"p": "a", "vignette": "v", "stop": [1, 2], "r": [0.8, 0.2],
        ...                   "mae": [1.0, 2.0], "ccc": [0.5, 0.1], "distinctive_r": [0.3, 0.3]})
        >>> vignette_accuracy(s.assign(z=fisher_z(s["r"])), ["p"])[["r", "mae"]].round(4).values.tolist()
        [[0.5721, 1.5]]
    """
    scores = stop_scores.assign(distinctive_z=fisher_z(stop_scores["distinctive_r"]))
    out = scores.groupby([*keys, "vignette"], sort=False, dropna=False).agg(
        n_stops=("z", "count"), z=("z", "mean"), mae=("mae", "mean"), ccc=("ccc", "mean"),
        distinctive_z=("distinctive_z", "mean")).reset_index()
    return _back_transformed(out)


def perceiver_accuracy(stop_scores: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """One overall score per perceiver, every vignette weighted equally.

    Fisher z is averaged first over the stops of each vignette (:func:`vignette_accuracy`), then
    over the vignettes, and ``r`` = tanh of that mean; so a three-stop story counts as much as a
    one-stop story. ``distinctive_r``, ``mae`` and ``ccc`` are combined in the same two steps.
    ``n_vignettes`` counts vignettes with a correlation, ``n_stops`` the stops behind them.

    Example (r = 0.8, 0.2 in vignette a and 0.5 in b: z = (0.6507 + 0.5493) / 2 = 0.6000, r = 0.5370;
    a plain mean over the three stops would give r = 0.5490):
        >>> s = pd.DataFrame({"p": "x", "vignette": ["a", "a", "b"], "stop": [1, 2, 1], "r": [0.8, 0.2, 0.5],
        ...                   "mae": 1.0, "ccc": 0.5, "distinctive_r": 0.1})
        >>> out = perceiver_accuracy(s.assign(z=fisher_z(s["r"])), ["p"])
        >>> out[["r", "n_vignettes", "n_stops"]].round(4).values.tolist()
        [[0.537, 2.0, 3.0]]
    """
    if not keys:
        raise ValueError("perceiver_accuracy needs at least one key column")
    per_vignette = vignette_accuracy(stop_scores, keys)
    out = per_vignette.groupby(list(keys), sort=False, dropna=False).agg(
        n_vignettes=("z", "count"), n_stops=("n_stops", "sum"), z=("z", "mean"), mae=("mae", "mean"),
        ccc=("ccc", "mean"), distinctive_z=("distinctive_z", "mean")).reset_index()
    return _back_transformed(out)


def _back_transformed(scores: pd.DataFrame) -> pd.DataFrame:
    """Insert r = tanh(z) before z and distinctive_r = tanh(distinctive_z) after ccc."""
    scores.insert(scores.columns.get_loc("z"), "r", np.tanh(scores["z"]))
    scores.insert(scores.columns.get_loc("distinctive_z"), "distinctive_r", np.tanh(scores["distinctive_z"]))
    return scores


def judge_percent(similarity_levels: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Ickes-style accuracy: raters' similarity levels (0, 1, 2) as percent of the maximum.

    `similarity_levels` has columns ``*keys, vignette, stop, level``; each row is one judgement
    (NaN = not judged, left out). Per perceiver: ``n_judged``, ``points`` (sum of levels) and
    ``percent`` = points / (2 × n_judged) × 100. With several raters per inference, either
    average them first or add the rater to the rows (each row then counts once).

    Example (levels 2, 1, 0, missing: 3 / (2 × 3) × 100 = 50):
        >>> j = pd.DataFrame({"p": "a", "vignette": "v", "stop": [1, 2, 3, 4], "level": [2, 1, 0, None]})
        >>> judge_percent(j, ["p"])["percent"].tolist()
        [50.0]
    """
    levels = similarity_levels["level"]
    if (levels.notna() & ~levels.isin(JUDGE_LEVELS)).any():
        raise ValueError(f"similarity levels must be 0, 1 or 2; found {sorted(set(levels.dropna()) - set(JUDGE_LEVELS))}")
    out = similarity_levels.groupby(list(keys), sort=False, dropna=False)["level"].agg(
        n_judged="count", points="sum").reset_index()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["percent"] = out["points"] / (2 * out["n_judged"]) * 100
    return out


# ---------------------------------------------------------------------------------------------
# CSV files


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


def read_target_reports_csv(path: str | Path, instrument: Instrument) -> pd.DataFrame:
    """Read targets' own reports: CSV ``vignette_id,segment,emotion,intensity[,thoughts]``.

    Each stop needs exactly one row per emotion of the instrument; ``intensity`` is a whole
    number on ``emotion_scale``; ``thoughts`` may be written on one row of a stop. Returns the
    columns of :func:`target_profiles` with source ``self-report``; every problem is raised in
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
    (_, rows), cells = _read_rows(path, TARGET_CSV, ("thoughts",)), _Cells(str(path))
    stops = {item.id: len(item.segments) for item in _vignettes(instrument)}
    keyed, values = [], []
    for row in rows:
        key = _stop_key(row, instrument, stops, cells)
        value = _scale_value(row, "intensity", instrument, cells, required=True)
        if key is not None:
            keyed.append((row, key))
            values.append(value)
    thoughts = _check_stops(keyed, instrument, cells)
    cells.raise_if_any()
    table = pd.DataFrame([(v, s, e, int(value), "self-report", thoughts[(v, s)])
                          for (_, (v, s, e)), value in zip(keyed, values)], columns=TARGET_COLUMNS)
    return _in_instrument_order(table.astype({"stop": int, "intensity": int}), instrument)


def read_perceiver_csv(path: str | Path, instrument: Instrument) -> pd.DataFrame:
    """Read human perceivers' ratings: CSV ``respondent_id,vignette_id,segment,emotion,rating[,thoughts]``.

    An empty ``rating`` is a missing rating (NaN); others are whole numbers on
    ``emotion_scale``. Each stop a respondent answered needs one row per emotion, and
    ``thoughts`` (their free-text inference) on one row at most. Returns ``respondent_id,
    vignette, stop, emotion, rating`` (plus ``thoughts``, the stop's text on each of its rows,
    when the file has that column), ready for :func:`stop_accuracy` with keys
    ``["respondent_id"]``. Problems are raised as in :func:`read_target_reports_csv`.

    Example (one person's ratings of the shipped vignette v01, written to a temporary folder):
        >>> import tempfile
        >>> from psyq.engine.design.instrument import load_instrument
        >>> ea = load_instrument("ea_vignettes_psyq")
        >>> rows = [f"p1,v01,1,{e},{n}" for e, n in zip(ea.emotions, [2, 4, 1, 0, 0, 0, 0, 2, 0, 0])]
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "people.csv"
        ...     _ = path.write_text("\\n".join(["respondent_id,vignette_id,segment,emotion,rating", *rows]) + "\\n",
        ...                         encoding="utf-8")
        ...     ratings = read_perceiver_csv(path, ea)
        >>> stop_accuracy(ratings, target_profiles(ea), ["respondent_id"])[["respondent_id", "n", "r", "mae"]].round(3)
          respondent_id   n      r  mae
        0            p1  10  0.758  0.5
    """
    (header, rows), cells = _read_rows(path, PERCEIVER_CSV, ("thoughts",)), _Cells(str(path))
    stops = {item.id: len(item.segments) for item in _vignettes(instrument)}
    keyed, values = [], []
    for row in rows:
        respondent = row.cells["respondent_id"]
        if respondent == "":
            cells.bad(row.line, "respondent_id", "respondent_id is empty")
        key = _stop_key(row, instrument, stops, cells)
        value = _scale_value(row, "rating", instrument, cells, required=False)
        if key is not None and respondent:
            keyed.append((row, (respondent, *key)))
            values.append(value)
    thoughts = _check_stops(keyed, instrument, cells)
    cells.raise_if_any()
    table = pd.DataFrame([(p, v, s, e, value) for (_, (p, v, s, e)), value in zip(keyed, values)],
                         columns=["respondent_id", "vignette", "stop", "emotion", "rating"])
    if "thoughts" in header:
        table["thoughts"] = [thoughts[(p, v, s)] for _, (p, v, s, _e) in keyed]
    return _in_instrument_order(table.astype({"stop": int, "rating": float}), instrument, first=["respondent_id"])


def _in_instrument_order(table: pd.DataFrame, instrument: Instrument, first: Sequence[str] = ()) -> pd.DataFrame:
    orders = {column: table[column].unique() for column in first}
    orders |= {"vignette": [item.id for item in _vignettes(instrument)], "emotion": instrument.emotions}
    return _sorted(table, orders)


def _sorted(table: pd.DataFrame, orders: dict[str, Sequence]) -> pd.DataFrame:
    """Stable sort by the columns of `orders` (each by position in its sequence) and stop, with
    emotion (if in `orders`) last."""
    ranks = {column: {value: i for i, value in enumerate(order)} for column, order in orders.items()}

    def rank(col: pd.Series) -> pd.Series:
        return col.map(ranks[col.name]) if col.name in ranks else col

    columns = [c for c in (*orders, "stop") if c != "emotion"] + ["emotion"]
    return table.sort_values(columns, key=rank, kind="stable").reset_index(drop=True)
