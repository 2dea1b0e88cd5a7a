"""Digital twins: each persona against the one person it was made from.

A cohort of *twins* has one persona per respondent of a human data file, the persona's id being
that respondent's ``respondent_id``. Whether a persona is anyone's twin is decided by that id
alone (:func:`match_twins`). For every matched person, :func:`twin_agreement` compares the
twin's answers with the person's, item by item, and sets beside it what agreement one would get
without a twin:

* ``twin``: the person's own twin;
* ``other_twins``: the twins of all *other* matched persons — for each person the mean agreement
  of that person with every other twin (its own twin left out). This is the expected value of a
  random derangement (a random other twin per person) without its sampling noise and without a
  seed: every other twin counts once. If twins carried nothing of their own person, ``twin`` and
  ``other_twins`` would agree on average;
* ``cohort_mean``: per item the mean answer of all matched twins (its own twin included, as one of
  n), the guess one would make knowing the cohort but not the person; for exact and within-one
  agreement it is rounded to the nearest scale point (halves upwards), for r and subscale scores it
  is used unrounded;
* ``retest``: with a second administration of the same people (``retest_items``), the person's
  agreement with themselves: the ceiling a twin can be expected to reach;
* ``normalised``: twin ÷ retest per person (Park et al., 2024, "normalized accuracy": agents
  replicated people's General Social Survey answers "85 % as accurately as participants replicate
  their own answers two weeks later").

Answers are compared **keyed** (reverse items reversed), so r runs in the direction of the
subscales; exact and within-one agreement are the same raw or keyed. Per person and comparison:

* ``exact``: share of the items both answered with the same answer;
* ``within_one``: share with answers at most one scale point apart;
* ``r``: Pearson r across those items (not estimable, with the reason in ``note``, when either side
  is constant or fewer than 3 items were answered by both);
* ``abs_error_<subscale>``: |twin's subscale score − person's| (the instrument's own scoring,
  proration and ``min_answered`` included).

:func:`twin_summary` averages each metric over persons with a 95 % CI (percentile bootstrap over persons,
2,000 resamples, seeded: reproducible, and within the metric's range, unlike a t interval on a
handful of persons), and the paired
difference ``twin_minus_others`` (own twin − other twins, per person): the twin-specific signal.

Checked in tests/test_twins.py: agreement, baselines and the normalised accuracy on hand-made
answers worked out by hand in the comments, and the other-twins baseline on simulated twins (person
+ noise) against twins made independently of their person.

Example
-------
Three persons, three items on a 1–5 scale; the twins answer like their persons, except t2's second
answer; the rounded cohort mean answers 3, 4, 3:

>>> from psyq.engine.design.instrument import Instrument
>>> inst = Instrument.model_validate({"psyq": "instrument/1", "id": "toy", "name": "Toy", "version": 1,
...     "content_source": "psyq", "citations": {"psyq": "psyq authors."}, "terms": "Test.",
...     "instructions": "Rate.", "scale": [{"value": v} for v in range(1, 6)],
...     "items": [{"id": i, "text": f"Item {i}", "subscales": ["S"]} for i in "xyz"],
...     "subscales": [{"id": "S", "name": "Sum", "score": "sum"}]})
>>> people = pd.DataFrame({"x": [1, 3, 5], "y": [2, 3, 4], "z": [1, 4, 5]},
...                       index=pd.Index(["t1", "t2", "t3"], name="respondent_id"))
>>> twins = people.assign(y=[2, 5, 4])
>>> per_person = twin_agreement(twins, people, inst)
>>> per_person.pivot(index="respondent_id", columns="comparison", values="exact").round(2)
comparison     cohort_mean  other_twins  twin
respondent_id
t1                    0.00          0.0  1.00
t2                    0.33          0.0  0.67
t3                    0.33          0.0  1.00
>>> summary = twin_summary(per_person)
>>> summary.query("metric == 'exact'")[["comparison", "mean", "n"]].round(3)
          comparison   mean  n
0               twin  0.889  3
1        other_twins  0.000  3
2        cohort_mean  0.222  3
3  twin_minus_others  0.889  3

References
----------
Park, J. S., Zou, C. Q., Shaw, A., Hill, B. M., Cai, C., Morris, M. R., Willer, R.,
Liang, P., & Bernstein, M. S. (2024). Generative agent simulations of 1,000 people.
arXiv:2411.10109.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Collection, Iterable

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import keyed_answers, reverse_key, score_wide

TWIN, OTHERS, COHORT_MEAN, RETEST, NORMALISED = "twin", "other_twins", "cohort_mean", "retest", "normalised"
DIFFERENCE = "twin_minus_others"
COMPARISONS = (TWIN, OTHERS, COHORT_MEAN, RETEST, NORMALISED)
AGREEMENT = ("exact", "within_one", "r")
"""Metrics where higher is closer (the ones normalised by the retest)."""
MIN_R_ITEMS = 3
ERROR_PREFIX = "abs_error_"


@dataclass
class TwinMatch:
    """Which personas are twins of which persons: ids in both, and how many on each side are not."""

    matched: list[str]
    personas_only: list[str] = field(default_factory=list)
    persons_only: list[str] = field(default_factory=list)

def match_twins(persona_ids: Iterable, respondent_ids: Iterable) -> TwinMatch:
    """Personas whose id is a respondent id of the human data (compared as text, stripped).

    Example
    -------
    >>> match_twins(["p1", "r2 "], ["r1", "r2"]).matched
    ['r2']
    """
    personas = list(dict.fromkeys(str(i).strip() for i in persona_ids))
    persons = list(dict.fromkeys(str(i).strip() for i in respondent_ids))
    known = set(persons)
    matched = [i for i in personas if i in known]
    twins = set(matched)
    return TwinMatch(matched, [i for i in personas if i not in twins], [i for i in persons if i not in twins])


def _by_id(frame: pd.DataFrame, ids: list[str], items: list[str]) -> np.ndarray:
    """Rows of `frame` for `ids` (its index read as stripped text), the item columns as floats."""
    table = frame.reindex(columns=items).set_axis(frame.index.astype(str).str.strip())
    return table.reindex(ids).to_numpy(dtype=float)


def _pair_metrics(x: np.ndarray, others: np.ndarray, point: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Agreement of one person's keyed answers `x` (items) with each row of `others` (rows × items),
    over the items both answered: n_items, exact, within_one, r, and a note code for r.

    `point` (same shape as `others`), when given, is what exact and within-one compare with instead
    of `others` (the rounded cohort mean); r always uses `others`.
    """
    others = np.atleast_2d(others)
    point = others if point is None else np.atleast_2d(point)
    both = ~np.isnan(x)[None, :] & ~np.isnan(others)
    n = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(np.where(both, point - x[None, :], np.nan))
        exact = np.where(n > 0, np.nansum(diff == 0, axis=1) / n, np.nan)
        within = np.where(n > 0, np.nansum(diff <= 1, axis=1) / n, np.nan)
        xs = np.where(both, x[None, :], 0.0)
        ys = np.where(both, others, 0.0)
        mx = xs.sum(axis=1) / n
        my = ys.sum(axis=1) / n
        dx = np.where(both, xs - mx[:, None], 0.0)
        dy = np.where(both, ys - my[:, None], 0.0)
        vx, vy = (dx ** 2).sum(axis=1), (dy ** 2).sum(axis=1)
        r = (dx * dy).sum(axis=1) / np.sqrt(vx * vy)
    tiny = 1e-12
    note = np.where(n < MIN_R_ITEMS, "few", np.where(vx <= tiny, "person", np.where(vy <= tiny, "other", "")))
    r = np.where(note == "", np.clip(r, -1, 1), np.nan)
    return {"n_items": n, "exact": exact, "within_one": within, "r": r, "r_note": note}


