"""Prediction-powered inference: the people's mean, helped by their twins.

A cohort may hold *twins*: personas made from real people, each persona's id being its person's
respondent id. With ``n`` people measured **and** their twins, plus ``N`` twins whose people are not
used, prediction-powered inference (PPI; Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, 2023) gives
a confidence interval for the *people's* mean that stays valid however wrong the twins are, and is
narrower than the people alone give when the twins track their people. The twins of the measured
people estimate how far off the twins are (the *rectifier*); the other twins carry the mean of the
twins to where no person was measured. With power tuning (PPI++; Angelopoulos, Duchi & Zrnic, 2023)
the twins are weighted by λ ∈ [0, 1], chosen from the data: λ = 0 is the classical estimate from the
people alone, λ = 1 the original PPI. In a *mixed-subjects design* (Broska, Howes & van Loon, 2025)
the people are the expensive subjects and the twins the cheap ones.

For one subscale, with Y the n people's scores, f their twins' scores (same order) and f̃ the N
other twins' scores (the mean-estimation case of PPI++, as ``ppi_py.ppi_mean_ci`` computes it):

* λ̂ = Cov(Y, f) / ((1 + n/N) · Var(f ∪ f̃)), clipped to [0, 1]; the covariance over the n pairs
  with divisor n, the variance over all n + N twins with divisor n + N − 1 (ppi_py's choices);
* θ̂ = mean(Y − λ̂ f) + λ̂ · mean(f̃);
* SE² = Var(Y − λ̂ f)/n + λ̂² Var(f̃)/N (divisors n and N); the CI θ̂ ± z₁₋α/₂ · SE (normal).

The classical CI beside it is the people's alone, in the same normal form (ppi_py's
``classical_mean_ci``): mean(Y) ± z · SD(Y)/√n, SD with divisor n. Normal rather than t so that the
two intervals differ only by what the twins add: their width ratio is exactly √(Var_classical /
Var_PPI). (Both are large-sample intervals; at n = 30 a t interval would be 4 % wider.)
``effective_n`` = n · Var_classical / Var_PPI = SD(Y)² / SE²: the number of people alone that would
give the PPI interval's width.

Checked in ``tests/test_prediction_powered.py`` against ppi_py 0.2.3 (PyPI ``ppi-python``):
``ppi_mean_pointestimate``, ``ppi_mean_ci`` (λ power-tuned) and ``classical_mean_ci`` agree to
1e-6 on real people's IRI scores with simulated twins; the coverage of the 95 % interval with
biased twins is checked on 1,000 simulated data sets.

Example
-------
Six people and their twins, who track them roughly, running a point high; eight other twins:

>>> ids = [f"r{i}" for i in range(1, 7)]
>>> people = pd.DataFrame({"PT": [10., 14, 18, 12, 20, 16]}, index=ids)
>>> twins = pd.DataFrame({"PT": [13., 15, 18, 15, 21, 16]}, index=ids)
>>> other_twins = pd.DataFrame({"PT": [11., 16, 21, 14, 19, 13, 18, 15]},
...                            index=[f"r{i}" for i in range(7, 15)])
>>> result = prediction_powered(people, twins, other_twins)
>>> result[["subscale", "estimate", "ci_low", "ci_high", "classical_low", "classical_high"]].round(2)
  subscale  estimate  ci_low  ci_high  classical_low  classical_high
0       PT     14.76   12.69    16.83          12.27           17.73
>>> result[["lambda", "n", "N", "effective_n"]].round(2)
   lambda  n  N  effective_n
0    0.53  6  8        10.45
>>> people_needed(people, twins, width=2.0)[["subscale", "people_needed", "people_needed_classical"]]
  subscale  people_needed  people_needed_classical
0       PT              8                       54

References
----------
Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., & Zrnic, T. (2023).
Prediction-powered inference. *Science*, 382(6671), 669–674. Angelopoulos, A. N., Duchi, J. C., &
Zrnic, T. (2023). PPI++: Efficient prediction-powered inference. arXiv:2311.01453. Broska, D.,
Howes, M., & van Loon, A. (2025). The mixed subjects design: Treating large language models as
(potentially) informative observations. *Sociological Methods & Research*.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from psyq.analysis.scoring.scores import RESPONDENT_KEYS, SCORE_VALUES
from psyq.engine.files.codebook import WEIGHT_COLUMN

COLUMNS = ["subscale", "quantity", "group", "contrast", "estimate", "ci_low", "ci_high", "classical_estimate",
           "classical_low", "classical_high", "effective_n", "lambda", "n", "N", "dropped", "note"]
NEEDED_COLUMNS = ["subscale", "width", "people_needed", "people_needed_classical", "other_n", "note"]
MEAN, DIFFERENCE, ALL = "mean", "difference", "all"
MIN_N = 3
"""Fewest people with twins for an estimate."""
_NOT_SCORES = {*RESPONDENT_KEYS, *SCORE_VALUES, WEIGHT_COLUMN}


# --- the computation, vectorised over leading axes ----------------------------------------------------------

def _ppi_mean(y: np.ndarray, f: np.ndarray, f_other: np.ndarray) -> dict[str, np.ndarray]:
    """PPI++ for the mean, power-tuned as ``ppi_py.ppi_mean_ci`` (lam=None) does it, over the last
    axis: `y` and `f` (..., n), paired; `f_other` (..., N), N ≥ 1. Returns arrays of the leading
    shape: ``estimate``, ``se``, ``lambda``, ``classical_estimate``, ``classical_se``.

    The twins' scores must vary (else λ is 0/0: NaN).
    """
    n, big_n = y.shape[-1], f_other.shape[-1]
    y_mean, f_mean = y.mean(axis=-1), f.mean(axis=-1)
    cov = ((y - y_mean[..., None]) * (f - f_mean[..., None])).mean(axis=-1)
    var_f = np.concatenate([f, f_other], axis=-1).var(axis=-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.clip(cov / ((1 + n / big_n) * var_f), 0.0, 1.0)
    rectifier = y - lam[..., None] * f
    imputed = lam[..., None] * f_other
    estimate = imputed.mean(axis=-1) + rectifier.mean(axis=-1)
    se = np.sqrt(imputed.var(axis=-1) / big_n + rectifier.var(axis=-1) / n)
    return {"estimate": estimate, "se": se, "lambda": lam,
            "classical_estimate": y_mean, "classical_se": y.std(axis=-1) / np.sqrt(n)}


def _z(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), not {alpha}")
    return float(stats.norm.ppf(1 - alpha / 2))


# --- inputs ---------------------------------------------------------------------------------------------------

def _by_id(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """`frame` indexed by its ids as stripped text (as :func:`psyq.analysis.statistics.standin.twins.match_twins`
    compares them); ValueError on a repeated id (which row would be the person's?)."""
    out = frame.set_axis(frame.index.astype(str).str.strip())
    repeated = out.index[out.index.duplicated()].unique()
    if len(repeated):
        raise ValueError(f"`{name}` has repeated ids: {', '.join(map(str, repeated[:5]))}")
    return out


def _is_score(frame: pd.DataFrame, column) -> bool:
    dtype = frame[column].dtype
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _subscales(frames: Sequence[pd.DataFrame], subscales: Iterable[str] | None, exclude: set) -> list[str]:
    """The score columns: `subscales` when given (each must be in every frame), else the numeric
    columns of the first frame that every frame has and are numeric in each, except respondent keys,
    long-table columns, the survey weight, the `groups` column and the ``<subscale>_n`` /
    ``<subscale>_prorated`` companions of a wide score table."""
    if subscales is not None:
        chosen = list(subscales)
        for frame, name in zip(frames, ("people", "twins", "other_twins")):
            missing = [s for s in chosen if s not in frame.columns]
            if missing:
                raise ValueError(f"`{name}` has no column {', '.join(map(str, missing))}")
        return chosen
    first = frames[0]
    companions = {c for c in first.columns for suffix in ("_n", "_prorated")
                  if isinstance(c, str) and c.endswith(suffix) and c[: -len(suffix)] in first.columns}
    chosen = [c for c in first.columns if c not in _NOT_SCORES and c not in exclude and c not in companions
              and all(c in frame.columns and _is_score(frame, c) for frame in frames)]
    if not chosen:
        raise ValueError("no score column common to people, twins and other_twins: pass subscales=")
    return chosen


def _values(frame: pd.DataFrame, column) -> np.ndarray:
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)


