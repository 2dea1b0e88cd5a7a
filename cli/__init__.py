"""The ``psyq`` command line: this module builds the parser from the command groups (files,
administering, results, judging, importing, publishing: one module each) and runs the chosen command.

Exit codes (also in ``psyq --help``):

- 0: success; for `psyq run`, every trial finished: answered, or missing with its reason;
- 1: a run-time failure that is not the user's input (e.g. the server refused the key);
- 2: bad input (the problems are printed as ``file:line:column: field: what``, never as a
  traceback);
- 3: `psyq run` ended, but some trials failed (the backend gave no answer after its retries);
  they are stored as failed and the same command retries them;
- 4: `psyq run` stopped early: a backend could not be reached (connections failed again and
  again); the message names the URL;
- 5: `psyq run` refused: another process is running the same run (the message names the run
  directory and that process);
- 6: `psyq run` stopped early: the provider refused requests in a way retrying cannot fix (a bad
  key or model at once, else the fifth identical refusal); its words and, where known, the fix;
- 130: interrupted (Ctrl-C or SIGTERM); every answer received is stored.

Start-up is part of the interface (``psyq status`` is typed many times a day): a command module
imports at its top only what building the parser needs, and each command imports what it uses
inside its handler; the parser gets only the chosen command's arguments (:func:`build_parser`).
So ``psyq --version``, ``--help``, ``status`` and ``runs`` import neither pandas nor the backends,
and no light command (those, ``list``, ``plan``, ``view``) imports the statistics (scipy.stats,
statsmodels, pingouin, matplotlib): tests/test_startup_imports.py checks it, bench/startup.py
measures it.

May import: every room, and psyq.analysis (the command line is the outer edge that drives both).
"""

from __future__ import annotations

import argparse
import os
import sys

from psyq.engine import __version__
from psyq.cli import (administering, bundle, files, importing, judging, publishing, questionnaire, results, starting,
                      viewing)
from psyq.cli.common import EXIT_BAD_INPUT, EXIT_CODES_HELP, EXIT_FAILURE, EXIT_LOCKED, Stopped, report_input_error
from psyq.cli.administering import PLAN_HELP
from psyq.engine.files.errors import InputError, PsyqError
from psyq.engine.files.notices import print_notices_to_stderr
from psyq.engine.files.errors import RunLocked

# Every command, in the order `psyq --help` lists them: name -> (handler, help, arguments).
ORDER = ["list", "init", "validate", "schema", "score", "run", "plan", "preregister", "status", "runs", "export", "scores", "judge", "sensitivity",
         "perturb", "report", "import", "questionnaire", "rating-sheet", "view", "bundle", "verify"]
_ALL = {**starting.COMMANDS, **files.COMMANDS, **administering.COMMANDS, **results.COMMANDS, **judging.COMMANDS, **importing.COMMANDS,
        **viewing.COMMANDS, **questionnaire.COMMANDS, **bundle.COMMANDS, **publishing.COMMANDS}
COMMANDS = {name: _ALL[name] for name in ORDER}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The psyq command's parser: one sub-command per entry of COMMANDS. With `command`, only that
    sub-command gets its arguments (the others are named, with their help, for ``psyq --help``), so
    that a command does not import what the other commands' options need (``psyq import``'s
    formats load the importers); ``""``: none does (``psyq --version``, ``psyq --help``).

    Example:
        >>> build_parser().parse_args(["validate", "studies"]).paths
        ['studies']
        >>> build_parser("status").parse_args(["status", "runs/s"]).run
        'runs/s'
    """
    parser = argparse.ArgumentParser(
        prog="psyq",
        description="Administer psychometric instruments to LLM-simulated personas, "
                    "score them and compare them with human norms.",
        epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"psyq {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_, arguments) in COMMANDS.items():
        subparser = sub.add_parser(name, help=help_, description=help_,
                                   epilog=EXIT_CODES_HELP if name == "run" else PLAN_HELP if name == "plan" else None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
        if command is None or name == command:
            arguments(subparser)
    return parser


def chosen_command(argv: list[str]) -> str:
    """The command `argv` names: its first word that is not an option (psyq's own options take no
    value), or "" when there is none.

    Example:
        >>> chosen_command(["--version"]), chosen_command(["status", "runs/s"]), chosen_command([])
        ('', 'status', '')
    """
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    """Run the psyq command with `argv` (default: the process's arguments); return its exit code.

    Example:
        >>> main(["validate", "tests/fixtures/stages/staged_study.yaml"])
        ok  tests/fixtures/stages/staged_study.yaml
        0
    """
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        # Only the chosen command's arguments are built: `psyq status` need not import the importers.
        args = build_parser(chosen_command(argv)).parse_args(argv)
        handler = COMMANDS[args.command][0]
        print_notices_to_stderr()   # what a reader did otherwise than written is said: "note: file:line: ..."
        try:
            code = handler(args)
        except InputError as exc:
            report_input_error(exc)
            return EXIT_BAD_INPUT
        except Stopped as exc:       # Ctrl-C, SIGTERM or SIGHUP while a command wrote into a run
            print(exc.message, file=sys.stderr)
            return exc.code
        except RunLocked as exc:     # another process writes into the same run: it is named
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_LOCKED
        except PsyqError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        sys.stdout.flush()   # a reader that has gone (`| head`) is met here, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader of standard output closed it (`psyq schema study | head`): stop quietly. Output still
        # buffered would raise again when Python flushes at exit, so stdout now points at devnull.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
