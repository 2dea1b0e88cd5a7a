"""Prediction-powered inference (psyq.analysis.statistics.standin.prediction_powered).

Checked against ppi_py 0.2.3 (PyPI ``ppi-python``, the authors' implementation of Angelopoulos et
al., 2023, Science 382:669, and PPI++, arXiv:2311.01453): point estimates, power-tuned CIs and the
classical CI, on the 1,973 Briganti people's IRI scores with simulated twins. Coverage on 1,000
simulated data sets with biased twins; the sample-size planning against the variance formula
written out here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import psyq
from psyq.analysis.statistics.standin.prediction_powered import _ppi_mean, people_needed, prediction_powered

SUBSCALES = ["PT", "FS", "EC", "PD"]
Z = stats.norm.ppf(0.975)
N_PEOPLE, N_OTHER = 200, 1500


@pytest.fixture(scope="module")
def ppi():
    import ppi_py   # slow to import (about 2 s): once per module
    return ppi_py


@pytest.fixture(scope="module")
def briganti() -> pd.DataFrame:
    """The 1,973 people's IRI scores (score_wide) with their gender."""
    inst = psyq.load_instrument("iri")
    answers = psyq.human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(inst)
    return psyq.score_wide(inst, answers).assign(gender=answers["gender"])


def twins_of(scores: pd.DataFrame, rng: np.random.Generator, slope=0.6, noise=3.0, shift=1.5) -> pd.DataFrame:
    """Twins: slope·Y + noise + shift per subscale (biased, informative), the person's gender kept."""
    made = scores[SUBSCALES] * slope + rng.normal(0, noise, (len(scores), len(SUBSCALES))) + shift
    return made.assign(gender=scores["gender"])


@pytest.fixture(scope="module")
def design(briganti):
    """200 people with their twins, and the twins of 1,500 other people (whose people are not used)."""
    rng = np.random.default_rng(2023)
    twins = twins_of(briganti, rng)
    order = rng.permutation(briganti.index)
    measured, others = order[:N_PEOPLE], order[N_PEOPLE:N_PEOPLE + N_OTHER]
    return briganti.loc[measured], twins.loc[measured], twins.loc[others]


# --- 1. against ppi_py ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("slope, noise, lam_range", [(0.6, 3.0, (0.5, 0.9)),    # λ tuned inside (0, 1)
                                                     (0.5, 0.0, (1, 1)),        # exact twins: λ clipped to 1
                                                     (-0.6, 3.0, (0, 0))])      # twins against: λ clipped to 0
def test_estimates_and_cis_equal_ppi_py(ppi, briganti, design, slope, noise, lam_range):
    """ppi_py's ppi_mean_pointestimate / ppi_mean_ci (lam=None: power-tuned) and classical_mean_ci on
    the same arrays give the same numbers to 1e-6."""
    people, _, other_people = design
    made = twins_of(briganti, np.random.default_rng(7), slope=slope, noise=noise)
    twins, other = made.loc[people.index], made.loc[other_people.index]
    # the twins in another order, with a twin whose person is absent: alignment is by id
    shuffled = pd.concat([twins.sample(frac=1, random_state=1),
                          pd.DataFrame({s: [0.0] for s in SUBSCALES}, index=["nobody"])])
    result = prediction_powered(people, shuffled, other).set_index("subscale")
    assert list(result.index) == SUBSCALES          # gender is an attribute, not a score
    for sub in SUBSCALES:
        y, f, f_other = people[sub].to_numpy(), twins[sub].to_numpy(), other[sub].to_numpy()
        row = result.loc[sub]
        low, high = ppi.ppi_mean_ci(y, f, f_other, alpha=0.05)
        assert row["estimate"] == pytest.approx(ppi.ppi_mean_pointestimate(y, f, f_other).item(), abs=1e-6)
        assert row["ci_low"] == pytest.approx(low.item(), abs=1e-6)
        assert row["ci_high"] == pytest.approx(high.item(), abs=1e-6)
        c_low, c_high = ppi.classical_mean_ci(y, alpha=0.05)
        assert row["classical_low"] == pytest.approx(c_low, abs=1e-6)
        assert row["classical_high"] == pytest.approx(c_high, abs=1e-6)
        assert row["classical_estimate"] == pytest.approx(y.mean(), abs=1e-9)
        # λ is the one ppi_py's point estimate uses: λ·mean(f̃) + mean(Y − λf) with it gives the estimate
        lam = row["lambda"]
        assert lam_range[0] <= lam <= lam_range[1]
        assert ppi.ppi_mean_pointestimate(y, f, f_other, lam=lam).item() == pytest.approx(row["estimate"], abs=1e-9)
        assert (row["n"], row["N"], row["dropped"], row["note"]) == (N_PEOPLE, N_OTHER, 0, "")


