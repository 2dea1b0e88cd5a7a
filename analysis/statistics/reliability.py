"""Reliability of subscale scores: Cronbach's α, McDonald's ω, item–total statistics, retest ICC.

Every function takes *keyed* item answers (reverse-keyed items already reversed, e.g. by
:func:`psyq.engine.trials.scoring.keyed_answers`): one row per respondent, one column per item.

Missing answers are handled **listwise**: a respondent with any missing item of the table is
dropped before anything is computed, so that α, ω and the item–total statistics of a subscale all
describe the same respondents (``n`` in :func:`reliability_table` counts them).

Degenerate data do not raise and do not warn; they give NaN. LLM respondents often answer an item
identically, so this is the ordinary case, not an edge case:

* α is NaN when fewer than 2 respondents or 2 items remain, or when every respondent has the same
  total (σ²ₜ = 0, α = 0/0). A constant *item* alone does not make α NaN: it adds 0 to Σσ²ᵢ and α
  is still defined (and usually low).
* ω and one-factor loadings are NaN when any item is constant (its correlations are undefined),
  when fewer than 3 items remain (a one-factor model of 2 items is not identified) or when neither
  maximum likelihood nor principal axis factoring gives a proper solution.
* A corrected item–total correlation is NaN for a constant item or a constant rest score.
* ICCs are NaN when all scores are equal or fewer than 2 respondents have every repeat.

Checked in tests/test_reliability.py: α against the hand formula, pingouin's documented
``cronbach_alpha`` examples and psych::alpha's listwise value, Feldt's interval with scipy's F; ω by
recovering a simulated one-factor model; the ICCs against a hand two-way ANOVA, Shrout & Fleiss'
(1979) published Table 4 and pingouin's documented ``intraclass_corr`` example.

Example
-------
The IRI data psyq ships, Briganti et al. 2018:

>>> from psyq import human_data, load_instrument
>>> iri = load_instrument("iri")
>>> answers = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
>>> table = reliability_table({"iri": answers}, {"iri": iri})
>>> table[["instrument", "subscale", "n", "k", "alpha", "alpha_low", "alpha_high", "omega"]].round(3)
  instrument subscale     n  k  alpha  alpha_low  alpha_high  omega
0        iri       PT  1973  7  0.651      0.627       0.674  0.662
1        iri       FS  1973  7  0.743      0.725       0.760  0.746
2        iri       EC  1973  7  0.752      0.735       0.768  0.754
3        iri       PD  1973  7  0.725      0.706       0.743  0.727
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pingouin as pg
from scipy import stats
from statsmodels.multivariate.factor import Factor

from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import keyed_answers

ICC_COLUMNS = ["type", "description", "icc", "f", "df1", "df2", "p", "ci_low", "ci_high", "n", "k",
               "estimable", "note"]
RELIABILITY_COLUMNS = ["instrument", "subscale", "n", "k", "alpha", "alpha_low", "alpha_high", "omega", "note"]
# Residual (within-respondent) sum of squares at or below this share of the total counts as zero:
# floating-point noise in an ANOVA of identical repeats is ~1e-15 of the total, never a finding.
ZERO_SHARE = 1e-8

# Fixed seed for the random starting values of statsmodels' ML factor analysis: same data, same ω.
_FACTOR_SEED = 0


def _complete(items: pd.DataFrame) -> pd.DataFrame:
    """Float copy of `items` without the rows that miss any item (listwise deletion)."""
    return items.astype(float).dropna(axis=0, how="any")


def _constant(values: pd.Series | np.ndarray) -> bool:
    """True when all (non-missing) values are equal; exact, so it never reports false variance."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    return arr.size == 0 or bool(np.ptp(arr) == 0)


