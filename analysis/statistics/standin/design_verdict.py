"""Can the personas stand in for people in the designs other than questionnaires? One scorecard per
design, each row a figure with its 90 % interval marked against an equivalence region.

The questionnaires' scorecard compares rating items with people's answers. The other designs psyq
runs get the same four marks (:func:`psyq.analysis.statistics.standin.equivalence.interval_mark`: ``meets``,
``falls short``, ``inconclusive``, ``not estimable``) from one function each, all returning the
scorecard's columns (:data:`COLUMNS`):

==============  ================================  ==============================================  ====================
criterion       design (function)                 figure, persona − people, 90 % CI               region
==============  ================================  ==============================================  ====================
``change``      a situation evoked between two    Hedges' g of the change scores (after −         ±`bound` SD of
                measures (EmotionBench;           before) per backend × subscale × emotion,       change
                :func:`change_scorecard`)         each side's change scores first averaged
                                                  per person; ``level`` says whether the two
                                                  mean changes go the same way
``leas_level``  LEAS-format free-text answers     Hedges' g of the LEAS sums against each norm    ±`bound` norm SD
                scored 0–5 (:func:`leas_scorecard`)  group of the instrument's norm samples
``accuracy``    profiles of what targets feel     Hedges' g of per-perceiver accuracy (the        ±`bound` SD
                (:func:`accuracy_scorecard`)      Fisher-z mean of profile r) against human
                                                  perceivers' on the same items and targets
``ratings``     replies to people in distress,    persona − reference replies per rubric          ±`bound` SD of a
                rated on a rubric's dimensions    dimension: the mixed-model coefficient (random  reply's score
                (:func:`ratings_scorecard`)       intercept per message) over the pooled SD of
                                                  the replies' scores
==============  ================================  ==============================================  ====================

Every interval is 90 % (:data:`~psyq.analysis.statistics.standin.equivalence.CONFIDENCE`: two one-sided
tests at α = .05, Schuirmann 1987; Lakens 2017), and every region is ±`bound` standardised units,
the report's equivalence bound (0.3 by default, psyq's convention, as for the questionnaires'
``level``); :data:`DESIGN_CUTOFFS` says each with its source, :data:`DESIGN_USES` the use each
criterion decides. A criterion of several rows (emotions, subscales, dimensions) falls short when any
row does, so a row's ``falls short`` stands only when its interval at 1 − .10/m (Bonferroni, m rows)
lies outside the region too; otherwise it is ``inconclusive`` and its note says so, as in the
questionnaires' scorecard. A figure that cannot be estimated is NaN with mark ``not estimable`` and a
``note`` saying why, never a number in its place. In particular, LEAS-format items whose
``content_source`` is ``psyq`` are never compared with norms: published LEAS norms were collected
on the official LEAS materials, not on content psyq wrote, so the row is ``not estimable`` and says
so; and the personas' accuracy against targets without human perceivers of the same items is not
judged either (no people's figure to stand in for).

Checked in tests/test_design_verdict.py: each figure against Hedges' g and its normal interval
written out with numpy (J = 1 − 3/(4(n₁ + n₂ − 2) − 1), SE = J·√((n₁ + n₂)/(n₁n₂) + d²/(2(n₁ + n₂))),
z = 1.645), the ratings' coefficient against an ordinary least-squares fit with the message as a
fixed effect solved with numpy (two messages: no random intercept) and against statsmodels' MixedLM
called directly, the pooled SD by hand; the marks against cases built to meet, fall short and be
inconclusive, and a row falling short at 90 % but not at the Bonferroni level of its criterion (the
normal quantile, and t with the fallback's residual df); and an EmotionBench result file imported and
reported with people's change, whose card is produced.

Example
-------
Three personas and three people whose PA falls after an anger situation, each by about as much:

>>> changes = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b", "c"], "repeat": 0,
...                         "situation_id": "s1", "emotion": "anger", "instrument": "panas", "subscale": "PA",
...                         "change": [-4.0, -5, -6]})
>>> people = pd.DataFrame({"respondent_id": ["x", "y", "z"], "emotion": "anger", "subscale": "PA",
...                        "change": [-3.0, -5, -7]})
>>> card = change_scorecard(changes, people)
>>> card[["criterion", "subscale", "value", "mark", "level"]].round(2).to_dict("records")
[{'criterion': 'change', 'subscale': 'PA, anger', 'value': 0.0, 'mark': 'inconclusive', 'level': 'same direction'}]

(g = 0, but with three on each side its 90 % interval, −1.07 to 1.07, reaches past ±0.3.)

References
----------
Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure and the power approach
for assessing the equivalence of average bioavailability. *Journal of Pharmacokinetics and
Biopharmaceutics, 15*, 657–680. Lakens, D. (2017). Equivalence tests. *Social Psychological and
Personality Science, 8*, 355–362. Berger, R. L. (1982). Multiparameter hypothesis testing and
acceptance sampling. *Technometrics, 24*, 295–300 (intersection–union tests). Borenstein, M.,
Hedges, L. V., Higgins, J. P. T., & Rothstein, H. R. (2009). *Introduction to Meta-Analysis*. Wiley,
ch. 4. Westfall, J., Kenny, D. A., & Judd, C. M.
(2014). Statistical power and optimal design in experiments in which samples of participants respond
to samples of stimuli. *Journal of Experimental Psychology: General, 143*, 2020–2045 (a standardised
difference over the square root of the summed variance components, here estimated by the pooled SD
of the replies' scores). Huang, J. et al. (2024). Apathetic or empathetic? Evaluating LLMs' emotional
alignments with humans. NeurIPS 37 (EmotionBench). Lane, R. D. et al. (1990). The Levels of
Emotional Awareness Scale. *Journal of Personality Assessment, 55*, 124–134.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import TRUSTED, Instrument

from psyq.analysis.statistics.change import OVERALL, compare_change_with_humans
from psyq.analysis.statistics.intervals import t_quantile
from psyq.analysis.statistics.standin.equivalence import CONFIDENCE, NOT_ESTIMABLE, allow_for_rows, interval_mark
from psyq.analysis.statistics.norms.summary import hedges_g
from psyq.analysis.statistics.response_comparison import compare_sources

COLUMNS = ["group", "instrument", "criterion", "subscale", "value", "low", "high", "people", "mark", "level", "note"]
"""The scorecard's columns, the questionnaires' and these designs' alike."""

