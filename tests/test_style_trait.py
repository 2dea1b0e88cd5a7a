"""psyq.analysis.statistics.standin.style_trait.style_and_trait: response style against keyed (trait) shift,
checked on the 1,973 Briganti et al. (2018) people against computations made here from item means,
numpy's least squares and scipy's Welch t interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.statistics.standin.style_trait import COLUMNS, style_and_trait
from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import keyed_answers

REQUIRED = ["subscale", "style", "style_low", "style_high", "trait", "trait_low", "trait_high", "style_share",
            "instrument", "gap", "n_forward", "n_reversed", "n_cohort", "n_people", "note", "extreme", "extreme_low",
            "extreme_high", "midpoint", "midpoint_low", "midpoint_high"]


# iri and people (the 1,973 Briganti people's raw answers): tests/conftest.py


def _matching_item_means(shifted: pd.DataFrame, people: pd.DataFrame, iri: Instrument) -> pd.DataFrame:
    """style_and_trait(shifted, people) by subscale, its style and trait checked against the values
    computed here from the item means (:func:`_expected_from_item_means`)."""
    out = style_and_trait(shifted, people, iri).set_index("subscale")
    for sub in out.index:
        style, trait = _expected_from_item_means(shifted, people, iri, sub)
        assert out.loc[sub, "style"] == pytest.approx(style, abs=1e-12)
        assert out.loc[sub, "trait"] == pytest.approx(trait, abs=1e-12)
    return out


def _sides(iri, sub):
    """Ids of the forward and of the reversed items of `sub`, read from the instrument."""
    members = iri.subscale_items(sub)
    return [i.id for i in members if not i.reverse], [i.id for i in members if i.reverse]


def _expected_from_item_means(cohort, people, iri, sub):
    """Style and trait from the item means (cohort − people, raw): (d̄_F ± d̄_R) / 2."""
    fwd, rev = _sides(iri, sub)
    d = cohort[fwd + rev].mean() - people[fwd + rev].mean()
    d_f, d_r = d[fwd].mean(), d[rev].mean()
    return (d_f + d_r) / 2, (d_f - d_r) / 2


def test_columns_one_row_per_rating_subscale(people, iri):
    out = style_and_trait(people, people, iri)
    assert set(REQUIRED) <= set(out.columns) and list(out.columns) == COLUMNS
    assert out["subscale"].tolist() == [s.id for s in iri.rating_subscales]
    assert (out["instrument"] == "iri").all()
    # the IRI's keys (Davis 1980): PT 3, 15; FS 7, 12; EC 4, 14, 18; PD 13, 19 reversed
    assert out.set_index("subscale")["n_reversed"].to_dict() == {"PT": 2, "FS": 2, "EC": 3, "PD": 2}
    assert (out["n_people"] == 1973).all() and (out["n_cohort"] == 1973).all()


def test_raw_shift_is_style_and_keyed_shift_is_trait(people, iri):
    """Independent check: +1 on every RAW answer (clipped to 4) is a pure style, +1 on every KEYED
    answer (forward +1, reversed −1 raw, clipped to 0–4) a pure trait; the expected values (the
    shift less the clipping) are computed here from the shifted copy's item means."""
    items = [i.id for i in iri.rating_items]
    raw_up = people.copy()
    raw_up[items] = (people[items] + 1).clip(upper=iri.scale_max)
    out = _matching_item_means(raw_up, people, iri)
    for sub in out.index:
        assert 0.7 < out.loc[sub, "style"] < 1 and abs(out.loc[sub, "trait"]) < 0.1
        assert out.loc[sub, "style_abs_share"] > 0.85   # clipping at 4 leaks a little into trait
        assert out.loc[sub, "style_low"] < out.loc[sub, "style"] < out.loc[sub, "style_high"]

    keyed_up = people.copy()
    for item in iri.rating_items:
        step = -1 if item.reverse else 1
        keyed_up[item.id] = (people[item.id] + step).clip(iri.scale_min, iri.scale_max)
    out = _matching_item_means(keyed_up, people, iri)
    for sub in out.index:
        assert 0.7 < out.loc[sub, "trait"] < 1 and abs(out.loc[sub, "style"]) < 0.1
        assert out.loc[sub, "trait_share"] > 0.9 and out.loc[sub, "style_abs_share"] < 0.15


