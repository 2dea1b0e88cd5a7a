"""Scoring: from answers to scores, whoever answered.

A run's answers (:func:`load_run_scores`) and people's answers (:func:`score_humans`) are scored by
the same rules into one long format. People's answers are read from their files, cell by cell against
the instrument and through their codebook, by :mod:`.human_answers`, and handed over per instrument
as :class:`~psyq.analysis.scoring.human_data.HumanData` records (:mod:`.human_data`); :mod:`.score_table` turns it into one row per respondent for R
or SPSS, and :mod:`.stage_scores` scores the measures of a staged run (before, after).

May import: the psyq.engine rooms that read runs and files (files, store, trials, kinds, design,
results); never psyq.analysis.statistics or psyq.analysis.report.
"""
