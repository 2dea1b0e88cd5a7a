"""Administering a study.

`psyq run` and `psyq plan`: the trials planned, sent with corrective and budget re-asks, multi-stage conversations, provider batches, progress, command-line overrides, token counting.

May import: files, backends, store, trials, kinds, design, results (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
