"""psyq analysis: from a run's answers to the report, in three rooms that read as the flow.

* :mod:`psyq.analysis.scoring` — answers to scores, whoever answered (personas of a run, people
  of a data file: :class:`HumanData`);
* :mod:`psyq.analysis.statistics` — comparing: pure functions from scores and answers to tidy
  frames, each checked against R or a published result; never writing report text;
* :mod:`psyq.analysis.report` — the report: one builder per section, in order, turning the
  statistics' frames into sentences, APA tables, figures, HTML and Markdown.

Beside them, :mod:`psyq.analysis.preregistration`: a study's plan before it is run (``psyq
preregister``), and every difference of a run from it, which the report says first.

Scoring imports neither of the others; statistics imports scoring, never the report; the report
imports both (tests/test_kinds.py checks it).

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
(:mod:`psyq.analysis.statistics.validity`; item response theory in :mod:`psyq.analysis.statistics.irt`, DIF in
:mod:`psyq.analysis.statistics.dif`):
    >>> import pandas as pd
    >>> from psyq.analysis import item_distributions
    >>> from psyq.analysis.scoring.human_answers import read_answers_csv
    >>> people = read_answers_csv("tests/data/mini_answers.csv", mini)
    >>> item_distributions(people, people, mini).query("group_by == 'all'")["tv"].tolist()
    [0.0, 0.0, 0.0, 0.0]

The names above are imported on first use (PEP 562, :mod:`psyq.engine.lazy`): ``import
psyq.analysis``, and reading a run with :mod:`psyq.analysis.scoring`, do not load the statistics'
stack (scipy.stats, statsmodels, pingouin, matplotlib, scikit-learn); ``dir()`` lists them all.

May import: psyq.engine's files, store, trials, kinds, design, results and judging rooms (reading
runs, never sending: not administer, cli, backends or importers), and psyq.engine.lazy.
"""

from psyq.engine.lazy import lazy_names

# Where each name lives; imported on first use (psyq.engine.lazy), so that `import psyq.analysis` (and
# reading a run with psyq.analysis.scoring) does not load scipy.stats, statsmodels, pingouin and matplotlib.
_EXPORTS = {
    "psyq.analysis.scoring.human_data": ["HumanData", "human_data"],
    "psyq.analysis.scoring.score_table": ["spss_names", "wide_scores", "write_scores"],
    "psyq.analysis.scoring.scores": ["human_scores", "load_run_scores", "score_answers", "score_humans"],
    "psyq.analysis.statistics.standin.distinguishability": ["distinguishability"],
    "psyq.analysis.statistics.standin.conditions": ["compare_conditions", "rank_conditions"],
    "psyq.analysis.statistics.distances": ["distribution_distances"],
    "psyq.analysis.statistics.effects": ["model_effects"],
    "psyq.analysis.statistics.human_comparison": ["compare_samples", "compare_with_humans", "tucker_phi"],
    "psyq.analysis.statistics.invariance": ["measurement_invariance"],
    "psyq.analysis.statistics.dif": ["differential_item_functioning"],
    "psyq.analysis.statistics.irt": ["graded_response_model", "test_information"],
    "psyq.analysis.statistics.norms": ["compare_with_norms", "group_matching", "respondent_z"],
    "psyq.analysis.statistics.polychoric": ["polychoric"],
    "psyq.analysis.statistics.standin.prediction_powered": ["people_needed", "prediction_powered"],
    "psyq.analysis.statistics.standin.relations": ["relations"],
    "psyq.analysis.statistics.reliability": ["reliability_table", "test_retest_icc"],
    "psyq.analysis.statistics.standin.scorecard": ["criterion_marks", "scorecard"],
    "psyq.analysis.statistics.standin.verdict_power": ["personas_needed", "simulate_verdicts", "verdict_power"],
    "psyq.analysis.statistics.standin.style_trait": ["style_and_trait"],
    "psyq.analysis.statistics.standin.twins": ["match_twins", "twin_agreement", "twin_summary"],
    "psyq.analysis.statistics.validity": ["factor_congruence", "item_distributions", "subscale_correlations",
                                          "target_loadings"],
    "psyq.analysis.statistics.weighting": ["twin_weights"],
    "psyq.analysis.report": ["build_sections", "write_report"],
    "psyq.analysis.report.context": ["backend_items"],
    "psyq.analysis.report.readings": ["invariance_verdicts", "matching_warnings"],
}
__getattr__, __dir__ = lazy_names(__name__, {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = [
    "HumanData", "backend_items", "build_sections", "compare_conditions", "compare_samples", "criterion_marks", "compare_with_humans", "compare_with_norms",
    "differential_item_functioning", "distinguishability", "distribution_distances", "factor_congruence", "graded_response_model", "group_matching", "human_data",
    "human_scores", "invariance_verdicts", "item_distributions", "load_run_scores", "match_twins",
    "matching_warnings", "measurement_invariance", "model_effects", "people_needed", "polychoric",
    "prediction_powered", "rank_conditions", "relations", "reliability_table", "respondent_z", "score_answers", "score_humans",
    "personas_needed", "scorecard", "simulate_verdicts", "spss_names", "style_and_trait", "subscale_correlations", "target_loadings", "test_information",
    "test_retest_icc", "tucker_phi", "twin_agreement", "twin_summary", "twin_weights", "wide_scores",
    "verdict_power", "write_report", "write_scores",
]
