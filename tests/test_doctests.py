"""The docstring examples of the public analysis API and the human-data reader run as written
(from the repository root, on files shipped in tests/data and a run made over the stub server)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]
MODULES = ["analysis", "psyq.engine.registry", "psyq.engine.backends.registry", "psyq.engine.trials.answer_mode",
           "psyq.engine.judging.asking", "psyq.engine.results.runs", "psyq.engine.cli.judging", "psyq.engine.files.codebook", "psyq.engine.files.workbook", "psyq.engine.design.instrument", "psyq.analysis.scoring.scores", "psyq.analysis.scoring.score_table", "psyq.analysis.statistics.validity", "psyq.analysis.statistics.human_comparison",
           "psyq.analysis.statistics.invariance", "psyq.analysis.statistics.polychoric", "psyq.analysis.report.sections.twins", "psyq.analysis.statistics.irt", "psyq.analysis.report.section", "psyq.analysis.report.apa", "psyq.analysis.statistics.twins",
           "psyq.analysis.statistics.reliability", "psyq.analysis.statistics.effects", "psyq.analysis.scoring.human_answers", "psyq.engine.trials.scoring",
           "psyq.engine.kinds", "psyq.engine.trials.scale", "psyq.engine.design.prices", "psyq.engine.administer.overrides", "psyq.engine.results.usage", "psyq.engine.administer.plan",
           "psyq.engine.administer.tokenizer", "psyq.engine.kinds.scene", "psyq.engine.kinds.scene.leas", "psyq.engine.kinds.vignette",
           "psyq.engine.kinds.vignette.accuracy", "psyq.analysis.report.sections",
           "psyq.engine.importers", "psyq.engine.importers.draft", "psyq.engine.importers.redcap", "psyq.engine.importers.psych_keys",
           "psyq.engine.importers.qsf", "psyq.engine.importers.command", "psyq.engine.importers.writer", "psyq.engine.files.yamlhints",
           "psyq.engine.importers.emotionbench", "psyq.analysis.report.sections.response", "psyq.engine.administer.run",
           "psyq.analysis.statistics.change", "psyq.analysis.report.sections.change", "psyq.analysis.statistics.weighting",
           "psyq.engine.kinds.response", "psyq.engine.kinds.response.rubrics", "psyq.engine.judging.reply_judge", "psyq.engine.judging.rating_sheet",
           "psyq.engine.importers.replies", "psyq.engine.store.ratings", "psyq.engine.design.perturbed_prompts", "psyq.analysis.statistics.prompt_sensitivity",
           "psyq.analysis.statistics.robustness", "psyq.engine.design.perturbation_sets", "psyq.engine.judging.perturbed_replies", "psyq.analysis.statistics.rater_agreement",
           "psyq.analysis.statistics.response_comparison", "psyq.engine.backends.pool", "psyq.engine.results.imported_run",
           "psyq.engine.backends.capabilities", "psyq.engine.backends.provider_errors", "psyq.engine.backends.openai",
           "psyq.engine.backends.anthropic", "psyq.engine.backends.base", "psyq.analysis.report.methods", "psyq.analysis.statistics.norms", "psyq.analysis.statistics.norms.summary", "psyq.analysis.statistics.norms.groups",
           "psyq.engine.trials.parsing", "psyq.engine.backends.catalogue", "psyq.engine.backends.local",
           "psyq.engine.files.shipped", "psyq.engine.cli.starting", "psyq.engine.design.study",
           "psyq.engine.design.persona", "psyq.engine.design.situations", "psyq.engine.judging.answer_judge",
           "psyq.engine.trials.prompts", "psyq.analysis.report.readings", "psyq.analysis.report.build",
           "psyq.analysis.report.context", "psyq.analysis.report.render", "psyq.analysis.report.sections.study",
           "psyq.analysis.report.sections.norms", "psyq.analysis.report.sections.instrument",
           "psyq.analysis.scoring.human_data", "psyq.analysis.statistics.lexicon_agreement",
           "psyq.analysis.statistics.distinguishability", "psyq.analysis.statistics.style_trait",
           "psyq.analysis.statistics.relations", "psyq.analysis.statistics.prediction_powered",
           "psyq.analysis.statistics.scorecard", "psyq.analysis.statistics.invariance.sequence", "psyq.analysis.statistics.invariance.against_people",
           "psyq.analysis.report.sections.verdict"]
# Their examples name psyq's shipped files by name only, so they run from any folder (psyq installed,
# no clone in sight): run here from an empty one.
BY_NAME = ["psyq.engine.files.shipped", "psyq.engine.cli.starting", "psyq.engine.design.study",
           "psyq.engine.design.persona", "psyq.engine.judging.answer_judge", "psyq.engine.trials.prompts",
           "psyq.engine.trials.scoring", "psyq.engine.kinds.response.rubrics", "psyq.engine.administer.run",
           "psyq.engine.kinds.vignette.accuracy", "psyq.analysis.statistics.invariance.against_people"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_mini_run(tmp_path_factory.mktemp("doctest"), n_personas=4, repeats=1)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, run_dir, monkeypatch):
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"run_dir": run_dir}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize("name", BY_NAME)
def test_examples_by_name_run_from_an_empty_folder(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
