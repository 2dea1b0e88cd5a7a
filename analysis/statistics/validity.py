"""Construct validity of a simulated cohort against raw human answers to the same instrument.

Three views, each a pure function returning a tidy frame:

* :func:`item_distributions` — per item (and per group), how far the cohort's answer distribution
  is from the humans': total-variation distance, SimBench's normalised score and the
  Wasserstein-1 distance on the option values;
* :func:`subscale_correlations` — the Pearson intercorrelations of the subscales in each sample,
  side by side with their difference;
* :func:`factor_congruence` — an exploratory factor model with one factor per first-order rating
  subscale (composites such as totals left out),
  rotated to the instrument's item–subscale membership, compared between the samples with
  Tucker's φ per factor.

Inputs are *raw* answers (reverse-keyed items as answered; each function keys them itself with
:func:`psyq.engine.trials.scoring.keyed_answers` where keying matters), one row per respondent, one column per
item id; other columns are attributes. A statistic that cannot be estimated is never a number:
its row has ``estimable`` False and the reason in ``note``.

Checked in tests/test_validity.py: total variation and Wasserstein distances by hand, the subscale
intercorrelations against pandas' ``corr``, factor congruence by recovering a known two-factor
structure; the weighted option shares in tests/test_weights.py by hand.

Example
-------
>>> from psyq.engine.design.instrument import load_instrument
>>> mini = load_instrument("tests/data/mini_1to7.yaml")
>>> cohort = pd.DataFrame({"a": [1, 2, 2, 3], "b": [4, 4, 5, 5], "c": [7, 6, 6, 5], "d": [3, 3, 4, 2]})
>>> humans = pd.DataFrame({"a": [1, 3, 5, 7], "b": [2, 4, 6, 4], "c": [7, 5, 3, 1], "d": [2, 4, 4, 6]})
>>> item_distributions(cohort, humans, mini)[["item_id", "tv", "wasserstein"]]
  item_id   tv  wasserstein
0       a  0.5          2.0
1       b  0.5          1.0
2       c  0.5          2.0
3       d  0.5          1.0
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import linalg, stats
from statsmodels.multivariate.factor import Factor

from psyq.engine.design.instrument import Instrument
from psyq.engine.files.codebook import WEIGHT_COLUMN
from psyq.engine.trials.scoring import keyed_answers, membership_matrix, score_wide

from psyq.analysis.statistics.human_comparison import tucker_phi

DISTRIBUTION_COLUMNS = ["instrument", "item_id", "group_by", "group", "n_cohort", "n_human", "tv",
                        "tv_uniform", "simbench", "wasserstein", "estimable", "note"]
CORRELATION_COLUMNS = ["instrument", "subscale_a", "subscale_b", "n_cohort", "n_human", "r_cohort", "r_human",
                       "difference", "part_whole", "estimable", "note"]
CONGRUENCE_COLUMNS = ["instrument", "factor", "n_cohort", "n_human", "k", "phi", "method_cohort", "method_human",
                      "estimable", "note"]
ALL = "all"
# Attributes with more distinct values than this (ids, ages in years) are not used as groups.
MAX_GROUP_LEVELS = 10
_FACTOR_SEED = 0   # statsmodels' ML factor analysis starts from random values: same data, same fit


def option_shares(values: pd.Series | np.ndarray, options: Sequence[float],
                  weights: pd.Series | np.ndarray | None = None) -> np.ndarray:
    """Share of the (non-missing) answers on each option, in the order of `options`; with
    `weights` (one per value, by position), each answer counts its weight: Σ w over the answers on
    the option / Σ w over all answers.

    Example
    -------
    >>> option_shares(np.array([1, 1, 2, np.nan]), [1, 2, 3]).tolist()
    [0.6666666666666666, 0.3333333333333333, 0.0]
    >>> option_shares(np.array([1, 1, 2, np.nan]), [1, 2, 3], weights=np.array([1, 1, 2, 5])).tolist()
    [0.5, 0.5, 0.0]
    """
    arr = np.asarray(values, dtype=float)
    w = np.ones(arr.size) if weights is None else np.asarray(weights, dtype=float)
    present = ~np.isnan(arr)
    arr, w = arr[present], w[present]
    if arr.size == 0:
        return np.full(len(options), np.nan)
    if weights is None:
        return np.array([(arr == o).mean() for o in options])
    return np.array([w[arr == o].sum() for o in options]) / w.sum()


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance ½·Σ|pᵢ − qᵢ| between two distributions over the same options.

    0 for identical distributions, 1 for distributions on disjoint options.

    Example
    -------
    >>> total_variation(np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5]))
    0.5
    """
    return float(0.5 * np.abs(np.asarray(p, dtype=float) - np.asarray(q, dtype=float)).sum())


