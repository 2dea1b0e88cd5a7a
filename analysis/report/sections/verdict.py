"""The report's first section, "Can the personas stand in for people?": the scorecard of every model
against people (:func:`psyq.analysis.statistics.standin.scorecard.scorecard`), one table per instrument, and
a sentence per use the cohort can, cannot or cannot yet be said to stand in for, each naming the
people and the figure that decides it.

It is built last (it reads the invariance fits the same-construct section made) and shown first
(:attr:`~psyq.analysis.report.section.Section.lead`). With people's item answers (``--human``) every
criterion is computed for every backend; with published norms only, level and spread. The model
answering as itself (the baseline respondent, no persona) is one respondent, not a cohort: it is left
out of the verdict and its scores are shown beside it.

In a run with conditions the scorecard's rows are its groups of answers, one per backend and
condition (:attr:`~psyq.analysis.report.context.ReportContext.condition_groups`), each with its
condition's factor levels as columns (:func:`with_condition_columns`), and the verdict first names
the most people-like condition for each use (:data:`CONDITION_USES`) and whether it is
distinguishably better than the next, or that it cannot tell yet and how many share rank 1 (two
conditions named at most, so a sentence stays short however many there are;
:func:`~psyq.analysis.report.readings.most_people_like`, from the head-to-head comparison of
:attr:`~psyq.analysis.report.context.ReportContext.condition_comparison`); without people's item
answers it says that the conditions are not compared with people.

The rules that pick a sentence (each has a test in tests/test_verdict_sentences.py):

* a model *can stand in* for a use only when every criterion of the use meets (every row's 90 %
  interval inside its region);
* it *cannot* when any criterion of the use falls short; the figure said is the row of the first
  such criterion (in the use's order) lying furthest outside its region;
* otherwise *cannot tell yet*, with about how many personas would decide it were the estimates to
  stay where they are (:func:`~psyq.analysis.statistics.standin.equivalence.sample_size_to_decide`: the
  fewest that would put an estimate lying outside its region wholly outside, else the most any
  row needs to lie inside), and as many people where the people are fewer;
* "no model can stand in" only when every model falls short;
* "largely a response style" only for a model whose level falls short and whose style falls
  short on every subscale it falls short on with style outweighing the keyed shift there
  (``style_abs_share`` ≥ .5; the interval then lies away from 0, as the region holds 0).

Example:
    >>> sentences = use_sentences(pd.DataFrame({"group": ["a", "a"], "instrument": "iri",
    ...     "criterion": "level", "subscale": ["PT", "FS"], "value": [0.05, 0.6], "low": [-0.05, 0.5],
    ...     "high": [0.15, 0.7], "people": float("nan"), "mark": ["meets", "falls short"], "level": "", "note": ""}),
    ...     people={"iri": "1,973 young adults"})
    >>> print(sentences[0])
    Estimating people's subscale means (against 1,973 young adults): no model can stand in (a: g = 0.60 on FS, 90 % CI 0.50 to 0.70, outside ±0.30).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from psyq.engine.design.persona import BASELINE as BASELINE_PERSONA
from psyq.engine.trials.scoring import score_wide

from psyq.analysis.report.apa import say_num
from psyq.analysis.report.context import ConditionGroup, ReportContext, estimator_choice
from psyq.analysis.report.readings import most_people_like
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.statistics.intervals import z_quantile
from psyq.analysis.statistics.standin.design_verdict import DESIGN_CUTOFFS, DESIGN_USES
from psyq.analysis.statistics.standin.equivalence import (CONFIDENCE, FALLS_SHORT, INCONCLUSIVE, MEETS, NOT_ESTIMABLE,
                                                  combine_marks, sample_size_to_decide)
from psyq.analysis.statistics.invariance.against_people import factor_structure, invariance_against_people
from psyq.analysis.statistics.standin.scorecard import (AUC_MIN_PER_SIDE, CUTOFFS, MIN_FOR_CORRELATIONAL, norm_scorecard,
                                                row_region, scorecard)

TITLE = "Can the personas stand in for people?"
BASELINE = BASELINE_PERSONA.id
"""The respondent id of the model answering as itself."""
METHODS = ("Whether the personas can stand in for people was judged per model on a scorecard (psyq.scorecard): "
           "level (Hedges' g against people, equivalence within ±{bound} SD), spread (SD ratio, Bonett's robust "
           "interval), reliability (the difference of Cronbach's α, Feldt's intervals), structure (the "
           "measurement-invariance level reached on a configural model that fits, and latent means), "
           "distinguishability (a classifier two-sample test on a held-out half, Lopez-Paz & Oquab, 2017: "
           "logistic regression and gradient boosting, the higher AUC with DeLong's interval), response style "
           "against trait (the persona − people gap split into a shift common to forward and reversed items and one "
           "that follows the keying), relations (each attribute's standardised effect and each subscale "
           "intercorrelation among personas against people's, Bisbee et al., 2024) and, for twins of people, "
           "individual agreement and prediction-powered inference (PPI++; Angelopoulos et al., 2023). Each figure "
           "was marked by its 90 % confidence interval against an equivalence region — two one-sided tests at "
           "α = .05 (Lakens, 2017), the convention of the whole report: meets when the interval lay inside the "
           "region, falls short when it lay wholly outside it (Bonferroni-widened for criteria of several rows), "
           "inconclusive otherwise; a use was judged met only when all its criteria met.")
USES = [
    ("Estimating people's subscale means", ("level",)),
    ("Reproducing people's spread, reliability and factor structure", ("spread", "reliability", "structure")),
    ("Group differences and relations between subscales", ("relations",)),
    ("Answering indistinguishably from people", ("distinguishable",)),
    ("Standing in for particular people (twins)", ("individuals",)),
]
CONDITION_USES = [*USES, ("Reproducing people's answer distributions item by item", ("tvd", "w1"))]
"""The uses a run with conditions names its most people-like condition for, each by the criteria of
:func:`psyq.compare_conditions` it rests on (structure is not compared head to head)."""
NOT_COMPARED = ("The conditions are not compared head to head with people: that needs people's item answers "
                "(psyq report RUN --human INSTRUMENT=FILE); each group of answers is judged on its own.")
MINIMUM = {"distinguishable": AUC_MIN_PER_SIDE, "reliability": MIN_FOR_CORRELATIONAL}
"""The smallest cohort at which a criterion decides at all (below it the rows are inconclusive)."""


def _region_said(row: pd.Series, bound: float) -> str:
    lower, upper = row_region(row, bound)
    if math.isnan(lower) and math.isnan(upper):
        return ""
    if math.isinf(lower):
        return f"above {say_num(upper)}"
    if math.isinf(upper):
        return f"below {say_num(lower)}"
    if lower == -upper:
        return f"outside ±{say_num(upper)}"
    return f"outside {say_num(lower)}–{say_num(upper)}"


def _figure(row: pd.Series, bound: float | None = None) -> str:
    """The deciding figure of a row, in words (with the region it lies outside when `bound` is given)."""
    where = f" on {row['subscale']}" if row["subscale"] else ""
    ci = (f", 90 % CI {say_num(row['low'])} to {say_num(row['high'])}"
          if pd.notna(row["low"]) and pd.notna(row["high"]) else "")
    named = {"level": "g", "spread": "SD ratio", "reliability": "α difference", "distinguishable": "AUC",
             "style": "style shift", "relations": "difference", "individuals": "twin − others r",
             "latent_mean": "latent d", "worth": "people per person"}
    if row["criterion"] == "structure":
        return f"invariance reached: {row['level'] or 'none'}" + (f"; {row['note']}" if row["note"] else "")
    outside = _region_said(row, bound) if bound is not None and row["mark"] == FALLS_SHORT else ""
    return (f"{named.get(row['criterion'], row['criterion'])} = {say_num(row['value'])}{where}{ci}"
            + (f", {outside}" if outside else ""))


def _distance_outside(row: pd.Series, bound: float) -> float:
    """How far a row's figure lies outside its region (on the log scale for the SD ratio)."""
    lower, upper = row_region(row, bound)
    value = float(row["value"])
    if row["criterion"] == "spread" and value > 0:
        value, lower, upper = math.log(value), math.log(lower), math.log(upper)
    return max(lower - value, value - upper, 0.0) if not math.isnan(lower) else 0.0


