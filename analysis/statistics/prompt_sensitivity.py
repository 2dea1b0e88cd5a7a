"""Prompt sensitivity of respondents: the same study asked as written and with perturbed prompts.

A run made with ``psyq run STUDY --perturb-prompts SET:ID`` (engine/design/perturbed_prompts.py) asks the
same respondents the same instruments, with instructions and item texts through a rule such as
light typos. Pairing each respondent's subscale score in that run with the same respondent's
score in the run as written (same backend, repeat, instrument and subscale) gives the paired
change perturbed − original; a respondent model that reads the question rather than its surface
shows changes near zero.

Checked in tests/test_prompt_sensitivity.py (``test_paired_changes_by_hand``): the paired changes,
their mean, share changed and t interval worked out by hand (t(.975, 1) = 12.706); the end-to-end
test pairs a real perturbed run with its original.

Example
-------
>>> orig = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b", "c"], "repeat": 0,
...                      "instrument": "iri", "subscale": "PT", "score": [10.0, 12.0, 14.0]})
>>> pert = orig.assign(score=[11.0, 12.0, 16.0])
>>> row = paired_score_changes(orig, pert, "typos_light").iloc[0]
>>> float(row["mean_change"]), round(float(row["share_changed"]), 3)
(1.0, 0.667)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from psyq.engine.results.run import Run, as_run

from psyq.analysis.statistics.robustness import CI_METHOD, mean_change_ci
from psyq.analysis.scoring.scores import load_run_scores

PAIR_KEYS = ["backend_id", "respondent_id", "repeat", "instrument", "subscale"]
SENSITIVITY_COLUMNS = ["variant", "backend_id", "instrument", "subscale", "n_pairs", "n_left_out", "mean_original",
                       "mean_perturbed", "mean_change", "sd_change", "ci_low", "ci_high", "share_changed",
                       "share_up", "share_down", "reason"]
"""One row per variant × backend × instrument × subscale; CI: :data:`psyq.analysis.statistics.robustness.CI_METHOD`
with 'pair' meaning one respondent × repeat."""


def paired_score_changes(original: pd.DataFrame, perturbed: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The paired change in subscale score, perturbed − original, per backend × instrument × subscale.

    `original` and `perturbed` are long score tables (:func:`psyq.analysis.scoring.scores.load_run_scores`).
    A pair needs a score on both sides; pairs without one are counted in ``n_left_out`` and named
    in ``reason``, never imputed. Not estimable (no pair, one pair): NaN with the reason.
    """
    left = original[PAIR_KEYS + ["score"]].rename(columns={"score": "original"})
    right = perturbed[PAIR_KEYS + ["score"]].rename(columns={"score": "perturbed"})
    pairs = left.merge(right, on=PAIR_KEYS, how="outer")
    rows = []
    for (backend, instrument, subscale), group in pairs.groupby(["backend_id", "instrument", "subscale"], sort=True):
        complete = group.dropna(subset=["original", "perturbed"])
        changes = (complete["perturbed"] - complete["original"]).to_numpy(dtype=float)
        mean, sd, low, high, reason = mean_change_ci(changes)
        left_out = len(group) - len(complete)
        if left_out:
            note = f"{left_out} respondent(s) × repeat(s) without a score in one of the runs left out"
            reason = f"{reason}; {note}" if reason else note
        n = len(changes)
        rows.append({"variant": variant, "backend_id": backend, "instrument": instrument, "subscale": subscale,
                     "n_pairs": n, "n_left_out": left_out,
                     "mean_original": float(complete["original"].mean()) if n else np.nan,
                     "mean_perturbed": float(complete["perturbed"].mean()) if n else np.nan,
                     "mean_change": mean, "sd_change": sd, "ci_low": low, "ci_high": high,
                     "share_changed": float(np.mean(changes != 0)) if n else np.nan,
                     "share_up": float(np.mean(changes > 0)) if n else np.nan,
                     "share_down": float(np.mean(changes < 0)) if n else np.nan, "reason": reason or ""})
    return pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS)


def sensitivity_of_runs(original: Run | str | Path, perturbed: Sequence[Run | str | Path]) -> tuple[pd.DataFrame, list[str]]:
    """Read the runs and pair their scores (:func:`paired_score_changes`), with notes on anything
    that makes the comparison weaker (another study, another backend identity, a run not perturbed).

    Example
    -------
    `run_dir` against itself, as a run not perturbed: nothing changes, and the notes say so:

    >>> table, notes = sensitivity_of_runs(run_dir, [run_dir])
    >>> table[["variant", "subscale", "n_pairs", "mean_original", "mean_change"]].round(2)
           variant subscale  n_pairs  mean_original  mean_change
    0  unperturbed        X        4           8.00          0.0
    1  unperturbed        Y        4           3.96          0.0
    2  unperturbed        Z        4          17.42          0.0
    >>> notes[1].endswith("was not run with --perturb-prompts: compared as variant 'unperturbed'")
    True
    """
    base_run = as_run(original)
    original, base = _name(original), base_run.manifest
    notes = [f"intervals: {CI_METHOD.replace('original reply', 'respondent × repeat')}"]
    if base.get("prompt_perturbation"):
        notes.append(f"{original} is itself a perturbed run ({base['prompt_perturbation']['perturbation']}); "
                     "the changes are relative to it")
    base_scores = load_run_scores(base_run)
    frames = []
    for each in perturbed:
        run, path = as_run(each), _name(each)
        manifest = run.manifest
        variant = (manifest.get("prompt_perturbation") or {}).get("perturbation")
        if variant is None:
            notes.append(f"{path} was not run with --perturb-prompts: compared as variant 'unperturbed'")
            variant = "unperturbed"
        if manifest.get("study") != base.get("study"):
            notes.append(f"{path} is a run of study '{manifest.get('study')}', not '{base.get('study')}'")
        same = {b: v.get("identity") for b, v in manifest.get("backends", {}).items()} == \
            {b: v.get("identity") for b, v in base.get("backends", {}).items()}
        if not same:
            notes.append(f"{path}: its backends are not those of {original} (model or settings differ), so "
                         "the change mixes the prompt with the backend")
        frames.append(paired_score_changes(base_scores, load_run_scores(run), variant))
    return pd.concat(frames, ignore_index=True), notes


def _name(run: Run | str | Path) -> str | Path:
    """How the notes name a run: its path as given, or an opened run's folder."""
    return run.path if isinstance(run, Run) else run
