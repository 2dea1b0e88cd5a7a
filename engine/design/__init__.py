"""What a study is.

Instruments, cohorts and personas (also drawn from a human data file: cohort_data.py, which reads the file through its codebook, psyq.engine.files.codebook), the study file with its protocol and backends, its conditions (conditions.py: factors whose levels change part of it, crossed or listed), situation sets, price tables, perturbation sets and perturbed prompts.

May import: files, backends, store, trials, kinds (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
