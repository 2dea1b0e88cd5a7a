"""Importers: instruments kept in other tools' files, turned into psyq instrument YAML.

One module per format, registered here by the name ``psyq import NAME`` uses:

- :mod:`~psyq.engine.importers.redcap`: a REDCap data dictionary (CSV);
- :mod:`~psyq.engine.importers.psych_keys`: an R ``psych`` key list (``list(PT = c("q3", "-q8"))``)
  or a keys matrix written by ``write.csv(make.keys(...))``;
- :mod:`~psyq.engine.importers.qsf`: a Qualtrics survey export (``.qsf``, JSON).

Each importer reads its file into one or more :class:`~psyq.engine.importers.draft.Draft`
instruments and records, as notes, everything it could not map (reverse keys, subscales,
item types that are not ratings, branching logic ...). :mod:`~psyq.engine.importers.command` writes
each draft as YAML with the notes as comments and checks that the result validates.

How to add a format
-------------------
Write one module with a subclass of :class:`Importer` (its `name`, `help`, the options it
takes in :meth:`Importer.add_arguments`, and :meth:`Importer.read`), and register an instance
at the end of this file; ``psyq import NAME`` then exists, with its own ``--help``.

An importer that produces something other than an instrument (EmotionBench's situations and
crowd data, model results, :mod:`~psyq.engine.importers.emotionbench`) sets `produces` and implements
:meth:`Importer.convert` instead of :meth:`Importer.read`; one that writes into a finished run's
store (`produces = "run"`: reference replies and human ratings, :mod:`~psyq.engine.importers.replies`)
implements ``into_run(path, options)`` and takes ``--run`` instead of ``--out``.

Example:
    >>> sorted(importer_names())
    ['emotionbench-humans', 'emotionbench-results', 'emotionbench-situations', 'psych-keys', 'qsf', 'ratings', 'redcap', 'replies']

May import: every room but cli (engine/__init__.py lists the order). Never: cli, or psyq.analysis.
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


_REGISTRY: dict[str, Importer] = {}


def register(importer: Importer) -> Importer:
    """Make `importer` available as ``psyq import <importer.name>``; returns it."""
    if importer.name in _REGISTRY and _REGISTRY[importer.name] is not importer:
        raise ValueError(f"importer '{importer.name}' is registered already")
    _REGISTRY[importer.name] = importer
    return importer


def get_importer(name: str) -> Importer:
    """The importer registered as `name` (KeyError if none)."""
    return _REGISTRY[name]


def importer_names() -> tuple[str, ...]:
    """Names of the registered importers, in registration order."""
    return tuple(_REGISTRY)


from psyq.engine.importers import emotionbench, psych_keys, qsf, redcap, replies  # noqa: E402  (the built-in formats)

register(redcap.RedcapImporter())
register(psych_keys.PsychKeysImporter())
register(qsf.QsfImporter())
register(emotionbench.EmotionBenchSituationsImporter())
register(emotionbench.EmotionBenchHumansImporter())
register(replies.ReferenceRepliesImporter())
register(replies.HumanRatingsImporter())
register(emotionbench.EmotionBenchResultsImporter())

__all__ = ["Importer", "Draft", "register", "get_importer", "importer_names"]
