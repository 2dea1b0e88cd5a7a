"""The docstring examples of the public analysis API and the human-data reader run as written
(from the repository root, on files shipped in tests/data and a run made over the stub server)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]
MODULES = ["analysis", "analysis.scores", "analysis.score_table", "analysis.validity", "analysis.human",
           "analysis.reliability", "analysis.effects", "engine.human_data", "engine.scoring",
           "engine.kinds", "engine.scale", "engine.prices", "engine.overrides", "engine.usage", "engine.plan",
           "engine.tokenizer", "engine.kinds.scene", "engine.kinds.scene.leas", "engine.kinds.vignette",
           "engine.kinds.vignette.accuracy", "analysis.kinds", "analysis.kinds.scene",
           "engine.importers", "engine.importers.draft", "engine.importers.redcap", "engine.importers.psych_keys",
           "engine.importers.qsf", "engine.importers.command", "engine.importers.writer", "engine.yamlhints",
           "engine.importers.emotionbench", "analysis.kinds.response", "engine.run",
           "analysis.change", "analysis.report_change",
           "engine.kinds.response", "engine.rubric2", "engine.target_judge", "engine.rating_sheet",
           "engine.importers.replies", "engine.ratings", "engine.prompt_variants", "analysis.prompt_sensitivity",
           "analysis.robustness", "engine.perturbations", "engine.perturb", "analysis.rater_agreement",
           "analysis.response_comparison", "engine.backends.pool", "engine.imported_run",
           "engine.backends.capabilities", "engine.backends.provider_errors", "engine.backends.openai",
           "engine.backends.anthropic", "engine.backends.base", "analysis.methods", "analysis.norms",
           "engine.parsing", "engine.backends.catalogue", "engine.backends.local"]


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
