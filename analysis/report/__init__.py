"""The report: sections built from the statistics, put into words, figures and HTML/Markdown.

:func:`build_sections` computes every section of a run's report; :func:`write_report` writes
``report.html`` (self-contained, figures embedded) and ``report.md``, and ``report.docx`` for Word
when asked (:func:`render_docx`, APA 7 tables). Each section has one builder
in :mod:`.sections`, registered in the order the report shows them; numbers are written in one
vocabulary (APA style, :mod:`.apa`) and tables printed by the view their section names
(:mod:`.views`, laid out by :mod:`.tables`); :mod:`.methods` writes the methods paragraph and
:mod:`.plots` the figures.

The names below are imported on first use (PEP 562, :mod:`psyq.engine.lazy`), so that the methods
paragraph alone (:func:`methods_text`, as ``psyq view`` shows it) loads neither the sections nor the figures.

May import: psyq.analysis.statistics, psyq.analysis.scoring and the psyq.engine rooms that read
runs and files (files, store, trials, kinds, design, results, judging), and psyq.engine.lazy.
"""

from psyq.engine.lazy import lazy_names

# Imported on first use (psyq.engine.lazy): the methods paragraph (psyq view's methods page) needs
# neither the sections nor the figures.
_EXPORTS = {
    "psyq.analysis.report.build": ["build_sections", "write_report"],
    "psyq.analysis.report.methods": ["methods_text"],
    "psyq.analysis.report.context": ["ReportContext", "items_by_instrument"],
    "psyq.analysis.report.render": ["TABLE_DIR", "render_html", "render_markdown", "table_files"],
    "psyq.analysis.report.section": ["ReportSection", "Section"],
    "psyq.analysis.report.sections": ["report_section", "report_sections"],
    "psyq.analysis.report.word": ["render_docx"],
}
__getattr__, __dir__ = lazy_names(__name__, {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = ["ReportContext", "ReportSection", "Section", "TABLE_DIR", "build_sections", "items_by_instrument",
           "methods_text", "render_docx", "render_html", "render_markdown", "report_section", "report_sections",
           "table_files", "write_report"]
