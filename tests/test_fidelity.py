"""Fidelity diagnostics on answer tables built by hand.

Every expected number is computed in the test from the hand-made answers, with the textbook
formula written out (Wilson, Welch, F interval, cluster-robust sandwich), never by calling the
function under test or the library helper it uses.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.statistics.standin.fidelity import (acquiescence, answer_entropy, fidelity_summary, item_order_effect,
    missingness, option_order_effect, response_styles, sd_ratio, straightlining)
from psyq.engine.design.instrument import Instrument

Z = stats.norm.ppf(0.975)
EXPORT_COLUMNS = ["run_id", "study", "backend_id", "model", "respondent_id", "gender", "instrument", "item_id",
                  "position", "repeat", "option_order", "status", "reason", "disclaimer", "raw_text", "value",
                  "keyed_value", "expected", "option_mass", "distribution", "trial_status", "attempts", "reasks"]


def make_instrument(inst_id: str, n_items: int, reversed_ids=(), scale=(1, 5)) -> Instrument:
    """A minimal instrument: items '1'..'n', one subscale holding all of them."""
    low, high = scale
    options = [{"value": v} for v in range(low, high + 1)]
    options[0]["label"], options[-1]["label"] = "low", "high"
    return Instrument.model_validate({
        "psyq": "instrument/1", "id": inst_id, "name": inst_id, "version": "1", "content_source": "psyq",
        "citations": {"x": "x"}, "terms": "test", "instructions": "test", "scale": options,
        "items": [{"id": str(i), "text": f"item {i}", "reverse": str(i) in set(reversed_ids),
                   "subscales": ["all"]} for i in range(1, n_items + 1)],
        "subscales": [{"id": "all", "name": "all"}]})


def make_table(rows: list[dict], instruments: dict[str, Instrument] | None = None) -> pd.DataFrame:
    """An answers table with the export's columns; each row gives at least respondent_id, item_id, value.

    Defaults: backend b1, instrument 'inst', position 0, repeat 0, as_written, status 'answered'
    when a value is given else 'refusal'. keyed_value is min + max − value on reversed items.
    """
    filled = []
    for r in rows:
        value = r.get("value", math.nan)
        value = math.nan if value is None else float(value)
        row = {"run_id": "run", "study": "study", "backend_id": "b1", "model": "m", "gender": "female",
               "instrument": "inst", "position": 0, "repeat": 0, "option_order": "as_written",
               "status": "answered" if not math.isnan(value) else "refusal", "reason": None,
               "disclaimer": False, "raw_text": "" if math.isnan(value) else str(int(value)),
               "expected": math.nan, "option_mass": math.nan, "distribution": "",
               "trial_status": "answered", "attempts": 1, "reasks": 0}
        row.update(r)
        row["item_id"] = str(row["item_id"])
        row["value"] = value
        keyed = value
        if instruments and row["instrument"] in instruments and not math.isnan(value):
            inst = instruments[row["instrument"]]
            if inst.item(row["item_id"]).reverse:
                keyed = inst.scale_min + inst.scale_max - value
        row.setdefault("keyed_value", keyed)
        filled.append(row)
    return pd.DataFrame(filled)[EXPORT_COLUMNS]


def answer_set(respondent: str, values, **fields) -> list[dict]:
    """One respondent's answers to items '1'..'k' (None = refusal)."""
    return [{"respondent_id": respondent, "item_id": str(i + 1), "value": v, **fields} for i, v in enumerate(values)]


def wilson(count: int, n: int) -> tuple[float, float]:
    """Wilson (1927) score interval, written out."""
    p = count / n
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2)) / (1 + Z**2 / n)
    return centre - half, centre + half


def t_interval(x) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return x.mean() - half, x.mean() + half


# ------------------------------------------------------------------------------------------- sd_ratio