def test_missing_scores_and_unmatched_people_are_dropped_per_subscale(ppi, design):
    """Per subscale only the pairs with both scores (and the other twins with a score) are used, as
    ppi_py gives on the arrays filtered by hand; `dropped` counts the people left out."""
    people, twins, other = (frame.copy() for frame in design)
    people.iloc[:5, people.columns.get_loc("PT")] = np.nan          # 5 people without PT
    twins.iloc[3:10, twins.columns.get_loc("PT")] = np.nan          # 7 twins without PT (2 overlapping)
    twins = twins.drop(twins.index[-4:])                             # 4 people without a twin
    other.iloc[:11, other.columns.get_loc("PT")] = np.nan            # 11 other twins without PT
    row = prediction_powered(people, twins, other).set_index("subscale").loc["PT"]
    both = people[["PT"]].join(twins[["PT"]].add_suffix("_twin"), how="inner").dropna()
    assert len(both) == N_PEOPLE - 10 - 4
    y, f, f_other = both["PT"].to_numpy(), both["PT_twin"].to_numpy(), other["PT"].dropna().to_numpy()
    low, high = ppi.ppi_mean_ci(y, f, f_other, alpha=0.05)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low.item(), high.item()), abs=1e-6)
    assert (row["n"], row["N"], row["dropped"]) == (N_PEOPLE - 14, N_OTHER - 11, 14)


# --- 2. coverage ------------------------------------------------------------------------------------------------

def test_coverage_with_biased_twins():
    """4,000 simulated data sets with a known people's mean and twins f = 0.5·Y + 3 + noise (their
    own mean is far off): the 95 % PPI CI covers the people's mean in 94–96 % of them (not wider
    than it needs: a binomial SD is 0.35 points; with 1,000 sets, 0.7, the 94 % bound would be
    missed by chance about one seed in ten), while the twins' mean alone almost never does (the
    bias is real and corrected)."""
    rng = np.random.default_rng(11)
    sets, n, big_n = 4000, 200, 1500
    shape, scale = 9.0, 2.0                                     # Y ~ Gamma: skewed, mean 18
    true_mean = shape * scale
    y = rng.gamma(shape, scale, (sets, n + big_n))
    f = 0.5 * y + 3 + rng.normal(0, 3.0, y.shape)               # mean 12, not 18; λ about 0.87
    core = _ppi_mean(y[:, :n], f[:, :n], f[:, n:])
    covered = np.abs(core["estimate"] - true_mean) <= Z * core["se"]
    assert 0.94 <= covered.mean() <= 0.96
    twins_alone = np.abs(f[:, n:].mean(axis=1) - true_mean) <= Z * f[:, n:].std(axis=1) / np.sqrt(big_n)
    assert twins_alone.mean() < 0.01
    # the public function computes the same thing (it is this core, per subscale)
    row = prediction_powered(pd.DataFrame({"S": y[0, :n]}), pd.DataFrame({"S": f[0, :n]}),
                             pd.DataFrame({"S": f[0, n:]}, index=range(n, n + big_n))).iloc[0]
    assert row["estimate"] == pytest.approx(core["estimate"][0], abs=1e-9)
    assert row["ci_high"] - row["estimate"] == pytest.approx(Z * core["se"][0], abs=1e-9)


# --- 3. effective n ---------------------------------------------------------------------------------------------

def test_effective_n_larger_with_informative_twins_about_n_with_noise(briganti, design):
    """effective_n = n · (classical width / PPI width)², from the CI columns: above n, with a PPI CI
    narrower than the classical one, when twins track their people; about n (the CI about as wide)
    when twins are noise independent of their people."""
    people, twins, other = design
    informative = prediction_powered(people, twins, other)
    ratio = (informative["classical_high"] - informative["classical_low"]) / (informative["ci_high"] - informative["ci_low"])
    assert informative["effective_n"].to_numpy() == pytest.approx(N_PEOPLE * ratio.to_numpy() ** 2, rel=1e-9)
    assert (informative["effective_n"] > 1.5 * N_PEOPLE).all()
    assert (informative["ci_high"] - informative["ci_low"] < informative["classical_high"] - informative["classical_low"]).all()

    rng = np.random.default_rng(5)
    noise = pd.DataFrame(rng.normal(15, 4, (len(briganti), 4)), index=briganti.index, columns=SUBSCALES)
    useless = prediction_powered(people, noise.loc[people.index], noise.loc[other.index])
    assert useless["effective_n"].between(0.95 * N_PEOPLE, 1.05 * N_PEOPLE).all()


