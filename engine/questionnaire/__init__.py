"""Questionnaires for people: the instruments of a study, as the personas were asked them, written
for a survey platform (``psyq questionnaire STUDY --to FORMAT --out DIR``), with the codebooks that
read the platform's answer exports back.

- :mod:`~psyq.engine.questionnaire.form`: what the personas were shown, read once from a study or an
  instrument (instructions, item texts, option labels and their order, per-item or matrix, item
  order, the cohort's attributes as demographic questions), the part every format shares;
- :mod:`~psyq.engine.questionnaire.base`: :class:`QuestionnaireFormat`, and the codebooks
  (``codebook/1``) each format writes beside its files;
- one module per format, registered here by the name ``--to`` uses:
  :mod:`~psyq.engine.questionnaire.jspsych` (a folder that runs from disk, jsPsych shipped with psyq
  in ``assets/``), :mod:`~psyq.engine.questionnaire.redcap` (a data dictionary CSV) and
  :mod:`~psyq.engine.questionnaire.qualtrics` (a ``.qsf`` survey);
- :mod:`~psyq.engine.questionnaire.gather`: people's jsPsych answer files joined into one CSV.

A new format is one module with a subclass of :class:`QuestionnaireFormat` and a ``register(...)``
line at the end of this file.

Example:
    >>> format_names()
    ('jspsych', 'redcap', 'qualtrics')

May import: every room above it in engine/__init__.py (files, trials, design …). Never: view, cli,
or psyq.analysis.
"""

from __future__ import annotations

from psyq.engine.questionnaire import jspsych, qualtrics, redcap   # the built-in formats
from psyq.engine.questionnaire.base import QuestionnaireFormat
from psyq.engine.questionnaire.registry import format_names, get_format, register

register(jspsych.JsPsychFormat())
register(redcap.RedcapFormat())
register(qualtrics.QualtricsFormat())

__all__ = ["QuestionnaireFormat", "register", "get_format", "format_names"]
