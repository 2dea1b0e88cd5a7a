"""Asking people the same questions: psyq questionnaire."""

from __future__ import annotations

import argparse
import sys

# The formats' names, known without importing them (start-up speed); tests/test_questionnaire.py
# checks that this is the registry's list.
FORMATS = ("jspsych", "redcap", "qualtrics")


def cmd_questionnaire(args: argparse.Namespace) -> int:
    from pathlib import Path

    from psyq.cli.common import EXIT_BAD_INPUT

    if args.gather:
        if args.source or args.to:
            print("error: --gather joins answer files; give it without STUDY_OR_INSTRUMENT and --to", file=sys.stderr)
            return EXIT_BAD_INPUT
        from psyq.engine.questionnaire.gather import gather_answers

        n = gather_answers(args.gather, Path(args.out))
        print(f"{n} people's answers from {len(args.gather)} file(s) -> {args.out}")
        return 0
    if not args.source or not args.to:
        print("error: give STUDY_OR_INSTRUMENT and --to FORMAT (or --gather FILE ... to join answer files)",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    from psyq.engine.questionnaire import get_format
    from psyq.engine.questionnaire.form import questionnaire_from

    asked = questionnaire_from(args.source)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(f"error: {out}: --out: not a folder", file=sys.stderr)
        return EXIT_BAD_INPUT
    written = get_format(args.to).write(asked, out)
    for note in written.notes:
        print(f"note: {note}", file=sys.stderr)
    parts = ", ".join(f"{p.instrument.id} ({len(p.items)} items)" for p in asked.parts)
    print(f"{args.to} questionnaire of {asked.source.name}: {parts}; {len(asked.demographics)} demographic question(s)")
    for path in written.files:
        print(f"  {path}")
    return 0


def _arguments_questionnaire(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", nargs="?", metavar="STUDY_OR_INSTRUMENT",
                   help="a study (its instruments, protocol and cohort) or one instrument; a file or a shipped name")
    p.add_argument("--to", choices=FORMATS, help="the platform: jspsych (a folder that runs from disk), redcap (a data dictionary), qualtrics (a .qsf)")
    p.add_argument("--out", required=True,
                   help="the folder to write (with --gather: the CSV of everyone's answers)")
    p.add_argument("--gather", nargs="+", metavar="FILE",
                   help="join people's jsPsych answer files (one per person, or a hosting service's joined "
                        "export) into one CSV at --out")


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "questionnaire": (cmd_questionnaire, "write a study's questionnaire for people (jsPsych, REDCap, Qualtrics) "
                                         "with the codebooks of their answer exports; join people's jsPsych files", _arguments_questionnaire),
}
