"""Persona replies against reference replies (e.g. clinicians'), per rubric dimension.

From the tidy ratings of :func:`psyq.engine.store.ratings.read_ratings`: the score of a reply on a dimension
is the mean level its raters *of one kind* gave it (judges and people are never pooled: their
scales may differ, see :mod:`psyq.analysis.statistics.rater_agreement`), computed on the unperturbed texts only
(perturbed versions are the robustness analysis's). A combined score (``overall``) is formed per
rater as the rubric's ``combine`` says, or, without one, as the mean of the rubric's dimensions
present in the ratings; only when that rater gave every one of them a level (never from part).

The comparison is a linear mixed model, score ~ persona (1 for a persona's reply, 0 for a
reference reply) with a random intercept per help-seeker message (``item_id``), statsmodels
MixedLM fitted by REML; the coefficient is persona − reference in rubric levels. When the mixed
model cannot be used (fewer than 3 messages, no convergence, a random-effect variance of 0) the
fallback is OLS with the message as a fixed effect, or plain OLS, and ``model``/``note`` say so.

Checked in tests/test_response_comparison.py: means, SDs and t intervals by hand with numpy and
scipy, and, in a balanced design, the source coefficient of the OLS with message fixed effects
against the difference of the two means.

Example
-------
Four help-seeker messages, each answered by a persona and by a reference, one judge:

>>> ratings = pd.DataFrame({"response_id": ["p1", "c1", "p2", "c2", "p3", "c3", "p4", "c4"],
...                         "source": ["persona", "reference"] * 4,
...                         "item_id": [f"m{k}" for k in (1, 1, 2, 2, 3, 3, 4, 4)],
...                         "trial_id": ["t1", None, "t2", None, "t3", None, "t4", None], "perturbation": None,
...                         "rubric_id": "r", "dimension": "warmth", "rater_kind": "judge", "rater_id": "j1",
...                         "level": [4, 2, 4, 3, 3, 2, 3, 1]})
>>> scores = target_scores(ratings, "judge")
>>> compare_sources(scores)[["dimension", "b", "n", "n_messages", "model"]]
  dimension    b  n  n_messages                                       model
0    warmth  1.5  8           4  mixed model (random intercept per message)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from psyq.analysis.statistics.intervals import mean_interval

MIN_MESSAGES = 3
"""A random intercept per message needs at least this many messages."""

SCORE_COLUMNS = ["rubric_id", "dimension", "rater_kind", "response_id", "source", "item_id", "trial_id", "score",
                 "n_raters"]
DESCRIPTIVE_COLUMNS = ["rubric_id", "dimension", "rater_kind", "source", "n", "mean", "sd", "mean_ci_low",
                       "mean_ci_high"]
COMPARISON_COLUMNS = ["rubric_id", "dimension", "rater_kind", "term", "b", "b_ci_low", "b_ci_high", "b_se", "p", "n",
                      "n_messages", "model", "note"]
"""Columns of :func:`compare_sources` and :func:`attribute_effects`: ``b`` is the coefficient in rubric levels."""


def with_combined(ratings: pd.DataFrame, combine: Mapping[str, Mapping[str, Sequence[str]]] | None = None
                  ) -> tuple[pd.DataFrame, list[str]]:
    """`ratings` plus the combined scores of every target × rater, and sentences saying how
    each was formed. `combine` maps a rubric id to {combined name: [dimensions averaged]} (a
    rubric's ``combine:``); a rubric without an entry gets ``overall`` = mean of its dimensions
    present in `ratings` (when it has two or more). A rater's combined level is NaN (status
    ``incomplete``) unless that rater gave every named dimension a level.

    Example
    -------
    >>> rows = pd.DataFrame({"response_id": "a", "rubric_id": "r", "rater_kind": "judge", "rater_id": "j",
    ...                      "dimension": ["x", "y"], "level": [3.0, 2.0]})
    >>> out, how = with_combined(rows)
    >>> out[out["dimension"] == "overall"]["level"].tolist(), how[0][:36]
    ([2.5], "r: 'overall' is the mean of x and y ")
    """
    combine = combine or {}
    parts, how = [ratings], []
    for rubric, rows in ratings.groupby("rubric_id", sort=True):
        rules = dict(combine.get(rubric) or {})
        if not rules:
            dims = list(dict.fromkeys(rows["dimension"]))
            if len(dims) < 2:
                continue
            rules = {"overall": dims}
            how.append(f"{rubric}: 'overall' is the mean of {' and '.join(dims)} (the dimensions rated; "
                       "no combine rule of the rubric was read), formed per rater only when all have a level.")
        else:
            how.extend(f"{rubric}: '{name}' is the mean of {' and '.join(dims)} (the rubric's combine rule), "
                       "formed per rater only when all have a level." for name, dims in rules.items())
        for name, dims in rules.items():
            if name in set(rows["dimension"]):
                continue                           # stored already (e.g. rated directly): not recomputed
            wide = rows.pivot_table(index=["response_id", "rater_kind", "rater_id"], columns="dimension",
                                    values="level", aggfunc="first", dropna=False).reindex(columns=list(dims))
            first = rows.drop_duplicates(["response_id", "rater_kind", "rater_id"]).set_index(
                ["response_id", "rater_kind", "rater_id"]).reindex(wide.index)
            complete = wide.notna().all(axis=1)
            out = first.reset_index()
            out["dimension"] = name
            out["level"] = np.where(complete, wide.mean(axis=1), np.nan)
            if "status" in out.columns:
                out["status"] = np.where(complete, "combined", "incomplete")
            if "reason" in out.columns:
                out["reason"] = np.where(complete, f"mean of {', '.join(dims)}", "a dimension has no level")
            parts.append(out[list(ratings.columns)])
    return pd.concat(parts, ignore_index=True), how


def target_scores(ratings: pd.DataFrame, rater_kind: str) -> pd.DataFrame:
    """The score of every unperturbed target per rubric × dimension: the mean level of the
    raters of `rater_kind` ("judge" or "human") who gave one (columns :data:`SCORE_COLUMNS`).

    Example
    -------
    >>> rows = pd.DataFrame({"response_id": "a", "source": "persona", "item_id": "m1", "trial_id": "t",
    ...                      "perturbation": None, "rubric_id": "r", "dimension": "x",
    ...                      "rater_kind": "judge", "rater_id": ["j1", "j2"], "level": [3.0, 2.0]})
    >>> target_scores(rows, "judge")[["score", "n_raters"]].values.tolist()
    [[2.5, 2.0]]
    """
    rows = ratings[(ratings["rater_kind"] == rater_kind) & ratings["level"].notna()]
    if "perturbation" in rows.columns:
        rows = rows[rows["perturbation"].isna()]
    keys = ["rubric_id", "dimension", "rater_kind", "response_id", "source", "item_id", "trial_id"]
    if rows.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    out = (rows.assign(level=rows["level"].astype(float)).groupby(keys, dropna=False, sort=True)["level"]
           .agg(score="mean", n_raters="count").reset_index())
    out["n_raters"] = out["n_raters"].astype(float)
    return out[SCORE_COLUMNS]


def descriptives(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean (SD) and the mean's 95 % CI (t) of target scores per rubric × dimension × rater
    kind × source (columns :data:`DESCRIPTIVE_COLUMNS`); n = replies (targets).

    Example
    -------
    Four messages, each answered by a persona and by a reference; judges' mean levels:

    >>> scores = pd.DataFrame({"rubric_id": "r", "dimension": "warmth", "rater_kind": "judge",
    ...                        "response_id": ["p1", "c1", "p2", "c2", "p3", "c3", "p4", "c4"],
    ...                        "source": ["persona", "reference"] * 4,
    ...                        "item_id": [f"m{k}" for k in (1, 1, 2, 2, 3, 3, 4, 4)],
    ...                        "trial_id": ["t1", None, "t2", None, "t3", None, "t4", None],
    ...                        "score": [3.5, 2.0, 4.0, 3.0, 2.5, 2.0, 3.0, 1.0], "n_raters": 2.0})
    >>> descriptives(scores)[["dimension", "source", "n", "mean", "sd", "mean_ci_low", "mean_ci_high"]].round(3)
      dimension     source  n  mean     sd  mean_ci_low  mean_ci_high
    0    warmth    persona  4  3.25  0.645        2.223         4.277
    1    warmth  reference  4  2.00  0.816        0.701         3.299
    """
    rows = []
    for key, group in scores.groupby(["rubric_id", "dimension", "rater_kind", "source"], sort=True):
        x = group["score"].to_numpy(dtype=float)
        n, mean = len(x), float(x.mean())
        sd = float(x.std(ddof=1)) if n > 1 else math.nan
        low, high = mean_interval(mean, sd, n) if n > 1 and sd > 0 else (math.nan, math.nan)
        rows.append(dict(zip(["rubric_id", "dimension", "rater_kind", "source"], key), n=n, mean=mean, sd=sd,
                         mean_ci_low=low, mean_ci_high=high))
    return pd.DataFrame(rows, columns=DESCRIPTIVE_COLUMNS)