def test_equals_equal_weight_least_squares_and_keyed_gap(people, iri):
    """Independent check: with complete answers (women as the 'cohort', men as the 'people'),
    style and trait equal numpy's weighted least-squares fit of d_i = s + t·k_i (weight 1/nF on a
    forward item, 1/nR on a reversed one) to the raw item-mean differences, and gap equals the
    mean over the subscale's items of the keyed item-mean differences (psyq's keyed_answers)."""
    women, men = people[people["gender"] == "female"], people[people["gender"] == "male"]
    assert not people[[i.id for i in iri.rating_items]].isna().any().any()
    out = style_and_trait(women, men, iri).set_index("subscale")
    keyed_d = keyed_answers(iri, women).mean() - keyed_answers(iri, men).mean()
    for sub in out.index:
        fwd, rev = _sides(iri, sub)
        ids = fwd + rev
        d = (women[ids].mean() - men[ids].mean()).to_numpy()
        k = np.array([1.0] * len(fwd) + [-1.0] * len(rev))
        w = np.array([1 / len(fwd)] * len(fwd) + [1 / len(rev)] * len(rev))
        design = np.column_stack([np.ones_like(k), k]) * np.sqrt(w)[:, None]
        (s, t), *_ = np.linalg.lstsq(design, d * np.sqrt(w), rcond=None)
        assert out.loc[sub, "style"] == pytest.approx(s, abs=1e-12)
        assert out.loc[sub, "trait"] == pytest.approx(t, abs=1e-12)
        assert out.loc[sub, "gap"] == pytest.approx(keyed_d[ids].mean(), abs=1e-12)
        if not math.isnan(out.loc[sub, "style_share"]):
            n_f, n_r = len(fwd), len(rev)
            assert out.loc[sub, "style_share"] == pytest.approx(s * (n_f - n_r) / (n_f + n_r) / keyed_d[ids].mean())
            assert out.loc[sub, "trait_share"] == pytest.approx(t / keyed_d[ids].mean())
        assert out.loc[sub, "style_abs_share"] == pytest.approx(abs(s) / (abs(s) + abs(t)))


def test_welch_interval_matches_scipy(people, iri):
    """Independent check: the CIs are scipy.stats.ttest_ind(equal_var=False).confidence_interval()
    on the per-respondent style index u, trait index v and extreme share computed here; respondents
    without an answered forward or reversed item are left out and counted."""
    rng = np.random.default_rng(1)
    women = people[people["gender"] == "female"].copy()
    men = people[people["gender"] == "male"]
    # blank some answers: a few women lose both reversed PT items (3, 15), others single answers
    women.loc[women.index[:7], ["3", "15"]] = np.nan
    holes = rng.random((len(women), 28)) < 0.05
    items = [i.id for i in iri.rating_items]
    women[items] = women[items].mask(holes)
    women.loc[women.index[-1], items] = np.nan   # answered nothing: not a respondent, not left out
    out = style_and_trait(women, men, iri).set_index("subscale")
    for sub in out.index:
        fwd, rev = _sides(iri, sub)

        def indices(frame):
            mf, mr = frame[fwd].mean(axis=1), frame[rev].mean(axis=1)   # pandas skips missing answers
            keep = mf.notna() & mr.notna()
            return ((mf + mr) / 2)[keep], ((mf - mr) / 2)[keep], keep

        u_w, v_w, keep_w = indices(women)
        u_m, v_m, _ = indices(men)
        answered = women[fwd + rev].notna().any(axis=1)
        assert out.loc[sub, "n_cohort"] == keep_w.sum()
        assert out.loc[sub, "n_cohort_left_out"] == (answered & ~keep_w).sum()
        for name, c, h in (("style", u_w, u_m), ("trait", v_w, v_m)):
            ci = stats.ttest_ind(c, h, equal_var=False).confidence_interval(0.95)
            assert out.loc[sub, name] == pytest.approx(c.mean() - h.mean(), abs=1e-12)
            assert out.loc[sub, f"{name}_low"] == pytest.approx(ci.low, abs=1e-10)
            assert out.loc[sub, f"{name}_high"] == pytest.approx(ci.high, abs=1e-10)
        ext = lambda f: f[fwd + rev].isin([0, 4]).sum(axis=1)[f[fwd + rev].notna().any(axis=1)] / \
            f[fwd + rev].notna().sum(axis=1)   # noqa: E731
        e_w, e_m = ext(women).dropna(), ext(men).dropna()
        ci = stats.ttest_ind(e_w, e_m, equal_var=False).confidence_interval(0.95)
        assert out.loc[sub, "extreme"] == pytest.approx(e_w.mean() - e_m.mean(), abs=1e-12)
        assert (out.loc[sub, "extreme_low"], out.loc[sub, "extreme_high"]) == pytest.approx((ci.low, ci.high))
    assert out.loc["PT", "n_cohort_left_out"] >= 7
    assert (out["n_cohort"] + out["n_cohort_left_out"] <= len(women) - 1).all()
    assert "left out of style and trait" in out.loc["PT", "note"]


