"""`psyq validate` on malformed instruments: every problem named by line, column and field.

Each file in ``tests/fixtures/bad_instruments/`` breaks one thing and starts with one
``# expect: LINE:COL: field.path: message`` comment per problem it must produce, in order
(without the ``error: FILE:`` prefix; a problem with no position is written ``# expect: message``).
The tests run the command's main() in this process (tests/cli_helper.py) and compare standard error
line by line; one bad file and the valid instrument are also checked with the command as a process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "bad_instruments"
EXPECT = "# expect:"

def expected_lines(path: Path) -> list[str]:
    text = path.read_bytes().decode("latin-1")  # the comment lines are ASCII; not_utf8.yaml is not
    lines = [line[len(EXPECT):].strip() for line in text.splitlines() if line.startswith(EXPECT)]
    return [f"error: {path}:{'' if e[:1].isdigit() else ' '}{e}" for e in lines]


def run_validate(*paths: Path) -> subprocess.CompletedProcess[str]:
    """`psyq validate PATHS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process("validate", *paths)


def run_validate_process(*paths: Path) -> subprocess.CompletedProcess[str]:
    """`psyq validate PATHS` as a process of its own: what the user sees, imports included."""
    return subprocess.run([sys.executable, "-m", "psyq.cli", "validate", *map(str, paths)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def _cases() -> list:
    return [pytest.param(f, id=f.stem) for f in sorted(FIXTURES.glob("*.yaml"))]


def test_corpus_is_complete() -> None:
    files = sorted(FIXTURES.glob("*.yaml"))
    assert len(files) >= 24
    for f in files:
        assert expected_lines(f), f"{f.name} has no '# expect:' line"


@pytest.mark.parametrize("path", _cases())
def test_bad_instrument_is_reported(path: Path) -> None:
    result = run_validate(path)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == expected_lines(path)


def test_bad_instrument_is_reported_by_the_command_as_a_process() -> None:
    path = sorted(FIXTURES.glob("*.yaml"))[0]
    result = run_validate_process(path)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == expected_lines(path)


def test_valid_instrument_passes() -> None:
    path = ROOT / "tests" / "data" / "mini_1to7.yaml"
    result = run_validate_process(path)     # a process: nothing else on stderr, imports included
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines() == [f"ok  {path}"]


def test_shipped_instruments_validate() -> None:
    result = run_validate(ROOT / "instruments")
    assert result.returncode == 0, result.stderr
    shipped = sorted(p.name for p in (ROOT / "instruments").rglob("*.yaml"))
    assert sorted(line.split()[-1].rsplit("/", 1)[-1] for line in result.stdout.splitlines()) == shipped
    assert {"iri.yaml", "bes.yaml", "leas_psyq.yaml", "ea_vignettes_psyq.yaml"} <= set(shipped)
