"""The columnar paths of scoring and the norm comparison equal a plain, row-by-row computation.

`psyq.engine.trials.scoring.score` sums one subscale's columns at a time and builds its string columns by
position; `psyq.analysis.statistics.norms.compare_with_norms` matches attribute combinations once and selects
rows with integer codes. Both are checked here against an independent computation written in
this file with a straightforward pandas melt / group-by (and, for the norm groups, the
documented per-respondent rule: `match_group` on each respondent's own attributes, else the
pooled norm), on random tables with missing answers, reverse-keyed items, prorated and
unscorable subscales, repeats, missing scores and two backends. The wide entry of the comparison
(the frame of `score_wide` with attribute columns) is checked the same way, and against the long one.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq.analysis.scoring.score_table import wide_scores
from psyq.analysis.statistics.norms import compare_with_norms, match_group, norm_stats
from psyq import load_instrument, score, score_wide

ROOT = Path(__file__).resolve().parents[1]
IRI = load_instrument(ROOT / "instruments" / "iri.yaml")


def random_answers(n: int, missing: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values = rng.integers(IRI.scale_min, IRI.scale_max + 1, size=(n, len(IRI.rating_items))).astype(float)
    values[rng.random(values.shape) < missing] = np.nan
    ids = [item.id for item in IRI.rating_items]
    answers = pd.DataFrame(values, columns=ids, index=pd.Index([f"p{i}" for i in range(n)], name="respondent_id"))
    return answers[ids[::-1]]          # columns in another order than the instrument's


def reference_scores(answers: pd.DataFrame) -> pd.DataFrame:
    """Row-by-row: reverse the reverse-keyed items, then per respondent and subscale the sum,
    prorated as mean of answered × number of items when some are missing, missing below
    min_answered (the rule in engine/trials/scoring.py's docstring)."""
    long = answers.reset_index().melt(id_vars="respondent_id", var_name="item", value_name="x").dropna()
    items = {item.id: item for item in IRI.rating_items}
    long["x"] = [IRI.scale_min + IRI.scale_max - x if items[i].reverse else x for i, x in zip(long["item"], long["x"])]
    rows = []
    for subscale in IRI.rating_subscales:
        members = [i.id for i in IRI.rating_items if subscale.id in i.subscales]
        part = long[long["item"].isin(members)].groupby("respondent_id")["x"].agg(["sum", "count", "mean"])
        part = part.reindex(answers.index, fill_value=0)
        for rid, (total, count, mean) in part.iterrows():
            if count < IRI.min_answered(subscale):
                value = np.nan
            elif count == len(members):
                value = float(total)
            else:
                value = mean * len(members)
            rows.append({"respondent_id": rid, "subscale": subscale.id, "score": value,
                         "n_answered": int(count), "n_items": len(members),
                         "prorated": bool(count < len(members) and not np.isnan(value))})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("missing", [0.0, 0.15, 0.6])
def test_score_equals_a_row_by_row_computation(missing):
    answers = random_answers(400, missing, seed=11)
    got = score(IRI, answers)
    expected = reference_scores(answers)
    got = got.set_index(["respondent_id", "subscale"]).sort_index()
    expected = expected.set_index(["respondent_id", "subscale"]).sort_index()
    assert len(got) == 400 * len(IRI.rating_subscales)
    np.testing.assert_allclose(got["score"], expected["score"], rtol=1e-12, equal_nan=True)
    for column in ("n_answered", "n_items", "prorated"):
        assert got[column].tolist() == expected[column].tolist(), column
    if missing:   # the draw covers both rules: prorated (one of 7 missing) and unscored (two or more)
        assert got["prorated"].any() and got["score"].isna().any()


def test_score_keeps_the_respondent_order_and_labels():
    answers = random_answers(5, 0.0, seed=2)
    got = score(IRI, answers)
    subs = [s.id for s in IRI.rating_subscales]
    assert got["respondent_id"].tolist() == [rid for rid in answers.index for _ in subs]
    assert got["subscale"].tolist() == subs * 5


def scored_table(seed: int) -> pd.DataFrame:
    """Two backends, two repeats, genders incl. missing and unmatched, some missing scores."""
    rng = np.random.default_rng(seed)
    frames = []
    for backend in ("zeta", "alpha"):
        genders = rng.choice(np.array(["female", "male", "other", None], dtype=object), size=300)
        for repeat in (0, 1):
            table = score(IRI, random_answers(300, 0.3, seed=seed + repeat + (backend == "zeta")))
            table.insert(0, "backend_id", backend)
            table.insert(1, "model", "m")
            table.insert(3, "repeat", repeat)
            table.insert(4, "instrument", "iri")
            table["gender"] = np.repeat(genders, len(IRI.rating_subscales))
            frames.append(table)
    return pd.concat(frames, ignore_index=True)


def reference_comparison(scores: pd.DataFrame, attributes: tuple[str, ...] = ("gender",)) -> pd.DataFrame:
    """n, mean, sd per backend × subscale × norm sample × label, computed row by row: each
    respondent's mean over its answered repeats, its group by match_group on its own attributes,
    the pooled norm when it matches none or the group has no norm for the subscale."""
    means = (scores.dropna(subset=["score"])
             .groupby(["backend_id", "respondent_id", "subscale"], dropna=False)
             .agg(score=("score", "mean"), **{a: (a, "first") for a in attributes}).reset_index())
    rows = []
    for sample in IRI.norms:
        labels = []
        for rec in means.to_dict("records"):
            group = match_group(sample, {a: rec[a] for a in attributes})
            norm = norm_stats(IRI, sample, rec["subscale"], group) if group else None
            norm = norm or norm_stats(IRI, sample, rec["subscale"], None)
            labels.append(None if norm is None else norm.group_id)
        part = means.assign(norm_sample=sample.id, norm_group=labels).dropna(subset=["norm_group"])
        rows.append(part.groupby(["backend_id", "subscale", "norm_sample", "norm_group"])["score"]
                    .agg(n="count", mean="mean", sd=lambda x: x.std(ddof=1)).reset_index())
    return pd.concat(rows, ignore_index=True)


def assert_same_groups(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Every (backend, subscale, norm sample, group) row in both, with the same n, mean and SD."""
    keys = ["backend_id", "subscale", "norm_sample", "norm_group"]
    merged = got.merge(expected, on=keys, how="outer", suffixes=("", "_ref"), indicator=True)
    assert (merged["_merge"] == "both").all(), merged.loc[merged["_merge"] != "both", keys]
    assert merged["n"].tolist() == merged["n_ref"].tolist()
    np.testing.assert_allclose(merged["mean"], merged["mean_ref"], rtol=1e-12)
    np.testing.assert_allclose(merged["sd"], merged["sd_ref"], rtol=1e-12)


@pytest.mark.parametrize("repeats", [1, 2])
def test_compare_with_norms_equals_a_row_by_row_grouping(repeats):
    scores = scored_table(seed=3)
    scores = scores[scores["repeat"] < repeats].sample(frac=1.0, random_state=4)   # rows in any order
    got = compare_with_norms(scores, {"iri": IRI})
    expected = reference_comparison(scores)
    assert_same_groups(got, expected)
    assert got["backend_id"].tolist() == sorted(got["backend_id"])            # blocks in sorted order
    assert {"pooled", "women", "men"} <= set(got["norm_group"])


def test_compare_with_norms_on_a_wide_table_equals_a_row_by_row_computation():
    """The wide entry (score_wide's frame, attribute columns added) against the reference computed
    from reference_scores (melt, row by row) and match_group per respondent: a few thousand
    respondents, missing answers (so missing and prorated scores), genders written several ways,
    missing, or matching no group (pooled), and a second attribute no norm uses."""
    n = 3000
    rng = np.random.default_rng(7)
    answers = random_answers(n, 0.2, seed=5)
    gender = rng.choice(np.array(["female", "Woman", "F", "male", " M ", "other", None], dtype=object), size=n)
    age = rng.choice(np.array([19.0, 34.0, 61.0, np.nan]), size=n)
    wide = score_wide(IRI, answers).assign(gender=gender, age=age)
    got = compare_with_norms(wide, {"iri": IRI})

    long = reference_scores(answers)       # rows subscale by subscale: attributes joined on the id
    long.insert(0, "backend_id", "human")
    people = pd.DataFrame({"gender": gender, "age": age}, index=answers.index)
    long = long.join(people, on="respondent_id")
    expected = reference_comparison(long, attributes=("gender", "age"))
    assert_same_groups(got, expected)
    assert {"pooled", "all", "women", "men"} <= set(got["norm_group"])
    assert wide[[s.id for s in IRI.rating_subscales]].isna().any().all()    # every subscale has missing scores

    # The long table of the same answers gives the same table, to the last digit.
    scored = score(IRI, answers)
    scored["gender"] = np.repeat(gender, len(IRI.rating_subscales))
    scored["age"] = np.repeat(age, len(IRI.rating_subscales))
    pd.testing.assert_frame_equal(got, compare_with_norms(scored, {"iri": IRI}), check_exact=True)


def test_compare_with_norms_on_a_wide_table_with_repeats_and_backends():
    """wide_scores(prefix=False) of a long table (two backends, two repeats, `_n` and `_prorated`
    columns, keys as columns) compares as the long table itself."""
    long = scored_table(seed=9)
    got = compare_with_norms(wide_scores(long, prefix=False), {"iri": IRI})
    expected = compare_with_norms(long, {"iri": IRI})
    assert len(got) and got["backend_id"].nunique() == 2
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-10)   # means over repeats: last digits


def test_a_wide_table_is_of_one_instrument():
    wide = score_wide(IRI, random_answers(10, 0.0, seed=1)).assign(gender="female")
    with pytest.raises(ValueError, match="exactly one"):
        compare_with_norms(wide, {"iri": IRI, "other": IRI})
    with pytest.raises(KeyError, match="neither a `subscale` column"):
        compare_with_norms(wide.rename(columns=lambda c: c.lower()), {"iri": IRI})