def _toy(scale, reverse):
    """A tiny instrument: subscale S of items x, y (x reversed when `reverse`), T of item z only."""
    return Instrument.model_validate({
        "psyq": "instrument/1", "id": "toy", "name": "Toy", "version": 1, "content_source": "psyq",
        "citations": {"psyq": "psyq authors."}, "terms": "Test.", "instructions": "Rate.",
        "scale": [{"value": v} for v in scale],
        "items": [{"id": "x", "text": "Item x", "subscales": ["S"], "reverse": reverse},
                  {"id": "y", "text": "Item y", "subscales": ["S"]},
                  {"id": "z", "text": "Item z", "subscales": ["T"], "reverse": True}],
        "subscales": [{"id": "S", "name": "S"}, {"id": "T", "name": "T"}]})


def test_subscale_without_reversed_items_is_not_estimable():
    """Independent check: without both keying directions style and trait are not separable, so the
    row is kept with NaN and the reason (and so for a subscale of reversed items only), while the
    extreme difference, which needs no split, is still given."""
    inst = _toy(range(1, 6), reverse=False)
    people = pd.DataFrame({"x": [1, 2, 3, 4], "y": [2, 3, 4, 5], "z": [3, 3, 2, 1]})
    cohort = pd.DataFrame({"x": [5, 5, 4, 4], "y": [5, 4, 4, 5], "z": [5, 1, 5, 1], "gender": "female"})
    out = style_and_trait(cohort, people, inst).set_index("subscale")
    assert list(out.index) == ["S", "T"]
    for sub, side in (("S", "reversed"), ("T", "forward")):
        row = out.loc[sub]
        assert f"no {side} items: style and trait cannot be told apart" in row["note"]
        for column in ("style", "style_low", "style_high", "trait", "trait_low", "trait_high", "gap",
                       "style_share", "trait_share", "style_abs_share"):
            assert math.isnan(row[column]), column
    # extreme share: S cohort (1, .5, 0, .5) vs people (.5, 0, 0, .5); T cohort all 1 vs people (0, 0, 0, 1)
    assert out.loc["S", "extreme"] == pytest.approx(0.5 - 0.25)
    assert out.loc["T", "extreme"] == pytest.approx(1 - 0.25)