# --- prediction_powered ---------------------------------------------------------------------------------------

def _estimate(y: np.ndarray, f: np.ndarray, f_other: np.ndarray, z: float) -> dict:
    """One mean: the PPI++ and classical estimates and CIs, with the standard errors (``_se``,
    ``_classical_se``) the difference needs, NaN and a note where not estimable."""
    n, big_n = len(y), len(f_other)
    out = {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "classical_estimate": np.nan,
           "classical_low": np.nan, "classical_high": np.nan, "effective_n": np.nan, "lambda": np.nan,
           "n": n, "N": big_n, "note": "", "_se": np.nan, "_classical_se": np.nan}
    if n < MIN_N:
        out["note"] = f"not estimable: {n} people with twins (at least {MIN_N} needed)"
        return out
    classical, classical_se = float(y.mean()), float(y.std() / math.sqrt(n))
    out.update(classical_estimate=classical, classical_low=classical - z * classical_se,
               classical_high=classical + z * classical_se, _classical_se=classical_se)
    if big_n == 0:
        out["note"] = ("PPI not estimable: no other twins (N = 0); without them PPI reduces to the "
                       "classical estimate from the people alone")
        return out
    if np.ptp(np.concatenate([f, f_other])) == 0:
        out["note"] = ("PPI not estimable: the twins' scores do not vary (λ is 0/0); "
                       "such twins carry no information")
        return out
    core = {k: float(v) for k, v in _ppi_mean(y, f, f_other).items()}
    se = core["se"]
    out.update(estimate=core["estimate"], ci_low=core["estimate"] - z * se, ci_high=core["estimate"] + z * se,
               **{"lambda": core["lambda"]}, _se=se)
    if se > 0:
        out["effective_n"] = n * classical_se ** 2 / se ** 2
    else:
        out["note"] = "effective n not estimable: the people's scores do not vary (both intervals have width 0)"
    return out


