"""A simulated cohort next to raw human data scored by the same instrument.

Where :mod:`psyq.analysis.scoring.scores` compares with *published* norms (a mean and an SD), raw human answers
allow the full comparison: location (Welch's t, Hedges' g, Mann–Whitney U), shape
(Kolmogorov–Smirnov, Wasserstein distance), spread (variance ratio, Brown–Forsythe), internal
consistency (α in each sample) and factor structure (Tucker's φ between one-factor loadings).

Both samples are treated as independent samples of respondents, one row each. A cohort run with
several repeats or backends should be reduced to one row per respondent (or compared per repeat)
before it is passed here.

Survey weights (a human file's ``survey_weight`` column, see
:mod:`psyq.engine.files.codebook`; or weights given for the cohort) make the group-level
comparison weighted: :func:`compare_samples` says which statistics are weighted and how.

Degenerate data give NaN, never an exception or a warning. LLM cohorts often give one answer to
everyone; see each function for which statistic survives which case.

Checked in tests/test_human.py against a second computation written out there or another library:
Welch's t by hand and by statsmodels' ``ttest_ind``, Hedges' g and its interval by hand,
Mann–Whitney U by pair counting and exact enumeration, Kolmogorov–Smirnov by ECDFs and enumeration,
Brown–Forsythe and Tucker's φ by hand; the weighted statistics in tests/test_weights.py against
statsmodels' DescrStatsW / CompareMeans and rows repeated by their integer weights (scipy,
pingouin).

Example
-------
The IRI data psyq ships, Briganti et al. 2018; its odd rows stand in for a cohort:

>>> from psyq import human_data, load_instrument
>>> iri = load_instrument("iri")
>>> humans = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
>>> table = compare_with_humans({"iri": humans.iloc[::2]}, {"iri": humans.iloc[1::2]}, {"iri": iri})
>>> table[["subscale", "n_cohort", "n_human", "g", "alpha_cohort", "alpha_human"]].round(2)
  subscale  n_cohort  n_human     g  alpha_cohort  alpha_human
0       PT       987      986 -0.09          0.66         0.64
1       FS       987      986  0.04          0.75         0.73
2       EC       987      986  0.01          0.75         0.75
3       PD       987      986  0.01          0.72         0.73
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pingouin as pg
from scipy import stats

from psyq.engine.design.instrument import Instrument
from psyq.engine.files.codebook import WEIGHT_COLUMN
from psyq.engine.trials.scoring import keyed_answers, score_wide

from psyq.analysis.statistics.reliability import alpha_problem, cronbach_alpha, omega_problem, one_factor

SAMPLE_KEYS = ["n_cohort", "n_human", "n_eff_cohort", "n_eff_human", "mean_cohort", "mean_human", "sd_cohort", "sd_human",
               "t", "df", "p", "g", "g_low", "g_high", "u", "p_mwu", "ks", "p_ks", "wasserstein",
               "variance_ratio", "bf_stat", "p_bf"]
COMPARISON_COLUMNS = ["instrument", "subscale", *SAMPLE_KEYS, "alpha_cohort", "alpha_human",
                      "alpha_diff", "phi", "weighted", "note"]
WEIGHTED_ONLY = ["n_eff_cohort", "n_eff_human", "weighted"]
"""Columns that say something only when a side is weighted (the report leaves them out otherwise)."""
NOT_WEIGHTED = ("Mann–Whitney U, Kolmogorov–Smirnov and Brown–Forsythe not computed: they have no simple "
                "weighted form")
"""The note of a weighted comparison on the tests it leaves out."""


def _values(sample: pd.Series | np.ndarray) -> np.ndarray:
    """A flat float array without missing values."""
    arr = np.asarray(sample, dtype=float).ravel()
    return arr[~np.isnan(arr)]


def _is_constant(arr: np.ndarray) -> bool:
    return arr.size == 0 or bool(np.ptp(arr) == 0)


def kish_n_eff(weights: pd.Series | np.ndarray) -> float:
    """Kish's effective sample size of weighted data, n_eff = (Σw)² / Σw².

    It is n for equal weights and smaller the more the weights vary; it does not change when every
    weight is multiplied by the same number. NaN for no weights.

    Example
    -------
    >>> kish_n_eff(np.array([1.0, 1, 1, 1])), kish_n_eff(np.array([1.0, 1, 2])), kish_n_eff(np.array([3.0, 3, 6]))
    (4.0, 2.6666666666666665, 2.6666666666666665)

    References
    ----------
    Kish, L. (1965). Survey sampling. Wiley. (Design effect of unequal weights.)
    """
    w = np.asarray(weights, dtype=float).ravel()
    return float(w.sum() ** 2 / (w * w).sum()) if w.size else np.nan


def weighted_mean_var(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """Weighted mean Σwx/Σw and weighted variance with the reliability-weights correction,
    Σw(x − m)² / (V₁ − V₂/V₁), V₁ = Σw, V₂ = Σw².

    The correction is Bessel's with Kish's effective sample size: the variance equals the
    population-style weighted variance Σw(x − m)²/Σw times n_eff/(n_eff − 1), so it is the usual
    n − 1 variance for equal weights, and unchanged when the weights are rescaled (it does not
    read weights as frequencies; a frequency-weight variance would divide by Σw − 1). Variance NaN
    for fewer than 2 values.

    Example
    -------
    >>> [round(v, 4) for v in weighted_mean_var(np.array([1.0, 2, 4]), np.array([1.0, 1, 1]))]  # = mean, var(ddof=1)
    [2.3333, 2.3333]
    >>> m, v = weighted_mean_var(np.array([1.0, 2, 4]), np.array([2.0, 1, 1]))
    >>> round(m, 4), round(v, 4)
    (2.0, 2.4)
    """
    x, w = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    v1, v2 = w.sum(), (w * w).sum()
    mean = float((w * x).sum() / v1)
    if x.size < 2:
        return mean, np.nan
    return mean, float((w * (x - mean) ** 2).sum() / (v1 - v2 / v1))


def _weighted_values(sample: pd.Series | np.ndarray, weights: pd.Series | np.ndarray | None,
                     side: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Non-missing values and their weights (None when unweighted). Series weights are aligned to
    a Series sample by its index; array weights go by position. A missing, non-finite or
    non-positive weight of a present value is an error."""
    if weights is None:
        return _values(sample), None
    if isinstance(sample, pd.Series) and isinstance(weights, pd.Series):
        w = weights.reindex(sample.index).to_numpy(dtype=float)
    else:
        w = np.asarray(weights, dtype=float).ravel()
    x = np.asarray(sample, dtype=float).ravel()
    if w.shape != x.shape:
        raise ValueError(f"{side} weights: {w.size} weight(s) for {x.size} value(s)")
    present = ~np.isnan(x)
    x, w = x[present], w[present]
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError(f"{side} weights: every value needs a positive finite weight "
                         f"({int((~(np.isfinite(w) & (w > 0))).sum())} missing or not positive)")
    return x, w