def level_text(values: pd.Series) -> pd.Series:
    """Attribute values as text, whole numbers without ".0" (a human CSV's 1.0 is a cohort's 1).

    Example
    -------
    >>> level_text(pd.Series([1.0, "female", None])).tolist()
    ['1', 'female', nan]
    """
    def one(v):
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            return None
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return str(int(v))
        return str(v)
    return values.astype(object).map(one)


def _attribute_groups(cohort: pd.DataFrame, human: pd.DataFrame, item_ids: set[str],
                      group_by: Sequence[str] | None) -> list[str]:
    if group_by is not None:
        return [g for g in group_by if g in cohort.columns and g in human.columns and g != WEIGHT_COLUMN]
    shared = [c for c in cohort.columns if c in human.columns and c not in item_ids and c != WEIGHT_COLUMN]
    return [c for c in shared if 1 < human[c].nunique() <= MAX_GROUP_LEVELS]


def label_mismatch(attribute: str, cohort_values: set[str], human_values: set[str]) -> dict[tuple[str, str], str]:
    """Why a group of `attribute` has respondents on one side only, when the two sides write the
    attribute's values differently: (attribute, value) -> a clause to add to the "no answers" note.

    Values found on both sides need nothing. When the sides share no value at all, every group
    says so, with both sets of labels and the way out (a codebook's ``values:``).

    Example
    -------
    >>> print(label_mismatch("gender", {"female", "male"}, {"F", "M"})[("gender", "F")])
    : the cohort and the humans share no gender value (cohort: female, male; humans: F, M): the labels differ; map the humans' values with a codebook's `values:` (e.g. gender: {F: female})
    """
    if not cohort_values or not human_values:
        return {}
    shown = f"cohort: {', '.join(sorted(cohort_values))}; humans: {', '.join(sorted(human_values))}"
    if not cohort_values & human_values:
        example = f"{attribute}: {{{sorted(human_values)[0]}: {sorted(cohort_values)[0]}}}"
        why = (f": the cohort and the humans share no {attribute} value ({shown}): the labels differ; map the humans' "
               f"values with a codebook's `values:` (e.g. {example})")
        return {(attribute, v): why for v in cohort_values | human_values}
    return {(attribute, v): f": {v!r} occurs on one side only ({shown})"
            for v in cohort_values ^ human_values}