def _difference(a: dict, b: dict, z: float, label_a, label_b) -> dict:
    """B − A of two independent group estimates: the estimates subtracted, the variances added."""
    out = {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "classical_estimate": np.nan,
           "classical_low": np.nan, "classical_high": np.nan, "effective_n": np.nan, "lambda": np.nan,
           "n": a["n"] + b["n"], "N": a["N"] + b["N"], "note": ""}
    notes = [f"{label}: {g['note']}" for label, g in ((label_a, a), (label_b, b)) if g["note"]]
    out["note"] = "; ".join(notes)
    if not (np.isnan(a["_classical_se"]) or np.isnan(b["_classical_se"])):
        d, se = b["classical_estimate"] - a["classical_estimate"], math.hypot(a["_classical_se"], b["_classical_se"])
        out.update(classical_estimate=d, classical_low=d - z * se, classical_high=d + z * se)
    if not (np.isnan(a["_se"]) or np.isnan(b["_se"])):
        d, se = b["estimate"] - a["estimate"], math.hypot(a["_se"], b["_se"])
        out.update(estimate=d, ci_low=d - z * se, ci_high=d + z * se)
        classical_var = a["_classical_se"] ** 2 + b["_classical_se"] ** 2
        if se > 0:
            out["effective_n"] = out["n"] * classical_var / se ** 2
    return out


