"""What every command shares: exit codes, argument types, printing input errors."""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable, Iterator, TypeVar

from psyq.engine.files.errors import InputError

if TYPE_CHECKING:
    from psyq.engine.results.run import Run

T = TypeVar("T")

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
EXIT_TRIALS_FAILED, EXIT_UNREACHABLE, EXIT_LOCKED, EXIT_REFUSED, EXIT_INTERRUPTED = 3, 4, 5, 6, 130

EXIT_CODES_HELP = """exit codes:
  0    success (psyq run: every trial answered, or missing with its reason)
  1    run-time failure (e.g. the server refused the API key)
  2    bad input: file:line:column: field: what is wrong
  3    psyq run ended but some trials failed (no answer after retries); rerun to retry them
  4    psyq run stopped early: a backend could not be reached (the URL is named)
  5    psyq run or judge refused: another process is writing the same run (directory and PID named)
  6    psyq run stopped early: the provider refused requests in a way retrying cannot fix
       (a bad key or model at once, or 5 identical refusals; its words and, where known, the fix)
  130  interrupted; every answer received is stored, rerun to resume"""
MAX_PROBLEMS_SHOWN = 50
RUN_HELP = ("a run's folder (runs/STUDY/RUN_ID), a study's runs folder (runs/STUDY) for its latest run, or a "
            "bundle (FILE.zip, from psyq bundle)")


class Stopped(Exception):
    """A command that writes into a run was interrupted (Ctrl-C, SIGTERM, SIGHUP): :func:`psyq.cli.main`
    prints :attr:`message` and exits with :attr:`code`."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def run_stoppable(work: Callable[[], Awaitable[T]], kept: str) -> T:
    """Run the coroutine `work()` to its end. Ctrl-C, SIGTERM (a scheduler, `timeout`, `systemctl
    stop`) and SIGHUP (a closed terminal) stop it the same clean way; then :class:`Stopped` says
    "every `kept` received is stored" (exit 130). A coroutine that handles the stop itself (``administer`` keeps every
    answer and returns) returns as usual.

    Example:
        >>> async def judged():
        ...     return 3
        >>> run_stoppable(judged, "judgement")
        3
    """
    import asyncio
    import signal

    async def main() -> T:
        task = asyncio.current_task()
        for stop in (signal.SIGTERM, signal.SIGHUP):
            asyncio.get_running_loop().add_signal_handler(stop, task.cancel)
        return await work()

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise Stopped(EXIT_INTERRUPTED, f"interrupted: every {kept} received is stored; run the same command "
                                        "again to resume") from None


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a number above 0")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a number of 0 or more")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def report_input_error(exc: InputError) -> None:
    """Print an input error's problems, one per line, to standard error."""
    shown = exc.problems[:MAX_PROBLEMS_SHOWN]
    for problem in shown:
        print(f"error: {problem}", file=sys.stderr)
    if len(exc.problems) > len(shown):
        print(f"error: ... and {len(exc.problems) - len(shown)} more problems", file=sys.stderr)


def prorated_summary(scores, what: str) -> str:
    """One line saying how many scores were prorated and how many left unscored (too few items)."""
    prorated = int(scores["prorated"].sum())
    unscored = int(scores["score"].isna().sum())
    parts = [f"{what}: {len(scores)} subscale scores; {prorated} prorated over the items answered"]
    parts.append(f"{unscored} not scored (fewer items answered than the subscale's min_answered)")
    return "; ".join(parts)


def chosen_run(path: str, prompts: str | None = None) -> Path:
    """The run directory a command reads for its RUN argument: the run given, or the latest run of
    a study's runs folder (psyq.engine.results.runs.resolve_run), said in one line on stderr so
    that nobody reads another run than they think.

    Example (`run_dir`: the only run in its study's runs folder):
        >>> chosen_run(str(run_dir.parent)) == run_dir   # stderr: psyq: <runs folder> -> its latest run, <run_dir>
        True
    """
    from psyq.engine.results.runs import resolve_run

    chosen = resolve_run(path, prompts)
    if line := chosen.line():
        print(f"psyq: {line}", file=sys.stderr)
    return chosen.path


@dataclass
class ChosenRun:
    """The run a command reads (`path`) and where it writes what it makes unless told (`out`): the
    run's own folder, or for a bundle, a folder named after the bundle beside it (a bundle is
    read from a temporary folder, never unpacked into the user's). :meth:`run` opens it once."""

    path: Path
    out: Path
    bundle: Path | None = None
    opened: Run | None = None

    def run(self) -> Run:
        """The run, opened once (:func:`psyq.engine.results.run.open_run`)."""
        if self.opened is None:
            from psyq.engine.results.run import open_run

            self.opened = open_run(self.path)
        return self.opened

    def output(self, name: str) -> Path:
        """Where a file `name` the command writes goes by default (its folder made when needed).

        Example:
            >>> ChosenRun(Path("runs/s/ab12"), Path("runs/s/ab12")).output("answers.csv").as_posix()
            'runs/s/ab12/answers.csv'
        """
        self.out.mkdir(parents=True, exist_ok=True)
        return self.out / name


@contextlib.contextmanager
def opened_run(path: str, prompts: str | None = None) -> Iterator[ChosenRun]:
    """The run a command's RUN argument names, for the block's length: a run's folder, a study's
    runs folder (its latest run, as :func:`chosen_run`), or a bundle (FILE.zip), checked and
    unpacked into a temporary folder removed afterwards (psyq.engine.bundle.read).

    Example (`run_dir`: the only run in its study's runs folder):
        >>> with opened_run(str(run_dir)) as chosen:
        ...     chosen.path == run_dir, chosen.bundle
        (True, None)
    """
    from psyq.engine.bundle.read import is_bundle
    from psyq.engine.results.run import open_run

    if not is_bundle(path):
        run = chosen_run(path, prompts)
        yield ChosenRun(run, run)
        return
    with open_run(path) as run:
        source, record = Path(path), run.bundle.record
        print(f"psyq: {path}: the run {record.get('study')}/{record.get('run_id')} of a bundle, read "
              "from a temporary folder", file=sys.stderr)
        yield ChosenRun(run.path, source.parent / source.stem, source, run)


def id_paths(specs: list[str] | None, option: str) -> dict[str, str]:
    """INSTRUMENT_ID=PATH arguments as a mapping."""
    out = {}
    for spec in specs or []:
        instrument, sep, path = spec.partition("=")
        if not sep:
            raise InputError.single(spec, f"{option} takes INSTRUMENT_ID=FILE.csv, e.g. iri=humans.csv")
        out[instrument] = path
    return out
