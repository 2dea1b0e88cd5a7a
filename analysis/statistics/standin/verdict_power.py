"""How many personas (and people) does a verdict need? The chance of each mark, simulated on cohorts
whose answer is known.

A cohort that truly stands in for people is one drawn from the people themselves. Resampling a
human data set — n of its respondents as the "personas", the rest (or `n_people` of them) as the
people — and marking each draw with :func:`~psyq.analysis.statistics.standin.scorecard.scorecard` gives, per
criterion and cohort size, the chance that such a cohort is marked ``meets`` (the power of the
equivalence test), ``falls short`` (the verdict's error: people told they cannot stand in for
people), ``inconclusive`` or ``not estimable``. :func:`verdict_power` does that;
:func:`personas_needed` reads from it the smallest cohort marked ``meets`` with a given chance.

:func:`simulate_verdicts` is the same machine with a `breaks` function applied to each drawn cohort
before it is marked: a cohort broken in one known way (a response style, random answers, a collapsed
spread …) whose criterion must then fall short. bench/verdict_calibration.py runs it on the shipped
people and publishes the shares in docs/reading-report.md ("How often is the verdict wrong?").

Every draw is the full scorecard, not an approximation of it, so what the report would say is what
is counted. Structure is left out by default (a factor model fitted per draw; ``structure=True``
fits it). Draws are spread over processes (`workers`, default: every core).

Checked in tests/test_verdict_power.py: the shares against the same seeded draws made and marked by
hand there (psyq.scorecard called directly, the marks combined and counted with pandas: an
independent count of the same numbers), the same frame from one process and from two, a cohort
broken by a response style marked falls short on style in every draw, and personas_needed on a
hand-made table. How often each mark is wrong, real people and broken cohorts at 13 to 1,000:
bench/verdict_calibration.py, published in docs/reading-report.md.

Example
-------
>>> import warnings; warnings.simplefilter("ignore")        # the shipped file's codebook notice
>>> from psyq import human_data, load_instrument
>>> iri = load_instrument("iri")
>>> people = human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri)
>>> power = verdict_power(people, iri, n_personas=[13, 300], reps=4, workers=1)
>>> power.query("criterion == 'level'")[["n_personas", "reps"]].to_numpy().tolist()
[[13, 4], [300, 4]]
>>> float(power.query("criterion == 'level' and n_personas == 13")["falls_short"].iloc[0])
0.0
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from psyq.engine.design.instrument import Instrument

from psyq.analysis.statistics.standin.equivalence import MARKS, MEETS
from psyq.analysis.statistics.standin.scorecard import CRITERIA, criterion_marks, scorecard

DEFAULT_GRID = (13, 50, 200, 500, 1000)
"""The cohort sizes :func:`verdict_power` simulates by default: the quick start's 13, then up to 1,000."""
TARGET = 0.80
"""The chance of ``meets`` a cohort size must reach to count as enough (power .80, Cohen 1988)."""
NOT_SIMULATED = ("structure", "latent_mean")
"""The criteria left out unless ``structure=True`` (a factor model fitted per draw)."""
COLUMNS = ["criterion", "n_personas", "n_people", "reps", "meets", "falls_short", "inconclusive", "not_estimable"]

Breaks = Callable[[pd.DataFrame, np.random.Generator], pd.DataFrame]


