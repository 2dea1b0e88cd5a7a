"""A simulated cohort next to raw human data scored by the same instrument.

Where :mod:`psyq.analysis.scores` compares with *published* norms (a mean and an SD), raw human answers
allow the full comparison: location (Welch's t, Hedges' g, Mann–Whitney U), shape
(Kolmogorov–Smirnov, Wasserstein distance), spread (variance ratio, Brown–Forsythe), internal
consistency (α in each sample) and factor structure (Tucker's φ between one-factor loadings).

Both samples are treated as independent samples of respondents, one row each. A cohort run with
several repeats or backends should be reduced to one row per respondent (or compared per repeat)
before it is passed here.

Degenerate data give NaN, never an exception or a warning. LLM cohorts often give one answer to
everyone; see each function for which statistic survives which case.

Example:
    >>> from psyq import load_instrument                                     # doctest: +SKIP
    >>> from psyq.engine.results.human_answers import read_answers_csv                         # doctest: +SKIP
    >>> iri = load_instrument("instruments/iri.yaml")                          # doctest: +SKIP
    >>> humans = read_answers_csv("humans.csv", iri)                           # doctest: +SKIP
    >>> compare_with_humans({"iri": cohort_answers}, {"iri": humans}, {"iri": iri})  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pingouin as pg
from scipy import stats

from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import keyed_answers, score_wide

from psyq.analysis.reliability import alpha_problem, cronbach_alpha, omega_problem, one_factor

SAMPLE_KEYS = ["n_cohort", "n_human", "mean_cohort", "mean_human", "sd_cohort", "sd_human",
               "t", "df", "p", "g", "g_low", "g_high", "u", "p_mwu", "ks", "p_ks", "wasserstein",
               "variance_ratio", "bf_stat", "p_bf"]
COMPARISON_COLUMNS = ["instrument", "subscale", *SAMPLE_KEYS, "alpha_cohort", "alpha_human",
                      "alpha_diff", "phi", "note"]


def _values(sample: pd.Series | np.ndarray) -> np.ndarray:
    """A flat float array without missing values."""
    arr = np.asarray(sample, dtype=float).ravel()
    return arr[~np.isnan(arr)]


def _is_constant(arr: np.ndarray) -> bool:
    return arr.size == 0 or bool(np.ptp(arr) == 0)


def compare_samples(cohort: pd.Series | np.ndarray, human: pd.Series | np.ndarray) -> dict:
    """Location, spread and shape of a cohort's scores against human scores.

    Parameters
    ----------
    cohort, human : pandas.Series or numpy.ndarray
        Scores, one per respondent; missing values (NaN) are dropped.

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
        ``center="median"``).

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
    """
    c, h = _values(cohort), _values(human)
    nc, nh = c.size, h.size
    out: dict = dict.fromkeys(SAMPLE_KEYS, np.nan)
    out.update(n_cohort=nc, n_human=nh)
    if nc == 0 or nh == 0:
        return out
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


def sample_notes(cohort: pd.Series | np.ndarray, human: pd.Series | np.ndarray, result: Mapping) -> list[str]:
    """Why the statistics of :func:`compare_samples` that came out NaN are not estimable.

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
    if np.isnan(result["bf_stat"]):
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
        :func:`psyq.analysis.reliability.one_factor` (statsmodels ``Factor``: maximum likelihood,
        principal axis if ML does not converge). All NaN when an item is constant, fewer than 3
        items remain or no proper solution exists.

    Example
    -------
    >>> one_factor_loadings(keyed[["1", "2", "3", "4"]]).round(2)              # doctest: +SKIP

    References
    ----------
    See :func:`psyq.analysis.reliability.one_factor`.
    """
    fit = one_factor(items)
    return pd.Series(fit["loading"].to_numpy(), index=pd.Index(fit["item_id"], name="item_id"),
                     name="loading")


def compare_with_humans(cohort_items: Mapping[str, pd.DataFrame], human_items: Mapping[str, pd.DataFrame],
                        instruments: Mapping[str, Instrument]) -> pd.DataFrame:
    """Every subscale of every instrument: cohort against humans, scored the same way.

    Parameters
    ----------
    cohort_items, human_items : Mapping[str, pandas.DataFrame]
        Raw (unkeyed) answers per instrument id, one row per respondent, one column per item id
        (e.g. from :func:`psyq.engine.results.human_answers.read_answers_csv`; other columns are ignored).
    instruments : Mapping[str, Instrument]
        Instruments by id.

    Returns
    -------
    pandas.DataFrame
        One row per instrument × subscale, for the instruments present in both mappings (in the
        order of `cohort_items`). Columns: ``instrument, subscale``, the keys of
        :func:`compare_samples` computed on subscale scores (:func:`psyq.engine.trials.scoring.score_wide`:
        reverse keying, prorating, ``min_answered``), ``alpha_cohort, alpha_human`` (α of the
        subscale's keyed items, listwise, :func:`psyq.analysis.reliability.cronbach_alpha`),
        ``alpha_diff`` (cohort − human) and ``phi`` (Tucker's φ between the one-factor loadings
        of the subscale's keyed items in the two samples; NaN if either sample has a constant
        item or no proper one-factor solution, or the subscale has fewer than 3 items).

    Example
    -------
    >>> compare_with_humans({"iri": cohort}, {"iri": humans}, {"iri": iri})   # doctest: +SKIP

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
        scores_c, scores_h = score_wide(instrument, cohort_answers), score_wide(instrument, human_answers)
        keyed_c, keyed_h = keyed_answers(instrument, cohort_answers), keyed_answers(instrument, human_answers)
        for subscale in instrument.subscales:
            ids = [item.id for item in instrument.subscale_items(subscale.id)]
            alpha_c = cronbach_alpha(keyed_c[ids])[0]
            alpha_h = cronbach_alpha(keyed_h[ids])[0]
            phi = tucker_phi(one_factor_loadings(keyed_c[ids]).to_numpy(),
                             one_factor_loadings(keyed_h[ids]).to_numpy())
            sample = compare_samples(scores_c[subscale.id], scores_h[subscale.id])
            notes = sample_notes(scores_c[subscale.id], scores_h[subscale.id], sample)
            for name, value, items in (("α cohort", alpha_c, keyed_c[ids]), ("α human", alpha_h, keyed_h[ids])):
                if np.isnan(value):
                    notes.append(f"{name} not estimable: {alpha_problem(items) or 'no result'}")
            if np.isnan(phi):
                why = [f"{side}: {p}" for side, p in (("cohort", omega_problem(keyed_c[ids])),
                                                       ("human", omega_problem(keyed_h[ids]))) if p]
                notes.append("φ not estimable: " + ("; ".join(why) or "no proper one-factor solution"))
            rows.append({"instrument": inst_id, "subscale": subscale.id, **sample,
                         "alpha_cohort": alpha_c, "alpha_human": alpha_h,
                         "alpha_diff": alpha_c - alpha_h, "phi": phi, "note": "; ".join(notes)})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def reading_notes(instrument: Instrument, answers: pd.DataFrame, file: str) -> tuple[list[str], list[str]]:
    """What the report says about how one human data file was read: (readings, warnings).

    Readings: the codebook used (``answers.attrs``, as
    :func:`psyq.engine.results.human_answers.read_answers_csv` sets them) and a declared keying.
    Warnings (also readings, and on stderr): reverse-keyed items that look keyed the wrong way
    (:func:`psyq.engine.results.human_answers.keying_warning`).

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> from psyq.engine.results.human_answers import read_answers_csv
    >>> iri = load_instrument("instruments/iri.yaml")
    >>> file = "instruments/data/iri_briganti2018_keyed.csv"
    >>> readings, warnings = reading_notes(iri, read_answers_csv(file, iri), file)   # doctest: +SKIP
    >>> warnings                                                                     # doctest: +SKIP
    []
    """
    from psyq.engine.results.human_answers import keying_check, keying_warning

    readings, warnings_ = [], []
    if answers.attrs.get("codebook"):
        readings.append(f"{instrument.id}: the human data {file} were read with the codebook "
                        f"{answers.attrs['codebook']} ({answers.attrs.get('codebook_summary')}).")
    if answers.attrs.get("keyed"):
        readings.append(f"{instrument.id}: the human answers were declared already keyed; their reverse-keyed "
                        "items were taken as reversed and not reversed again.")
    message = keying_warning(keying_check(instrument, answers), file, bool(answers.attrs.get("keyed")))
    if message:
        warnings_.append(message)
    return readings, warnings_
