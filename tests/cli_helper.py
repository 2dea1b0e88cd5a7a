"""The psyq command run in this process, for tests where what is checked is what a command does (its
files, its output, its exit code), not how a process starts: :func:`psyq_in_process` calls
``psyq.cli.main`` (what ``python -m psyq.cli`` and the ``psyq`` script call, passing
its return value to ``sys.exit``) with standard output and error captured, in the given folder and
environment, and returns what ``subprocess.run(..., capture_output=True, text=True)`` would.

It saves the start of a Python process and psyq's imports (seconds on two shared cores) per call.
An exception psyq does not catch is raised here, so a test that checked for no traceback in the
error output fails on it all the same. Tests of what only a process shows (signals, a killed run,
the installed entry point, the memory a command takes, everything a process prints) keep starting
one: e.g. tests/test_administer.py, tests/test_run_safety.py, tests/test_batch.py,
tests/test_stages.py, tests/test_malformed.py, tests/test_wheel.py, and one test each in
tests/test_report.py and tests/test_validate.py.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Iterator, Mapping

from psyq.cli import main

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ replaced by `env` (as subprocess's env= does) while the command runs."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def psyq_in_process(*args: object, cwd: Path | str = ROOT, env: Mapping[str, str] | None = None,
                    check: bool = False) -> subprocess.CompletedProcess:
    """`psyq ARGS...` run by psyq's own main() in this process: returncode, stdout, stderr (with
    `check`, a non-zero exit code raises CalledProcessError, as subprocess.run's check=True)."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    # warnings.catch_warnings: what the command sets up for itself (its notices printed as "note: ...")
    # is undone when it returns, as when its process ends.
    with contextlib.chdir(cwd), _environment(env), warnings.catch_warnings(), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:   # argparse: a usage error (2), --help or --version (0)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    done = subprocess.CompletedProcess(["psyq", *argv], code, out.getvalue(), err.getvalue())
    if check:
        done.check_returncode()
    return done

