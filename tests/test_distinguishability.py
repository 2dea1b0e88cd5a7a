"""Classifier two-sample test (psyq.analysis.statistics.standin.distinguishability).

Independent checks:
* the AUC arithmetic: the rank AUCs against sklearn.metrics.roc_auc_score, DeLong's variances and
  covariance against the definition (DeLong et al., 1988) computed plainly here from the n₁ × n₀
  matrix of pairwise comparisons, on held-out scores of scikit-learn classifiers fitted here; the
  permutation machinery against the exact permutation distribution, enumerated here;
* calibration under the null: random halves of the same 1,973 Briganti et al. (2018) people
  (nothing can separate them) must give CIs covering .5 and roughly uniform p's;
* power: the people against a copy with one item shifted by a point must be told apart, with that
  item named first;
* bookkeeping (groups, balancing, missing answers, not estimable) against counts made here.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from psyq.analysis.statistics.standin.distinguishability import (COLUMNS, _delong, _permuted_max_auc,
                                                          distinguishability)


# iri and people (the 1,973 Briganti people's raw answers): tests/conftest.py


def _shifted(frame: pd.DataFrame, item: str, by: int = 1) -> pd.DataFrame:
    return frame.assign(**{item: (frame[item] + by).clip(0, 4)})


def _plain_delong(scores: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong et al. (1988) from the definition: ψ(X, Y) = 1, ½, 0 as the positive's score is above,
    equal to or below the negative's; V10 and V01 the row and column means of ψ; S10, S01 their
    sample covariances (n − 1); Var = S10/m + S01/n."""
    pos, neg = scores[:, y == 1], scores[:, y == 0]
    m, n = pos.shape[1], neg.shape[1]
    psi = [(p[:, None] > q[None, :]) + 0.5 * (p[:, None] == q[None, :]) for p, q in zip(pos, neg)]
    auc = np.array([s.mean() for s in psi])
    v10 = np.array([s.mean(axis=1) for s in psi])
    v01 = np.array([s.mean(axis=0) for s in psi])
    k = len(scores)
    cov = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            s10 = ((v10[a] - auc[a]) * (v10[b] - auc[b])).sum() / (m - 1)
            s01 = ((v01[a] - auc[a]) * (v01[b] - auc[b])).sum() / (n - 1)
            cov[a, b] = s10 / m + s01 / n
    return auc, cov


def test_auc_and_delong_against_sklearn_and_the_definition(people, iri):
    # Held-out scores of a logistic regression and boosted trees fitted here (people against the
    # people with item 10 shifted, 400 a side), plus rounded scores for ties; 200 cohort against
    # 150 people tested, so that m and n differ.
    items = [i.id for i in iri.rating_items]
    rng = np.random.default_rng(3)
    idx = rng.permutation(len(people))
    x = np.vstack([_shifted(people, "10").iloc[idx[:400]][items], people.iloc[idx[400:800]][items]])
    y = np.r_[np.ones(400), np.zeros(400)]
    train, test = train_test_split(np.arange(800), test_size=0.5, stratify=y, random_state=0)
    with threadpool_limits(limits=1):     # OpenMP threads on a busy machine: much slower
        linear = make_pipeline(StandardScaler(), LogisticRegression()).fit(x[train], y[train])
        trees = HistGradientBoostingClassifier(max_iter=30, max_depth=3).fit(x[train], y[train])
    scores = np.vstack([linear.decision_function(x[test]), trees.decision_function(x[test]),
                        np.round(linear.decision_function(x[test]))])       # many ties
    labels = y[test]
    keep = np.r_[np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)[:150]]   # 200 against 150
    scores, labels = scores[:, keep], labels[keep]
    assert len(np.unique(scores[2])) < 10
    auc, cov = _delong(scores, labels)
    for k in range(3):
        assert auc[k] == pytest.approx(roc_auc_score(labels, scores[k]), abs=1e-12)
    plain_auc, plain_cov = _plain_delong(scores, labels)
    np.testing.assert_allclose(auc, plain_auc, atol=1e-12)
    np.testing.assert_allclose(cov, plain_cov, rtol=1e-10, atol=1e-15)
    assert cov[0, 1] > 0                 # two classifiers of the same respondents: correlated AUCs


