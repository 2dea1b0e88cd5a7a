"""`psyq report RUN --preregistration DIR`: every difference between a run and its pre-registration,
first in the report, in plain sentences (analysis/preregistration/deviations.py, the report's section
analysis/report/sections/deviations.py). The quick start is preregistered and run against the stub
server (real HTTP on 127.0.0.1) as test_plan.py runs it, each time from a copy of the study in tmp."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from cli_helper import psyq_in_process as psyq
from stub_server import StubServer

from psyq.analysis.preregistration.deviations import deviations
from psyq.analysis.preregistration.record import read_preregistration
from psyq.analysis.report.sections.deviations import TITLE, DeviationsSection, deviation_sentence
from psyq.engine.results.run import Run, open_run

ROOT = Path(__file__).resolve().parents[1]


def quickstart_copy(tmp: Path, own_cohort: bool = False) -> Path:
    """The quick start copied into `tmp` (with `own_cohort`, its cohort file too, named by path)."""
    study = tmp / "quickstart.yaml"
    text = (ROOT / "studies" / "quickstart.yaml").read_text()
    if own_cohort:
        shutil.copy(ROOT / "personas" / "adults_small.yaml", tmp / "adults_small.yaml")
        text = text.replace("cohort: adults_small", "cohort: adults_small.yaml")
    study.write_text(text)
    return study


def planned_and_run(tmp: Path, study: Path, *, edit=None, served=None) -> tuple[Path, Path]:
    """Preregister `study` for the stub, apply `edit(study)`, run it; (pre-registration folder, run folder)."""
    with StubServer(served=served) as stub:
        flags = ["--base-url", stub.url, "--model", "stub-model", "--runs-dir", str(tmp / "runs")]
        done = psyq("preregister", study, *flags, "--out", tmp / "prereg")
        assert done.returncode == 0, done.stderr
        if edit is not None:
            edit(study)
        ran = psyq("run", study, *flags)
        assert ran.returncode == 0, ran.stderr
    [run] = [p.parent for p in (tmp / "runs").rglob("manifest.json")]
    return tmp / "prereg", run


def report_md(tmp: Path, run: Path, prereg: Path, *extra: str) -> str:
    done = psyq("report", run, "--preregistration", prereg, "--out", tmp / "report", *extra)
    assert done.returncode == 0, done.stderr
    return (tmp / "report" / "report.md").read_text()


def section_lines(md: str) -> list[str]:
    """The bullet lines of the deviations section."""
    part = md.split(f"## {TITLE}\n", 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in part.splitlines() if line.startswith("- ")]


def test_the_quickstart_run_as_planned_lists_no_deviation_first_in_its_report(tmp_path):
    prereg, run = planned_and_run(tmp_path, quickstart_copy(tmp_path))
    md = report_md(tmp_path, run, prereg)
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    # First of all, before the verdict (which is shown before everything else).
    assert headings[:2] == [f"## {TITLE}", "## Can the personas stand in for people?"]
    [said] = section_lines(md)
    assert said.startswith("The run followed the pre-registration") and "no difference was found" in said
    assert deviations(open_run(run), read_preregistration(prereg).plan).empty


def test_the_studys_temperature_edited_after_the_plan_is_one_deviation_naming_both_values(tmp_path):
    def warmer(study: Path) -> None:
        text = study.read_text()
        assert "temperature: 1.0" in text
        study.write_text(text.replace("temperature: 1.0", "temperature: 0.7"))

    prereg, run = planned_and_run(tmp_path, quickstart_copy(tmp_path), edit=warmer)
    lines = section_lines(report_md(tmp_path, run, prereg))
    assert lines[0].startswith("1 difference(s) between the run")
    # The study file changed too, but what changed in it is the temperature, said as such (once).
    assert lines[1:] == ["The temperature of backend stub-model was 1.0 in the pre-registration and 0.7 in the run."]


def test_another_model_served_than_requested_is_a_deviation_naming_both(tmp_path):
    prereg, run = planned_and_run(tmp_path, quickstart_copy(tmp_path),
                                  served=lambda body: {"model": "stub-model-2026-01-15"})
    found = deviations(open_run(run), read_preregistration(prereg).plan)
    assert found.to_dict("records") == [{"kind": "served model", "field": "backends[stub-model].served_model",
                                         "planned": "stub-model", "run": "stub-model-2026-01-15"}]
    said = deviation_sentence(found.iloc[0])
    assert "stub-model-2026-01-15" in said and "planned stub-model" in said


def test_a_file_edited_since_the_plan_is_a_deviation_naming_the_file(tmp_path):
    def commented(study: Path) -> None:            # the cohort's personas unchanged: only its bytes differ
        cohort = study.parent / "adults_small.yaml"
        cohort.write_text(cohort.read_text() + "# drawn again on Tuesday\n")

    prereg, run = planned_and_run(tmp_path, quickstart_copy(tmp_path, own_cohort=True), edit=commented)
    plan = read_preregistration(prereg).plan
    found = deviations(open_run(run), plan)
    assert found[["kind", "field"]].to_dict("records") == [{"kind": "file", "field": "files[adults_small.yaml]"}]
    planned = {f.name: f.sha256 for f in plan.files}["adults_small.yaml"]
    assert found.iloc[0]["planned"] == planned != found.iloc[0]["run"]
    said = deviation_sentence(found.iloc[0])
    assert said.startswith("The file adults_small.yaml changed since the pre-registration") and planned[:12] in said


def test_fewer_personas_a_changed_protocol_and_the_reports_options_are_each_a_row(tmp_path):
    prereg, run = planned_and_run(tmp_path, quickstart_copy(tmp_path))
    plan = read_preregistration(prereg).plan
    stored = open_run(run)
    answers = stored.answers()
    gone = sorted(r for r in answers["respondent_id"].unique() if r != "baseline")[:3]
    manifest = json.loads(json.dumps(stored.manifest))
    manifest["protocol"]["repeats"] = 2
    held = Run.in_memory(manifest, stored.instruments, answers[~answers["respondent_id"].isin(gone)], path=run)
    found = deviations(held, plan, bound=0.5, estimator="ML")
    rows = {r["field"]: (r["kind"], r["planned"], r["run"]) for r in found.to_dict("records")}
    assert rows == {"protocol.repeats": ("protocol", 1, 2), "personas[stub-model]": ("personas", 12, 9),
                    "bound": ("analysis", 0.3, 0.5), "estimator[iri]": ("analysis", "WLSMV", "ML")}
    said = [deviation_sentence(r) for r in found.to_dict("records")]
    assert "The protocol's repeats was 1 in the pre-registration and 2 in the run." in said
    assert "Fewer personas answered than planned on stub-model: 9 of 12." in said


def test_a_malformed_or_wrong_preregistration_is_said_at_its_line_and_column_and_exits_2(tmp_path):
    prereg, run = planned_and_run(tmp_path, quickstart_copy(tmp_path))
    file = prereg / "preregistration.json"
    text = file.read_text()
    cases = {
        "bound": (text.replace('"bound": 0.3', '"bound": "wide"'), "analysis.bound: must be a number"),
        "json": (text.replace('"trials_planned": 364,', '"trials_planned": 364'), "not valid JSON"),
        "format": (text.replace('"psyq": "preregistration/1"', '"psyq": "preregistration/9"'),
                   'psyq: expected "preregistration/1"'),
        "study": (text.replace('"id": "quickstart"', '"id": "another"', 1), "study.id: this pre-registration is of "
                                                                           "study 'another', the run of study "
                                                                           "'quickstart'"),
    }
    for name, (changed, message) in cases.items():
        file.write_text(changed)
        done = psyq("report", run, "--preregistration", prereg, "--out", tmp_path / name)
        assert done.returncode == 2, (name, done.stderr)
        [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        where, said = error.removeprefix("error: ").split(": ", 1)
        path, line, column = where.rsplit(":", 2)
        assert path == str(file) and said.startswith(message), (name, error)
        # The line and column point at the field (or the JSON error) in the file as written.
        key = {"bound": '"bound"', "format": '"psyq"', "study": '"id"'}.get(name)
        if key is not None:
            assert changed.splitlines()[int(line) - 1][int(column) - 1:].startswith(("\"wide\"", '"preregistration/9"',
                                                                                    '"another"')), (name, error)
        assert not (tmp_path / name).exists() and "Traceback" not in done.stderr


def test_without_a_preregistration_the_report_has_no_such_section():
    assert not DeviationsSection().applies(SimpleNamespace(deviations=None))
    assert DeviationsSection().applies(SimpleNamespace(deviations=pd.DataFrame()))