R_NOTES = {"few": f"r not estimable: fewer than {MIN_R_ITEMS} items answered by both",
           "person": "r not estimable: the person's answers are constant",
           "other": "r not estimable: the {side}'s answers are constant"}
SIDE = {TWIN: "twin", OTHERS: "other twins", COHORT_MEAN: "cohort mean", RETEST: "retest"}


def _round_to_scale(keyed_mean: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Each value moved to the nearest scale level; a value halfway between two goes to the higher."""
    distance = np.abs(keyed_mean[..., None] - levels[None, :])
    best = np.where(np.isclose(distance, distance.min(axis=-1, keepdims=True)), levels[None, :], -np.inf).max(axis=-1)
    return np.where(np.isnan(keyed_mean), np.nan, best)


def twin_agreement(cohort_items: pd.DataFrame, human_items: pd.DataFrame, instrument: Instrument,
                   retest_items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per matched person and comparison, the agreement of the person's answers with the twin's and
    with the baselines (see the module's docstring): a tidy frame with the columns ``instrument``,
    ``respondent_id``, ``comparison``, ``n_items``, ``exact``, ``within_one``, ``r``,
    ``abs_error_<subscale>`` per rating subscale, and ``note`` (why a value is missing).

    `cohort_items` and `human_items` hold *raw* answers (as given; reverse items not reversed),
    indexed by persona id and respondent id, one column per item id (other columns are ignored).
    `retest_items`, when given, holds the same people's second administration (indexed by the same
    respondent ids): the comparisons ``retest`` (person against themselves) and ``normalised``
    (twin ÷ retest per person; missing, with the reason, when the retest agreement is 0, or r ≤ 0,
    or the person has no retest) are added. The frame's ``attrs`` hold the :class:`TwinMatch`
    (``match``) and the number of matched persons with a retest (``retest_n``).

    Example
    -------
    Two people and their twins; r2's twin answers item d one point higher:

    >>> from psyq import load_instrument
    >>> mini = load_instrument("tests/data/mini_1to7.yaml")
    >>> people = pd.DataFrame({"a": [1, 7], "b": [2, 6], "c": [3, 5], "d": [4, 4]}, index=["r1", "r2"])
    >>> agreement = twin_agreement(people.assign(d=[4, 5]), people, mini)
    >>> agreement.query("comparison == 'twin'")[["respondent_id", "n_items", "exact", "within_one"]]
      respondent_id  n_items  exact  within_one
    0            r1        4   1.00         1.0
    3            r2        4   0.75         1.0
    """
    items = [i.id for i in instrument.rating_items]
    subscales = [s.id for s in instrument.rating_subscales]
    match = match_twins(cohort_items.index, human_items.index)
    ids = match.matched
    columns = ["instrument", "respondent_id", "comparison", "n_items", *AGREEMENT,
               *(ERROR_PREFIX + s for s in subscales), "note"]
    if not ids:
        out = pd.DataFrame(columns=columns)
        out.attrs.update(match=match, retest_n=0)
        return out
    raw_twins, raw_people = _by_id(cohort_items, ids, items), _by_id(human_items, ids, items)
    frame = lambda raw: pd.DataFrame(raw, index=ids, columns=items)   # noqa: E731
    key = lambda raw: keyed_answers(instrument, frame(raw)).to_numpy(dtype=float)   # noqa: E731
    twins, people = key(raw_twins), key(raw_people)
    score = lambda raw: score_wide(instrument, frame(raw)).to_numpy(dtype=float)   # noqa: E731
    twin_scores, person_scores = score(raw_twins), score(raw_people)
    levels = np.array(sorted({keyed for o in instrument.scale for keyed in
                              (float(o.value), float(reverse_key(o.value, instrument.scale_min, instrument.scale_max)))}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)            # an item no twin answered: NaN
        mean_keyed = np.nanmean(twins, axis=0)                      # per item, over all matched twins
        mean_raw = np.nanmean(raw_twins, axis=0)
    mean_rounded = _round_to_scale(mean_keyed, levels)
    mean_scores = score(np.broadcast_to(mean_raw, raw_twins.shape).copy())[0]

    retest_people = retest_scores = None
    if retest_items is not None:
        raw_retest = _by_id(retest_items, ids, items)
        retest_people, retest_scores = key(raw_retest), score(raw_retest)
        has_retest = ~np.all(np.isnan(raw_retest), axis=1)
    rows = []
    for i, rid in enumerate(ids):
        x = people[i]
        found: dict[str, dict] = {}
        m = _pair_metrics(x, twins[i])
        found[TWIN] = _row(m, 0, np.abs(twin_scores[i] - person_scores[i]), TWIN)
        if len(ids) > 1:
            rest = np.delete(np.arange(len(ids)), i)                 # every twin but the person's own
            m = _pair_metrics(x, twins[rest])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)    # all-missing columns give NaN
                errors = np.nanmean(np.abs(twin_scores[rest] - person_scores[i]), axis=0)
                averaged = {k: np.nanmean(m[k]) for k in AGREEMENT}
            notes = sorted({R_NOTES[c].format(side=SIDE[OTHERS]) for c in m["r_note"] if c})
            found[OTHERS] = {"n_items": int(np.round(np.mean(m["n_items"]))), **averaged,
                             "errors": errors,
                             "note": ("; ".join(notes) + f" for {int((m['r_note'] != '').sum())} of {len(rest)} "
                                      "other twins") if notes else ""}
        else:
            found[OTHERS] = {"n_items": 0, **{k: np.nan for k in AGREEMENT}, "errors": np.full(len(subscales), np.nan),
                             "note": "not estimable: no other matched person"}
        m = _pair_metrics(x, mean_keyed, mean_rounded)
        found[COHORT_MEAN] = _row(m, 0, np.abs(mean_scores - person_scores[i]), COHORT_MEAN)
        if retest_people is not None:
            if has_retest[i]:
                m = _pair_metrics(x, retest_people[i])
                found[RETEST] = _row(m, 0, np.abs(retest_scores[i] - person_scores[i]), RETEST)
            else:
                found[RETEST] = {"n_items": 0, **{k: np.nan for k in AGREEMENT},
                                 "errors": np.full(len(subscales), np.nan),
                                 "note": "no retest answers for this person"}
            found[NORMALISED] = _normalised(found[TWIN], found[RETEST], len(subscales))
        for comparison, values in found.items():
            rows.append({"instrument": instrument.id, "respondent_id": rid, "comparison": comparison,
                         "n_items": int(values["n_items"]), **{k: float(values[k]) for k in AGREEMENT},
                         **{ERROR_PREFIX + s: float(e) for s, e in zip(subscales, values["errors"])},
                         "note": values["note"]})
    out = pd.DataFrame(rows, columns=columns)
    out.attrs.update(match=match, retest_n=int(has_retest.sum()) if retest_people is not None else 0)
    return out


def _row(m: dict[str, np.ndarray], k: int, errors: np.ndarray, comparison: str) -> dict:
    code = str(m["r_note"][k])
    return {"n_items": m["n_items"][k], **{name: m[name][k] for name in AGREEMENT}, "errors": errors,
            "note": R_NOTES[code].format(side=SIDE[comparison]) if code else ""}


def _normalised(twin: dict, retest: dict, n_subscales: int) -> dict:
    """Twin ÷ retest for each agreement metric; missing, with the reason, where it cannot be divided."""
    values, notes = {}, []
    for metric in AGREEMENT:
        t, r = twin[metric], retest[metric]
        if np.isnan(r):
            values[metric] = np.nan
            notes.append(f"{metric}: no retest value to divide by")
        elif r <= 0:
            values[metric] = np.nan
            notes.append(f"{metric}: the retest agreement is {r:.3g} (division by "
                         f"{'zero' if r == 0 else 'a negative r'})")
        else:
            values[metric] = t / r
    seen = list(dict.fromkeys(notes))
    return {"n_items": twin["n_items"], **values, "errors": np.full(n_subscales, np.nan), "note": "; ".join(seen)}


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20241115
"""The percentile bootstrap over persons: resamples and the seed (fixed, so a report is reproducible)."""


def bootstrap_interval(values: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES,
                       seed: int = BOOTSTRAP_SEED, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and percentile-bootstrap CI at `confidence` (default 95 %) over persons (persons resampled with replacement,
    `resamples` times, from a seeded generator); the CI is missing below 2 persons. Unlike a t-based
    interval it stays within the values' range (a share within 0–1, r within ±1).

    Example
    -------
    >>> [round(x, 3) for x in bootstrap_interval(np.array([0.5, 0.75, 1.0, 1.0]))]
    [0.812, 0.625, 1.0]
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(np.mean(values)) if n else np.nan
    if n < 2:
        return mean, np.nan, np.nan
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    step = max(1, 4_000_000 // n)                     # resamples drawn in blocks of at most ~4M indices
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        means[start:start + size] = values[rng.integers(0, n, size=(size, n))].mean(axis=1)
    tail = 50 * (1 - confidence)
    low, high = np.percentile(means, [tail, 100 - tail])
    return mean, float(low), float(high)


def twin_summary(agreement: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Each metric × comparison averaged over persons: ``mean``, ``ci_low``, ``ci_high`` (percentile
    bootstrap CI at `confidence`, default 95 %, over persons, :func:`bootstrap_interval`), ``n`` (persons with a value), ``not_estimable`` (persons without one) and
    ``note`` (why; "not estimable: …" when fewer than 2 persons have a value, and then ``mean``
    is missing too). The comparison ``twin_minus_others`` is the per-person difference own twin −
    other twins (paired), the twin-specific signal; for an absolute error a negative difference
    means the own twin is closer. `agreement` is what :func:`twin_agreement` returns.

    Example
    -------
    >>> per_person = pd.DataFrame({"instrument": "toy", "respondent_id": ["a", "a", "b", "b"],
    ...     "comparison": ["twin", "other_twins"] * 2, "n_items": 4, "exact": [1.0, .5, .75, .25],
    ...     "within_one": 1.0, "r": float("nan"), "note": ""})
    >>> twin_summary(per_person).query("metric == 'exact'")[["comparison", "mean", "ci_low", "n"]].round(3)
              comparison   mean  ci_low  n
    0               twin  0.875    0.75  2
    1        other_twins  0.375    0.25  2
    2  twin_minus_others  0.500    0.50  2
    """
    columns = ["instrument", "metric", "comparison", "mean", "ci_low", "ci_high", "n", "not_estimable", "note"]
    if agreement.empty:
        return pd.DataFrame(columns=columns)
    metrics = [*AGREEMENT, *(c for c in agreement.columns if str(c).startswith(ERROR_PREFIX))]
    present = [c for c in COMPARISONS if c in set(agreement["comparison"])]
    order = present[:2] + [c for c in present[2:] if c != NORMALISED]
    if TWIN in present and OTHERS in present:
        order.insert(order.index(OTHERS) + (2 if COHORT_MEAN in present else 1), DIFFERENCE)
    if NORMALISED in present:
        order.append(NORMALISED)
    rows = []
    for inst, block in agreement.groupby("instrument", sort=False):
        wide = {c: block[block["comparison"] == c].set_index("respondent_id") for c in present}
        for metric in metrics:
            for comparison in order:
                if comparison == NORMALISED and metric not in AGREEMENT:
                    continue
                if comparison == DIFFERENCE:
                    both = wide[TWIN][metric] - wide[OTHERS][metric].reindex(wide[TWIN].index)
                    notes = wide[TWIN]["note"]
                else:
                    both, notes = wide[comparison][metric], wide[comparison]["note"]
                values = both.dropna().to_numpy(dtype=float)
                missing = both.isna()
                reasons = sorted({n for n in notes[missing].astype(str) if n})
                note = "; ".join(_for_metric(reasons, metric))
                if len(values) < 2:
                    note = f"not estimable: {len(values)} person(s) with a value, fewer than 2" + (
                        f" ({note})" if note else "")
                    mean = low = high = np.nan
                else:
                    mean, low, high = bootstrap_interval(values, confidence=confidence)
                rows.append({"instrument": inst, "metric": metric, "comparison": comparison, "mean": mean,
                             "ci_low": low, "ci_high": high, "n": len(values), "not_estimable": int(missing.sum()),
                             "note": note})
    return pd.DataFrame(rows, columns=columns)


def _for_metric(reasons: Collection[str], metric: str) -> list[str]:
    """The parts of the notes that concern `metric` (r notes for r, a normalisation's own part for it)."""
    out = []
    for reason in reasons:
        for part in reason.split("; "):
            if metric == "r" and part.startswith("r not estimable"):
                out.append(part)
            elif part.startswith(f"{metric}:") or (part.startswith("not estimable") or part.startswith("no retest")):
                out.append(part.removeprefix(f"{metric}: "))
    return list(dict.fromkeys(out))
