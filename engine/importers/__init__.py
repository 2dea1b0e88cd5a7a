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
takes in :meth:`Importer.add_arguments`, and :meth:`Importer.read`; :mod:`~psyq.engine.importers.base`),
and register an instance at the end of this file; ``psyq import NAME`` then exists, with its own ``--help``.

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

from psyq.engine.importers import emotionbench, psych_keys, qsf, redcap, replies   # the built-in formats
from psyq.engine.importers.base import Importer
from psyq.engine.importers.draft import Draft
from psyq.engine.importers.registry import get_importer, importer_names, register

register(redcap.RedcapImporter())
register(psych_keys.PsychKeysImporter())
register(qsf.QsfImporter())
register(emotionbench.EmotionBenchSituationsImporter())
register(emotionbench.EmotionBenchHumansImporter())
register(replies.ReferenceRepliesImporter())
register(replies.HumanRatingsImporter())
register(emotionbench.EmotionBenchResultsImporter())

__all__ = ["Importer", "Draft", "register", "get_importer", "importer_names"]