def test_extreme_and_midpoint_responding(people, iri):
    """Independent check: a copy with every answer moved to the nearer scale end (the midpoint 2 to
    4) answers only at the ends, so its extreme difference is 1 − the people's mean extreme share
    and its midpoint difference − the people's mean midpoint share (both computed here); on a scale
    with an even number of options the midpoint is NaN with the reason."""
    items = [i.id for i in iri.rating_items]
    ends = people.copy()
    ends[items] = np.where(people[items] >= 2, 4.0, 0.0)
    out = style_and_trait(ends, people, iri).set_index("subscale")
    for sub in out.index:
        ids = [i.id for i in iri.subscale_items(sub)]
        at_ends = people[ids].isin([0, 4]).mean(axis=1).mean()
        at_middle = (people[ids] == 2).mean(axis=1).mean()
        assert out.loc[sub, "extreme"] == pytest.approx(1 - at_ends, abs=1e-12)
        assert out.loc[sub, "extreme_low"] > 0
        assert out.loc[sub, "midpoint"] == pytest.approx(-at_middle, abs=1e-12)
        assert out.loc[sub, "midpoint_high"] < 0
    inst = _toy(range(1, 5), reverse=True)
    toy = pd.DataFrame({"x": [1, 2, 3, 4], "y": [2, 3, 4, 1], "z": [3, 3, 2, 1]})
    out = style_and_trait(toy, toy, inst).set_index("subscale")
    assert out["midpoint"].isna().all()
    assert "the scale has an even number of options (4)" in out.loc["S", "note"]
    assert out.loc["S", "extreme"] == 0


def test_negligible_gap_gives_no_shares(people, iri):
    """Independent check: the same people on both sides have a gap of exactly 0: a share of it is
    not a number, and nor is the style share of no displacement."""
    out = style_and_trait(people, people, iri)
    assert (out["gap"] == 0).all() and out["style_share"].isna().all() and out["style_abs_share"].isna().all()
    assert out["note"].str.contains("keyed gap negligible").all()


def test_a_clearly_negative_gap_is_shared_out_not_negligible(people, iri):
    """Guards the negligible-gap rule's absolute value (|gap| < 0.01, not gap < 0.01): a cohort whose
    every keyed answer is one point lower (forward −1, reversed +1 raw, clipped to 0–4) has a keyed gap
    far below 0 (about −0.8). Its shares must be given, equal to those computed here from the item
    means (style and trait as (d̄_F ± d̄_R) / 2, the gap as the mean keyed item-mean difference), with
    no "negligible" note; a gap of −0.004 (forward −0.004, reversed +0.004 raw) is negligible."""
    keyed_down = people.copy()
    for item in iri.rating_items:
        keyed_down[item.id] = (people[item.id] + (1 if item.reverse else -1)).clip(iri.scale_min, iri.scale_max)
    out = style_and_trait(keyed_down, people, iri).set_index("subscale")
    keyed_d = keyed_answers(iri, keyed_down).mean() - keyed_answers(iri, people).mean()
    for sub in out.index:
        fwd, rev = _sides(iri, sub)
        gap = keyed_d[fwd + rev].mean()
        style, trait = _expected_from_item_means(keyed_down, people, iri, sub)
        n_f, n_r = len(fwd), len(rev)
        assert gap < -0.5, (sub, gap)
        assert out.loc[sub, "gap"] == pytest.approx(gap, abs=1e-12)
        assert out.loc[sub, "trait_share"] == pytest.approx(trait / gap, abs=1e-12), (sub, out.loc[sub, "note"])
        assert out.loc[sub, "style_share"] == pytest.approx(style * (n_f - n_r) / (n_f + n_r) / gap, abs=1e-12)
        assert out.loc[sub, "style_share"] + out.loc[sub, "trait_share"] == pytest.approx(1)
        assert "keyed gap negligible" not in out.loc[sub, "note"]

    items = [i.id for i in iri.rating_items]
    tiny = people.copy()
    tiny[items] = people[items].astype(float)
    for item in iri.rating_items:
        tiny[item.id] += 0.004 if item.reverse else -0.004
    out = style_and_trait(tiny, people, iri)
    assert np.allclose(out["gap"], -0.004, atol=1e-9)
    assert out["style_share"].isna().all() and out["trait_share"].isna().all()
    assert out["note"].str.contains("keyed gap negligible").all()
