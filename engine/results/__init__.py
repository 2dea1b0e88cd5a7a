"""Reading what runs gave.

A run's answers as a tidy table (export), its judgements, the runs of a folder, the tokens they used, and runs imported from other tools. People's answers are read in psyq.analysis.scoring.human_answers, beside the people's data records.

May import: files, backends, store, trials, kinds, design, bundle (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
