"""Persona scores against published human norms, in three steps:

* :mod:`.summary` — a norm group's mean, SD and n on a subscale's scoring metric (pooled from the
  published groups where needed), and Welch's t, Hedges' g and TOST from summary statistics;
* :mod:`.groups` — which norm samples are compared and which respondents fall into which group;
* :mod:`.comparison` — :func:`compare_with_norms` (one row per backend × subscale × norm sample ×
  group) and :func:`respondent_z` (each respondent within their group).

Imports run one way: summary ← groups ← comparison. The report's sentence on each row is
:func:`psyq.analysis.report.readings.norm_readings`.

Checked in tests/test_norms.py (Welch's t, Hedges' g and TOST against formulas written out there and
pingouin and scipy on raw data built to the given means and SDs; Zhao et al.'s (2020) published
Table 2 reproduced) and tests/test_norm_samples.py (norm samples, group matching and the norm
functions on scored human data, against numbers computed there with numpy or by hand).

Example
-------
>>> from psyq.engine.design.instrument import load_instrument
>>> [s.id for s in chosen_samples({"iri": load_instrument("iri")}, ["davis1980"])["iri"]]
['davis1980']
"""

from psyq.analysis.statistics.norms.comparison import COLUMNS, CORRECTIONS, compare_with_norms, respondent_z
from psyq.analysis.statistics.norms.groups import (FLAGS, HUMAN, MISMATCH_COLUMNS, SCORE_COLUMNS, SampleChoice,
                                                   as_norm_scores, chosen_samples, condition_holds, describe_condition,
                                                   group_matching, match_group, unmatched_respondents,
                                                   value_mismatches, verification_flag, whole_sample_group)
from psyq.analysis.statistics.norms.summary import (POOLED, NormStats, hedges_g, norm_stats, pool_groups,
                                                    tost_from_summary, welch_from_summary)

__all__ = ["COLUMNS", "CORRECTIONS", "FLAGS", "HUMAN", "MISMATCH_COLUMNS", "POOLED", "SCORE_COLUMNS", "NormStats",
           "SampleChoice", "as_norm_scores", "chosen_samples", "compare_with_norms", "condition_holds",
           "describe_condition", "group_matching", "hedges_g", "match_group", "norm_stats", "pool_groups",
           "respondent_z", "tost_from_summary", "unmatched_respondents", "value_mismatches", "verification_flag",
           "welch_from_summary", "whole_sample_group"]