def _terms(data: pd.DataFrame, predictors: Sequence[str]) -> str:
    return " + ".join(p if pd.api.types.is_numeric_dtype(data[p]) else f"C({p})" for p in predictors)


def fit_with_fallback(data: pd.DataFrame, predictors: Sequence[str], *, confidence: float = 0.95
                      ) -> tuple[pd.DataFrame, str, list[str]]:
    """Fit score ~ `predictors` with a random intercept per message (``item_id``); fall back to
    OLS with message fixed effects, then plain OLS. Returns (coefficients other than the
    intercept: ``term, b, b_ci_low, b_ci_high, b_se, p``), the model used, and notes on why a
    fallback was needed. Empty coefficients when not even OLS has residual degrees of freedom.
    The intervals are at `confidence` (normal for the mixed model, t for OLS, as statsmodels gives them).

    Example
    -------
    Four messages, each answered by a persona and by a reference; judges' mean levels:

    >>> scores = pd.DataFrame({"rubric_id": "r", "dimension": "warmth", "rater_kind": "judge",
    ...                        "response_id": ["p1", "c1", "p2", "c2", "p3", "c3", "p4", "c4"],
    ...                        "source": ["persona", "reference"] * 4,
    ...                        "item_id": [f"m{k}" for k in (1, 1, 2, 2, 3, 3, 4, 4)],
    ...                        "trial_id": ["t1", None, "t2", None, "t3", None, "t4", None],
    ...                        "score": [3.5, 2.0, 4.0, 3.0, 2.5, 2.0, 3.0, 1.0], "n_raters": 2.0})
    >>> data = scores.assign(persona=(scores["source"] == "persona").astype(float))
    >>> coef, model, notes = fit_with_fallback(data, ["persona"])
    >>> coef[["term", "b", "b_se"]].round(3)
          term     b   b_se
    0  persona  1.25  0.323
    >>> model, notes
    ('mixed model (random intercept per message)', [])
    """
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    formula = "score ~ " + _terms(data, predictors)
    notes: list[str] = []
    n_messages = data["item_id"].nunique()
    design = smf.ols(formula, data).exog          # the fixed-effect design every model below shares
    if np.linalg.matrix_rank(design) < design.shape[1]:
        notes.append("not estimable: the predictors are collinear among these replies (rank-deficient design)")
        return pd.DataFrame(columns=["term", "b", "b_ci_low", "b_ci_high", "b_se", "p"]), "none", notes
    if n_messages < MIN_MESSAGES:
        notes.append(f"mixed model not fitted: {n_messages} message(s), a random intercept needs {MIN_MESSAGES}")
    else:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = smf.mixedlm(formula, data, groups=data["item_id"]).fit(reml=True)
            var_re = float(res.cov_re.iloc[0, 0])
            problems = [str(w.message).split("\n")[0] for w in caught if issubclass(w.category, ConvergenceWarning)]
            if not res.converged:
                notes.append("mixed model did not converge")
            elif var_re < 1e-8:
                notes.append("mixed model singular: the message variance was estimated at 0")
            elif not np.all(np.isfinite(res.bse[res.model.exog_names])):
                notes.append("mixed model gave no standard errors (" + "; ".join(problems) + ")")
            else:
                return (_coefficients(res, res.model.exog_names, confidence),
                        "mixed model (random intercept per message)", notes)
        except (ValueError, np.linalg.LinAlgError) as err:
            notes.append(f"mixed model could not be fitted ({err})")
    for label, extra in (("OLS with the message as a fixed effect", " + C(item_id)"), ("OLS", "")):
        if extra and n_messages < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # a rank-deficient design is checked just below and skipped
            res = smf.ols(formula + extra, data).fit()
        if res.df_resid >= 1 and res.model.rank == res.model.exog.shape[1]:
            names = [n for n in res.model.exog_names if not n.startswith("C(item_id)")]
            return _coefficients(res, names, confidence), label, notes
    notes.append("not estimable: too few replies for the terms (no residual degrees of freedom)")
    return pd.DataFrame(columns=["term", "b", "b_ci_low", "b_ci_high", "b_se", "p"]), "none", notes


