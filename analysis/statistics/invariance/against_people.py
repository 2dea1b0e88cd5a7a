"""Personas against people: the two-sample invariance sequence that the report's section "Is it the
same construct?" and the scorecard both fit, in one place.

* :func:`factor_structure`: the items of each first-order rating subscale, and why they cannot form a
  simple-structure factor model;
* :func:`keyed_samples`: both samples' keyed answers in one frame with the column ``sample``
  (people first: the reference group);
* :func:`default_estimator`: WLSMV (items ordinal) for seven answer categories or fewer, else ML;
* :func:`invariance_against_people`: the sequence, refitted with the items continuous when the ordinal
  fit is not estimable and the user did not choose the estimator (``attrs["fallback"]`` says why).

Checked in tests/test_same_construct.py: the report's numbers equal the analysis functions called
directly on the exported answers (an independent path through the data, not an independent
statistic); people against people must come out invariant, and an ordinal fit the answers do not
allow must be refitted continuous. The statistics themselves are checked against lavaan in
tests/test_invariance_lavaan.py and tests/test_invariance_ordinal.py.

Example
-------
>>> from psyq.engine.design.instrument import load_instrument
>>> iri = load_instrument("iri")
>>> factor_structure(iri)[0]["PT"][:3], default_estimator(iri)
(['3', '8', '11'], 'WLSMV')
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import keyed_answers

from psyq.analysis.statistics.invariance import measurement_invariance

# Likert items with this many answer categories or fewer are analysed as ordinal (Rhemtulla, Brosseau-Liard
# & Savalei, 2012: with fewer than five categories continuous ML misleads; WLSMV serves up to seven).
ORDINAL_CATEGORIES = 7
SAMPLE, PEOPLE, PERSONAS = "sample", "people", "personas"


def factor_structure(instrument: Instrument) -> tuple[dict[str, list[str]], str]:
    """The items of each first-order rating subscale, and why the structure cannot be a simple-structure
    factor model ("" when it can: every item on exactly one subscale, every subscale with 2+ items).

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> factors, problem = factor_structure(load_instrument("iri"))
    >>> list(factors), problem
    (['PT', 'FS', 'EC', 'PD'], '')
    """
    factors = {s.id: [i.id for i in instrument.subscale_items(s.id)] for s in instrument.first_order_subscales}
    counted: dict[str, list[str]] = {}
    for sub, items in factors.items():
        for item in items:
            counted.setdefault(item, []).append(sub)
    shared = sorted(item for item, subs in counted.items() if len(subs) > 1)
    if shared:
        return factors, (f"item(s) {', '.join(shared)} count towards more than one first-order subscale; the factor "
                         "model here lets each item load on one factor only")
    small = sorted(sub for sub, items in factors.items() if len(items) < 2)
    if small:
        return factors, f"subscale(s) {', '.join(small)} have fewer than 2 items"
    return factors, ""


def keyed_samples(instrument: Instrument, cohort: pd.DataFrame, people: pd.DataFrame) -> pd.DataFrame:
    """Keyed answers of both samples in one frame (reverse items reversed; other columns dropped), with
    the categorical column ``sample``: "people" (first, the reference group) and "personas".

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> iri = load_instrument("iri")
    >>> answers = pd.DataFrame({i.id: [0, 4] for i in iri.rating_items})
    >>> both = keyed_samples(iri, answers, answers.iloc[:1])
    >>> both["sample"].tolist(), both["3"].tolist()       # item 3 is reverse-keyed
    (['people', 'personas', 'personas'], [4.0, 4.0, 0.0])
    """
    parts = [keyed_answers(instrument, frame).reset_index(drop=True).assign(**{SAMPLE: label})
             for label, frame in ((PEOPLE, people), (PERSONAS, cohort))]
    data = pd.concat(parts, ignore_index=True)
    return data.assign(**{SAMPLE: pd.Categorical(data[SAMPLE], categories=[PEOPLE, PERSONAS])})


def default_estimator(instrument: Instrument, chosen: str | None = None) -> str:
    """The estimator `chosen` (e.g. ``--estimator``), else WLSMV (items ordinal) for a scale of seven
    answer categories or fewer, else ML (items continuous).

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> default_estimator(load_instrument("iri")), default_estimator(load_instrument("iri"), "MLR")
    ('WLSMV', 'MLR')
    """
    if chosen:
        return chosen
    return "WLSMV" if len(instrument.scale) <= ORDINAL_CATEGORIES else "ML"


def invariance_against_people(instrument: Instrument, cohort: pd.DataFrame, people: pd.DataFrame, *,
                              estimator: str | None = None,
                              factors: Mapping[str, list[str]] | None = None) -> pd.DataFrame:
    """The measurement-invariance sequence of `cohort` (raw answers) against `people` (the reference group:
    the latent means are the personas' difference from them) on the instrument's first-order subscales.

    The estimator is :func:`default_estimator`'s. When it was not chosen and the ordinal fit is not
    estimable (an answer category nobody in one sample chose leaves no threshold there), the sequence is
    refitted with the items continuous (ML), which a scale with few used categories strains:
    ``attrs["fallback"]`` then holds the ordinal fit's problem ("" otherwise). An instrument whose
    subscales are no simple structure (:func:`factor_structure`) gives one configural row, not
    estimable, with the reason, instead of a model that cannot be specified. Checked through
    :func:`measurement_invariance`, whose figures tests/test_invariance*.py pin against lavaan.

    Example
    -------
    Two halves of the IRI data psyq ships, the odd rows as the personas; four Empathic Concern items
    as the one factor, for speed:

    >>> import warnings
    >>> from psyq import human_data, load_instrument
    >>> iri = load_instrument("iri")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")      # the notice that the codebook beside it was used
    ...     people = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
    >>> mi = invariance_against_people(iri, people.iloc[::2], people.iloc[1::2],
    ...                                factors={"EC": ["2", "4", "9", "14"]})
    >>> mi.attrs["estimator"], mi.attrs["fallback"]
    ('WLSMV', '')
    >>> mi[["step", "estimable"]]
             step  estimable
    0  configural       True
    1  thresholds       True
    2      metric       True
    3      scalar       True
    """
    chosen = default_estimator(instrument, estimator)
    if factors is None:
        factors, problem = factor_structure(instrument)
        if problem:             # no simple-structure model to fit: one configural row that says why
            frame = pd.DataFrame({"step": ["configural"], "estimable": [False], "note": [f"not estimable: {problem}"]})
            frame.attrs.update(estimator=chosen, problem=problem, fallback="")
            return frame
    data = keyed_samples(instrument, cohort, people)
    mi = measurement_invariance(data, factors, SAMPLE, estimator=chosen)
    mi.attrs["fallback"] = ""
    if chosen == "WLSMV" and not estimator and mi.attrs["problem"]:
        continuous = measurement_invariance(data, factors, SAMPLE, estimator="ML")
        if continuous["estimable"].any():
            continuous.attrs["fallback"] = mi.attrs["problem"]
            return continuous
    return mi