DESIGN_USES = [
    ("Reproducing people's change after an evoked situation", ("change",)),
    ("Reaching the emotional awareness of the LEAS norm samples", ("leas_level",)),
    ("Inferring what targets feel as accurately as people do", ("accuracy",)),
    ("Replying to people in distress as well as people's replies are rated", ("ratings",)),
]
"""(use, criteria deciding it) for each design, in the order of the report's sections."""

DESIGN_CUTOFFS = {
    "change": "90 % CI of Hedges' g of the change scores (after − before, personas − people, per emotion) inside "
              "±{bound} SD of change (equivalence by two one-sided tests, Lakens 2017; bound: psyq's default, as "
              "for level); whether the two mean changes go the same way is said beside it, not judged",
    "leas_level": "90 % CI of Hedges' g of the LEAS sums against each norm group inside ±{bound} norm SD (Lakens "
                  "2017; bound: psyq's default); never judged for LEAS-format items psyq wrote, since the published "
                  "norms were collected on the official LEAS materials",
    "accuracy": "90 % CI of Hedges' g of per-perceiver accuracy (Fisher-z mean of profile r), personas − human "
                "perceivers of the same items and targets, inside ±{bound} SD (psyq's convention: the bound of "
                "level); not judged without human perceivers",
    "ratings": "90 % CI of persona − reference replies' mean rating per dimension (mixed model, random intercept "
               "per message) over the pooled SD of the replies' scores (Westfall, Kenny & Judd 2014) inside "
               "±{bound} SD (psyq's convention: the bound of level)",
}
"""Each criterion's region with its source (``{bound}``: the report's equivalence bound)."""


def _card_row(group: object, instrument: object, criterion: str, subscale: object = "", value: float = math.nan,
              low: float = math.nan, high: float = math.nan, people: float = math.nan, *, bound: float,
              level: str = "", note: str = "", df: float = math.inf) -> dict:
    """One scorecard row, marked by its interval against ±`bound` (``not estimable`` without a value);
    `df` is the degrees of freedom of the interval's t quantile (infinite: a normal interval), kept for
    :func:`_card`."""
    estimable = not (pd.isna(value) or pd.isna(low) or pd.isna(high))
    mark = interval_mark(float(low), float(high), -bound, bound) if estimable else NOT_ESTIMABLE
    return dict(group=str(group), instrument=str(instrument), criterion=criterion, subscale=str(subscale),
                value=float(value), low=float(low), high=float(high), people=float(people), mark=mark, level=level,
                note=note, _df=df)


