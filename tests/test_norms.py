"""Norm comparison: Welch t, Hedges' g, TOST, pooled norms, group matching and the norm table.

Expected values come from formulas written out in this file, from pingouin and scipy run on raw
data built to have exactly the given means and SDs, from a published table, or from arithmetic
worked out in the comments. None is produced by running psyq.analysis.statistics.norms itself.
"""

from math import sqrt
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from psyq.analysis.statistics.norms import (COLUMNS, NormStats, compare_with_norms, hedges_g, match_group, norm_stats,
    pool_groups, respondent_z, tost_from_summary, welch_from_summary)
from psyq.analysis.report.readings import norm_reading, norm_readings
from psyq import load_instrument
from psyq.engine.design.instrument import NormGroup, NormSample, NormScore

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-10

# (m1, s1, n1, m2, s2, n2): small and large samples, equal and very unequal SDs, either sign.
CASES = [
    (21.0, 3.0, 12, 21.67, 3.83, 582),
    (10.0, 2.0, 20, 12.0, 4.0, 30),
    (5.2, 0.4, 5, 4.1, 2.5, 9),
    (17.37, 4.82, 300, 17.37, 4.82, 300),
    (-3.0, 1.5, 40, 0.5, 0.9, 8),
]


@pytest.fixture(scope="module")
def iri():
    return load_instrument(ROOT / "instruments" / "iri.yaml")


def davis(instrument):
    return next(s for s in instrument.norms if s.id == "davis1980")


@pytest.fixture(scope="module")
def iri_davis(iri):
    """The IRI with only its davis1980 sample: the tests written for one sample."""
    return iri.model_copy(update={"norms": [davis(iri)]})


@pytest.fixture(scope="module")
def bes():
    return load_instrument(ROOT / "instruments" / "bes.yaml")


@pytest.fixture(scope="module")
def mini():
    return load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml")


def exact_sample(mean: float, sd: float, n: int, seed: int) -> np.ndarray:
    """n normal draws standardised (ddof=1) and rescaled: mean and SD are exactly as given."""
    z = np.random.default_rng(seed).normal(size=n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)


def hand_welch(m1, s1, n1, m2, s2, n2):
    # Welch (1947): t = (m1 - m2) / sqrt(s1²/n1 + s2²/n2);
    # Satterthwaite (1946): df = (v1 + v2)² / (v1²/(n1-1) + v2²/(n2-1)), v = s²/n.
    v1, v2 = s1**2 / n1, s2**2 / n2
    t = (m1 - m2) / sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    return t, df, 2 * stats.t.sf(abs(t), df)


def hand_g(m1, s1, n1, m2, s2, n2, confidence=0.95):
    # Borenstein et al. (2009, ch. 4): S_within² = ((n1-1)s1² + (n2-1)s2²) / (n1+n2-2),
    # d = (m1-m2)/S_within, V_d = (n1+n2)/(n1 n2) + d²/(2(n1+n2)), J = 1 - 3/(4 df - 1),
    # g = J d, V_g = J² V_d, CI = g ± z SE_g.
    df = n1 + n2 - 2
    d = (m1 - m2) / sqrt(((n1 - 1) * s1**2 + (n2 - 1) * s2**2) / df)
    j = 1 - 3 / (4 * df - 1)
    se = j * sqrt((n1 + n2) / (n1 * n2) + d**2 / (2 * (n1 + n2)))
    z = stats.norm.ppf(1 - (1 - confidence) / 2)
    return j * d, j * d - z * se, j * d + z * se


# ------------------------------------------------------------------------------------------
# Welch t


@pytest.mark.parametrize("case", CASES)
def test_welch_matches_hand_formula(case):
    assert welch_from_summary(*case) == pytest.approx(hand_welch(*case), abs=TOL, rel=TOL)


@pytest.mark.parametrize("i, case", list(enumerate(CASES)))
def test_welch_matches_pingouin_and_scipy_on_raw_data(i, case):
    m1, s1, n1, m2, s2, n2 = case
    x, y = exact_sample(m1, s1, n1, seed=i), exact_sample(m2, s2, n2, seed=100 + i)
    t, df, p = welch_from_summary(*case)
    ours = pg.ttest(x, y, correction=True)
    assert (t, df, p) == pytest.approx(
        (ours.at["T_test", "T"], ours.at["T_test", "dof"], ours.at["T_test", "p_val"]), abs=TOL)
    theirs = stats.ttest_ind(x, y, equal_var=False)
    assert (t, df, p) == pytest.approx((theirs.statistic, theirs.df, theirs.pvalue), abs=TOL)


