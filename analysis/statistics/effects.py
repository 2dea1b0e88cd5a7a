"""Which model and which persona attributes move the scores: regression on subscale scores.

Checked in tests/test_effects.py: the OLS estimates against a least-squares fit computed by hand
from an answer table, the mixed model (statsmodels MixedLM) by recovering the random-intercept and
residual variances of simulated data.

Example
-------
`run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml, 4 personas, one answer set each:

>>> from psyq import load_run_scores
>>> scores = load_run_scores(run_dir)
>>> model_effects(scores, ["gender", "age"])[["subscale", "model", "term", "estimate"]].head(3).round(2)
  subscale model               term  estimate
0        X   ols          Intercept     17.17
1        X   ols  C(gender)[T.male]     -2.00
2        X   ols                age     -0.33
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from psyq.analysis.scoring.scores import RESPONDENT_KEYS

CONFIDENCE = 0.95
SCORE_COLUMNS = RESPONDENT_KEYS + ["instrument", "subscale", "score", "n_answered", "n_items", "prorated"]
EFFECT_COLUMNS = ["instrument", "subscale", "model", "term", "estimate", "se", "ci_low", "ci_high", "p", "n",
                  "estimable", "note"]
# A residual variance at or below this share of the scores' variance is zero up to rounding: the
# model reproduces every score (e.g. identical repeats) and its SEs and p values mean nothing.
ZERO_SHARE = 1e-8
RESPONDENT_VARIANCE = "var(respondent)"
RESIDUAL_VARIANCE = "var(residual)"


def _term(name: str, categorical: bool) -> str:
    ref = name if name.isidentifier() else f'Q("{name}")'
    return f"C({ref})" if categorical else ref


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def _model_data(rows: pd.DataFrame, predictors: Sequence[str], attributes: list[str]) -> pd.DataFrame:
    """Rows with a score and every predictor, baseline respondents (no attribute at all) removed."""
    keep = rows["score"].notna()
    if attributes:
        keep &= rows[attributes].notna().any(axis=1)
    for name in predictors:
        keep &= rows[name].notna()
    data = rows[keep].copy()
    data["score"] = data["score"].astype(float)
    data["backend_id"] = _levels(data["backend_id"])
    for name in predictors:
        data[name] = data[name].astype(float) if _is_numeric(data[name]) else _levels(data[name])
    return data.reset_index(drop=True)


def _levels(column: pd.Series) -> pd.Categorical:
    """A categorical predictor as text levels in sorted order: the levels patsy would find by
    sorting the texts itself, element by element (a second per model at 10⁵ scores)."""
    text = column.astype(str).to_numpy(dtype=object)
    return pd.Categorical(text, categories=sorted(set(pd.unique(text))))


def _tidy(instrument: str, subscale: str, kind: str, names: list[str], fit, n: int) -> list[dict]:
    ci = fit.conf_int(alpha=1 - CONFIDENCE)
    return [{"instrument": instrument, "subscale": subscale, "model": kind, "term": name,
             "estimate": float(fit.params[name]), "se": float(fit.bse[name]),
             "ci_low": float(ci.loc[name].iloc[0]), "ci_high": float(ci.loc[name].iloc[1]),
             "p": float(fit.pvalues[name]), "n": n, "estimable": True, "note": ""} for name in names]


def _not_estimable(instrument: str, subscale: str, kind: str, names: list[str], n: int, note: str) -> list[dict]:
    """One row per term with no number, saying why."""
    return [{"instrument": instrument, "subscale": subscale, "model": kind, "term": name, "estimate": math.nan,
             "se": math.nan, "ci_low": math.nan, "ci_high": math.nan, "p": math.nan, "n": n,
             "estimable": False, "note": note} for name in names]


def design_problem(data: pd.DataFrame, exog: np.ndarray, respondent: pd.Series, repeated: bool) -> str | None:
    """Why a model of these scores cannot be estimated before fitting it (None: it may be).

    Constant scores leave nothing to explain; a rank-deficient design (collinear predictors, e.g.
    every woman the same age) has no unique coefficients; with repeats, identical scores within
    every respondent leave no residual variance for the mixed model.

    Example
    -------
    >>> d = pd.DataFrame({"score": [1.0, 1.0, 1.0]})
    >>> design_problem(d, np.ones((3, 1)), pd.Series(["a", "b", "c"]), False)
    'every score is equal (no variance to explain)'
    """
    score = data["score"].to_numpy(dtype=float)
    if np.ptp(score) == 0:
        return "every score is equal (no variance to explain)"
    rank = np.linalg.matrix_rank(exog)
    if rank < exog.shape[1]:
        return (f"the design is singular (rank {rank} of {exog.shape[1]} coefficients): some predictors are "
                "collinear, so their effects cannot be told apart")
    if repeated and float(data.groupby(respondent.to_numpy())["score"].var(ddof=0).max()) <= ZERO_SHARE * score.var():
        return ("every respondent has the same score on every repeat (residual variance 0): a random-intercept "
                "model is degenerate; SEs, intervals and p values would mean nothing")
    return None


def model_effects(scores: pd.DataFrame, predictors: Sequence[str]) -> pd.DataFrame:
    """Regression of each subscale score on the backend and on persona attributes.

    Per instrument × subscale the formula is ``score ~ C(backend_id) + <predictors>`` (the
    backend term only when more than one backend is present). A predictor is entered as a
    category, ``C(name)``, unless its column is numeric (then linearly, as is). Treatment coding:
    each category is compared with the first level in sorted order (e.g. the alphabetically
    first backend), so ``C(backend_id)[T.b]`` is "backend b minus the reference backend,
    persona attributes held equal".

    Rows without a score or without one of the predictors are dropped, and so are baseline
    respondents (no persona attribute at all), also when `predictors` is empty. A predictor that
    takes a single value in a subscale's data cannot be estimated; it is left out with a warning.

    * One answer set per respondent: OLS (statsmodels), classical standard errors, t-based CI.
    * Repeats (some respondent scored more than once): a linear mixed model with a random
      intercept per respondent (backend × respondent_id: the same persona under two backends is
      two simulated people), fitted by REML (statsmodels ``MixedLM``); Wald z-based CIs. Two
      further rows give the variance components, ``var(respondent)`` (between respondents) and
      ``var(residual)`` (between repeats of one respondent), with no SE, CI or p (Wald intervals
      of variances are poor). Their ratio ``var(respondent) / (var(respondent) + var(residual))``
      is the share of score variance that is stable person-to-person rather than sampling noise.

    Parameters
    ----------
    scores : DataFrame
        The output of :func:`psyq.analysis.scoring.scores.score_answers`.
    predictors : sequence of str
        Persona attribute columns to enter.

    Returns
    -------
    DataFrame
        ``instrument, subscale, model ('ols'|'mixedlm'), term, estimate, se, ci_low, ci_high, p,
        n, estimable, note`` with ``n`` the number of scores used. A subscale whose model is not
        estimable — constant scores, a singular design (collinear predictors), or a residual
        variance of zero (identical repeats, a perfect fit) — gets rows with no numbers,
        ``estimable`` False and the reason in ``note`` (and a warning with the same text). An OLS
        fit that reproduces every score keeps its (exact) estimates but no SE, CI or p.

    Example
    -------
    `run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml, 4 personas.

    >>> from psyq import load_run_scores
    >>> effects = model_effects(load_run_scores(run_dir), ["gender", "age"])
    >>> effects.query("term == 'age'")[["subscale", "model", "estimate", "se", "ci_low", "ci_high", "p", "n"]].round(3)
      subscale model  estimate     se  ci_low  ci_high      p  n
    2        X   ols    -0.333  0.167  -2.451    1.784  0.295  4
    5        Y   ols     0.097  0.014  -0.079    0.274  0.090  4
    8        Z   ols    -0.028  0.028  -0.381    0.325  0.500  4

    References
    ----------
    Laird, N. M., & Ware, J. H. (1982). Random-effects models for longitudinal data.
    *Biometrics*, 38(4), 963–974. Patterson, H. D., & Thompson, R. (1971). Recovery of inter-block
    information when block sizes are unequal. *Biometrika*, 58(3), 545–554 (REML). Seabold, S., &
    Perktold, J. (2010). statsmodels: Econometric and statistical modeling with Python.
    *Proceedings of the 9th Python in Science Conference* (OLS, MixedLM).
    """
    predictors = list(predictors)
    absent = [p for p in predictors if p not in scores.columns]
    if absent:
        raise ValueError(f"predictor(s) not in the scores table: {', '.join(absent)}")
    if "backend_id" in predictors:
        raise ValueError("backend_id is entered automatically when there is more than one backend")
    attributes = [c for c in scores.columns if c not in SCORE_COLUMNS]
    rows: list[dict] = []
    for (inst_id, sub_id), group in scores.groupby(["instrument", "subscale"], sort=True):
        data = _model_data(group, predictors, attributes)
        if data.empty:
            continue
        terms = ["C(backend_id)"] if data["backend_id"].nunique() > 1 else []
        for name in predictors:
            if data[name].nunique() < 2:
                warnings.warn(f"{inst_id}/{sub_id}: predictor '{name}' has a single value and is left out",
                              stacklevel=2)
                continue
            terms.append(_term(name, categorical=not _is_numeric(data[name])))
        formula = "score ~ " + (" + ".join(terms) if terms else "1")
        respondent = data["backend_id"].astype(str) + "\x1f" + data["respondent_id"].astype(str)
        repeated = respondent.duplicated().any()
        model = (smf.mixedlm(formula, data, groups=respondent.to_numpy()) if repeated
                 else smf.ols(formula, data))
        n_params = len(model.exog_names)
        if len(data) <= n_params or (repeated and respondent.nunique() <= n_params):
            warnings.warn(f"{inst_id}/{sub_id}: {len(data)} scores are too few for {n_params} coefficients; "
                          "no model fitted", stacklevel=2)
            continue
        n = len(data)
        kind = "mixedlm" if repeated else "ols"
        names = list(model.exog_names) + ([RESPONDENT_VARIANCE, RESIDUAL_VARIANCE] if repeated else [])
        problem = design_problem(data, np.asarray(model.exog), respondent, repeated)
        if problem:
            warnings.warn(f"{inst_id}/{sub_id}: not estimable: {problem}", stacklevel=2)
            rows += _not_estimable(inst_id, sub_id, kind, names, n, problem)
            continue
        score_var = float(data["score"].var(ddof=0))
        if repeated:
            fit = model.fit(reml=True)
            residual = float(fit.scale)
            if not np.isfinite(residual) or residual <= ZERO_SHARE * score_var:
                problem = (f"residual variance {residual:.2g} is zero against a score variance of {score_var:.3g}: "
                           "the model reproduces every score, so SEs, intervals and p values would mean nothing")
                warnings.warn(f"{inst_id}/{sub_id}: not estimable: {problem}", stacklevel=2)
                rows += _not_estimable(inst_id, sub_id, kind, names, n, problem)
                continue
            rows += _tidy(inst_id, sub_id, "mixedlm", list(fit.fe_params.index), fit, n)
            for term, value in ((RESPONDENT_VARIANCE, float(fit.cov_re.iloc[0, 0])),
                                (RESIDUAL_VARIANCE, residual)):
                rows.append({"instrument": inst_id, "subscale": sub_id, "model": "mixedlm", "term": term,
                             "estimate": value, "se": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                             "p": math.nan, "n": n, "estimable": True, "note": ""})
        else:
            fit = model.fit()
            if fit.ssr <= ZERO_SHARE * score_var * n:
                # A full-rank exact fit has exact, unique coefficients; only their uncertainty is undefined.
                problem = ("the predictors reproduce every score exactly (residual variance 0): the coefficients "
                           "are exact differences, but SEs, intervals and p values are not estimable")
                warnings.warn(f"{inst_id}/{sub_id}: {problem}", stacklevel=2)
                exact = _not_estimable(inst_id, sub_id, kind, names, n, problem)
                for row in exact:
                    row["estimate"] = float(fit.params[row["term"]])
                rows += exact
                continue
            rows += _tidy(inst_id, sub_id, "ols", list(model.exog_names), fit, n)
    if not rows:
        return pd.DataFrame({c: [] for c in EFFECT_COLUMNS})
    out = pd.DataFrame(rows, columns=EFFECT_COLUMNS)
    out["n"] = out["n"].astype(np.int64)
    return out
