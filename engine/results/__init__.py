"""Reading what runs gave.

A run's answers as a tidy table (export), the runs of a folder, the tokens they used, runs imported from other tools, and human answers read in the same shape.

May import: files, backends, store, trials, kinds, design (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
