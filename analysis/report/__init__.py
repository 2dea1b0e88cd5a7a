"""The report: sections built from the statistics, put into words, figures and HTML/Markdown.

:func:`build_sections` computes every section of a run's report; :func:`write_report` writes
``report.html`` (self-contained, figures embedded) and ``report.md``. Each section has one builder
in :mod:`.sections`, registered in the order the report shows them; numbers are written in one
vocabulary (APA style, :mod:`.apa`); :mod:`.methods` writes the methods paragraph and
:mod:`.plots` the figures.

May import: psyq.analysis.statistics, psyq.analysis.scoring and the psyq.engine rooms that read
runs and files (files, store, trials, kinds, design, results, judging).
"""

from psyq.analysis.report.build import build_sections, methods_text, write_report
from psyq.analysis.report.context import ReportContext, items_by_instrument
from psyq.analysis.report.render import TABLE_DIR, render_html, render_markdown, table_files
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.report.sections import report_section, report_sections

__all__ = ["ReportContext", "ReportSection", "Section", "TABLE_DIR", "build_sections", "items_by_instrument",
           "methods_text", "render_html", "render_markdown", "report_section", "report_sections", "table_files",
           "write_report"]