def _coefficients(res, names: Sequence[str], confidence: float = 0.95) -> pd.DataFrame:
    ci = res.conf_int(alpha=1 - confidence)
    keep = [n for n in names if n != "Intercept"]
    return pd.DataFrame({"term": keep, "b": [float(res.params[n]) for n in keep],
                         "b_ci_low": [float(ci.loc[n, 0]) for n in keep], "b_ci_high": [float(ci.loc[n, 1]) for n in keep],
                         "b_se": [float(res.bse[n]) for n in keep], "p": [float(res.pvalues[n]) for n in keep]})


def compare_sources(scores: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Persona replies − reference replies per rubric × dimension × rater kind (columns
    :data:`COMPARISON_COLUMNS`; ``term`` = "persona − reference"), the interval at `confidence`.
    Without replies of both sources the row says "not estimable" and why.

    Example
    -------
    Four messages, each answered by a persona and by a reference; judges' mean levels:

    >>> scores = pd.DataFrame({"rubric_id": "r", "dimension": "warmth", "rater_kind": "judge",
    ...                        "response_id": ["p1", "c1", "p2", "c2", "p3", "c3", "p4", "c4"],
    ...                        "source": ["persona", "reference"] * 4,
    ...                        "item_id": [f"m{k}" for k in (1, 1, 2, 2, 3, 3, 4, 4)],
    ...                        "trial_id": ["t1", None, "t2", None, "t3", None, "t4", None],
    ...                        "score": [3.5, 2.0, 4.0, 3.0, 2.5, 2.0, 3.0, 1.0], "n_raters": 2.0})
    >>> compare_sources(scores)[["term", "b", "b_ci_low", "b_ci_high", "n", "n_messages"]].round(3)
                      term     b  b_ci_low  b_ci_high  n  n_messages
    0  persona − reference  1.25     0.617      1.883  8           4
    """
    rows = []
    for (rubric, dimension, kind), group in scores.groupby(["rubric_id", "dimension", "rater_kind"], sort=True):
        base = {"rubric_id": rubric, "dimension": dimension, "rater_kind": kind, "term": "persona − reference",
                "n": len(group), "n_messages": group["item_id"].nunique()}
        missing = {"persona", "reference"} - set(group["source"])
        if missing:
            rows.append(base | {"model": "none", "note": f"not estimable: no {' or '.join(sorted(missing))} "
                                                         "replies were rated"})
            continue
        data = group.assign(persona=(group["source"] == "persona").astype(float))
        coef, model, notes = fit_with_fallback(data, ["persona"], confidence=confidence)
        row = base | {"model": model, "note": "; ".join(notes)}
        if not coef.empty:
            row |= coef.iloc[0].drop("term").to_dict()
        rows.append(row)
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def attribute_effects(scores: pd.DataFrame, attributes: pd.DataFrame, predictors: Sequence[str]) -> pd.DataFrame:
    """Persona attributes as predictors of persona replies' scores (random intercept per
    message, same fallbacks as :func:`compare_sources`), per rubric × dimension × rater kind.
    `attributes` is indexed by ``trial_id``; predictors that do not vary are left out and said.

    Example
    -------
    Four messages, each answered by a persona and by a reference; judges' mean levels:

    >>> scores = pd.DataFrame({"rubric_id": "r", "dimension": "warmth", "rater_kind": "judge",
    ...                        "response_id": ["p1", "c1", "p2", "c2", "p3", "c3", "p4", "c4"],
    ...                        "source": ["persona", "reference"] * 4,
    ...                        "item_id": [f"m{k}" for k in (1, 1, 2, 2, 3, 3, 4, 4)],
    ...                        "trial_id": ["t1", None, "t2", None, "t3", None, "t4", None],
    ...                        "score": [3.5, 2.0, 4.0, 3.0, 2.5, 2.0, 3.0, 1.0], "n_raters": 2.0})
    >>> attrs = pd.DataFrame({"age": [20, 35, 50, 65], "gender": "female"},
    ...                      index=pd.Index(["t1", "t2", "t3", "t4"], name="trial_id"))
    >>> attribute_effects(scores, attrs, ["age", "gender"])[["term", "b", "n", "note"]].round(3)
      term     b  n                             note
    0  age -0.02  4  left out (no variation): gender
    """
    rows = []
    persona = scores[scores["source"] == "persona"].join(attributes[list(predictors)], on="trial_id")
    for (rubric, dimension, kind), group in persona.groupby(["rubric_id", "dimension", "rater_kind"], sort=True):
        group = group.dropna(subset=list(predictors))
        used = [p for p in predictors if group[p].nunique() > 1]
        base = {"rubric_id": rubric, "dimension": dimension, "rater_kind": kind, "n": len(group),
                "n_messages": group["item_id"].nunique()}
        left_out = [p for p in predictors if p not in used]
        if not used:
            rows.append(base | {"term": ", ".join(predictors), "model": "none",
                                "note": "not estimable: no predictor varies among the rated persona replies"})
            continue
        coef, model, notes = fit_with_fallback(group, used)
        if left_out:
            notes.append(f"left out (no variation): {', '.join(left_out)}")
        if coef.empty:
            rows.append(base | {"term": ", ".join(used), "model": model, "note": "; ".join(notes)})
        for c in coef.to_dict("records"):
            rows.append(base | c | {"model": model, "note": "; ".join(notes)})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