def test_reported_numbers_follow_from_the_held_out_scores(people, iri):
    # The function's own held-out scores (attrs["held_out"]) for two random sets of 300 people:
    # the AUCs by sklearn; the CI from the plain DeLong variances, each classifier's interval at
    # 97.5 % (z = Φ⁻¹(1 − .05/4), Bonferroni for two) and the larger bounds; the p by a plain loop
    # of 3,000 label permutations over the matrices of pairwise comparisons.
    idx = np.random.default_rng(11).permutation(len(people))
    result = distinguishability(people.iloc[idx[:300]], people.iloc[idx[300:600]], iri, seed=4)
    row, held = result.iloc[0], result.attrs["held_out"][0]
    assert list(held.columns) == ["cohort", "linear", "nonlinear"] and held["cohort"].sum() == row["n_test"] == 150
    scores, y = held[["linear", "nonlinear"]].to_numpy().T, held["cohort"].to_numpy()
    auc = [roc_auc_score(y, s) for s in scores]
    assert [row["auc_linear"], row["auc_nonlinear"]] == pytest.approx(auc, abs=1e-12)
    _, cov = _plain_delong(scores, y)
    z = 2.241402727604947                                  # Φ⁻¹(.9875); R: qnorm(0.9875) = 2.241403
    assert row["auc_low"] == pytest.approx(max(a - z * np.sqrt(v) for a, v in zip(auc, np.diag(cov))), abs=1e-9)
    assert row["auc_high"] == pytest.approx(max(a + z * np.sqrt(v) for a, v in zip(auc, np.diag(cov))), abs=1e-9)
    psi = [(s[:, None] > s[None, :]) + 0.5 * (s[:, None] == s[None, :]) for s in scores]
    rng = np.random.default_rng(0)
    count = 0
    for _ in range(3000):
        labels = rng.permutation(y).astype(bool)
        count += max(p[labels][:, ~labels].mean() for p in psi) >= max(auc) - 1e-12
    assert 0.05 < count / 3000 < 0.95                     # a p worth comparing
    assert row["p"] == pytest.approx(count / 3000, abs=0.05)


def test_permutation_distribution_is_the_exact_one():
    # 4 cohort and 4 people scored by two classifiers: the C(8, 4) = 70 labellings enumerated
    # here give the exact distribution of max(AUC₁, AUC₂) (sklearn's AUC); 20,000 random
    # permutations must reproduce it.
    scores = np.array([[0.1, 0.4, 0.35, 0.8, 0.5, 0.2, 0.9, 0.6],
                       [3.0, 1.0, 2.0, 2.0, 5.0, 4.0, 0.0, 6.0]])           # ties in the second
    y = np.r_[np.ones(4), np.zeros(4)]
    exact = []
    for cohort in itertools.combinations(range(8), 4):
        labels = np.isin(np.arange(8), cohort).astype(int)
        exact.append(max(roc_auc_score(labels, s) for s in scores))
    values, counts = np.unique(np.round(exact, 10), return_counts=True)
    permuted = np.round(_permuted_max_auc(scores, y, 20000, np.random.default_rng(0)), 10)
    assert set(np.unique(permuted)) <= set(values)
    shares = np.array([(permuted == v).mean() for v in values])
    np.testing.assert_allclose(shares, counts / 70, atol=0.012)      # ≈ 3.5 binomial SDs at most


def test_null_calibration_on_random_halves_of_the_people(people, iri):
    # Two random, disjoint sets of the Briganti people per split: nothing can tell them apart.
    # 200 splits of the full 1,973 take ~40 s here, so each split uses 2 × 300 people (and 200
    # permutations). The CI must cover .5 in ≥ 94 % of the splits; p < .05 in 1–10 % of them.
    rng = np.random.default_rng(20240501)
    rows = []
    for split in range(200):
        idx = rng.permutation(len(people))
        rows.append(distinguishability(people.iloc[idx[:300]], people.iloc[idx[300:600]], iri,
                                       permutations=200, seed=split).iloc[0])
    result = pd.DataFrame(rows)
    assert result["auc"].notna().all()
    covered = ((result["auc_low"] <= 0.5) & (result["auc_high"] >= 0.5)).mean()
    assert covered >= 0.94
    assert 0.01 <= (result["p"] < 0.05).mean() <= 0.10
    assert 0.05 <= (result["p"] < 0.2).mean() <= 0.35     # and not piled up anywhere
    assert abs(result["auc"].mean() - 0.5) < 0.03


