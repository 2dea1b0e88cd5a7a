"""The LEAS lexicon scorer on answers it was not written from (issue 56): two hard sets of 80 answers
(40 scenes, self and other), each written and hand-scored in two passes by someone who never opened
the scorer, its lexicon or its tests (tests/data/leas_hard_b_README.md, leas_hard_c_README.md).

Set c was held out through round 2; set b's answers were never shown to whoever wrote the rules,
but the classes of its failures were described to them after round 1, so b was held out only then. The figures are computed here and compared with independent statistics (scipy's Pearson
r, scikit-learn's linear weighted kappa) on the hand scores; the floors are the measured values
rounded down, so that a change that loses agreement on answers written by someone else fails here.
Measured at 5851bfd (round 2) — set c: 81 % of answers exact, linear weighted kappa .75, scene totals
85 % exact, r .84; set b: totals 85 %, r .93. Set c's failures were then described (round 3, issue 56:
retorts, "Hardly.", a guess framing the other's feeling, apologies), so from round 3 on neither set
is held out. Set d (tests/data/leas_hard_d_README.md), written by another session from a brief while
round 3 was made, was first scored with the scorer frozen at 5c88bf5: held out, 81 % of answers
exact, kappa .75, totals 75 % exact, r .58 (short of the >= 80 % and r >= .85 issue 56 asks). Its
failures then led to round 4 (a later "Well, not X" takes X back, "no way ... wouldn't", "anything
but", "Oh, X.", "speaking as", negation raised across a parenthetical, a misspelling's shared
beginning), so d is no longer held out either. Set f (tests/data/leas_hard_f_README.md), written by a third
session while round 4 was made and first scored with the scorer frozen at 025252c, is round 4's
held-out measurement: 86 % of answers exact, kappa .83, totals 85 % exact (>= 80 %), r .81 (short of
.85). Its failures led to round 5 ("X is the last thing she'd feel", "couldn't stop" under a raised
negation, a person after "having/seeing", idioms of a good time, tears and an embrace), measured on
set g (tests/data/leas_hard_g_README.md, a fourth writer), first scored with the scorer frozen at
a1e0bf8: held out, 84 % of answers exact, kappa .79, totals 80 % exact (the >= 80 % asked), r .78
(short of .85). Its failures led to round 6 (taking the other's place by name, "far from", "nothing
short of", "rarely/seldom", "maybe not even that", irony kept up after "Oh, X.", "unnerve", "beaming",
hairs on end, "feel full"). The floors below are round 6's values on the sets it has seen: c 90 % / .89
/ 90 % / .96, b 90 % / .87 / 92.5 % / .97, d 93.75 % / .92 / 92.5 % / .86, f 93.75 % / .93 / 87.5 % / .91,
g 96.25 % / .96 / 92.5 % / .94. Sets h and i (tests/data/leas_hard_h_README.md, leas_hard_i_README.md; a fifth
and a sixth writer, working while round 6 was made) were first scored with the scorer frozen at da5c8ed:
held out, h 81.25 % of answers exact, kappa .79, totals 85 % exact, r .92 (both of issue 56's figures
met); i 80 %, kappa .78, totals 75 %, r .81 (neither met). Both sets together, 80 scenes: totals 80 %
exact (Wilson 95 % interval 70-87 %), r .86 (Fisher-z 95 % interval .79-.91), so whether r >= .85 holds
beyond these answers the data cannot yet tell. Their failures led to round 7 ("as if" as irony only
opening a sentence, "Oh, I'm sure ...", taking the other's place after the feeling and with "if you
were", typed pronouns without apostrophes, a comment clause's verb, how far back a retraction reaches,
litotes, "not X so much as Y", "zero", feeling phrases and senses of lexicon v7). The floors above are
round 7's values on the sets it has seen: b 91.25 % / .88 / 95 % / .98, c 92.5 % / .91 / 92.5 % / .97,
d 93.75 % / .92 / 92.5 % / .86, f 93.75 % / .93 / 90 % / .96, g 96.25 % / .96 / 92.5 % / .94, h 95 % / .94
/ 97.5 % / .99, i 93.75 % / .93 / 90 % / .91. Sets j and k (a seventh and an eighth writer; j in the voices of
survey personas, k the hard shapes in forms meant to be new to a scorer) were first scored with the scorer
frozen at 069bc6d: held out, j 85 % of answers exact, kappa .84, totals 80 % exact, r .86 (both figures
met); k 76.25 %, kappa .78, totals 67.5 %, r .79 (neither met). Both together: totals 74 % exact (Wilson
95 % interval 63-82 %), r .82 (Fisher-z .73-.88). Their failures led to round 8 (an interjection with
mock certainty anywhere in its sentence, "Doubt it.", "no small", "I'd like to think", an AI picturing the
scene, "sad to say goodbye", lexicon v8), which no fresh set has measured yet. The floors above are round
8's values on the sets it has seen (j 95 % / .94 / 90 % / .89, k 90 % / .92 / 87.5 % / .96).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from psyq import load_instrument
from psyq.engine.kinds.scene.leas import load_lexicon, other_words, scene_total, score_answer

DATA = Path(__file__).resolve().parent / "data"
# (set, answers exact, linear kappa, totals exact, totals r): measured, rounded down.
FLOORS = {"c": (0.93, 0.91, 0.95, 0.98), "b": (0.93, 0.89, 1.00, 0.99), "d": (0.93, 0.91, 0.92, 0.86),
          "f": (0.93, 0.93, 0.90, 0.96),
          "g": (0.96, 0.96, 0.92, 0.94),
          "h": (0.95, 0.93, 0.97, 0.99), "i": (0.95, 0.95, 0.92, 0.96),
          "j": (0.95, 0.94, 0.90, 0.88), "k": (0.90, 0.91, 0.87, 0.95)}


def agreement(name: str) -> dict[str, float]:
    """The scorer against the hand scores of hard set `name`, answer by answer and scene total by total
    (each answer scored as a run scores it: with its role and the scene's other person)."""
    data = pd.read_csv(DATA / f"leas_hard_{name}.csv")
    lexicon = load_lexicon("leas_psyq_lexicon")
    others = {item.id: other_words(item.other) for item in load_instrument("leas_psyq").items}
    scores = [score_answer(row.answer, lexicon, row.role, others[row.scene_id]) for row in data.itertuples()]
    auto = np.array([s.level for s in scores])
    totals = []
    for _, pair in data.groupby("pair"):
        by_role = {row.role: scores[i] for i, row in zip(pair.index, pair.itertuples())}
        totals.append((pair["scene_total"].iloc[0], scene_total(by_role["self"], by_role["other"])))
    hand_total, auto_total = np.array(totals).T
    return {"n": len(data), "exact": float(np.mean(auto == data["level"])),
            "kappa": cohen_kappa_score(data["level"], auto, weights="linear", labels=[0, 1, 2, 3, 4]),
            "totals_exact": float(np.mean(hand_total == auto_total)),
            "totals_r": stats.pearsonr(hand_total, auto_total)[0], "scenes": len(totals)}


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_scorer_agrees_with_hand_scores_it_was_not_written_from(name):
    got = agreement(name)
    assert got["n"] == 80 and got["scenes"] == 40
    exact, kappa, totals_exact, totals_r = FLOORS[name]
    assert got["exact"] >= exact and got["kappa"] >= kappa, got
    assert got["totals_exact"] >= totals_exact and got["totals_r"] >= totals_r, got


def test_a_second_blind_rater_agrees_with_the_writers_of_j_and_k():
    """The ceiling the scorer is read against: a second rater who saw only the answers of sets j and k
    (tests/data/leas_hard_jk_second_rater_README.md) against the writers' levels and scene totals.
    Measured: 97.5 % of answers exact, kappa .98, totals 95 % exact, r .98; floors just below."""
    writers = pd.concat([pd.read_csv(DATA / f"leas_hard_{name}.csv") for name in "jk"])
    second = pd.read_csv(DATA / "leas_hard_jk_second_rater.csv")
    both = writers.merge(second, on=["pair", "role", "scene_id"], suffixes=("_writer", "_second"))
    assert len(both) == len(writers) == len(second) == 160
    assert np.mean(both["level_writer"] == both["level_second"]) >= 0.97
    assert cohen_kappa_score(both["level_writer"], both["level_second"], weights="linear") >= 0.98
    totals = both.groupby("pair")[["scene_total_writer", "scene_total_second"]].first()
    assert np.mean(totals["scene_total_writer"] == totals["scene_total_second"]) >= 0.95
    assert stats.pearsonr(totals["scene_total_writer"], totals["scene_total_second"])[0] >= 0.98

