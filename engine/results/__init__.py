"""Reading what runs gave.

A run's answers as a tidy table (export), the runs of a folder, the tokens they used, runs imported from other tools, and human answers read in the same shape (with the codebook that says how a human data file names its columns and codes its values, and a check of its keying).

May import: files, backends, store, trials, kinds, design (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