def _card(rows: list[dict], *, bound: float, confidence: float) -> pd.DataFrame:
    """The rows as a scorecard, a "falls short" allowed for the rows of its criterion
    (:func:`~psyq.analysis.statistics.standin.equivalence.allow_for_rows`, as the questionnaires' scorecard
    does). Every interval here is symmetric, estimate ± quantile × standard error, so the wider one
    keeps the standard error and takes the quantile of the new level (t with the row's `_df`)."""
    card = pd.DataFrame(rows, columns=[*COLUMNS, "_df"])

    def widen(value: float, low: float, high: float, df: float):
        def at(level: float) -> tuple[float, float]:
            half = (high - low) / 2 / t_quantile(confidence, df) * t_quantile(level, df)
            return value - half, value + half
        return at
    card["_widen"] = [widen(*r) for r in zip(card["value"], card["low"], card["high"], card["_df"])]
    card["_lower"], card["_upper"] = -bound, bound
    return allow_for_rows(card.drop(columns="_df"), confidence=confidence)


def _why(note: object) -> str:
    """A statistic's note without its leading "not estimable: " (the mark says that already)."""
    return str(note or "").removeprefix("not estimable: ")


# --------------------------------------------------------------------------------------------
# Change after an evoked situation


def direction_agreement(change_personas: float, change_people: float) -> str:
    """Whether the personas' and the people's mean change go the same way.

    Example
    -------
    >>> direction_agreement(-3.2, -2.1), direction_agreement(1.0, -2.0), direction_agreement(0.0, -2.0)
    ('same direction', 'opposite direction', 'no change among personas')
    """
    if pd.isna(change_personas) or pd.isna(change_people):
        return ""
    if change_personas == 0 or change_people == 0:
        return "no change among personas" if change_personas == 0 else "no change among people"
    return "same direction" if (change_personas > 0) == (change_people > 0) else "opposite direction"