def test_student_option_matches_pingouin_on_raw_data():
    m1, s1, n1, m2, s2, n2 = CASES[2]
    x, y = exact_sample(m1, s1, n1, seed=7), exact_sample(m2, s2, n2, seed=8)
    t, df, p = welch_from_summary(*CASES[2], equal_var=True)
    res = pg.ttest(x, y, correction=False)
    assert (t, df, p) == pytest.approx(
        (res.at["T_test", "T"], res.at["T_test", "dof"], res.at["T_test", "p_val"]), abs=TOL)


# ------------------------------------------------------------------------------------------
# A published table


def test_reproduces_zhao_2020_table_2_sex_row():
    # Zhao, Q., Ren, Q., Sun, Y., Wan, L., & Hu, L. (2020). Impact factors of empathy in
    # Mainland Chinese youth. Frontiers in Psychology, 11, 688. doi:10.3389/fpsyg.2020.00688.
    # Table 2, "Comparison of self-report IRI-EC between subgroups of five demographic
    # categories", row Sex (https://pmc.ncbi.nlm.nih.gov/articles/PMC7248207/table/T2):
    #   Female (386) M 17.16 SD 3.40; Male (206) M 16.53 SD 3.25;
    #   df 590, t 2.18, p 0.030, d 0.19, 95% CI [0.06, 1.20].
    # df = 386 + 206 - 2 = 590 shows a Student (pooled-variance) test, so equal_var=True.
    female, male = (17.16, 3.40, 386), (16.53, 3.25, 206)
    t, df, p = welch_from_summary(*female, *male, equal_var=True)
    assert df == 590
    assert round(t, 2) == 2.18
    assert round(p, 3) == 0.030
    g, low, high = hedges_g(*female, *male)
    assert round(g, 2) == 0.19                       # d = g / J = 0.1881 → 0.19 as well
    assert round(g / (1 - 3 / (4 * 590 - 1)), 2) == 0.19
    # The printed CI is of the raw difference 0.63 under the pooled SD (Student):
    # s_p = sqrt((385·3.40² + 205·3.25²)/590) = 3.3484, SE = s_p·sqrt(1/386 + 1/206) = 0.2888,
    # 0.63 ± 1.9640·0.2888 = 0.063 to 1.197 → [0.06, 1.20].
    sp = sqrt((385 * 3.40**2 + 205 * 3.25**2) / 590)
    half = stats.t.ppf(0.975, 590) * sp * sqrt(1 / 386 + 1 / 206)
    assert (round(0.63 - half, 2), round(0.63 + half, 2)) == (0.06, 1.20)
    # Welch's version of the same comparison is not what the table printed.
    assert round(welch_from_summary(*female, *male)[0], 2) == 2.21


# ------------------------------------------------------------------------------------------
# Hedges' g


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("confidence", [0.95, 0.90])
def test_hedges_g_matches_hand_formula(case, confidence):
    assert hedges_g(*case, confidence=confidence) == pytest.approx(
        hand_g(*case, confidence=confidence), abs=TOL)


@pytest.mark.parametrize("i, case", list(enumerate(CASES)))
def test_hedges_g_matches_pingouin(i, case):
    m1, s1, n1, m2, s2, n2 = case
    x, y = exact_sample(m1, s1, n1, seed=i), exact_sample(m2, s2, n2, seed=100 + i)
    g, low, high = hedges_g(*case)
    assert g == pytest.approx(pg.compute_effsize(x, y, eftype="hedges"), abs=TOL)
    # pingouin.compute_esci gives d ± t(n1+n2-2)·SE_d with SE_d of Hedges & Olkin (1985, p. 86);
    # ours is g ± z·J·SE_d (Borenstein et al. 2009), so the standard errors must agree.
    d = pg.compute_effsize(x, y, eftype="cohen")
    pg_low, pg_high = pg.compute_esci(d, nx=n1, ny=n2, eftype="cohen", decimals=15)
    se_d = (pg_high - pg_low) / 2 / stats.t.ppf(0.975, n1 + n2 - 2)
    j = 1 - 3 / (4 * (n1 + n2 - 2) - 1)
    assert (high - low) / 2 / stats.norm.ppf(0.975) == pytest.approx(j * se_d, abs=TOL)
    assert (low + high) / 2 == pytest.approx(g, abs=TOL)