def _weighted_welch_g(mc: float, vc: float, nc: float, mh: float, vh: float, nh: float) -> dict:
    """Welch's t (Welch–Satterthwaite df) and Hedges' g with its 95 % CI from means, variances and
    (effective) sample sizes, as :func:`compare_samples` computes them for weighted data."""
    out: dict = {}
    if not (vc == 0 and vh == 0):
        sc, sh = vc / nc, vh / nh
        t = (mc - mh) / np.sqrt(sc + sh)
        df = (sc + sh) ** 2 / (sc ** 2 / (nc - 1) + sh ** 2 / (nh - 1))
        out.update(t=float(t), df=float(df), p=float(2 * stats.t.sf(abs(t), df)))
    pooled = ((nc - 1) * vc + (nh - 1) * vh) / (nc + nh - 2)
    if pooled > 0:
        g = (mc - mh) / np.sqrt(pooled) * (1 - 3 / (4 * (nc + nh) - 9))
        low, high = pg.compute_esci(stat=g, nx=nc, ny=nh, eftype="hedges", confidence=0.95, decimals=15)
        out.update(g=float(g), g_low=float(low), g_high=float(high))
    return out


def compare_samples(cohort: pd.Series | np.ndarray, human: pd.Series | np.ndarray, *,
                    cohort_weights: pd.Series | np.ndarray | None = None,
                    human_weights: pd.Series | np.ndarray | None = None) -> dict:
    """Location, spread and shape of a cohort's scores against human scores.

    Parameters
    ----------
    cohort, human : pandas.Series or numpy.ndarray
        Scores, one per respondent; missing values (NaN) are dropped.
    cohort_weights, human_weights : pandas.Series or numpy.ndarray, optional
        Survey weights of a side (positive, finite; any scale): a Series aligned to a Series of
        scores by index, else by position. See *Weighted data* below.

    Returns
    -------
    dict
        ``n_cohort, n_human, mean_cohort, mean_human, sd_cohort, sd_human`` (SD with ddof=1);
        ``t, df, p``: Welch's unequal-variance t test (:func:`scipy.stats.ttest_ind`,
        ``equal_var=False``; Welch–Satterthwaite df), cohort minus human;
        ``g, g_low, g_high``: Hedges' g (pooled SD, small-sample correction
        1 − 3/(4(n₁+n₂) − 9); :func:`pingouin.compute_effsize`) with its 95 % interval
        (:func:`pingouin.compute_esci`: g ± t₀.₉₇₅,ₙ₁₊ₙ₂₋₂ · √((n₁+n₂)/(n₁n₂) + g²/(2(n₁+n₂))));
        ``u, p_mwu``: Mann–Whitney U of the cohort and its two-sided p
        (:func:`scipy.stats.mannwhitneyu`, default method: exact for small samples without ties,
        else normal approximation with tie and continuity correction);
        ``ks, p_ks``: two-sample Kolmogorov–Smirnov D and p (:func:`scipy.stats.ks_2samp`);
        ``wasserstein``: first Wasserstein (earth mover's) distance between the empirical
        distributions (:func:`scipy.stats.wasserstein_distance`), in score units;
        ``variance_ratio``: cohort variance / human variance;
        ``bf_stat, p_bf``: Brown–Forsythe test of equal spread (:func:`scipy.stats.levene`,
        ``center="median"``);
        ``n_eff_cohort, n_eff_human``: Kish's effective sample sizes (:func:`kish_n_eff`; n for
        an unweighted side).

        Weighted data (either side weighted; an unweighted side has weight 1 each): means are
        weighted, variances use the reliability-weights correction (:func:`weighted_mean_var`),
        and Welch's t, its df and Hedges' g with its CI take Kish's n_eff in place of n
        (t = (m₁ − m₂)/√(s₁²/n₁ + s₂²/n₂); g with the pooled SD and J of the n_eff) — an
        approximation that counts the precision lost to unequal weights, not to clustering or
        strata (no design information is read). ``wasserstein`` is between the weighted
        distributions and ``variance_ratio`` uses the weighted variances. Mann–Whitney,
        Kolmogorov–Smirnov and Brown–Forsythe have no simple weighted form and are not computed
        when weights are given (NaN). With all weights equal, the weighted statistics equal the
        unweighted ones.

        Degenerate cases give NaN: t, df, p when a sample has fewer than 2 scores or both are
        constant (a constant cohort against varying humans is fine); g when the pooled SD is 0;
        ``variance_ratio`` when the human variance is 0 (a constant cohort gives 0); the
        Brown–Forsythe test when the absolute deviations from the median are constant within
        both samples (e.g. both samples constant); everything but the counts when a sample is
        empty.

    Example
    -------
    >>> res = compare_samples(np.array([3.0, 4, 5, 4, 3]), np.array([1.0, 2, 3, 4, 5, 3]))
    >>> round(res["t"], 3), round(res["df"], 2), round(res["wasserstein"], 3)
    (1.163, 8.26, 0.8)

    References
    ----------
    Welch, B. L. (1947). The generalization of "Student's" problem when several different
    population variances are involved. Biometrika, 34(1–2), 28–35.
    Hedges, L. V., & Olkin, I. (1985). Statistical methods for meta-analysis. Academic Press.
    Mann, H. B., & Whitney, D. R. (1947). On a test of whether one of two random variables is
    stochastically larger than the other. Annals of Mathematical Statistics, 18(1), 50–60.
    Brown, M. B., & Forsythe, A. B. (1974). Robust tests for the equality of variances. Journal
    of the American Statistical Association, 69(346), 364–367.
    Kish, L. (1965). Survey sampling. Wiley.
    """
    c, wc = _weighted_values(cohort, cohort_weights, "cohort")
    h, wh = _weighted_values(human, human_weights, "human")
    nc, nh = c.size, h.size
    out: dict = dict.fromkeys(SAMPLE_KEYS, np.nan)
    out.update(n_cohort=nc, n_human=nh, n_eff_cohort=float(nc), n_eff_human=float(nh))
    if nc == 0 or nh == 0:
        return out
    if wc is not None or wh is not None:
        return _compare_weighted(c, np.ones(nc) if wc is None else wc, h, np.ones(nh) if wh is None else wh, out)
    out.update(mean_cohort=float(c.mean()), mean_human=float(h.mean()))
    var_c = float(c.var(ddof=1)) if nc > 1 else np.nan
    var_h = float(h.var(ddof=1)) if nh > 1 else np.nan
    out.update(sd_cohort=float(np.sqrt(var_c)), sd_human=float(np.sqrt(var_h)))
    both_varied = nc > 1 and nh > 1

    if both_varied and not (var_c == 0 and var_h == 0):
        with warnings.catch_warnings():
            # scipy warns of "precision loss" for a constant sample; its variance is exactly 0
            # here (checked above), so the warning is a false alarm and the result is exact.
            warnings.filterwarnings("ignore", message="Precision loss occurred", category=RuntimeWarning)
            welch = stats.ttest_ind(c, h, equal_var=False)
        out.update(t=float(welch.statistic), df=float(welch.df), p=float(welch.pvalue))

    if both_varied and ((nc - 1) * var_c + (nh - 1) * var_h) > 0:
        g = float(pg.compute_effsize(c, h, paired=False, eftype="hedges"))
        low, high = pg.compute_esci(stat=g, nx=nc, ny=nh, eftype="hedges", confidence=0.95, decimals=15)
        out.update(g=g, g_low=float(low), g_high=float(high))

    mwu = stats.mannwhitneyu(c, h, alternative="two-sided")
    out.update(u=float(mwu.statistic), p_mwu=float(mwu.pvalue))
    ks = stats.ks_2samp(c, h)
    out.update(ks=float(ks.statistic), p_ks=float(ks.pvalue))
    out["wasserstein"] = float(stats.wasserstein_distance(c, h))

    if both_varied and var_h > 0:
        out["variance_ratio"] = var_c / var_h
    dev_c, dev_h = np.abs(c - np.median(c)), np.abs(h - np.median(h))
    if both_varied and not (_is_constant(dev_c) and _is_constant(dev_h)):
        bf = stats.levene(c, h, center="median")
        out.update(bf_stat=float(bf.statistic), p_bf=float(bf.pvalue))
    return out


