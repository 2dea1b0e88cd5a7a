"""The ``psyq`` command line.

Exit codes: 0 success; 1 a run-time failure that is not the user's input; 2 bad input (the
problems are printed as ``file:line:column: field: what``, never as a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from . import __version__
from .errors import InputError, PsyqError
from .human_data import read_answers_csv
from .instrument import instrument_json_schema, load_instrument
from .scoring import score_wide

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
MAX_PROBLEMS_SHOWN = 50


def _yaml_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")))
        else:
            files.append(path)
    return files


def cmd_validate(args: argparse.Namespace) -> int:
    files = _yaml_files(args.paths)
    if not files:
        raise InputError.single(" ".join(args.paths), "no YAML files found")
    problems = []
    for file in files:
        try:
            load_instrument(file)
            print(f"ok  {file}")
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(instrument_json_schema(), indent=2))
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    instrument = load_instrument(args.instrument)
    answers = read_answers_csv(args.responses, instrument)
    scores = score_wide(instrument, answers)
    if args.out:
        scores.to_csv(args.out, index_label="respondent_id")
        print(f"scored {len(scores)} respondents on {', '.join(scores.columns)} -> {args.out}")
    else:
        scores.to_csv(sys.stdout, index_label="respondent_id")
    return EXIT_OK


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "validate": (cmd_validate, "check instrument YAML files (schema and meaning)"),
    "schema": (cmd_schema, "print the JSON Schema of the instrument format"),
    "score": (cmd_score, "score a CSV of item answers (human data) with an instrument"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="psyq",
        description="Administer psychometric instruments to LLM-simulated personas, "
                    "score them and compare them with human norms.")
    parser.add_argument("--version", action="version", version=f"psyq {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parsers = {name: sub.add_parser(name, help=help_, description=help_)
               for name, (_, help_) in COMMANDS.items()}
    parsers["validate"].add_argument("paths", nargs="+", metavar="PATH",
                                     help="YAML files or folders holding them")
    p = parsers["score"]
    p.add_argument("instrument", help="instrument YAML file")
    p.add_argument("responses", help="CSV with respondent_id and one column per item id")
    p.add_argument("--out", help="write scores to this CSV (default: standard output)")
    return parser


def report_input_error(exc: InputError) -> None:
    """Print an input error's problems, one per line, to standard error."""
    shown = exc.problems[:MAX_PROBLEMS_SHOWN]
    for problem in shown:
        print(f"error: {problem}", file=sys.stderr)
    if len(exc.problems) > len(shown):
        print(f"error: ... and {len(exc.problems) - len(shown)} more problems", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler, _ = COMMANDS[args.command]
    try:
        return handler(args)
    except InputError as exc:
        report_input_error(exc)
        return EXIT_BAD_INPUT
    except PsyqError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