def test_power_against_a_copy_with_one_item_shifted(people, iri):
    # Item 10 one point higher (clipped to 0–4) in a copy of the people: the classifier must
    # separate them and the single-item AUCs name item 10 first (every other item is identical).
    result = distinguishability(_shifted(people, "10"), people, iri)
    row = result.iloc[0]
    assert row["auc_low"] > 0.55 and row["p"] < 0.01
    assert row["auc_low"] <= row["auc"] <= row["auc_high"]
    assert row["auc"] == max(row["auc_linear"], row["auc_nonlinear"])
    assert row["top_items"].split(", ")[0].startswith("10 (")
    # the item's own AUC, computed by sklearn on the answers
    n = len(people)
    own = roc_auc_score(np.r_[np.ones(n), np.zeros(n)], np.r_[_shifted(people, "10")["10"], people["10"]])
    assert 0.5 < own < 1 and row["top_items"].split(", ")[0] == f"10 (.{f'{own:.2f}'[2:]})"
    assert row["balance"] == f"equal sizes ({n} each)" and row["n_used"] == n and abs(row["n_test"] - n / 2) <= 0.5
    # no permutation of 986 + 986 labels comes near an AUC this far above .5 (null SD ≈ .013)
    assert row["p"] == 1 / 1001
    # deterministic given the seed
    pd.testing.assert_frame_equal(result, distinguishability(_shifted(people, "10"), people, iri))


def test_by_groups_balance_and_not_estimable(people, iri):
    # A cohort of three backends: A (600 shifted people), B (5 people: too few), C (1,500 people
    # plus 10 more than the people have, i.e. the people get subsampled in C's row).
    rng = np.random.default_rng(1)
    idx = rng.permutation(len(people))
    a = _shifted(people.iloc[idx[:600]], "3", by=2).assign(backend_id="A")
    b = people.iloc[idx[600:605]].assign(backend_id="B")
    c = people.iloc[np.r_[idx[605:], idx[:610]]].assign(backend_id="C")
    assert len(c) == len(people) + 5
    cohort = pd.concat([c, b, a])
    result = distinguishability(cohort, people, iri, by="backend_id", permutations=200)
    assert list(result.columns) == ["backend_id", *COLUMNS]
    assert result["backend_id"].tolist() == ["A", "B", "C"]
    rows = result.set_index("backend_id")
    assert rows.loc["A", "auc_low"] > 0.5 and rows.loc["A", "top_items"].startswith("3 (")
    assert rows.loc["A", "balance"] == f"people subsampled {len(people)} → 600 at random (seed 0)"
    assert rows.loc["C", "balance"] == f"cohort subsampled {len(people) + 5} → {len(people)} at random (seed 0)"
    assert np.isnan(rows.loc["B", ["auc", "auc_low", "auc_high", "p", "auc_linear", "auc_nonlinear"]]
                    .astype(float)).all()
    assert "not estimable" in rows.loc["B", "note"] and "cohort 5" in rows.loc["B", "note"]
    # each group is compared on its own: A's row is what A alone gives
    alone = distinguishability(a, people, iri, permutations=200).iloc[0]
    assert rows.loc["A", "auc"] == alone["auc"] and rows.loc["A", "p"] == alone["p"]


def test_missing_answers_are_counted_and_noted(people, iri):
    # 300 people against 300 others; the cohort misses item 5 entirely, some answers at random and
    # two respondents miss everything. Counts checked against isna() here.
    items = [i.id for i in iri.rating_items]
    rng = np.random.default_rng(2)
    idx = rng.permutation(len(people))
    cohort = people.iloc[idx[:302]].copy()
    cohort[items] = cohort[items].mask(rng.random((302, 28)) < 0.05)
    cohort["5"] = np.nan
    cohort.iloc[:2, [cohort.columns.get_loc(i) for i in items]] = np.nan
    humans = people.iloc[idx[302:602]].copy()
    humans["7"] = humans["7"].mask(rng.random(300) < 0.1)
    row = distinguishability(cohort, humans, items, permutations=200).iloc[0]
    assert row["n_cohort"] == 300 and row["n_people"] == 300 and row["n_used"] == 300
    assert row["n_missing_cohort"] == int(cohort.iloc[2:][items].isna().sum().sum())
    assert row["n_missing_people"] == int(humans[items].isna().sum().sum())
    assert "2 cohort respondent(s) without any answer left out" in row["note"]
    assert "item(s) 5 unanswered by every cohort respondent used: that alone separates" in row["note"]
    assert "only the" not in row["note"]    # both sides have missing answers
    assert row["auc"] > 0.95                # the missing item gives the cohort away
    # the items' own AUCs over the answers given (sklearn's), the three furthest from .5; none
    # for item 5, which the cohort never answered
    own = {i: roc_auc_score(np.r_[np.ones(cohort[i].notna().sum()), np.zeros(humans[i].notna().sum())],
                            np.r_[cohort[i].dropna(), humans[i].dropna()]) for i in items if i != "5"}
    top = sorted(own, key=lambda i: -abs(own[i] - 0.5))[:3]
    assert row["top_items"] == ", ".join(f"{i} (.{f'{own[i]:.2f}'[2:]})" for i in top)