# ------------------------------------------------------------------------------------------
# TOST


def hand_tost(m1, s1, n1, m2, s2, n2, bound):
    delta = bound * s2
    se = sqrt(s1**2 / n1 + s2**2 / n2)
    _, df, _ = hand_welch(m1, s1, n1, m2, s2, n2)
    p_low = stats.t.sf((m1 - m2 + delta) / se, df)     # H0: diff <= -delta
    p_high = stats.t.cdf((m1 - m2 - delta) / se, df)   # H0: diff >= +delta
    return max(p_low, p_high)


@pytest.mark.parametrize("case, equivalent", [
    # 0.05 norm SD apart, 300 personas vs 1,000 people: well inside ±0.3 SD.
    ((20.2, 4.0, 300, 20.0, 4.0, 1000), True),
    # 0.5 norm SD apart: outside the margin whatever the n.
    ((22.0, 4.0, 300, 20.0, 4.0, 1000), False),
    # Identical means but only 4 personas: too imprecise to show equivalence.
    ((20.0, 4.0, 4, 20.0, 4.0, 1000), False),
    # Identical means, personas far more alike than people (sd 0.5): equivalent.
    ((20.0, 0.5, 30, 20.0, 4.0, 500), True),
])
def test_tost_cases(case, equivalent):
    p, ok = tost_from_summary(*case, bound=0.3)
    assert ok is equivalent
    assert p == pytest.approx(hand_tost(*case, bound=0.3), abs=TOL)
    m1, s1, n1, m2, s2, n2 = case
    x, y = exact_sample(m1, s1, n1, seed=n1), exact_sample(m2, s2, n2, seed=n2 + 1)
    theirs = pg.tost(x, y, bound=0.3 * s2, correction=True).at["TOST", "pval"]
    assert p == pytest.approx(theirs, abs=TOL)


# ------------------------------------------------------------------------------------------
# Norm statistics


def test_pooled_davis_1980_norms(iri):
    # Men n 579, women n 582, N = 1,161 (worked with plain arithmetic, not with psyq.analysis.statistics.norms):
    # PT: mean = (579·16.78 + 582·17.96) / 1161 = (9715.62 + 10452.72) / 1161 = 17.3715;
    #     within SS = 578·4.72² + 581·4.85² = 12876.92 + 13666.57 = 26543.49;
    #     between SS = 579·(16.78-17.3715)² + 582·(17.96-17.3715)² = 202.59 + 201.55 = 404.14;
    #     SD = sqrt(26947.63 / 1160) = sqrt(23.2307) = 4.8198 → 17.37 (4.82).
    # EC: mean = (579·19.04 + 582·21.67) / 1161 = (11024.16 + 12611.94) / 1161 = 20.3584;
    #     within SS = 578·4.21² + 581·3.83² = 10244.53 + 8522.63 = 18767.16;
    #     between SS = 1006.40 + 1001.21 = 2007.62; SD = sqrt(20774.78 / 1160) = 4.2319
    #     → 20.36 (4.23).
    sample = davis(iri)
    pt, ec = norm_stats(iri, sample, "PT", None), norm_stats(iri, sample, "EC", None)
    assert (round(pt.mean, 2), round(pt.sd, 2), pt.n) == (17.37, 4.82, 1161)
    assert (round(ec.mean, 2), round(ec.sd, 2), ec.n) == (20.36, 4.23, 1161)
    assert pt.mean == pytest.approx(20168.34 / 1161, abs=1e-9)
    assert pt.sd == pytest.approx(sqrt((26543.4877 + 404.1414015503874) / 1160), abs=1e-9)
    assert ec.derived and ec.group_id == "pooled" and ec.sample_id == "davis1980"


def test_pool_groups_three_groups():
    # StatsToDo "Combine Means and SDs Into One Group" example: n 10/20/15, means 11.8/15.3/8.4,
    # SDs 2.4/3.2/4.1 → combined n 45, mean 12.2222, SD 4.5028.
    mean, sd, n = pool_groups([10, 20, 15], [11.8, 15.3, 8.4], [2.4, 3.2, 4.1])
    assert (n, round(mean, 4), round(sd, 4)) == (45, 12.2222, 4.5028)