def _marks_of_draw(people: pd.DataFrame, instrument: Instrument, n: int, n_people: int | None, rep: int, seed: int,
                   breaks: Breaks | None, bound: float, structure: bool, twins: bool = False) -> list[dict]:
    """One draw: n respondents as the personas (broken by `breaks`), the others as the people — or,
    with `twins`, everyone as the people and the personas their twins (their ids kept); the
    scorecard's mark per criterion."""
    rng = np.random.default_rng([seed, n, rep])
    order = rng.permutation(len(people))
    cohort, rest = people.iloc[order[:n]], people.iloc[order[n:]]
    if n_people is not None:
        rest = rest.iloc[:n_people]
    if twins:
        rest = people
    if breaks is not None:
        cohort = breaks(cohort.copy(), rng)
    if not twins:      # the personas are other respondents, not twins of the people: ids that say so
        cohort = cohort.set_axis([f"persona{k}" for k in range(len(cohort))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        card = scorecard(cohort, rest, instrument, by=None, bound=bound, structure=structure, permutations=19,
                         seed=rep)
    marks = criterion_marks(card)
    return [{"criterion": r.criterion, "n_personas": n, "n_people": len(rest), "rep": rep, "mark": r.mark}
            for r in marks.itertuples()]


_SHARED: dict = {}


def _start_worker(people: pd.DataFrame, instrument: Instrument, breaks: Breaks | None, bound: float,
                  structure: bool, twins: bool = False) -> None:
    _SHARED.update(people=people, instrument=instrument, breaks=breaks, bound=bound, structure=structure, twins=twins)


def _run_tasks(tasks: list[tuple[int, int | None, int, int]]) -> list[dict]:
    out = []
    with threadpool_limits(1):                  # one thread per process: the processes share the cores
        for n, n_people, rep, seed in tasks:
            out.extend(_marks_of_draw(_SHARED["people"], _SHARED["instrument"], n, n_people, rep, seed,
                                      _SHARED["breaks"], _SHARED["bound"], _SHARED["structure"], _SHARED["twins"]))
    return out


def simulate_verdicts(people: pd.DataFrame, instrument: Instrument, n_personas: Sequence[int], *,
                      breaks: Breaks | None = None, n_people: int | None = None, reps: int = 100, seed: int = 0,
                      bound: float = 0.3, structure: bool = False, workers: int | None = None,
                      twins: bool = False) -> pd.DataFrame:
    """Each criterion's marks over `reps` draws per cohort size: `n` respondents of `people` as the
    personas (passed through `breaks` when given), the rest — or `n_people` of them — as the people.

    Parameters
    ----------
    people : pandas.DataFrame
        Raw answers of real people (reverse items as answered), one row per respondent, as
        :func:`~psyq.analysis.statistics.standin.scorecard.scorecard` takes them; attribute columns (gender)
        give the relations.
    instrument : Instrument
    n_personas : sequence of int
        Cohort sizes; each must leave at least 2 people.
    breaks : callable, optional
        ``breaks(cohort, rng) -> cohort``: changes the drawn cohort's answers in a known way (it
        must be picklable, a module-level function, when `workers` > 1).
    n_people : int, optional
        The people's sample size (default: everyone not drawn as a persona).
    reps, seed
        Draws per cohort size; the draws are numpy generators seeded by (seed, n, draw): the same
        arguments give the same frame whatever `workers`.
    bound : float
        The scorecard's equivalence bound.
    structure : bool
        Fit the invariance sequence per draw (slow: about a second a draw).
    workers : int, optional
        Processes (default: the machine's cores; 1 runs in this process).
    twins : bool
        The personas are twins of drawn people (their respondent ids kept, `breaks` making them
        from their persons' answers) and the people are everyone: the ``individuals`` criterion.

    Returns
    -------
    pandas.DataFrame
        ``criterion, n_personas, n_people, reps, meets, falls_short, inconclusive, not_estimable``:
        the share of draws given each mark (``n_people`` the people's size, the median over draws).
        ``attrs["draws"]`` holds one row per draw and criterion. Without `structure`, the
        criteria structure and latent_mean have no rows.
    """
    if reps < 1:
        raise ValueError("reps must be at least 1")
    too_big = [n for n in n_personas if n > len(people) - 2 or n < 1]
    if too_big:
        raise ValueError(f"cohort sizes {too_big} leave fewer than 2 of the {len(people)} people to compare with")
    tasks = [(int(n), n_people, rep, seed) for n in n_personas for rep in range(reps)]
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(tasks) == 1:
        _start_worker(people, instrument, breaks, bound, structure, twins)
        rows = _run_tasks(tasks)
    else:
        chunks = [tasks[k::workers * 4] for k in range(workers * 4)]
        with ProcessPoolExecutor(workers, initializer=_start_worker,
                                 initargs=(people, instrument, breaks, bound, structure, twins)) as pool:
            rows = [row for part in pool.map(_run_tasks, [c for c in chunks if c]) for row in part]
    draws = pd.DataFrame(rows, columns=["criterion", "n_personas", "n_people", "rep", "mark"])
    if not structure:               # not fitted: not a finding about the data, so not in the table
        draws = draws[~draws["criterion"].isin(NOT_SIMULATED)]
    out = []
    order = {c: k for k, c in enumerate(CRITERIA)}
    for (criterion, n), part in draws.groupby(["criterion", "n_personas"], sort=False):
        shares = part["mark"].value_counts(normalize=True)
        out.append({"criterion": criterion, "n_personas": int(n), "n_people": int(part["n_people"].median()),
                    "reps": part["rep"].nunique(), **{m.replace(" ", "_"): float(shares.get(m, 0.0)) for m in MARKS}})
    frame = pd.DataFrame(out, columns=COLUMNS)
    frame = frame.assign(_c=frame["criterion"].map(order)).sort_values(["_c", "n_personas"], kind="stable")
    frame = frame.drop(columns="_c").reset_index(drop=True)
    frame.attrs["draws"] = draws
    return frame


def verdict_power(people: pd.DataFrame, instrument: Instrument, n_personas: Sequence[int] = DEFAULT_GRID, *,
                  n_people: int | None = None, reps: int = 100, seed: int = 0, bound: float = 0.3,
                  structure: bool = False, workers: int | None = None) -> pd.DataFrame:
    """For each criterion and cohort size, the chance that a cohort which truly stands in for the
    people (the people themselves, resampled) is marked ``meets`` — the verdict's power — and that it
    is marked ``falls short`` — its error; ``attrs["needed"]`` the smallest size of `n_personas`
    marked ``meets`` in at least 80 % of draws (:func:`personas_needed`).

    The parameters are :func:`simulate_verdicts`'s; `people` stands for the people a study will be
    compared with (their answers to the instrument), so the power is for that reference sample.

    Example
    -------
    See the module docstring.
    """
    power = simulate_verdicts(people, instrument, n_personas, n_people=n_people, reps=reps, seed=seed, bound=bound,
                              structure=structure, workers=workers)
    power.attrs["needed"] = personas_needed(power)
    return power


def personas_needed(power: pd.DataFrame, target: float = TARGET) -> pd.DataFrame:
    """Per criterion, the smallest simulated cohort size whose share of ``meets`` reaches `target`
    (``n_needed``; NaN with a note when none of the sizes simulated does, or the criterion is never
    estimable), and the share of ``falls short`` at it.

    Example
    -------
    >>> power = pd.DataFrame({"criterion": "level", "n_personas": [13, 200, 500], "n_people": 1000, "reps": 100,
    ...     "meets": [0.0, 0.62, 0.97], "falls_short": [0.0, 0.0, 0.01], "inconclusive": [1.0, 0.38, 0.02],
    ...     "not_estimable": 0.0})
    >>> personas_needed(power)[["criterion", "n_needed", "meets", "falls_short"]].to_numpy().tolist()
    [['level', 500.0, 0.97, 0.01]]
    """
    rows = []
    for criterion, part in power.groupby("criterion", sort=False):
        part = part.sort_values("n_personas")
        enough = part[part["meets"] >= target]
        if len(enough):
            first = enough.iloc[0]
            rows.append({"criterion": criterion, "n_needed": float(first["n_personas"]), "meets": first["meets"],
                         "falls_short": first["falls_short"], "note": ""})
        else:
            largest = part.iloc[-1]
            why = ("never estimable on these data" if (part["not_estimable"] == 1).all() else
                   f"more than {int(largest['n_personas']):,}: meets in {largest['meets']:.0%} of draws there")
            rows.append({"criterion": criterion, "n_needed": np.nan, "meets": largest["meets"],
                         "falls_short": largest["falls_short"], "note": why})
    return pd.DataFrame(rows, columns=["criterion", "n_needed", "meets", "falls_short", "note"])


__all__ = ["DEFAULT_GRID", "MEETS", "personas_needed", "simulate_verdicts", "verdict_power"]
