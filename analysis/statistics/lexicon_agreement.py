"""LEAS levels of the lexicon against a judge model's and people's, answer by answer: the levels
psyq's lexicon gives every scene answer, each judge's agreement with them
(:func:`judge_lexicon_agreement`), and the agreement of every pair of sources of levels, the
lexicon, each judge model and each person, with weighted κ (:func:`source_agreement`).

Checked in tests/test_judge.py (``test_judge_against_lexicon_in_the_report``): the shipped lexicon's
levels of a scripted run's answers against the levels its rules give by hand, and the judge's
agreement (exact, within one, mean difference) by hand and Pearson r against numpy's ``corrcoef``.
Checked in tests/test_leas_agreement.py: :func:`source_agreement` on a run with a stub judge and two
people's sheets read back, each pair's n and exact agreement by hand, κ against
``sklearn.metrics.cohen_kappa_score`` and the reasons of what is not estimable.

Example
-------
>>> from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, load_lexicon
>>> table = pd.DataFrame({"backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "leas",
...                       "item_id": ["s1:self", "s1:other", "7"], "text": ["furious", "", None]})
>>> lexicon_answer_levels(table, load_lexicon(DEFAULT_LEXICON))[["item_id", "lexicon_level"]].values.tolist()
[['s1:self', 3]]
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import numpy as np
import pandas as pd

from psyq.engine.judging.answer_sheet import PEOPLE
from psyq.engine.kinds.scene.leas import Lexicon, is_scene_answer, score_answer
from psyq.engine.trials.free_text import has_text

from psyq.analysis.statistics.agreement import AGREEMENT_COLUMNS, level_agreement, weighted_kappa

ANSWER_KEYS = ["backend_id", "respondent_id", "repeat", "instrument", "item_id"]
LEXICON = "lexicon"
PEOPLE_POOLED = f"{PEOPLE}:all"
"""The source of every person's levels together (:func:`source_agreement`)."""
SOURCE_AGREEMENT_COLUMNS = ["source_a", "source_b", "n", "exact", "within_one", "kappa_linear", "kappa_quadratic",
                            "r", "icc", "note"]


def lexicon_answer_levels(table: pd.DataFrame, lexicon: Lexicon,
                          others: Mapping[tuple[str, str], tuple[str, ...]] | None = None) -> pd.DataFrame:
    """The lexicon's level of every scene answer with text (rows ``<scene>:self|other`` of an
    exported table): columns ``backend_id, respondent_id, repeat, instrument, item_id, lexicon_level``.
    `others`: (instrument, scene) -> the words naming the scene's other person
    (:func:`psyq.engine.kinds.scene.scene_others`), so that whose feeling a word names is read as
    the run's scores read it."""
    rows = table[is_scene_answer(table["item_id"]) & table["text"].map(has_text)]
    out = rows[ANSWER_KEYS].copy()
    out["lexicon_level"] = [score_answer(text, lexicon, scene_role[1],   # read as a self or other answer
                                         (others or {}).get((instrument, scene_role[0]), ())).level
                            for text, instrument, scene_role in zip(rows["text"], rows["instrument"],
                                                                    rows["item_id"].astype(str).str.split(":"))]
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


def source_levels(lexicon_levels: pd.DataFrame, judgements: pd.DataFrame) -> pd.DataFrame:
    """Every scene answer's level from each source, one row per answer and source: the lexicon
    (:func:`lexicon_answer_levels`), each judge model (``judge:<judge_id>``) and each person
    (``people:<rater_id>``, answer mode ``people``: psyq import ratings). Judgements without a
    level (the judge gave none, a person left the cell empty) are left out. When the judgements hold
    more than one rubric, each judge's and person's source names its rubric (``judge:x [rubric]``).
    Columns ``backend_id, respondent_id, repeat, instrument, item_id, source, kind, level``
    (`kind`: lexicon, judge or people).

    Example
    -------
    >>> lexicon = pd.DataFrame({"backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "leas",
    ...                         "item_id": ["s1:self", "s1:other"], "lexicon_level": [3, 4]})
    >>> judged = lexicon.drop(columns="lexicon_level").assign(
    ...     judge_id=["people:h1", "m"], answer_mode=["people", "json"], rubric_id="leas_level",
    ...     level=[3, 2], status="answered")
    >>> source_levels(lexicon, judged)[["item_id", "source", "kind", "level"]].values.tolist()
    [['s1:self', 'lexicon', 'lexicon', 3], ['s1:other', 'lexicon', 'lexicon', 4], ['s1:other', 'judge:m', 'judge', 2], ['s1:self', 'people:h1', 'people', 3]]
    """
    columns = ANSWER_KEYS + ["source", "kind", "level"]
    lexicon = lexicon_levels[ANSWER_KEYS].assign(source=LEXICON, kind=LEXICON, level=lexicon_levels["lexicon_level"])
    judged = judgements[is_scene_answer(judgements["item_id"]) & (judgements["status"] == "answered")
                        & judgements["level"].notna()]
    if judged.empty:
        return lexicon[columns].reset_index(drop=True)
    people = judged["answer_mode"] == PEOPLE
    named = judged["judge_id"].astype(str)
    source = named.where(people, "judge:" + named)
    if judged["rubric_id"].nunique() > 1:
        source = source + " [" + judged["rubric_id"].astype(str) + "]"
    judged = judged[ANSWER_KEYS].assign(source=source, kind=np.where(people, PEOPLE, "judge"), level=judged["level"])
    judged = judged.sort_values(["kind", "source"], kind="stable")
    out = pd.concat([lexicon, judged], ignore_index=True)[columns]
    out["level"] = out["level"].astype(float).astype(int)
    return out