def test_published_groups_and_whole_sample_group(iri):
    sample = davis(iri)
    assert norm_stats(iri, sample, "EC", "women") == NormStats(21.67, 3.83, 582, "davis1980",
                                                               "women", False)
    # A group with an empty `where` is the published whole-sample norm: used as is.
    whole = sample.model_copy(update={"groups": [
        *sample.groups, NormGroup(id="all", n=1161, scores={"EC": NormScore(mean=20.0, sd=4.0)})]})
    assert norm_stats(iri, whole, "EC", None) == NormStats(20.0, 4.0, 1161, "davis1980", "all", False)
    # ... but only for the subscales it has; the others are pooled from the groups.
    assert norm_stats(iri, whole, "PT", None).derived
    with pytest.raises(KeyError):
        norm_stats(iri, sample, "EC", "nobody")
    with pytest.raises(KeyError):
        norm_stats(iri, sample, "XX", "women")


def item_mean_sample() -> NormSample:
    # Item-mean norms (0-4 metric per item): women EC 3.0 (0.5), n 100.
    return NormSample(id="itemmean", citation="davis1980", table="made up for the test",
                      population="test", n=100, metric="mean", verified="source-table", verification="test",
                      groups=[NormGroup(id="women", where={"gender": "female"}, n=100,
                                        scores={"EC": NormScore(mean=3.0, sd=0.5)})])


def test_metric_conversion(iri, mini):
    # EC is a 7-item sum: item mean 3.0 (0.5) → sum 21.0 (3.5).
    got = norm_stats(iri, item_mean_sample(), "EC", "women")
    assert (got.mean, got.sd) == pytest.approx((21.0, 3.5))
    # The other way: mini's Y is the mean of 3 items; a summed norm 12 (3) → mean 4 (1).
    summed = NormSample(id="s", citation="psyq", table="t", population="p", n=10, metric="sum",
                        verified="raw-data", verification="v", groups=[NormGroup(id="g", n=10, where={"x": 1},
                                                            scores={"Y": NormScore(mean=12, sd=3)})])
    got = norm_stats(mini, summed, "Y", "g")
    assert (got.mean, got.sd) == pytest.approx((4.0, 1.0))


def test_match_group(iri):
    sample = davis(iri)
    assert match_group(sample, {"gender": "female", "age": 30}) == "women"
    assert match_group(sample, {"gender": " MALE "}) == "men"
    assert match_group(sample, {"gender": "non-binary"}) is None
    assert match_group(sample, {}) is None                       # the baseline respondent
    assert match_group(sample, {"gender": float("nan")}) is None
    assert match_group(sample, {"gender": None}) is None
    detailed = sample.model_copy(update={"groups": [
        NormGroup(id="all", n=50, scores={"EC": NormScore(mean=20, sd=4)}),
        NormGroup(id="young", where={"age": 30}, n=20, scores={"EC": NormScore(mean=20, sd=4)}),
        NormGroup(id="young_women", where={"age": 30, "gender": "Female", "student": True}, n=10,
                  scores={"EC": NormScore(mean=20, sd=4)})]})
    # Empty `where` is never matched; the most specific group wins; 30.0 == 30, True == "true".
    assert match_group(detailed, {"age": 30.0, "gender": "female", "student": "TRUE"}) == "young_women"
    assert match_group(detailed, {"age": 30, "gender": "male"}) == "young"
    assert match_group(detailed, {"age": 31}) is None


# ------------------------------------------------------------------------------------------
# The norm table


def scores_table(rows):
    """score_answers-shaped long table from (backend, respondent, gender, repeat, instrument,
    subscale, score) tuples."""
    frame = pd.DataFrame(rows, columns=["backend_id", "respondent_id", "gender", "repeat",
                                        "instrument", "subscale", "score"])
    frame.insert(1, "model", "m-" + frame["backend_id"])
    frame.insert(5, "age", 40)
    frame["n_answered"], frame["n_items"] = 7, 7
    return frame


