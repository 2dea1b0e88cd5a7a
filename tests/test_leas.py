"""LEAS scoring: the level rules on a toy lexicon (expectations by hand), then agreement of
the shipped lexicon with the hand-scored validation set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats

from psyq.engine.files.errors import InputError
from psyq.engine.design.instrument import load_instrument
from psyq.engine.kinds.scene.leas import (AnswerScore, leas_scores, load_lexicon, other_words, score_answer,
    score_scenes, scene_total)

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "data" / "toy_lexicon.yaml"


@pytest.fixture(scope="module")
def toy():
    return load_lexicon(TOY)


@pytest.mark.parametrize("text, level", [
    ("I'd think it was unfair.", 0),                      # cognitive word only
    ("", 0),
    ("I would be tired.", 1),                             # bodily
    ("My stomach in knots, honestly", 1),                 # multi-word bodily phrase
    ("Pretty bad.", 2),                                   # undifferentiated
    ("I'd want to scream", 2),                            # action tendency phrase
    ("Angry.", 3),                                        # one differentiated word
    ("Angry, really furious.", 3),                        # two words, same family: still 3
    ("Angry and hurt.", 4),                               # two families
    ("I wasn't angry, just tired.", 1),                   # negated level 3 does not count
    ("not angry and never scared, but sad", 3),           # two negated, one counts
    ("angry, guilty and a bit scared", 4),
])
def test_answer_levels_on_the_toy_lexicon(toy, text, level):
    assert score_answer(text, toy).level == level


# Negation over a coordination (engine/kinds/scene/leas.py, module docstring): a list joined by
# "or"/"nor" is negated as a whole when its first term is. Levels by hand on the toy lexicon.
@pytest.mark.parametrize("text, level, matched", [
    ("I would not feel angry or sad", 0, ()),             # "not" is four words before "sad": the list carries it
    ("I wouldn't be angry, sad or scared", 0, ()),        # a comma list closed by "or"
    ("I would not feel angry or sad, but guilty", 3, ("guilty",)),   # the list ends at the comma before "but"
    # must not change:
    ("not angry but sad", 3, ("sad",)),                  # "but" turns the clause: sad is said
    ("not angry, sad", 3, ("sad",)),                     # a comma alone is no "or": sad is said
    ("I would not feel angry and I would be sad", 3, ("sad",)),
    ("I would be angry or sad", 4, ("angry", "sad")),    # nothing negated: both count
    # Not a plain list, but one clause: "not" reaches "sad" by clause (issue 56; it did not by the
    # old three-word window, which this case documented as a limitation).
    ("I would not be angry or even a little sad", 0, ()),
    ("I'd be sad or not angry", 3, ("sad",)),            # the negation comes after the first term
])
def test_a_negation_covers_the_terms_joined_by_or(toy, text, level, matched):
    got = score_answer(text, toy)
    assert (got.level, got.matched) == (level, matched)


# "feel like" + an -ing verb is an action tendency (level 2); on the toy lexicon, which lists no
# "feel like" phrase, the level can only come from the scorer's rule.
@pytest.mark.parametrize("text, level, matched", [
    ("I'd feel like hitting something", 2, ("feel like hitting",)),
    ("I would feel like running away", 2, ("feel like running",)),
    ("She'd feel like walking out on him", 2, ("feel like walking",)),
    ("I felt like leaving", 2, ("felt like leaving",)),
    ("Feeling like screaming, and sad", 3, ("feeling like screaming", "sad")),
    ("I wouldn't feel like leaving", 0, ()),             # negated like any term
    # not an act: a noun, a clause, a pronoun in -thing, or "being"
    ("I feel like a fool", 0, ()),                       # the toy lexicon does not list it
    ("I feel like a failure", 0, ()),
    ("I feel like I failed him", 0, ()),
    ("I'd feel like nothing matters", 0, ()),
    ("I'd feel like being sick", 1, ("sick",)),
])
def test_feel_like_doing_something_is_an_action_tendency(toy, text, level, matched):
    got = score_answer(text, toy)
    assert (got.level, got.matched) == (level, matched)


@pytest.mark.parametrize("text, level, matched, families", [
    # A phrase the shipped lexicon lists decides: "feel like a fool" is embarrassment (level 3),
    # "feel like crying" its own action phrase, "hurting" a word of the hurt family.
    ("I'd feel like a fool", 3, ("feel like a fool",), {"embarrassment"}),
    ("I'd feel like crying", 2, ("feel like crying",), set()),
    ("I'd feel like hurting him", 3, ("hurting",), {"hurt"}),
    ("I'd feel like giving up", 2, ("feel like giving",), set()),      # the lexicon lists "give up" only
    ("I would not feel angry or sad", 0, (), set()),
    ("I would feel neither angry nor sad", 0, (), set()),             # "neither" is a negator there
    # Hand-scored 0 in tests/data/leas_validation.csv (scene s11): both words negated.
    ("I wouldn't be angry or upset, I'd just think he made a mistake.", 0, (), set()),
])
def test_the_shipped_lexicon_and_the_two_rules(text, level, matched, families):
    got = score_answer(text, load_lexicon(LEXICON))
    assert (got.level, got.matched, set(got.families)) == (level, matched, families)


def test_scene_total_rule():
    four_a = AnswerScore(4, frozenset({"anger", "sadness"}), ())
    four_b = AnswerScore(4, frozenset({"guilt", "fear"}), ())
    three = AnswerScore(3, frozenset({"anger"}), ())
    assert scene_total(four_a, four_b) == 5          # both 4, differentiated from each other
    assert scene_total(four_a, four_a) == 4          # both 4 but the same emotions: 4
    assert scene_total(three, four_b) == 4           # otherwise the higher of the two
    assert scene_total(AnswerScore(0, frozenset(), ()), three) == 3


def test_scene_and_respondent_sums(toy):
    table = pd.DataFrame({
        "backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "leas",
        "item_id": ["s1:self", "s1:other", "s2:self", "s2:other"],
        "text": ["angry and hurt", "guilty and scared", "tired", None]})
    levels = score_scenes(table, toy).set_index("scene")
    # s1: self 4 (anger, sadness), other 4 (guilt, fear) → total 5. s2: self 1, other 0 → total 1.
    assert levels.loc["s1", ["self_level", "other_level", "total_level"]].tolist() == [4, 4, 5]
    assert levels.loc["s2", ["self_level", "other_level", "total_level"]].tolist() == [1, 0, 1]
    sums = leas_scores(levels.reset_index()).set_index("subscale")["score"]
    assert sums.to_dict() == {"self": 5, "other": 4, "total": 6}


def test_a_phrase_in_two_levels_is_an_error(tmp_path):
    bad = tmp_path / "lex.yaml"
    bad.write_text(TOY.read_text().replace('"2": [good, bad,', '"2": [tired, good, bad,'))
    with pytest.raises(InputError) as err:
        load_lexicon(bad)
    assert "'tired' is also in level 1" in str(err.value)


LEXICON = ROOT / "instruments" / "lexicons" / "leas_psyq_lexicon.yaml"
VALIDATION = ROOT / "tests" / "data" / "leas_validation.csv"
# Agreement reached by the shipped lexicon on the hand-scored set when it was built (see the
# closing note of the LEAS issue); the test fails if a change makes the scorer agree less.
# Reached: r .906, ICC(A,1) .906, exact 85.5 % (n 131); with negation over "or" lists r .914, ICC .914, 86.3 %;
# with the rules of issue 56 (negation by clause, whose feeling, near-synonyms, misspellings, other senses)
# r .993, ICC .993, exact 99.2 % (130 of 131; left: "tired of people", which the lexicon reads as "tired of").
MIN_PEARSON_R, MIN_ICC, MIN_EXACT = 0.98, 0.98, 0.97


def agreement() -> dict[str, float]:
    """Pearson r, ICC(2,1) (absolute agreement) and exact agreement between hand and lexicon levels."""
    lexicon = load_lexicon(LEXICON)
    data = pd.read_csv(VALIDATION)
    # Scored as the scene kind scores a run: each answer with its role and the other person's label.
    others = {item.id: other_words(item.other) for item in load_instrument("leas_psyq").items}
    auto = np.array([score_answer(row.answer, lexicon, row.role, others[row.scene_id]).level
                     for row in data.itertuples()])
    hand = data["level"].to_numpy()
    long = pd.DataFrame({"target": np.tile(np.arange(len(data)), 2), "rater": ["hand"] * len(data) + ["auto"] * len(data),
                         "level": np.concatenate([hand, auto])})
    icc = pg.intraclass_corr(long, targets="target", raters="rater", ratings="level").set_index("Type")
    return {"n": len(data), "r": stats.pearsonr(hand, auto)[0], "icc": icc.loc["ICC(A,1)", "ICC"],
            "exact": float(np.mean(hand == auto))}


def test_lexicon_agrees_with_the_hand_scored_set():
    got = agreement()
    assert got["n"] >= 60
    assert got["r"] >= MIN_PEARSON_R and got["icc"] >= MIN_ICC and got["exact"] >= MIN_EXACT, got