def _shortfall(rows: pd.DataFrame, criteria: tuple[str, ...], bound: float) -> pd.Series | None:
    """The row that decides a 'cannot': of the first criterion (in the use's order) falling short, the
    row lying furthest outside its region."""
    for criterion in criteria:
        short = rows[(rows["criterion"] == criterion) & (rows["mark"] == FALLS_SHORT)]
        if len(short):
            return short.loc[short.apply(_distance_outside, axis=1, bound=bound).idxmax()]
    return None


def personas_to_decide(rows: pd.DataFrame, n_personas: int | None, n_people: int | None,
                       bound: float) -> tuple[float, float]:
    """About how many personas (and people) would decide the undecided rows of a use, were the
    estimates to stay where they are (:func:`sample_size_to_decide`, at least each criterion's
    minimum). A use falls short as soon as one row does: when some undecided estimate lies outside
    its region, the fewest personas that would put one of those rows wholly outside (at the
    Bonferroni level of its criterion's m rows, as the scorecard reads a shortfall); otherwise (every
    estimate inside) the most any row needs to lie inside. People as many where they are fewer and the
    classifier test, which compares equal numbers, is undecided (NaN: not needed)."""
    if not n_personas:
        return math.nan, math.nan
    outside, inside = [], []
    for _, row in rows[rows["mark"] == INCONCLUSIVE].iterrows():
        if row["criterion"] in ("structure", "worth"):
            continue
        lower, upper = row_region(row, bound)
        value, low, high = float(row["value"]), float(row["low"]), float(row["high"])
        if row["criterion"] == "spread" and min(value, low, high) > 0:
            value, low, high, lower, upper = (math.log(x) for x in (value, low, high, lower, upper))
        n = sample_size_to_decide(value, low, high, n_personas, lower, upper)
        if not lower < value < upper:        # falling short is read at the Bonferroni level of m rows
            m = int(((rows["criterion"] == row["criterion"]) & (rows["mark"] != NOT_ESTIMABLE)).sum())
            n *= (z_quantile(1 - (1 - CONFIDENCE) / m) / z_quantile(CONFIDENCE)) ** 2 if m > 1 else 1.0
        n = max(n, MINIMUM.get(row["criterion"], 0)) if not math.isnan(n) else \
            float(MINIMUM.get(row["criterion"], math.nan))
        if not math.isnan(n):
            (outside if not lower < value < upper else inside).append(n)
    if not outside and not inside:
        return math.nan, math.nan
    personas = min(outside) if outside else max(inside)
    people = personas if n_people is not None and personas > n_people and \
        (rows.loc[rows["mark"] == INCONCLUSIVE, "criterion"] == "distinguishable").any() else math.nan
    return personas, people


