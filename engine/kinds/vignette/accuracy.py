"""Empathic accuracy on vignettes: target profiles and profile-accuracy scores.

A vignette tells a story in segments; at the end of each segment, the *stop*, a perceiver rates
how strongly the target feels each of the instrument's ``emotions``. Everything here is in long
pandas tables (one row per stop × emotion), and every function is pure:

- :func:`target_profiles` takes the targets' reports from an instrument, and
  :func:`with_self_reports` puts real targets' self-reports in place of the shipped
  (design-intended) ones;
- :func:`stop_accuracy` scores each perceiver at each stop (profile Pearson r and its Fisher z,
  MAE, Lin's CCC, distinctive r), :func:`vignette_accuracy` and :func:`perceiver_accuracy`
  combine stops, and :func:`judge_percent` sums raters' 0/1/2 similarity judgements of the
  free-text inferences (Ickes et al. 1990).

The CSV files of targets' self-reports and human perceivers' ratings are read by
:mod:`.accuracy_csv`. Stops are numbered from 1 in story order (the segment's position in the
vignette). The draft section ``instruments/ea_README_draft.md`` describes the CSV formats and the
scoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

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


def vignette_items(instrument: Instrument) -> list[VignetteItem]:
    """The instrument's vignette items, in file order.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> [item.id for item in vignette_items(load_instrument("ea_vignettes_psyq"))][:2]
        ['v01', 'v02']
    """
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
            for item in vignette_items(instrument)
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
    return sorted_in_order(combined, {"vignette": combined["vignette"].unique(), "emotion": combined["emotion"].unique()})


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
    return back_transformed(out)


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
    return back_transformed(out)


def back_transformed(scores: pd.DataFrame) -> pd.DataFrame:
    """`scores` (combined Fisher z's: columns ``z`` and ``distinctive_z``) with r = tanh(z)
    inserted before z and distinctive_r = tanh(distinctive_z) before distinctive_z; changed in place.

    Example:
        >>> back_transformed(pd.DataFrame({"z": [0.5493], "distinctive_z": [0.0]})).round(3).values.tolist()
        [[0.5, 0.549, 0.0, 0.0]]
    """
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


def sorted_in_order(table: pd.DataFrame, orders: dict[str, Sequence]) -> pd.DataFrame:
    """Stable sort by the columns of `orders` (each by position in its sequence) and stop, with
    emotion (by its order if in `orders`) last.

    Example:
        >>> t = pd.DataFrame({"vignette": ["b", "a", "a"], "stop": [1, 2, 1], "emotion": "joy"})
        >>> sorted_in_order(t, {"vignette": ["a", "b"]})[["vignette", "stop"]].values.tolist()
        [['a', 1], ['a', 2], ['b', 1]]
    """
    ranks = {column: {value: i for i, value in enumerate(order)} for column, order in orders.items()}

    def rank(col: pd.Series) -> pd.Series:
        return col.map(ranks[col.name]) if col.name in ranks else col

    columns = [c for c in (*orders, "stop") if c != "emotion"] + ["emotion"]
    return table.sort_values(columns, key=rank, kind="stable").reset_index(drop=True)
