"""Every section of the report, one builder each, registered in the order the report shows them.

A builder is a :class:`~psyq.analysis.report.section.ReportSection`: it says whether it applies to
a run (:meth:`~psyq.analysis.report.section.ReportSection.applies`) and returns its sections from
the run's :class:`~psyq.analysis.report.context.ReportContext`. The item kinds' sections (scene,
vignette, response) come after the norm comparison, as each kind's items are reported before the
analyses of rating items.

How to add a section (say a count of answered notes, for the worked example item kind ``note`` of
:mod:`psyq.engine.kinds`): write ``analysis/report/sections/note.py``::

    from psyq.analysis.report.context import ReportContext
    from psyq.analysis.report.section import ReportSection, Section

    class NoteSection(ReportSection):
        name = "note"
        kind = "note"                                   # the item kind it reports, if any

        def sections(self, report: ReportContext) -> list[Section]:
            ids = report.kind_instruments(self.kind)
            if not ids:
                return []
            notes = {i.id for n in ids for i in report.instruments[n].items if i.kind == self.kind}
            rows = report.table[report.table["item_id"].isin(notes)]
            return [Section("Notes", readings=[f"{(rows['status'] == 'answered').sum()} notes were answered."])]

and register ``note.NoteSection()`` in :data:`SECTIONS` below where the report should show it.

Example:
    >>> [part.name for part in report_sections()][:4]
    ['deviations', 'study', 'missing', 'conditions']
    >>> report_section("twins").kind is None, report_section("vignette").takes_targets
    (True, True)
"""

from __future__ import annotations

from psyq.engine.registry import Registry

from psyq.analysis.report.section import ReportSection
from psyq.analysis.report.sections import (change, conditions, deviations, instrument, materials, norms, people,
                                           response, same_construct, scene, study, twins, verdict, vignette)

SECTIONS: Registry[ReportSection] = Registry("report section")
"""The report's section builders, registered in the order the report shows them."""

# The deviations from a pre-registration (only with --preregistration) come first of all, before the verdict.
for part in (deviations.DeviationsSection(), study.StudySection(), study.MissingSection(),
             conditions.ConditionsSection(), change.ChangeSection(),
             norms.NormSection(),
             scene.SceneSection(), vignette.VignetteSection(), response.ResponseSection(),
             instrument.ReliabilitySection(), instrument.FidelitySection(), instrument.EffectsSection(),
             instrument.ItemResponsesSection(), people.PeopleSection(), people.ConstructValiditySection(),
             same_construct.SameConstructSection(), twins.TwinsSection(),
             # built after the others, from what they computed; shown first (Section.lead)
             verdict.VerdictSection(),
             # the appendix, built last: its GUIDE-LLM checklist looks for its places in every other section
             materials.MaterialsSection()):
    SECTIONS.register(part)


def report_sections() -> tuple[ReportSection, ...]:
    """The registered section builders, in the order of the report.

    Example:
        >>> [part.name for part in report_sections()][-3:]
        ['twins', 'verdict', 'materials']
    """
    return SECTIONS.values()


def report_section(name: str) -> ReportSection:
    """The section builder registered as `name` (a KeyError naming the registered ones otherwise)."""
    return SECTIONS.get(name)


__all__ = ["SECTIONS", "report_section", "report_sections"]
