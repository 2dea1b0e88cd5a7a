"""The table of current figures at the top of bench/RESULTS.md is what bench/results_table.py builds
from the committed bench/results/*.json: a benchmark run again without the table refreshed fails
here, and a figure changed in a JSON file changes the table. No benchmark runs; no network."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


@pytest.fixture(scope="module")
def results_table():
    """bench/results_table.py as a module (it imports bench/common.py as `common`, as every benchmark
    does); sys.path and sys.modules as they were afterwards."""
    path, had_common = list(sys.path), "common" in sys.modules
    spec = importlib.util.spec_from_file_location("results_table", BENCH / "results_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["results_table"] = module                     # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.path[:] = path
    sys.modules.pop("results_table", None)
    if not had_common:
        sys.modules.pop("common", None)


def current_block(page: str, module) -> str:
    return page[page.index(module.START):page.index(module.END) + len(module.END)]


def copy_results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for path in (BENCH / "results").glob("*.json"):
        shutil.copy(path, folder / path.name)
    return folder


def test_the_table_in_results_md_is_what_the_committed_json_files_give(results_table):
    page = (BENCH / "RESULTS.md").read_text(encoding="utf-8")
    assert current_block(page, results_table) == results_table.build_block(BENCH / "results"), (
        "bench/RESULTS.md's table is stale: run python bench/results_table.py and commit it with the JSON files")
    assert results_table.main(["--check"]) == 0


def test_a_figure_changed_in_a_json_file_changes_the_table_and_only_the_table(results_table, tmp_path):
    results = copy_results(tmp_path)
    page = tmp_path / "RESULTS.md"
    shutil.copy(BENCH / "RESULTS.md", page)
    data = json.loads((results / "report_scale.json").read_text())
    assert data["runs"], "the committed report_scale.json holds no run to change"
    for run in data["runs"].values():
        run["wall_s"] = 99.5                                   # over the 15 s and 60 s targets
    (results / "report_scale.json").write_text(json.dumps(data))

    block = results_table.build_block(results)
    assert block != results_table.build_block(BENCH / "results")
    rows = [line for line in block.splitlines() if "**99.50 s** wall" in line]
    assert len(rows) == len(data["runs"]) and all("| **missed** |" in row for row in rows)

    assert results_table.main(["--check", "--results", str(results), "--page", str(page)]) == 1
    assert results_table.main(["--results", str(results), "--page", str(page)]) == 0
    assert results_table.main(["--check", "--results", str(results), "--page", str(page)]) == 0
    before, after = (BENCH / "RESULTS.md").read_text(encoding="utf-8"), page.read_text(encoding="utf-8")
    end = results_table.END
    assert after.split(end, 1)[1] == before.split(end, 1)[1]   # the history below the table is untouched
    assert current_block(after, results_table) == block


def test_a_file_without_its_machine_shows_dashes_and_says_so(results_table, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    data = json.loads((BENCH / "results" / "report_scale.json").read_text())
    del data["machine"]
    (results / "report_scale.json").write_text(json.dumps(data))

    block = results_table.build_block(results)
    rows = [line.split(" | ") for line in block.splitlines() if line.startswith("| `psyq report`")]
    assert rows and all(row[4:7] == ["—", "—", "—"] for row in rows)              # date, machine, load
    assert "`report_scale.json` records no date, machine or load" in block
    # every other benchmark's file is absent: no figure in its rows, and the note lists them
    absent = [line for line in block.splitlines() if "(no `overhead.json`" in line]
    assert len(absent) == 2 and all("| — | — | — | — |" in line for line in absent)
    assert "No JSON file yet for `overhead.json`" in block