def prediction_powered(people: pd.DataFrame, twins: pd.DataFrame, other_twins: pd.DataFrame, *,
                       groups: str | None = None, alpha: float = 0.05,
                       subscales: Iterable[str] | None = None) -> pd.DataFrame:
    """Per subscale, the prediction-powered (PPI++, power-tuned) estimate of the people's mean and
    its CI, beside the classical CI from the people alone (formulas in the module's docstring).

    Parameters
    ----------
    people : DataFrame
        The n people's scores, as :func:`psyq.engine.trials.scoring.score_wide` gives them (one
        column per subscale id, indexed by respondent id), attribute columns allowed.
    twins : DataFrame
        Their twins' scores, indexed by the same ids (the persona id is the person's respondent id;
        compared as stripped text). Per subscale only the ids in both frames with a score on both
        sides are used; twins without a person in `people` are ignored.
    other_twins : DataFrame
        N twins whose people are not used (ValueError if one's id is a person of `people`: it
        would be used twice). A missing score leaves that twin out of that subscale.
    groups : str, optional
        An attribute column of `people` and `other_twins` with exactly two levels (e.g.
        ``"gender"``; ValueError otherwise). Adds, per subscale, a ``mean`` row per level and a
        ``difference`` row: level B − level A in alphabetical order, named in ``contrast``. The twin
        of a person takes the person's level (from `people`; the twins' own column is not read).
        The groups are independent: the difference's estimate is the difference of the two PPI++
        estimates (each with its own λ), its variance their sum; the classical difference is the
        Welch (unequal-variance) difference of the people's means, normal. ``effective_n`` of the
        difference = (n_A + n_B) · Var_classical / Var_PPI: the people alone, split between the
        groups as these are, giving the same width.
    alpha : float
        1 − the CIs' coverage.
    subscales : iterable of str, optional
        The score columns. By default: the numeric columns of `people` that `twins` and
        `other_twins` have as numeric columns too, except `groups`, respondent keys
        (``backend_id``, ``model``, ``respondent_id``, ``repeat``), long-table columns, the survey
        weight and the ``_n``/``_prorated`` companions of a wide score table. A numeric attribute
        that all three frames have (``age``) would be taken for a score: pass `subscales` then.

    Returns
    -------
    DataFrame
        One row per subscale (``quantity`` "mean", ``group`` "all"), and with `groups` two
        ``mean`` rows per subscale (``group`` the level) and a ``difference`` row (``group`` "",
        ``contrast`` "B - A"). Columns: ``subscale, quantity, group, contrast, estimate, ci_low,
        ci_high`` (PPI++), ``classical_estimate, classical_low, classical_high`` (people alone),
        ``effective_n``, ``lambda`` (NaN in a difference row: see the group rows), ``n`` (people with
        twins used), ``N`` (other twins used), ``dropped`` (rows of `people` not used: no twin, a
        missing score, or no group level) and ``note``. Not estimable, with the reason in ``note``:
        everything when n < 3; the PPI columns when N = 0 (PPI then reduces to the classical
        estimate, which is given) or when the twins' scores do not vary.

    Example
    -------
    >>> people = pd.DataFrame({"EC": [12., 16, 20, 18, 15, 22], "gender": ["f", "m", "f", "m", "m", "f"]},
    ...                       index=list("abcdef"))
    >>> twins = pd.DataFrame({"EC": [14., 17, 21, 18, 17, 21]}, index=list("abcdef"))
    >>> other = pd.DataFrame({"EC": [15., 17, 19, 20, 16, 14], "gender": ["f", "f", "f", "m", "m", "m"]},
    ...                      index=list("ghijkl"))
    >>> result = prediction_powered(people, twins, other, groups="gender")
    >>> result[["quantity", "group", "contrast", "estimate", "classical_estimate", "n", "N"]].round(2)
         quantity group contrast  estimate  classical_estimate  n  N
    0        mean   all              16.42               17.17  6  6
    1        mean     f              16.70               18.00  3  3
    2        mean     m              16.29               16.33  3  3
    3  difference          m - f     -0.41               -1.67  6  6
    """
    z = _z(alpha)
    people, twins, other_twins = _by_id(people, "people"), _by_id(twins, "twins"), _by_id(other_twins, "other_twins")
    twice = people.index.intersection(other_twins.index)
    if len(twice):
        raise ValueError(f"other_twins holds twins of people in `people` ({len(twice)}, e.g. {twice[0]}): "
                         "their people would be used twice; leave them out of other_twins")
    chosen = _subscales([people, twins, other_twins], subscales, {groups} if groups is not None else set())
    ids = people.index[people.index.isin(twins.index)]
    levels: list = []
    if groups is not None:
        for frame, name in ((people, "people"), (other_twins, "other_twins")):
            if groups not in frame.columns:
                raise ValueError(f"`{name}` has no column {groups!r}")
        found = pd.concat([people[groups], other_twins[groups]]).dropna().unique()
        levels = sorted(found, key=str)
        if len(levels) != 2:
            raise ValueError(f"groups={groups!r} needs exactly two levels, found {len(levels)}: "
                             f"{', '.join(map(str, levels))}")
        person_level = people.loc[ids, groups].to_numpy()
        other_level = other_twins[groups].to_numpy()
    rows = []
    for sub in chosen:
        y, f, f_other = _values(people.loc[ids], sub), _values(twins.loc[ids], sub), _values(other_twins, sub)
        paired, present = ~np.isnan(y) & ~np.isnan(f), ~np.isnan(f_other)
        base = {"subscale": sub, "quantity": MEAN, "group": ALL, "contrast": ""}
        rows.append(base | _public(_estimate(y[paired], f[paired], f_other[present], z))
                    | {"dropped": len(people) - int(paired.sum())})
        if groups is None:
            continue
        by_level = []
        for level in levels:
            mine, theirs = paired & (person_level == level), present & (other_level == level)
            result = _estimate(y[mine], f[mine], f_other[theirs], z)
            by_level.append(result)
            rows.append(base | {"group": str(level)} | _public(result)
                        | {"dropped": len(people) - int(mine.sum())})
        a, b = levels
        diff = _difference(*by_level, z, a, b)
        rows.append(base | {"quantity": DIFFERENCE, "group": "", "contrast": f"{b} - {a}"} | diff
                    | {"dropped": len(people) - diff["n"]})
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.astype({"n": int, "N": int, "dropped": int})


