"""psyq analysis: statistics, plots and reports on scored runs and on human data.

The public API below works on tidy frames. Scores are in one long format, whoever answered:
``backend_id, model, respondent_id, repeat``, the respondent attributes, then ``instrument,
subscale, score, n_answered, n_items, prorated``. A run gives it with :func:`load_run_scores`,
human answers with :func:`score_humans` (``backend_id`` "human"), and both go through
:func:`compare_with_norms` the same way (norm-group matching on the attributes included).
:func:`wide_scores` and :func:`write_scores` turn it into one row per respondent for R or SPSS.

Example (run from the repository root; `run_dir` is any run directory):
    >>> from psyq.analysis import compare_with_norms, load_run_scores, score_humans, wide_scores
    >>> from psyq import load_instrument
    >>> mini = load_instrument("tests/data/mini_1to7.yaml")
    >>> humans = score_humans("tests/data/mini_answers.csv", mini)
    >>> wide_scores(humans, prefix=False)[["respondent_id", "gender", "Z", "Z_n", "Z_prorated"]]
      respondent_id  gender          Z  Z_n  Z_prorated
    0            r1  female  16.000000    4           0
    1            r2    male        NaN    2           0
    2            r4  female  18.666667    3           1
    >>> compare_with_norms(humans, {"mini": mini}).empty     # the toy instrument has no norms
    True
    >>> cohort = load_run_scores(run_dir)
    >>> sorted(cohort["subscale"].unique()) == sorted(humans["subscale"].unique())
    True

Raw item answers of a cohort and of humans compare item by item and structurally
(:mod:`psyq.analysis.statistics.validity`; item response theory and DIF in :mod:`psyq.analysis.statistics.irt`):
    >>> import pandas as pd
    >>> from psyq.engine.results.human_answers import read_answers_csv
    >>> people = read_answers_csv("tests/data/mini_answers.csv", mini)
    >>> item_distributions(people, people, mini).query("group_by == 'all'")["tv"].tolist()
    [0.0, 0.0, 0.0, 0.0]

May import: psyq.engine's files, store, trials, kinds, design, results and judging rooms (reading runs, never sending: not administer, cli, backends or importers).
"""

from psyq.analysis.statistics.effects import model_effects
from psyq.analysis.statistics.human_comparison import compare_samples, compare_with_humans, tucker_phi
from psyq.analysis.statistics.invariance import measurement_invariance
from psyq.analysis.report.readings import invariance_verdicts
from psyq.analysis.statistics.irt import differential_item_functioning, graded_response_model, test_information
from psyq.analysis.statistics.norms import compare_with_norms, group_matching, respondent_z
from psyq.analysis.report.readings import matching_warnings
from psyq.analysis.statistics.reliability import reliability_table, test_retest_icc
from psyq.analysis.scoring.score_table import spss_names, wide_scores, write_scores
from psyq.analysis.scoring.scores import human_scores, load_run_scores, score_answers, score_humans
from psyq.analysis.statistics.validity import (factor_congruence, item_distributions, subscale_correlations,
    target_loadings)

__all__ = [
    "compare_samples", "compare_with_humans", "compare_with_norms", "differential_item_functioning",
    "factor_congruence", "graded_response_model", "group_matching", "human_scores", "invariance_verdicts",
    "item_distributions", "load_run_scores", "matching_warnings", "measurement_invariance", "model_effects",
    "reliability_table", "respondent_z", "score_answers", "score_humans", "spss_names", "subscale_correlations",
    "target_loadings", "test_information", "test_retest_icc", "tucker_phi",
    "wide_scores", "write_scores",
]
