"""Judging with a model, and by people.

A judge model's levels for free-text answers (answer_judge) and ratings of replies on rubric dimensions (reply_judge), rating sheets for human raters (rating_sheet: replies; answer_sheet: answers, all or only those an automatic score flags, read back as judgements), replies rewritten by perturbation rules.

May import: files, backends, store, trials, kinds, design, results, administer (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
