"""One Run object at the seam (issue 53): a run is opened from a path in one place, `open_run`, read
once however many steps look at it, a bundle opens as a Run too, and the statistics and the report
work on a Run held in memory with no store at all."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from psyq import Run, open_run
from psyq.engine.bundle.write import write_bundle
from psyq.engine.files.errors import InputError
from psyq.engine.results import answers, run as run_module
from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]

# What opens a run from a path: reading its manifest, unpacking a bundle, building its answer table or
# judgements from its store. Only engine/results/run.py does (the Run's own lazy reads included).
OPENING_CALLS = {"read_manifest", "open_bundle", "answer_table", "judgement_table"}
# RunDir (a run folder's file names) is made where runs are opened, and by `psyq run`, which creates
# the folder and, resuming, reads back when it first started.
RUNDIR_MAKERS = {"engine/results/run.py", "engine/administer/run.py"}
OPENERS = {"engine/results/run.py": OPENING_CALLS, "engine/administer/record.py": {"read_manifest"}}


def opening_calls(source: str) -> list[tuple[int, str]]:
    """(line, name) of every call in `source` that opens a run, or makes a RunDir."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in OPENING_CALLS or name == "RunDir":
                found.append((node.lineno, name))
    return found


def test_the_finder_sees_a_run_opened_by_hand():
    # Planted: the ways a module used to open a run itself, so that the test below cannot pass by
    # finding nothing.
    planted = "m = RunDir(path).read_manifest()\nwith open_bundle(p) as b:\n    t = answers.answer_table(r)\n"
    assert sorted(name for _, name in opening_calls(planted)) == ["RunDir", "answer_table", "open_bundle",
                                                                 "read_manifest"]


def test_no_module_opens_a_run_from_a_path_but_open_run():
    wrong = []
    for top in ("engine", "analysis", "cli"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for line, name in opening_calls(path.read_text(encoding="utf-8")):
                allowed = rel in RUNDIR_MAKERS if name == "RunDir" else name in OPENERS.get(rel, set())
                if not allowed:
                    wrong.append(f"{rel}:{line}: {name}")
    assert wrong == [], "open the run with psyq.engine.results.run.open_run instead:\n" + "\n".join(wrong)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_mini_run(tmp_path_factory.mktemp("run_object"), n_personas=4, repeats=1)


def test_a_report_reads_the_manifest_and_builds_the_answers_once(run_dir, tmp_path, monkeypatch):
    from psyq.analysis.report import write_report

    reads, tables = [], []
    real_manifest, real_table = run_module.read_manifest, answers.answer_table
    monkeypatch.setattr(run_module, "read_manifest", lambda folder: reads.append(folder) or real_manifest(folder))
    monkeypatch.setattr(answers, "answer_table", lambda run, **kw: tables.append(kw) or real_table(run, **kw))
    write_report(run_dir, tmp_path / "out")
    # The report, its context, its scores and its methods paragraph all read the one Run.
    assert len(reads) == 1 and len(tables) == 1
    assert (tmp_path / "out" / "methods.md").read_text().startswith("Responses were generated")


def test_a_bundle_opens_as_a_run_and_its_folder_goes_when_closed(run_dir, tmp_path):
    stored = open_run(run_dir)
    bundle = write_bundle(stored, tmp_path / "run.zip").path
    with open_run(bundle) as opened:
        folder = opened.path
        assert opened.bundle is not None and opened.bundle.source == bundle and folder.is_dir()
        assert opened.manifest["run_id"] == stored.manifest["run_id"]
        assert sorted(opened.instruments) == sorted(stored.instruments)
        pd.testing.assert_frame_equal(opened.answers().drop(columns="run_id"), stored.answers().drop(columns="run_id"))
    assert not folder.exists()
    # A bundle is read only: a judge or an import is refused before anything is written.
    with pytest.raises(InputError, match="a bundle is read only"):
        open_run(bundle, write=True)
    # Not closed by hand: the folder goes with the Run.
    dropped = open_run(bundle)
    folder = dropped.path
    del dropped
    assert not folder.exists()


def test_open_run_refuses_what_is_not_a_run(tmp_path):
    with pytest.raises(InputError, match="not a run directory"):
        open_run(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    (tmp_path / "run.sqlite").write_bytes(b"")
    with pytest.raises(InputError, match="the manifest is damaged"):
        open_run(tmp_path)


def test_the_statistics_and_the_report_work_on_a_run_in_memory_with_no_store(run_dir, monkeypatch):
    from psyq import load_run_scores
    from psyq.analysis.report.context import ReportContext

    stored = open_run(run_dir)
    expected_scores = load_run_scores(stored)
    expected_norms = ReportContext.of_run(stored).norm_comparison
    held = Run.in_memory(stored.manifest, stored.instruments, stored.answers().copy())

    def no_store(*args, **kwargs):
        raise AssertionError("an in-memory run opened a store")

    monkeypatch.setattr(sqlite3, "connect", no_store)
    pd.testing.assert_frame_equal(load_run_scores(held), expected_scores)
    report = ReportContext.of_run(held)
    pd.testing.assert_frame_equal(report.norm_comparison, expected_norms)
    assert report.judgements.empty and not report.staged