def _about(n: float) -> str:
    """A planning figure rounded as a plan should be: to 10 below 100, to 50 below 1,000, else to 100."""
    step = 10 if n < 100 else 50 if n < 1000 else 100
    return f"{int(math.ceil(n / step) * step):,}"


def with_condition_columns(card: pd.DataFrame, groups: Mapping[str, ConditionGroup]) -> pd.DataFrame:
    """A scorecard whose groups are a run's (backend, condition) groups with, after ``group``, each
    group's ``backend_id``, ``condition`` and one ``factor_<name>`` column per factor (the level, empty
    where a listed condition names none): what the scorecard's view shows as its columns.

    Example:
        >>> from psyq.analysis.report.context import ConditionGroup
        >>> card = pd.DataFrame({"group": ["a · x"], "instrument": "iri", "criterion": "level"})
        >>> with_condition_columns(card, {"a · x": ConditionGroup("a · x", "a", "x", {"asking": "ssr"})}).columns.tolist()
        ['group', 'backend_id', 'condition', 'factor_asking', 'instrument', 'criterion']
    """
    factors = list(dict.fromkeys(f for g in groups.values() for f in g.factors))
    known = card["group"].map(groups)
    added = {"backend_id": known.map(lambda g: g.backend if g else ""),
             "condition": known.map(lambda g: g.condition if g else "")}
    added.update({f"factor_{f}": known.map(lambda g, f=f: (g.factors.get(f, "") if g else "")) for f in factors})
    at = card.columns.get_loc("group") + 1
    return pd.concat([card.iloc[:, :at], pd.DataFrame(added, index=card.index), card.iloc[:, at:]], axis=1)


