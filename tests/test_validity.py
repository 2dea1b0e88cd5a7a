"""Construct validity against raw human answers: item distributions, subscale intercorrelations,
factor congruence. Expected values are worked by hand in the comments or computed with an
independent route (pandas .corr, numpy); degenerate inputs must give "not estimable" rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from psyq.analysis.statistics.validity import (factor_congruence, item_distributions, subscale_correlations,
    target_loadings, total_variation)
from psyq.engine.design.instrument import Instrument


def instrument(subscales: dict[str, int], scale=(1, 5), reverse=()) -> Instrument:
    """Items i1, i2, … assigned to the subscales in order (e.g. {"A": 5, "B": 5})."""
    items, n = [], 0
    for sub, k in subscales.items():
        for _ in range(k):
            n += 1
            items.append({"id": f"i{n}", "text": f"item {n}", "subscales": [sub], "reverse": f"i{n}" in reverse})
    options = [{"value": v} for v in range(scale[0], scale[1] + 1)]
    return Instrument.model_validate({
        "psyq": "instrument/1", "id": "toy", "name": "Toy", "version": "1", "content_source": "psyq",
        "citations": {"x": "x"}, "terms": "t", "instructions": "t", "scale": options, "items": items,
        "subscales": [{"id": s, "name": s} for s in subscales]})


def test_total_variation_and_wasserstein_by_hand():
    inst = instrument({"A": 1}, scale=(1, 3))
    # Cohort answers 1, 1, 1, 3 → shares (.75, 0, .25); humans 1, 2, 2, 3 → (.25, .5, .25).
    # TV = ½(|.75 − .25| + |0 − .5| + 0) = .5. Uniform (⅓ each) against humans:
    # ½(|⅓ − ¼| + |⅓ − ½| + |⅓ − ¼|) = ½(1/12 + 1/6 + 1/12) = 1/6. One item, so the baseline is 1/6 and
    # SimBench = 100(1 − .5 / (1/6)) = −200 (worse than uniform guessing).
    # Wasserstein-1 between equal-size samples = mean |sorted differences|:
    # (1,1,1,3) vs (1,2,2,3) → (0 + 1 + 1 + 0)/4 = .5.
    got = item_distributions(pd.DataFrame({"i1": [1, 1, 1, 3]}), pd.DataFrame({"i1": [1, 2, 2, 3]}), inst).iloc[0]
    assert got["tv"] == pytest.approx(0.5)
    assert got["tv_uniform"] == pytest.approx(1 / 6)
    assert got["simbench"] == pytest.approx(-200.0)
    assert got["wasserstein"] == pytest.approx(0.5)
    assert total_variation(np.array([1.0, 0]), np.array([0.0, 1])) == 1.0


def test_simbench_baseline_is_the_mean_over_items_and_groups_are_compared():
    inst = instrument({"A": 2}, scale=(1, 2))
    # Two items on 1–2. Humans: i1 all 1 → (1, 0): TV to uniform = ½(.5 + .5) = .5;
    # i2 half 1, half 2 → uniform: TV to uniform 0. Baseline = mean(.5, 0) = .25.
    # Cohort: i1 (.5, .5) → TV = .5 → SimBench 100(1 − .5/.25) = −100; i2 (.5, .5) → TV 0 → 100.
    humans = pd.DataFrame({"i1": [1, 1, 1, 1], "i2": [1, 2, 1, 2], "gender": ["f", "f", "m", "m"]})
    cohort = pd.DataFrame({"i1": [1, 2, 1, 2], "i2": [2, 1, 1, 2], "gender": ["f", "f", "f", "f"]})
    got = item_distributions(cohort, humans, inst)
    overall = got[got["group_by"] == "all"].set_index("item_id")
    assert overall.loc["i1", "simbench"] == pytest.approx(-100.0)
    assert overall.loc["i2", "simbench"] == pytest.approx(100.0)
    # Per gender: the cohort has no men, so the "m" rows are not estimable and say why.
    men = got[(got["group_by"] == "gender") & (got["group"] == "m")]
    assert len(men) == 2 and (~men["estimable"]).all() and men["tv"].isna().all()
    assert men["note"].str.contains("no cohort answers").all()
    women = got[(got["group_by"] == "gender") & (got["group"] == "f")].set_index("item_id")
    assert women.loc["i2", "n_human"] == 2 and women.loc["i2", "n_cohort"] == 4
    # Women's i2: humans (.5, .5) = cohort's (.5, .5) → TV 0.
    assert women.loc["i2", "tv"] == 0
    # Codes match across types: a human CSV's 1.0 (float) is the cohort's 1 (integer).
    coded = item_distributions(cohort.assign(gender=pd.array([1, 1, 1, 1], dtype="Int64")),
                               humans.assign(gender=[1.0, 1.0, 2.0, 2.0]), inst)
    assert set(coded.loc[coded["group_by"] == "gender", "group"]) == {"1", "2"}
    assert (coded.loc[coded["group"] == "1", "n_cohort"] == 4).all()


def test_simbench_not_estimable_when_humans_are_uniform_everywhere():
    inst = instrument({"A": 1}, scale=(1, 2))
    got = item_distributions(pd.DataFrame({"i1": [1, 1]}), pd.DataFrame({"i1": [1, 2]}), inst).iloc[0]
    assert got["tv"] == 0.5 and np.isnan(got["simbench"]) and "uniform" in got["note"]


def test_intercorrelations_match_pandas_corr():
    rng = np.random.default_rng(7)
    inst = instrument({"A": 3, "B": 3, "C": 2})
    latent = rng.standard_normal((60, 1))
    raw = np.clip(np.rint(3 + latent + rng.standard_normal((60, 8))), 1, 5)
    cohort = pd.DataFrame(raw, columns=[f"i{i}" for i in range(1, 9)])
    humans = pd.DataFrame(np.clip(np.rint(3 + rng.standard_normal((80, 8))), 1, 5), columns=cohort.columns)
    humans.loc[0, "i1"] = np.nan     # A needs every item (no min_answered): human 0 has no A score
    got = subscale_correlations(cohort, humans, inst).set_index(["subscale_a", "subscale_b"])
    # Independent route: subscale sums computed here (missing if an item is missing) and .corr()
    # (pairwise complete, so human 0 drops out of A's pairs only).
    def sums(frame):
        out = {}
        for sub, cols in (("A", ["i1", "i2", "i3"]), ("B", ["i4", "i5", "i6"]), ("C", ["i7", "i8"])):
            out[sub] = frame[cols].sum(axis=1, min_count=len(cols))
        return pd.DataFrame(out)
    want_c, want_h = sums(cohort).corr(), sums(humans).corr()
    for a, b in (("A", "B"), ("A", "C"), ("B", "C")):
        assert got.loc[(a, b), "r_cohort"] == pytest.approx(want_c.loc[a, b], abs=1e-12)
        assert got.loc[(a, b), "r_human"] == pytest.approx(want_h.loc[a, b], abs=1e-12)
        assert got.loc[(a, b), "difference"] == pytest.approx(want_c.loc[a, b] - want_h.loc[a, b], abs=1e-12)
    assert got["estimable"].all() and len(got) == 3
    assert got.loc[("A", "B"), "n_human"] == 79 and got.loc[("B", "C"), "n_human"] == 80


def test_intercorrelation_degenerate_cases_say_why():
    inst = instrument({"A": 2, "B": 2})
    flat = pd.DataFrame({"i1": [3, 3, 3, 3], "i2": [3, 3, 3, 3], "i3": [1, 2, 3, 4], "i4": [2, 2, 4, 5]})
    row = subscale_correlations(flat, flat, inst).iloc[0]
    assert np.isnan(row["r_cohort"]) and not row["estimable"] and "no variance in A" in row["note"]
    one = subscale_correlations(flat, flat, instrument({"A": 4})).iloc[0]
    assert not one["estimable"] and "1 rating subscale" in one["note"]


def two_factor_sample(rng, n: int, swap: bool = False) -> pd.DataFrame:
    """Items i1–i5 load .75 on factor 1, i6–i10 on factor 2 (or, with swap, i1–i3 and i6–i8 trade
    factors), answered on 1–5."""
    f = rng.standard_normal((n, 2))
    which = np.array([0] * 5 + [1] * 5)
    if swap:
        which[[0, 1, 2, 5, 6, 7]] = [1, 1, 1, 0, 0, 0]
    x = 0.75 * f[:, which] + 0.66 * rng.standard_normal((n, 10))
    return pd.DataFrame(np.clip(np.rint(3 + 1.2 * x), 1, 5), columns=[f"i{i}" for i in range(1, 11)])


def test_congruence_recovers_a_known_two_factor_structure():
    rng = np.random.default_rng(11)
    inst = instrument({"A": 5, "B": 5})
    humans = two_factor_sample(rng, 600)
    same = factor_congruence(humans, humans, inst).set_index("factor")
    # Identical data: identical loadings, so φ = 1 exactly (up to rounding).
    assert same["phi"].to_numpy() == pytest.approx(1.0, abs=1e-9)
    # A fresh sample of the same structure: φ near 1 on both factors.
    fresh = factor_congruence(two_factor_sample(rng, 600), humans, inst).set_index("factor")
    assert (fresh.loc[["A", "B"], "phi"] > 0.95).all()
    # The rotated loadings put each item on its own subscale's factor.
    loadings, method, note = target_loadings(humans, inst)
    assert note == "" and (loadings.loc[["i1", "i2", "i3", "i4", "i5"], "A"] > 0.5).all()
    # A cohort whose structure differs (6 of 10 items on the other factor) is far less congruent,
    # and so is one whose answers are shuffled within each item (no structure at all).
    swapped = factor_congruence(two_factor_sample(rng, 600, swap=True), humans, inst).set_index("factor")
    shuffled = humans.apply(lambda c: rng.permutation(c.to_numpy()))
    noise = factor_congruence(shuffled, humans, inst).set_index("factor")
    assert swapped.loc["all", "phi"] < 0.85 and noise.loc["all", "phi"] < 0.85
    assert swapped.loc["all", "phi"] < fresh.loc["all", "phi"] - 0.1


def test_congruence_degenerate_cases_are_not_estimable():
    rng = np.random.default_rng(5)
    inst = instrument({"A": 5, "B": 5})
    humans = two_factor_sample(rng, 200)
    constant = humans.assign(i3=3.0)
    got = factor_congruence(constant, humans, inst)
    assert (~got["estimable"]).all() and got["phi"].isna().all()
    assert got["note"].str.contains("cohort: item\\(s\\) without variance: i3").all()
    small = factor_congruence(humans.iloc[:8], humans, inst)       # 8 respondents < 10 items + 1
    assert small["note"].str.contains("fewer than items \\+ 1").all() and small["phi"].isna().all()
    duplicate = humans.assign(i10=humans["i9"])                     # two identical items: singular
    assert factor_congruence(duplicate, humans, inst)["note"].str.contains("singular").all()
    one = factor_congruence(humans, humans, instrument({"A": 10}))
    assert one["note"].str.contains("needs at least 2").all()
    too_many = instrument({"A": 1, "B": 1, "C": 1, "D": 1})          # 4 factors from 4 items
    four = two_factor_sample(rng, 100).iloc[:, :4]
    assert factor_congruence(four, four, too_many)["note"].str.contains("not identified").all()


def test_validity_plots_draw_estimable_values_and_name_the_rest():
    from psyq.analysis.report import plots

    inst = instrument({"A": 2, "B": 2})
    cohort = pd.DataFrame({"i1": [3, 3, 3, 3], "i2": [3, 3, 3, 3], "i3": [1, 2, 3, 4], "i4": [2, 2, 4, 5]})
    humans = pd.DataFrame({"i1": [1, 2, 4, 5], "i2": [2, 1, 5, 4], "i3": [1, 2, 3, 4], "i4": [2, 3, 4, 5]})
    corr = subscale_correlations(cohort, humans, inst)      # cohort A constant: r_cohort not estimable
    fig = plots.correlation_heatmaps(corr, "toy")
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert texts.count("n/e") == 4          # cohort A–B (twice, symmetric) and the difference (twice)
    assert f"{corr['r_human'].iloc[0]:.2f}" in texts
    cong = factor_congruence(cohort, humans, inst)          # 4 respondents < 4 items + 1
    message = plots.congruence_chart(cong)
    assert any("not estimable" in t.get_text() for ax in message.axes for t in ax.texts)
    dist = item_distributions(cohort, humans, inst)
    bars = plots.item_distance_chart(dist, "toy")
    drawn = [p for p in bars.axes[0].patches]
    assert [round(p.get_width(), 6) for p in drawn] == [round(v, 6) for v in dist["tv"]]


def with_total(composite: bool | None) -> Instrument:
    """instrument({"A": 5, "B": 5}) plus a subscale TOTAL holding all ten items."""
    base = instrument({"A": 5, "B": 5}).model_dump()
    for item in base["items"]:
        item["subscales"] = [*item["subscales"], "TOTAL"]
    total = {"id": "TOTAL", "name": "Total"} | ({} if composite is None else {"composite": composite})
    base["subscales"] = [*base["subscales"], total]
    return Instrument.model_validate(base)


@pytest.mark.parametrize("composite", [True, None], ids=["marked", "inferred"])
def test_a_total_subscale_is_not_a_factor_and_its_correlations_are_part_whole(composite):
    from psyq.engine.design.instrument import inferred_composites

    inst = with_total(composite)
    assert [s.id for s in inst.first_order_subscales] == ["A", "B"]
    assert inferred_composites(inst) == ({} if composite else {"TOTAL": ["A", "B"]})
    humans = two_factor_sample(np.random.default_rng(11), 600)
    cong = factor_congruence(humans, humans, inst)
    assert cong["factor"].tolist() == ["A", "B", "all"] and cong["estimable"].all()
    assert cong.set_index("factor").loc["A", "phi"] == pytest.approx(1.0)
    loadings, _, _ = target_loadings(humans, inst)
    assert list(loadings.columns) == ["A", "B"]
    corr = subscale_correlations(humans, humans, inst).set_index(["subscale_a", "subscale_b"])
    assert not corr.loc[("A", "B"), "part_whole"]
    assert corr.loc[("A", "TOTAL"), "part_whole"] and corr.loc[("B", "TOTAL"), "part_whole"]
    assert "part–whole: TOTAL holds every item of A" in corr.loc[("A", "TOTAL"), "note"]


def test_a_total_kept_first_order_on_purpose_is_fitted():
    inst = with_total(False)
    assert [s.id for s in inst.first_order_subscales] == ["A", "B", "TOTAL"]


def test_shipped_totals_are_marked_composite():
    from psyq.engine.design.instrument import inferred_composites, load_instrument

    bes = load_instrument("instruments/bes.yaml")
    assert bes.composite_subscale_ids == ["total"] and inferred_composites(bes) == {}
    assert [s.id for s in bes.first_order_subscales] == ["cognitive", "affective"]


def test_groups_whose_labels_differ_say_so():
    inst = instrument({"A": 2})
    cohort = pd.DataFrame({"i1": [1, 2, 3, 4], "i2": [2, 3, 4, 5], "gender": ["female", "male"] * 2})
    humans = pd.DataFrame({"i1": [1, 2, 3, 4], "i2": [2, 3, 4, 5], "gender": ["F", "M"] * 2})
    dist = item_distributions(cohort, humans, inst)
    grouped = dist[dist["group_by"] == "gender"]
    assert set(grouped["group"]) == {"female", "male", "F", "M"} and not grouped["estimable"].any()
    assert grouped["note"].str.contains("share no gender value (cohort: female, male; humans: F, M)", regex=False).all()
    assert grouped["note"].str.contains("codebook's `values:`", regex=False).all()
    mapped = humans.assign(gender=humans["gender"].map({"F": "female", "M": "male"}))
    assert item_distributions(cohort, mapped, inst)["estimable"].all()