def change_scorecard(changes: pd.DataFrame, human_changes: pd.DataFrame | None, *, bound: float = 0.3,
                     confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The ``change`` criterion: the personas' change after each emotion's situations against people's.

    Per backend × instrument × subscale × emotion (the rows of
    :func:`psyq.analysis.statistics.change.compare_change_with_humans` with ``by=["emotion"]``; its
    pooled "overall" row is not judged, as it would count every emotion twice): Hedges' g of the
    change scores, personas − people, each person's changes averaged over repeats and situations
    first, with its normal interval at `confidence`, marked against ±`bound` SD of change.

    Parameters
    ----------
    changes : pandas.DataFrame
        The ``changes`` of :func:`psyq.analysis.statistics.change.change_scores`.
    human_changes : pandas.DataFrame or None
        People's change (:func:`psyq.analysis.scoring.human_data.read_human_change_csv`: at least
        ``respondent_id, emotion, subscale`` and ``change`` or ``before, after``). None: every row
        is ``not estimable`` ("no people's change").
    bound : float
        The equivalence bound in SD units of change.
    confidence : float
        The interval's level (.90: two one-sided tests at .05).

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`; ``subscale`` is "<subscale> (<emotion>)", ``people`` the number of people,
        ``level`` :func:`direction_agreement`, ``note`` the two mean changes in scale points, or
        why g is not estimable.

    Example
    -------
    >>> changes = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b"], "repeat": 0, "situation_id": "s1",
    ...                         "emotion": "fear", "instrument": "panas", "subscale": "NA", "change": [2.0, 3]})
    >>> change_scorecard(changes, None)[["subscale", "mark", "note"]].to_dict("records")
    [{'subscale': 'NA, fear', 'mark': 'not estimable', 'note': "no people's change to compare with"}]
    """
    if human_changes is None:
        keys = ["backend_id", "instrument", "subscale", "emotion"]
        return _card([_card_row(b, i, "change", f"{s}, {e}", people=0, bound=bound,
                                note="no people's change to compare with")
                      for (b, i, s, e), _ in changes.groupby(keys, sort=True)], bound=bound, confidence=confidence)
    compared = compare_change_with_humans(changes, human_changes, by=["emotion"])
    rows = []
    for row in compared[compared["emotion"].astype(str) != OVERALL].itertuples():
        label = f"{row.subscale}, {row.emotion}"
        direction = direction_agreement(row.change_cohort, row.change_human)
        g = low = high = math.nan
        if row.n_cohort >= 2 and row.n_human >= 2 and (row.sd_cohort > 0 or row.sd_human > 0):
            g, low, high = hedges_g(row.change_cohort, row.sd_cohort, row.n_cohort, row.change_human, row.sd_human,
                                    row.n_human, confidence=confidence)
            note = (f"mean change: personas {row.change_cohort:+.2f}, people {row.change_human:+.2f} scale points; "
                    + direction)
        else:
            note = _why(row.note) or "not estimable"
        rows.append(_card_row(row.backend_id, row.instrument, "change", label, g, low, high, row.n_human,
                              bound=bound, level=direction, note=note))
    return _card(rows, bound=bound, confidence=confidence)


# --------------------------------------------------------------------------------------------
# LEAS levels against the instrument's norms


PSYQ_CONTENT = ("LEAS-format items written by psyq, and the published LEAS norms were collected on the official "
                "LEAS materials: content psyq wrote is never compared with norms collected on other materials")
"""Why LEAS-format items psyq wrote are never marked against norms."""


def leas_scorecard(comparison: pd.DataFrame, instruments: Mapping[str, Instrument], backends: Sequence[str], *,
                   bound: float = 0.3, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The ``leas_level`` criterion: the personas' LEAS sums against the instrument's norm groups.

    Per backend × instrument × subscale × norm sample × norm group of `comparison`: Hedges' g of
    the personas' sums − the norm group's mean, with its normal interval at `confidence` (from
    the comparison's n, mean and SD beside the norm's), marked against ±`bound` norm SD. An
    instrument whose ``content_source`` is ``psyq`` is never compared (:data:`PSYQ_CONTENT`); one
    with no norm sample, or none chosen, gets a ``not estimable`` row per backend saying so.

    Parameters
    ----------
    comparison : pandas.DataFrame
        :func:`psyq.analysis.statistics.norms.compare_with_norms` of the run's scores (the rows of
        other instruments are ignored).
    instruments : mapping of instrument id to Instrument
        The LEAS-format instruments of the run.
    backends : sequence of str
        The backends that answered them (the groups of a ``not estimable`` row).
    bound, confidence : float
        The equivalence bound in norm SDs and the interval's level.

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`; ``level`` names the norm sample and group, ``people`` the norm group's n.

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> card = leas_scorecard(pd.DataFrame(), {"leas_psyq": load_instrument("leas_psyq")}, ["m"])
    >>> card[["group", "criterion", "mark"]].to_dict("records"), card["note"][0][:34]
    ([{'group': 'm', 'criterion': 'leas_level', 'mark': 'not estimable'}], 'LEAS-format items written by psyq,')
    """
    rows = []
    for inst_id, instrument in instruments.items():
        mine = comparison[comparison["instrument"] == inst_id] if len(comparison) else comparison
        refused = (PSYQ_CONTENT if instrument.content_source == "psyq" else
                   "the instrument carries no norm sample" if not instrument.norms else
                   "none of the instrument's norm samples was chosen (--norms)" if mine.empty else "")
        if refused:
            rows += [_card_row(b, inst_id, "leas_level", bound=bound, note=refused) for b in backends]
            continue
        for row in mine.itertuples():
            g = low = high = math.nan
            note = "" if row.norm_verified in TRUSTED else f"norm sample {row.norm_sample}: {row.norm_verified}"
            if row.n >= 2 and row.sd == row.sd:
                g, low, high = hedges_g(row.mean, row.sd, row.n, row.norm_mean, row.norm_sd, row.norm_n,
                                        confidence=confidence)
            else:
                note = f"{row.n} respondent(s) in this norm group: g needs 2"
            rows.append(_card_row(row.backend_id, inst_id, "leas_level", row.subscale, g, low, high, row.norm_n,
                                  bound=bound, level=f"{row.norm_sample}, {row.norm_group}", note=note))
    return _card(rows, bound=bound, confidence=confidence)


# --------------------------------------------------------------------------------------------
# Empathic accuracy against targets' own reports


def _per_person_z(perceivers: pd.DataFrame) -> pd.Series:
    """Each perceiver's accuracy z, averaged over repeats (a persona counts once), missing left out."""
    return perceivers.groupby("respondent_id", sort=True)["z"].mean().dropna()


