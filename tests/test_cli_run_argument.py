"""What a new user meets in the first hour: a study's runs folder given where a run directory is
expected, the commands `psyq run` prints to paste next, a run whose server was never reached,
`psyq report` with a missing input file, and a closed standard output.

The runs are made with `psyq run` itself (in-process) against the stub server (tests/stub_server.py:
real HTTP over loopback, a real SQLite store), and a port where nothing listens. One study folder
holds, oldest first: a run as written, a run with --perturb-prompts, and a run whose server
was never reached (nothing answered)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from psyq.cli import build_parser, main
from psyq.engine.results.runs import resolve_run
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"   # items a-d, scale 1-7
EXIT_UNREACHABLE = 4


def psyq(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("first_hour")
    # 10 personas x 4 items = 40 trials: enough for the 20 refused connections in a row that stop a run.
    personas = [{"id": f"p{i}", "attributes": {"age": 20 + i}} for i in range(10)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": False,
                                                     "personas": personas}))
    study, runs = tmp / "study.yaml", tmp / "runs"
    with StubServer() as stub:
        study.write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "s", "instruments": [str(MINI)], "cohort": "cohort.yaml",
            "backends": [{"id": "stub", "kind": "openai", "base_url": stub.url, "model": "m", "max_retries": 0,
                          "backoff_s": 0.01, "concurrency": 2}],
            "protocol": {"answer": "text", "option_order": "as_written", "seed": 1}}))
        plain = psyq("run", study, "--runs-dir", runs)
        assert plain[0] == 0, plain[2]
        perturbed = psyq("run", study, "--runs-dir", runs, "--perturb-prompts", "prompt_noise:typos_light")
        assert perturbed[0] == 0, perturbed[2]
        stub_url = stub.url
    dead = psyq("run", study, "--runs-dir", runs, "--base-url", f"http://127.0.0.1:{free_port()}/v1", "--model", "m")
    assert dead[0] == EXIT_UNREACHABLE, dead[2]
    by_kind = {}
    for run in (runs / "s").iterdir():
        manifest = json.loads((run / "manifest.json").read_text())
        kind = "perturbed" if manifest.get("prompt_perturbation") else \
            "dead" if manifest["backends"].get("m") else "plain"
        by_kind[kind] = run
    return {"tmp": tmp, "study": study, "runs": runs, "folder": runs / "s", "stub_url": stub_url,
            "outputs": {"plain": plain, "perturbed": perturbed, "dead": dead}, **by_kind}


def latest_line(folder: dict) -> str:
    """The line every command prints for the study folder: its latest run with answers is the perturbed one;
    the run that reached no server is newer and passed over."""
    return (f"psyq: {folder['folder']} -> its latest run that has answers, {folder['perturbed']} (passed over 1 "
            f"newer run with nothing answered: {folder['dead']})")


# Every command with a run positional argument, given the study folder: (arguments, file written in the run).
def _commands(folder: dict, out: Path) -> dict[str, tuple[list, str | None]]:
    stub = ["--base-url", folder["stub_url"], "--model", "m"]
    return {
        "export": (["export", folder["folder"]], "answers.csv"),
        "scores": (["scores", folder["folder"]], "scores.csv"),
        "report": (["report", folder["folder"]], "report.md"),
        "judge": (["judge", folder["folder"], "--rubric", "leas_level", *stub], None),
        "perturb": (["perturb", folder["folder"], "--set", "haleas7", *stub], None),
        "rating-sheet": (["rating-sheet", folder["folder"], out / "sheet.xlsx", "--rubric", "empathy_ceb"], None),
        "bundle": (["bundle", folder["folder"], "--out", out / "run.zip"], None),
    }


@pytest.mark.parametrize("command", ["export", "scores", "report", "judge", "perturb", "rating-sheet", "bundle"])
def test_every_command_that_reads_a_run_takes_the_study_folder_for_its_latest_run(folder, command, tmp_path):
    args, written = _commands(folder, tmp_path)[command]
    with StubServer() as stub:   # judge and perturb name a server; with nothing to judge, nothing is sent
        args = [stub.url if a == folder["stub_url"] else a for a in args]
        code, out, err = psyq(*args)
    assert code == 0, err
    assert latest_line(folder) in err.splitlines()
    if written:
        assert (folder["perturbed"] / written).is_file() and f"{folder['perturbed'] / written}" in out
        assert not (folder["plain"] / written).exists()
    if command == "rating-sheet":   # the command it prints to paste names the exact run
        assert f"--run {folder['perturbed']} " in out
    if command == "bundle":          # the bundle holds that run
        import zipfile
        with zipfile.ZipFile(tmp_path / "run.zip") as bundle:
            manifest = json.loads(bundle.read("run/manifest.json"))
        assert manifest["run_id"] == folder["perturbed"].name


def test_every_run_argument_of_the_parser_is_one_of_those_tested():
    # A command added later with a RUN argument fails here until it resolves a folder and is tested above.
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    taking_a_run = {name for name, p in sub.choices.items()
                    if any(a.dest == "run" and not a.option_strings for a in p._actions)}
    assert taking_a_run == {"status", "export", "scores", "report", "judge", "perturb", "rating-sheet", "bundle"}
    assert {a.dest for a in sub.choices["sensitivity"]._actions if not a.option_strings} >= {"original", "perturbed"}


def test_a_run_directory_given_as_such_is_read_without_a_note(folder):
    code, out, err = psyq("export", folder["plain"], "--out", folder["tmp"] / "plain.csv")
    assert code == 0, err
    assert "psyq:" not in err and (folder["tmp"] / "plain.csv").is_file()


def test_sensitivity_takes_the_folder_for_the_run_as_written_and_the_perturbed_one(folder):
    code, out, err = psyq("sensitivity", folder["folder"], folder["folder"])
    assert code == 0, err
    lines = err.splitlines()
    assert (f"psyq: {folder['folder']} -> its latest run made without --perturb-prompts that has answers, "
            f"{folder['plain']} (passed over 1 newer run with nothing answered: {folder['dead']})") in lines
    assert f"psyq: {folder['folder']} -> its latest run made with --perturb-prompts, {folder['perturbed']}" in lines
    assert out.splitlines()[1].startswith("typos_light  stub  mini ")
    assert "is itself a perturbed run" not in err and "was not run with --perturb-prompts" not in err


def test_run_ends_with_the_next_commands_which_paste_and_run(folder):
    code, out, err = folder["outputs"]["plain"]
    run = folder["plain"]
    lines = out.splitlines()
    start = lines.index("next:")
    assert lines[start:] == ["next:", f"  psyq status {run}", f"  psyq export {run}", f"  psyq scores {run}",
                             f"  psyq report {run}"]
    commands = [shlex.split(line) for line in lines[start + 1:]]
    for command in commands:   # pasted as printed (into the shell: shlex-quoted), each reads the run
        code, _, err = psyq(*command[1:])
        assert code == 0, err


def test_the_next_commands_quote_a_path_the_shell_would_split(tmp_path):
    from psyq.cli.administering import next_commands

    run = tmp_path / "my runs" / "s" / "ab12"
    lines = next_commands(run)
    assert [shlex.split(line)[2] for line in lines[1:]] == [str(run)] * 4
    assert next_commands(run, ended=False) == ["next:", f"  psyq status {shlex.quote(str(run))}"]


def test_a_run_whose_server_was_never_reached_says_so_and_is_passed_over(folder):
    code, out, err = folder["outputs"]["dead"]
    assert "cannot be reached" in err
    assert f"note: no trial was answered: {folder['dead']} holds no answer yet" in err
    assert "next:" not in out   # nothing to read
    # The run stays (a rerun resumes it; nothing is deleted under its lock) and is marked in `psyq runs`.
    assert (folder["dead"] / "run.sqlite").is_file()
    code, out, err = psyq("runs", folder["runs"])
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith(str(folder["dead"])))
    assert "0/40 done (answered 0, missing 0, failed " in row
    assert row.endswith("nothing answered (passed over as its folder's latest run; rerun the study when its "
                        "server answers)")
    # `psyq status` of the folder lists it and shows the latest run that has answers.
    code, out, err = psyq("status", folder["folder"])
    assert code == 0, err
    assert (f"showing its latest run with answers (by last activity; 1 newer with nothing answered passed "
            f"over), {folder['perturbed']}; 2 other runs listed above") in out
    assert f"(run {folder['perturbed'].name})" in out


def test_a_folder_whose_runs_have_no_answer_gives_its_latest_and_says_so(folder, tmp_path):
    shutil.copytree(folder["dead"], tmp_path / "s" / folder["dead"].name)
    chosen = resolve_run(tmp_path / "s")
    assert chosen.path == tmp_path / "s" / folder["dead"].name
    assert chosen.line() == f"{tmp_path / 's'} -> its latest run, {chosen.path} (no run in it has an answer yet)"


def test_report_checks_every_input_file_before_any_analysis(folder, tmp_path, monkeypatch):
    import psyq.analysis.report as report

    calls = []
    monkeypatch.setattr(report, "write_report", lambda *a, **k: calls.append(a))
    (tmp_path / "folder.csv").mkdir()
    code, out, err = psyq("report", folder["plain"], "--human", f"mini={tmp_path / 'people.csv'}:keyed",
                          "--codebook", f"mini={tmp_path / 'book.yaml'}", "--retest", f"mini={tmp_path / 'folder.csv'}",
                          "--targets", f"ea={tmp_path / 't.csv'}", "--human-change", tmp_path / "change.csv")
    assert code == 2 and calls == []
    assert err.splitlines() == [
        f"error: {tmp_path / 'people.csv'}: --human: no such file",   # ':keyed' read off, as before
        f"error: {tmp_path / 'book.yaml'}: --codebook: no such file",
        f"error: {tmp_path / 'folder.csv'}: --retest: not a file (a folder or a device); give the CSV or YAML "
        "file itself",
        f"error: {tmp_path / 't.csv'}: --targets: no such file",
        f"error: {tmp_path / 'change.csv'}: --human-change: no such file"]
    # A missing run is said with them.
    code, _, err = psyq("report", tmp_path / "nowhere", "--human", f"mini={tmp_path / 'people.csv'}")
    assert code == 2 and calls == []
    assert err.splitlines()[0].startswith(f"error: {tmp_path / 'nowhere'}: no such run directory or folder")
    assert err.splitlines()[1] == f"error: {tmp_path / 'people.csv'}: --human: no such file"


def test_input_file_returns_the_file_the_analysis_reads(tmp_path):
    from psyq.analysis.scoring.human_data import input_file

    (tmp_path / "people.csv").write_text("respondent_id\n")
    assert input_file(str(tmp_path / "people.csv"), "--human") == tmp_path / "people.csv"


def test_a_closed_standard_output_ends_quietly():
    # The reader is gone before psyq writes a byte: its first write meets a broken pipe.
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "psyq.cli", "schema", "study"], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 1
    assert done.stderr == ""
