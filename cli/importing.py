"""Importing other tools' files: psyq import FORMAT."""

from __future__ import annotations

import argparse



def cmd_import(args: argparse.Namespace) -> int:
    from psyq.engine.importers.command import run as run_import

    return run_import(args)


def _arguments_import(p: argparse.ArgumentParser) -> None:
    from psyq.engine.importers.command import add_arguments as add_import_arguments  # one sub-command per format
    add_import_arguments(p)


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "import": (cmd_import, "turn a REDCap dictionary, R psych keys or a Qualtrics .qsf into instrument YAML; "
                          "import reference replies or human ratings into a run; convert EmotionBench's "
                          "situations, crowd workbook or model results", _arguments_import),
}
