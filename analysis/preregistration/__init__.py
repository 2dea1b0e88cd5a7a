"""A study planned before it is run, and the run checked against the plan.

``psyq preregister STUDY --out DIR`` writes a pre-registration in the sections of OSF's and
AsPredicted's templates (``preregistration.md``, ``preregistration.docx`` and
``preregistration.json``); ``psyq report RUN
--preregistration DIR`` lists, first in the report, every way the run and its report differ from
that plan.

* :mod:`.record` — the machine-readable file (format ``preregistration/1``): its model, how it is
  read (``file:line:column`` errors) and the verdict's cut-offs as numbers;
* :mod:`.contents` — what a study plans, gathered into that record: the question and the uses the
  verdict judges, the instruments and their sources, the cohort and how it is drawn, the models
  with every setting as ``psyq run`` resolves them, the analysis plan from the code's own
  defaults, the planned size with the verdict's power or the intervals' widths, every file's
  SHA-256;
* :mod:`.document` — the record as the report's :class:`~psyq.analysis.report.section.Section`
  objects, rendered as Markdown and Word (the report's renderers), written with the JSON beside them;
* :mod:`.deviations` — a run against the record: one row per difference (``kind, field, planned,
  run``), no report text; the report's section "Deviations from the pre-registration" says them.

May import: psyq.engine's reading rooms (files, store, trials, kinds, design, results; never
administer or backends: the command line resolves the backends as ``psyq run`` would and hands
the planned manifest over), psyq.analysis.scoring and psyq.analysis.statistics (the verdict's
constants and power); :mod:`.contents` and :mod:`.document` also import psyq.analysis.report (the
verdict's uses, :class:`Section`, the Markdown and Word renderers). :mod:`.record` and :mod:`.deviations`
import no report module, so that the report may import them.
"""
