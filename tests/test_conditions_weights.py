"""Conditions compared head to head against weighted people (analysis/statistics/standin/conditions.py,
issue 54): the people's ``survey_weight`` weights level and spread as compare_with_humans does and tvd
and w1 as distribution_distances does, each distance equal to that function called directly with the
weighted people; the other criteria stay unweighted (as the functions they are named after) and say
so; equal weights give the unweighted frame."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from psyq import compare_conditions, compare_with_humans, distribution_distances, human_data, load_instrument

IRI = load_instrument("iri")
ITEMS = [i.id for i in IRI.rating_items]
WEIGHTED = ("level", "spread", "tvd", "w1")


@pytest.fixture(scope="module")
def split() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The shipped Briganti et al. (2018) people in a random order: 1,073 as the reference, then a
    condition of 300 others and the same 300 shifted a point up (clipped)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        people = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(IRI)
    order = np.random.default_rng(54).permutation(len(people))
    drawn = people.iloc[order[1073:1373]].copy()
    shifted = drawn.set_axis([f"s{k}" for k in range(300)])
    shifted[ITEMS] = (shifted[ITEMS] + 1).clip(0, 4)
    return people.iloc[order[:1073]], drawn, shifted


def women_thrice(people: pd.DataFrame) -> pd.DataFrame:
    """The people with survey weight 3 for women, 1 for men."""
    return people.assign(survey_weight=np.where(people["gender"].eq("female"), 3.0, 1.0))


def distances(out: pd.DataFrame) -> pd.Series:
    return out.attrs["distances"].set_index(["condition", "criterion"])["distance"]


def test_weighted_distances_are_the_weighted_statistics_they_are_named_after(split):
    reference, drawn, shifted = split
    weighted = women_thrice(reference)
    conditions = {"drawn": drawn, "shifted": shifted}
    out = compare_conditions(conditions, weighted, IRI, resamples=20, seed=3)
    plain = compare_conditions(conditions, reference, IRI, resamples=20, seed=3)
    got, unweighted = distances(out), distances(plain)
    # The same women counted thrice by repeating their rows: the weighted answer shares (an
    # independent computation of what tvd and w1 weight).
    repeated = pd.concat([reference, *[reference[reference["gender"].eq("female")]] * 2])
    for label, frame in conditions.items():
        cmp = compare_with_humans({"iri": frame}, {"iri": weighted}, {"iri": IRI}, congruence=False)
        assert set(cmp["weighted"]) == {"human"}
        assert got[label, "level"] == pytest.approx(cmp["g"].abs().mean(), abs=1e-9)
        assert got[label, "spread"] == pytest.approx(np.log(cmp["sd_cohort"] / cmp["sd_human"]).abs().mean(), abs=1e-9)
        dist = distribution_distances(frame, weighted, IRI, resamples=10)
        assert got[label, "tvd"] == pytest.approx(dist["tvd"].mean(), abs=1e-9)
        assert got[label, "w1"] == pytest.approx(dist["w1"].mean(), abs=1e-9)
        by_rows = distribution_distances(frame, repeated, IRI, resamples=10)
        assert got[label, "tvd"] == pytest.approx(by_rows["tvd"].mean(), abs=1e-9)
        assert got[label, "w1"] == pytest.approx(by_rows["w1"].mean(), abs=1e-9)
        # The weights matter here (women score higher on three of the four subscales)...
        assert all(abs(got[label, c] - unweighted[label, c]) > 1e-3 for c in WEIGHTED)
        # ... and are left out where the function a criterion is named after leaves them out.
        for criterion in ("reliability", "distinguishable", "style", "relations"):
            assert got[label, criterion] == pytest.approx(unweighted[label, criterion], abs=1e-12)
    said = out.set_index("criterion")["note"]
    own = out.attrs["distances"].set_index(["condition", "criterion"])["note"]
    for criterion in ("reliability", "distinguishable", "style", "relations"):
        assert "people's survey weights not used" in said[criterion]
        assert "people's survey weights not used" in own["drawn", criterion]
    assert not any("weights" in said[c] for c in WEIGHTED)
    assert not any("weights" in n for n in plain["note"])
    # A pair's difference is a difference of the weighted distances.
    row = out.set_index("criterion").loc["level"]
    assert row["difference"] == pytest.approx(got["drawn", "level"] - got["shifted", "level"], abs=1e-12)


def test_equal_weights_give_the_unweighted_frame(split):
    reference, drawn, shifted = split
    conditions = {"drawn": drawn, "shifted": shifted}
    plain = compare_conditions(conditions, reference, IRI, resamples=30, seed=5)
    equal = compare_conditions(conditions, reference.assign(survey_weight=2.5), IRI, resamples=30, seed=5)
    numbers = ["distance_a", "distance_b", "difference", "low", "high", "p"]
    assert equal[numbers].to_numpy() == pytest.approx(plain[numbers].to_numpy(), rel=1e-9, abs=1e-12, nan_ok=True)
    assert equal["closer"].tolist() == plain["closer"].tolist()
    mine, theirs = equal.attrs["distances"], plain.attrs["distances"]
    assert mine[["distance", "low", "high"]].to_numpy() == pytest.approx(
        theirs[["distance", "low", "high"]].to_numpy(), rel=1e-9, abs=1e-12)


def test_a_weight_that_is_not_a_positive_number_is_an_error(split):
    reference, drawn, _ = split
    bad = reference.assign(survey_weight=1.0)
    bad.iloc[4, bad.columns.get_loc("survey_weight")] = 0.0
    with pytest.raises(ValueError, match="positive finite weight"):
        compare_conditions({"a": drawn, "b": drawn.copy()}, bad, IRI, resamples=5, criteria=["tvd"])
