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
    psyq.verdict_power(people_items, iri, n_personas=[50, 200])          # how many personas would tell?
    psyq.write_report(result.run_dir.path, people=people)                # report
    run = psyq.open_run("runs/quickstart/RUN_ID")    # a run (or a bundle of it) opened once: a Run
    psyq.errors.PsyqError                            # the one exception tree of what psyq raises on purpose

Instruments, cohorts, studies, rubrics and human data that psyq ships are found by name from any
folder (``psyq list`` shows them; :func:`psyq.engine.files.shipped.locate` says how).

This file is the package ``psyq`` itself: pyproject.toml maps ``psyq`` to the repository's root,
so that ``engine/`` and ``analysis/`` stay where the project's layout puts them and install as
``psyq.engine`` and ``psyq.analysis``.

``import psyq`` is light (the version and a table): each name of ``__all__`` is imported from its
module the first time it is used (PEP 562, :mod:`psyq.engine.lazy`), so that ``psyq status`` or a
script that only reads a study never loads the statistics stack (scipy.stats, statsmodels,
pingouin, matplotlib). ``dir(psyq)`` lists them all.

May import: every room of psyq.engine and psyq.analysis (on first use of a name, never at import).
"""

from psyq.engine import __version__
from psyq.engine.lazy import lazy_names

# Where each name of the API lives. Nothing below is imported by `import psyq`: a name is imported
# from its module the first time it is used (psyq.engine.lazy), so that the command line and a
# script that only loads a study do not pay for the statistics stack (pandas, scipy.stats,
# statsmodels, pingouin, matplotlib: seconds and hundreds of MB). psyq.analysis does the same.
_EXPORTS = {
    "psyq.engine.administer.run": ["administer"],
    "psyq.engine.design.instrument": ["Instrument", "instrument_json_schema", "load_instrument"],
    "psyq.engine.design.cohort_file": ["load_cohort"],
    "psyq.engine.design.persona": ["BASELINE", "Cohort", "Persona"],
    "psyq.engine.design.persona_prompt": ["render_system_prompt"],
    "psyq.engine.design.study": ["Study", "load_study"],
    "psyq.engine.files.errors": ["BackendError", "BackendUnreachable", "BatchApiError", "InputError", "Problem",
                                 "ProviderRefused", "PsyqError", "RunLocked", "StoreWriterGone"],
    "psyq.engine.results.export": ["export_table", "wide_answers"],
    "psyq.analysis.scoring.human_answers": ["read_answers_csv"],
    "psyq.engine.results.run": ["Run", "open_run"],
    "psyq.engine.store.run_store": ["RunStore"],
    "psyq.engine.trials.scoring": ["keyed_answers", "reverse_key", "score", "score_wide"],
    "psyq.analysis": ["HumanData", "backend_items", "build_sections", "compare_conditions", "compare_samples", "compare_with_humans", "compare_with_norms",
                      "differential_item_functioning", "distinguishability", "distribution_distances", "factor_congruence",
                      "graded_response_model", "group_matching", "human_data", "human_scores", "invariance_verdicts",
                      "item_distributions", "load_run_scores", "match_twins", "matching_warnings",
                      "measurement_invariance", "model_effects", "people_needed", "polychoric", "prediction_powered",
                      "rank_conditions", "relations", "reliability_table", "respondent_z", "score_answers", "score_humans", "scorecard",
                      "criterion_marks", "verdict_power", "simulate_verdicts", "personas_needed", "spss_names", "style_and_trait", "subscale_correlations", "target_loadings", "test_information",
                      "test_retest_icc", "tucker_phi", "twin_agreement", "twin_summary", "twin_weights", "wide_scores",
                      "write_report", "write_scores"],
}
__getattr__, __dir__ = lazy_names(__name__, {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = [
    # design and administration
    "BASELINE", "Cohort", "Instrument", "Persona", "Study", "administer", "instrument_json_schema", "load_cohort",
    "load_instrument", "load_study", "render_system_prompt",
    # responses
    "Run", "RunStore", "backend_items", "export_table", "open_run", "read_answers_csv", "wide_answers",
    # scoring
    "HumanData", "human_data", "human_scores", "keyed_answers", "load_run_scores", "reverse_key", "score",
    "score_answers", "score_humans", "score_wide", "spss_names", "wide_scores", "write_scores",
    # comparing with people
    "compare_samples", "compare_with_humans", "compare_with_norms", "differential_item_functioning",
    "distribution_distances", "factor_congruence", "graded_response_model", "group_matching", "invariance_verdicts",
    "item_distributions",
    "match_twins", "matching_warnings", "measurement_invariance", "model_effects", "polychoric", "reliability_table",
    "respondent_z", "subscale_correlations", "target_loadings", "test_information", "test_retest_icc",
    "tucker_phi", "twin_agreement", "twin_summary", "twin_weights",
    # can the personas stand in for people?
    "compare_conditions", "criterion_marks", "distinguishability", "people_needed", "personas_needed",
    "prediction_powered", "rank_conditions", "relations", "scorecard", "simulate_verdicts", "style_and_trait",
    "verdict_power",
    # the report
    "build_sections", "write_report",
    # errors (the tree: psyq.errors) and the version
    "BackendError", "BackendUnreachable", "BatchApiError", "InputError", "Problem", "ProviderRefused", "PsyqError",
    "RunLocked", "StoreWriterGone", "__version__",
]
