"""Conditions compared head to head (analysis/statistics/standin/conditions.py, issue 54): each
condition's distance from people against the statistic it is named after, called directly; pairing,
Holm and the ranks; known answers on the shipped people; conditions identical by construction
called different rarely (a small version of bench/conditions_calibration.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq import (compare_conditions, compare_with_humans, distinguishability, distribution_distances, human_data,
                  load_instrument, rank_conditions, relations, score_wide, style_and_trait, twin_agreement)
from psyq.analysis.statistics.multiple_testing import holm

IRI = load_instrument("iri")
ITEMS = [i.id for i in IRI.rating_items]


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(IRI)


@pytest.fixture
def split(people):
    """The people in a random order: 1,073 as the reference, then three groups of 300."""
    order = np.random.default_rng(54).permutation(len(people))
    return people.iloc[order[:1073]], [people.iloc[order[1073 + 300 * k:1373 + 300 * k]].copy() for k in range(3)]


def test_each_distance_is_the_statistic_it_is_named_after(split):
    reference, (first, second, _) = split
    second[ITEMS] = (second[ITEMS] + 1).clip(0, 4)
    out = compare_conditions({"first": first, "second": second}, reference, IRI, resamples=20, seed=3)
    got = out.attrs["distances"].set_index(["condition", "criterion"])["distance"]
    for label, frame in (("first", first), ("second", second)):
        cmp = compare_with_humans({"iri": frame}, {"iri": reference}, {"iri": IRI}, congruence=False)
        assert got[label, "level"] == pytest.approx(cmp["g"].abs().mean(), abs=1e-9)
        assert got[label, "spread"] == pytest.approx(np.log(cmp["sd_cohort"] / cmp["sd_human"]).abs().mean(), abs=1e-9)
        assert got[label, "reliability"] == pytest.approx((cmp["alpha_cohort"] - cmp["alpha_human"]).abs().mean(),
                                                          abs=1e-9)
        style = style_and_trait(frame, reference, IRI)["style"]
        assert got[label, "style"] == pytest.approx(style.abs().mean(), abs=1e-9)
        scores_c = score_wide(IRI, frame).join(frame["gender"])
        scores_p = score_wide(IRI, reference).join(reference["gender"])
        rel = relations(scores_c, scores_p, ["gender"], instrument=IRI)
        pairs = rel[rel["kind"] == "subscale"]
        gaps = list((pairs["effect_cohort"] - pairs["effect_people"]).abs())
        for s in ["PT", "FS", "EC", "PD"]:            # gender as a point-biserial r, male − female, by scipy
            r = [stats.pearsonr(f["gender"].eq("male").astype(float), score_wide(IRI, f)[s]).statistic
                 for f in (frame, reference)]
            gaps.append(abs(r[0] - r[1]))
        assert got[label, "relations"] == pytest.approx(np.mean(gaps), abs=1e-9)
        auc = distinguishability(frame, reference, IRI, permutations=1, seed=3)["auc"].iloc[0]
        assert got[label, "distinguishable"] == pytest.approx(auc - 0.5, abs=1e-12)
        dist = distribution_distances(frame, reference, IRI, resamples=10)
        assert got[label, "tvd"] == pytest.approx(dist["tvd"].mean(), abs=1e-12)
        assert got[label, "w1"] == pytest.approx(dist["w1"].mean(), abs=1e-12)
    assert "individuals" not in set(out["criterion"])       # no twins: does not apply
    assert out["measure"].iloc[0] == "mean |g| over 4 subscales"


def test_twins_are_judged_on_individuals(people):
    persons = people.iloc[:200]
    rng = np.random.default_rng(1)
    close = persons.copy()                          # the person's answer on 70 % of the items, else another's
    other = persons[ITEMS].to_numpy()[rng.permutation(200)]
    close[ITEMS] = np.where(rng.random((200, 28)) < 0.7, persons[ITEMS].to_numpy(), other)
    loose = persons.copy()
    loose[ITEMS] = np.where(rng.random((200, 28)) < 0.2, persons[ITEMS].to_numpy(), other)
    out = compare_conditions({"close": close, "loose": loose}, persons, IRI, resamples=100,
                             criteria=["individuals", "tvd"])
    got = out.attrs["distances"].set_index(["condition", "criterion"])["distance"]
    agreement = twin_agreement(close, persons, IRI).pivot(index="respondent_id", columns="comparison", values="r")
    assert got["close", "individuals"] == pytest.approx(1 - (agreement["twin"] - agreement["other_twins"]).mean(),
                                                        abs=1e-9)
    row = out.set_index("criterion").loc["individuals"]
    assert bool(row["paired"]) and row["closer"] == "close"
    # A condition whose personas are no one's twins has no distance there, with the reason.
    strangers = close.set_axis([f"s{k}" for k in range(200)])
    mixed = compare_conditions({"close": close, "strangers": strangers}, persons, IRI, resamples=20,
                               criteria=["individuals"])
    assert np.isnan(mixed["distance_b"].iloc[0]) and "fewer than 3 of its personas are twins" in mixed["note"].iloc[0]


def test_paired_conditions_are_resampled_together(split):
    reference, (first, _, _) = split
    rng = np.random.default_rng(2)
    noisy = first.copy()
    noisy[ITEMS] = np.clip(first[ITEMS] + rng.choice([-1, 0, 1], (300, 28), p=[.1, .8, .1]), 0, 4)
    paired = compare_conditions({"a": first, "b": noisy}, reference, IRI, resamples=300, criteria=["level", "tvd"])
    strangers = noisy.set_axis([f"x{k}" for k in range(300)])
    unpaired = compare_conditions({"a": first, "b": strangers}, reference, IRI, resamples=300,
                                  criteria=["level", "tvd"])
    assert paired["paired"].all() and not unpaired["paired"].any()
    assert paired["difference"].tolist() == pytest.approx(unpaired["difference"].tolist(), abs=1e-12)
    # What the same personas share cancels in the paired difference: a much narrower interval.
    width = lambda f: (f["high"] - f["low"]).to_numpy()      # noqa: E731
    assert (width(paired) < 0.75 * width(unpaired)).all()
    # The same frame twice: no difference at all, p 1.
    same = compare_conditions({"a": first, "b": first.copy()}, reference, IRI, resamples=50, criteria=["level"])
    assert same["difference"].iloc[0] == 0 and same["p"].iloc[0] == 1 and not same["distinguishable"].iloc[0]


def test_holm_runs_over_every_pair_and_criterion(split):
    reference, groups = split
    out = compare_conditions(dict(zip("abc", groups)), reference, IRI, resamples=100,
                             criteria=["level", "spread", "tvd"])
    assert len(out) == 9 and out[["condition_a", "condition_b"]].drop_duplicates().shape[0] == 3
    assert out["p_holm"].tolist() == pytest.approx(holm(out["p"].to_numpy()).tolist(), abs=1e-15)
    assert (out["distinguishable"] == (out["p_holm"] < 0.05)).all()
    z = stats.norm.ppf(0.975)
    se = (out["high"] - out["low"]) / (2 * z)
    assert out["p"].tolist() == pytest.approx((2 * stats.norm.sf((out["difference"] / se).abs())).tolist(), rel=1e-9)


def test_ranks_are_shared_unless_one_is_distinguishably_closer():
    comparison = pd.DataFrame({"instrument": "iri", "criterion": "w1",
                               "condition_a": ["a", "a", "a", "b", "b", "c"], "condition_b": ["b", "c", "d", "c", "d", "d"],
                               "distance_a": [.1, .1, .1, .2, .2, .3], "distance_b": [.2, .3, np.nan, .3, np.nan, np.nan],
                               "distinguishable": [False, True, False, False, False, False],
                               "closer": ["", "a", "", "", "", ""]})
    ranks = rank_conditions(comparison)
    assert ranks["condition"].tolist() == ["a", "b", "c", "d"]
    assert ranks["rank"].tolist()[:3] == [1, 1, 2] and np.isnan(ranks["rank"].iloc[3])
    assert ranks["ahead_of_next"].tolist() == [False, False, False, False]
    assert ranks["note"].iloc[3] == "not estimable"


def test_known_answers_rank_in_the_order_of_their_population_distances(people, split):
    # Three conditions of 300 (other people than the 1,073 of the reference): drawn from people,
    # the same shifted a point up (clipped), uniform answers. Their population distances (each
    # condition built from all 1,973 people against all of them, by the named statistics directly)
    # order them drawn < shifted < uniform on level, spread, reliability and relations, and drawn <
    # uniform < shifted on style, TVD and W1: a uniform answer is nearer these people's broad item
    # distributions (TVD .23) than the same answers a point up (.35).
    reference, (drawn, shifted, uniform) = split
    rng = np.random.default_rng(0)
    shift = lambda f: f.assign(**{i: (f[i] + 1).clip(0, 4) for i in ITEMS})      # noqa: E731
    uniform_of = lambda f: f.assign(**{i: rng.integers(0, 5, len(f)).astype(float) for i in ITEMS})  # noqa: E731
    population = {}
    for label, frame in (("shifted", shift(people)), ("uniform", uniform_of(people))):
        cmp = compare_with_humans({"iri": frame}, {"iri": people}, {"iri": IRI}, congruence=False)
        dist = distribution_distances(frame, people, IRI, resamples=2, splits=1)
        population[label] = {"level": cmp["g"].abs().mean(),
                             "spread": np.log(cmp["sd_cohort"] / cmp["sd_human"]).abs().mean(),
                             "reliability": (cmp["alpha_cohort"] - cmp["alpha_human"]).abs().mean(),
                             "style": style_and_trait(frame, people, IRI)["style"].abs().mean(),
                             "tvd": dist["tvd"].mean(), "w1": dist["w1"].mean()}
    out = compare_conditions({"drawn": drawn, "shifted": shift(shifted), "uniform": uniform_of(uniform)}, reference,
                             IRI)
    ranks = rank_conditions(out).set_index(["criterion", "condition"])
    by = out.set_index(["criterion", "condition_a", "condition_b"])
    expected = {c: sorted(population, key=lambda label: population[label][c]) for c in population["shifted"]}
    assert expected["level"] == ["shifted", "uniform"] and expected["tvd"] == ["uniform", "shifted"]
    for criterion, (nearer, further) in expected.items():
        order = ["drawn", nearer, further]
        assert out.attrs["distances"].query("criterion == @criterion").set_index("condition").loc[
            order, "distance"].is_monotonic_increasing, criterion
        gap = population[further][criterion] - population[nearer][criterion]
        if gap > 0.05:                    # 300 against 1,073 tell apart a gap this large
            assert ranks.loc[(criterion, nearer), "rank"] < ranks.loc[(criterion, further), "rank"], criterion
    # drawn vs shifted: distinguishably apart wherever the shift moves anything (not reliability and
    # relations, which a shift of every raw answer leaves as they were, but for the clipping).
    for criterion in ["level", "spread", "distinguishable", "style", "tvd", "w1"]:
        row = by.loc[(criterion, "drawn", "shifted")]
        assert row["distinguishable"] and row["closer"] == "drawn", criterion
        assert ranks.loc[(criterion, "drawn"), "rank"] == 1 and ranks.loc[(criterion, "drawn"), "ahead_of_next"]
    for criterion in ["reliability", "relations"]:
        assert by.loc[(criterion, "drawn", "uniform"), "closer"] == "drawn"
        assert by.loc[(criterion, "shifted", "uniform"), "closer"] == "shifted"


def test_identical_conditions_are_rarely_called_different(people):
    # The fast version of bench/conditions_calibration.py (200 studies of 1,000 resamples there):
    # 40 studies, 200 resamples, two disjoint draws of 300 people against 1,373 others; a study calls
    # them different when any criterion's Holm-adjusted difference is distinguishable. Fewer studies
    # and resamples: a looser bound, at most 4 of 40 (10 %). (Without Holm, 5 of these 40 would be.)
    called = 0
    for seed in range(40):
        order = np.random.default_rng([54, seed]).permutation(len(people))
        out = compare_conditions({"A": people.iloc[order[1373:1673]], "B": people.iloc[order[1673:]]},
                                 people.iloc[order[:1373]], IRI, resamples=200, seed=seed)
        called += bool(out["distinguishable"].any())
    assert called <= 4