def use_sentences(card: pd.DataFrame, *, people: Mapping[str, str] | None = None,
                  sizes: Mapping[str, int] | None = None, people_sizes: Mapping[str, int] | None = None,
                  bound: float = 0.3, uses: list[tuple[str, tuple[str, ...]]] | None = None) -> list[str]:
    """A sentence per use of a scorecard's models (the rules in the module docstring), then whether a
    gap is mostly response style.

    `people` names, per instrument, who the people are (the human data's codebook); `sizes` the
    personas per model and `people_sizes` the people per instrument (for "about N would decide
    it"); `uses` the uses and their criteria (default :data:`USES`)."""
    people, sizes, people_sizes = people or {}, sizes or {}, people_sizes or {}
    sentences = []
    groups = list(dict.fromkeys(card["group"]))
    for use, criteria in uses or USES:
        rows = card[card["criterion"].isin(criteria)]
        if rows.empty:
            continue
        can, cannot, unsure, unknown = [], [], [], []
        for group in groups:
            mine = rows[rows["group"] == group]
            marks = [combine_marks(mine.loc[mine["criterion"] == c, "mark"]) for c in criteria
                     if (mine["criterion"] == c).any()]
            if not marks or all(m == NOT_ESTIMABLE for m in marks):
                unknown.append((str(group), "; ".join(dict.fromkeys(n for n in mine["note"] if n))))
            elif FALLS_SHORT in marks:
                cannot.append(f"{group}: {_figure(_shortfall(mine, criteria, bound), bound)}")
            elif all(m == MEETS for m in marks):
                can.append(str(group))
            else:
                instruments = mine["instrument"].unique()
                n_people = min((people_sizes.get(i, math.inf) for i in instruments), default=math.inf)
                personas, more_people = personas_to_decide(mine, sizes.get(group), None if math.isinf(n_people)
                                                           else int(n_people), bound)
                if (mine["mark"] == NOT_ESTIMABLE).any() and not (mine["mark"] == INCONCLUSIVE).any():
                    said = "not estimable in part: " + "; ".join(dict.fromkeys(
                        n for n in mine.loc[mine["mark"] == NOT_ESTIMABLE, "note"] if n))
                elif math.isnan(personas):
                    said = "the data cannot decide it yet"
                else:
                    said = f"about {_about(personas)} personas" + (
                        f" (and {_about(more_people)} people)" if not math.isnan(more_people) else "") + \
                        " would decide it, were the estimates to stay where they are"
                unsure.append(f"{group}: {said}")
        parts = []
        if can:
            parts.append(f"{', '.join(can)} can stand in")
        if cannot:
            everyone = not can and not unsure and not unknown
            parts.append(("no model can stand in" if everyone else "cannot") + f" ({'; '.join(cannot)})")
        if unsure:
            parts.append(f"cannot tell yet ({'; '.join(unsure)})")
        if unknown:                 # one reason said once for every model it holds for
            reasons: dict[str, list[str]] = {}
            for group, why in unknown:
                reasons.setdefault(why, []).append(group)
            parts.append("not estimable for " + "; ".join(", ".join(groups) + (f" ({why})" if why else "")
                                                         for why, groups in reasons.items()))
        who = "; ".join(dict.fromkeys(people[i] for i in rows["instrument"].unique() if i in people))
        sentences.append(f"{use}" + (f" (against {who})" if who else "") + f": {'; '.join(parts)}.")
    style = card[card["criterion"] == "style"]
    for group in groups:
        mine, level = style[style["group"] == group], card[(card["group"] == group) & (card["criterion"] == "level")]
        short = mine[mine["mark"] == FALLS_SHORT]
        # "Largely style" only where style itself falls short (its interval then lies away from 0) and
        # outweighs the keyed shift (style_abs_share, in `people`, ≥ .5) on every subscale it falls short on.
        if (level["mark"] == FALLS_SHORT).any() and len(short) and (short["people"] >= 0.5).all():
            worst = short.loc[short["value"].astype(float).abs().idxmax()]
            sentences.append(f"{group}: the gap is largely a response style, a shift of every raw answer whatever "
                             f"the item's keying ({_figure(worst)}), not a keyed, trait-like difference.")
    return sentences


