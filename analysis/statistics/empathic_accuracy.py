"""Empathic accuracy of a cohort (and of human perceivers) on vignettes, from a run's answers.

The scores themselves are :mod:`psyq.engine.kinds.vignette.accuracy`'s (profile r through Fisher z, MAE, Lin's CCC,
distinctive r; judge similarity as percent of maximum); this module takes them from an exported
run and summarises them per vignette and per perceiver group, so that a cohort and human
perceivers scored against the same targets sit side by side (the report's section:
:mod:`psyq.analysis.report.sections.vignette`).

Checked in tests/test_ea_report.py: a real run's per-vignette and overall r, MAE and Lin's CCC, read
from the report section this module feeds, against values computed by hand from the scripted
ratings.

Not run: needs a run of a vignette instrument such as ea_vignettes_psyq (`run_dir` holds rating items only).

Example
-------
>>> table = export_table("runs/ea_vignettes/ab12")                       # doctest: +SKIP
>>> acc = cohort_accuracy(table, instruments["ea_vignettes_psyq"])      # doctest: +SKIP
>>> vignette_summary(acc.vignettes, ["backend_id"])                      # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.kinds.vignette.accuracy import (back_transformed, judge_percent, perceiver_accuracy, stop_accuracy,
                                                 target_profiles, vignette_accuracy)

PERCEIVER_KEYS = ["backend_id", "respondent_id", "repeat"]


def perceiver_ratings(table: pd.DataFrame, instrument_id: str) -> pd.DataFrame:
    """The emotion ratings of one vignette instrument from an exported report, as the long table
    :func:`psyq.engine.kinds.vignette.accuracy.stop_accuracy` reads: ``backend_id, respondent_id, repeat, vignette,
    stop, emotion, rating`` (rows ``<vignette>:<stop>:<emotion>``; missing ratings stay NaN)."""
    rows = table[(table["instrument"] == instrument_id)]
    parts = rows["item_id"].astype(str).str.split(":", expand=True)
    if parts.shape[1] != 3:
        return pd.DataFrame(columns=PERCEIVER_KEYS + ["vignette", "stop", "emotion", "rating"])
    keep = parts[2] != "thoughts"
    out = rows.loc[keep, PERCEIVER_KEYS].copy()
    out["vignette"], out["stop"], out["emotion"] = parts.loc[keep, 0], parts.loc[keep, 1].astype(int), parts.loc[keep, 2]
    out["rating"] = rows.loc[keep, "value"].astype(float)
    return out.reset_index(drop=True)


def inference_levels(judgements: pd.DataFrame, instrument_id: str, rubric_id: str = "ea_similarity") -> pd.DataFrame:
    """Judge similarity levels of the free-text inferences (rows ``<vignette>:<stop>:thoughts``) as
    :func:`psyq.engine.kinds.vignette.accuracy.judge_percent` reads them, per judge."""
    rows = judgements[(judgements["instrument"] == instrument_id) & (judgements["rubric_id"] == rubric_id)
                      & judgements["item_id"].astype(str).str.endswith(":thoughts")]
    parts = rows["item_id"].str.split(":", expand=True)
    out = rows[PERCEIVER_KEYS + ["judge_id", "level"]].copy()
    if not rows.empty:
        out["vignette"], out["stop"] = parts[0], parts[1].astype(int)
    return out.reset_index(drop=True)


@dataclass
class Accuracy:
    """Scores of one group of perceivers: per stop, per vignette and overall per perceiver."""

    stops: pd.DataFrame
    vignettes: pd.DataFrame
    perceivers: pd.DataFrame
    design_intended: bool        # True when any target profile used is not a self-report


def score_perceivers(ratings: pd.DataFrame, targets: pd.DataFrame, keys: Sequence[str]) -> Accuracy:
    """Every accuracy score of `ratings` against `targets` (see :mod:`psyq.engine.kinds.vignette.accuracy`)."""
    stops = stop_accuracy(ratings, targets, keys)
    return Accuracy(stops, vignette_accuracy(stops, keys), perceiver_accuracy(stops, keys),
                    bool((targets["source"] != "self-report").any()))


def cohort_accuracy(table: pd.DataFrame, instrument: Instrument, targets: pd.DataFrame | None = None) -> Accuracy:
    """The run's perceivers scored against `targets` (default: the instrument's own reports)."""
    targets = target_profiles(instrument) if targets is None else targets
    return score_perceivers(perceiver_ratings(table, instrument.id), targets, PERCEIVER_KEYS)


def vignette_summary(vignette_scores: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """Per vignette and group: perceivers, mean accuracy r (Fisher z averaged over perceivers),
    mean MAE and CCC, distinctive r (likewise through z)."""
    return _over_perceivers(vignette_scores, [*group, "vignette"]).drop(columns="z_sd")


def group_summary(perceiver_scores: pd.DataFrame, group: Sequence[str]) -> pd.DataFrame:
    """Per group: perceivers, mean and SD of the perceivers' overall Fisher z, the mean back
    transformed to r, mean MAE and CCC, distinctive r."""
    return _over_perceivers(perceiver_scores, list(group))


def _over_perceivers(scores: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    out = scores.groupby(by, sort=False).agg(
        perceivers=("z", "count"), z=("z", "mean"), z_sd=("z", "std"), mae=("mae", "mean"), ccc=("ccc", "mean"),
        distinctive_z=("distinctive_z", "mean")).reset_index()
    return back_transformed(out).drop(columns="distinctive_z")


def judged_percent(levels: pd.DataFrame) -> pd.DataFrame:
    """Percent of maximum similarity per judge and perceiver (Ickes-style accuracy of inferences)."""
    if levels.empty:
        return pd.DataFrame(columns=["judge_id", *PERCEIVER_KEYS, "n_judged", "points", "percent"])
    return judge_percent(levels, ["judge_id", *PERCEIVER_KEYS])