def source_agreement(lexicon_levels: pd.DataFrame, judgements: pd.DataFrame) -> pd.DataFrame:
    """The agreement of every pair of sources of LEAS levels of the same scene answers: the lexicon,
    each judge model, each person, and all people pooled (:func:`source_levels`), one row per pair
    (columns :data:`SOURCE_AGREEMENT_COLUMNS`) on the answers both scored.

    ``n`` pairs of levels; ``exact``, ``within_one``: shares of pairs with equal levels and levels at
    most one apart; ``kappa_linear``, ``kappa_quadratic``: Cohen's weighted κ
    (:func:`psyq.analysis.statistics.agreement.weighted_kappa`; linear is the one for LEAS levels,
    quadratic beside it); ``r`` Pearson, ``icc`` ICC(A,1)
    (:func:`psyq.analysis.statistics.agreement.level_agreement`). A value that cannot be estimated
    is NaN and ``note`` says why: no answer scored by both, a source that gives every answer the
    same level (κ, r and ICC), fewer than three pairs (r and ICC).

    All people pooled (``people:all``, when two or more people scored): each person's level of an
    answer is one pair with the other source's level of it, so an answer scored by two people counts
    twice and ``n`` counts levels, not answers (the note says how many answers). The people's mean
    level, as :func:`psyq.analysis.statistics.rater_agreement.judge_vs_human` takes it, can fall
    between two levels (2.5), which κ cannot count. A person is not compared with the pool that
    holds their own levels.

    Example
    -------
    >>> lexicon = pd.DataFrame({"backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "leas",
    ...                         "item_id": ["s1:self", "s1:other", "s2:self", "s2:other"], "lexicon_level": [3, 4, 1, 2]})
    >>> judged = lexicon.drop(columns="lexicon_level").assign(judge_id="m", answer_mode="json", rubric_id="leas_level",
    ...                                                        level=[3, 4, 2, 2], status="answered")
    >>> row = source_agreement(lexicon, judged).iloc[0]
    >>> row.source_a, row.source_b, int(row.n), float(row.exact), round(float(row.kappa_linear), 3)
    ('lexicon', 'judge:m', 4, 0.75, 0.778)
    """
    levels = source_levels(lexicon_levels, judgements)
    order = list(dict.fromkeys(levels["source"]))
    people = levels[levels["kind"] == PEOPLE]
    if people["source"].nunique() > 1:
        levels = pd.concat([levels, people.assign(source=PEOPLE_POOLED)], ignore_index=True)
        order.append(PEOPLE_POOLED)
    kind = levels.drop_duplicates("source").set_index("source")["kind"]
    rows = []
    for a, b in combinations(order, 2):
        if b == PEOPLE_POOLED and kind[a] == PEOPLE:
            continue
        both = (levels[levels["source"] == a][ANSWER_KEYS + ["level"]]
                .merge(levels[levels["source"] == b][ANSWER_KEYS + ["level"]], on=ANSWER_KEYS, suffixes=("_a", "_b")))
        rows.append(_pair_row(a, b, both))
    return pd.DataFrame(rows, columns=SOURCE_AGREEMENT_COLUMNS)


def _pair_row(a: str, b: str, both: pd.DataFrame) -> dict[str, object]:
    """One row of :func:`source_agreement`: the pair (a, b) on its merged levels."""
    x, y = both["level_a"].to_numpy(dtype=float), both["level_b"].to_numpy(dtype=float)
    stats_ = level_agreement(x, y) if len(both) else {"n": 0, "exact": np.nan, "within_one": np.nan,
                                                       "pearson_r": np.nan, "icc_a1": np.nan}
    notes = []
    if not len(both):
        notes.append("not estimable: no answer scored by both")
    else:
        flat = [f"{s} gives every answer level {int(v[0])}" for s, v in ((a, x), (b, y)) if np.ptp(v) == 0]
        if flat:
            notes.append("κ, r and ICC not estimable: " + " and ".join(flat))
        elif len(both) < 3:
            notes.append(f"r and ICC not estimable: {len(both)} answer{'s' if len(both) > 1 else ''} scored by both, "
                         "fewer than 3")
        if PEOPLE_POOLED in (a, b):
            answers = len(both.drop_duplicates(ANSWER_KEYS))
            notes.append(f"{PEOPLE_POOLED}: {len(both)} levels of {answers} answers, each person's level one pair")
    return {"source_a": a, "source_b": b, "n": int(stats_["n"]), "exact": stats_["exact"],
            "within_one": stats_["within_one"], "kappa_linear": weighted_kappa(x, y, "linear"),
            "kappa_quadratic": weighted_kappa(x, y, "quadratic"), "r": stats_["pearson_r"],
            "icc": stats_["icc_a1"], "note": "; ".join(notes)}