def test_sd_ratio_f_interval_and_collapse_flag():
    comparison = pd.DataFrame({
        "backend_id": ["b1", "b1"], "instrument": ["iri", "iri"], "subscale": ["PT", "EC"],
        "norm_group": ["all", "all"], "n": [30, 50], "sd": [2.0, 1.0], "norm_n": [100, 200],
        "norm_sd": [4.0, 4.0]})
    got = sd_ratio(comparison)
    for i, (n, sd, norm_n, norm_sd) in enumerate([(30, 2.0, 100, 4.0), (50, 1.0, 200, 4.0)]):
        f_obs = (sd / norm_sd) ** 2
        low = math.sqrt(f_obs / stats.f.ppf(0.975, n - 1, norm_n - 1))
        high = math.sqrt(f_obs / stats.f.ppf(0.025, n - 1, norm_n - 1))
        assert got.loc[i, "sd_ratio"] == pytest.approx(sd / norm_sd)
        assert got.loc[i, "ci_low"] == pytest.approx(low)
        assert got.loc[i, "ci_high"] == pytest.approx(high)
        assert got.loc[i, "collapsed"] == (high < 0.5)
    # PT: ratio 0.5 but the interval reaches above 0.5; EC: ratio 0.25 with the whole CI below 0.5.
    assert got["collapsed"].tolist() == [False, True]


def test_sd_ratio_needs_sample_sizes():
    comparison = pd.DataFrame({"backend_id": ["b1"], "instrument": ["iri"], "subscale": ["PT"],
                               "norm_group": ["all"], "sd": [2.0], "norm_sd": [4.0]})
    with pytest.raises(ValueError, match="norm_n"):
        sd_ratio(comparison)


# ------------------------------------------------------------------------------------------- straight-lining

def test_straightlining_two_of_five_sets():
    inst = {"inst": make_instrument("inst", 6, reversed_ids=("5", "6"))}
    rows = (answer_set("s1", [3, 3, 3, 3, 3, 3])                 # straight, across both keyed directions
            + answer_set("s2", [2, 2, None, 2, 2, 2])            # straight: 5 answered, all 2
            + answer_set("v1", [1, 2, 3, 4, 5, 1])
            + answer_set("v2", [4, 4, 4, 4, 4, 5])               # one differs: not straight
            + answer_set("v3", [2, 3, 2, 3, 2, 3])
            + answer_set("x1", [1, 1, 1, 1, None, None]))       # 4 answered: not judged
    got = straightlining(make_table(rows, inst))
    assert len(got) == 1
    row = got.iloc[0]
    assert (row["n_sets"], row["n_straight"], row["n_excluded"]) == (5, 2, 1)
    assert row["share"] == pytest.approx(0.4)
    low, high = wilson(2, 5)
    assert row["ci_low"] == pytest.approx(low)
    assert row["ci_high"] == pytest.approx(high)


def test_straightlining_sets_are_per_repeat_and_backend():
    rows = (answer_set("p", [3] * 5, repeat=0) + answer_set("p", [1, 2, 3, 4, 5], repeat=1)
            + answer_set("p", [4] * 5, backend_id="b2"))
    got = straightlining(make_table(rows)).set_index("backend_id")
    assert got.loc["b1", "n_sets"] == 2 and got.loc["b1", "n_straight"] == 1
    assert got.loc["b2", "n_sets"] == 1 and got.loc["b2", "share"] == 1.0


# ------------------------------------------------------------------------------------------- acquiescence

