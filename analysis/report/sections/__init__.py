"""What each kind of item adds to the report: a small registry of report contributions.

A kind's format, asking, parsing and scoring live in :mod:`psyq.engine.kinds`; what the report shows
about it (its section, tables and figures) cannot, since it uses the report's sections and
:mod:`psyq.analysis.report.plots`, and engine never imports analysis. So each kind with a report section has
a module here, registered under the same name as its :class:`psyq.engine.kinds.ItemKind`, and
:func:`psyq.analysis.report.build_sections` iterates over :func:`report_kinds` (after the norm
comparison, in registration order) instead of naming kinds.

A kind with nothing particular to report needs no module here: its scores (if its
:meth:`~psyq.engine.kinds.ItemKind.score` gives any) go through the shared sections like every other.

How to add a kind's section (for the worked example ``note`` of :mod:`psyq.engine.kinds`, say a count
of answered notes), write ``analysis/kinds/note.py``::

    from psyq.engine.kinds import instruments_with
    from . import KindReport, ReportInput

    class NoteReport(KindReport):
        name = "note"                                   # the item kind's name

        def sections(self, run: ReportInput) -> list:
            ids = instruments_with(self.name, run.instruments)
            if not ids:
                return []
            section = run.section("Notes")              # the report's own Section class
            notes = {item.id for i in ids for item in run.instruments[i].items if item.kind == self.name}
            rows = run.table[run.table["instrument"].isin(ids) & run.table["item_id"].isin(notes)]
            section.readings.append(f"{(rows['status'] == 'answered').sum()} notes were answered.")
            return [section]

and register it at the end of this file: ``from . import note`` and ``register_report(note.NoteReport())``.

Example:
    >>> [part.name for part in report_kinds()]
    ['scene', 'vignette', 'response']

May import: psyq.analysis and the psyq.engine rooms psyq.analysis reads (files, store, trials, kinds, design, results, judging).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from psyq.engine.design.instrument import Instrument


@dataclass(frozen=True)
class ReportInput:
    """What a kind's report contribution is given: the run's answers, instruments, scores and
    judgements, the files the user passed for the kind's instruments, and the report's own
    section type and number formats (passed in, so that the kinds' sections look like the
    report's others without importing :mod:`psyq.analysis.report`, which imports this package)."""

    run_path: Path
    table: pd.DataFrame                      # the exported answers (psyq.engine.export_table)
    instruments: Mapping[str, Instrument]
    scores: pd.DataFrame                     # every kind's subscale scores, long format
    judgements: pd.DataFrame                 # psyq.engine.judging.answer_judge.read_judgements
    human_csv: Mapping[str, str | Path]      # --human files of this kind's instruments (KindReport.human_data)
    targets_csv: Mapping[str, str | Path]    # --targets files
    section: Callable[[str], Any]            # psyq.analysis.report.Section
    num: Callable[[float], str]              # a statistic, or "not computable"
    pct: Callable[[float], str]              # a share as a percentage
    fmt_p: Callable[[float], str]            # a p value


class KindReport:
    """A kind's part of the report. Subclass it in ``analysis/report/sections/<kind>.py``, set `name` to the
    item kind's name, override :meth:`sections`, and register an instance at the end of this file."""

    name: ClassVar[str]
    """The item kind (:attr:`psyq.engine.kinds.ItemKind.name`) this contribution reports."""
    human_data: ClassVar[str | None] = None
    """What ``--human INSTRUMENT=CSV`` holds for the kind's instruments when the kind reads those
    files itself (e.g. "perceiver ratings of vignettes"); None: they are questionnaire item answers."""
    data_label: ClassVar[str] = ""
    """The kind's instruments in plain words, plural, for messages about `--human` (e.g. "vignettes")."""
    takes_targets: ClassVar[bool] = False
    """True when ``--targets INSTRUMENT=CSV`` (targets' own reports) applies to the kind's instruments."""

    def sections(self, run: ReportInput) -> list[Any]:
        """The report sections about this kind's items in the run (none when it has none)."""
        return []


_REPORTS: dict[str, KindReport] = {}


def register_report(part: KindReport) -> KindReport:
    """Make `part` the report contribution of the item kind `part.name`; returns it."""
    if part.name in _REPORTS and _REPORTS[part.name] is not part:
        raise ValueError(f"a report contribution for item kind '{part.name}' is registered already")
    _REPORTS[part.name] = part
    return part


def report_kinds() -> tuple[KindReport, ...]:
    """The registered report contributions, in registration order (the order of their sections)."""
    return tuple(_REPORTS.values())


from psyq.analysis.report.sections import scene, vignette  # noqa: E402  (the built-in kinds' sections, in this order)

register_report(scene.SceneReport())
register_report(vignette.VignetteReport())

from psyq.analysis.report.sections import response  # noqa: E402  (rated replies: issue 14)

register_report(response.ResponseReport())

__all__ = ["KindReport", "ReportInput", "register_report", "report_kinds"]
