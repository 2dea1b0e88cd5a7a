"""How far is each item's answer distribution from people's? Distribution distances per item and
condition, with bootstrap intervals and the ceiling that sampling noise sets.

:func:`distribution_distances` sets, per item (and per condition of a study with conditions), the
personas' answer distribution over the scale's options against the people's:

* ``tvd``: the total variation distance ½·Σ|pₖ − qₖ| over the options, SimBench's distance (Hu et
  al. 2025; their scoring code computes exactly ½·Σ|p − q| on the two option-share vectors): 0 for
  the same distribution, 1 for answers on disjoint options;
* ``w1``: the Wasserstein-1 (earth mover's) distance on the ordered scale, Σₖ |Pₖ − Qₖ|·(vₖ₊₁ − vₖ)
  over the cumulative shares P, Q and option values v, in scale points (the value of
  :func:`scipy.stats.wasserstein_distance` on the option values weighted by the shares): unlike
  TVD it counts how far answers moved, not only whether they moved;
* ``score``: SimBench's normalised score, 100·(1 − TVD / TVD_uniform), TVD_uniform being the mean
  over the instrument's items of the TVD between the uniform distribution and the people's (the
  benchmark normalises by a *uniform* baseline averaged over a data set's questions; here the
  instrument is the data set): 0 = no closer than answering uniformly at random, 100 = the
  people's distribution, negative = further than uniform;
* ``ceiling_tvd``, ``ceiling_w1``: the people's own split-half value, the distance between two
  random halves of the people (sizes ⌊N/2⌋ and ⌈N/2⌉, ``ceiling_n`` = ⌊N/2⌋), averaged over
  `splits` random splits: what two samples of real people of that size differ by through sampling
  noise alone, the floor no cohort of that size can be expected to go below (``score_ceiling`` is
  its SimBench score). With ``ceiling="matched"`` the people are split instead into a random
  n_personas of them and the other N − n_personas, the noise a cohort of real people the size of
  the personas would show against the rest. A cohort of n personas against N people carries noise
  of order √(1/n + 1/N) (TVD and W1 grow with it), two halves √(4/N): the split-half ceiling of
  1,973 people is below what 300 real people would reach against them; the matched one is not.

The point estimates are those of :func:`~psyq.analysis.statistics.validity.item_distributions`
(``tv``, ``wasserstein``, ``simbench``: one definition in the package, survey weights included).
The intervals are percentile bootstrap intervals: respondents resampled with replacement within
each sample (personas and people independently), `resamples` times (default 1,000), seeded by
`seed`. Near 0 a distance is biased upwards (a sample's distribution is never exactly its
population's) and its interval lies above the true value: read a small distance against the
ceiling, not against 0.

Checked in tests/test_distances.py: TVD and W1 against a hand computation and against
:func:`scipy.stats.wasserstein_distance` with the option shares as weights; the split-half ceiling
small on two halves of one sample and large between two different distributions; the bootstrap
interval's coverage on seeded simulations of a known pair of distributions (95 % interval, at
least 90 % coverage).

Example
-------
400 people and 200 personas on the toy 1–7 instrument, drawn from the same distribution, except
that the personas answer item a two points higher:

>>> from psyq.engine.design.instrument import load_instrument
>>> mini = load_instrument("tests/data/mini_1to7.yaml")
>>> rng = np.random.default_rng(0)
>>> shares = [.05, .1, .2, .3, .2, .1, .05]
>>> draw = lambda n: pd.DataFrame(rng.choice(np.arange(1, 8), (n, 4), p=shares), columns=list("abcd"))
>>> people, personas = draw(400), draw(200)
>>> personas["a"] = (personas["a"] + 2).clip(1, 7)
>>> out = distribution_distances(personas, people, mini, resamples=200)
>>> out[["item", "tvd", "tvd_low", "tvd_high", "w1", "ceiling_tvd", "ceiling_n", "score"]].round(2)
  item   tvd  tvd_low  tvd_high    w1  ceiling_tvd  ceiling_n  score
0    a  0.45     0.39      0.52  1.65         0.08        200 -70.38
1    b  0.05     0.05      0.15  0.12         0.09        200  81.28
2    c  0.13     0.08      0.22  0.42         0.09        200  50.38
3    d  0.06     0.04      0.16  0.12         0.10        200  78.47

Item b's interval lies above its estimate: a distance near 0 is biased upwards, which is why the
ceiling stands beside it.

References
----------
Hu, T., Baumann, J., Lupo, L., Collier, N., Hovy, D., & Röttger, P. (2025). SimBench: Benchmarking
the ability of large language models to simulate human behaviors. arXiv:2510.17516; the score as
computed by the authors' release code (SimBench_release, ``calculate_simbench_score.py``:
``100 * (1 - TV / mean TV_uniform)``, the mean over a data set's questions). Villani, C. (2009).
*Optimal transport: Old and new*. Springer. Efron, B., & Tibshirani, R. J. (1993). *An introduction
to the bootstrap*. Chapman & Hall (percentile intervals).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.design.persona import BASELINE
from psyq.engine.files.codebook import WEIGHT_COLUMN

from psyq.analysis.statistics.validity import item_distributions

COLUMNS = ["instrument", "item", "condition", "n_personas", "n_people", "tvd", "tvd_low", "tvd_high", "w1", "w1_low",
           "w1_high", "ceiling_tvd", "ceiling_w1", "ceiling_n", "score", "score_ceiling", "note"]
RESAMPLES = 1000
SPLITS = 50
CONFIDENCE = 0.95
ONE_GROUP = "cohort"
"""The condition's label when the personas' frame has no condition column."""


def condition_frames(cohort: pd.DataFrame | Mapping[str, pd.DataFrame], by: str = "condition"
                     ) -> list[tuple[str, pd.DataFrame]]:
    """The personas' answers per condition: a mapping condition → frame as given, or the rows of
    one frame per value of its column `by` (in order of appearance; the column dropped; one
    condition, "cohort", when the frame has no such column). The model answering as itself
    (:data:`psyq.BASELINE`) is left out: it is one respondent, not a persona.

    Example
    -------
    >>> frame = pd.DataFrame({"a": [1, 2, 3], "condition": ["x", "y", "x"]}, index=["p1", "p2", "baseline"])
    >>> [(label, part.index.tolist()) for label, part in condition_frames(frame)]
    [('x', ['p1']), ('y', ['p2'])]
    """
    if isinstance(cohort, Mapping):
        parts = [(str(label), frame) for label, frame in cohort.items()]
    elif by in cohort.columns:
        parts = [(str(label), part.drop(columns=[by])) for label, part in cohort.groupby(by, sort=False)]
    else:
        parts = [(ONE_GROUP, cohort)]
    return [(label, frame[frame.index.astype(str) != BASELINE.id]) for label, frame in parts]


def resample_counts(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each of `n` respondents is drawn in each of `resamples` bootstrap resamples (n
    draws with replacement each): a resamples × n array of counts, each row summing to n. A
    statistic of a resample is the statistic with these counts as frequency weights.

    Example
    -------
    >>> counts = resample_counts(5, 3, np.random.default_rng(0))
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((3, 5), [5, 5, 5])
    """
    draws = rng.integers(0, n, size=(resamples, n)) + (np.arange(resamples) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=resamples * n).reshape(resamples, n)


