"""Robustness of ratings to perturbed texts: how far a rater's score moves when only the surface
of a reply changes (typos, leetspeak, a paraphrase ...), per perturbation × dimension × rater.

Each perturbed target (``original_id`` set, see :mod:`psyq.engine.judging.perturbed_replies`) is paired with its original
as rated by the *same* rater on the same rubric dimension; the change is perturbed − original
level. Per perturbation × rubric × dimension × rater the table gives the number of pairs, the
mean change with a 95 % confidence interval from the t distribution (mean ± t(0.975, n − 1) · SD / √n,
pairs treated as independent: one per original reply), and the share of pairs whose level changed,
went up and went down. A cell with no pair, or one pair (no SD, so no interval), has NaN with the
reason in column ``reason``; nothing is left out without a word.

Checked in tests/test_robustness.py: the paired changes and their intervals against a ratings table
with the values worked out by hand (t quantiles from tables) and the interval against scipy's
``ttest_1samp(...).confidence_interval``.

Not run: needs the store of a run with rated and perturbed replies (`run_dir` has no ratings);
:func:`robustness_table` shows the table on ratings written out by hand.

Example
-------
>>> ratings = read_ratings(store, "empathy_ceb")        # doctest: +SKIP
>>> robustness_table(ratings)                          # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from psyq.analysis.statistics.intervals import mean_interval

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

    Example
    -------
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

    Example
    -------
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
    low, high = mean_interval(mean, sd, n, level)
    reason = "every pair changed by the same amount: the interval has zero width" if sd == 0 else None
    return mean, sd, low, high, reason


def robustness_table(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per perturbation × rubric × dimension × rater: pairs, mean change with 95 % CI (t-based),
    and the shares of pairs whose level changed, went up, went down (columns :data:`TABLE_COLUMNS`).

    Example
    -------
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


__all__ = ["CI_METHOD", "PAIR_COLUMNS", "TABLE_COLUMNS", "mean_change_ci", "paired_changes", "robustness_table"]
