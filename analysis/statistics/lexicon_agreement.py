"""LEAS levels of the lexicon against a judge model's, answer by answer: the levels psyq's lexicon
gives every scene answer, and each judge's agreement with them (:func:`level_agreement`).

Checked in tests/test_judge.py (``test_judge_against_lexicon_in_the_report``): the shipped lexicon's
levels of a scripted run's answers against the levels its rules give by hand, and the judge's
agreement (exact, within one, mean difference) by hand and Pearson r against numpy's ``corrcoef``.

Example
-------
>>> from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, load_lexicon
>>> table = pd.DataFrame({"backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "leas",
...                       "item_id": ["s1:self", "s1:other", "7"], "text": ["furious", "", None]})
>>> lexicon_answer_levels(table, load_lexicon(DEFAULT_LEXICON))[["item_id", "lexicon_level"]].values.tolist()
[['s1:self', 3]]
"""

from __future__ import annotations

import pandas as pd

from psyq.engine.kinds.scene.leas import Lexicon, is_scene_answer, score_answer
from psyq.engine.trials.free_text import has_text

from psyq.analysis.statistics.agreement import AGREEMENT_COLUMNS, level_agreement


def lexicon_answer_levels(table: pd.DataFrame, lexicon: Lexicon) -> pd.DataFrame:
    """The lexicon's level of every scene answer with text (rows ``<scene>:self|other`` of an
    exported table): columns ``backend_id, respondent_id, repeat, instrument, item_id, lexicon_level``."""
    rows = table[is_scene_answer(table["item_id"]) & table["text"].map(has_text)]
    keys = ["backend_id", "respondent_id", "repeat", "instrument", "item_id"]
    out = rows[keys].copy()
    out["lexicon_level"] = [score_answer(text, lexicon, str(item).split(":")[1]).level   # read as a self or other answer
                            for text, item in zip(rows["text"], rows["item_id"])]
    return out.reset_index(drop=True)


def judge_lexicon_agreement(lexicon_levels: pd.DataFrame, judgements: pd.DataFrame) -> pd.DataFrame:
    """Agreement of each judge (× rubric) with the lexicon on the answers both scored, per
    instrument and overall (``instrument`` = "all"), with the columns of :func:`level_agreement`."""
    keys = ["backend_id", "respondent_id", "repeat", "instrument", "item_id"]
    judged = judgements[judgements["status"] == "answered"]
    if judged.empty or lexicon_levels.empty:
        return pd.DataFrame(columns=["judge_id", "judge_model", "rubric_id", "instrument"] + AGREEMENT_COLUMNS)
    both = lexicon_levels.merge(judged[keys + ["judge_id", "judge_model", "rubric_id", "level"]], on=keys)
    rows = []
    for (judge, model, rubric), group in both.groupby(["judge_id", "judge_model", "rubric_id"], dropna=False):
        parts = [(inst, g) for inst, g in group.groupby("instrument")] + [("all", group)]
        for inst, g in parts if group["instrument"].nunique() > 1 else parts[:1]:
            stats_ = level_agreement(g["lexicon_level"], g["level"])
            rows.append({"judge_id": judge, "judge_model": model, "rubric_id": rubric, "instrument": inst, **stats_})
    return pd.DataFrame(rows)