def _compare_weighted(c: np.ndarray, wc: np.ndarray, h: np.ndarray, wh: np.ndarray, out: dict) -> dict:
    """The weighted part of :func:`compare_samples` (both samples non-empty)."""
    nc, nh = kish_n_eff(wc), kish_n_eff(wh)
    mc, vc = weighted_mean_var(c, wc)
    mh, vh = weighted_mean_var(h, wh)
    out.update(n_eff_cohort=nc, n_eff_human=nh, mean_cohort=mc, mean_human=mh,
               sd_cohort=float(np.sqrt(vc)), sd_human=float(np.sqrt(vh)))
    if c.size > 1 and h.size > 1:
        out.update(_weighted_welch_g(mc, vc, nc, mh, vh, nh))
        if vh > 0:
            out["variance_ratio"] = vc / vh
    out["wasserstein"] = float(stats.wasserstein_distance(c, h, wc, wh))
    return out


def sample_notes(cohort: pd.Series | np.ndarray, human: pd.Series | np.ndarray, result: Mapping,
                 weighted: bool = False) -> list[str]:
    """Why the statistics of :func:`compare_samples` that came out NaN are not estimable (for
    `weighted` data, Brown–Forsythe is not computed rather than not estimable: not said here).

    Example
    -------
    >>> sample_notes(np.array([3.0, 3, 3]), np.array([3.0, 3]), compare_samples(np.array([3.0, 3, 3]), np.array([3.0, 3])))
    ['Welch t not estimable: both samples constant', 'g not estimable: pooled SD is 0', 'variance ratio not estimable: human variance is 0', 'Brown–Forsythe not estimable: no spread around the median in either sample']
    """
    c, h = _values(cohort), _values(human)
    if c.size == 0 or h.size == 0:
        return [f"no scores in the {'cohort' if c.size == 0 else 'human'} sample: nothing is estimable"]
    notes = []
    if c.size < 2 or h.size < 2:
        small = "cohort" if c.size < 2 else "human"
        return [f"fewer than 2 scores in the {small} sample: t, g, variance ratio and Brown–Forsythe not estimable"]
    if np.isnan(result["t"]):
        notes.append("Welch t not estimable: both samples constant")
    if np.isnan(result["g"]):
        notes.append("g not estimable: pooled SD is 0")
    if np.isnan(result["variance_ratio"]):
        notes.append("variance ratio not estimable: human variance is 0")
    if np.isnan(result["bf_stat"]) and not weighted:
        notes.append("Brown–Forsythe not estimable: no spread around the median in either sample")
    return notes