EC_ROWS = [
    # women: f1 (20, 22) → 21; f2 (24, 24) → 24; f3 (18, missing) → 18.
    ("b1", "f1", "female", 0, "iri", "EC", 20), ("b1", "f1", "female", 1, "iri", "EC", 22),
    ("b1", "f2", "female", 0, "iri", "EC", 24), ("b1", "f2", "female", 1, "iri", "EC", 24),
    ("b1", "f3", "Female", 0, "iri", "EC", 18), ("b1", "f3", "Female", 1, "iri", "EC", None),
    # men: 16, 19, 21.
    ("b1", "m1", "male", 0, "iri", "EC", 15), ("b1", "m1", "male", 1, "iri", "EC", 17),
    ("b1", "m2", "male", 0, "iri", "EC", 19), ("b1", "m2", "male", 1, "iri", "EC", 19),
    ("b1", "m3", "male", 0, "iri", "EC", 22), ("b1", "m3", "male", 1, "iri", "EC", 20),
    # unmatched: non-binary 25, baseline (no gender) 22.
    ("b1", "nb", "non-binary", 0, "iri", "EC", 25), ("b1", "nb", "non-binary", 1, "iri", "EC", 25),
    ("b1", "baseline", None, 0, "iri", "EC", 23), ("b1", "baseline", None, 1, "iri", "EC", 21),
    # A second backend with one woman only.
    ("b2", "f1", "female", 0, "iri", "EC", 20),
    # An instrument without norms is skipped.
    ("b1", "f1", "female", 0, "bes", "total", 70),
]


@pytest.fixture
def ec_table(iri_davis, bes):
    return compare_with_norms(scores_table(EC_ROWS), {"iri": iri_davis, "bes": bes})


def test_table_rows_and_pooled_row(ec_table):
    assert list(ec_table.columns) == COLUMNS
    assert ec_table[["backend_id", "subscale", "norm_group", "n"]].values.tolist() == [
        ["b1", "EC", "men", 3], ["b1", "EC", "women", 3], ["b1", "EC", "pooled", 2],
        ["b2", "EC", "women", 1]]
    women, pooled = ec_table.iloc[1], ec_table.iloc[2]
    # women [21, 24, 18]: mean 21, SD sqrt((0 + 9 + 9) / 2) = 3.
    assert (women["mean"], women["sd"]) == pytest.approx((21.0, 3.0))
    assert (women["norm_mean"], women["norm_sd"], women["norm_n"]) == (21.67, 3.83, 582)
    assert not women["norm_derived"]
    assert women["diff"] == pytest.approx(21 - 21.67)
    assert women["sd_ratio"] == pytest.approx(3 / 3.83)
    t, df, p = hand_welch(21.0, 3.0, 3, 21.67, 3.83, 582)
    assert (women["t"], women["df"], women["p"]) == pytest.approx((t, df, p), abs=TOL)
    assert (women["g"], women["g_low"], women["g_high"]) == pytest.approx(
        hand_g(21.0, 3.0, 3, 21.67, 3.83, 582), abs=TOL)
    assert women["tost_p"] == pytest.approx(hand_tost(21.0, 3.0, 3, 21.67, 3.83, 582, 0.3), abs=TOL)
    assert women["equivalent"] == (women["tost_p"] < 0.05)
    # pooled: non-binary 25 and baseline (23 + 21)/2 = 22 → mean 23.5, SD sqrt(4.5),
    # against Davis men + women pooled: EC 20.3584 (4.2319), N 1,161, derived by psyq.
    assert (pooled["mean"], pooled["sd"]) == pytest.approx((23.5, sqrt(4.5)))
    assert (pooled["norm_mean"], pooled["norm_sd"], pooled["norm_n"]) == pytest.approx(
        (23636.1 / 1161, sqrt(20774.7775201550427 / 1160), 1161))
    assert pooled["norm_derived"]
    # men [16, 19, 21]: mean 56/3.
    assert ec_table.iloc[0]["mean"] == pytest.approx(56 / 3)


def test_groups_of_one_get_no_statistics(ec_table):
    one = ec_table.iloc[3]
    assert one["mean"] == 20 and np.isnan(one["sd"])
    assert all(np.isnan(one[c]) for c in ["t", "df", "p", "p_adj", "g", "g_low", "g_high",
                                          "tost_p", "sd_ratio"])
    assert pd.isna(one["equivalent"])
    assert norm_readings(ec_table, bound=0.3)[3] == ("EC: 1 respondent compared with the davis1980 norm for women; too few for a test"
                              " — norms unverified.")


