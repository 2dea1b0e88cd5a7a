"""The comparison with published human norms: every chosen norm sample, how respondents matched
its groups, and every norm source with how its numbers were verified."""

from __future__ import annotations

from psyq.engine.design.instrument import Instrument

from psyq.analysis.report import plots
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.readings import matching_warnings, norm_readings
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.statistics import norms


def score_range(instrument: Instrument, subscale_id: str) -> tuple[float, float] | None:
    """The lowest and highest score a subscale can take on its own metric (a sum of k items: k × the
    scale's ends; a mean: the scale's ends); None for a score of another kind.

    Example:
        >>> from psyq import load_instrument
        >>> score_range(load_instrument("iri"), "PT")
        (0, 28)
    """
    sub = next((s for s in instrument.rating_subscales if s.id == subscale_id), None)
    if sub is None or len(instrument.scale) < 2 or sub.score not in ("sum", "mean"):
        return None
    k = 1 if sub.score == "mean" else len(instrument.subscale_items(subscale_id))
    return k * instrument.scale_min, k * instrument.scale_max


class NormSection(ReportSection):
    """"Comparison with human norms": Welch t, Hedges g, corrected p and equivalence per norm group,
    with a warning when some respondents matched no group, and the sources of every norm."""

    name = "norms"

    def sections(self, report: ReportContext) -> list[Section]:
        scores, instruments, choice = report.scores, report.instruments, report.choice
        comp = report.norm_comparison
        section = Section("Comparison with human norms")
        if not any(inst.norms for inst in instruments.values()):
            section.readings.append("No instrument in this run carries published norms (content written by psyq "
                                    "never does), so no norm comparison is made.")
            return [section]
        matching = norms.group_matching(scores, instruments, samples=choice)
        unmatched = norms.unmatched_respondents(scores, instruments, samples=choice)
        for message in matching_warnings(matching, unmatched_ids=unmatched):
            section.readings.append("Warning: " + message)
            report.say(message)
        if comp.empty:
            section.readings.append("No comparison with norms was made: no respondent has a score on a normed "
                                    "subscale.")
        else:
            # One sentence per norm group and subscale: the table's rows in words, folded away.
            section.details.extend(norm_readings(comp, bound=report.bound, correction=report.correction))
            section.add_table("Cohort against norms (Welch t, Hedges g with 95 % CI, "
                              f"{report.correction} correction over all rows of all norm samples, TOST within "
                              f"±{report.bound} SD; norm_verified: how the norm numbers were checked)", comp,
                              view="norm_comparison")
            for inst_id in comp["instrument"].unique():
                section.figures.append((f"Cohort means (95 % CI) against norm mean ± 1 SD: {inst_id}",
                                        plots.profile_plot(comp, inst_id)))
                for sub in comp.loc[comp["instrument"] == inst_id, "subscale"].unique():
                    section.figures.append((f"Cohort scores over the norm distribution: {inst_id} {sub}",
                                            plots.distribution_plot(scores, comp, inst_id, sub,
                                                                    score_range(instruments[inst_id], sub))))
        if not matching.empty:
            section.add_table("Norm group matching (respondents per group of each norm sample; those "
                              "matching no group are compared with the sample's whole-sample group, or "
                              "'pooled' when psyq pools the groups)", matching, view="group_matching")
        section.note = "Norm sources: " + "; ".join(self.source_notes(report, comp))
        return [section]

    @staticmethod
    def source_notes(report: ReportContext, comp) -> list[str]:
        """One note per norm sample of every instrument: its source, verification, and why it was
        not compared when it was not."""
        compared = set() if comp.empty else set(zip(comp["instrument"], comp["norm_sample"]))
        chosen = norms.chosen_samples(report.instruments, report.choice)
        notes = []
        for inst_id, inst in report.instruments.items():
            for sample in inst.norms:
                flag = norms.verification_flag(sample.verified)
                status = f"verified: {sample.verified}" + (f" — {flag.upper()}" if flag else "")
                if (inst_id, sample.id) in compared:
                    used = ""
                elif sample not in chosen[inst_id]:
                    used = " NOT COMPARED: left out by the choice of norm samples (--norms or the study's `norms`)."
                else:
                    used = " NOT COMPARED: no respondent has a score on its subscales."
                notes.append(f"{inst_id} {sample.id} [{status}]: {inst.citations.get(sample.citation, sample.citation)} "
                             f"({sample.table}; {sample.population.strip()}; n = {sample.n}). "
                             f"Verification: {sample.verification.strip()}{used}")
        return notes