def item_distributions(cohort: pd.DataFrame, human: pd.DataFrame, instrument: Instrument,
                       group_by: Sequence[str] | None = None, *,
                       cohort_weights: pd.Series | None = None) -> pd.DataFrame:
    """Each rating item's answer distribution in the cohort against the humans', overall and per group.

    Parameters
    ----------
    cohort, human : pandas.DataFrame
        Raw answers (one row per respondent, one column per item id) plus attribute columns.
    instrument : Instrument
        Gives the items and the options (distributions are over the scale's option values).
    group_by : sequence of str, optional
        Attributes to compare within (each value a group). Default: every attribute present in
        both tables with 2 to 10 distinct human values (e.g. gender). Values must be written
        alike on both sides (``female`` ≠ ``F``; a codebook's ``values:`` maps the humans'); a
        group without respondents on one side is a "not estimable" row, whose note says when the
        two sides share no value of the attribute at all (:func:`label_mismatch`). The survey
        weights (``survey_weight``) are never a group.
    cohort_weights : pandas.Series, optional
        Weights of the cohort's respondents by respondent id (the index of `cohort`), e.g. the
        survey weights of the people a cohort of twins was made from; respondents without one
        (the baseline) are left out.

    Human answers with a ``survey_weight`` column
    (:data:`psyq.engine.files.codebook.WEIGHT_COLUMN`) are weighted by it: option shares are
    weighted shares (:func:`option_shares`), so TV, the uniform baseline, the SimBench score and
    the Wasserstein distance are those of the weighted distributions; likewise the cohort with
    `cohort_weights`. ``n_cohort, n_human`` still count answers.

    Returns
    -------
    pandas.DataFrame
        One row per item × group (``group_by`` ``"all"`` for everyone, then each attribute and
        value): ``n_cohort, n_human`` (answers), ``tv`` = ½·Σ|p_cohort − p_human| over the
        options, ``tv_uniform`` = TV of the uniform distribution against the humans', ``simbench``
        = 100·(1 − tv / mean tv_uniform), the mean taken over the instrument's items within the
        same group (SimBench's normalisation, with the instrument as the data set: 0 = no better
        than answering uniformly at random, 100 = the human distribution; it can be negative),
        and ``wasserstein`` = Wasserstein-1 distance between the two distributions on the option
        values (:func:`scipy.stats.wasserstein_distance`, in scale points; unlike TV it counts how
        far answers moved, not only whether they moved). Not estimable (no numbers, with a note)
        when a side has no answer to the item in the group; ``simbench`` alone is not estimable
        when every item's human distribution in the group is uniform (baseline 0).

    Example
    -------
    See the module docstring.

    References
    ----------
    Hu, T., Baumann, J., Lupo, L., Collier, N., Hovy, D., & Röttger, P. (2025). SimBench:
    Benchmarking the ability of large language models to simulate human behaviors.
    arXiv:2510.17516. (Score = 100·(1 − TV/TV_uniform), TV_uniform averaged over a data set's
    questions, as in the benchmark's scoring code.)
    Villani, C. (2009). Optimal transport: Old and new. Springer. (Wasserstein distance.)
    """
    options = [float(o.value) for o in instrument.scale]
    items = [i.id for i in instrument.rating_items]
    if cohort_weights is not None:
        cohort = cohort[cohort.index.isin(cohort_weights.index)]
        weight_c = cohort_weights.reindex(cohort.index).astype(float)
        if not (np.isfinite(weight_c) & (weight_c > 0)).all():
            raise ValueError("cohort weights: every weight must be a positive finite number")
    else:
        weight_c = None
    weight_h = human[WEIGHT_COLUMN] if WEIGHT_COLUMN in human.columns else None
    groups: list[tuple[str, str, pd.DataFrame, pd.DataFrame]] = [(ALL, ALL, cohort, human)]
    why_empty: dict[tuple[str, str], str] = {}    # (attribute, level) -> why one side has nobody
    for attribute in _attribute_groups(cohort, human, set(items), group_by):
        c_text, h_text = level_text(cohort[attribute]), level_text(human[attribute])
        levels = sorted(set(c_text.dropna()) | set(h_text.dropna()))
        why_empty.update(label_mismatch(attribute, set(c_text.dropna()), set(h_text.dropna())))
        for level in levels:
            groups.append((attribute, level, cohort[(c_text == level).to_numpy()], human[(h_text == level).to_numpy()]))
    uniform = np.full(len(options), 1 / len(options))
    rows = []
    for attribute, level, c_rows, h_rows in groups:
        block = []
        for item in items:
            c = c_rows[item] if item in c_rows else pd.Series(dtype=float)
            h = h_rows[item] if item in h_rows else pd.Series(dtype=float)
            n_c, n_h = int(c.notna().sum()), int(h.notna().sum())
            row = {"instrument": instrument.id, "item_id": item, "group_by": attribute, "group": level,
                   "n_cohort": n_c, "n_human": n_h, "tv": np.nan, "tv_uniform": np.nan, "simbench": np.nan,
                   "wasserstein": np.nan, "estimable": False, "note": ""}
            if n_c == 0 or n_h == 0:
                side = "cohort" if n_c == 0 else "human"
                row["note"] = f"no {side} answers to this item in this group" + why_empty.get((attribute, level), "")
            else:
                p = option_shares(c, options, None if weight_c is None else weight_c.reindex(c.index))
                q = option_shares(h, options, None if weight_h is None else weight_h.reindex(h.index))
                row.update(tv=total_variation(p, q), tv_uniform=total_variation(uniform, q), estimable=True,
                           wasserstein=float(stats.wasserstein_distance(options, options, p, q)))
            block.append(row)
        baselines = [r["tv_uniform"] for r in block if r["estimable"]]
        baseline = float(np.mean(baselines)) if baselines else np.nan
        for row in block:
            if not row["estimable"]:
                continue
            if baseline > 0:
                row["simbench"] = 100 * (1 - row["tv"] / baseline)
            else:
                row["note"] = "SimBench score not estimable: the human answers are uniform on every item (baseline 0)"
        rows.extend(block)
    return pd.DataFrame(rows, columns=DISTRIBUTION_COLUMNS)