def _public(result: dict) -> dict:
    return {k: v for k, v in result.items() if not k.startswith("_")}


# --- people_needed --------------------------------------------------------------------------------------------

def _ppi_variance(m, var_y: float, var_f: float, cov: float, other_n: float):
    """Variance of the PPI++ mean with m people (and their twins) and `other_n` other twins (inf:
    as many as one likes), at the power-tuned λ = Cov / ((1 + m/N) Var f) clipped to [0, 1]:
    (Var Y − 2λ Cov + λ² Var f)/m + λ² Var f / N."""
    m = np.asarray(m, dtype=float)
    lam = np.clip(cov / ((1 + m / other_n) * var_f), 0.0, 1.0)
    extra = 0.0 if math.isinf(other_n) else lam ** 2 * var_f / other_n
    return np.maximum(var_y - 2 * lam * cov + lam ** 2 * var_f, 0.0) / m + extra


def _fewest(var_y: float, var_f: float, cov: float, other_n: float, width: float, z: float) -> int:
    """The smallest m ≥ 1 whose PPI++ CI (2 z √variance) is at most `width` wide: the variance falls
    as m grows (for every fixed λ, so for the best one too), doubling then bisection."""
    fits = lambda m: 2 * z * math.sqrt(float(_ppi_variance(m, var_y, var_f, cov, other_n))) <= width  # noqa: E731
    high = 1
    while not fits(high):
        high *= 2
    low = high // 2          # does not fit (or 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return high


