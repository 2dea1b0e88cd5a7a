"""From a run's tidy answers to subscale scores per respondent: the table every analysis reads.

Example:
    >>> from engine import export_table
    >>> from engine.export import run_instruments
    >>> table = export_table(run_dir)                                         # doctest: +SKIP
    >>> scores = score_answers(table, run_instruments(open_run_dir(run_dir)))  # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd

from pathlib import Path

from engine.instrument import Instrument
from engine.leas import Lexicon, leas_scores, load_lexicon, score_scenes
from engine.scoring import score

DEFAULT_LEXICON = Path(__file__).resolve().parents[1] / "instruments" / "lexicons" / "leas_psyq_lexicon.yaml"

RESPONDENT_KEYS = ["backend_id", "model", "respondent_id", "repeat"]
ANSWER_COLUMNS = {"run_id", "study", "backend_id", "model", "respondent_id", "instrument", "item_id",
                  "position", "repeat", "option_order", "status", "reason", "disclaimer", "raw_text",
                  "value", "keyed_value", "expected", "option_mass", "distribution", "text", "trial_status",
                  "attempts", "reasks"}


def persona_columns(table: pd.DataFrame) -> list[str]:
    """The persona attribute columns of an exported answers table."""
    return [c for c in table.columns if c not in ANSWER_COLUMNS]


def score_answers(table: pd.DataFrame, instruments: dict[str, Instrument]) -> pd.DataFrame:
    """Subscale scores, one row per backend × respondent × repeat × instrument × subscale.

    Columns: ``backend_id, model, respondent_id, repeat``, the persona attributes,
    ``instrument, subscale, score, n_answered, n_items``. Scores follow each instrument's own
    rules (reverse keying, prorating, `min_answered`); missing answers stay missing.
    """
    attributes = persona_columns(table)
    people = table[RESPONDENT_KEYS + attributes].drop_duplicates(RESPONDENT_KEYS)
    frames = []
    for inst_id, rows in table.groupby("instrument", sort=True):
        instrument = instruments[inst_id]
        if not instrument.rating_subscales:
            continue  # free-text scenes and vignettes have their own scorers
        wide = rows.pivot_table(index=RESPONDENT_KEYS, columns="item_id", values="value",
                                aggfunc="first", dropna=False)
        wide = wide.reindex(columns=[i.id for i in instrument.rating_items])
        tidy = score(instrument, wide.reset_index(drop=True).set_index(pd.RangeIndex(len(wide))))
        keys = wide.index.to_frame(index=False)
        tidy = pd.concat([keys.iloc[tidy["respondent_id"].to_numpy()].reset_index(drop=True),
                          tidy.drop(columns="respondent_id")], axis=1)
        tidy.insert(len(RESPONDENT_KEYS), "instrument", inst_id)
        frames.append(tidy)
    if not frames:
        return pd.DataFrame(columns=RESPONDENT_KEYS + attributes + ["instrument", "subscale", "score",
                                                                   "n_answered", "n_items"])
    scores = pd.concat(frames, ignore_index=True)
    return scores.merge(people, on=RESPONDENT_KEYS, how="left")[
        RESPONDENT_KEYS + attributes + ["instrument", "subscale", "score", "n_answered", "n_items"]]


def scene_levels(table: pd.DataFrame, instruments: dict[str, Instrument], lexicon: Lexicon | None = None) -> pd.DataFrame:
    """LEAS levels per scene (self, other, total) for every instrument with scene items."""
    lexicon = lexicon or load_lexicon(DEFAULT_LEXICON)
    scene_instruments = [i for i, inst in instruments.items() if any(x.kind == "scene" for x in inst.items)]
    return score_scenes(table[table["instrument"].isin(scene_instruments)], lexicon)


def score_scene_answers(table: pd.DataFrame, instruments: dict[str, Instrument],
                        lexicon: Lexicon | None = None) -> pd.DataFrame:
    """LEAS self/other/total sums in the same long format as :func:`score_answers` (so norm
    comparison works for an official LEAS form that carries norms)."""
    levels = scene_levels(table, instruments, lexicon)
    attributes = persona_columns(table)
    columns = RESPONDENT_KEYS + attributes + ["instrument", "subscale", "score", "n_answered", "n_items"]
    if levels.empty:
        return pd.DataFrame(columns=columns)
    sums = leas_scores(levels)
    n_scenes = levels.groupby(["backend_id", "respondent_id", "repeat", "instrument"]).size().rename("n_items")
    sums = sums.merge(n_scenes.reset_index(), on=["backend_id", "respondent_id", "repeat", "instrument"])
    sums["n_answered"] = sums["n_items"]
    people = table[RESPONDENT_KEYS + attributes].drop_duplicates(RESPONDENT_KEYS)
    return sums.merge(people, on=["backend_id", "respondent_id", "repeat"], how="left")[columns]
