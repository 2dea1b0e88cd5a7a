"""Every norm sample compared, verification flags, explicit group matching, `where` lists and
ranges, and the norm functions on human data scored with psyq.engine.trials.scoring.score.

Expected numbers are worked out by hand in the comments or computed here with numpy from the
answers written in the test; none comes from running psyq.analysis.statistics.norms itself.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from psyq.analysis.report.readings import matching_warnings, norm_readings
from psyq.analysis.statistics.norms import (POOLED, compare_with_norms, condition_holds, group_matching, match_group,
    respondent_z, verification_flag)
from psyq import load_instrument
from psyq.engine.files.errors import InputError
from psyq.engine.design.instrument import NormGroup, NormScore, Range
from psyq.engine.trials.scoring import score

ROOT = Path(__file__).resolve().parents[1]
REVERSED = {3, 4, 7, 12, 13, 14, 15, 18, 19}
EC_ITEMS = [2, 4, 9, 14, 18, 20, 22]


@pytest.fixture(scope="module")
def iri():
    return load_instrument(ROOT / "instruments" / "iri.yaml")


def cohort_scores(attribute: str) -> pd.DataFrame:
    """EC scores of six personas (and the baseline) in the long format of score_answers; the
    sex/gender attribute is stored under `attribute`."""
    people = [("p1", "female", 20.0), ("p2", "female", 24.0), ("p3", "female", 22.0),
              ("p4", "male", 16.0), ("p5", "male", 18.0), ("p6", "male", 20.0), ("baseline", None, 25.0)]
    return pd.DataFrame({"backend_id": "b", "model": "m", "respondent_id": [p[0] for p in people], "repeat": 0,
                         attribute: [p[1] for p in people], "age": [30, 41, 25, 60, 19, 33, None],
                         "instrument": "iri", "subscale": "EC", "score": [p[2] for p in people],
                         "n_answered": 7, "n_items": 7})


def test_every_sample_is_compared_and_named(iri):
    table = compare_with_norms(cohort_scores("gender"), {"iri": iri})
    # Samples in the instrument's order (briganti2018 first), groups in each sample's order.
    assert table[["norm_sample", "norm_group", "n"]].values.tolist() == [
        ["briganti2018", "women", 3], ["briganti2018", "men", 3], ["briganti2018", "all", 1],
        ["davis1980", "men", 3], ["davis1980", "women", 3], ["davis1980", POOLED, 1]]
    # briganti2018's whole-sample group is written `id: all` (no `where`) in iri.yaml: the row keeps
    # that id; davis1980 publishes no whole-sample group, so psyq pools its groups ("pooled").
    assert table["norm_verified"].tolist() == ["raw-data"] * 3 + ["unverified"] * 3
    for row, reading in zip(table.itertuples(), norm_readings(table, bound=0.3)):
        assert row.norm_sample in reading
        assert reading.endswith("— norms unverified.") == (row.norm_sample == "davis1980")
    # briganti2018's unmatched respondent is compared with its published whole-sample group
    # (EC 19.32, 4.67, n 1,973), not with a pool derived by psyq.
    pooled = table.iloc[2]
    assert (pooled["norm_mean"], pooled["norm_sd"], pooled["norm_n"], pooled["norm_derived"]) == (
        19.32, 4.67, 1973, False)
    # Women against briganti2018 women: mean of 20, 24, 22 = 22 against 20.54.
    assert table.iloc[0]["mean"] == 22.0 and table.iloc[0]["norm_mean"] == 20.54


def test_multiplicity_correction_spans_all_samples(iri):
    table = compare_with_norms(cohort_scores("gender"), {"iri": iri})
    tested = table["p"].notna()
    assert tested.sum() == 4                      # four groups of three; the two pooled rows have n 1
    expected = multipletests(table.loc[tested, "p"], method="holm")[1]
    assert table.loc[tested, "p_adj"].to_numpy() == pytest.approx(expected, abs=1e-12)
    # Not a per-sample correction: Holm over two p values differs from Holm over four.
    per_sample = multipletests(table.loc[tested & (table["norm_sample"] == "davis1980"), "p"], method="holm")[1]
    assert not np.allclose(per_sample, table.loc[tested & (table["norm_sample"] == "davis1980"), "p_adj"])


def test_samples_can_be_restricted(iri):
    scores = cohort_scores("gender")
    only = compare_with_norms(scores, {"iri": iri}, samples=["briganti2018"])
    assert set(only["norm_sample"]) == {"briganti2018"}
    by_instrument = compare_with_norms(scores, {"iri": iri}, samples={"iri": ["davis1980"]})
    assert set(by_instrument["norm_sample"]) == {"davis1980"}
    # A mapping that does not name the instrument leaves all its samples compared.
    other = {"iri": iri, "iri2": iri.model_copy(update={"id": "iri2"})}
    both = compare_with_norms(pd.concat([scores, scores.assign(instrument="iri2")]), other,
                              samples={"iri2": ["davis1980"]})
    assert set(both.loc[both["instrument"] == "iri", "norm_sample"]) == {"briganti2018", "davis1980"}
    assert set(both.loc[both["instrument"] == "iri2", "norm_sample"]) == {"davis1980"}
    with pytest.raises(KeyError, match="no such norm sample: davis1981"):
        compare_with_norms(scores, {"iri": iri}, samples=["davis1981"])
    with pytest.raises(KeyError):
        compare_with_norms(scores, {"iri": iri}, samples={"iri": ["nope"]})


def test_verification_flags():
    assert verification_flag("raw-data") == verification_flag("source-table") == ""
    assert verification_flag("unverified") == "norms unverified"
    assert verification_flag("secondary-source") == "norms read only in a secondary source"


def test_group_matching_counts_and_warns_when_the_cohort_says_sex(iri):
    matching = group_matching(cohort_scores("sex"), {"iri": iri})
    # The cohort has `sex`, the norms match on `gender`: nobody of the seven matches a group.
    # The unmatched rows: briganti2018's is its whole-sample group as iri.yaml names it ("all"),
    # davis1980's the pool psyq derives from its groups.
    pooled = matching[matching["where"].str.startswith("matched no group")]
    assert pooled["norm_group"].tolist() == ["all", POOLED]
    assert pooled["n_respondents"].tolist() == [7, 7] and pooled["of_respondents"].tolist() == [7, 7]
    assert set(matching["matches_on"]) == {"gender"}
    assert matching.loc[~matching.index.isin(pooled.index), "n_respondents"].eq(0).all()
    warnings = matching_warnings(matching)
    assert warnings[0] == ("iri norm sample briganti2018 matches on gender; the cohort has sex, age: 0 of 7 "
                           "respondents matched a group and 7 were compared with the whole-sample norm (all).")
    assert warnings[1].endswith("7 were compared with the pooled norm.")
    assert len(warnings) == 2


def test_group_matching_with_gender(iri):
    matching = group_matching(cohort_scores("gender"), {"iri": iri}, samples=["briganti2018"])
    assert matching[["norm_group", "n_respondents"]].values.tolist() == [["women", 3], ["men", 3], ["all", 1]]
    assert matching.iloc[0]["where"] == "gender = female or woman or F"
    assert matching_warnings(matching) == [
        "iri norm sample briganti2018 matches on gender; the cohort has gender, age: 6 of 7 respondents "
        "matched a group and 1 was compared with the whole-sample norm (all)."]


def test_where_lists_and_ranges(iri):
    sample = next(s for s in iri.norms if s.id == "briganti2018")
    banded = sample.model_copy(update={"groups": [
        NormGroup(id="young", where={"age": Range(min=18, max=25)}, n=10, scores={"EC": NormScore(mean=20, sd=4)}),
        NormGroup(id="old", where={"age": Range(min=60)}, n=10, scores={"EC": NormScore(mean=20, sd=4)}),
        NormGroup(id="young_women", where={"age": Range(min=18, max=25), "gender": ["female", "woman"]}, n=5,
                  scores={"EC": NormScore(mean=20, sd=4)})]})
    assert match_group(banded, {"age": 18}) == "young"                  # both ends included
    assert match_group(banded, {"age": 25.0}) == "young"
    assert match_group(banded, {"age": "25"}) == "young"                # numbers written as text
    assert match_group(banded, {"age": 25.5}) is None
    assert match_group(banded, {"age": 17}) is None
    assert match_group(banded, {"age": 99}) == "old"                    # open upper end
    assert match_group(banded, {"age": 20, "gender": "Woman"}) == "young_women"   # most specific wins
    assert match_group(banded, {"age": None, "gender": "woman"}) is None
    assert match_group(banded, {"age": "unknown"}) is None
    assert not condition_holds(Range(min=1), True)                      # a boolean is not a number
    assert condition_holds(["a", "b"], "B") and not condition_holds(["a", "b"], "c")


BAD_WHERE = """psyq: instrument/1
id: toy
name: Toy
version: "1"
content_source: published
citations: {smith: "Smith (2020)."}
terms: test
instructions: Rate.
scale: [{value: 1, label: low}, {value: 2, label: high}]
items:
  - {id: a, text: A., subscales: [X]}