def answer_indicators(frame: pd.DataFrame, items: Sequence[str], options: Sequence[float]
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per respondent and item, which option was answered (respondents × items × options, 1 or
    0) and whether the item was answered at all (respondents × items, 1 or 0). An answer that is
    none of the options counts as answered on no option (as
    :func:`~psyq.analysis.statistics.validity.option_shares` counts it).

    Example
    -------
    >>> chosen, answered = answer_indicators(pd.DataFrame({"a": [1, 3, None]}), ["a"], [1, 2, 3])
    >>> chosen[:, 0].tolist(), answered[:, 0].tolist()
    ([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], [1.0, 1.0, 0.0])
    """
    values = frame.reindex(columns=list(items)).to_numpy(dtype=float)
    chosen = (values[:, :, None] == np.asarray(options, dtype=float)[None, None, :]).astype(float)
    return chosen, (~np.isnan(values)).astype(float)


def distances_from_counts(chosen_a: np.ndarray, answered_a: np.ndarray, chosen_b: np.ndarray,
                          answered_b: np.ndarray, options: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """TVD and Wasserstein-1 between two samples' answer distributions, from their (weighted)
    counts: `chosen_*` (…, items, options) the counts on each option, `answered_*` (…, items) the
    answers counted. The shares are count / answers; TVD = ½·Σ|p − q|, W1 = Σ |P − Q|·(vₖ₊₁ − vₖ)
    over the cumulative shares normalised to 1 (as scipy normalises its weights). NaN where a
    side has no answer.

    Example
    -------
    Shares (.5, .5, 0) and (0, .5, .5) on the options 1, 2, 3: TVD .5, every answer moved one point:
    >>> tvd, w1 = distances_from_counts(np.array([[1.0, 1, 0]]), np.array([2.0]), np.array([[0.0, 1, 1]]),
    ...                                 np.array([2.0]), [1, 2, 3])
    >>> tvd.tolist(), w1.tolist()
    ([0.5], [1.0])
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        p, q = chosen_a / answered_a[..., None], chosen_b / answered_b[..., None]
        tvd = 0.5 * np.abs(p - q).sum(axis=-1)
        cdf_p = np.cumsum(chosen_a / chosen_a.sum(axis=-1, keepdims=True), axis=-1)[..., :-1]
        cdf_q = np.cumsum(chosen_b / chosen_b.sum(axis=-1, keepdims=True), axis=-1)[..., :-1]
    # A side without answers has shares 0/0: NaN, which the sums carry into both distances.
    return tvd, (np.abs(cdf_p - cdf_q) * np.diff(np.asarray(options, dtype=float))).sum(axis=-1)


def _weights(frame: pd.DataFrame) -> np.ndarray:
    """The people's survey weights (1 each without a ``survey_weight`` column)."""
    if WEIGHT_COLUMN in frame.columns:
        return frame[WEIGHT_COLUMN].to_numpy(dtype=float)
    return np.ones(len(frame))


def _percentile(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the percentile interval of the resamples (rows); NaN where any is missing."""
    tail = (1 - confidence) / 2
    if len(draws) == 0:
        return np.full(draws.shape[1:], np.nan), np.full(draws.shape[1:], np.nan)
    low, high = np.quantile(draws, [tail, 1 - tail], axis=0)
    bad = np.isnan(draws).any(axis=0)
    return np.where(bad, np.nan, low), np.where(bad, np.nan, high)


def _ceiling(chosen: np.ndarray, answered: np.ndarray, size: int, splits: int, rng: np.random.Generator,
             options: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per item, the mean over `splits` random splits of the people into `size` and the rest of the
    TVD and W1 between the two parts (NaN for a split in which a part has no answer to the item)."""
    n = len(answered)
    members = np.zeros((splits, n))
    for k in range(splits):
        members[k, rng.permutation(n)[:size]] = 1.0
    flat = chosen.reshape(n, -1)
    total_c, total_a = flat.sum(axis=0), answered.sum(axis=0)
    part_c = (members @ flat).reshape(splits, *chosen.shape[1:])
    part_a = members @ answered
    tvd, w1 = distances_from_counts(part_c, part_a, total_c.reshape(chosen.shape[1:]) - part_c, total_a - part_a,
                                    options)
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(tvd)
        count = ok.sum(axis=0)
        mean = lambda x: np.where(count > 0, np.where(ok, x, 0).sum(axis=0) / np.maximum(count, 1), np.nan)  # noqa: E731
        return mean(tvd), mean(w1)


def distribution_distances(cohort_items: pd.DataFrame | Mapping[str, pd.DataFrame], human_items: pd.DataFrame,
                           instrument: Instrument, *, by: str = "condition", resamples: int = RESAMPLES,
                           seed: int = 0, confidence: float = CONFIDENCE, splits: int = SPLITS,
                           ceiling: str = "halves") -> pd.DataFrame:
    """Per condition and item, the TVD and Wasserstein-1 of the personas' answer distribution from the
    people's, with bootstrap intervals, the people's split-half ceiling and SimBench's score.

    Parameters
    ----------
    cohort_items : pandas.DataFrame or mapping
        The personas' raw answers, one row per respondent, one column per item id; a column `by`
        names each row's condition (absent: one condition, "cohort"); or a mapping condition →
        such a frame. The model answering as itself (``baseline``) is left out.
    human_items : pandas.DataFrame
        The people's raw answers to the same instrument (a ``survey_weight`` column weights them).
    instrument : Instrument
        Gives the rating items and the options (distributions are over the scale's values).
    by : str
        The condition column of `cohort_items`.
    resamples, seed, confidence
        The bootstrap: `resamples` resamples of respondents within each sample (default 1,000),
        numpy's generator seeded by `seed` (the same arguments give the same frame), percentile
        intervals at `confidence` (default .95).
    splits : int
        Random splits of the people averaged for the ceiling (default 50).
    ceiling : {"halves", "matched"}
        "halves": the people split into two random halves (the split-half value); "matched": a
        random n_personas of them against the rest (see the module docstring).

    Returns
    -------
    pandas.DataFrame
        One row per condition × rating item: ``instrument, item, condition, n_personas, n_people``
        (answers to the item), ``tvd, tvd_low, tvd_high, w1, w1_low, w1_high``, ``ceiling_tvd,
        ceiling_w1`` (the people's own split value) and ``ceiling_n`` (the size of the first part:
        ⌊N/2⌋, or n_personas when matched; the second part is the rest of the N people),
        ``score`` and ``score_ceiling`` (SimBench's score of the distance and of the ceiling),
        ``note``: why a value is missing. Not estimable (NaN, with a note): an item no persona or
        no person answered; a ceiling with fewer than 2 people's answers.

    Example
    -------
    See the module docstring.
    """
    if ceiling not in ("halves", "matched"):
        raise ValueError(f"ceiling must be 'halves' or 'matched', not {ceiling!r}")
    if resamples < 2:
        raise ValueError("resamples must be at least 2")
    items = [i.id for i in instrument.rating_items]
    options = [float(o.value) for o in instrument.scale]
    rng = np.random.default_rng(seed)
    people_w = _weights(human_items)
    chosen_p, answered_p = answer_indicators(human_items, items, options)
    chosen_p, answered_p = chosen_p * people_w[:, None, None], answered_p * people_w[:, None]
    n_p = len(human_items)
    ceilings: dict[int, tuple[np.ndarray, np.ndarray]] = {}     # by the first part's size: halves once
    rows = []
    for label, personas in condition_frames(cohort_items, by):
        point = item_distributions(personas, human_items, instrument, group_by=[])
        chosen_c, answered_c = answer_indicators(personas, items, options)
        counts_c, counts_p = resample_counts(len(personas), resamples, rng), resample_counts(n_p, resamples, rng)
        flat_p = chosen_p.reshape(n_p, -1)
        tvd, w1 = distances_from_counts(
            (counts_c @ chosen_c.reshape(len(personas), -1)).reshape(resamples, *chosen_c.shape[1:]),
            counts_c @ answered_c, (counts_p @ flat_p).reshape(resamples, *chosen_p.shape[1:]),
            counts_p @ answered_p, options)
        tvd_low, tvd_high = _percentile(tvd, confidence)
        w1_low, w1_high = _percentile(w1, confidence)
        size = n_p // 2 if ceiling == "halves" else min(len(personas), n_p - 1)
        if size not in ceilings:
            ceilings[size] = _ceiling(chosen_p, answered_p, size, splits, rng, options)
        ceiling_tvd, ceiling_w1 = ceilings[size]
        baseline = point.loc[point["estimable"], "tv_uniform"].mean()
        for j, item in enumerate(items):
            r = point.iloc[j]
            n_c, n_h = int(r["n_cohort"]), int(r["n_human"])
            notes = []
            if n_c == 0 or n_h == 0:
                notes.append("not estimable: " + " and ".join(
                    f"no answer of the {side} to this item" for side, n in (("personas", n_c), ("people", n_h)) if not n))
            if n_h < 2:
                notes.append("no ceiling: fewer than 2 people's answers to split")
            elif np.isnan(ceiling_tvd[j]):
                notes.append("no ceiling: in every split a part had no answer to this item")
            score_ceiling = (100 * (1 - ceiling_tvd[j] / baseline)
                             if baseline > 0 and not np.isnan(ceiling_tvd[j]) else np.nan)
            if r["estimable"] and pd.isna(r["simbench"]) and r["note"]:
                notes.append(str(r["note"]))
            rows.append({"instrument": instrument.id, "item": item, "condition": label, "n_personas": n_c,
                         "n_people": n_h, "tvd": r["tv"], "tvd_low": tvd_low[j], "tvd_high": tvd_high[j],
                         "w1": r["wasserstein"], "w1_low": w1_low[j], "w1_high": w1_high[j],
                         "ceiling_tvd": ceiling_tvd[j], "ceiling_w1": ceiling_w1[j], "ceiling_n": size,
                         "score": r["simbench"], "score_ceiling": score_ceiling, "note": "; ".join(notes)})
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["answer_indicators", "condition_frames", "distances_from_counts", "distribution_distances",
           "resample_counts"]
