"""relations(): each relation among personas beside the same relation among people.

Independent checks: pingouin's compute_effsize/compute_esci (Hedges' g and its CI), scipy's
pearsonr and pingouin's corr (r and its Fisher-z CI), Zou's (2007) published example for the
difference of two independent correlations, the formulas written out here for the differences,
and two random halves of the 1,973 people of Briganti et al. (2018), which are samples of one
population: their relations must agree in sign wherever both show one, women must score higher
on FS, EC and PD in both (known), and the CI of their difference must cover 0 about 95 % of the
time."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats

import psyq
from psyq.analysis.statistics.standin.relations import correlation_difference_ci, fisher_ci, relations
from psyq.analysis.statistics.validity import subscale_correlations
from psyq.engine.design.instrument import load_instrument
from psyq.engine.trials.scoring import score_wide

Z975 = stats.norm.ppf(0.975)
MINI = Path(__file__).resolve().parent / "data" / "mini_1to7.yaml"


def groups(rng, sizes: dict[str, int], means: dict[str, float], sd: float = 2.0) -> pd.DataFrame:
    """Scores S (and T, unrelated) of respondents in groups of the given sizes and means."""
    labels = [level for level, n in sizes.items() for _ in range(n)]
    s = np.concatenate([rng.normal(means[level], sd, n) for level, n in sizes.items()])
    return pd.DataFrame({"S": s, "T": rng.normal(0, 1, len(labels)), "gender": labels})


def pingouin_g(frame: pd.DataFrame, level: str, reference: str, score: str = "S") -> tuple[float, float, float, int]:
    x = frame.loc[frame["gender"] == level, score].dropna().to_numpy()
    y = frame.loc[frame["gender"] == reference, score].dropna().to_numpy()
    g = float(pg.compute_effsize(x, y, paired=False, eftype="hedges"))
    low, high = pg.compute_esci(stat=g, nx=len(x), ny=len(y), eftype="hedges", confidence=0.95, decimals=15)
    return g, float(low), float(high), len(x) + len(y)


def test_g_its_ci_and_the_difference_ci_against_pingouin():
    # Independent: pingouin.compute_effsize(eftype="hedges") (pooled SD, J = 1 − 3/(4(n₁+n₂) − 9)) and
    # compute_esci (g ± t₀.₉₇₅,df · SE); the difference CI is the normal one on var(g_c) + var(g_h),
    # each SE read back from pingouin's interval: SE = (high − low)/(2 t₀.₉₇₅,n₁+n₂−2).
    rng = np.random.default_rng(0)
    cohort = groups(rng, {"female": 12, "male": 9}, {"female": 10, "male": 11.5})
    cohort.loc[0, "S"] = np.nan          # a missing score leaves that respondent out of g (n 20, not 21)
    people = groups(rng, {"female": 30, "male": 25}, {"female": 10, "male": 9.5})
    row = relations(cohort, people, ["gender"], subscales=["S"]).iloc[0]
    assert (row["kind"], row["measure"], row["contrast"]) == ("categorical", "g", "male − female")
    expected = {}
    for side, frame in (("cohort", cohort), ("people", people)):
        g, low, high, n = pingouin_g(frame, "male", "female")
        assert row[f"effect_{side}"] == pytest.approx(g, abs=1e-12)
        assert row[f"effect_{side}_low"] == pytest.approx(low, abs=1e-12)
        assert row[f"effect_{side}_high"] == pytest.approx(high, abs=1e-12)
        assert row[f"n_{side}"] == n
        expected[side] = (g, (high - low) / (2 * stats.t.ppf(0.975, n - 2)))
    difference = expected["cohort"][0] - expected["people"][0]
    half = Z975 * np.sqrt(expected["cohort"][1] ** 2 + expected["people"][1] ** 2)
    assert row["difference"] == pytest.approx(difference, abs=1e-12)
    assert (row["difference_low"], row["difference_high"]) == pytest.approx((difference - half, difference + half))
    assert row["same_sign"] == (np.sign(expected["cohort"][0]) == np.sign(expected["people"][0]))


def test_r_its_ci_and_zou_difference_against_scipy_and_pingouin():
    # Independent: scipy.stats.pearsonr (r and its Fisher-z confidence_interval), pingouin.corr (r; its
    # CI95 is rounded to 2 decimals), and Zou's (2007) interval written out from scipy's limits:
    # L = r₁ − r₂ − √((r₁ − l₁)² + (u₂ − r₂)²), U = r₁ − r₂ + √((u₁ − r₁)² + (r₂ − l₂)²).
    rng = np.random.default_rng(1)

    def sample(n, slope):
        age = rng.integers(18, 80, n).astype(float)
        s = slope * age + rng.normal(0, 10, n)
        return pd.DataFrame({"S": s, "T": 0.5 * s + rng.normal(0, 10, n), "age": age})

    cohort, people = sample(40, 0.3), sample(120, -0.1)
    cohort.loc[3, "age"] = np.nan                         # pairwise: one pair fewer for age only
    out = relations(cohort, people, ["age"], subscales=["S", "T"])
    assert list(zip(out["kind"], out["attribute"], out["subscale"])) == [
        ("numeric", "age", "S"), ("numeric", "age", "T"), ("subscale", "T", "S")]
    for _, row in out.iterrows():
        x = row["attribute"]
        limits = {}
        for side, frame in (("cohort", cohort), ("people", people)):
            pair = frame[[x, row["subscale"]]].dropna()
            res = stats.pearsonr(pair.iloc[:, 0], pair.iloc[:, 1])
            ci = res.confidence_interval(0.95)
            assert row[f"effect_{side}"] == pytest.approx(res.statistic, abs=1e-12)
            interval = (row[f"effect_{side}_low"], row[f"effect_{side}_high"])
            assert interval == pytest.approx((ci.low, ci.high), abs=1e-12)
            assert row[f"n_{side}"] == len(pair)
            pg_row = pg.corr(pair.iloc[:, 0], pair.iloc[:, 1]).iloc[0]
            assert row[f"effect_{side}"] == pytest.approx(pg_row["r"], abs=1e-12)
            assert row[f"effect_{side}_low"] == pytest.approx(pg_row["CI95"][0], abs=0.005)
            assert row[f"effect_{side}_high"] == pytest.approx(pg_row["CI95"][1], abs=0.005)
            limits[side] = (res.statistic, ci.low, ci.high)
        (r1, l1, u1), (r2, l2, u2) = limits["cohort"], limits["people"]
        assert row["difference"] == pytest.approx(r1 - r2, abs=1e-12)
        assert row["difference_low"] == pytest.approx(r1 - r2 - np.hypot(r1 - l1, u2 - r2), abs=1e-12)
        assert row["difference_high"] == pytest.approx(r1 - r2 + np.hypot(u1 - r1, r2 - l2), abs=1e-12)
    assert out["n_cohort"].tolist() == [39, 39, 40]


def test_zou_difference_of_independent_correlations_reproduces_the_published_example():
    # Zou (2007), Psychological Methods 12, p. 406: r = .49 (n = 145) against r = .36 (n = 87) gives the
    # 95 % CI (−.087, .359) for ρ₁ − ρ₂ (also the test case of R's cocor package for zou2007).
    assert [round(v, 3) for v in correlation_difference_ci(0.49, 145, 0.36, 87)] == [-0.087, 0.359]
    # Built from each r's own limits, it stays within [−2, 2] (U ≤ u₁ − l₂), where r₁ − r₂ ± z·SE would not.
    assert correlation_difference_ci(0.95, 10, -0.95, 10)[1] <= 2.0
    assert fisher_ci(0.3, 3) == (-1.0, 1.0) and np.isnan(fisher_ci(0.3, 2)[0])


def assert_effects_are_pingouins(out, cohort, people, reference: str, sides=("cohort", "people")) -> None:
    """Each contrast's g on each side is pingouin's on that pair of levels (level − `reference`)."""
    frames = {"cohort": cohort, "people": people}
    for _, row in out.iterrows():
        level = row["contrast"].split(" − ")[0]
        for side in sides:
            assert row[f"effect_{side}"] == pytest.approx(pingouin_g(frames[side], level, reference)[0], abs=1e-12)


def test_more_than_two_levels_contrast_each_with_the_most_frequent_level_among_people():
    # Reference = the people's most frequent level ("b", 40 of them), not the alphabetically first;
    # each g checked against pingouin on that pair of levels.
    rng = np.random.default_rng(2)
    cohort = groups(rng, {"a": 30, "b": 10, "c": 20}, {"a": 0, "b": 1, "c": 3})
    people = groups(rng, {"a": 15, "b": 40, "c": 25}, {"a": 0, "b": 1, "c": 2})
    out = relations(cohort, people, ["gender"], subscales=["S"])
    assert out["contrast"].tolist() == ["a − b", "c − b"]
    assert_effects_are_pingouins(out, cohort, people, "b")


def test_a_level_on_one_side_only_gives_a_note_not_a_number():
    rng = np.random.default_rng(3)
    cohort = groups(rng, {"female": 10, "male": 10, "nonbinary": 5}, {"female": 0, "male": 1, "nonbinary": 2})
    people = groups(rng, {"female": 20, "male": 12}, {"female": 0, "male": 1})
    out = relations(cohort, people, ["gender"], subscales=["S"]).set_index("contrast")
    # Reference: female (most frequent among people). male − female is estimable on both sides.
    assert np.isfinite(out.loc["male − female", ["effect_cohort", "effect_people", "difference"]].astype(float)).all()
    nb = out.loc["nonbinary − female"]
    assert np.isnan(nb["effect_people"]) and np.isnan(nb["difference"]) and np.isnan(nb["difference_low"])
    assert pd.isna(nb["same_sign"]) and pd.isna(nb["agree"])
    assert nb["effect_cohort"] == pytest.approx(pingouin_g(cohort, "nonbinary", "female")[0])   # the side that has it
    assert "'nonbinary' occurs on one side only" in nb["note"] and "people:" not in nb["note"]   # said once
    assert "cohort: female, male, nonbinary" in nb["note"] and "female, male)" in nb["note"]
    # Levels are compared as stripped text, case kept: " male " is "male", "Male" is not.
    padded = relations(cohort, people.assign(gender=" " + people["gender"] + " "), ["gender"], subscales=["S"])
    pd.testing.assert_frame_equal(padded.set_index("contrast"), out)
    cased = relations(cohort, people.assign(gender=people["gender"].str.title()), ["gender"], subscales=["S"])
    assert cased["difference"].isna().all()
    # Labels written differently on the two sides: nothing is compared, and the note says why.
    people_fm = people.assign(gender=people["gender"].map({"female": "F", "male": "M"}))
    out = relations(cohort, people_fm, ["gender"], subscales=["S"])
    assert out["difference"].isna().all()
    assert out["note"].str.contains("share no gender value").all()


def test_not_estimable_cases_are_nan_with_the_reason():
    cohort = pd.DataFrame({"S": [1.0, 2, 3, 4, 5], "C": [2.0] * 5, "group": ["x", "x", "x", "x", "y"],
                           "gender": ["f", "f", "f", "m", "m"], "age": [20.0, 30, np.nan, np.nan, np.nan]})
    people = pd.DataFrame({"S": [1.0, 2, 3, 4, 5, 6], "C": [1.0, 2, 1, 2, 1, 2], "group": list("xxxyyy"),
                           "gender": list("fffmmm"), "age": [20.0, 30, 40, 50, 60, 70]})
    out = relations(cohort, people, ["group", "gender", "age"], subscales=["S", "C"])
    out = out.set_index(["attribute", "subscale"])
    one_y = out.loc[("group", "S")]           # one persona in group y
    assert np.isnan(one_y["effect_cohort"]) and np.isfinite(one_y["effect_people"])
    assert "cohort: 1 with y and a S score: g needs at least 2" in one_y["note"]
    constant = out.loc[("gender", "C")]      # C is 2 for every persona
    assert np.isnan(constant["effect_cohort"]) and "C has no variance within m and within f" in constant["note"]
    two_pairs = out.loc[("age", "S")]
    assert np.isnan(two_pairs["effect_cohort"]) and "r needs at least 3" in two_pairs["note"]
    assert np.isnan(out.loc[("C", "S"), "effect_cohort"]) and "no variance in C" in out.loc[("C", "S"), "note"]
    rest = out.drop(index=[("gender", "S")])    # the one relation estimable on both sides
    assert rest["same_sign"].isna().all() and rest["difference"].isna().all() and (rest["note"] != "").all()


def test_sign_flags():
    # same_sign is NA for an effect of exactly 0; agree needs the people's CI to exclude 0.
    s = [1.0, 2, 3, 1, 2, 3]
    equal = pd.DataFrame({"S": s, "gender": ["f"] * 3 + ["m"] * 3})                     # g = 0
    up = pd.DataFrame({"S": s[:3] + [11.0, 12, 13], "gender": ["f"] * 3 + ["m"] * 3})      # g ≫ 0, CI excludes 0
    down = pd.DataFrame({"S": s[:3] + [-9.0, -8, -7], "gender": ["f"] * 3 + ["m"] * 3})
    noisy = pd.DataFrame({"S": [1.0, 5, 9, 2, 6, 9], "gender": ["f"] * 3 + ["m"] * 3})   # CI includes 0
    flags = lambda c, h: relations(c, h).loc[0, ["same_sign", "agree", "replicated"]].tolist()   # noqa: E731
    assert flags(up, up) == [True, True, True]
    assert flags(down, up) == [False, False, False]
    assert flags(equal, up)[0] is pd.NA and flags(equal, up)[1:] == [False, False]
    assert flags(up, noisy)[0] is True and flags(up, noisy)[1] is pd.NA and flags(up, noisy)[2] is pd.NA
    # The right sign without a CI that excludes 0 agrees but does not replicate.
    assert flags(noisy, up) == [True, True, False]


def test_subscale_pairs_are_subscale_correlations_folded_in_with_the_part_whole_note():
    # The same r as validity.subscale_correlations (pandas-style pairwise Pearson), each pair once, and
    # Z (which holds every item of X) noted as part–whole.
    mini = load_instrument(MINI)
    rng = np.random.default_rng(4)
    raw_c = pd.DataFrame(rng.integers(1, 8, (30, 4)), columns=list("abcd")).astype(float)
    raw_h = pd.DataFrame(rng.integers(1, 8, (50, 4)), columns=list("abcd")).astype(float)
    out = relations(score_wide(mini, raw_c), score_wide(mini, raw_h), instrument=mini)
    assert set(out["kind"]) == {"subscale"}
    old = subscale_correlations(raw_c, raw_h, mini)
    assert list(zip(out["subscale"], out["attribute"])) == list(zip(old["subscale_a"], old["subscale_b"]))
    assert out["effect_cohort"].to_numpy() == pytest.approx(old["r_cohort"].to_numpy())
    assert out["effect_people"].to_numpy() == pytest.approx(old["r_human"].to_numpy())
    notes = out.set_index(["subscale", "attribute"])["note"]
    assert notes[("X", "Z")].startswith("part–whole") and notes[("X", "Y")] == ""


def test_defaults_and_column_errors():
    frame = pd.DataFrame({"PT": [1.0, 2, 3, 4], "EC": [2.0, 1, 4, 3], "gender": ["f", "m", "f", "m"],
                          "survey_weight": [1.0, 2, 1, 2]})
    out = relations(frame, frame.drop(columns="EC"))
    # Shared: PT (numeric → subscale), gender (attribute); the survey weight is neither.
    assert list(zip(out["attribute"], out["subscale"])) == [("gender", "PT")]
    # A code numeric on one side and text on the other is categorical, 1.0 read as "1".
    coded = relations(frame.assign(group=[1.0, 2.0, 1.0, 2.0]), frame.assign(group=["1", "2", "1", "2"]),
                      ["group"], subscales=["PT"]).iloc[0]
    assert (coded["kind"], coded["contrast"]) == ("categorical", "2 − 1") and np.isfinite(coded["difference"])
    with pytest.raises(ValueError, match="not a column of both frames: age"):
        relations(frame, frame, ["age"])
    with pytest.raises(ValueError, match="both as attribute and as subscale"):
        relations(frame, frame, ["PT"], subscales=["PT"])


@pytest.fixture(scope="module")
def briganti() -> pd.DataFrame:
    iri = psyq.load_instrument("iri")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the notice that the codebook beside the file was read
        raw = psyq.human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri)
    return psyq.score_wide(iri, raw).join(raw[["gender"]])


def test_two_random_halves_of_the_people_agree(briganti):
    # Two random halves of 1,973 people are samples of one population: (1) wherever both halves' CIs
    # exclude 0, the two effects have the same sign; (2) women score higher than men on FS, EC and PD
    # (Davis, 1980; Briganti et al., 2018), so g(male − female) < 0 with the CI below 0 in both halves;
    # (3) the true difference is 0, so the 95 % CIs of the differences cover 0 about 95 % of the time
    # (a half of a finite sample against the other has the variance of two independent samples).
    assert len(briganti) == 1973
    covered, total = 0, 0
    for seed in range(60):
        order = np.random.default_rng(seed).permutation(len(briganti))
        a, b = briganti.iloc[order[:986]], briganti.iloc[order[986:]]
        out = relations(a, b, ["gender"])
        assert len(out) == 4 + 6
        shown = (((out["effect_cohort_low"] > 0) | (out["effect_cohort_high"] < 0))
                 & ((out["effect_people_low"] > 0) | (out["effect_people_high"] < 0)))
        assert out.loc[shown, "same_sign"].all()
        women = out[(out["attribute"] == "gender") & out["subscale"].isin(["FS", "EC", "PD"])]
        assert (women["contrast"] == "male − female").all()
        assert (women["effect_cohort_high"] < 0).all() and (women["effect_people_high"] < 0).all()
        covered += int(((out["difference_low"] <= 0) & (out["difference_high"] >= 0)).sum())
        total += len(out)
    assert 0.92 <= covered / total <= 0.98


def test_a_cohort_without_the_relations_agrees_in_sign_by_chance_and_replicates_none(briganti):
    # The people's scores with every column shuffled on its own: no relation is left among these
    # "personas". Their signs agree with the people's about half the time (chance), which is why the
    # scorecard counts an effect only when the cohort's own CI excludes 0 on the people's side: that
    # happens in about 2.5 % of the effects (one tail of a 95 % CI).
    agree, replicated = [], []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        shuffled = briganti.apply(lambda column: column.sample(frac=1, random_state=rng).to_numpy())
        out = relations(shuffled.iloc[:600], briganti, ["gender"])
        found = out[out["agree"].notna()]
        assert len(found) >= 8                      # the people show most of their 10 relations
        agree.extend(found["agree"].astype(bool))
        replicated.extend(found["replicated"].astype(bool))
    assert 0.35 <= np.mean(agree) <= 0.65
    assert np.mean(replicated) <= 0.06


def test_power_is_the_cohorts_chance_to_show_the_peoples_effect(briganti):
    # Independent: statsmodels' NormalIndPower for g (two groups of the cohort's sizes; its SE
    # √(1/n₁ + 1/n₂) leaves out the g²/2N term of the cohort's own SE, which psyq uses, hence the
    # tolerance of .05) and Fisher's z written out for r.
    from statsmodels.stats.power import NormalIndPower
    cohort = briganti.sample(60, random_state=4)
    out = relations(cohort, briganti, ["gender"]).set_index(["attribute", "subscale"])
    g = out.loc[("gender", "EC")]
    n_male = int((cohort["gender"] == "male").sum())
    n_female = len(cohort) - n_male
    expected = NormalIndPower().power(abs(g["effect_people"]), nobs1=n_male, ratio=n_female / n_male, alpha=0.05)
    assert g["power"] == pytest.approx(expected, abs=0.05) and g["power"] < expected
    r = out.loc[("FS", "PT")] if ("FS", "PT") in out.index else out.loc[("PT", "FS")]
    shift = abs(np.arctanh(r["effect_people"])) * np.sqrt(r["n_cohort"] - 3)
    assert r["power"] == pytest.approx(stats.norm.cdf(shift - Z975) + stats.norm.cdf(-shift - Z975), abs=1e-9)
    # More respondents, more power to show the same effect.
    bigger = relations(briganti.sample(600, random_state=4), briganti, ["gender"]).set_index(["attribute", "subscale"])
    assert bigger.loc[("gender", "EC"), "power"] > g["power"]


def test_reference_level_is_the_peoples_most_frequent_ties_broken_by_the_first_as_text():
    # Guards the choice of the reference with three or more levels: the level most frequent among
    # people, ties broken by the first as text (sorted), whatever order the levels are first seen in
    # and whatever the cohort's counts. The expected reference is found here by counting by hand; each
    # g is checked against pingouin on that pair of levels.
    rng = np.random.default_rng(7)
    # A tie among people between "c" (seen first) and "b" (first as text); "a" (first as text of all)
    # is rarer; the cohort's most frequent level is "a".
    people = groups(rng, {"c": 20, "b": 20, "a": 10}, {"c": 2, "b": 1, "a": 0})
    cohort = groups(rng, {"a": 30, "b": 10, "c": 12}, {"a": 0, "b": 1, "c": 3})
    assert people["gender"].iloc[0] == "c"
    counts = {level: int((people["gender"] == level).sum()) for level in ("a", "b", "c")}
    tied = [level for level, n in counts.items() if n == max(counts.values())]
    assert tied == ["b", "c"] and sorted(tied)[0] == "b"
    out = relations(cohort, people, ["gender"], subscales=["S"])
    assert out["contrast"].tolist() == ["a − b", "c − b"]
    assert_effects_are_pingouins(out, cohort, people, "b")
    # The people's single most frequent level "c" is the last as text and seen last: still the reference.
    people = groups(rng, {"a": 12, "b": 15, "c": 25}, {"a": 0, "b": 1, "c": 2})
    out = relations(cohort, people, ["gender"], subscales=["S"])
    assert out["contrast"].tolist() == ["a − c", "b − c"]
    assert_effects_are_pingouins(out, cohort, people, "c", sides=("people",))