# --- 4. people needed -------------------------------------------------------------------------------------------

def ppi_width(m: int, var_y: float, var_f: float, cov: float, big_n: float) -> float:
    """Full width of the PPI++ CI with m people and big_n other twins, written out:
    λ = Cov/((1 + m/N) Var f) in [0, 1]; Var = (Var Y − 2λ Cov + λ² Var f)/m + λ² Var f/N."""
    lam = min(1.0, max(0.0, cov / ((1 + m / big_n) * var_f)))
    variance = (var_y - 2 * lam * cov + lam ** 2 * var_f) / m + (0 if math.isinf(big_n) else lam ** 2 * var_f / big_n)
    return 2 * Z * math.sqrt(variance)


@pytest.mark.parametrize("slope, noise", [(0.6, 3.0),     # λ inside (0, 1)
                                          (0.5, 0.0),     # exact twins: λ = Cov/Var f = 2, clipped to 1
                                          (-0.6, 3.0)])   # twins against their people: λ clipped to 0
@pytest.mark.parametrize("other_n", [None, 1500, 50])
def test_people_needed_reach_the_width_and_one_fewer_do_not(briganti, design, other_n, slope, noise):
    """Classical: ⌈(2 z σ / width)²⌉ by hand (σ: the people's SD, divisor n − 1). PPI: the returned
    m plugged into the variance formula gives a CI at most `width` wide, m − 1 a wider one."""
    people = design[0]
    twins = twins_of(briganti, np.random.default_rng(3), slope=slope, noise=noise).loc[people.index]
    widths = [0.4, 0.8, 1.5]
    table = people_needed(people, twins, widths, other_n=other_n)
    assert list(table.columns) == ["subscale", "width", "people_needed", "people_needed_classical", "other_n", "note"]
    assert len(table) == len(SUBSCALES) * len(widths)
    big_n = math.inf if other_n is None else other_n
    for row in table.itertuples():
        y, f = people[row.subscale].to_numpy(), twins[row.subscale].to_numpy()
        var_y, var_f, cov = y.var(ddof=1), f.var(ddof=1), np.cov(y, f)[0, 1]
        assert row.people_needed_classical == math.ceil((2 * Z * y.std(ddof=1) / row.width) ** 2)
        m = row.people_needed
        assert m > 3                                    # the floor of 3 does not bind here
        assert ppi_width(m, var_y, var_f, cov, big_n) <= row.width < ppi_width(m - 1, var_y, var_f, cov, big_n)
        assert row.other_n == big_n
        if slope < 0:                                   # useless twins: the people alone
            assert m == row.people_needed_classical
            continue
        assert m < row.people_needed_classical
        if other_n is None and noise > 0:               # N → ∞: the closed form (2z)² Var Y (1 − ρ²)/width²
            rho = np.corrcoef(y, f)[0, 1]
            assert m == math.ceil((2 * Z) ** 2 * var_y * (1 - rho ** 2) / row.width ** 2)


def test_people_needed_not_estimable(design):
    """No other twins: PPI adds nothing (NaN and a note), the classical count stands; two pairs: nothing."""
    people, twins, _ = design
    none = people_needed(people, twins, 1.0, other_n=0)
    assert none["people_needed"].isna().all() and none["people_needed_classical"].notna().all()
    assert none["note"].str.contains("no other twins").all()
    two = people_needed(people.iloc[:2], twins, 1.0)
    assert two[["people_needed", "people_needed_classical"]].isna().all().all()
    assert two["note"].str.contains("2 people with twins").all()
    wide = people_needed(people, twins, 100.0)           # a width a handful of people reach: at least 3
    assert (wide["people_needed"] == 3).all() and (wide["people_needed_classical"] == 3).all()
    with pytest.raises(ValueError, match="width"):
        people_needed(people, twins, 0.0)


# --- 5. groups --------------------------------------------------------------------------------------------------