def tucker_phi(loadings_a: np.ndarray, loadings_b: np.ndarray) -> float:
    """Tucker's congruence coefficient φ = Σaᵢbᵢ / √(Σaᵢ² · Σbᵢ²).

    Parameters
    ----------
    loadings_a, loadings_b : numpy.ndarray
        Loadings of the same items, in the same order, on one factor in two samples.

    Returns
    -------
    float
        φ in [−1, 1]; ≥ .95 is conventionally read as "equal factors", .85–.94 as "fair
        similarity" (Lorenzo-Seva & ten Berge, 2006). NaN if either vector has a missing value
        or is all zeros. No library offers it; it is the uncentred cosine of the two vectors.

    Example
    -------
    >>> round(tucker_phi(np.array([.8, .7, .6]), np.array([.6, .7, .8])), 4)
    0.9732

    References
    ----------
    Tucker, L. R. (1951). A method for synthesis of factor analysis studies (Personnel Research
    Section Report No. 984). Department of the Army.
    Lorenzo-Seva, U., & ten Berge, J. M. F. (2006). Tucker's congruence coefficient as a
    meaningful index of factor similarity. Methodology, 2(2), 57–64.
    """
    a = np.asarray(loadings_a, dtype=float).ravel()
    b = np.asarray(loadings_b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"loadings have different lengths ({a.size} and {b.size})")
    if np.isnan(a).any() or np.isnan(b).any():
        return np.nan
    norm = np.sqrt((a @ a) * (b @ b))
    return float(a @ b / norm) if norm > 0 else np.nan