def test_acquiescence_index_by_hand():
    inst = {"bal": make_instrument("bal", 4, reversed_ids=("3", "4")),
            "fwd": make_instrument("fwd", 2)}
    rows = (answer_set("r1", [5, 5, 5, 5], instrument="bal", repeat=0)
            + answer_set("r1", [4, 4, 5, 5], instrument="bal", repeat=1)
            + answer_set("r2", [4, 5, 2, 1], instrument="bal")
            + answer_set("r3", [2, 1, 4, None], instrument="bal")
            + answer_set("r1", [5, 5], instrument="fwd"))
    got = acquiescence(make_table(rows, inst), inst)
    assert got["instrument"].tolist() == ["bal"]           # 'fwd' has one keyed direction only
    row = got.iloc[0]
    mid = 3.0
    # Repeats pooled per respondent: r1 all = (5+5+5+5+4+4+5+5)/8; forward items 1-2, reversed 3-4.
    all_means = [38 / 8, (4 + 5 + 2 + 1) / 4, (2 + 1 + 4) / 3]
    fwd_means = [(5 + 5 + 4 + 4) / 4, (4 + 5) / 2, (2 + 1) / 2]
    rev_means = [(5 + 5 + 5 + 5) / 4, (2 + 1) / 2, 4 / 1]
    index = [m - mid for m in all_means]
    balanced = [(f + r) / 2 - mid for f, r in zip(fwd_means, rev_means)]
    assert row["n_respondents"] == 3
    assert (row["n_forward_items"], row["n_reversed_items"], row["midpoint"]) == (2, 2, 3.0)
    assert row["mean_forward"] == pytest.approx(np.mean(fwd_means))
    assert row["mean_reversed"] == pytest.approx(np.mean(rev_means))
    assert row["acquiescence"] == pytest.approx(np.mean(index))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(t_interval(index))
    assert row["balanced"] == pytest.approx(np.mean(balanced))
    assert (row["balanced_ci_low"], row["balanced_ci_high"]) == pytest.approx(t_interval(balanced))


def test_acquiescence_midpoint_of_zero_based_scale():
    inst = {"iri": make_instrument("iri", 2, reversed_ids=("2",), scale=(0, 4))}
    rows = answer_set("a", [4, 4], instrument="iri") + answer_set("b", [3, 4], instrument="iri")
    row = acquiescence(make_table(rows, inst), inst).iloc[0]
    assert row["midpoint"] == 2.0
    assert row["acquiescence"] == pytest.approx(((4 - 2) + (3.5 - 2)) / 2)


# ------------------------------------------------------------------------------------------- response styles

def test_response_styles_extreme_and_midpoint():
    inst = {"five": make_instrument("five", 11), "four": make_instrument("four", 5, scale=(1, 4))}
    five = [1, 5, 3, 3, 2, 4, 5, 1, 3, 2, None]                 # 4 extreme, 3 midpoint of 10 answered
    four = [1, 4, 2, 3, 4]                                       # 3 extreme of 5; no midpoint option
    rows = answer_set("p", five, instrument="five") + answer_set("p", four, instrument="four")
    got = response_styles(make_table(rows, inst), inst).set_index("instrument")
    assert got.loc["five", "n_answers"] == 10
    assert got.loc["five", "extreme"] == pytest.approx(0.4)
    assert (got.loc["five", "extreme_ci_low"], got.loc["five", "extreme_ci_high"]) == pytest.approx(wilson(4, 10))
    assert got.loc["five", "midpoint"] == pytest.approx(0.3)
    assert (got.loc["five", "midpoint_ci_low"], got.loc["five", "midpoint_ci_high"]) == pytest.approx(wilson(3, 10))
    assert got.loc["four", "extreme"] == pytest.approx(0.6)
    assert (got.loc["four", "extreme_ci_low"], got.loc["four", "extreme_ci_high"]) == pytest.approx(wilson(3, 5))
    assert got.loc["four", ["n_midpoint", "midpoint", "midpoint_ci_low", "midpoint_ci_high"]].isna().all()


# ------------------------------------------------------------------------------------------- missingness

def test_missingness_counts_rates_disclaimers_reasks():
    statuses = ["answered"] * 5 + ["refusal"] * 2 + ["unparseable", "failed", "failed"]
    values = [3, 4, 2, 5, 1] + [None] * 5
    disclaimers = [True, False, True, False, False, True, False, False, False, False]
    reasks = [0, 0, 1, 0, 0, 2, 2, 1, 0, 0]
    rows = [{"respondent_id": "p", "item_id": str(i), "value": v, "status": s, "disclaimer": d, "reasks": r}
            for i, (v, s, d, r) in enumerate(zip(values, statuses, disclaimers, reasks))]
    row = missingness(make_table(rows)).iloc[0]
    assert row["n_answers"] == 10
    assert (row["answered_n"], row["refusal_n"], row["unparseable_n"], row["failed_n"]) == (5, 2, 1, 2)
    assert (row["empty_n"], row["out_of_range_n"], row["no_option_tokens_n"]) == (0, 0, 0)
    assert row["refusal_rate"] == pytest.approx(0.2)
    assert row["failed_rate"] == pytest.approx(0.2)
    assert row["answered_rate"] == pytest.approx(0.5)
    # The disclaimer on the refusal row is not an answered-with-disclaimer: 2 of 5 answered
    # (counting it would give 3/10; dividing by all answers 2/10).
    assert row["disclaimer_n"] == 2 and row["disclaimer_rate"] == pytest.approx(0.4)
    assert row["mean_reasks"] == pytest.approx(6 / 10)