def pearson_pairwise(x: pd.Series, y: pd.Series) -> tuple[float, int, str]:
    """Pearson r over the rows where both are present, its n, and why it is missing (or "").

    Example
    -------
    >>> r, n, why = pearson_pairwise(pd.Series([1.0, 2, 3, None]), pd.Series([2.0, 4, 7, 1]))
    >>> round(r, 3), n, why
    (0.993, 3, '')
    """
    both = pd.concat([x, y], axis=1).dropna()
    n = len(both)
    if n < 3:
        return np.nan, n, f"{n} respondent(s) with both scores: r needs at least 3"
    constant = [str(name) for name, col in both.items() if np.ptp(col.to_numpy(dtype=float)) == 0]
    if constant:
        return np.nan, n, "no variance in " + " and ".join(constant)
    return float(stats.pearsonr(both.iloc[:, 0], both.iloc[:, 1]).statistic), n, ""


def subscale_correlations(cohort: pd.DataFrame, human: pd.DataFrame, instrument: Instrument) -> pd.DataFrame:
    """Pearson correlations between every pair of rating subscales, cohort next to humans.

    Parameters
    ----------
    cohort, human : pandas.DataFrame
        Raw answers, one row per respondent (scored here with :func:`psyq.engine.trials.scoring.score_wide`:
        reverse keying, prorating, ``min_answered``).
    instrument : Instrument

    Returns
    -------
    pandas.DataFrame
        One row per pair (a, b) with a before b in the instrument's order: ``n_cohort, n_human``
        (respondents with both scores), ``r_cohort, r_human`` (pairwise-complete Pearson r, as
        :meth:`pandas.DataFrame.corr`), ``difference`` = r_cohort − r_human. A correlation that
        cannot be estimated (fewer than 3 respondents, a constant subscale) is NaN and the
        ``note`` says why (``estimable`` False when either is). ``part_whole`` is True when one
        subscale's items are all items of the other (a composite and its part, e.g. a total and
        one of its subscales, :func:`part_whole`): such an r is high by construction, and the
        ``note`` says so. With fewer than 2 subscales a single row says there is nothing to
        correlate.

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> mini = load_instrument("tests/data/mini_1to7.yaml")
    >>> cohort = pd.DataFrame({"a": [1, 2, 2, 3], "b": [4, 4, 5, 5], "c": [7, 6, 6, 5], "d": [3, 3, 4, 2]})
    >>> subscale_correlations(cohort, cohort, mini).iloc[1:][["subscale_a", "subscale_b", "r_cohort", "difference"]].round(3)
      subscale_a subscale_b  r_cohort  difference
    1          X          Z     0.577         0.0
    2          Y          Z     0.775         0.0

    References
    ----------
    Campbell, D. T., & Fiske, D. W. (1959). Convergent and discriminant validation by the
    multitrait-multimethod matrix. Psychological Bulletin, 56(2), 81–105.
    """
    subs = [s.id for s in instrument.rating_subscales]
    if len(subs) < 2:
        return pd.DataFrame([{"instrument": instrument.id, "subscale_a": subs[0] if subs else "", "subscale_b": "",
                              "n_cohort": len(cohort), "n_human": len(human), "r_cohort": np.nan,
                              "r_human": np.nan, "difference": np.nan, "part_whole": False, "estimable": False,
                              "note": f"{len(subs)} rating subscale(s): no intercorrelations to compare"}],
                            columns=CORRELATION_COLUMNS)
    sc, sh = score_wide(instrument, cohort), score_wide(instrument, human)
    rows = []
    for i, a in enumerate(subs):
        for b in subs[i + 1:]:
            rc, nc, why_c = pearson_pairwise(sc[a], sc[b])
            rh, nh, why_h = pearson_pairwise(sh[a], sh[b])
            notes = [f"{side}: {why}" for side, why in (("cohort", why_c), ("human", why_h)) if why]
            whole = part_whole(instrument, a, b)
            rows.append({"instrument": instrument.id, "subscale_a": a, "subscale_b": b, "n_cohort": nc,
                         "n_human": nh, "r_cohort": rc, "r_human": rh, "difference": rc - rh,
                         "part_whole": whole is not None, "estimable": not notes,
                         "note": "; ".join(notes + ([whole] if whole else []))})
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def part_whole(instrument: Instrument, a: str, b: str) -> str | None:
    """Why r(a, b) is a part–whole correlation (one subscale's items all belong to the other), or None.

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> print(part_whole(load_instrument("tests/data/mini_1to7.yaml"), "X", "Z"))
    part–whole: Z holds every item of X (a composite and its part), so r is high by construction
    """
    items = {s: {i.id for i in instrument.subscale_items(s)} for s in (a, b)}
    for whole, part in ((b, a), (a, b)):
        if items[part] and items[part] <= items[whole]:
            return (f"part–whole: {whole} holds every item of {part} (a composite and its part), "
                    "so r is high by construction")
    return None