@pytest.mark.parametrize("method", ["holm", "fdr_bh"])
def test_multiplicity_correction_over_the_whole_table(iri_davis, bes, method):
    iri = iri_davis
    rows = EC_ROWS + [(b, r, gnd, rep, "iri", "PT", s - 3) for b, r, gnd, rep, inst, sub, s in EC_ROWS
                      if inst == "iri" and s is not None]
    table = compare_with_norms(scores_table(rows), {"iri": iri, "bes": bes}, correction=method)
    tested = table["p"].notna()
    assert tested.sum() == 6
    expected = multipletests(table.loc[tested, "p"], alpha=0.05, method=method)[1]
    assert table.loc[tested, "p_adj"].to_numpy() == pytest.approx(expected, abs=TOL)
    assert table.loc[~tested, "p_adj"].isna().all()
    label = {"holm": "Holm p", "fdr_bh": "BH p"}[method]
    assert all(label in text for text, was_tested in zip(norm_readings(table, bound=0.3, correction=method), tested)
               if was_tested)
    with pytest.raises(ValueError):
        compare_with_norms(scores_table(rows), {"iri": iri, "bes": bes}, correction="bonferroni")


def test_norms_on_the_item_mean_metric_are_converted(iri):
    two = iri.model_copy(update={"norms": [*iri.norms, item_mean_sample()]})
    table = compare_with_norms(scores_table(EC_ROWS[:6]), {"iri": two}, sample_id="itemmean")
    assert table["norm_sample"].tolist() == ["itemmean"]
    assert (table.at[0, "norm_mean"], table.at[0, "norm_sd"]) == pytest.approx((21.0, 3.5))
    with pytest.raises(KeyError):
        compare_with_norms(scores_table(EC_ROWS[:6]), {"iri": two}, sample_id="nope")


def test_reading_text():
    assert norm_reading("EC", "women", 40, -1.2, -1.62, -0.78, 0.00002, 0.999, False, bound=0.3) == (
        "EC is 1.2 SD below the norm for women (g = −1.20, 95 % CI −1.62 to −0.78, Holm p < .001); "
        "equivalence within ±0.3 SD not shown (TOST p = .999).")
    assert norm_reading("PT", "pooled", 200, 0.031, -0.1, 0.162, 1.0, 0.0004, True, bound=0.3,
                        correction="fdr_bh") == (
        "PT is within 0.05 SD of the pooled norm (g = 0.03, 95 % CI −0.10 to 0.16, BH p = 1.000); "
        "equivalent within ±0.3 SD (TOST p < .001).")


def test_reading_of_a_computed_row(ec_table):
    # women (see test_table_rows_and_pooled_row): hand_g → g −0.1748, CI −1.308 to 0.958;
    # hand_tost → .4042. Holm over the three tested rows of b1 (Welch p .2818, .7366, .8219):
    # women's .8219 is the largest → min(1, max(.2818·3, .7366·2, .8219)) = 1.
    assert norm_readings(ec_table, bound=0.3)[1] == (
        "EC is 0.2 SD below the davis1980 norm for women (g = −0.17, 95 % CI −1.31 to 0.96, Holm p = 1.000); "
        "equivalence within ±0.3 SD not shown (TOST p = .404) — norms unverified.")


def test_respondent_z(iri_davis, bes):
    scores = scores_table(EC_ROWS)
    got = respondent_z(scores, {"iri": iri_davis, "bes": bes})
    assert list(got.columns) == list(scores.columns) + ["norm_sample", "norm_verified", "norm_group", "z",
                                                        "percentile"]
    assert len(got) == len(scores)          # one norm sample: one row per score
    f1 = got.iloc[0]          # woman, score 20 against 21.67 (3.83)
    assert f1["norm_group"] == "women"
    assert f1["z"] == pytest.approx((20 - 21.67) / 3.83)
    assert f1["percentile"] == pytest.approx(100 * stats.norm.cdf((20 - 21.67) / 3.83))
    base = got[got["respondent_id"] == "baseline"].iloc[0]   # score 23 against the pooled norm
    assert base["norm_group"] == "pooled"
    assert base["z"] == pytest.approx((23 - 23636.1 / 1161) / sqrt(20774.7775201550427 / 1160))
    assert got[got["respondent_id"] == "nb"]["norm_group"].eq("pooled").all()
    missing = got[got["instrument"] == "bes"].iloc[0]
    assert pd.isna(missing["norm_group"]) and np.isnan(missing["z"]) and np.isnan(missing["percentile"])
    assert np.isnan(got.iloc[5]["z"])                      # a missing score stays missing
