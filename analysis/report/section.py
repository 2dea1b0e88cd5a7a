"""A section of the report (a title, readings, tables and figures) and what builds one.

Every section of the report is built by a :class:`ReportSection` registered in
:mod:`psyq.analysis.report.sections`, in the order the report shows them; each returns
:class:`Section` objects, so the renderers print them all the same way.

Example:
    >>> section = Section("Reliability", readings=["IRI PT: α = .79."])
    >>> section.title, section.tables
    ('Reliability', [])
    >>> section.add_table("Internal consistency", pd.DataFrame(), view="internal_consistency")
    >>> [(table.caption, table.view) for table in section.tables]
    [('Internal consistency', 'internal_consistency')]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from psyq.analysis.report.views import PLAIN, VIEWS

if TYPE_CHECKING:
    from psyq.analysis.report.context import ReportContext


class Table(tuple):
    """A table of a section: its caption and frame (``caption, frame = table``) and `view`, the
    name of the view of :data:`psyq.analysis.report.views.VIEWS` that prints it. The section names
    the view; a table added without one is printed by the plain view
    (:data:`~psyq.analysis.report.views.PLAIN`), whatever its columns.

    Example:
        >>> caption, frame = table = Table("Regression", pd.DataFrame(), view="regression")
        >>> caption, table.view, Table("Any", frame).view
        ('Regression', 'regression', 'plain')
    """

    view: str

    def __new__(cls, caption: str, frame: pd.DataFrame, view: str = PLAIN) -> "Table":
        if view not in VIEWS:
            raise KeyError(f"table {caption!r}: no view {view!r}; the views are {', '.join(VIEWS)}")
        table = super().__new__(cls, (caption, frame))
        table.view = view
        return table

    def __getnewargs__(self) -> tuple[str, pd.DataFrame, str]:   # copies and pickles keep the view
        return (self[0], self[1], self.view)

    @property
    def caption(self) -> str:
        return self[0]

    @property
    def frame(self) -> pd.DataFrame:
        return self[1]


@dataclass
class Section:
    """A titled part of the report: readings (sentences), tables and figures.

    Tables are added with :meth:`add_table`, which names the view that prints each; (caption,
    frame) pairs given to the constructor are tables with the plain view.
    """

    title: str
    readings: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, Any]] = field(default_factory=list)   # (caption, matplotlib Figure)
    note: str | None = None
    methods: str | None = None    # a sentence the methods paragraph adds (estimator, software)
    details: list[str] = field(default_factory=list)   # readings folded away (under <details> in HTML)
    lead: bool = False            # shown first, before the methods paragraph (the verdict)

    def __post_init__(self) -> None:
        self.tables = [t if isinstance(t, Table) else Table(*t) for t in self.tables]

    def add_table(self, caption: str, frame: pd.DataFrame, view: str = PLAIN) -> None:
        """Add a numbered table printed by the view named `view` (a key of
        :data:`psyq.analysis.report.views.VIEWS`; the plain view when not named)."""
        self.tables.append(Table(caption, frame, view))


class ReportSection:
    """What builds one part of the report. Subclass it in ``analysis/report/sections/<name>.py``,
    set `name`, override :meth:`sections` (and :meth:`applies` when the part is not for every run),
    and register an instance in the order list of :mod:`psyq.analysis.report.sections`.

    A part that reports the items of one item kind names it in `kind` (the
    :attr:`psyq.engine.kinds.ItemKind.name`); when it reads the ``--human`` files of its
    instruments itself (e.g. perceiver ratings), `human_data` says what they hold,
    and those files are not read as questionnaire answers.
    """

    name: ClassVar[str]
    """The part's name in the registry (e.g. "norms")."""
    kind: ClassVar[str | None] = None
    """The item kind whose instruments this part reports, or None."""
    human_data: ClassVar[str | None] = None
    """What ``--human INSTRUMENT=CSV`` holds for the kind's instruments when this part reads those
    files itself (e.g. "perceiver ratings"); None: they are questionnaire item answers."""
    data_label: ClassVar[str] = ""
    """The kind's instruments in plain words, plural, for messages about `--human`."""
    takes_targets: ClassVar[bool] = False
    """True when ``--targets INSTRUMENT=CSV`` (targets' own reports) applies to the kind's instruments."""

    def applies(self, report: ReportContext) -> bool:
        """Whether the part is built for this run: by default for runs without stages (a staged
        run holds one measure per stage and situation: its report is the change section)."""
        return not report.staged

    def sections(self, report: ReportContext) -> list[Section]:
        """The report sections of this part (none when it has nothing to say about the run)."""
        return []