def _factor_problem(data: pd.DataFrame, n_factors: int) -> str | None:
    """Why an n-factor model of these complete rows cannot be fitted (None: it may be)."""
    n, k = data.shape
    if n_factors < 2:
        return f"{n_factors} rating subscale(s): a multi-factor structure needs at least 2"
    if n < k + 1:
        return f"{n} respondent(s) with every item answered: fewer than items + 1 ({k + 1})"
    constant = [str(c) for c in data.columns if np.ptp(data[c].to_numpy(dtype=float)) == 0]
    if constant:
        return "item(s) without variance: " + ", ".join(constant)
    dof = ((k - n_factors) ** 2 - (k + n_factors)) / 2
    if dof < 0:
        return f"{n_factors} factors are not identified by {k} items (degrees of freedom {dof:g} < 0)"
    eigen = np.linalg.eigvalsh(np.corrcoef(data.to_numpy(dtype=float), rowvar=False))
    if eigen.min() <= 1e-10 * eigen.max():
        return "the item correlation matrix is singular (some item is a linear combination of others)"
    return None


def _fit_factors(x: np.ndarray, n_factors: int) -> tuple[np.ndarray, str] | None:
    """Unrotated standardised loadings (k × m) by ML, else principal axis; None if both fail."""
    for method in ("ml", "pa"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                model = Factor(x, n_factor=n_factors, method=method)
                result = model.fit(rng=_FACTOR_SEED) if method == "ml" else model.fit()
            except (ValueError, np.linalg.LinAlgError, FloatingPointError):
                continue
        if method == "ml" and not result.mle_retvals.success:
            continue
        if any(issubclass(w.category, RuntimeWarning) for w in caught):
            continue
        loadings = np.asarray(result.loadings, dtype=float)
        uniqueness = np.asarray(result.uniqueness, dtype=float)
        if np.all(np.isfinite(loadings)) and np.all(np.isfinite(uniqueness)) and uniqueness.min() >= 0:
            return loadings, method
    return None


def target_loadings(items: pd.DataFrame, instrument: Instrument) -> tuple[pd.DataFrame | None, str, str]:
    """Loadings of an EFA with one factor per first-order rating subscale, rotated to the membership target.

    Parameters
    ----------
    items : pandas.DataFrame
        Raw answers, one row per respondent; keyed here, incomplete rows dropped (listwise).
    instrument : Instrument

    Returns
    -------
    (pandas.DataFrame or None, str, str)
        Items × subscales loadings after orthogonal Procrustes rotation towards the 0/1
        membership matrix of the first-order subscales (:attr:`Instrument.first_order_subscales`:
        a composite such as a total is not a factor of its own) (:func:`psyq.engine.trials.scoring.membership_matrix`), the fitting method (``ml``
        or ``pa``) and a note. None and the reason when the model cannot be estimated.

    Notes
    -----
    Unrotated loadings Λ (statsmodels ``Factor``: maximum likelihood, principal axis when ML
    fails) are rotated by the orthogonal T minimising ‖ΛT − M‖ (:func:`scipy.linalg.orthogonal_procrustes`,
    Schönemann 1966), M the membership matrix. Why Procrustes to the key rather than a blind
    rotation (varimax, oblimin): both samples are rotated towards the *same* hypothesised
    structure, so factor j means "subscale j" in both and the congruence of column j is
    meaningful without matching factors by hand; this is the standard way of testing factor
    replicability across samples (McCrae et al., 1996). An orthogonal rotation keeps each
    solution's fit; an oblique or CFA model (e.g. semopy) would also estimate factor
    correlations, which φ does not need, and fails more often on the small, low-variance samples
    LLM cohorts give. Note that Procrustes rotation can inflate congruence for random data
    (Paunonen, 1997): compare φ with that of a shuffled cohort when in doubt.

    References
    ----------
    Schönemann, P. H. (1966). A generalized solution of the orthogonal Procrustes problem.
    Psychometrika, 31(1), 1–10.
    McCrae, R. R., Zonderman, A. B., Costa, P. T., Bond, M. H., & Paunonen, S. V. (1996).
    Evaluating replicability of factors in the Revised NEO Personality Inventory: Confirmatory
    factor analysis versus Procrustes rotation. Journal of Personality and Social Psychology,
    70(3), 552–566.
    Paunonen, S. V. (1997). On chance and factor congruence following orthogonal Procrustes
    rotation. Educational and Psychological Measurement, 57(1), 33–59.
    """
    target = membership_matrix(instrument)[[s.id for s in instrument.first_order_subscales]]
    data = keyed_answers(instrument, items).dropna(axis=0, how="any")
    problem = _factor_problem(data, target.shape[1])
    if problem:
        return None, "none", problem
    fitted = _fit_factors(data.to_numpy(dtype=float), target.shape[1])
    if fitted is None:
        return None, "none", "no proper factor solution (maximum likelihood and principal axis both failed)"
    loadings, method = fitted
    rotation, _ = linalg.orthogonal_procrustes(loadings, target.to_numpy())
    return pd.DataFrame(loadings @ rotation, index=target.index, columns=target.columns), method, ""


def factor_congruence(cohort: pd.DataFrame, human: pd.DataFrame, instrument: Instrument) -> pd.DataFrame:
    """Tucker's φ per subscale factor between the cohort's and the humans' target-rotated loadings.

    Parameters
    ----------
    cohort, human : pandas.DataFrame
        Raw answers, one row per respondent, one column per item id.
    instrument : Instrument
        Its first-order rating subscales are the factors (at least 2): a composite subscale
        (``composite: true``, or a total inferred from its items) is left out, since fitting a
        total as one more factor distorts the others.

    Returns
    -------
    pandas.DataFrame
        One row per factor (named by its subscale) and a last row ``factor = "all"`` (φ over
        every loading at once): ``n_cohort, n_human`` (complete respondents), ``k`` items,
        ``phi`` (:func:`psyq.analysis.statistics.human_comparison.tucker_phi` of the two columns of
        :func:`target_loadings`; ≥ .95 equal, .85–.94 fair similarity), the fitting methods and
        ``estimable``/``note``: no φ when either sample's model cannot be estimated (fewer than
        2 subscales, n < items + 1, an item without variance, too many factors for the items, a
        singular correlation matrix, no proper solution).

    Example
    -------
    Not run: four factors fitted to the IRI's 28 items in each sample take several seconds (two
    halves of the IRI data psyq ships give φ .96–.99).

    >>> factor_congruence(cohort, humans, iri)                                    # doctest: +SKIP

    References
    ----------
    See :func:`target_loadings` and :func:`psyq.analysis.statistics.human_comparison.tucker_phi`.
    """
    subs = [s.id for s in instrument.first_order_subscales]
    ids = [i.id for i in instrument.rating_items]
    n_c = int(keyed_answers(instrument, cohort).dropna(axis=0, how="any").shape[0])
    n_h = int(keyed_answers(instrument, human).dropna(axis=0, how="any").shape[0])
    lc, mc, why_c = target_loadings(cohort, instrument)
    lh, mh, why_h = target_loadings(human, instrument)
    notes = [f"{side}: {why}" for side, why in (("cohort", why_c), ("human", why_h)) if why]
    base = {"instrument": instrument.id, "n_cohort": n_c, "n_human": n_h, "k": len(ids),
            "method_cohort": mc, "method_human": mh}
    if notes:
        return pd.DataFrame([{**base, "factor": f, "phi": np.nan, "estimable": False, "note": "; ".join(notes)}
                             for f in [*subs, ALL]], columns=CONGRUENCE_COLUMNS)
    rows = [{**base, "factor": f, "phi": tucker_phi(lc[f].to_numpy(), lh[f].to_numpy()), "estimable": True,
             "note": ""} for f in subs]
    rows.append({**base, "factor": ALL, "phi": tucker_phi(lc.to_numpy(), lh.to_numpy()), "estimable": True,
                 "note": ""})
    return pd.DataFrame(rows, columns=CONGRUENCE_COLUMNS)
