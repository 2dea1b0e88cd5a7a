"""A run's manifest names its input files relative to the study file's folder (issue 24), so a
run directory can be shared, and the run id of an existing study stays what it was.

The ids below were computed with psyq before the manifest changed (commit a0dd3f5), from the
shipped study files and a fixed backend written here (not the local model, whose identity holds
the llama.cpp version), on two checkouts in different folders: they depend on the files' bytes,
not on where they are. A change to one of those shipped files changes its id legitimately:
compute the new one then, and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path, PurePosixPath, PureWindowsPath
from types import SimpleNamespace

import pytest

from psyq.analysis.report import methods
from psyq import open_run
from psyq.engine.backends import BackendConfig
from psyq.engine.store.run_dir import RunDir, manifest_file_paths
from psyq.engine.administer.record import run_id_for
from psyq.engine.design.study import load_study
from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]


def strings(value):
    """Every string in a JSON value (keys included)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value


def test_manifest_names_input_files_relative_to_the_study_folder_and_a_moved_run_still_finds_them(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    run = make_mini_run(project, n_personas=2, repeats=1)     # study.yaml, cohort.yaml, runs/ in `project`
    manifest = json.loads((run / "manifest.json").read_text())
    absolute = [s for s in strings(manifest) if PurePosixPath(s).is_absolute() or PureWindowsPath(s).drive]
    assert absolute == []
    assert str(tmp_path) not in json.dumps(manifest)
    assert manifest["study_folder"] == "../../.."                 # runs/<study>/<run-id> -> project
    files = manifest["files"]
    assert files["study.yaml"] == hashlib.sha256((project / "study.yaml").read_bytes()).hexdigest()
    assert files["cohort.yaml"] == hashlib.sha256((project / "cohort.yaml").read_bytes()).hexdigest()
    [instrument] = [name for name in files if name.endswith("mini_1to7.yaml")]
    assert (project / instrument).resolve() == ROOT / "tests" / "data" / "mini_1to7.yaml"
    # The reader resolves them from the run directory, wherever the folder went (methods reads the cohort).
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(project, moved)
    shutil.rmtree(project)
    moved_run = open_run(moved / run.relative_to(project))
    paths = manifest_file_paths(moved_run, manifest)
    assert {p.resolve() for p in paths if p.name in {"study.yaml", "cohort.yaml"}} == {
        moved / "study.yaml", moved / "cohort.yaml"}
    assert methods.run_facts(moved_run).cohort_file["id"] == "c"


def test_a_manifest_written_before_holds_absolute_paths_and_is_read_as_before(tmp_path):
    cohort = tmp_path / "cohort.yaml"
    cohort.write_text("psyq: cohort/1\n")
    old = {"files": {str(cohort): "ab"}}                            # no study_folder: psyq before issue 24
    assert manifest_file_paths(RunDir(tmp_path / "run"), old) == {cohort: "ab"}


# The run ids of shipped studies as psyq computed them when they named their files by path
# (../instruments/iri.yaml; computed by the code of commit 9be5957): naming them by name, moving
# the study, or reading it by name or by path changes no run id, so a rerun still resumes.
SHIPPED_IDS = [("studies/iri_adults.yaml", "6034b46b26f1"),
               ("studies/emotion_change.yaml", "8e3d2581ca46")]   # with a situation set


@pytest.mark.parametrize("study_file, run_id", SHIPPED_IDS)
def test_run_id_of_a_shipped_study_is_what_it_was(study_file, run_id, monkeypatch, tmp_path):
    config = BackendConfig(id="model", kind="openai", model="m", base_url="http://127.0.0.1:8000/v1")
    backends = {"model": SimpleNamespace(config=config, identity=lambda: {"kind": "openai", "model": "m"})}
    name = Path(study_file).stem
    for where, path in ((ROOT, study_file), (tmp_path, str(ROOT / study_file)), (tmp_path, name)):
        monkeypatch.chdir(where)
        study = load_study(path)
        assert run_id_for(study, backends) == run_id
