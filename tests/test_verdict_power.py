"""How many personas a verdict needs: the simulation's shares are the scorecard's marks counted.

Independent check: the same seeded draws made and marked here by hand (numpy's generator seeded as
documented, psyq.scorecard called directly, the marks combined by the documented rule and counted
with pandas), against verdict_power's frame; the same frame from one process and from two; a broken
cohort's criterion marked falls short; personas_needed read from a hand-made power table.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import psyq
from psyq.analysis.statistics.standin.verdict_power import personas_needed, simulate_verdicts, verdict_power


def _by_hand(people, iri, n: int, reps: int, seed: int = 0) -> pd.DataFrame:
    marks = []
    for rep in range(reps):
        rng = np.random.default_rng([seed, n, rep])
        order = rng.permutation(len(people))
        cohort = people.iloc[order[:n]].set_axis([f"x{k}" for k in range(n)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            card = psyq.scorecard(cohort, people.iloc[order[n:]], iri, by=None, structure=False, permutations=19,
                                  seed=rep)
        for criterion, part in card.groupby("criterion"):
            got = set(part["mark"])
            mark = ("falls short" if "falls short" in got else "meets" if got == {"meets"} else
                    "not estimable" if got == {"not estimable"} else "inconclusive")
            marks.append({"criterion": criterion, "mark": mark})
    return pd.DataFrame(marks).groupby("criterion")["mark"].value_counts(normalize=True).unstack(fill_value=0.0)


def test_the_shares_are_the_scorecards_marks_counted(iri, people):
    power = verdict_power(people, iri, n_personas=[60], reps=4, workers=1)
    hand = _by_hand(people, iri, 60, 4)
    for r in power.itertuples():
        for mark in ("meets", "falls short", "inconclusive", "not estimable"):
            expected = hand.loc[r.criterion, mark] if mark in hand.columns else 0.0
            assert getattr(r, mark.replace(" ", "_")) == pytest.approx(expected), (r.criterion, mark)
    assert set(power["n_people"]) == {len(people) - 60} and set(power["reps"]) == {4}
    assert list(power.attrs["needed"].columns) == ["criterion", "n_needed", "meets", "falls_short", "note"]


def test_processes_do_not_change_the_draws(iri, people):
    one = verdict_power(people, iri, n_personas=[40], reps=3, workers=1)
    two = verdict_power(people, iri, n_personas=[40], reps=3, workers=2)
    pd.testing.assert_frame_equal(one, two)


def shift_style(cohort: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    items = [c for c in cohort.columns if c != "gender"]
    cohort[items] = np.minimum(cohort[items] + 1, 4)
    return cohort


def test_a_broken_cohort_falls_short_on_what_it_breaks(iri, people):
    # Every raw answer one point up: style falls short in every draw of 100, never meets.
    power = simulate_verdicts(people, iri, [100], breaks=shift_style, reps=3, workers=1).set_index("criterion")
    assert power.loc["style", "falls_short"] == 1.0 and power.loc["style", "meets"] == 0.0


def test_personas_needed_is_the_first_size_with_80_per_cent_meets():
    power = pd.DataFrame({"criterion": ["level"] * 3 + ["relations"] * 2, "n_personas": [13, 200, 500, 13, 1000],
                          "n_people": 1000, "reps": 100, "meets": [0.0, 0.79, 0.93, 0.0, 0.41],
                          "falls_short": [0.01, 0.0, 0.0, 0.02, 0.0], "inconclusive": 0.0, "not_estimable": 0.0})
    needed = personas_needed(power).set_index("criterion")
    assert needed.loc["level", "n_needed"] == 500 and needed.loc["level", "meets"] == 0.93
    assert np.isnan(needed.loc["relations", "n_needed"])
    assert needed.loc["relations", "note"] == "more than 1,000: meets in 41% of draws there"


def test_sizes_that_leave_no_people_are_refused(iri, people):
    with pytest.raises(ValueError, match="leave fewer than 2"):
        simulate_verdicts(people.iloc[:20], iri, [19], reps=1, workers=1)