def one_factor_loadings(items: pd.DataFrame) -> pd.Series:
    """Standardised loadings of a one-factor model, sign-aligned so that they sum to ≥ 0.

    Parameters
    ----------
    items : pandas.DataFrame
        Keyed answers, one row per respondent, one column per item; incomplete rows are dropped.

    Returns
    -------
    pandas.Series
        Loadings indexed by item id (name ``"loading"``), from
        :func:`psyq.analysis.statistics.reliability.one_factor` (statsmodels ``Factor``: maximum likelihood,
        principal axis if ML does not converge). All NaN when an item is constant, fewer than 3
        items remain or no proper solution exists.

    Example
    -------
    Four Empathic Concern items of the IRI data psyq ships (Briganti et al., 2018):

    >>> from psyq import human_data, keyed_answers, load_instrument
    >>> iri = load_instrument("iri")
    >>> keyed = keyed_answers(iri, human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri))
    >>> one_factor_loadings(keyed[["2", "4", "9", "14"]]).round(2)
    item_id
    2     0.54
    4     0.61
    9     0.43
    14    0.73
    Name: loading, dtype: float64

    References
    ----------
    See :func:`psyq.analysis.statistics.reliability.one_factor`.
    """
    fit = one_factor(items)
    return pd.Series(fit["loading"].to_numpy(), index=pd.Index(fit["item_id"], name="item_id"),
                     name="loading")


