"""psyq: administer psychometric questionnaires to LLM-simulated personas, score the answers and
compare them with people.

The API for scripts and notebooks, in one namespace that reads as the method (``psyq.engine`` and
``psyq.analysis`` hold the rest)::

    import psyq
    study = psyq.load_study("quickstart")            # instrument + cohort + backend: a study
    result = await psyq.administer(study, "runs")    # administer: responses in a run
    scores = psyq.load_run_scores(result.run_dir.path)                   # score
    iri = psyq.load_instrument("iri")
    psyq.compare_with_norms(scores, {"iri": iri})                        # compare with people's norms ...
    people = psyq.human_data({"iri": "iri_briganti2018_keyed:keyed"})    # ... or with people's own data
    psyq.measurement_invariance(data, {"PT": [...]}, "sample")           # the same construct?
    psyq.graded_response_model(...); psyq.differential_item_functioning(...)
    psyq.twin_agreement(twins, persons, iri)                             # twins against their persons
    psyq.scorecard(cohort_items, people_items, iri)                      # can they stand in for people?
    psyq.write_report(result.run_dir.path, people=people)                # report

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
from psyq.analysis.scoring.human_answers import read_answers_csv
from psyq.engine.store.run_dir import open_run_dir
from psyq.engine.store.run_store import RunStore
from psyq.engine.trials.scoring import keyed_answers, reverse_key, score, score_wide
from psyq.analysis import (HumanData, build_sections, compare_samples, compare_with_humans, compare_with_norms,
                           differential_item_functioning, distinguishability, factor_congruence,
                           graded_response_model, group_matching, human_data, human_scores, invariance_verdicts,
                           item_distributions, load_run_scores, match_twins, matching_warnings,
                           measurement_invariance, model_effects, people_needed, polychoric, prediction_powered,
                           relations, reliability_table, respondent_z, score_answers, score_humans, scorecard,
                           spss_names, style_and_trait, subscale_correlations, target_loadings, test_information,
                           test_retest_icc, tucker_phi, twin_agreement, twin_summary, twin_weights, wide_scores,
                           write_report, write_scores)

__all__ = [
    # design and administration
    "BASELINE", "Cohort", "Instrument", "Persona", "Study", "administer", "instrument_json_schema", "load_cohort",
    "load_instrument", "load_study", "render_system_prompt",
    # responses
    "RunStore", "export_table", "open_run_dir", "read_answers_csv", "wide_answers",
    # scoring
    "HumanData", "human_data", "human_scores", "keyed_answers", "load_run_scores", "reverse_key", "score",
    "score_answers", "score_humans", "score_wide", "spss_names", "wide_scores", "write_scores",
    # comparing with people
    "compare_samples", "compare_with_humans", "compare_with_norms", "differential_item_functioning",
    "factor_congruence", "graded_response_model", "group_matching", "invariance_verdicts", "item_distributions",
    "match_twins", "matching_warnings", "measurement_invariance", "model_effects", "polychoric", "reliability_table",
    "respondent_z", "subscale_correlations", "target_loadings", "test_information", "test_retest_icc",
    "tucker_phi", "twin_agreement", "twin_summary", "twin_weights",
    # can the personas stand in for people?
    "distinguishability", "people_needed", "prediction_powered", "relations", "scorecard", "style_and_trait",
    # the report
    "build_sections", "write_report",
    # errors and the version
    "InputError", "Problem", "PsyqError", "__version__",
]
