"""The LEAS lexicon scorer on 234 real model outputs (issue 56): SmolLM2-135M's answers to psyq's 20
scenes, hand-scored in two independent passes by the written rules, disagreements resolved
(tests/data/leas_model_answers_README.md: the scorers were AI assistant sessions that never opened
the scorer, not trained people). Agreement is computed here with scikit-learn's linear weighted
kappa; the floors are the measured values rounded down, so that a change losing agreement on real
outputs fails. Measured at 5851bfd: 79.5 % exact, linear weighted kappa .61, 32 of the 48 answers
that differ being `other` answers with a first-person feeling ("I am worried"), the respondent's by
the written rules and counted by the scorer as the other speaking. Since the scorer reads an "I" and
an addressed "you" as the respondent, as rule 8 of tests/data/leas_validation_README.md now states
(issue 56): 89.3 % exact, linear weighted kappa .81; with round 3's rules (apologies, guesses,
"moved", happy + content one feeling): 90.6 %, .82. The convention was
chosen after this set's differences were seen, so the figure is not held out; a fresh set of the
same model's answers measures it held out: set e (tests/data/leas_model_answers_e_README.md: six
other personas, another seed, scored in two passes after the scorer was frozen at 5c88bf5) gives
89.4 % exact, linear weighted kappa .804. The hand passes agree at kappa .92 (m) and .94 (e).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from psyq import load_instrument
from psyq.engine.kinds.scene.leas import load_lexicon, other_words, score_answer

DATA = Path(__file__).resolve().parent / "data"
# (set, answers exact, linear kappa, the two hand passes' kappa): measured, rounded down.
FLOORS = {"leas_model_answers": (0.90, 0.82, 0.90), "leas_model_answers_e": (0.89, 0.80, 0.93)}


def levels(name: str) -> pd.DataFrame:
    """The set with the scorer's level of each answer (scored as a run scores it: role, other person)."""
    data = pd.read_csv(DATA / f"{name}.csv")
    lexicon = load_lexicon("leas_psyq_lexicon")
    others = {item.id: other_words(item.other) for item in load_instrument("leas_psyq").items}
    data["auto"] = [score_answer(row.answer, lexicon, row.role, others[row.scene_id]).level
                    for row in data.itertuples()]
    return data


def kappa(a, b) -> float:
    return cohen_kappa_score(a, b, weights="linear", labels=[0, 1, 2, 3, 4])


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_hand_passes_agree_and_the_set_is_real_model_output(name):
    data = pd.read_csv(DATA / f"{name}.csv")
    assert len(data) >= 150 and data["answer_id"].is_unique
    assert set(data["model"]) == {"smollm2-135m-instruct-q4_1"}
    assert kappa(data["level_a"], data["level_b"]) >= FLOORS[name][2]
    agreed = data["level_a"] == data["level_b"]
    assert (data.loc[agreed, "level"] == data.loc[agreed, "level_a"]).all()   # resolved only where they differ


def test_the_two_sets_are_different_runs_and_personas():
    m, e = (pd.read_csv(DATA / f"{name}.csv") for name in ("leas_model_answers", "leas_model_answers_e"))
    assert set(m["run_id"]).isdisjoint(e["run_id"]) and set(m["respondent_id"]).isdisjoint(e["respondent_id"])


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_scorer_agrees_with_the_hand_scores_of_real_model_output(name):
    data = levels(name)
    exact, k = float(np.mean(data["auto"] == data["level"])), kappa(data["level"], data["auto"])
    assert exact >= FLOORS[name][0] and k >= FLOORS[name][1], (exact, k)
