"""The report section of LEAS-format scenes: levels, self/other/total sums per administration,
the change between administrations, how a judge model agrees with the lexicon, and how the
lexicon, judge models and people agree pair by pair (the agreement itself:
:func:`psyq.analysis.statistics.lexicon_agreement.judge_lexicon_agreement` and
:func:`psyq.analysis.statistics.lexicon_agreement.source_agreement`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from psyq.engine.design.instrument import Instrument
from psyq.engine.design.persona import BASELINE
from psyq.engine.kinds.scene import SceneItem, scene_levels, scene_others
from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, is_scene_answer, load_lexicon

from psyq.analysis.statistics.standin.design_verdict import leas_scorecard
from psyq.analysis.statistics.lexicon_agreement import (LEXICON, PEOPLE_POOLED, judge_lexicon_agreement,
                                                        lexicon_answer_levels, source_agreement)
from psyq.analysis.statistics.norms import COLUMNS as NORM_COLUMNS, compare_with_norms
from psyq.analysis.report.apa import is_missing, say_num, say_p, say_pct, sentence_case
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section


class SceneSection(ReportSection):
    """The section "Emotional awareness (LEAS-format scenes)", when the run has scene answers, and
    the verdict's ``leas_level`` card (:func:`add_leas_card`)."""

    name = "scene"
    kind = "scene"

    def sections(self, report: ReportContext) -> list[Section]:
        levels = scene_levels(report.table, report.instruments)
        if levels.empty:
            return []
        section = leas_section(levels, report.scores, report.instruments)
        flagged_into(section, levels, report.table)
        judge_agreement_into(section, report.table, report.judgements, report.instruments)
        add_leas_card(report, levels)
        return [section]


def add_leas_card(report: ReportContext, levels: pd.DataFrame) -> None:
    """Append the verdict's ``leas_level`` card (:func:`psyq.analysis.statistics.standin.design_verdict.leas_scorecard`)
    of the instruments with scene answers in `levels` to ``report.design_cards``: the LEAS sums against the
    instrument's norms (the norm samples the report compares, ``--norms``; the model answering as itself,
    one respondent, left out as in the questionnaires' verdict), or a ``not estimable`` row saying why none
    is compared (scenes psyq wrote, or no norm sample)."""
    leas = {i: report.instruments[i] for i in levels["instrument"].unique()}
    comparison = pd.DataFrame(columns=NORM_COLUMNS)
    if any(instrument.norms and instrument.content_source != "psyq" for instrument in leas.values()):
        scores = report.scores[report.scores["instrument"].isin(leas)
                               & (report.scores["respondent_id"].astype(str) != BASELINE.id)]
        comparison = compare_with_norms(scores, report.instruments, bound=report.bound, correction=report.correction,
                                        samples=report.choice)
    backends = [str(b) for b in levels["backend_id"].unique()]
    report.design_cards.append(leas_scorecard(comparison, leas, backends, bound=report.bound))


def leas_section(levels: pd.DataFrame, scores: pd.DataFrame, instruments: Mapping[str, Instrument]) -> Section:
    """Scene levels, self/other/total sums per repeat, and the change between administrations."""
    from scipy import stats
    section = Section("Emotional awareness (LEAS-format scenes)")
    leas_ids = list(levels["instrument"].unique())
    sums = scores[scores["instrument"].isin(leas_ids)]
    summary = (sums.groupby(["backend_id", "instrument", "repeat", "subscale"])["score"]
               .agg(n="count", mean="mean", sd="std").reset_index())
    section.add_table("Self, other and total sums per administration (repeat)", summary)
    for inst_id in leas_ids:
        inst = instruments[inst_id]
        n_scenes = sum(isinstance(i, SceneItem) for i in inst.items)
        total = sums[(sums["instrument"] == inst_id) & (sums["subscale"] == "total")]
        section.readings.append(
            f"{inst_id}: mean total {total['score'].mean():.1f} of a possible {5 * n_scenes} "
            f"(SD {total['score'].std():.1f}, {total['respondent_id'].nunique()} respondents), scored "
            "automatically with psyq's lexicon (an approximation of hand scoring: r = .99 with a "
            "single developer's hand scores on 131 answers, a set the scoring rules were written beside, "
            "not a held-out test).")
        if inst.content_source == "psyq":
            section.readings.append(f"{inst_id}: these scenes were written by psyq, not the official LEAS "
                                    "scenes; published LEAS norms do not apply and none are compared.")
        wide = total.pivot_table(index=["backend_id", "respondent_id"], columns="repeat", values="score")
        if wide.shape[1] >= 2:
            first, last = wide.columns[0], wide.columns[-1]
            paired = wide[[first, last]].dropna()
            if len(paired) >= 2:
                diff = paired[last] - paired[first]
                test = stats.ttest_rel(paired[last], paired[first])
                ci = test.confidence_interval()
                section.readings.append(
                    f"{inst_id}: from administration {first} to {last} the total changed by {diff.mean():+.2f} "
                    f"(95 % CI {ci.low:+.2f} to {ci.high:+.2f}, paired t({len(paired) - 1}) = {test.statistic:.2f}, "
                    f"p {say_p(test.pvalue)}), the repeated design of Elyoseph et al. (2023).")
    section.figures.append(("Distribution of LEAS levels", leas_level_chart(levels)))
    return section