def test_identical_constant_answers_are_not_estimable():
    # Every respondent on both sides answers 2, 2, 2: nothing to tell apart, NaN with a note;
    # a constant cohort against varied people is estimable, with a note.
    constant = pd.DataFrame(2.0, index=range(30), columns=["a", "b", "c"])
    row = distinguishability(constant, constant, ["a", "b", "c"], permutations=50).iloc[0]
    assert np.isnan(row["auc"]) and "every respondent on both sides gave the same answers" in row["note"]
    varied = pd.DataFrame(np.random.default_rng(0).integers(0, 5, (200, 3)), columns=["a", "b", "c"]).astype(float)
    row = distinguishability(constant.reindex(range(200), fill_value=2.0), varied, ["a", "b", "c"],
                             permutations=50).iloc[0]
    assert row["auc"] > 0.6 and "every cohort respondent used gave the same answers" in row["note"]


def test_exactly_the_minimum_per_side_is_estimable_one_fewer_is_not():
    # Guards the minimum per side (MIN_PER_SIDE = 10; fewer is not estimable, so the comparison is
    # "< 10", not "<= 10"): 10 respondents on a side are compared, 9 are not — on either side, and with
    # the other side the same size or larger. Where estimable, the reported AUCs are sklearn's
    # roc_auc_score of the held-out scores, 5 per side tested (half of the 10 used).
    rng = np.random.default_rng(3)
    items = ["a", "b", "c"]

    def sample(n: int, shift: float = 0.0) -> pd.DataFrame:
        return pd.DataFrame(rng.normal(shift, 1.0, (n, 3)), columns=items)

    for n_cohort, n_people in ((10, 10), (10, 40), (40, 10)):
        result = distinguishability(sample(n_cohort, 1.0), sample(n_people), items, permutations=50)
        row, held = result.iloc[0], result.attrs["held_out"][0]
        assert row["note"] == "" and np.isfinite(row[["auc", "auc_low", "auc_high", "p"]].astype(float)).all(), \
            (n_cohort, n_people, row["note"])
        assert row["n_used"] == 10 and row["n_test"] == 5 and held is not None and len(held) == 10
        assert [row["auc_linear"], row["auc_nonlinear"]] == pytest.approx(
            [roc_auc_score(held["cohort"], held[c]) for c in ("linear", "nonlinear")], abs=1e-12)
    for n_cohort, n_people, short in ((9, 10, "cohort 9"), (10, 9, "people 9"), (9, 40, "cohort 9"), (40, 9, "people 9")):
        result = distinguishability(sample(n_cohort, 1.0), sample(n_people), items, permutations=50)
        row = result.iloc[0]
        assert np.isnan(row[["auc", "auc_low", "auc_high", "p"]].astype(float)).all()
        assert result.attrs["held_out"][0] is None
        assert row["note"] == f"not estimable: fewer than 10 respondents with answers on a side ({short})"


def test_balancing_subsample_holds_distinct_respondents():
    # Guards the balancing subsample's being drawn WITHOUT replacement: the larger side's subsample
    # must hold each respondent at most once. The cohort has 41 respondents, every row distinct
    # (continuous answers), the people 40, so 40 of the 41 are drawn; drawn with replacement, about 14
    # of the 40 would be repeats. Observable: the logistic regression's held-out score is an affine
    # function of the answers, so two distinct cohort rows get distinct scores and a repeated row the
    # same score twice — among the 20 cohort respondents tested every linear score must differ. Five
    # seeds (five subsamples and splits).
    rng = np.random.default_rng(5)
    items = ["a", "b", "c", "d"]
    cohort = pd.DataFrame(rng.normal(0.3, 1.0, (41, 4)), columns=items)
    people = pd.DataFrame(rng.normal(0.0, 1.0, (40, 4)), columns=items)
    assert not cohort.duplicated().any()
    for seed in range(5):
        result = distinguishability(cohort, people, items, permutations=20, seed=seed)
        row, held = result.iloc[0], result.attrs["held_out"][0]
        assert row["balance"] == f"cohort subsampled 41 → 40 at random (seed {seed})" and row["n_test"] == 20
        tested = held.loc[held["cohort"] == 1, "linear"].to_numpy()
        assert len(tested) == 20
        repeats = len(tested) - len(np.unique(tested))
        assert repeats == 0, f"seed {seed}: {repeats} cohort respondent(s) tested twice (drawn with replacement)"
