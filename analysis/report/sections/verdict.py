"""The report's first section, "Can the personas stand in for people?": the scorecard of every model
against people (:func:`psyq.analysis.statistics.scorecard.scorecard`), one table per instrument, and
a few sentences on the uses the cohort can and cannot stand in for, each with the figure behind it.

It is built last (it reads the invariance fits the same-construct section made) and shown first
(:attr:`~psyq.analysis.report.section.Section.lead`). With people's item answers (``--human``) every
criterion is computed for every backend; with published norms only, level and spread.

Example:
    >>> sentences = use_sentences(pd.DataFrame({"group": ["a", "a"], "instrument": "iri",
    ...     "criterion": "level", "subscale": ["PT", "FS"], "value": [0.05, 0.6], "low": [-0.05, 0.5],
    ...     "high": [0.15, 0.7], "people": float("nan"), "mark": ["meets", "falls short"], "level": "", "note": ""}))
    >>> print(sentences[0])
    Estimating people's subscale means: no model can stand in (a: g = 0.60 on FS, 95 % CI 0.50 to 0.70).
"""

from __future__ import annotations

import pandas as pd

from psyq.analysis.report.apa import say_num
from psyq.analysis.report.context import ReportContext, estimator_choice
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.statistics.invariance.against_people import factor_structure, invariance_against_people
from psyq.analysis.statistics.scorecard import CUTOFFS, NOT_ESTIMABLE, norm_scorecard, scorecard

TITLE = "Can the personas stand in for people?"
METHODS = ("Whether the personas can stand in for people was judged per model on a scorecard (psyq.scorecard): "
           "level (Hedges' g against people, equivalence within ±{bound} SD), spread (SD ratio), reliability "
           "(Cronbach's α against the people's), structure (the measurement-invariance level reached and latent "
           "means), distinguishability (a classifier two-sample test on a held-out half, Lopez-Paz & Oquab, 2017: "
           "logistic regression and gradient boosting, the higher AUC with DeLong's CI), response style against "
           "trait (the persona − people gap split into a shift common to forward and reversed items and one that "
           "follows the keying), relations (each attribute's standardised effect and each subscale "
           "intercorrelation among personas beside people's, Bisbee et al., 2024) and, for twins of people, "
           "individual agreement and prediction-powered inference (PPI++; Angelopoulos et al., 2023).")
USES = [
    ("Estimating people's subscale means", ("level",)),
    ("Reproducing people's spread, reliability and factor structure", ("spread", "reliability", "structure")),
    ("Group differences and relations between subscales", ("relations",)),
    ("Answering indistinguishably from people", ("distinguishable",)),
    ("Standing in for particular people (twins)", ("individuals",)),
]


def _figure(row: pd.Series) -> str:
    """The deciding figure of a row, in words."""
    where = f" on {row['subscale']}" if row["subscale"] else ""
    ci = (f", 95 % CI {say_num(row['low'])} to {say_num(row['high'])}"
          if pd.notna(row["low"]) and pd.notna(row["high"]) else "")
    named = {"level": "g", "spread": "SD ratio", "reliability": "α", "distinguishable": "AUC", "style": "style shift",
             "relations": "share of people's effects replicated", "individuals": "twin − others r",
             "latent_mean": "latent d", "worth": "people per person"}
    if row["criterion"] == "structure":
        return f"invariance reached: {row['level'] or 'none'} (configural CFI {say_num(row['value'])})"
    people = f" vs people's {say_num(row['people'])}" if row["criterion"] == "reliability" else ""
    return f"{named.get(row['criterion'], row['criterion'])} = {say_num(row['value'])}{where}{ci}{people}"


def _shortfall(rows: pd.DataFrame) -> pd.Series | None:
    """The row that decides a 'cannot': the first criterion falling short, its worst figure."""
    short = rows[rows["mark"] == "falls short"]
    if short.empty:
        return None
    criterion = short["criterion"].iloc[0]
    part = short[short["criterion"] == criterion]
    return part.loc[part["value"].astype(float).sub(1 if criterion == "spread" else 0).abs().idxmax()]