def flagged_answers(levels: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Per backend, the scene answers (with text) and how many of them are flagged: a rule known to
    be fragile decided their lexicon level (:attr:`psyq.engine.kinds.scene.leas.AnswerScore.flags`),
    with how often each rule did. Columns ``backend_id, answers, flagged, share, rules``.

    Example:
        >>> levels = pd.DataFrame({"backend_id": ["b", "b"], "self_flags": ["negation", ""],
        ...                        "other_flags": ["", "whose; negation"]})
        >>> table = pd.DataFrame({"backend_id": "b", "item_id": ["s1:self", "s1:other", "s2:self", "s2:other"],
        ...                       "text": ["a", "b", "c", "d"]})
        >>> row = flagged_answers(levels, table).iloc[0]
        >>> int(row.answers), int(row.flagged), float(row.share), row.rules
        (4, 2, 0.5, 'negation 2, whose 1')
    """
    answered = table[is_scene_answer(table["item_id"]) & table["text"].map(lambda x: isinstance(x, str) and x.strip() != "")]
    rows = []
    for backend, group in levels.groupby("backend_id", sort=False):
        flags = [f for f in list(group["self_flags"]) + list(group["other_flags"]) if isinstance(f, str) and f]
        n = int((answered["backend_id"] == backend).sum())
        counts = pd.Series([rule for f in flags for rule in f.split("; ")]).value_counts()
        rows.append({"backend_id": backend, "answers": n, "flagged": len(flags),
                     "share": len(flags) / n if n else np.nan,
                     "rules": ", ".join(f"{rule} {count}" for rule, count in counts.items())})
    return pd.DataFrame(rows, columns=["backend_id", "answers", "flagged", "share", "rules"])


def flagged_into(section: Section, levels: pd.DataFrame, table: pd.DataFrame) -> None:
    """Add the share of flagged scene answers per backend to `section` (:func:`flagged_answers`)."""
    flagged = flagged_answers(levels, table)
    section.add_table("Scene answers whose lexicon level a fragile rule decided (flagged), per backend", flagged)
    for row in flagged.itertuples():
        section.readings.append(
            f"{row.backend_id}: {say_pct(row.share)} of {row.answers} scene answers are flagged ({row.flagged}): a "
            "rule known to be fragile (negation, irony, another sense, whose feeling, a feeling taken back, "
            "near-synonyms, a misspelling) decided their level" + (f" ({row.rules})" if row.rules else "")
            + "; psyq rating-sheet RUN sheet.xlsx --rubric leas_level --flagged gives them to people to score.")


def judge_agreement_into(section: Section, table: pd.DataFrame, judgements: pd.DataFrame,
                         instruments: Mapping[str, Instrument]) -> None:
    """Add the agreement of judge-model levels with the lexicon levels (per answer) to `section`,
    then the agreement of every pair of sources, lexicon, judges and people (:func:`source_agreement_into`)."""
    scene = judgements[is_scene_answer(judgements["item_id"])]
    if scene.empty:
        section.readings.append("No judge model has scored these answers (psyq judge RUN --rubric leas_level "
                                "adds one, stored beside the lexicon scores).")
        return
    lexicon_levels = lexicon_answer_levels(table, load_lexicon(DEFAULT_LEXICON), scene_others(instruments))
    agreement = judge_lexicon_agreement(lexicon_levels, scene)
    section.add_table("Judge model against the lexicon, per answer (levels 0–4)", agreement)
    for row in agreement.itertuples():
        section.readings.append(
            f"{row.instrument}: judge '{row.judge_id}' ({'' if is_missing(row.judge_model) else f'{row.judge_model}, '}"
            f"rubric {row.rubric_id}) agrees with the "
            f"lexicon on {say_pct(row.exact)} of {row.n} answers (within one level: {say_pct(row.within_one)}); "
            f"r = {say_num(row.pearson_r)}, ICC(A,1) = {say_num(row.icc_a1)}; the judge scores "
            f"{row.mean_difference:+.2f} levels higher on average.")
    source_agreement_into(section, lexicon_levels, scene)


def source_agreement_into(section: Section, lexicon_levels: pd.DataFrame, judgements: pd.DataFrame) -> None:
    """Add the agreement of every pair of sources of LEAS levels (:func:`source_agreement`: the
    lexicon, each judge model, each person, all people pooled) to `section`, a sentence per pair."""
    agreement = source_agreement(lexicon_levels, judgements)
    if agreement.empty:
        return
    section.add_table("Agreement of LEAS scores: lexicon, judge and people (per answer, levels 0–4; "
                      "weighted κ with linear and quadratic weights)", agreement)
    for row in agreement.itertuples():
        section.readings.append(source_pair_reading(row))


def source_pair_reading(row) -> str:
    """The sentence of one row of :func:`source_agreement`: what is not estimable is said once, by
    its note.

    Example:
        >>> row = pd.Series({"source_a": "lexicon", "source_b": "people:all", "n": 4, "exact": .75,
        ...                  "within_one": 1.0, "kappa_linear": .5, "kappa_quadratic": .6, "r": .7, "icc": .65,
        ...                  "note": "people:all: 4 levels of 2 answers, each person's level one pair"})
        >>> print(source_pair_reading(row))
        The lexicon and all people pooled give the same level to 75 % of 4 pairs of levels (within one level: 100 %); weighted κ = 0.50 (linear weights; quadratic 0.60), r = 0.70, ICC(A,1) = 0.65; people:all: 4 levels of 2 answers, each person's level one pair.
        >>> flat = row.copy()
        >>> flat[["kappa_linear", "kappa_quadratic", "r", "icc"]] = float("nan")
        >>> flat["note"] = "κ, r and ICC not estimable: people:h3 gives every answer level 3"
        >>> print(source_pair_reading(flat))
        The lexicon and all people pooled give the same level to 75 % of 4 pairs of levels (within one level: 100 %); κ, r and ICC not estimable: people:h3 gives every answer level 3.
    """
    pair = f"{sentence_case(_said_source(row.source_a))} and {_said_source(row.source_b)}"
    if not row.n:
        return f"{pair} scored no answer in common: nothing to compare."
    what = "pairs of levels" if PEOPLE_POOLED in (row.source_a, row.source_b) else "answers"
    parts = [f"{pair} give the same level to {say_pct(row.exact)} of {row.n} {what} "
             f"(within one level: {say_pct(row.within_one)})"]
    figures = []
    if not is_missing(row.kappa_linear):
        figures.append(f"weighted κ = {say_num(row.kappa_linear)} (linear weights; quadratic {say_num(row.kappa_quadratic)})")
    if not is_missing(row.r):
        figures.append(f"r = {say_num(row.r)}, ICC(A,1) = {say_num(row.icc)}")
    if figures:
        parts.append(", ".join(figures))
    if not is_missing(row.note) and row.note:
        parts.append(row.note)
    return "; ".join(parts) + "."


def _said_source(source: str) -> str:
    """A source of :func:`source_agreement` in a sentence: "the lexicon", "judge 'm'", "person 'h1'"."""
    if source == LEXICON:
        return "the lexicon"
    if source == PEOPLE_POOLED:
        return "all people pooled"
    kind, _, name = source.partition(":")
    return f"{'judge' if kind == 'judge' else 'person'} '{name}'"


def leas_level_chart(levels: pd.DataFrame) -> Figure:
    """Share of scene answers at each LEAS level, for self, other and the scene total (0–5).

    `levels` is :func:`psyq.engine.kinds.scene.scene_levels` output (one row per scene answer set).
    """
    fig = Figure(figsize=(7.5, 3.6))
    ax = fig.add_subplot()
    columns = [("self_level", "self"), ("other_level", "other"), ("total_level", "total")]
    width = 0.27
    x = np.arange(6)
    for k, (col, name) in enumerate(columns):
        share = levels[col].value_counts(normalize=True).reindex(range(6), fill_value=0.0)
        ax.bar(x + (k - 1) * width, share.to_numpy(), width, label=name)
    ax.set_xticks(x, [str(i) for i in range(6)])
    ax.set_xlabel("LEAS level (0 no emotion word … 4 differentiated blend; 5 total only)")
    ax.set_ylabel("share of scenes")
    ax.set_title(f"LEAS levels over {len(levels)} scene answers (lexicon scoring)")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig
