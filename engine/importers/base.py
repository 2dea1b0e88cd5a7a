"""What every importer is: :class:`Importer`, one file format ``psyq import NAME`` reads.

A format's module subclasses it; ``engine/importers/__init__.py`` registers an instance of each
(:mod:`psyq.engine.importers.registry`).
"""

from __future__ import annotations

import argparse
from typing import Any

from psyq.engine.importers.draft import Draft


class Importer:
    """One file format psyq can import an instrument from."""

    name: str = ""
    help: str = ""
    file_help: str = "the file to import"
    # What the importer writes: "instrument" (read() returns drafts), or another kind of file
    # ("situations": a situation set; "human-change": the human change CSV) made by convert(), or
    # "imported-run": a directory of scores psyq did not collect, made by import_run().
    produces: str = "instrument"
    # For an importer that produces neither instruments nor rows of a run: what `--out` writes,
    # and what `--id` names (None: the format takes no --id).
    out_help: str = "write the result here (default: standard output)"
    id_help: str | None = None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options of this format beyond the file and the output options of its `produces`
        (none by default)."""

    def read(self, path: str, options: dict[str, Any]) -> list[Draft]:
        """The instrument(s) in the file at `path`; raises InputError for a malformed file.

        `options` are the parsed command-line options (as a dict, so a library caller can give
        them without argparse).
        """
        raise NotImplementedError

    def convert(self, path: str, options: dict[str, Any]) -> Any:
        """For an importer whose `produces` is not "instrument": the converted file, as an
        :class:`~psyq.engine.importers.emotionbench.Converted` (text, summary, notes)."""
        raise NotImplementedError