class VerdictSection(ReportSection):
    """"Can the personas stand in for people?": the scorecard per instrument (rows: models) and the
    uses it allows, first in the report."""

    name = "verdict"

    def applies(self, report: ReportContext) -> bool:
        """Every run without stages, and a staged or imported run whose change the change section
        carded (:attr:`ReportContext.design_cards`): built last, so the cards are there."""
        return not report.staged or bool(report.design_cards)

    def sections(self, report: ReportContext) -> list[Section]:
        section = Section(TITLE, lead=True, methods=METHODS.format(bound=report.bound))
        cards, people, sizes, people_sizes, beside = [], {}, {}, {}, []
        if report.backend_answers:
            chosen = estimator_choice(report.run_path, report.estimator)
            for inst_id, answers in report.backend_answers.items():
                instrument, human = report.rated[inst_id], report.human_items[inst_id]
                baseline = answers[answers.index.astype(str) == BASELINE]
                answers = answers[answers.index.astype(str) != BASELINE]
                if len(baseline):
                    beside.append(_baseline_reading(instrument, baseline, human))
                if answers.empty:
                    continue
                people[inst_id] = (report.people[inst_id].who(len(human)) if inst_id in report.people
                                   else f"{len(human):,} people")
                people_sizes[inst_id] = len(human)
                sizes.update({str(b): int(n) for b, n in answers["backend_id"].value_counts().items()})
                factors, problem = factor_structure(instrument)
                fits = {}
                for backend, part in answers.groupby("backend_id", sort=False):
                    fit = report.invariance_fits.get((inst_id, str(backend)))
                    if fit is None and not problem:
                        fit = invariance_against_people(instrument, part, human, estimator=chosen, factors=factors)
                    if fit is not None:
                        fits[backend] = fit
                card = scorecard(answers, human, instrument, by="backend_id", bound=report.bound,
                                 structure=fits if fits else False)
                if report.condition_groups:
                    card = with_condition_columns(card, report.condition_groups)
                cards.append(card)
                section.add_table(f"Scorecard: {inst_id}, each model against people ({people[inst_id]})",
                                  card, view="scorecard")
        elif not report.norm_comparison.empty:
            card = norm_scorecard(report.norm_comparison, bound=report.bound)
            if report.condition_groups:
                card = with_condition_columns(card, report.condition_groups)
            cards.append(card)
            for inst_id, part in card.groupby("instrument", sort=False):
                section.add_table(f"Scorecard: {inst_id}, each model against published norms", part, view="scorecard")
            section.readings.append("Only published norms were at hand, so only level and spread are judged; "
                                    "structure, distinguishability, style, relations and individuals need people's "
                                    "item answers (psyq report RUN --human INSTRUMENT=FILE).")
        design = [c for c in report.design_cards if c is not None and len(c)]
        if report.human_change is not None:        # the people a change card is compared with
            for card in design:
                for inst_id in card.loc[card["criterion"] == "change", "instrument"].unique():
                    people.setdefault(inst_id, f"the people of {report.human_change.name}")
        for card in design:
            cards.append(card)
            for inst_id, part in card.groupby("instrument", sort=False):
                section.add_table(f"Scorecard: {inst_id}, each model against people", part, view="scorecard")
        compared = []
        if report.condition_groups:          # which condition is the most people-like, for each use
            compared = [NOT_COMPARED] if not report.condition_comparison else most_people_like(
                pd.concat(report.condition_ranks.values(), ignore_index=True),
                pd.concat(report.condition_comparison.values(), ignore_index=True), CONDITION_USES)
        if not cards:
            section.readings.append("No comparison with people is possible: no instrument of this run has people's "
                                    "answers (--human) or published norms.")
            section.readings.extend(compared + beside)
            return [section]
        card = pd.concat(cards, ignore_index=True)
        section.readings[:0] = compared + use_sentences(card, people=people, sizes=sizes, people_sizes=people_sizes,
                                                        bound=report.bound, uses=USES + list(DESIGN_USES))
        section.readings.extend(beside)
        if not (card["criterion"] == "individuals").any() and report.backend_answers:
            section.readings.append("No persona is a twin of one of the people (persona ids are no respondent ids), "
                                    "so whether a persona stands in for a particular person, and what twins are "
                                    "worth in people (prediction-powered inference), is not assessed.")
        shown = set(card["criterion"])
        regions = {**CUTOFFS, **DESIGN_CUTOFFS}
        section.note = ("Marks: meets (the 90 % interval inside the region), falls short (wholly outside it), "
                        "inconclusive (the data cannot decide yet), not estimable. Regions: "
                        + "; ".join(f"{k}: {v.format(bound=report.bound)}" for k, v in regions.items() if k in shown)
                        + ".")
        return [section]


def _baseline_reading(instrument, baseline: pd.DataFrame, people: pd.DataFrame) -> str:
    """The model answering as itself, beside the verdict: its subscale scores and where each falls among
    the people (percentile), per backend. One respondent is no cohort: it is not judged."""
    theirs = score_wide(instrument, people)
    said = []
    for _, row in baseline.iterrows():
        mine = score_wide(instrument, row.drop(labels=["backend_id"]).to_frame().T)
        parts = []
        for sub in mine.columns:
            value = mine[sub].iloc[0]
            if pd.notna(value) and sub in theirs:
                share = float((theirs[sub].dropna() < value).mean() + (theirs[sub].dropna() == value).mean() / 2)
                parts.append(f"{sub} {say_num(value)} (percentile {round(100 * share)})")
        said.append(f"{row['backend_id']}: " + (", ".join(parts) or "no score"))
    return ("The model answering as itself (no persona) is one respondent, not a cohort, so it is left out of the "
            f"verdict; its {instrument.id} scores among the people: " + "; ".join(said) + ".")