subscales: [{id: X, name: X}]
norms:
  - id: s
    citation: smith
    table: t
    population: p
    n: 20
    metric: sum
    verified: source-table
    verification: v
    groups:
      - {id: g1, where: {age: {min: 30, max: 20}}, n: 10, scores: {X: {mean: 1.5, sd: 0.3}}}
      - {id: g2, where: {gender: []}, n: 10, scores: {X: {mean: 1.5, sd: 0.3}}}
      - {id: g3, where: {age: {}}, n: 10, scores: {X: {mean: 1.5, sd: 0.3}}}
"""


def test_bad_where_conditions_are_named(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(BAD_WHERE)
    with pytest.raises(InputError) as err:
        load_instrument(path)
    # Lines counted in BAD_WHERE: the three groups are on lines 23, 24 and 25.
    assert [str(p).split(": ", 1)[1] for p in err.value.problems] == [
        "norms[0].groups[0].where.age: min (30) is larger than max (20)",
        "norms[0].groups[1].where.gender: an empty list matches nobody; give at least one value",
        "norms[0].groups[2].where.age: a range needs `min`, `max` or both"]
    assert [p.line for p in err.value.problems] == [23, 24, 25]
    missing = BAD_WHERE.replace("    verified: source-table\n", "")
    path.write_text(missing)
    with pytest.raises(InputError, match=r"norms\[0\]\.verified: required field is missing"):
        load_instrument(path)


# ------------------------------------------------------------------------------------------
# Human data from Python: the table of psyq.engine.trials.scoring.score


def humans_table() -> pd.DataFrame:
    """Four people answering all 28 IRI items: person r answers (r + item) % 5 on every item."""
    rows = {f"h{r}": {str(i): (r + i) % 5 for i in range(1, 29)} for r in range(4)}
    humans = pd.DataFrame.from_dict(rows, orient="index")
    humans["gender"] = ["female", "female", "male", "male"]
    return humans


def ec_by_hand(r: int) -> float:
    # EC sum of person r: items 2 4 9 14 18 20 22, reverse items (4, 14, 18) as 4 − answer.
    return float(sum(4 - (r + i) % 5 if i in REVERSED else (r + i) % 5 for i in EC_ITEMS))


def test_compare_with_norms_on_engine_scoring_output(iri):
    humans = humans_table()
    table = compare_with_norms(score(iri, humans), {"iri": iri})
    assert set(table["backend_id"]) == {"human"}
    ec = table[table["subscale"] == "EC"]
    # Whatever groups the respondents fall in, each sample's EC rows hold all four people once:
    # n adds up to 4 and the n-weighted mean is the mean of the four hand-computed sums.
    expected = np.mean([ec_by_hand(r) for r in range(4)])
    for _, rows in ec.groupby("norm_sample"):
        assert rows["n"].sum() == 4
        assert (rows["n"] * rows["mean"]).sum() / 4 == pytest.approx(expected)


def test_compare_with_norms_on_scored_humans_with_their_gender(iri):
    humans = humans_table()
    scores = score(iri, humans).merge(humans[["gender"]], left_on="respondent_id", right_index=True)
    table = compare_with_norms(scores, {"iri": iri}, samples=["briganti2018"])
    ec = table[table["subscale"] == "EC"].set_index("norm_group")
    assert list(ec.index) == ["women", "men"]
    # By hand: h0 answers 2 4 4 4 3 0 2 on the EC items, keyed 2 0 4 0 1 0 2 = 9; h1 3 0 0 0 4 1 3,
    # keyed 3 4 0 4 0 1 3 = 15; h2 4 1 1 1 0 2 4, keyed 4 3 1 3 4 2 4 = 21; h3 0 2 2 2 1 3 0,
    # keyed 0 2 2 2 3 3 0 = 12. Women (h0, h1) mean 12, men (h2, h3) mean 16.5.
    assert [ec_by_hand(r) for r in range(4)] == [9.0, 15.0, 21.0, 12.0]
    assert ec.loc["women", "mean"] == pytest.approx(12.0) and ec.loc["men", "mean"] == pytest.approx(16.5)
    assert ec.loc["women", "norm_mean"] == 20.54
    z = respondent_z(scores, {"iri": iri})
    h0 = z[(z["respondent_id"] == "h0") & (z["subscale"] == "EC") & (z["norm_sample"] == "briganti2018")].iloc[0]
    assert h0["z"] == pytest.approx((9 - 20.54) / 4.29)
    assert len(z) == 2 * len(scores)                      # one row per score and norm sample


def test_scores_without_instrument_need_exactly_one_instrument(iri):
    with pytest.raises(ValueError, match="exactly one instrument"):
        compare_with_norms(score(iri, humans_table()), {"iri": iri, "other": iri})


def test_prorated_and_count_columns_are_not_attributes(iri):
    scores = score(iri, humans_table())
    scores["prorated"] = False
    matching = group_matching(scores, {"iri": iri})
    assert set(matching["cohort_attributes"]) == {""}
    assert not math.isnan(compare_with_norms(scores, {"iri": iri})["mean"].iloc[0])