def cronbach_alpha(items: pd.DataFrame, confidence: float = 0.95) -> tuple[float, float, float]:
    """Cronbach's α with Feldt's confidence interval, after listwise deletion.

    Parameters
    ----------
    items : pandas.DataFrame
        Keyed answers, one row per respondent, one column per item.
    confidence : float
        Coverage of the interval (0.95 = 95 %).

    Returns
    -------
    tuple of float
        ``(alpha, low, high)``. Computed by :func:`pingouin.cronbach_alpha` on the complete rows
        (so its ``nan_policy`` never applies and the interval's ``n`` is the number of complete
        rows). Pingouin rounds the interval to 3 decimals. All three are NaN when fewer than 2
        complete rows or 2 items remain, or when the total score is constant (σ²ₜ = 0).

    Notes
    -----
    α = k/(k−1) · (1 − Σσ²ᵢ / σ²ₜ). Listwise rather than pingouin's default pairwise deletion: a
    pairwise covariance matrix mixes respondents and need not be positive semi-definite, and
    :func:`mcdonald_omega` and :func:`item_total` need complete rows anyway. (Pingouin's own
    ``nan_policy="listwise"`` keeps the original ``n`` in Feldt's interval; dropping the rows
    first avoids that.)

    Example
    -------
    >>> items = pd.DataFrame({"a": [1, 2, 3, 4], "b": [2, 2, 3, 5], "c": [1, 3, 3, 4]})
    >>> cronbach_alpha(items)
    (0.9473684210526315, 0.653, 0.996)

    References
    ----------
    Cronbach, L. J. (1951). Coefficient alpha and the internal structure of tests.
    Psychometrika, 16(3), 297–334.
    Feldt, L. S., Woodruff, D. J., & Salih, F. A. (1987). Statistical inference for coefficient
    alpha. Applied Psychological Measurement, 11(1), 93–103.
    """
    data = _complete(items)
    n, k = data.shape
    if n < 2 or k < 2 or _constant(data.sum(axis=1)):
        return (np.nan, np.nan, np.nan)
    alpha, (low, high) = pg.cronbach_alpha(data=data, ci=confidence)
    return (float(alpha), float(low), float(high))


def alpha_problem(items: pd.DataFrame) -> str | None:
    """Why α is not estimable for these keyed items (None when it is).

    Example
    -------
    >>> alpha_problem(pd.DataFrame({"a": [3, 3, 3], "b": [4, 4, 4]}))
    'every respondent has the same total (no variance)'
    """
    data = _complete(items)
    n, k = data.shape
    if k < 2:
        return f"{k} item: α needs at least 2"
    if n < 2:
        return f"{n} respondent(s) with every item answered: α needs at least 2"
    if _constant(data.sum(axis=1)):
        return "every respondent has the same total (no variance)"
    return None


def omega_problem(items: pd.DataFrame) -> str | None:
    """Why a one-factor model (ω, loadings) is not estimable for these items (None when it may be;
    a fit can still fail, see :func:`one_factor`).

    Example
    -------
    >>> omega_problem(pd.DataFrame({"a": [1, 2, 3, 4, 5], "b": [2, 2, 3, 5, 4], "c": [3, 3, 3, 3, 3]}))
    'item(s) without variance: c'
    """
    data = _complete(items)
    n, k = data.shape
    if k < 3:
        return f"{k} item(s): a one-factor model needs at least 3 to be identified"
    if n < k + 1:
        return f"{n} respondent(s) with every item answered: fewer than items + 1 ({k + 1})"
    constant = [str(c) for c in data.columns if _constant(data[c])]
    if constant:
        return "item(s) without variance: " + ", ".join(constant)
    return None


def one_factor(items: pd.DataFrame) -> pd.DataFrame:
    """A one-factor model of the items' correlation matrix (standardised loadings).

    Parameters
    ----------
    items : pandas.DataFrame
        Keyed answers, one row per respondent, one column per item; incomplete rows are dropped.

    Returns
    -------
    pandas.DataFrame
        One row per item: ``item_id``, ``loading``, ``uniqueness`` (1 − λ²) and ``method``
        (``"ml"``, ``"pa"`` or ``"none"``). Loadings are sign-aligned so that they sum to a
        non-negative number. Fitted with :class:`statsmodels.multivariate.factor.Factor`:
        maximum likelihood when the optimiser reports success, otherwise iterated principal
        axis factoring. NaN (method ``"none"``) when an item is constant, fewer than 3 items or
        ``k + 1`` complete rows remain, or no method gives a proper solution (finite loadings,
        uniquenesses ≥ 0). Warnings of the fitting routines are converted into this fallback,
        not passed on.

    Example
    -------
    Three Empathic Concern items of the IRI data psyq ships (Briganti et al., 2018):

    >>> from psyq import human_data, keyed_answers, load_instrument
    >>> iri = load_instrument("iri")
    >>> keyed = keyed_answers(iri, human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri))
    >>> one_factor(keyed[["2", "4", "9"]]).round(3)
      item_id  loading  uniqueness method
    0       2    0.655       0.571     ml
    1       4    0.458       0.790     ml
    2       9    0.507       0.743     ml

    References
    ----------
    Jöreskog, K. G. (1967). Some contributions to maximum likelihood factor analysis.
    Psychometrika, 32(4), 443–482.
    """
    data = _complete(items)
    ids = [str(c) for c in data.columns]
    n, k = data.shape
    blank = pd.DataFrame({"item_id": ids, "loading": np.nan, "uniqueness": np.nan, "method": "none"})
    if k < 3 or n < k + 1 or any(_constant(data[c]) for c in data.columns):
        return blank
    for method in ("ml", "pa"):
        fitted = _fit_factor(data.to_numpy(), method)
        if fitted is not None:
            loading, uniqueness = fitted
            sign = -1.0 if loading.sum() < 0 else 1.0
            return pd.DataFrame({"item_id": ids, "loading": sign * loading,
                                 "uniqueness": uniqueness, "method": method})
    return blank