def accuracy_scorecard(cohort: pd.DataFrame, people: pd.DataFrame | None, *, instrument: str,
                       design_intended: bool = False, bound: float = 0.3,
                       confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The ``accuracy`` criterion: the personas' accuracy against human perceivers' on the same items.

    Per backend: Hedges' g of the per-perceiver accuracy z (the Fisher-z mean of profile r over
    stops and items: the ``z`` of the ``perceivers`` of
    :func:`psyq.analysis.statistics.empathic_accuracy.score_perceivers`; a persona's repeats averaged
    first), personas − human perceivers, with its normal interval at `confidence`, marked against
    ±`bound` SD. Both sides were scored against the same target
    profiles, so the comparison holds for profiles the items' authors intended as well as for
    targets' own reports; ``level`` says which. Without human perceivers the row is
    ``not estimable``: the personas' accuracy against the targets says how accurate they are, not
    whether they perceive as people do, and norms of other materials are never used.

    Parameters
    ----------
    cohort : pandas.DataFrame
        The personas' per-perceiver scores (``backend_id, respondent_id, z``; ``repeat`` may be there).
    people : pandas.DataFrame or None
        Human perceivers' per-perceiver scores (``respondent_id, z``), scored against the same targets.
    instrument : str
        The instrument's id.
    design_intended : bool
        Whether any target profile used is not a self-report (then the figure is agreement with the
        authors' design, not empathic accuracy).
    bound, confidence : float
        The equivalence bound in SD units and the interval's level.

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`; ``people`` the number of human perceivers, ``note`` both mean r.

    Example
    -------
    >>> cohort = pd.DataFrame({"backend_id": "m", "respondent_id": ["a", "b", "c"], "z": [0.5, 0.6, 0.7]})
    >>> card = accuracy_scorecard(cohort, None, instrument="ea")
    >>> card[["criterion", "mark", "level"]].to_dict("records")
    [{'criterion': 'accuracy', 'mark': 'not estimable', 'level': 'empathic accuracy'}]
    """
    level = "agreement with design-intended profiles" if design_intended else "empathic accuracy"
    z_people = _per_person_z(people) if people is not None else None
    rows = []
    for backend, part in cohort.groupby("backend_id", sort=False):
        z_personas = _per_person_z(part)
        r_personas = math.tanh(z_personas.mean()) if len(z_personas) else math.nan
        if z_people is None:
            rows.append(_card_row(backend, instrument, "accuracy", bound=bound, level=level,
                                  note=f"no human perceivers of these items to compare with (the personas' mean r "
                                       f"against the targets: {r_personas:.2f})"))
            continue
        g = low = high = math.nan
        if len(z_personas) < 2 or len(z_people) < 2:
            note = f"{len(z_personas)} persona(s) and {len(z_people)} human perceiver(s) with a score: g needs 2 each"
        elif np.ptp(z_personas) == 0 and np.ptp(z_people) == 0:
            note = "no spread of accuracy on either side: g is not defined"
        else:
            g, low, high = hedges_g(z_personas.mean(), z_personas.std(ddof=1), len(z_personas), z_people.mean(),
                                    z_people.std(ddof=1), len(z_people), confidence=confidence)
            note = f"mean r: personas {r_personas:.2f}, human perceivers {math.tanh(z_people.mean()):.2f}"
        rows.append(_card_row(backend, instrument, "accuracy", "", g, low, high, len(z_people), bound=bound,
                              level=level, note=note))
    return _card(rows, bound=bound, confidence=confidence)


# --------------------------------------------------------------------------------------------
# Rated replies: persona replies against people's (reference) replies


def pooled_sd(first: np.ndarray, second: np.ndarray) -> float:
    """√(((n₁ − 1)s₁² + (n₂ − 1)s₂²) / (n₁ + n₂ − 2)): the SD of a score within either group.

    Example
    -------
    >>> round(pooled_sd(np.array([1.0, 2, 3]), np.array([2.0, 4])), 4)
    1.1547
    """
    n1, n2 = len(first), len(second)
    if n1 + n2 < 3:
        return math.nan
    squares = (((first - first.mean()) ** 2).sum() if n1 else 0.0) + (((second - second.mean()) ** 2).sum()
                                                                      if n2 else 0.0)
    return float(math.sqrt(squares / (n1 + n2 - 2)))


def _residual_df(model: str, n: int, n_messages: int) -> float:
    """The degrees of freedom of the t interval of the coefficient of
    :func:`~psyq.analysis.statistics.response_comparison.compare_sources`: infinite for the mixed
    model (statsmodels' interval is normal), n − 1 − messages with the message a fixed effect, n − 2
    for plain OLS."""
    if model.startswith("mixed"):
        return math.inf
    return float(n - 1 - n_messages) if "fixed effect" in model else float(n - 2)


def ratings_scorecard(scores: pd.DataFrame, *, bound: float = 0.3, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The ``ratings`` criterion: persona replies' ratings against reference (people's) replies'.

    Per instrument × backend × rubric × dimension × rater kind (judges and people never pooled):
    the persona − reference coefficient of
    :func:`psyq.analysis.statistics.response_comparison.compare_sources` (a linear mixed model with
    a random intercept per message, or its stated fallback) and its interval at `confidence`, both
    divided by the pooled SD of the two sources' reply scores (:func:`pooled_sd`: the SD of one
    reply's score, message and reply variance together, Westfall, Kenny & Judd 2014; taken as
    known), marked against ±`bound` SD. Every backend's replies are compared with all the
    reference replies to the same instrument.

    Parameters
    ----------
    scores : pandas.DataFrame
        Reply scores (:func:`psyq.analysis.statistics.response_comparison.target_scores`) with
        ``instrument`` (the response instrument of the reply) and ``backend_id`` (the backend of a
        persona reply; anything for a reference reply) added.
    bound, confidence : float
        The equivalence bound in SD units and the interval's level.

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`; ``subscale`` the dimension, ``level`` the rubric and rater kind, ``people``
        the number of reference replies, ``note`` the model used.

    Example
    -------
    Four messages, each answered by a persona and by a reference; one judge:

    >>> scores = pd.DataFrame({"instrument": "help", "backend_id": ["m", None] * 4, "rubric_id": "r",
    ...                        "dimension": "warmth", "rater_kind": "judge",
    ...                        "response_id": ["p1", "c1", "p2", "c2", "p3", "c3", "p4", "c4"],
    ...                        "source": ["persona", "reference"] * 4,
    ...                        "item_id": [f"m{k}" for k in (1, 1, 2, 2, 3, 3, 4, 4)],
    ...                        "score": [3.5, 2.0, 4.0, 3.0, 2.5, 2.0, 3.0, 1.0]})
    >>> card = ratings_scorecard(scores)
    >>> card[["subscale", "mark", "level"]].to_dict("records"), round(float(card["value"][0]), 3)
    ([{'subscale': 'warmth', 'mark': 'falls short', 'level': 'r, judge raters'}], 1.698)
    """
    references = scores[scores["source"] == "reference"]
    personas = scores[scores["source"] == "persona"]
    rows = []
    for (inst_id, backend), mine in personas.groupby(["instrument", "backend_id"], sort=False, dropna=False):
        both = pd.concat([mine, references[references["instrument"] == inst_id]], ignore_index=True)
        compared = compare_sources(both, confidence=confidence)
        for row in compared.itertuples():
            part = both[(both["rubric_id"] == row.rubric_id) & (both["dimension"] == row.dimension)
                        & (both["rater_kind"] == row.rater_kind)]
            persona_scores = part.loc[part["source"] == "persona", "score"].to_numpy(dtype=float)
            reference_scores = part.loc[part["source"] == "reference", "score"].to_numpy(dtype=float)
            sd = pooled_sd(persona_scores, reference_scores)
            value = low = high = math.nan
            if pd.isna(row.b):
                note = _why(row.note) or "not estimable"
            elif not sd > 0:
                note = "the replies' scores do not vary: no SD to standardise by"
            else:
                value, low, high = row.b / sd, row.b_ci_low / sd, row.b_ci_high / sd
                note = f"{row.model}; {row.b:+.2f} levels over a pooled SD of {sd:.2f}" + (
                    f"; {row.note}" if row.note else "")
            rows.append(_card_row(backend if pd.notna(backend) else "", inst_id, "ratings", row.dimension, value, low,
                                  high, len(reference_scores), bound=bound,
                                  level=f"{row.rubric_id}, {row.rater_kind} raters", note=note,
                                  df=_residual_df(row.model, row.n, row.n_messages)))
    return _card(rows, bound=bound, confidence=confidence)
