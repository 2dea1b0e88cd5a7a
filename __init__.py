"""psyq: administer psychometric questionnaires to LLM-simulated personas, score the answers and
compare them with people.

The API for scripts and notebooks, in one namespace (``psyq.engine`` and ``psyq.analysis`` hold
the rest)::

    import psyq
    study = psyq.load_study("quickstart")          # a shipped study by name, or a study file's path
    run = psyq.open_run_dir("runs/quickstart/RUN_ID")
    scores = psyq.load_run_scores(run.path)
    psyq.compare_with_norms(scores, {"iri": psyq.load_instrument("iri")})

Instruments, cohorts, studies, rubrics and human data that psyq ships are found by name from any
folder (``psyq list`` shows them; :func:`psyq.engine.files.shipped.locate` says how).

This file is the package ``psyq`` itself: pyproject.toml maps ``psyq`` to the repository's root,
so that ``engine/`` and ``analysis/`` stay where the project's layout puts them and install as
``psyq.engine`` and ``psyq.analysis``.
"""

from psyq.engine import __version__
from psyq.engine.administer.run import administer
from psyq.engine.design.instrument import Instrument, instrument_json_schema, load_instrument
from psyq.engine.design.persona import BASELINE, Cohort, Persona, load_cohort, render_system_prompt
from psyq.engine.design.study import Study, load_study
from psyq.engine.files.errors import InputError, Problem, PsyqError
from psyq.engine.results.export import export_table, wide_answers
from psyq.engine.results.human_answers import read_answers_csv
from psyq.engine.store.run_dir import open_run_dir
from psyq.engine.store.run_store import RunStore
from psyq.engine.trials.scoring import keyed_answers, reverse_key, score, score_wide
from psyq.analysis import (compare_samples, compare_with_humans, compare_with_norms, factor_congruence,
                           group_matching, human_scores, item_distributions, load_run_scores, matching_warnings,
                           model_effects, reliability_table, respondent_z, score_answers, score_humans, spss_names,
                           subscale_correlations, target_loadings, test_retest_icc, tucker_phi, wide_scores,
                           write_scores)

__all__ = [
    "BASELINE", "Cohort", "InputError", "Instrument", "Persona", "Problem", "PsyqError", "RunStore", "Study",
    "__version__", "administer", "compare_samples", "compare_with_humans", "compare_with_norms", "export_table",
    "factor_congruence", "group_matching", "human_scores", "instrument_json_schema", "item_distributions",
    "keyed_answers", "load_cohort", "load_instrument", "load_run_scores", "load_study", "matching_warnings",
    "model_effects", "open_run_dir", "read_answers_csv", "reliability_table", "render_system_prompt",
    "respondent_z", "reverse_key", "score", "score_answers", "score_humans", "score_wide", "spss_names",
    "subscale_correlations", "target_loadings", "test_retest_icc", "tucker_phi", "wide_answers", "wide_scores",
    "write_scores",
]