def _fit_factor(x: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Loadings and uniquenesses of a one-factor fit, or None if it failed or is improper."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = Factor(x, n_factor=1, method=method)
            result = model.fit(rng=_FACTOR_SEED) if method == "ml" else model.fit()
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            return None
    if method == "ml" and not result.mle_retvals.success:
        return None
    if any(issubclass(w.category, RuntimeWarning) for w in caught):  # overflow, invalid value …
        return None
    loading = np.asarray(result.loadings, dtype=float).ravel()
    uniqueness = np.asarray(result.uniqueness, dtype=float).ravel()
    if not (np.all(np.isfinite(loading)) and np.all(np.isfinite(uniqueness))) or uniqueness.min() < 0:
        return None
    return loading, uniqueness


def mcdonald_omega(items: pd.DataFrame) -> float:
    """McDonald's ω total from a one-factor model: ω = (Σλ)² / ((Σλ)² + Σψ).

    Parameters
    ----------
    items : pandas.DataFrame
        Keyed answers, one row per respondent, one column per item; incomplete rows are dropped.

    Returns
    -------
    float
        ω from the standardised loadings λ and uniquenesses ψ of :func:`one_factor` (so ω is the
        reliability of the sum of standardised items, as in R's ``psych::omega``). NaN whenever
        :func:`one_factor` is (constant item, fewer than 3 items, no proper solution).

    Example
    -------
    Six Empathic Concern items of the IRI data psyq ships (Briganti et al., 2018):

    >>> from psyq import human_data, keyed_answers, load_instrument
    >>> iri = load_instrument("iri")
    >>> keyed = keyed_answers(iri, human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri))
    >>> round(mcdonald_omega(keyed[["2", "4", "9", "14", "18", "20"]]), 3)
    0.728

    References
    ----------
    McDonald, R. P. (1999). Test theory: A unified treatment. Erlbaum. (Ch. 6)
    """
    fit = one_factor(items)
    lam, psi = fit["loading"].to_numpy(), fit["uniqueness"].to_numpy()
    if fit.empty or np.isnan(lam).any():
        return np.nan
    common = lam.sum() ** 2
    return float(common / (common + psi.sum()))


def item_total(items: pd.DataFrame) -> pd.DataFrame:
    """Corrected item–total correlations and α if the item is deleted.

    Parameters
    ----------
    items : pandas.DataFrame
        Keyed answers, one row per respondent, one column per item; incomplete rows are dropped.

    Returns
    -------
    pandas.DataFrame
        One row per item: ``item_id``; ``r_corrected``, the Pearson correlation
        (:func:`scipy.stats.pearsonr`) of the item with the sum of the *other* items (NaN if
        either is constant or fewer than 2 rows remain); ``alpha_if_deleted``,
        :func:`cronbach_alpha` of the other items (NaN with fewer than 3 items); ``note``, why
        a value is not estimable (empty when both are).

    Example
    -------
    >>> items = pd.DataFrame({"a": [1, 2, 3, 4], "b": [2, 2, 3, 5], "c": [1, 3, 3, 4]})
    >>> item_total(items).round(3)
      item_id  r_corrected  alpha_if_deleted note
    0       a        0.981             0.853     
    1       b        0.849             0.960     
    2       c        0.851             0.952     

    References
    ----------
    Nunnally, J. C., & Bernstein, I. H. (1994). Psychometric theory (3rd ed.). McGraw-Hill.
    """
    data = _complete(items)
    total = data.sum(axis=1)
    rows = []
    for column in data.columns:
        item = data[column]
        rest = total - item
        note = ("fewer than 2 respondents with every item answered" if len(data) < 2 else
                "item without variance" if _constant(item) else
                "rest score without variance" if _constant(rest) else "")
        r = np.nan if note else float(stats.pearsonr(item.to_numpy(), rest.to_numpy()).statistic)
        rest_items = data.drop(columns=column)
        alpha = cronbach_alpha(rest_items)[0]
        if np.isnan(alpha):
            note = "; ".join(filter(None, [note, f"α if deleted not estimable: {alpha_problem(rest_items)}"]))
        rows.append({"item_id": str(column), "r_corrected": r, "alpha_if_deleted": alpha, "note": note})
    return pd.DataFrame(rows, columns=["item_id", "r_corrected", "alpha_if_deleted", "note"])


@contextmanager
def _pingouin_unrounded() -> Iterator[None]:
    """Pingouin rounds its CI95 columns to 2 decimals by default; keep full precision here."""
    saved = dict(pg.options)
    pg.options.update({key: None for key in pg.options if key == "round" or key.startswith("round.")})
    try:
        yield
    finally:
        pg.options.clear()
        pg.options.update(saved)


def test_retest_icc(scores: pd.DataFrame) -> pd.DataFrame:
    """Test–retest reliability of one subscale: ICC(2,1) and ICC(3,1) over repeats.

    Parameters
    ----------
    scores : pandas.DataFrame
        Long table with columns ``respondent_id``, ``repeat`` and ``score`` (one subscale), at
        most one row per respondent × repeat (ValueError otherwise). Respondents without a score on every repeat are dropped (pingouin's
        ``nan_policy="omit"``).

    Returns
    -------
    pandas.DataFrame
        Two rows, ``type`` ``"ICC2"`` (two-way random effects, absolute agreement, single
        measurement; McGraw & Wong's ICC(A,1)) and ``"ICC3"`` (two-way mixed, consistency,
        single measurement; ICC(C,1)), with columns ``type, description, icc, f, df1, df2, p,
        ci_low, ci_high, n, k`` (``n`` respondents, ``k`` repeats). From
        :func:`pingouin.intraclass_corr`, 95 % interval unrounded. ``estimable`` is False and
        everything but ``n``, ``k`` is NaN, with the reason in ``note``, when fewer than 2
        respondents or repeats remain, when all scores are equal, or when the residual
        (respondent × repeat) variance is zero — every respondent's repeats identical up to a
        constant shift: the ANOVA's error mean square is 0, F is infinite (in floating point a
        meaningless number such as −5·10¹⁵) and the interval undefined, so no ICC is reported.

    Example
    -------
    >>> long = pd.DataFrame({"respondent_id": [1, 1, 2, 2, 3, 3], "repeat": [0, 1] * 3,
    ...                      "score": [10, 11, 14, 14, 20, 19]})
    >>> test_retest_icc(long)[["type", "icc"]].round(3)
       type    icc
    0  ICC2  0.984
    1  ICC3  0.976

    References
    ----------
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: Uses in assessing rater
    reliability. Psychological Bulletin, 86(2), 420–428.
    McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass correlation
    coefficients. Psychological Methods, 1(1), 30–46.
    """
    if scores.duplicated(["respondent_id", "repeat"]).any():
        raise ValueError("scores has more than one row for some respondent_id × repeat")
    wide = scores.pivot_table(index="respondent_id", columns="repeat", values="score",
                              aggfunc="first").dropna(axis=0, how="any")
    n, k = wide.shape
    descriptions = {"ICC2": "ICC(A,1): two-way random, absolute agreement, single measurement",
                    "ICC3": "ICC(C,1): two-way mixed, consistency, single measurement"}
    problem = icc_problem(wide.to_numpy(dtype=float))
    if problem:
        return pd.DataFrame([{"type": t, "description": d, "icc": np.nan, "f": np.nan, "df1": np.nan,
                              "df2": np.nan, "p": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                              "n": n, "k": k, "estimable": False, "note": problem}
                             for t, d in descriptions.items()], columns=ICC_COLUMNS)
    long = wide.reset_index().melt(id_vars="respondent_id", var_name="repeat", value_name="score")
    with _pingouin_unrounded(), np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        # pingouin 0.7's two-way ANOVA calls DataFrame.dropna(inplace=True), deprecated in pandas 3.1.
        warnings.filterwarnings("ignore", message="The inplace keyword", category=Warning)
        icc = pg.intraclass_corr(data=long, targets="respondent_id", raters="repeat",
                                 ratings="score").set_index("Type")
    rows = []
    for name, pingouin_type in (("ICC2", "ICC(A,1)"), ("ICC3", "ICC(C,1)")):
        row = icc.loc[pingouin_type]
        low, high = np.asarray(row["CI95"], dtype=float)
        rows.append({"type": name, "description": descriptions[name], "icc": float(row["ICC"]),
                     "f": float(row["F"]), "df1": float(row["df1"]), "df2": float(row["df2"]),
                     "p": float(row["pval"]), "ci_low": low, "ci_high": high, "n": n, "k": k,
                     "estimable": True, "note": ""})
    return pd.DataFrame(rows, columns=ICC_COLUMNS)


def icc_problem(wide: np.ndarray) -> str | None:
    """Why no retest ICC can be estimated from respondents × repeats scores (None when one can).

    Example
    -------
    >>> icc_problem(np.array([[10.0, 10.0], [14.0, 14.0], [20.0, 20.0]]))
    'every respondent scored the same on every repeat (no within-respondent variance): the answers are reproduced exactly, and the ICC, its F test and interval are undefined'
    """
    n, k = wide.shape
    if n < 2:
        return f"{n} respondent(s) with a score on every repeat: an ICC needs at least 2"
    if k < 2:
        return f"{k} repeat: an ICC needs at least 2"
    if _constant(wide.ravel()):
        return "every score is equal (no variance at all)"
    centred = wide - wide.mean(axis=1, keepdims=True) - wide.mean(axis=0, keepdims=True) + wide.mean()
    total = ((wide - wide.mean()) ** 2).sum()
    if (centred ** 2).sum() <= ZERO_SHARE * total:
        if _constant(wide.mean(axis=0)):
            return ("every respondent scored the same on every repeat (no within-respondent variance): the "
                    "answers are reproduced exactly, and the ICC, its F test and interval are undefined")
        return ("the repeats differ only by a shift common to all respondents (no residual variance): "
                "the ICC's F test and interval are undefined")
    return None


test_retest_icc.__test__ = False  # a library function whose name starts with "test", not a test


def reliability_table(answers_wide_by_instrument: Mapping[str, pd.DataFrame],
                      instruments: Mapping[str, Instrument]) -> pd.DataFrame:
    """α (with 95 % interval) and ω of every subscale of every instrument.

    Parameters
    ----------
    answers_wide_by_instrument : Mapping[str, pandas.DataFrame]
        Raw (unkeyed) answers per instrument id: one row per respondent, one column per item id
        (as from :func:`psyq.analysis.scoring.human_answers.read_answers_csv`; other columns are ignored).
    instruments : Mapping[str, Instrument]
        Instruments by id; every key of `answers_wide_by_instrument` must be present.

    Returns
    -------
    pandas.DataFrame
        One row per instrument × subscale (instrument order of the mapping, subscale order of the
        instrument) with columns ``instrument, subscale, n, k, alpha, alpha_low, alpha_high,
        omega, note``: ``n`` respondents with every item of the subscale answered, ``k`` items;
        ``note`` says why α or ω is not estimable when it is NaN (:func:`alpha_problem`,
        :func:`omega_problem`), else is empty. Items are keyed with
        :func:`psyq.engine.trials.scoring.keyed_answers`.

    Example
    -------
    `run_dir`: 4 personas' answers to the toy instrument tests/data/mini_1to7.yaml (one refused
    item d); too few respondents for ω, and the note says why:

    >>> from psyq import export_table, load_instrument, wide_answers
    >>> answers = wide_answers(export_table(run_dir), "mini")
    >>> table = reliability_table({"mini": answers}, {"mini": load_instrument("tests/data/mini_1to7.yaml")})
    >>> table[["subscale", "n", "k", "alpha", "omega"]].round(2)
      subscale  n  k  alpha  omega
    0        X  4  2   0.00    NaN
    1        Y  3  3  -0.75    NaN
    2        Z  3  4  -0.59    NaN
    >>> table.loc[1, "note"]
    'ω not estimable: 3 respondent(s) with every item answered: fewer than items + 1 (4)'

    References
    ----------
    See :func:`cronbach_alpha` and :func:`mcdonald_omega`.
    """
    rows = []
    for inst_id, answers in answers_wide_by_instrument.items():
        instrument = instruments[inst_id]
        keyed = keyed_answers(instrument, answers)
        for subscale in instrument.subscales:
            items = _complete(keyed[[item.id for item in instrument.subscale_items(subscale.id)]])
            alpha, low, high = cronbach_alpha(items)
            omega = mcdonald_omega(items)
            notes = []
            if np.isnan(alpha):
                notes.append(f"α not estimable: {alpha_problem(items) or 'no result'}")
            if np.isnan(omega):
                notes.append(f"ω not estimable: {omega_problem(items) or 'no proper one-factor solution'}")
            rows.append({"instrument": inst_id, "subscale": subscale.id, "n": len(items),
                         "k": items.shape[1], "alpha": alpha, "alpha_low": low, "alpha_high": high,
                         "omega": omega, "note": "; ".join(notes)})
    return pd.DataFrame(rows, columns=RELIABILITY_COLUMNS)
