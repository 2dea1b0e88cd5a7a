"""Which condition is the most people-like? Conditions compared head to head, criterion by criterion.

A study with conditions (models, persona templates, ways of asking) asks of each pair: is A closer
to people than B, or is the difference noise? :func:`compare_conditions` answers it for every pair
of conditions and every criterion of the verdict's scorecard
(:mod:`~psyq.analysis.statistics.standin.scorecard`) that applies, and the distribution distances
(:mod:`~psyq.analysis.statistics.distances`). Each criterion is reduced to one number, the
condition's *distance from people* (smaller is closer; every condition against the same people):

===============  ==========================================================================
criterion        distance from people
===============  ==========================================================================
level            mean over the rating subscales of |Hedges' g| of the subscale scores,
                 personas − people (pooled SD, J = 1 − 3/(4(n₁ + n₂) − 9), as the scorecard)
spread           mean over the subscales of |ln(SD personas / SD people)|
reliability      mean over the subscales of |α personas − α people| (Cronbach's α of the keyed
                 items, complete answers, as :func:`~psyq.compare_with_humans`)
distinguishable  AUC − .5 of :func:`~psyq.distinguishability` (the better classifier, held out)
style            mean over the subscales with forward and reversed items of |style shift|, in
                 scale points per item (:func:`~psyq.style_and_trait`'s ``style``)
relations        mean over the relations of |r personas − r people|: every pair of subscales,
                 each subscale with each numeric attribute, and with each level of a categorical
                 attribute against its reference (a point-biserial r, the contrast
                 :func:`~psyq.relations` takes: with two levels the later as text against the
                 earlier, with more the level most frequent among people as the reference)
individuals      1 − mean over twins of (r of the twin's answers with its own person's − mean r
                 with the other twins') (:func:`~psyq.twin_agreement`; twins only)
tvd, w1          mean over the items of the total variation distance and of Wasserstein-1
                 (:func:`~psyq.analysis.statistics.distances.distribution_distances`)
===============  ==========================================================================

A criterion applies when it can be computed for the instrument and data at hand: style needs a
subscale with items of both keyings, relations at least two subscales or an attribute,
individuals conditions whose personas are twins of the people (at least 3); a condition for which
an applicable criterion cannot be computed has NaN there, with the reason in the note.

People with survey weights (a ``survey_weight`` column,
:data:`psyq.engine.files.codebook.WEIGHT_COLUMN`, as
:func:`~psyq.analysis.scoring.human_answers.read_answers_csv` keeps a codebook's ``weight:``) are
weighted where the function a criterion is named after weights them, so every condition is set
against the population the scorecard compares with: level and spread take the people's weighted
mean and SD (reliability-weights variance, Hedges' g with Kish's n_eff in place of n, as
:func:`~psyq.compare_with_humans`), tvd and w1 the weighted answer distributions (as
:func:`~psyq.analysis.statistics.distances.distribution_distances`). Reliability, distinguishable,
style, relations and individuals stay unweighted, as :func:`~psyq.compare_with_humans`' α,
:func:`~psyq.distinguishability`, :func:`~psyq.style_and_trait`, :func:`~psyq.relations` and
:func:`~psyq.twin_agreement` are, and their rows say so in the note. In each resample a person's
weight multiplies the number of times they are drawn. The personas are not weighted.

The difference ``distance_a − distance_b`` (negative: A is closer) has a bootstrap standard error:
in each of `resamples` resamples (default 1,000, numpy's generator seeded by `seed`) the people
are drawn with replacement once and shared by every condition (each condition is compared with
the same people, so their sampling noise largely cancels in the difference); conditions whose
personas are the same respondents (the same set of respondent ids: the same personas answered
both) are *paired* — the same respondents drawn for both, so what they share cancels too; other
conditions are drawn independently. The distinguishability AUC is resampled over its held-out
respondents, independently for each condition (its test respondents are not matched across
conditions), which can only widen its difference's interval. The interval is the normal one,
difference ± z·SE at `confidence` (default 95 %), its p two-sided from z = difference / SE, and
Holm's correction runs over every pair × criterion of the frame
(:func:`~psyq.analysis.statistics.multiple_testing.holm`). A pair is *distinguishable* on a
criterion when its Holm-adjusted p is below 1 − `confidence`: one of the two is then
distinguishably closer to people on it (``closer``).

:func:`rank_conditions` orders the conditions by distance per criterion. Conditions share a rank
unless one is distinguishably closer: a condition's rank is 1 + the number of conditions
distinguishably closer than it (Holm-adjusted pairwise difference, as above). So the conditions
whose differences from the closest are not distinguishable from 0 all share rank 1, and
``ahead_of_next`` says whether a condition is distinguishably closer than the next in the order.

What the distances do not allow for: a distance grows with sampling noise (|g|, TVD and W1 of a
sample from people's very population are above 0), more for a smaller sample, so conditions of
very different sizes favour the larger (a note says so beyond 2 to 1). Near "no difference" the
tests lean conservative: where a distance sits at its noise floor its bootstrap spread is inflated
(a resample adds its own noise to the sample's), so on conditions identical by construction a
single criterion's unadjusted p fell below .05 in 1–3 % of the studies rather than 5 %
(bench/conditions_calibration.py).

Checked in tests/test_conditions_compare.py: each distance against the statistic it is named
after, called directly (compare_with_humans' g and α, style_and_trait's style, relations' r,
distinguishability's AUC, distribution_distances' TVD and W1), and in
tests/test_conditions_weights.py with weighted people (compare_with_humans' weighted g and SD,
distribution_distances' weighted TVD and W1; equal weights give the unweighted frame); known
answers on the 1,973 Briganti et al. (2018) people — conditions of 300 drawn from other people,
the same shifted by a point, and uniform answers, ranked as their population distances order them, the first two
distinguishably apart; and conditions identical by construction called different in no more
than 5 % of simulated studies (bench/conditions_calibration.py: 2 of 200 studies for two draws of
300 people against 1,373 others, 0 of 200 for the same 300 people twice with noise, paired).

Example
-------
Two conditions of 150 of the shipped people each, one of them shifted a point up (clipped to the
scale), against 600 others; a point up is a response style, which leaves reliability and the
relations of the scores nearly as they were:

>>> import warnings; warnings.simplefilter("ignore")       # the shipped file's codebook notice
>>> from psyq import human_data, load_instrument
>>> iri = load_instrument("iri")
>>> people = human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri).sample(frac=1, random_state=0)
>>> items = [i.id for i in iri.rating_items]
>>> near, shifted = people.iloc[600:750], people.iloc[750:900].copy()
>>> shifted[items] = (shifted[items] + 1).clip(0, 4)
>>> out = compare_conditions({"near": near, "shifted": shifted}, people.iloc[:600], iri, resamples=200)
>>> out[["criterion", "closer", "difference", "low", "high", "p_holm"]].round(2)
         criterion closer  difference   low  high  p_holm
0            level   near       -0.27 -0.36 -0.18     0.0
1           spread   near       -0.17 -0.26 -0.08     0.0
2      reliability              -0.01 -0.05  0.04     1.0
3  distinguishable   near       -0.46 -0.55 -0.37     0.0
4            style   near       -0.83 -0.89 -0.77     0.0
5        relations              -0.02 -0.08  0.04     1.0
6              tvd   near       -0.28 -0.30 -0.25     0.0
7               w1   near       -0.73 -0.79 -0.67     0.0
>>> ranks = rank_conditions(out).set_index(["criterion", "condition"])
>>> ranks.loc["tvd", "rank"].to_dict(), ranks.loc["relations", "rank"].to_dict()
({'near': 1, 'shifted': 2}, {'near': 1, 'shifted': 1})
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from psyq.engine.design.instrument import Instrument
from psyq.engine.files.codebook import WEIGHT_COLUMN
from psyq.engine.trials.scoring import keyed_answers, score_wide

from psyq.analysis.statistics.distances import (answer_indicators, condition_frames, distances_from_counts,
                                                resample_counts)
from psyq.analysis.statistics.intervals import z_quantile
from psyq.analysis.statistics.multiple_testing import holm
from psyq.analysis.statistics.standin.distinguishability import distinguishability
from psyq.analysis.statistics.standin.twins import match_twins, twin_agreement

CRITERIA = ("level", "spread", "reliability", "distinguishable", "style", "relations", "individuals", "tvd", "w1")
"""The criteria compared, in the order of the frame (the scorecard's, then the distances)."""
RESAMPLES = 1000
CONFIDENCE = 0.95
MIN_TWINS = 3
SIZE_RATIO = 2.0
"""Conditions whose sizes differ more than this get a note: noise-driven distances favour the larger."""
COLUMNS = ["instrument", "criterion", "measure", "condition_a", "condition_b", "n_a", "n_b", "paired", "distance_a",
           "distance_b", "difference", "low", "high", "p", "p_holm", "distinguishable", "closer", "note"]
RANK_COLUMNS = ["instrument", "criterion", "condition", "distance", "rank", "ahead_of_next", "note"]
DISTANCE_COLUMNS = ["instrument", "criterion", "measure", "condition", "n", "distance", "low", "high", "note"]
UNWEIGHTED = {"reliability": "α is unweighted, as in compare_with_humans",
              "distinguishable": "the classifier test is unweighted, as distinguishability",
              "style": "the style shift is unweighted, as style_and_trait",
              "relations": "the relations are unweighted, as in relations",
              "individuals": "the twins' agreement is unweighted, as twin_agreement"}
"""The criteria that do not read the people's survey weights (the functions they are named after do
not), with the note their rows get when the people are weighted."""


def _relation_spec(frames: list[pd.DataFrame], people: pd.DataFrame, subs: list[str], items: list[str],
                   attributes: Sequence[str] | None) -> list[tuple]:
    """The relations compared: (name, subscale, other subscale or attribute, level, reference); level
    None for a subscale pair or a numeric attribute."""
    spec = [(f"{a} with {b}", a, b, None, None) for a, b in combinations(subs, 2)]
    samples = [*frames, people]
    if attributes is None:
        attributes = [c for c in people.columns if c not in items and c != WEIGHT_COLUMN
                      and all(c in f.columns for f in frames)]
    for attribute in attributes:
        columns = [f[attribute] for f in samples if attribute in f.columns]
        if len(columns) < len(samples):
            continue
        if all(pd.api.types.is_numeric_dtype(c) and not pd.api.types.is_bool_dtype(c) for c in columns):
            spec += [(f"{s} with {attribute}", s, attribute, None, None) for s in subs]
            continue
        text = [c.dropna().astype(str).str.strip() for c in columns]
        levels = sorted(set().union(*(set(t) for t in text)) - {""})
        if len(levels) < 2:
            continue
        counts = text[-1].value_counts()
        reference = levels[0] if len(levels) == 2 else min(counts.index[counts == counts.max()])
        for level in (v for v in levels if v != reference):
            spec += [(f"{s}: {attribute} {level} − {reference}", s, attribute, level, reference) for s in subs]
    return spec


class _Sample:
    """One sample's per-respondent quantities as columns whose weighted sums give every distance:
    a resample's statistic is computed from ``counts @ columns`` (counts of each respondent).

    `weights` (the people's survey weights) multiply the counts of the blocks the weighted criteria
    read — the subscale scores (level, spread) and the answer indicators (tvd, w1) — as the columns
    pre-multiplied by them; a score block carries one more column, the weight itself, whose weighted
    sum Σ count·w² gives Kish's n_eff. The other blocks stay unweighted."""

    def __init__(self, frame: pd.DataFrame, instrument: Instrument, spec: dict, twin_values: np.ndarray | None,
                 weights: np.ndarray | None = None):
        blocks: list[np.ndarray] = []
        self.at: dict[str, slice] = {}
        w = np.ones(len(frame)) if weights is None else np.asarray(weights, dtype=float)

        def add(name: str, mask: np.ndarray, *values: np.ndarray, weighted: bool = False) -> None:
            cols = [mask] + [np.where(mask > 0, np.nan_to_num(v), 0.0) for v in values]
            start = sum(b.shape[1] for b in blocks)
            blocks.append(np.column_stack(cols) * (w[:, None] if weighted else 1.0))
            self.at[name] = slice(start, start + len(cols))

        scores = score_wide(instrument, frame).reindex(columns=spec["subs"])
        texts: dict[str, np.ndarray] = {}       # a categorical attribute's values as stripped text, once
        keyed = keyed_answers(instrument, frame)
        raw = frame.reindex(columns=spec["items"]).to_numpy(dtype=float)
        for s in spec["subs"]:
            y = scores[s].to_numpy(dtype=float)
            add(f"score {s}", (~np.isnan(y)).astype(float), y, y ** 2, w, weighted=True)
        for s, members in spec["alpha"].items():
            x = keyed[members].to_numpy(dtype=float)
            complete = (~np.isnan(x).any(axis=1)).astype(float)
            total = np.nansum(x, axis=1)
            add(f"alpha {s}", complete, *x.T, *(x ** 2).T, total, total ** 2)
        for s, (forward, reversed_) in spec["style"].items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)        # a side unanswered: NaN, left out
                u = (np.nanmean(raw[:, forward], axis=1) + np.nanmean(raw[:, reversed_], axis=1)) / 2
            add(f"style {s}", (~np.isnan(u)).astype(float), u)
        for name, s, other, level, reference in spec["relations"]:
            a = scores[s].to_numpy(dtype=float)
            if other in spec["subs"]:
                b = scores[other].to_numpy(dtype=float)
            elif level is None:
                b = pd.to_numeric(frame[other], errors="coerce").to_numpy(dtype=float)
            else:
                if other not in texts:
                    texts[other] = np.array([str(v).strip() if pd.notna(v) else "" for v in frame[other]], dtype=object)
                b = np.where(texts[other] == level, 1.0, np.where(texts[other] == reference, 0.0, np.nan))
            mask = (~np.isnan(a) & ~np.isnan(b)).astype(float)
            add(f"relation {name}", mask, a, b, a ** 2, b ** 2, a * b)
        chosen, answered = answer_indicators(frame, spec["items"], spec["options"])
        start = sum(b.shape[1] for b in blocks)
        blocks += [chosen.reshape(len(frame), -1) * w[:, None], answered * w[:, None]]
        self.at["chosen"] = slice(start, start + chosen.shape[1] * chosen.shape[2])
        self.at["answered"] = slice(self.at["chosen"].stop, self.at["chosen"].stop + answered.shape[1])
        if twin_values is not None:
            add("twins", (~np.isnan(twin_values)).astype(float), twin_values)
        self.columns = np.hstack(blocks)
        self.n = len(frame)

    def sums(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """The weighted sums of each block for the observed sample (row 0) and each resample."""
        total = np.vstack([np.ones((1, self.n)), counts]) @ self.columns
        return {name: total[:, part] for name, part in self.at.items()}


def _mean(block: np.ndarray) -> np.ndarray:
    """The mean of the value of a block [mask, mask·value, …] (its weighted sums per row)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return block[:, 1] / block[:, 0]


def _moments(block: np.ndarray, j: int, j2: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean and variance (divisor n − 1) of the value whose sum is column j and sum of squares
    column j2 of a block whose column 0 is the mask."""
    n = block[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = block[:, j] / n
        return mean, (block[:, j2] - n * mean ** 2) / (n - 1)


def _score_moments(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The weighted mean, variance and Kish's n_eff of a score block [Σw, Σwy, Σwy², Σw²], as
    :func:`~psyq.analysis.statistics.human_comparison.weighted_mean_var` and
    :func:`~psyq.analysis.statistics.human_comparison.kish_n_eff` compute them: variance
    Σw(y − m)² / (V₁ − V₂/V₁), n_eff V₁²/V₂ (the mean, the n − 1 variance and n when unweighted)."""
    v1, s1, s2, v2 = block.T
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / v1
        return mean, (s2 - v1 * mean ** 2) / (v1 - v2 / v1), v1 ** 2 / v2


def _alpha(block: np.ndarray, k: int) -> np.ndarray:
    n = block[:, 0]
    item_var = sum(_moments(block, 1 + i, 1 + k + i)[1] for i in range(k))
    total_var = _moments(block, 1 + 2 * k, 2 + 2 * k)[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 1, k / (k - 1) * (1 - item_var / total_var), np.nan)


def _correlation(block: np.ndarray) -> np.ndarray:
    n, sa, sb, saa, sbb, sab = block.T
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sab - sa * sb / n) / np.sqrt((saa - sa ** 2 / n) * (sbb - sb ** 2 / n))


def _distances(c: dict[str, np.ndarray], p: dict[str, np.ndarray], spec: dict) -> dict[str, np.ndarray]:
    """Each criterion's distance from people (observed, then per resample) from the two samples' sums."""
    out: dict[str, np.ndarray] = {}
    level, spread, reliability = [], [], []
    for s in spec["subs"]:
        (m_c, v_c, n_c), (m_h, v_h, n_h) = _score_moments(c[f"score {s}"]), _score_moments(p[f"score {s}"])
        with np.errstate(invalid="ignore", divide="ignore"):
            pooled = np.sqrt(((n_c - 1) * v_c + (n_h - 1) * v_h) / (n_c + n_h - 2))
            level.append(np.abs((m_c - m_h) / pooled * (1 - 3 / (4 * (n_c + n_h) - 9))))
            spread.append(np.abs(0.5 * np.log(v_c / v_h)))
    for s, members in spec["alpha"].items():
        k = len(members)
        reliability.append(np.abs(_alpha(c[f"alpha {s}"], k) - _alpha(p[f"alpha {s}"], k)))
    out.update(level=np.mean(level, axis=0), spread=np.mean(spread, axis=0),
               reliability=np.mean(reliability, axis=0))
    if spec["style"]:
        out["style"] = np.mean([np.abs(_mean(c[f"style {s}"]) - _mean(p[f"style {s}"]))
                                for s in spec["style"]], axis=0)
    if spec["relations"]:
        out["relations"] = np.mean([np.abs(_correlation(c[f"relation {r[0]}"]) - _correlation(p[f"relation {r[0]}"]))
                                    for r in spec["relations"]], axis=0)
    shape = (-1, len(spec["items"]), len(spec["options"]))
    tvd, w1 = distances_from_counts(c["chosen"].reshape(shape), c["answered"], p["chosen"].reshape(shape),
                                    p["answered"], spec["options"])
    out.update(tvd=tvd.mean(axis=1), w1=w1.mean(axis=1))
    if "twins" in c:
        out["individuals"] = 1 - _mean(c["twins"])
    return out


def _auc_draws(held_out: pd.DataFrame, classifier: str, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The held-out AUC (observed, then per resample of the test respondents within each side)."""
    s = held_out.loc[held_out["cohort"] == 1, classifier].to_numpy()
    t = held_out.loc[held_out["cohort"] == 0, classifier].to_numpy()
    above = (s[:, None] > t[None, :]) + 0.5 * (s[:, None] == t[None, :])
    w = np.vstack([np.ones((1, len(s))), resample_counts(len(s), resamples, rng)])
    v = np.vstack([np.ones((1, len(t))), resample_counts(len(t), resamples, rng)])
    return ((w @ above) * v).sum(axis=1) / (w.sum(axis=1) * v.sum(axis=1))


def _twin_values(frame: pd.DataFrame, people: pd.DataFrame, instrument: Instrument) -> np.ndarray | None:
    """Per persona, r with its own person − mean r with the other twins (NaN for a persona who is no
    one's twin); None when fewer than 3 personas are twins."""
    ids = frame.index.astype(str).str.strip()
    match = match_twins(ids, people.index.astype(str).str.strip())
    if len(match.matched) < MIN_TWINS:
        return None
    twins = frame.set_axis(ids).loc[match.matched]
    persons = people.set_axis(people.index.astype(str).str.strip()).loc[match.matched]
    agreement = twin_agreement(twins, persons, instrument).pivot(index="respondent_id", columns="comparison",
                                                                  values="r")
    gain = agreement["twin"] - agreement["other_twins"]
    return gain.reindex(ids).to_numpy(dtype=float)


def _spec(instrument: Instrument, frames: list[pd.DataFrame], people: pd.DataFrame,
          attributes: Sequence[str] | None) -> dict:
    items = [i.id for i in instrument.rating_items]
    subs = [s.id for s in instrument.rating_subscales]
    rating = {i.id for i in instrument.rating_items}
    alpha, style = {}, {}
    for s in subs:
        members = [i for i in instrument.subscale_items(s) if i.id in rating]
        if len(members) > 1:                    # α needs two items
            alpha[s] = [i.id for i in members]
        forward = [items.index(i.id) for i in members if not i.reverse]
        reversed_ = [items.index(i.id) for i in members if i.reverse]
        if forward and reversed_:
            style[s] = (forward, reversed_)
    return {"items": items, "options": [float(o.value) for o in instrument.scale], "subs": subs, "alpha": alpha,
            "style": style, "relations": _relation_spec(frames, people, subs, items, attributes)}


def _measures(spec: dict) -> dict[str, str]:
    k = len(spec["subs"])
    return {"level": f"mean |g| over {k} subscales", "spread": f"mean |ln SD ratio| over {k} subscales",
            "reliability": f"mean |Δα| over {len(spec['alpha'])} subscales",
            "distinguishable": "AUC − .5 (held-out classifier)",
            "style": f"mean |style shift| over {len(spec['style'])} subscales (points per item)",
            "relations": f"mean |Δr| over {len(spec['relations'])} relations",
            "individuals": "1 − (twin r − other twins' r)",
            "tvd": f"mean TVD over {len(spec['items'])} items", "w1": f"mean W1 over {len(spec['items'])} items"}


def compare_conditions(conditions: Mapping[str, pd.DataFrame] | pd.DataFrame, people: pd.DataFrame,
                       instrument: Instrument, *, by: str = "condition", attributes: Sequence[str] | None = None,
                       criteria: Sequence[str] | None = None, resamples: int = RESAMPLES, seed: int = 0,
                       confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Every pair of conditions on every criterion: the difference in their distance from people, its
    bootstrap interval and its Holm-adjusted p (see the module docstring for the distances and the
    method).

    Parameters
    ----------
    conditions : mapping or pandas.DataFrame
        The personas' raw answers per condition: a mapping condition → respondent × item frame
        (index: respondent id), or one frame whose column `by` names each row's condition. Other
        columns are attributes. The model answering as itself (``baseline``) is left out.
    people : pandas.DataFrame
        The people's raw answers to the same instrument, one row per respondent; a
        ``survey_weight`` column weights them in level, spread, tvd and w1 (see the module
        docstring; each weight positive and finite, else ValueError).
    instrument : Instrument
    by : str
        The condition column when `conditions` is one frame.
    attributes : sequence of str, optional
        The attributes for ``relations`` (default: every non-item column that the people and every
        condition have).
    criteria : sequence of str, optional
        The criteria to compare (default: every one of :data:`CRITERIA` that applies).
    resamples, seed, confidence
        Bootstrap resamples (default 1,000), the seed of numpy's generator (the same arguments give
        the same frame) and the level of the intervals and of the Holm decision (default .95).

    Returns
    -------
    pandas.DataFrame
        One row per criterion × pair of conditions (in the order given): ``instrument, criterion,
        measure`` (what the distance is), ``condition_a, condition_b, n_a, n_b`` (respondents),
        ``paired`` (the same respondents answered both), ``distance_a, distance_b`` (each from
        people; smaller is closer), ``difference`` (a − b), ``low, high`` (its interval), ``p``,
        ``p_holm`` (Holm over every row), ``distinguishable`` (p_holm < 1 − confidence),
        ``closer`` (the condition distinguishably closer, else ""), ``note``.
        ``attrs["distances"]``: one row per condition × criterion, ``instrument, criterion, measure,
        condition, n, distance, low, high, note`` (percentile intervals of the distance itself).

    Example
    -------
    See the module docstring.
    """
    parts = condition_frames(conditions, by)
    labels = [label for label, _ in parts]
    if len(set(labels)) < len(labels):
        raise ValueError("condition labels must be unique")
    unknown = [c for c in (criteria or ()) if c not in CRITERIA]
    if unknown:
        raise ValueError(f"unknown criteria {unknown}: choose among {', '.join(CRITERIA)}")
    wanted = list(criteria) if criteria is not None else list(CRITERIA)
    # Paired: conditions answered by the same respondents (the same id set) are resampled together,
    # their rows put in one order.
    given = dict(parts)
    frames = {label: frame.iloc[np.argsort(frame.index.astype(str), kind="stable")] for label, frame in parts}
    spec = _spec(instrument, list(frames.values()), people, attributes)
    twin_values = {label: _twin_values(frame, people, instrument) if "individuals" in wanted else None
                   for label, frame in frames.items()}
    if all(v is None for v in twin_values.values()):
        wanted = [c for c in wanted if c != "individuals"]
    wanted = [c for c in wanted if (c != "style" or spec["style"]) and (c != "relations" or spec["relations"])]
    weights = _people_weights(people)
    unweighted = {c: f"people's survey weights not used: {why}" for c, why in UNWEIGHTED.items()} if (
        weights is not None) else {}
    rng = np.random.default_rng(seed)
    people_counts = resample_counts(len(people), resamples, rng)
    people_sums = _Sample(people, instrument, spec, None, weights).sums(people_counts)
    shared_counts: dict[frozenset, np.ndarray] = {}
    draws: dict[str, dict[str, np.ndarray]] = {}
    notes: dict[str, dict[str, str]] = {}
    for label, frame in frames.items():
        key = frozenset(frame.index.astype(str))
        if key not in shared_counts:
            shared_counts[key] = resample_counts(len(frame), resamples, rng)
        sample = _Sample(frame, instrument, spec, twin_values[label])
        draws[label] = _distances(sample.sums(shared_counts[key]), people_sums, spec)
        notes[label] = {}
        if "individuals" in wanted and twin_values[label] is None:
            draws[label]["individuals"] = np.full(resamples + 1, np.nan)
            notes[label]["individuals"] = f"fewer than {MIN_TWINS} of its personas are twins of the people"
        if "distinguishable" in wanted:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                auc = distinguishability(given[label], people, instrument, permutations=1, seed=seed)
            held_out = auc.attrs["held_out"][0]
            if held_out is None:
                draws[label]["distinguishable"] = np.full(resamples + 1, np.nan)
                notes[label]["distinguishable"] = str(auc["note"].iloc[0])
            else:
                draws[label]["distinguishable"] = _auc_draws(held_out, auc["classifier"].iloc[0], resamples, rng) - 0.5
    measures = _measures(spec)
    return _pairs(instrument.id, wanted, frames, draws, notes, measures, confidence, unweighted)


def _people_weights(people: pd.DataFrame) -> np.ndarray | None:
    """The people's survey weights (their ``survey_weight`` column), None without one; each must be
    a positive finite number (as :func:`~psyq.compare_samples` requires)."""
    if WEIGHT_COLUMN not in people.columns:
        return None
    weights = pd.to_numeric(people[WEIGHT_COLUMN], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(weights) & (weights > 0))
    if bad.any():
        raise ValueError(f"people's weights: every person needs a positive finite weight ({int(bad.sum())} missing "
                         "or not positive)")
    return weights


def _pairs(instrument: str, wanted: list[str], frames: dict[str, pd.DataFrame], draws: dict, notes: dict,
           measures: dict[str, str], confidence: float, unweighted: dict[str, str]) -> pd.DataFrame:
    """The pairwise rows (with Holm over all of them) and the per-condition distances; `unweighted`:
    the note of each criterion that left the people's weights out."""
    z = z_quantile(confidence)
    rows, own = [], []
    for criterion in wanted:
        for label, frame in frames.items():
            d = draws[label][criterion]
            finite = d[1:][np.isfinite(d[1:])]
            low, high = np.quantile(finite, [(1 - confidence) / 2, (1 + confidence) / 2]) if len(finite) else (
                np.nan, np.nan)
            own.append({"instrument": instrument, "criterion": criterion, "measure": measures[criterion],
                        "condition": label, "n": len(frame), "distance": d[0], "low": low if np.isfinite(d[0]) else
                        np.nan, "high": high if np.isfinite(d[0]) else np.nan,
                        "note": "; ".join(n for n in (unweighted.get(criterion), notes[label].get(
                            criterion, "" if np.isfinite(d[0]) else "not estimable")) if n)})
        for a, b in combinations(frames, 2):
            da, db = draws[a][criterion], draws[b][criterion]
            paired = set(frames[a].index.astype(str)) == set(frames[b].index.astype(str))
            said = [*([unweighted[criterion]] if criterion in unweighted else []),
                    *(f"{x}: {notes[x][criterion]}" for x in (a, b) if criterion in notes[x])]
            row = {"instrument": instrument, "criterion": criterion, "measure": measures[criterion],
                   "condition_a": a, "condition_b": b, "n_a": len(frames[a]), "n_b": len(frames[b]),
                   "paired": paired, "distance_a": da[0], "distance_b": db[0], "difference": da[0] - db[0],
                   "low": np.nan, "high": np.nan, "p": np.nan}
            if not (np.isfinite(da[0]) and np.isfinite(db[0])):
                said.append("not estimable for " + " and ".join(x for x, d in ((a, da), (b, db)) if not np.isfinite(d[0])))
            else:
                with np.errstate(invalid="ignore"):    # inf − inf in a resample: left out, and said below
                    diff = da[1:] - db[1:]
                diff = diff[np.isfinite(diff)]
                if len(diff) < len(da) - 1:
                    said.append(f"{len(da) - 1 - len(diff)} resample(s) not estimable, left out")
                se = float(np.std(diff, ddof=1)) if len(diff) > 1 else np.nan
                delta = row["difference"]
                if se > 0:
                    row.update(low=delta - z * se, high=delta + z * se, p=2 * stats.norm.sf(abs(delta) / se))
                elif se == 0:
                    row.update(low=delta, high=delta, p=1.0 if delta == 0 else 0.0)
            big, small = max(len(frames[a]), len(frames[b])), min(len(frames[a]), len(frames[b]))
            if criterion != "distinguishable" and small and big / small > SIZE_RATIO:
                said.append(f"sizes {len(frames[a])} and {len(frames[b])}: a distance grows with sampling noise, "
                            "which favours the larger")
            row["note"] = "; ".join(said)
            rows.append(row)
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["p_holm"] = holm(out["p"].to_numpy(dtype=float)) if len(out) else []
    out["distinguishable"] = (out["p_holm"] < 1 - confidence).astype(bool)
    out["closer"] = np.where(out["distinguishable"], np.where(out["difference"] < 0, out["condition_a"],
                                                              out["condition_b"]), "")
    out.attrs["distances"] = pd.DataFrame(own, columns=DISTANCE_COLUMNS)
    return out


def rank_conditions(comparison: pd.DataFrame) -> pd.DataFrame:
    """The conditions of a :func:`compare_conditions` frame ordered by distance from people, per
    criterion; a condition's rank is 1 + the number of conditions distinguishably closer than it, so
    conditions whose pairwise differences are not distinguishable from 0 (Holm-adjusted) share a
    rank.

    Returns
    -------
    pandas.DataFrame
        ``instrument, criterion, condition, distance, rank, ahead_of_next, note``, by criterion and
        distance (closest first); ``ahead_of_next``: distinguishably closer than the next condition
        in the order (False for the last); a condition without a distance has no rank (NaN) and
        comes last, with the note "not estimable".

    Example
    -------
    >>> comparison = pd.DataFrame({"instrument": "iri", "criterion": "tvd", "condition_a": ["a", "a", "b"],
    ...     "condition_b": ["b", "c", "c"], "distance_a": [0.10, 0.10, 0.12], "distance_b": [0.12, 0.30, 0.30],
    ...     "distinguishable": [False, True, True], "closer": ["", "a", "b"]})
    >>> rank_conditions(comparison)[["condition", "rank", "ahead_of_next"]]
      condition  rank  ahead_of_next
    0         a     1          False
    1         b     1           True
    2         c     3          False
    """
    rows = []
    for (instrument, criterion), part in comparison.groupby(["instrument", "criterion"], sort=False):
        distance: dict[str, float] = {}
        for side in ("a", "b"):
            for label, value in zip(part[f"condition_{side}"], part[f"distance_{side}"]):
                distance.setdefault(label, float(value))
        ahead = {(r.condition_a, r.condition_b): r.closer for r in part.itertuples() if r.distinguishable}
        closer_than = lambda x, y: ahead.get((x, y), ahead.get((y, x))) == x      # noqa: E731
        order = sorted(distance, key=lambda c: (math.isnan(distance[c]), distance[c]))
        for k, label in enumerate(order):
            estimable = not math.isnan(distance[label])
            rank = 1 + sum(closer_than(other, label) for other in order if other != label) if estimable else np.nan
            following = order[k + 1] if k + 1 < len(order) else None
            rows.append({"instrument": instrument, "criterion": criterion, "condition": label,
                         "distance": distance[label], "rank": rank,
                         "ahead_of_next": bool(following is not None and estimable and closer_than(label, following)),
                         "note": "" if estimable else "not estimable"})
    out = pd.DataFrame(rows, columns=RANK_COLUMNS)
    if out["rank"].notna().all():
        out["rank"] = out["rank"].astype(int)
    return out


__all__ = ["CRITERIA", "compare_conditions", "rank_conditions"]