def test_gender_difference_is_the_difference_of_per_group_ppi_estimates(ppi, design):
    """Each group's row equals ppi_py on that group's people, twins and other twins; the difference
    row is male − female of ppi_py's point estimates, its CI half-width z·√(se_f² + se_m²) with
    ppi_py's standard errors, its classical CI the Welch normal difference by hand. The twins' own
    gender column is not read (the person's is)."""
    people, twins, other = design
    scrambled = twins.assign(gender=np.where(twins["gender"] == "male", "female", "male"))
    result = prediction_powered(people, scrambled, other, groups="gender")
    assert result.equals(prediction_powered(people, twins.drop(columns="gender"), other, groups="gender"))
    assert list(result.query("subscale == 'PT'")["group"]) == ["all", "female", "male", ""]
    for sub in SUBSCALES:
        rows = result[result["subscale"] == sub].set_index("group")
        est, se, classical = {}, {}, {}
        for level in ("female", "male"):
            mine = people["gender"] == level
            y, f = people.loc[mine, sub].to_numpy(), twins.loc[mine, sub].to_numpy()
            f_other = other.loc[other["gender"] == level, sub].to_numpy()
            est[level] = ppi.ppi_mean_pointestimate(y, f, f_other).item()
            low, high = ppi.ppi_mean_ci(y, f, f_other, alpha=0.05)
            se[level] = (high.item() - low.item()) / (2 * Z)
            classical[level] = (y.mean(), y.var() / len(y))
            assert (rows.loc[level, "ci_low"], rows.loc[level, "ci_high"]) == pytest.approx((low.item(), high.item()), abs=1e-6)
            assert rows.loc[level, "n"] == mine.sum()
        diff = rows.loc[""]
        assert (diff["quantity"], diff["contrast"]) == ("difference", "male - female")
        assert diff["estimate"] == pytest.approx(est["male"] - est["female"], abs=1e-6)
        half = Z * math.hypot(se["male"], se["female"])
        assert (diff["ci_low"], diff["ci_high"]) == pytest.approx((diff["estimate"] - half, diff["estimate"] + half), abs=1e-6)
        welch = classical["male"][0] - classical["female"][0]
        welch_half = Z * math.sqrt(classical["male"][1] + classical["female"][1])
        assert (diff["classical_low"], diff["classical_high"]) == pytest.approx((welch - welch_half, welch + welch_half), abs=1e-9)
        assert diff["effective_n"] == pytest.approx(N_PEOPLE * (welch_half / half) ** 2, rel=1e-9)
        assert (diff["n"], diff["N"]) == (N_PEOPLE, N_OTHER)
        assert np.isnan(diff["lambda"])


def test_groups_need_two_levels(design):
    people, twins, other = design
    with pytest.raises(ValueError, match="exactly two levels"):
        prediction_powered(people.assign(gender="female"), twins, other.assign(gender="female"), groups="gender")
    with pytest.raises(ValueError, match="no column 'age'"):
        prediction_powered(people, twins, other, groups="age")


# --- not estimable, inputs --------------------------------------------------------------------------------------

def test_not_estimable_cases_say_why(ppi, design):
    """n < 3: nothing; N = 0: no PPI (it reduces to the classical CI, given and equal to ppi_py's);
    twins that do not vary: no PPI, the classical CI given."""
    people, twins, other = design
    few = prediction_powered(people.iloc[:2], twins, other)
    assert few[["estimate", "classical_low", "effective_n"]].isna().all().all()
    assert few["note"].str.contains("2 people with twins").all()

    no_others = prediction_powered(people, twins, other.iloc[:0])
    assert no_others[["estimate", "ci_low", "effective_n", "lambda"]].isna().all().all()
    assert no_others["note"].str.contains("N = 0").all()
    low, high = ppi.classical_mean_ci(people["EC"].to_numpy(), alpha=0.05)
    ec = no_others.set_index("subscale").loc["EC"]
    assert (ec["classical_low"], ec["classical_high"]) == pytest.approx((low, high), abs=1e-6)

    flat = prediction_powered(people, twins.assign(FS=7.1), other.assign(FS=7.1)).set_index("subscale").loc["FS"]
    assert np.isnan(flat["estimate"]) and "twins' scores do not vary" in flat["note"]
    assert not np.isnan(flat["classical_low"])


def test_other_twins_of_used_people_are_refused(design):
    people, twins, other = design
    with pytest.raises(ValueError, match="used twice"):
        prediction_powered(people, twins, pd.concat([other, twins.iloc[:3]]))


def test_scores_are_the_numeric_columns_common_to_all_three(design):
    """Attributes (text), keys, the survey weight and a wide table's _n/_prorated columns are not
    scores; `subscales=` chooses."""
    people, twins, other = design
    keys = {"survey_weight": 1.0, "repeat": 0, "PT_n": 7, "PT_prorated": 0.0, "backend_id": "human"}
    people, twins, other = people.assign(**keys), twins.assign(**keys), other.assign(**keys)
    assert list(prediction_powered(people, twins, other)["subscale"]) == SUBSCALES
    assert list(prediction_powered(people, twins, other, subscales=["EC"])["subscale"]) == ["EC"]
    assert list(people_needed(people, twins, 1.0)["subscale"]) == SUBSCALES
