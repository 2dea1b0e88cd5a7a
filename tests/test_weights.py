"""Survey weights of human data (a codebook's `columns.weight`): read, checked, and the comparisons weighted.

Every weighted statistic is checked against a computation that does not use psyq's weighted code:
the same data with each row repeated w times (integer weights; statistics that do not depend on n
must be equal, those that do differ only by n, checked by hand), statsmodels' DescrStatsW and
CompareMeans (weighted mean, variance, Welch t), and shares counted by hand on a tiny case. Then
the command line (file:line errors, exit 2) and a report of a stub-server run.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
import yaml
from scipy import stats
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from psyq import administer, load_instrument, load_study
from psyq.analysis.statistics import norms
from psyq.analysis.statistics.human_comparison import (compare_samples, compare_with_humans, kish_n_eff,
                                            weighted_mean_var)
from psyq.analysis.scoring.scores import human_scores
from psyq.analysis.statistics.validity import item_distributions, option_shares
from psyq.engine.files.codebook import WEIGHT_COLUMN, codebook_json_schema
from psyq.analysis.scoring.human_answers import read_answers_csv
from psyq.engine.trials.scoring import score_wide
from stub_server import StubServer
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"
IRI = ROOT / "instruments" / "iri.yaml"

RNG = np.random.default_rng(28)
COHORT = np.clip(np.rint(RNG.normal(4.4, 0.9, 25)), 1, 7)
HUMAN = np.clip(np.rint(RNG.normal(4.0, 1.4, 40)), 1, 7)
INT_WEIGHTS = RNG.integers(1, 5, HUMAN.size).astype(float)        # 1 … 4
REAL_WEIGHTS = RNG.lognormal(0.0, 0.6, HUMAN.size)


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def hand_welch_g(mc: float, vc: float, nc: float, mh: float, vh: float, nh: float) -> dict:
    """Welch t and Hedges g (with J and the CI of pingouin's formula) from moments and sizes, by hand."""
    sc, sh = vc / nc, vh / nh
    t = (mc - mh) / np.sqrt(sc + sh)
    df = (sc + sh) ** 2 / (sc ** 2 / (nc - 1) + sh ** 2 / (nh - 1))
    pooled = np.sqrt(((nc - 1) * vc + (nh - 1) * vh) / (nc + nh - 2))
    g = (mc - mh) / pooled * (1 - 3 / (4 * (nc + nh) - 9))
    se = np.sqrt((nc + nh) / (nc * nh) + g ** 2 / (2 * (nc + nh)))
    crit = stats.t.ppf(0.975, nc + nh - 2)
    return {"t": t, "df": df, "p": 2 * stats.t.sf(abs(t), df), "g": g, "g_low": g - crit * se, "g_high": g + crit * se}


# --- group-level statistics -------------------------------------------------------------------------------

def test_kish_n_eff_by_hand():
    # (Σw)² / Σw²: (1 + 1 + 2 + 4)² / (1 + 1 + 4 + 16) = 64 / 22
    assert kish_n_eff(np.array([1.0, 1, 2, 4])) == pytest.approx(64 / 22, rel=1e-15)
    assert kish_n_eff(np.array([5.0, 5, 5])) == pytest.approx(3.0)            # equal weights: n
    assert kish_n_eff(3.7 * REAL_WEIGHTS) == pytest.approx(kish_n_eff(REAL_WEIGHTS))   # scale-free


def test_integer_weights_equal_the_rows_repeated_up_to_n_which_is_n_eff():
    """Reference: the human sample with each row repeated w times, compared unweighted (scipy, pingouin).
    Mean, the population-style variance and Wasserstein do not depend on n: equal. The n − 1
    variance, t and g do: the weighted ones take n_eff = (Σw)²/Σw² where the repeated rows have Σw."""
    repeated = np.repeat(HUMAN, INT_WEIGHTS.astype(int))
    weighted = compare_samples(COHORT, HUMAN, human_weights=INT_WEIGHTS)
    plain = compare_samples(COHORT, repeated)
    n_rep = INT_WEIGHTS.sum()
    n_eff = INT_WEIGHTS.sum() ** 2 / (INT_WEIGHTS ** 2).sum()                  # Kish, by hand
    assert plain["n_human"] == n_rep and weighted["n_human"] == HUMAN.size
    assert weighted["n_eff_human"] == pytest.approx(n_eff, rel=1e-12)
    assert n_eff < HUMAN.size < n_rep                                          # n_eff really differs
    # no n in them: equal to the repeated data
    assert weighted["mean_human"] == pytest.approx(plain["mean_human"], rel=1e-12)
    assert weighted["wasserstein"] == pytest.approx(plain["wasserstein"], rel=1e-12)
    var0 = repeated.var(ddof=0)
    assert weighted["sd_human"] ** 2 * (n_eff - 1) / n_eff == pytest.approx(var0, rel=1e-12)
    assert plain["sd_human"] ** 2 * (n_rep - 1) / n_rep == pytest.approx(var0, rel=1e-12)
    # n in them: the repeated data's moments with n = Σw reproduce the unweighted statistics
    # (scipy, pingouin), with n = n_eff the weighted ones.
    mc, vc = COHORT.mean(), COHORT.var(ddof=1)
    with_n = lambda n: hand_welch_g(mc, vc, COHORT.size, repeated.mean(), var0 * n / (n - 1), n)
    for key, value in with_n(n_rep).items():
        assert plain[key] == pytest.approx(value, rel=1e-9), key
    for key, value in with_n(n_eff).items():
        assert weighted[key] == pytest.approx(value, rel=1e-9), key
    assert weighted["sd_human"] == pytest.approx(np.sqrt(var0 * n_eff / (n_eff - 1)), rel=1e-12)
    assert weighted["variance_ratio"] == pytest.approx(vc / (var0 * n_eff / (n_eff - 1)), rel=1e-12)
    assert abs(weighted["g"] - plain["g"]) > 1e-4 or abs(weighted["p"] - plain["p"]) > 1e-4


def test_equal_weights_give_the_unweighted_statistics():
    """All weights 3: n_eff = n, so the hand-written weighted path equals scipy's Welch and pingouin's g."""
    plain = compare_samples(COHORT, HUMAN)
    weighted = compare_samples(COHORT, HUMAN, cohort_weights=np.full(COHORT.size, 3.0),
                               human_weights=np.full(HUMAN.size, 3.0))
    for key in ("mean_cohort", "mean_human", "sd_cohort", "sd_human", "t", "df", "p", "g", "g_low", "g_high",
                "variance_ratio", "wasserstein", "n_eff_cohort", "n_eff_human"):
        assert weighted[key] == pytest.approx(plain[key], rel=1e-9), key
    # rank and spread tests: not computed for weighted data
    for key in ("u", "p_mwu", "ks", "p_ks", "bf_stat", "p_bf"):
        assert np.isnan(weighted[key]) and not np.isnan(plain[key]), key


def test_weighted_mean_sd_and_welch_against_statsmodels():
    """Reference: statsmodels.stats.weightstats.DescrStatsW / CompareMeans. DescrStatsW's ddof=1 variance
    divides by Σw − 1 (frequency weights); with the weights rescaled to sum to n_eff it is the
    reliability-weights variance psyq uses, and CompareMeans' unequal-variance t is Welch's with n_eff."""
    w = REAL_WEIGHTS
    res = compare_samples(COHORT, HUMAN, human_weights=w)
    ref = DescrStatsW(HUMAN, weights=w, ddof=0)
    assert res["mean_human"] == pytest.approx(ref.mean, rel=1e-12)
    n_eff = kish_n_eff(w)
    rescaled = DescrStatsW(HUMAN, weights=w * n_eff / w.sum(), ddof=1)
    assert res["sd_human"] == pytest.approx(rescaled.std, rel=1e-12)
    assert res["sd_human"] == pytest.approx(ref.std * np.sqrt(n_eff / (n_eff - 1)), rel=1e-12)
    mean, var = weighted_mean_var(HUMAN, w)
    assert (mean, var) == pytest.approx((ref.mean, rescaled.var), rel=1e-12)
    t, p, df = CompareMeans(DescrStatsW(COHORT), rescaled).ttest_ind(usevar="unequal")
    assert (res["t"], res["p"], res["df"]) == pytest.approx((t, p, df), rel=1e-9)
    # Hedges g and its interval: pingouin's CI formula with the effective sizes
    low, high = pg.compute_esci(stat=res["g"], nx=COHORT.size, ny=n_eff, eftype="hedges", decimals=15)
    assert (res["g_low"], res["g_high"]) == pytest.approx((low, high), rel=1e-9)
    assert res["wasserstein"] == pytest.approx(stats.wasserstein_distance(COHORT, HUMAN, None, w), rel=1e-12)


def test_bad_weights_in_python_are_an_error():
    with pytest.raises(ValueError, match="positive finite weight"):
        compare_samples(COHORT, HUMAN, human_weights=np.r_[0.0, REAL_WEIGHTS[1:]])
    with pytest.raises(ValueError, match="1 weight"):
        compare_samples(COHORT, HUMAN, human_weights=np.ones(1))
    # a missing score drops its weight with it
    with_gap = compare_samples(COHORT, np.r_[np.nan, HUMAN[1:]], human_weights=REAL_WEIGHTS)
    assert with_gap["mean_human"] == pytest.approx(np.average(HUMAN[1:], weights=REAL_WEIGHTS[1:]))


# --- item distributions --------------------------------------------------------------------------------------

def test_weighted_item_shares_by_hand():
    """Item a, options 1 … 7. Humans 1, 1, 2, 7 weighing 1, 1, 2, 4 (Σw = 8): shares 2/8, 2/8, 4/8 on
    1, 2, 7 (unweighted: .5, .25, .25). Cohort 1, 1, 1, 2: .75, .25."""
    mini = load_instrument(MINI)
    cohort = pd.DataFrame({"a": [1, 1, 1, 2]}, index=["c1", "c2", "c3", "c4"])
    humans = pd.DataFrame({"a": [1, 1, 2, 7], WEIGHT_COLUMN: [1.0, 1, 2, 4]}, index=["h1", "h2", "h3", "h4"])
    assert option_shares(humans["a"], range(1, 8), humans[WEIGHT_COLUMN]).tolist() == [.25, .25, 0, 0, 0, 0, .5]
    row = item_distributions(cohort, humans, mini).set_index("item_id").loc["a"]
    assert row["tv"] == pytest.approx(0.5 * (0.5 + 0 + 0.5))                 # |.75−.25| + |.25−.25| + |0−.5|
    # W1 on unit-spaced options = Σ |F_cohort − F_human| over the 6 gaps: .5 + 5 × .5
    assert row["wasserstein"] == pytest.approx(3.0)
    q = np.array([.25, .25, 0, 0, 0, 0, .5])
    assert row["tv_uniform"] == pytest.approx(0.5 * np.abs(np.full(7, 1 / 7) - q).sum())
    assert (row["n_cohort"], row["n_human"]) == (4, 4)                        # n counts answers
    unweighted = item_distributions(cohort, humans.drop(columns=WEIGHT_COLUMN), mini).set_index("item_id").loc["a"]
    assert unweighted["tv"] == pytest.approx(0.25) and unweighted["wasserstein"] == pytest.approx(1.5)
    # The cohort side: weights by respondent id (twins); weight 3 on c4 makes the cohort .5 / .5 on 1 / 2,
    # so W1 = |.5 − .25| + 5 × |1 − .5| = 2.75 (3.0 unweighted, above). (TV stays .5 for any cohort on
    # options 1 and 2 with both shares ≥ .25, so it cannot tell.)
    twin = item_distributions(cohort, humans, mini, cohort_weights=pd.Series([1.0, 1, 1, 3], index=cohort.index))
    assert twin.set_index("item_id").loc["a", "wasserstein"] == pytest.approx(2.75)


def test_weights_are_never_a_group_nor_a_norm_matching_attribute():
    mini = load_instrument(MINI)
    people = read_answers_csv(ROOT / "tests" / "data" / "mini_weighted.csv", mini)
    twins = people.copy()                                        # a cohort that carries the column too
    dist = item_distributions(twins, people, mini)
    assert WEIGHT_COLUMN not in set(dist["group_by"]) and set(dist["group_by"]) == {"all", "gender"}
    assert WEIGHT_COLUMN not in set(item_distributions(twins, people, mini, group_by=[WEIGHT_COLUMN])["group_by"])
    # within a group the humans' shares are weighted by the group's own weights; the cohort's are not
    # (a survey_weight column on the cohort side weights nothing: only cohort_weights= does)
    women = people[people["gender"] == "female"]
    got = dist[(dist["group"] == "female") & (dist["item_id"] == "b")].iloc[0]
    p = option_shares(twins.loc[women.index, "b"], range(1, 8))
    q = option_shares(women["b"], range(1, 8), women[WEIGHT_COLUMN])
    assert got["tv"] == pytest.approx(0.5 * np.abs(p - q).sum()) and got["tv"] > 0
    both = item_distributions(twins, people, mini, cohort_weights=people[WEIGHT_COLUMN])
    assert (both["tv"] == 0).all()                    # the same people, weighted alike on both sides
    matching = norms.group_matching(human_scores(people, load_instrument(IRI)).assign(instrument="iri"),
                                    {"iri": load_instrument(IRI)})
    assert WEIGHT_COLUMN not in matching["cohort_attributes"].iloc[0]


def test_compare_with_humans_weights_the_human_side_and_twins_the_cohort_side():
    mini = load_instrument(MINI)
    people = read_answers_csv(ROOT / "tests" / "data" / "mini_weighted.csv", mini)
    cohort = people.drop(columns=[WEIGHT_COLUMN, "gender"]).iloc[:6].copy() + 0   # twins of r1 … r6
    cohort.loc["baseline"] = [4.0, 4, 4, 4]
    table = compare_with_humans({"mini": cohort}, {"mini": people}, {"mini": mini}).set_index("subscale")
    z_h, z_c = score_wide(mini, people)["Z"], score_wide(mini, cohort)["Z"]
    expected = compare_samples(z_c, z_h, human_weights=people[WEIGHT_COLUMN])
    assert table.loc["Z", "mean_human"] == pytest.approx(expected["mean_human"])
    assert table.loc["Z", "mean_human"] == pytest.approx(np.average(z_h, weights=people[WEIGHT_COLUMN]))
    assert (table["weighted"] == "human").all() and np.isnan(table.loc["Z", "p_mwu"])
    both = compare_with_humans({"mini": cohort}, {"mini": people}, {"mini": mini},
                               cohort_weights=people[WEIGHT_COLUMN]).set_index("subscale")
    assert (both["weighted"] == "both").all() and (both["n_cohort"] == 6).all()
    assert both.loc["Z", "mean_cohort"] == pytest.approx(np.average(z_c.iloc[:6], weights=people[WEIGHT_COLUMN].iloc[:6]))
    assert both.loc["Z", "n_eff_cohort"] == pytest.approx(kish_n_eff(people[WEIGHT_COLUMN].iloc[:6]))
    assert "1 cohort respondent(s) without a weight left out (baseline)" in both.loc["Z", "note"]
    # α stays unweighted
    assert both.loc["Z", "alpha_human"] == pytest.approx(table.loc["Z", "alpha_human"])


# --- reading files: the codebook's weight, errors -------------------------------------------------------------

def test_codebook_schema_file_is_current():
    on_disk = json.loads((ROOT / "instruments" / "codebook.schema.json").read_text())
    assert on_disk == codebook_json_schema(), "regenerate: psyq schema codebook > instruments/codebook.schema.json"
    assert "weight" in on_disk["$defs"]["Columns"]["properties"]


MINI_BOOK = "psyq: codebook/1\ncolumns:\n  respondent_id: id\n  attributes: {gender: sex}\n  weight: wt\n"


@pytest.mark.parametrize("cell, message", [
    ("", "column 'wt': the weight is empty"),
    ("0", "column 'wt': weight 0 is not positive"),
    ("-1.5", "column 'wt': weight -1.5 is not positive"),
    ("heavy", "column 'wt': 'heavy' is not a number"),
    ("inf", "column 'wt': weight inf is not finite"),
])
def test_bad_weights_are_file_line_errors_exit_2(tmp_path, cell, message):
    rows = (ROOT / "tests" / "data" / "mini_weighted.csv").read_text().splitlines()
    rows[4] = ",".join(rows[4].split(",")[:-1] + [cell])        # line 5: r4
    (tmp_path / "people.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "book.yaml").write_text(MINI_BOOK)
    result = psyq("score", str(MINI), str(tmp_path / "people.csv"), "--codebook", str(tmp_path / "book.yaml"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{tmp_path / 'people.csv'}:5: {message}" in result.stderr, result.stderr


@pytest.mark.parametrize("text, where", [
    (MINI_BOOK.replace("weight: wt", "weight: weights"), "book.yaml:5:11: columns.weight: column 'weights' is not in"),
    (MINI_BOOK.replace("{gender: sex}", "{gender: sex, survey_weight: wt}").replace("  weight: wt\n", ""),
     "book.yaml:4:29: columns.attributes.survey_weight: 'survey_weight' is the name psyq keeps survey weights under"),
    (MINI_BOOK.replace("weight: wt", "weight: sex"), "book.yaml:5:11: columns.weight: column 'sex' is already named"),
    (MINI_BOOK + "values:\n  survey_weight: {'1': '2'}\n", "book.yaml:7:3: values.survey_weight: 'survey_weight' is an item"),
])
def test_codebook_weight_entries_are_checked(tmp_path, text, where):
    (tmp_path / "book.yaml").write_text(text)
    result = psyq("score", str(MINI), str(ROOT / "tests" / "data" / "mini_weighted.csv"), "--codebook",
                  str(tmp_path / "book.yaml"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(tmp_path / where) in result.stderr, result.stderr


def test_a_column_named_survey_weight_is_the_weights_without_a_codebook(tmp_path):
    csv = tmp_path / "plain.csv"
    csv.write_text("respondent_id,a,b,c,d,survey_weight\nr1,2,5,7,4,2\nr2,3,3,2,6,0.5\n")
    mini = load_instrument(MINI)
    answers = read_answers_csv(csv, mini)
    assert answers.attrs["weight"] == WEIGHT_COLUMN and answers[WEIGHT_COLUMN].tolist() == [2.0, 0.5]
    csv.write_text("respondent_id,a,b,c,d,survey_weight\nr1,2,5,7,4,2\nr2,3,3,2,6,\n")
    result = psyq("score", str(MINI), str(csv))
    assert result.returncode == 2 and f"{csv}:3: column 'survey_weight': the weight is empty" in result.stderr
    ok = psyq("score", str(MINI), str(ROOT / "tests" / "data" / "mini_weighted.csv"))
    assert ok.returncode == 0 and "survey_weight" in ok.stdout.splitlines()[0]
    assert "survey weights of column 'wt' written as survey_weight" in ok.stderr


# --- the report ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("weights")
    personas = [{"id": f"p{i:02d}", "attributes": {"gender": "female" if i % 2 else "male", "age": 20 + 3 * i}}
                for i in range(12)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": True,
                                                     "personas": personas}))
    (tmp / "study.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "weights_test", "instruments": [str(IRI)], "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": "", "model": "stub-model", "concurrency": 8}],
        "protocol": {"answer": "text", "option_order": "counterbalanced", "repeats": 1, "seed": 5}}))
    with StubServer() as stub:
        text = (tmp / "study.yaml").read_text().replace("base_url: ''", f"base_url: {stub.url}")
        (tmp / "study.yaml").write_text(text)
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    return result.run_dir.path


def weighted_people(folder: Path, ids: list[str]) -> tuple[Path, Path]:
    """IRI answers of `ids` (a deterministic pattern, values 0–4) with weights in `wt`, and a codebook."""
    humans = pd.DataFrame({f"q{i}": [(r * i + r // 3) % 5 for r in range(len(ids))] for i in range(1, 29)})
    humans.insert(0, "id", ids)
    humans["wt"] = [0.5 + (r % 4) for r in range(len(ids))]
    humans.to_csv(folder / "people.csv", index=False)
    (folder / "book.yaml").write_text("psyq: codebook/1\ncolumns:\n  respondent_id: id\n  items: \"q{id}\"\n"
                                      "  weight: wt\n")
    return folder / "people.csv", folder / "book.yaml"


def report(run_dir: Path, out: Path, csv: Path, book: Path) -> subprocess.CompletedProcess:
    return psyq("report", str(run_dir), "--out", str(out), "--human", f"iri={csv}", "--codebook", f"iri={book}")


def test_report_with_weighted_people_says_weighted_by_and_methods_name_it(run_dir, tmp_path):
    csv, book = weighted_people(tmp_path, [f"h{r}" for r in range(30)])
    result = report(run_dir, tmp_path / "r", csv, book)
    assert result.returncode == 0, result.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    n_eff = kish_n_eff(np.array([0.5 + (r % 4) for r in range(30)]))
    assert f"iri: the human data carry survey weights in column 'wt' (Kish n_eff = {n_eff:,.1f} of 30" in md
    assert f"weighted by 'wt' (Kish n_eff = human {n_eff:,.1f})" in md
    assert "the comparison is weighted by 'wt' on the human side" in md and "the cohort side is unweighted" in md
    assert "Mann–Whitney, Kolmogorov–Smirnov and Brown–Forsythe have no simple weighted form" in md
    assert "answer shares weighted by 'wt' on the human side" in md
    methods = (tmp_path / "r" / "methods.md").read_text()
    assert "weighted by the survey weights in column(s) 'wt' (iri)" in methods
    assert "Kish's (1965) effective sample size" in methods and "reliability-weights correction" in methods
    table = pd.read_csv(next((tmp_path / "r" / "report_tables").glob("*cohort_against_human*")))
    assert (table["weighted"] == "human").all() and table["n_eff_human"].round(6).eq(round(n_eff, 6)).all()
    assert table["p_mwu"].isna().all()
    # the same people unweighted: no weighting said anywhere, and the table keeps its columns
    plain_csv = tmp_path / "plain.csv"
    pd.read_csv(csv).drop(columns="wt").to_csv(plain_csv, index=False)
    (tmp_path / "plain_book.yaml").write_text(book.read_text().replace("  weight: wt\n", ""))
    plain = report(run_dir, tmp_path / "p", plain_csv, tmp_path / "plain_book.yaml")
    assert plain.returncode == 0, plain.stderr
    assert "weighted by '" not in (tmp_path / "p" / "report.md").read_text()
    assert "survey weights" not in (tmp_path / "p" / "methods.md").read_text()
    plain_table = pd.read_csv(next((tmp_path / "p" / "report_tables").glob("*cohort_against_human*")))
    assert "n_eff_human" not in plain_table.columns and plain_table["p_mwu"].notna().any()
    assert not np.allclose(plain_table["mean_human"], table["mean_human"])


def test_report_weights_a_cohort_of_twins_by_their_persons_weights(run_dir, tmp_path):
    ids = [f"p{i:02d}" for i in range(12)] + [f"h{r}" for r in range(18)]   # the personas are people of the file
    csv, book = weighted_people(tmp_path, ids)
    result = report(run_dir, tmp_path / "r", csv, book)
    assert result.returncode == 0, result.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    weights = np.array([0.5 + (r % 4) for r in range(30)])
    assert "the comparison is weighted by 'wt' on both sides" in md
    assert "the cohort's personas are twins of these people" in md
    assert (f"weighted by 'wt' (Kish n_eff = human {kish_n_eff(weights):,.1f}, cohort "
            f"{kish_n_eff(weights[:12]):,.1f})") in md
    assert "The baseline respondent has no weight and is left out of the weighted comparison." in md
    assert "answer shares weighted by 'wt' on both sides" in md
    assert "consisted of twins of the weighted respondents" in (tmp_path / "r" / "methods.md").read_text()


def test_report_with_a_bad_weight_is_a_file_line_error(run_dir, tmp_path):
    csv, book = weighted_people(tmp_path, [f"h{r}" for r in range(30)])
    text = csv.read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ",-2"                  # line 4
    csv.write_text("\n".join(text) + "\n")
    result = report(run_dir, tmp_path / "r", csv, book)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{csv}:4: column 'wt': weight -2 is not positive" in result.stderr, result.stderr