def people_needed(people: pd.DataFrame, twins: pd.DataFrame, width: float | Iterable[float], *,
                  other_n: int | None = None, alpha: float = 0.05,
                  subscales: Iterable[str] | None = None) -> pd.DataFrame:
    """Per subscale and target CI width, how many people (each with a twin) to measure so that the
    PPI++ CI of their mean is at most that wide, given the twin–person relation measured on the
    pairs in hand, and how many people alone the classical CI would need.

    From the n pairs (the ids in `people` and `twins` with both scores; moments with divisor n − 1):
    Var Y, Var f, Cov(Y, f). With m people and N = `other_n` other twins, the power-tuned
    λ(m) = Cov / ((1 + m/N) Var f), clipped to [0, 1] (the variance-minimising λ, as ppi_py tunes it), and

        Var_PPI(m) = Var(Y − λ f)/m + λ² Var f / N,    Var(Y − λ f) = Var Y − 2λ Cov + λ² Var f;

    ``people_needed`` is the smallest m with 2 z₁₋α/₂ √Var_PPI(m) ≤ width. With N → ∞ (`other_n`
    None) λ = Cov/Var f and m = ⌈(2 z)² Var(Y − λ f) / width²⌉ = ⌈(2 z SD(Y) / width)² (1 − ρ²)⌉
    for 0 ≤ Cov ≤ Var f. ``people_needed_classical`` = ⌈(2 z SD(Y) / width)²⌉, the people alone, the
    normal interval of :func:`prediction_powered`. Both are at least 3 (fewer people give no
    estimate in :func:`prediction_powered`). The plan takes the moments of the pairs in hand for the
    truth: with few pairs, ρ and so ``people_needed`` are uncertain. References as in the module's
    docstring.

    Parameters
    ----------
    people, twins : DataFrame
        Scores of the people in hand and of their twins, as for :func:`prediction_powered`.
    width : float or iterable of float
        Target full width(s) of the CI, in score points (> 0).
    other_n : int, optional
        Twins without people to be had; None: as many as one likes (the limit N → ∞; the ``other_n``
        column then holds inf).
    alpha : float
        1 − the CI's coverage.
    subscales : iterable of str, optional
        As for :func:`prediction_powered` (the columns both frames have by default).

    Returns
    -------
    DataFrame
        ``subscale, width, people_needed, people_needed_classical, other_n, note`` (the counts as
        nullable integers). Not estimable, with the reason in ``note``: both counts with fewer than
        3 pairs or when the people's scores do not vary; ``people_needed`` when the twins' scores do
        not vary or when `other_n` is 0 (PPI then reduces to the classical count, which is given).

    Example
    -------
    >>> people = pd.DataFrame({"FS": [8., 12, 16, 20, 10, 14]})
    >>> twins = pd.DataFrame({"FS": [10., 12, 14, 19, 13, 13]})
    >>> people_needed(people, twins, [2, 4], other_n=100)[["width", "people_needed", "people_needed_classical"]]
       width  people_needed  people_needed_classical
    0    2.0             23                       72
    1    4.0              4                       18
    """
    z = _z(alpha)
    widths = [float(w) for w in np.atleast_1d(np.asarray(width, dtype=float))]
    if any(not w > 0 for w in widths):
        raise ValueError(f"width must be positive, not {width}")
    if other_n is not None and other_n < 0:
        raise ValueError(f"other_n must be ≥ 0 or None, not {other_n}")
    big_n = math.inf if other_n is None else float(other_n)
    people, twins = _by_id(people, "people"), _by_id(twins, "twins")
    chosen = _subscales([people, twins], subscales, set())
    ids = people.index[people.index.isin(twins.index)]
    rows = []
    for sub in chosen:
        y, f = _values(people.loc[ids], sub), _values(twins.loc[ids], sub)
        paired = ~np.isnan(y) & ~np.isnan(f)
        y, f = y[paired], f[paired]
        n = len(y)
        for w in widths:
            row = {"subscale": sub, "width": w, "people_needed": pd.NA, "people_needed_classical": pd.NA,
                   "other_n": big_n, "note": ""}
            rows.append(row)
            if n < MIN_N:
                row["note"] = f"not estimable: {n} people with twins (at least {MIN_N} needed)"
                continue
            var_y, var_f = float(y.var(ddof=1)), float(f.var(ddof=1))
            if np.ptp(y) == 0:
                row["note"] = "not estimable: the people's scores do not vary"
                continue
            row["people_needed_classical"] = max(MIN_N, math.ceil((2 * z * math.sqrt(var_y) / w) ** 2))
            if np.ptp(f) == 0:
                row["note"] = "PPI not estimable: the twins' scores do not vary; such twins carry no information"
                continue
            if big_n == 0:
                row["note"] = ("PPI not estimable: no other twins (other_n = 0); without them PPI reduces to "
                               "the classical count")
                continue
            cov = float(np.cov(y, f, ddof=1)[0, 1])
            row["people_needed"] = max(MIN_N, _fewest(var_y, var_f, cov, big_n, w, z))
    out = pd.DataFrame(rows, columns=NEEDED_COLUMNS)
    return out.astype({"people_needed": "Int64", "people_needed_classical": "Int64", "other_n": float})
