"""Distribution distances per item (analysis/statistics/distances.py, issue 54): TVD and Wasserstein-1
against a hand computation and scipy, the bootstrap counts against resampled frames, the split-half
ceiling, the bootstrap interval's coverage on a known pair of distributions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq import load_instrument
from psyq.analysis.statistics.distances import (answer_indicators, condition_frames, distances_from_counts,
                                                distribution_distances, resample_counts)
from psyq.analysis.statistics.validity import item_distributions

MINI = load_instrument("tests/data/mini_1to7.yaml")
OPTIONS = [float(o.value) for o in MINI.scale]
ITEMS = [i.id for i in MINI.rating_items]


def draw(rng: np.random.Generator, n: int, shares: list[float]) -> pd.DataFrame:
    return pd.DataFrame(rng.choice(np.arange(1, 8), (n, len(ITEMS)), p=shares), columns=ITEMS).astype(float)


def test_tvd_and_w1_equal_a_hand_computation_and_scipy():
    # Shares (.5, .25, .25, 0, …) and (0, .25, .25, .5, 0, …) on 1..7: TVD ½(.5 + .5) = .5; half of the
    # answers moved from 1 to 4, three points: W1 1.5.
    a = pd.DataFrame({"a": [1, 1, 2, 3]}, dtype=float)
    b = pd.DataFrame({"a": [2, 3, 4, 4]}, dtype=float)
    chosen_a, answered_a = answer_indicators(a, ["a"], OPTIONS)
    chosen_b, answered_b = answer_indicators(b, ["a"], OPTIONS)
    tvd, w1 = distances_from_counts(chosen_a.sum(0), answered_a.sum(0), chosen_b.sum(0), answered_b.sum(0), OPTIONS)
    assert tvd.tolist() == [0.5] and w1.tolist() == [1.5]
    # Random distributions: ½·Σ|p − q| by hand, W1 by scipy on the option values weighted by the shares.
    rng = np.random.default_rng(3)
    for _ in range(50):
        p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7) * 0.3)
        tvd, w1 = distances_from_counts(p[None], np.ones(1), q[None], np.ones(1), OPTIONS)
        assert tvd[0] == pytest.approx(0.5 * np.abs(p - q).sum(), abs=1e-12)
        assert w1[0] == pytest.approx(stats.wasserstein_distance(OPTIONS, OPTIONS, p, q), abs=1e-12)


def test_point_values_are_item_distributions_and_scipy_on_the_answers():
    rng = np.random.default_rng(0)
    people, personas = draw(rng, 300, [.05, .1, .2, .3, .2, .1, .05]), draw(rng, 120, [.3, .2, .2, .1, .1, .05, .05])
    out = distribution_distances(personas, people, MINI, resamples=50)
    point = item_distributions(personas, people, MINI, group_by=[])
    assert out["tvd"].tolist() == pytest.approx(point["tv"].tolist(), abs=1e-12)
    assert out["score"].tolist() == pytest.approx(point["simbench"].tolist(), abs=1e-9)
    for item, w1 in zip(ITEMS, out["w1"]):          # scipy on the answers themselves
        assert w1 == pytest.approx(stats.wasserstein_distance(personas[item], people[item]), abs=1e-12)
    # SimBench's score, 100·(1 − TVD / mean over items of TVD(uniform, people)), by hand:
    q = np.array([[(people[i] == o).mean() for o in OPTIONS] for i in ITEMS])
    baseline = np.mean(0.5 * np.abs(q - 1 / 7).sum(axis=1))
    assert out["score"].tolist() == pytest.approx((100 * (1 - out["tvd"] / baseline)).tolist(), abs=1e-9)
    assert (out["n_personas"] == 120).all() and (out["n_people"] == 300).all() and (out["note"] == "").all()


def test_a_resample_is_the_frame_drawn_with_those_counts():
    # The bootstrap computes each resample's distance from counts; the same distance from the
    # resampled frames themselves (rows repeated as often as drawn) by item_distributions.
    rng = np.random.default_rng(1)
    people, personas = draw(rng, 80, [.1, .1, .2, .2, .2, .1, .1]), draw(rng, 40, [.2, .2, .2, .1, .1, .1, .1])
    counts_c, counts_p = resample_counts(40, 3, rng), resample_counts(80, 3, rng)
    chosen_c, answered_c = answer_indicators(personas, ITEMS, OPTIONS)
    chosen_p, answered_p = answer_indicators(people, ITEMS, OPTIONS)
    tvd, w1 = distances_from_counts(np.einsum("rn,nik->rik", counts_c, chosen_c), counts_c @ answered_c,
                                    np.einsum("rn,nik->rik", counts_p, chosen_p), counts_p @ answered_p, OPTIONS)
    for r in range(3):
        again = item_distributions(personas.loc[personas.index.repeat(counts_c[r])],
                                   people.loc[people.index.repeat(counts_p[r])], MINI, group_by=[])
        assert tvd[r].tolist() == pytest.approx(again["tv"].tolist(), abs=1e-12)
        assert w1[r].tolist() == pytest.approx(again["wasserstein"].tolist(), abs=1e-12)


def test_the_ceiling_is_small_within_one_sample_and_the_distance_large_between_two():
    rng = np.random.default_rng(2)
    shares = [.05, .1, .2, .3, .2, .1, .05]
    people = draw(rng, 2000, shares)
    out = distribution_distances(draw(rng, 1000, [.4, .3, .1, .1, .05, .03, .02]), people, MINI, resamples=100)
    # Two halves of 1,000 from one distribution differ by sampling noise alone: the expected TVD
    # between two independent samples of 1,000 (by simulation here, 400 pairs) is about .04.
    expected = np.mean([0.5 * np.abs(np.bincount(rng.choice(7, 1000, p=shares), minlength=7)
                                     - np.bincount(rng.choice(7, 1000, p=shares), minlength=7)).sum() / 1000
                        for _ in range(400)])
    assert out["ceiling_tvd"].to_numpy() == pytest.approx(expected, abs=0.01)
    assert (out["ceiling_tvd"] < 0.06).all() and (out["ceiling_n"] == 1000).all()
    # Two different distributions: TVD .45 in the population, far above the ceiling.
    assert (out["tvd"] > 0.4).all() and (out["tvd_low"] > 5 * out["ceiling_tvd"]).all()
    # At the personas' size (100 against the other 1,900) the noise is larger than between halves.
    small = distribution_distances(draw(rng, 100, shares), people, MINI, resamples=50, ceiling="matched")
    assert (small["ceiling_n"] == 100).all()
    assert (small["ceiling_tvd"] > out["ceiling_tvd"] * 1.5).all()


def test_the_bootstrap_interval_covers_the_true_distance():
    # Populations p and q on three of the options: TVD ½(.25 + .05 + .3) = .3, W1 |.2 − .45| + |.5 − .8|
    # = .55. 50 seeded studies of 200 personas and 300 people, each item drawn on its own (200
    # intervals): the 95 % intervals must cover the true values at least 90 % of the time (1,000
    # studies of one item gave 96.3 % for TVD and 95.4 % for W1).
    p = [.2, .3, .5, 0, 0, 0, 0]
    q = [.45, .35, .2, 0, 0, 0, 0]
    rng = np.random.default_rng(54)
    hits_tvd = hits_w1 = 0
    for seed in range(50):
        out = distribution_distances(draw(rng, 200, p), draw(rng, 300, q), MINI, resamples=300, seed=seed, splits=2)
        hits_tvd += ((out["tvd_low"] <= 0.3) & (0.3 <= out["tvd_high"])).sum()
        hits_w1 += ((out["w1_low"] <= 0.55) & (0.55 <= out["w1_high"])).sum()
    assert hits_tvd / 200 >= 0.90 and hits_w1 / 200 >= 0.90


def test_an_item_nobody_answered_is_not_estimable_with_the_reason():
    rng = np.random.default_rng(4)
    people, personas = draw(rng, 50, [1 / 7] * 7), draw(rng, 30, [1 / 7] * 7)
    personas["b"] = np.nan
    people["c"] = np.nan
    out = distribution_distances(personas, people, MINI, resamples=20).set_index("item")
    assert out.loc[["b", "c"], ["tvd", "tvd_low", "w1", "w1_high", "score"]].isna().all().all()
    assert out.loc["b", "note"] == "not estimable: no answer of the personas to this item"
    assert out.loc["c", "note"].startswith("not estimable: no answer of the people to this item; no ceiling")
    assert np.isnan(out.loc["c", "ceiling_tvd"]) and out.loc[["a", "d"], "tvd"].notna().all()


def test_the_people_s_survey_weights_weight_the_intervals_and_the_ceiling():
    # 200 people, half answering 1 and half 7, the first half weighing 3: weighted shares .75 and .25,
    # those of the personas. Weighted, the distance is 0 and its interval near it; unweighted .25.
    people = pd.DataFrame({"a": [1.0] * 100 + [7.0] * 100, "survey_weight": [3.0] * 100 + [1.0] * 100})
    personas = pd.DataFrame({"a": [1.0] * 150 + [7.0] * 50})
    weighted = distribution_distances(personas, people, MINI, resamples=200).iloc[0]
    unweighted = distribution_distances(personas, people.drop(columns="survey_weight"), MINI, resamples=200).iloc[0]
    assert weighted["tvd"] == pytest.approx(0, abs=1e-12) and weighted["tvd_high"] < 0.1
    assert unweighted["tvd"] == pytest.approx(0.25) and unweighted["tvd_low"] > 0.1
    # The ceiling too: halves of weighted people; the same weight for everyone changes nothing.
    assert weighted["ceiling_tvd"] != unweighted["ceiling_tvd"]
    constant = distribution_distances(personas, people.assign(survey_weight=2.0), MINI, resamples=200).iloc[0]
    assert constant[["tvd_low", "tvd_high", "ceiling_tvd"]].tolist() == pytest.approx(
        unweighted[["tvd_low", "tvd_high", "ceiling_tvd"]].tolist(), abs=1e-12)


def test_one_row_per_condition_and_item_whether_a_column_or_a_mapping_names_them():
    rng = np.random.default_rng(5)
    people = draw(rng, 100, [1 / 7] * 7)
    x, y = draw(rng, 40, [1 / 7] * 7), draw(rng, 60, [.4, .3, .1, .1, .05, .03, .02])
    by_column = distribution_distances(pd.concat([x.assign(condition="x"), y.assign(condition="y")]), people, MINI,
                                       resamples=30)
    by_mapping = distribution_distances({"x": x, "y": y}, people, MINI, resamples=30)
    pd.testing.assert_frame_equal(by_column, by_mapping)
    assert by_column.groupby("condition")["n_personas"].first().to_dict() == {"x": 40, "y": 60}
    assert by_column.groupby("condition")["tvd"].mean().idxmax() == "y"
    assert by_column.groupby("item")["ceiling_tvd"].nunique().eq(1).all()     # the same halves for both
    assert [label for label, _ in condition_frames(x)] == ["cohort"]
    with pytest.raises(ValueError, match="ceiling"):
        distribution_distances(x, people, MINI, ceiling="thirds")