def compare_with_humans(cohort_items: Mapping[str, pd.DataFrame], human_items: Mapping[str, pd.DataFrame],
                        instruments: Mapping[str, Instrument], *,
                        cohort_weights: pd.Series | None = None, congruence: bool = True) -> pd.DataFrame:
    """Every subscale of every instrument: cohort against humans, scored the same way.

    Parameters
    ----------
    cohort_items, human_items : Mapping[str, pandas.DataFrame]
        Raw (unkeyed) answers per instrument id, one row per respondent, one column per item id
        (e.g. from :func:`psyq.analysis.scoring.human_answers.read_answers_csv`; other columns are ignored).
    instruments : Mapping[str, Instrument]
        Instruments by id.
    cohort_weights : pandas.Series, optional
        Weights of the cohort's respondents, indexed by respondent id (e.g. the survey weights of
        the people a cohort of twins was made from). Cohort respondents without a weight (the
        baseline) are left out of the weighted comparison, and the note says how many.
    congruence : bool
        False: leave Tucker's φ out (NaN, no note): its two one-factor fits per subscale are most of
        the time this takes, and the verdict's scorecard does not read it.

    Human answers with a ``survey_weight`` column (:data:`psyq.engine.files.codebook.WEIGHT_COLUMN`,
    as :func:`~psyq.analysis.scoring.human_answers.read_answers_csv` keeps a codebook's ``weight:``)
    weight the human side. The subscale scores are compared weighted as :func:`compare_samples`
    says; α and φ stay unweighted (properties of the sample as answered; no simple weighted form).

    Returns
    -------
    pandas.DataFrame
        One row per instrument × subscale, for the instruments present in both mappings (in the
        order of `cohort_items`). Columns: ``instrument, subscale``, the keys of
        :func:`compare_samples` computed on subscale scores (:func:`psyq.engine.trials.scoring.score_wide`:
        reverse keying, prorating, ``min_answered``), ``alpha_cohort, alpha_human`` (α of the
        subscale's keyed items, listwise, :func:`psyq.analysis.statistics.reliability.cronbach_alpha`),
        ``alpha_diff`` (cohort − human) and ``phi`` (Tucker's φ between the one-factor loadings
        of the subscale's keyed items in the two samples; NaN if either sample has a constant
        item or no proper one-factor solution, or the subscale has fewer than 3 items),
        ``weighted``: which side was weighted (``""``, ``"cohort"``, ``"human"`` or ``"both"``).

    Example
    -------
    Two halves of the IRI data psyq ships (Briganti et al., 2018), the odd rows as the cohort:

    >>> from psyq import human_data, load_instrument
    >>> iri = load_instrument("iri")
    >>> humans = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
    >>> table = compare_with_humans({"iri": humans.iloc[::2]}, {"iri": humans.iloc[1::2]}, {"iri": iri})
    >>> table.loc[table["subscale"] == "EC", ["mean_cohort", "mean_human", "g", "p", "phi"]].round(2)
       mean_cohort  mean_human     g     p   phi
    2        19.34        19.3  0.01  0.83  0.99

    References
    ----------
    See :func:`compare_samples`, :func:`tucker_phi`.
    """
    rows = []
    for inst_id, cohort_answers in cohort_items.items():
        if inst_id not in human_items:
            continue
        instrument = instruments[inst_id]
        human_answers = human_items[inst_id]
        weights_h = human_answers[WEIGHT_COLUMN] if WEIGHT_COLUMN in human_answers.columns else None
        unweighted: list[str] = []
        if cohort_weights is not None:
            left_out = [r for r in cohort_answers.index if r not in cohort_weights.index]
            cohort_answers = cohort_answers.drop(index=left_out)
            if left_out:
                unweighted.append(f"{len(left_out)} cohort respondent(s) without a weight left out "
                                  f"({', '.join(map(str, left_out[:5]))}{', …' if len(left_out) > 5 else ''})")
        side = {(False, False): "", (True, False): "cohort", (False, True): "human",
                (True, True): "both"}[(cohort_weights is not None, weights_h is not None)]
        scores_c, scores_h = score_wide(instrument, cohort_answers), score_wide(instrument, human_answers)
        keyed_c, keyed_h = keyed_answers(instrument, cohort_answers), keyed_answers(instrument, human_answers)
        for subscale in instrument.subscales:
            ids = [item.id for item in instrument.subscale_items(subscale.id)]
            alpha_c = cronbach_alpha(keyed_c[ids])[0]
            alpha_h = cronbach_alpha(keyed_h[ids])[0]
            phi = (tucker_phi(one_factor_loadings(keyed_c[ids]).to_numpy(), one_factor_loadings(keyed_h[ids]).to_numpy())
                   if congruence else np.nan)
            sample = compare_samples(scores_c[subscale.id], scores_h[subscale.id], cohort_weights=cohort_weights,
                                     human_weights=weights_h)
            notes = [*unweighted, *sample_notes(scores_c[subscale.id], scores_h[subscale.id], sample, weighted=bool(side))]
            for name, value, items in (("α cohort", alpha_c, keyed_c[ids]), ("α human", alpha_h, keyed_h[ids])):
                if np.isnan(value):
                    notes.append(f"{name} not estimable: {alpha_problem(items) or 'no result'}")
            if np.isnan(phi) and congruence:
                why = [f"{side}: {p}" for side, p in (("cohort", omega_problem(keyed_c[ids])),
                                                       ("human", omega_problem(keyed_h[ids]))) if p]
                notes.append("φ not estimable: " + ("; ".join(why) or "no proper one-factor solution"))
            rows.append({"instrument": inst_id, "subscale": subscale.id, **sample,
                         "alpha_cohort": alpha_c, "alpha_human": alpha_h,
                         "alpha_diff": alpha_c - alpha_h, "phi": phi, "weighted": side, "note": "; ".join(notes)})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