def use_sentences(card: pd.DataFrame) -> list[str]:
    """A sentence per use of a scorecard's models: which can stand in (every criterion of the use
    meets its cut-off in every subscale) and which cannot (with the figure that falls short), and
    which were not estimable; then whether a gap is mostly response style."""
    sentences = []
    groups = list(dict.fromkeys(card["group"]))
    for use, criteria in USES:
        rows = card[card["criterion"].isin(criteria)]
        if rows.empty:
            continue
        can, cannot, unknown = [], [], []
        for group in groups:
            mine = rows[rows["group"] == group]
            if mine.empty or (mine["mark"] == NOT_ESTIMABLE).all():
                unknown.append(str(group))
            elif (decider := _shortfall(mine)) is not None:
                cannot.append(f"{group}: {_figure(decider)}")
            elif (mine["mark"] == NOT_ESTIMABLE).any():
                unknown.append(f"{group} (in part)")
            else:
                can.append(str(group))
        parts = []
        if can:
            parts.append(f"{', '.join(can)} can stand in")
        if cannot:
            parts.append(("no model can stand in" if not can and not unknown else "cannot") + f" ({'; '.join(cannot)})")
        if unknown:
            parts.append(f"not estimable for {', '.join(unknown)}")
        sentences.append(f"{use}: {'; '.join(parts)}.")
    style = card[card["criterion"] == "style"]
    for group in groups:
        mine, level = style[style["group"] == group], card[(card["group"] == group) & (card["criterion"] == "level")]
        short = mine[mine["mark"] == "falls short"]
        # "Largely style" only where style outweighs the keyed shift (style_abs_share, in `people`, ≥ .5)
        # on the subscales whose style falls short.
        if (level["mark"] == "falls short").any() and len(short) and (short["people"] >= 0.5).all():
            worst = short.loc[short["value"].astype(float).abs().idxmax()]
            sentences.append(f"{group}: the gap is largely a response style, a shift of every raw answer whatever "
                             f"the item's keying ({_figure(worst)}), not a keyed, trait-like difference.")
    return sentences


class VerdictSection(ReportSection):
    """"Can the personas stand in for people?": the scorecard per instrument (rows: models) and the
    uses it allows, first in the report."""

    name = "verdict"

    def sections(self, report: ReportContext) -> list[Section]:
        section = Section(TITLE, lead=True, methods=METHODS.format(bound=report.bound))
        cutoffs = "; ".join(f"{k}: {v.format(bound=report.bound)}" for k, v in CUTOFFS.items())
        cards = []
        if report.backend_answers:
            chosen = estimator_choice(report.run_path, report.estimator)
            for inst_id, answers in report.backend_answers.items():
                instrument, people = report.rated[inst_id], report.human_items[inst_id]
                factors, problem = factor_structure(instrument)
                fits = {}
                for backend, part in answers.groupby("backend_id", sort=False):
                    fit = report.invariance_fits.get((inst_id, str(backend)))
                    if fit is None and not problem:
                        fit = invariance_against_people(instrument, part, people, estimator=chosen, factors=factors)
                    if fit is not None:
                        fits[backend] = fit
                card = scorecard(answers, people, instrument, by="backend_id", bound=report.bound,
                                 structure=fits if fits else False)
                cards.append(card)
                section.add_table(f"Scorecard: {inst_id}, each model against people ({len(people):,} people)",
                                  card, view="scorecard")
        elif not report.norm_comparison.empty:
            card = norm_scorecard(report.norm_comparison, bound=report.bound)
            cards.append(card)
            for inst_id, part in card.groupby("instrument", sort=False):
                section.add_table(f"Scorecard: {inst_id}, each model against published norms", part, view="scorecard")
            section.readings.append("Only published norms were at hand, so only level and spread are judged; "
                                    "structure, distinguishability, style, relations and individuals need people's "
                                    "item answers (psyq report RUN --human INSTRUMENT=FILE).")
        if not cards:
            section.readings.append("No comparison with people is possible: no instrument of this run has people's "
                                    "answers (--human) or published norms.")
            return [section]
        card = pd.concat(cards, ignore_index=True)
        section.readings[:0] = use_sentences(card)
        if not (card["criterion"] == "individuals").any() and report.backend_answers:
            section.readings.append("No persona is a twin of one of the people (persona ids are no respondent ids), "
                                    "so whether a persona stands in for a particular person, and what twins are "
                                    "worth in people (prediction-powered inference), is not assessed.")
        section.note = "Cut-offs: " + cutoffs + "."
        return [section]