def test_missingness_rejects_unknown_status():
    with pytest.raises(ValueError, match="timeout"):
        missingness(make_table([{"respondent_id": "p", "item_id": "1", "value": 3, "status": "timeout"}]))


# ------------------------------------------------------------------------------------------- option order

def welch(a, b) -> tuple[float, float, float, float]:
    """Difference, Welch 95 % CI and p, written out (Welch–Satterthwaite df)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    diff = a.mean() - b.mean()
    half = stats.t.ppf(0.975, df) * se
    return diff, diff - half, diff + half, 2 * stats.t.sf(abs(diff / se), df)


def test_option_order_difference_keyed_and_raw():
    inst = {"inst": make_instrument("inst", 2, reversed_ids=("2",))}
    as_written = {"a1": [1, 2], "a2": [2, 2], "a3": [1, 1]}     # low raw values (primacy on 1..5 shown first)
    reversed_ = {"r1": [4, 5], "r2": [5, 3], "r3": [4, 4], "r4": [5, 5]}
    rows = []
    for who, vals in as_written.items():
        rows += answer_set(who, vals, option_order="as_written")
    for who, vals in reversed_.items():
        rows += answer_set(who, vals, option_order="reversed")
    rows += answer_set("a1", [3, 3], option_order="as_written", repeat=1)   # repeat pooled into a1
    got = option_order_effect(make_table(rows, inst), inst).set_index("answer")

    # Item 2 is reversed: keyed = 1 + 5 - raw. a1 answered [1, 2] and, in repeat 1, [3, 3].
    raw_a = [np.mean([1, 2, 3, 3]), np.mean([2, 2]), np.mean([1, 1])]
    keyed_a = [np.mean([1, 6 - 2, 3, 6 - 3]), np.mean([2, 6 - 2]), np.mean([1, 6 - 1])]
    raw_b = [np.mean(v) for v in reversed_.values()]
    keyed_b = [np.mean([v[0], 6 - v[1]]) for v in reversed_.values()]
    for answer, a, b in (("raw", raw_a, raw_b), ("keyed", keyed_a, keyed_b)):
        diff, low, high, p = welch(a, b)
        row = got.loc[answer]
        assert (row["n_as_written"], row["n_reversed"]) == (3, 4)
        assert row["mean_as_written"] == pytest.approx(np.mean(a))
        assert row["mean_reversed"] == pytest.approx(np.mean(b))
        assert row["difference"] == pytest.approx(diff)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
        assert row["p"] == pytest.approx(p)
    assert got.loc["raw", "difference"] < 0


def test_option_order_needs_both_orders():
    rows = answer_set("a", [1, 2]) + answer_set("b", [3, 4])
    inst = {"inst": make_instrument("inst", 2)}
    got = option_order_effect(make_table(rows, inst), inst)
    assert got.empty and "difference" in got.columns


# ------------------------------------------------------------------------------------------- item order

def test_item_order_slope_and_cluster_se_by_hand():
    rng = np.random.default_rng(7)
    n_resp, n_items = 25, 6
    item_effect = np.array([1.0, 2.0, 3.0, 2.5, 1.5, 3.5])
    rows = []
    for r in range(n_resp):
        person = rng.normal(0, 0.5)
        order = rng.permutation(n_items)                        # order[pos] = item index asked at pos
        for pos, item in enumerate(order):
            y = item_effect[item] + 0.15 * pos + person + rng.normal(0, 0.3)
            rows.append({"respondent_id": f"p{r}", "item_id": str(item + 1), "position": pos, "value": y})
    table = make_table(rows)
    got = item_order_effect(table)
    assert len(got) == 1
    row = got.iloc[0]

    # Design: intercept, position, dummies for items 2..6 (item '1' the reference).
    pos = table["position"].to_numpy(float)
    items = table["item_id"].to_numpy()
    X = np.column_stack([np.ones(len(table)), pos] + [(items == str(k)).astype(float) for k in range(2, 7)])
    y = table["keyed_value"].to_numpy(float)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    bread = np.linalg.inv(X.T @ X)
    groups = table["respondent_id"].to_numpy()
    meat = sum(np.outer(X[groups == g].T @ resid[groups == g], X[groups == g].T @ resid[groups == g])
               for g in np.unique(groups))
    n, k, g = len(y), X.shape[1], n_resp
    cov = g / (g - 1) * (n - 1) / (n - k) * bread @ meat @ bread   # CR1 (Stata-style) correction
    se = math.sqrt(cov[1, 1])
    half = stats.t.ppf(0.975, g - 1) * se
    assert row["slope"] == pytest.approx(beta[1])
    assert row["se"] == pytest.approx(se)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((beta[1] - half, beta[1] + half))
    assert (row["n_answers"], row["n_respondents"], row["n_positions"]) == (150, 25, 6)
    assert row["ci_low"] < 0.15 < row["ci_high"]                # the simulated slope is covered


def test_item_order_needs_varying_positions():
    rows = [{"respondent_id": f"p{r}", "item_id": str(i), "position": i, "value": (r + i) % 5 + 1}
            for r in range(4) for i in range(5)]
    got = item_order_effect(make_table(rows))
    assert got.empty and "slope" in got.columns


# ------------------------------------------------------------------------------------------- entropy

def test_answer_entropy_bits_normalised_and_mass():
    dists = [{"1": 0.5, "2": 0.5, "3": 0.0, "4": 0.0, "5": 0.0},   # 1 bit
             {"1": 1.0, "2": 0.0, "3": 0.0, "4": 0.0, "5": 0.0},   # 0 bits
             {str(v): 0.2 for v in range(1, 6)}]                    # log2(5) bits, evenness 1
    rows = [{"respondent_id": "p", "item_id": str(i), "value": 1, "distribution": json.dumps(d),
             "option_mass": m} for i, (d, m) in enumerate(zip(dists, [0.9, 0.5, 0.1]))]
    rows.append({"respondent_id": "p", "item_id": "9", "value": 2})                   # no distribution
    rows.append({"respondent_id": "p", "item_id": "1", "value": 2, "instrument": "other"})
    got = answer_entropy(make_table(rows))
    assert got["instrument"].tolist() == ["inst"]
    row = got.iloc[0]
    bits = [1.0, 0.0, math.log2(5)]
    assert row["n_answers"] == 3 and row["n_options"] == 5
    assert row["entropy_bits"] == pytest.approx(np.mean(bits))
    assert row["normalised_entropy"] == pytest.approx(np.mean([b / math.log2(5) for b in bits]))
    assert row["option_mass"] == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------- summary

def test_summary_reports_only_what_applies():
    inst = {"inst": make_instrument("inst", 5, reversed_ids=("5",))}
    rows = answer_set("a", [3, 3, 3, 3, 3]) + answer_set("b", [1, 2, 4, 5, 2])
    table = make_table(rows, inst)
    got = fidelity_summary(table, inst)
    assert set(got) == {"straightlining", "acquiescence", "response_styles", "missingness"}
    assert got["straightlining"].iloc[0]["share"] == pytest.approx(0.5)
    comparison = pd.DataFrame({"backend_id": ["b1"], "instrument": ["inst"], "subscale": ["all"],
                               "norm_group": ["all"], "n": [2], "sd": [1.0], "norm_n": [10], "norm_sd": [2.0]})
    assert "sd_ratio" in fidelity_summary(table, inst, comparison)
