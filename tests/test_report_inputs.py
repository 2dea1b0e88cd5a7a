"""A report reads its inputs before its work: a bad people's file stops `psyq report` with its
file:line message before the run's answers are exported or any section is built.

Independent check: a section registered for the test records whether it was called, and the run's
export is watched; the bad value and its line are written here."""

from __future__ import annotations

import pytest

from psyq.analysis.report import build
from psyq.engine.results import answers
from psyq.analysis.report.sections import SECTIONS
from psyq.analysis.scoring.human_data import human_data
from psyq.cli import main
from runs_helper import make_mini_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return make_mini_run(tmp_path_factory.mktemp("inputs"), n_personas=4, repeats=1)


class Recorder:
    """A report section that records being asked for its sections."""
    name, kind, human_data, takes_targets = "recorder", None, None, False

    def __init__(self):
        self.calls = 0

    def applies(self, report) -> bool:
        self.calls += 1
        return False


@pytest.fixture
def watched(monkeypatch):
    """The recorder registered first, and every export of a run's answers counted."""
    recorder, exports = Recorder(), []
    monkeypatch.setattr(SECTIONS, "_plugins", {"recorder": recorder, **SECTIONS._plugins})
    real = answers.answer_table
    monkeypatch.setattr(answers, "answer_table", lambda run, **kw: exports.append(run.path) or real(run, **kw))
    return recorder, exports


def people_file(tmp_path, last_row: str):
    path = tmp_path / "people.csv"
    path.write_text("respondent_id,a,b,c,d\nh1,1,2,3,4\nh2,7,6,5,4\nh3," + last_row + "\n")
    return path


def test_a_value_off_the_scale_in_the_last_row_stops_the_report_before_any_work(run, tmp_path, watched, capsys):
    recorder, exports = watched
    bad = people_file(tmp_path, "2,3,9,1")                  # 9 on a 1–7 scale, line 4, column c
    code = main(["report", str(run), "--human", f"mini={bad}", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{bad}:4:" in err and "9" in err and "Traceback" not in err
    assert recorder.calls == 0 and exports == []               # no section asked, the answers not exported
    assert not (tmp_path / "out").exists()


def test_a_good_file_reaches_the_sections_read_once(run, tmp_path, watched, monkeypatch):
    recorder, exports = watched
    reads = []
    real = build.HumanData.answers
    monkeypatch.setattr(build.HumanData, "answers", lambda self, inst: reads.append(inst.id) or real(self, inst))
    good = people_file(tmp_path, "2,3,4,1")
    build.write_report(run, tmp_path / "out", people=human_data({"mini": str(good)}))
    assert recorder.calls == 1 and len(exports) == 1
    assert reads == ["mini"]                                    # read before the export, never again
    assert "Comparison with human data" in (tmp_path / "out" / "report.md").read_text()


def test_the_command_line_says_a_bad_file_before_it_imports_the_report(run, tmp_path):
    """`psyq report` checks the people's answers to the run's questionnaires before it imports the
    report and its statistics (seconds of imports): a bad file is said at once. Probed in a fresh
    interpreter: after the error, neither the report's builder nor scipy.stats has been imported."""
    import subprocess
    import sys

    bad = people_file(tmp_path, "2,3,9,1")
    probe = ("import sys; from psyq.cli import main; "
             f"code = main(['report', {str(run)!r}, '--human', 'mini={bad}', '--out', {str(tmp_path / 'out')!r}]); "
             "print(code, 'psyq.analysis.report.build' in sys.modules, 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["2", "False", "False"], (out.stdout, out.stderr)
    assert f"{bad}:4:" in out.stderr and "Traceback" not in out.stderr


def test_a_good_file_is_read_once_from_the_command_line(run, tmp_path, monkeypatch):
    """Checked before the report is imported, then given to it: the file is read from disk once."""
    from psyq.analysis.scoring import human_data as human_data_module

    reads = []
    real = human_data_module.read_answers_csv
    monkeypatch.setattr(human_data_module, "read_answers_csv",
                        lambda path, *a, **k: reads.append(str(path)) or real(path, *a, **k))
    good = people_file(tmp_path, "2,3,4,1")
    assert main(["report", str(run), "--human", f"mini={good}", "--out", str(tmp_path / "out")]) == 0
    assert reads == [str(good)]
    assert "Comparison with human data" in (tmp_path / "out" / "report.md").read_text()
