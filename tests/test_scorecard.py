"""The scorecard: its figures are the statistics' own, and its marks say what a cohort was built to do.

Independent checks: each figure against the function it comes from, called directly
(compare_with_humans, distinguishability, style_and_trait); the marks against cohorts drawn by
design from the shipped 1,973 people (Briganti et al., 2018): item by item from the people's own
answer distributions (means right, items independent), the same shifted up one raw point (a style
gap), and uniform random answers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import psyq
from psyq.analysis.statistics.scorecard import MEETS, NOT_ESTIMABLE, norm_scorecard, scorecard
from psyq.analysis.statistics.style_trait import style_and_trait

FALLS_SHORT = "falls short"


@pytest.fixture(scope="module")
def iri():
    return psyq.load_instrument("iri")


@pytest.fixture(scope="module")
def people(iri):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return psyq.human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri)


@pytest.fixture(scope="module")
def card(iri, people):
    items = [i.id for i in iri.rating_items]
    rng = np.random.default_rng(7)
    n = 500
    like = pd.DataFrame({i: rng.choice(people[i].dropna().to_numpy(), n) for i in items},
                        index=[f"p{k}" for k in range(n)])
    like["gender"] = rng.choice(["female", "male"], n)
    style = like.copy()
    style[items] = np.minimum(style[items] + 1, 4)
    uniform = like.copy()
    uniform[items] = rng.integers(0, 5, (n, len(items)))
    cohort = pd.concat([like.assign(backend_id="like"), style.assign(backend_id="style"),
                        uniform.assign(backend_id="random")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohort, scorecard(cohort, people, iri, structure=False, permutations=100)


def marks(card: pd.DataFrame, group: str, criterion: str) -> list[str]:
    return card[(card["group"] == group) & (card["criterion"] == criterion)]["mark"].tolist()


def test_figures_are_the_statistics_own(card, iri, people):
    cohort, table = card
    style_part = cohort[cohort["backend_id"] == "style"].drop(columns="backend_id")
    direct = psyq.compare_with_humans({"iri": style_part}, {"iri": people}, {"iri": iri})
    level = table[(table["group"] == "style") & (table["criterion"] == "level")]
    np.testing.assert_allclose(level["value"], direct["g"])
    np.testing.assert_allclose(level["low"], direct["g_low"])
    spread = table[(table["group"] == "style") & (table["criterion"] == "spread")]
    np.testing.assert_allclose(spread["value"], np.sqrt(direct["variance_ratio"]))
    st = style_and_trait(style_part, people, iri)
    got = table[(table["group"] == "style") & (table["criterion"] == "style")]
    np.testing.assert_allclose(got["value"], st["style"])
    scores = lambda items: psyq.score_wide(iri, items).join(items[["gender"]])   # noqa: E731
    rel = psyq.relations(scores(style_part), scores(people), ["gender"])
    got = table[(table["group"] == "style") & (table["criterion"] == "relations")]
    assert got["value"].item() == rel["replicated"].dropna().astype(bool).mean()
    assert got["people"].item() == rel["replicated"].notna().sum()
    auc = psyq.distinguishability(style_part, people, iri, permutations=100)
    got = table[(table["group"] == "style") & (table["criterion"] == "distinguishable")]
    np.testing.assert_allclose(got[["value", "low", "high"]].to_numpy(), auc[["auc", "auc_low", "auc_high"]].to_numpy())


def test_marks_say_what_each_cohort_was_built_to_do(card):
    _, table = card
    # Drawn from the people's own item distributions: each item's mean is the people's, so level meets ...
    assert marks(table, "like", "level") == [MEETS] * 4
    # ... but the items are independent: subscale SDs shrink, α collapses, a classifier sees it.
    assert marks(table, "like", "spread") == [FALLS_SHORT] * 4
    assert marks(table, "like", "reliability") == [FALLS_SHORT] * 4
    assert marks(table, "like", "distinguishable") == [FALLS_SHORT]
    assert marks(table, "like", "style") == [MEETS] * 4          # no shift common to all items
    # +1 on every raw answer: the style criterion falls short on every subscale, with a positive shift.
    style = table[(table["group"] == "style") & (table["criterion"] == "style")]
    assert (style["mark"] == FALLS_SHORT).all() and (style["value"] > 0.6).all()
    assert FALLS_SHORT in marks(table, "style", "level")
    # Uniform random answers: nothing a person shows.
    for criterion in ("level", "spread", "reliability", "distinguishable", "relations"):
        assert FALLS_SHORT in marks(table, "random", criterion), criterion
    # Structure was not fitted here: not estimable, never a mark.
    assert set(table[table["criterion"] == "structure"]["mark"]) == {NOT_ESTIMABLE}


def test_a_not_estimable_figure_carries_no_mark_but_a_note():
    comparison = pd.DataFrame({"backend_id": "m", "instrument": "iri", "subscale": ["PT"], "norm_group": ["all"],
                               "g": [np.nan], "g_low": [np.nan], "g_high": [np.nan], "sd": [np.nan],
                               "norm_sd": [4.0]})
    out = norm_scorecard(comparison)
    assert out["mark"].tolist() == [NOT_ESTIMABLE] * 2
    assert out["note"].str.len().gt(0).all()


def test_norm_level_meets_only_when_every_norm_group_does():
    # Hand-made: one group inside ±0.3, the other's CI crossing 0.3.
    comparison = pd.DataFrame({"backend_id": "m", "instrument": "iri", "subscale": ["PT", "PT"],
                               "norm_group": ["women", "men"], "g": [0.0, 0.2], "g_low": [-0.1, 0.1],
                               "g_high": [0.1, 0.31], "sd": [4.0, 4.0], "norm_sd": [4.0, 4.0]})
    level = norm_scorecard(comparison).query("criterion == 'level'")
    assert level["mark"].tolist() == [FALLS_SHORT] and level["value"].tolist() == [0.2]
    comparison.loc[1, "g_high"] = 0.29
    assert norm_scorecard(comparison).query("criterion == 'level'")["mark"].tolist() == [MEETS]
