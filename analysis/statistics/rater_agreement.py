"""Agreement between the raters of rated replies: ICCs, Krippendorff's α, judge against human.

Every function takes the tidy ratings frame of :func:`psyq.engine.store.ratings.read_ratings` (one row per
target × rubric × dimension × rater; columns :data:`psyq.engine.store.ratings.RATING_COLUMNS`) and returns a
tidy frame with one row per rubric × dimension (× rater set, × judge). Ratings without a level
(NaN: the rater gave none) are left out, never imputed. A statistic that cannot be estimated
(one rater, fewer than three targets, no variance) is NaN with a ``note`` that starts with
"not estimable:" and says why; what was dropped to compute one (ICC needs every rater's level
of every target) is counted in ``n_dropped`` and said in ``note``.

Raters are told apart by kind and id (``judge:gpt``, ``human:h1``), so a person and a judge
with the same id stay two raters. The rater sets are every rater (``all``), the judges only
(``judges``) and the people only (``humans``).

Checked in tests/test_rater_agreement.py: ICCs from the two-way ANOVA mean squares by hand with
numpy and against the values Shrout & Fleiss (1979) publish for their example; Krippendorff's α from
the coincidence matrix by hand and against the value Krippendorff (2011) publishes for his example;
judge against human by hand.

Example
-------
>>> rows = pd.DataFrame({"response_id": list("aabbccdd"), "rubric_id": "r", "dimension": "d",
...                      "rater_kind": "judge", "rater_id": ["x", "y"] * 4,
...                      "level": [1, 1, 2, 2, 3, 2, 3, 3]})
>>> icc_table(rows, sets=("judges",))[["type", "n_targets", "n_raters"]].values.tolist()
[['ICC(2,1)', 4, 2], ['ICC(2,k)', 4, 2]]
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg
from scipy import stats

RATER_SETS: dict[str, tuple[str, ...]] = {"all": ("judge", "human"), "judges": ("judge",), "humans": ("human",)}
"""Rater set name -> the rater kinds in it."""

MIN_TARGETS = 3
"""Fewer targets than this: no agreement statistic is estimated (one value per target is no test)."""

KEYS = ["rubric_id", "dimension"]
ICC_COLUMNS = KEYS + ["raters", "type", "icc", "ci_low", "ci_high", "n_targets", "n_raters", "n_dropped", "note"]
ALPHA_COLUMNS = KEYS + ["raters", "alpha", "level_of_measurement", "n_targets", "n_raters", "n_ratings", "note"]
JUDGE_HUMAN_COLUMNS = KEYS + ["judge_id", "n", "n_humans", "mean_judge", "mean_human", "bias", "bias_ci_low",
                              "bias_ci_high", "pearson_r", "pearson_p", "spearman_rho", "spearman_p", "note"]


def rated(ratings: pd.DataFrame) -> pd.DataFrame:
    """The ratings that have a level, with a ``rater`` column (``<kind>:<id>``)."""
    out = ratings[ratings["level"].notna()].copy()
    out["level"] = out["level"].astype(float)
    out["rater"] = out["rater_kind"].astype(str) + ":" + out["rater_id"].astype(str)
    return out


def rater_matrix(ratings: pd.DataFrame, kinds: Sequence[str] = ("judge", "human")) -> pd.DataFrame:
    """Targets × raters matrix of levels (NaN where a rater gave none) of one rubric dimension.

    Example
    -------
    >>> rows = pd.DataFrame({"response_id": ["a", "a", "b"], "rater_kind": "judge",
    ...                      "rater_id": ["x", "y", "x"], "level": [1, 2, 3]})
    >>> rater_matrix(rows).to_dict("list")
    {'judge:x': [1.0, 3.0], 'judge:y': [2.0, nan]}
    """
    rows = rated(ratings)
    rows = rows[rows["rater_kind"].isin(kinds)]
    return rows.pivot_table(index="response_id", columns="rater", values="level", aggfunc="first").rename_axis(
        columns=None)


def _no_variance(values: np.ndarray) -> bool:
    values = values[~np.isnan(values)]
    return values.size == 0 or np.ptp(values) == 0


@contextmanager
def _unrounded_ci() -> Iterator[None]:
    """pingouin rounds CIs to 2 decimals by default (its public option ``round.column.CI95``);
    the report rounds for print itself, and the CSV keeps full precision."""
    saved = pg.options.get("round.column.CI95")
    pg.options["round.column.CI95"] = None
    try:
        yield
    finally:
        pg.options["round.column.CI95"] = saved


def icc_of(matrix: pd.DataFrame) -> dict[str, object]:
    """ICC(2,1) and ICC(2,k) (two-way random effects, absolute agreement; Shrout & Fleiss 1979,
    McGraw & Wong 1996 ICC(A,1)/ICC(A,k)) with 95 % CIs, from a targets × raters matrix.

    Only targets with a level from every rater enter (the two-way ANOVA needs a complete
    matrix); the others are counted in ``n_dropped``. Returns ``icc_1, icc_1_low, icc_1_high,
    icc_k, icc_k_low, icc_k_high, n_targets, n_raters, n_dropped, note``.

    Example
    -------
    >>> m = pd.DataFrame({"a": [1, 2, 3, 3], "b": [1, 2, 2, 3]})
    >>> round(icc_of(m)["icc_1"], 3)
    0.842
    """
    k = matrix.shape[1]
    complete = matrix.dropna(how="any")
    n, dropped = len(complete), len(matrix) - len(complete)
    out: dict[str, object] = {"icc_1": np.nan, "icc_1_low": np.nan, "icc_1_high": np.nan, "icc_k": np.nan,
                              "icc_k_low": np.nan, "icc_k_high": np.nan, "n_targets": n, "n_raters": k,
                              "n_dropped": dropped, "note": ""}
    dropped_note = (f"{dropped} target(s) left out: not rated by every one of the {k} raters "
                    "(the ICC needs a complete targets × raters table)") if dropped else ""
    if k < 2:
        out["note"] = "not estimable: fewer than 2 raters"
    elif n < MIN_TARGETS:
        out["note"] = f"not estimable: {n} target(s) rated by every rater (fewer than {MIN_TARGETS})"
    elif _no_variance(complete.to_numpy(dtype=float)):
        out["note"] = "not estimable: every rating is the same level (no variance)"
    else:
        long = complete.reset_index(names="target").melt(id_vars="target", var_name="rater", value_name="level")
        with np.errstate(all="ignore"), _unrounded_ci(), warnings.catch_warnings():
            # pingouin's own use of a pandas API pandas has deprecated: not something a user can act on
            warnings.simplefilter("ignore", DeprecationWarning)
            icc = pg.intraclass_corr(long, targets="target", raters="rater", ratings="level").set_index("Type")
        for suffix, label in (("1", "ICC(A,1)"), ("k", "ICC(A,k)")):
            value = float(icc.loc[label, "ICC"])
            low, high = (float(x) for x in icc.loc[label, "CI95"])
            out.update({f"icc_{suffix}": value, f"icc_{suffix}_low": low, f"icc_{suffix}_high": high})
        if not np.isfinite(out["icc_1"]):
            out["note"] = "not estimable: the ANOVA mean squares give no ICC (no variance between targets)"
    out["note"] = "; ".join(x for x in (out["note"], dropped_note) if x)
    return out


def rater_set_matrices(ratings: pd.DataFrame, sets: Sequence[str]) -> Iterator[tuple[str, str, str, pd.DataFrame]]:
    """(rubric, dimension, rater set, targets × raters matrix) for every rubric dimension and
    rater set with at least one rater there (the unit both agreement statistics are taken on)."""
    for (rubric, dimension), group in rated(ratings).groupby(KEYS, sort=True):
        for name in sets:
            matrix = rater_matrix(group, RATER_SETS[name])
            if matrix.shape[1] > 0:
                yield rubric, dimension, name, matrix


def icc_table(ratings: pd.DataFrame, sets: Sequence[str] = tuple(RATER_SETS)) -> pd.DataFrame:
    """ICC(2,1) and ICC(2,k) per rubric × dimension × rater set (columns :data:`ICC_COLUMNS`).

    A rater set with no rater in a dimension gets no row (a run with judges only has no
    ``humans`` rows); one with a single rater gets rows that say it is not estimable.

    Example
    -------
    >>> rows = pd.DataFrame({"response_id": list("aabbccdd"), "rubric_id": "r", "dimension": "d",
    ...                      "rater_kind": "judge", "rater_id": ["x", "y"] * 4,
    ...                      "level": [1, 1, 2, 2, 3, 2, 3, 3]})
    >>> table = icc_table(rows)
    >>> table.columns.tolist() == ICC_COLUMNS
    True
    >>> table[["raters", "type", "icc", "n_targets", "n_raters"]].round(3)
       raters      type    icc  n_targets  n_raters
    0     all  ICC(2,1)  0.842          4         2
    1     all  ICC(2,k)  0.914          4         2
    2  judges  ICC(2,1)  0.842          4         2
    3  judges  ICC(2,k)  0.914          4         2
    """
    rows = []
    for rubric, dimension, name, matrix in rater_set_matrices(ratings, sets):
        res = icc_of(matrix)
        for suffix, label in (("1", "ICC(2,1)"), ("k", "ICC(2,k)")):
            rows.append({"rubric_id": rubric, "dimension": dimension, "raters": name, "type": label,
                         "icc": res[f"icc_{suffix}"], "ci_low": res[f"icc_{suffix}_low"],
                         "ci_high": res[f"icc_{suffix}_high"], "n_targets": res["n_targets"],
                         "n_raters": res["n_raters"], "n_dropped": res["n_dropped"], "note": res["note"]})
    return pd.DataFrame(rows, columns=ICC_COLUMNS)


def alpha_of(matrix: pd.DataFrame, level_of_measurement: str = "ordinal") -> dict[str, object]:
    """Krippendorff's α of a targets × raters matrix (missing levels allowed: α uses every
    target with at least two levels), with the `krippendorff` package. The value domain is the
    levels observed (for ordinal α an unobserved level changes nothing: its count is zero).

    Returns ``alpha, n_targets`` (targets with ≥ 2 levels), ``n_raters, n_ratings, note``.

    Example
    -------
    >>> m = pd.DataFrame({"a": [1, 2, 3, 3], "b": [1, 2, 2, None]})
    >>> alpha_of(m)["n_targets"]
    3
    """
    values = matrix.to_numpy(dtype=float)
    pairable = (~np.isnan(values)).sum(axis=1) >= 2
    n, k = int(pairable.sum()), matrix.shape[1]
    out: dict[str, object] = {"alpha": np.nan, "n_targets": n, "n_raters": k,
                              "n_ratings": int((~np.isnan(values[pairable])).sum()), "note": ""}
    if k < 2:
        out["note"] = "not estimable: fewer than 2 raters"
    elif n < MIN_TARGETS:
        out["note"] = f"not estimable: {n} target(s) with levels from 2 or more raters (fewer than {MIN_TARGETS})"
    elif _no_variance(values[pairable]):
        out["note"] = "not estimable: every rating is the same level (no variance)"
    else:
        # krippendorff wants raters × units
        out["alpha"] = float(krippendorff.alpha(reliability_data=values[pairable].T,
                                                value_domain=np.unique(values[~np.isnan(values)]),
                                                level_of_measurement=level_of_measurement))
        if (~pairable).any():
            out["note"] = f"{int((~pairable).sum())} target(s) with a level from only one rater carry no information"
    return out


def alpha_table(ratings: pd.DataFrame, sets: Sequence[str] = tuple(RATER_SETS),
                level_of_measurement: str = "ordinal") -> pd.DataFrame:
    """Krippendorff's α (ordinal by default) per rubric × dimension × rater set (columns
    :data:`ALPHA_COLUMNS`).

    Example
    -------
    >>> rows = pd.DataFrame({"response_id": list("aabbccdd"), "rubric_id": "r", "dimension": "d",
    ...                      "rater_kind": "judge", "rater_id": ["x", "y"] * 4,
    ...                      "level": [1, 1, 2, 2, 3, 2, 3, 3]})
    >>> alpha_table(rows, sets=("judges",))[["raters", "alpha", "n_targets", "n_ratings"]].round(3)
       raters  alpha  n_targets  n_ratings
    0  judges   0.79          4          8
    """
    rows = [{"rubric_id": rubric, "dimension": dimension, "raters": name,
             "level_of_measurement": level_of_measurement, **alpha_of(matrix, level_of_measurement)}
            for rubric, dimension, name, matrix in rater_set_matrices(ratings, sets)]
    return pd.DataFrame(rows, columns=ALPHA_COLUMNS)


def judge_vs_human(ratings: pd.DataFrame) -> pd.DataFrame:
    """Each judge against the people, per rubric × dimension (columns :data:`JUDGE_HUMAN_COLUMNS`).

    On the targets a judge and at least one person rated: the human level of a target is the
    mean of its human raters' levels; ``bias`` = mean of (judge − human) with its 95 % CI (t
    distribution, paired), ``pearson_r``/``spearman_rho`` with their p values; ``n`` targets,
    ``n_humans`` people involved. Fewer than 3 targets, or a judge or human mean that does not
    vary, give NaN for what cannot be estimated and say so in ``note``.

    Example
    -------
    >>> rows = pd.DataFrame({"response_id": list("aabbccdd"), "rubric_id": "r", "dimension": "d",
    ...                      "rater_kind": ["judge", "human"] * 4, "rater_id": ["x", "h1"] * 4,
    ...                      "level": [1, 1, 2, 2, 3, 2, 3, 3]})
    >>> table = judge_vs_human(rows)
    >>> table.columns.tolist() == JUDGE_HUMAN_COLUMNS
    True
    >>> table[["judge_id", "n", "n_humans", "mean_judge", "mean_human", "bias", "pearson_r"]].round(3)
      judge_id  n  n_humans  mean_judge  mean_human  bias  pearson_r
    0        x  4         1        2.25         2.0  0.25      0.853
    """
    out = []
    for (rubric, dimension), group in rated(ratings).groupby(KEYS, sort=True):
        humans = group[group["rater_kind"] == "human"]
        judges = group[group["rater_kind"] == "judge"]
        if humans.empty or judges.empty:
            continue
        human_mean = humans.groupby("response_id")["level"].mean().rename("human")
        for judge, rows in judges.groupby("rater_id", sort=True):
            both = rows.set_index("response_id")["level"].rename("judge").to_frame().join(human_mean, how="inner")
            out.append({"rubric_id": rubric, "dimension": dimension, "judge_id": judge,
                        "n_humans": int(humans[humans["response_id"].isin(both.index)]["rater_id"].nunique()),
                        **paired_agreement(both["judge"].to_numpy(), both["human"].to_numpy())})
    return pd.DataFrame(out, columns=JUDGE_HUMAN_COLUMNS)


def paired_agreement(judge: np.ndarray, human: np.ndarray) -> dict[str, object]:
    """Bias (mean judge − human, 95 % CI), Pearson and Spearman correlation of paired levels.

    Example
    -------
    >>> r = paired_agreement(np.array([1., 2, 3, 3]), np.array([1., 2, 2, 2.5]))
    >>> r["n"], round(r["bias"], 3)
    (4, 0.375)
    """
    n = len(judge)
    res: dict[str, object] = {"n": n, "mean_judge": float(judge.mean()) if n else np.nan,
                              "mean_human": float(human.mean()) if n else np.nan, "bias": np.nan,
                              "bias_ci_low": np.nan, "bias_ci_high": np.nan, "pearson_r": np.nan,
                              "pearson_p": np.nan, "spearman_rho": np.nan, "spearman_p": np.nan, "note": ""}
    if n < MIN_TARGETS:
        res["note"] = f"not estimable: {n} target(s) rated by this judge and a person (fewer than {MIN_TARGETS})"
        return res
    diff = judge - human
    res["bias"] = float(diff.mean())
    notes = []
    if np.ptp(diff) == 0:
        notes.append("bias CI not estimable: the difference is the same on every target")
    else:
        ci = stats.ttest_1samp(diff, 0.0).confidence_interval(0.95)
        res["bias_ci_low"], res["bias_ci_high"] = float(ci.low), float(ci.high)
    if np.ptp(judge) == 0 or np.ptp(human) == 0:
        who = "the judge" if np.ptp(judge) == 0 else "the people"
        notes.append(f"r not estimable: {who} gave every target the same level (no variance)")
    else:
        pr, sr = stats.pearsonr(judge, human), stats.spearmanr(judge, human)
        res.update(pearson_r=float(pr[0]), pearson_p=float(pr[1]), spearman_rho=float(sr[0]),
                   spearman_p=float(sr[1]))
    res["note"] = "; ".join(notes)
    return res
