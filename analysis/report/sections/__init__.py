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

and add ``note.NoteSection()`` to :data:`ORDER` below where the report should show it.

Example:
    >>> [part.name for part in report_sections()][:4]
    ['study', 'missing', 'change', 'norms']
    >>> report_section("twins").kind is None, report_section("vignette").takes_targets
    (True, True)
"""

from __future__ import annotations

from psyq.analysis.report.section import ReportSection
from psyq.analysis.report.sections import (change, instrument, norms, people, response, same_construct, scene, study,
                                           twins, vignette)

ORDER: tuple[ReportSection, ...] = (
    study.StudySection(), study.MissingSection(), change.ChangeSection(), norms.NormSection(),
    scene.SceneSection(), vignette.VignetteSection(), response.ResponseSection(),
    instrument.ReliabilitySection(), instrument.FidelitySection(), instrument.EffectsSection(),
    instrument.ItemResponsesSection(), people.PeopleSection(), people.ConstructValiditySection(),
    same_construct.SameConstructSection(), twins.TwinsSection(),
)
"""The report's sections, in the order it shows them."""

_BY_NAME = {part.name: part for part in ORDER}
assert len(_BY_NAME) == len(ORDER), "two report sections share a name"


def report_sections() -> tuple[ReportSection, ...]:
    """The registered section builders, in the order of the report.

    Example:
        >>> [part.name for part in report_sections()][-2:]
        ['same_construct', 'twins']
    """
    return ORDER


def report_section(name: str) -> ReportSection:
    """The section builder registered as `name` (KeyError naming the registered ones otherwise)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no report section '{name}'; registered: {', '.join(_BY_NAME)}") from None


__all__ = ["ORDER", "report_section", "report_sections"]
