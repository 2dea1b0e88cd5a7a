"""One run, opened once: :func:`open_run` gives a :class:`Run`, the object every later step reads.

A run's folder (``runs/<study>/<run-id>/``: ``manifest.json``, ``run.sqlite``, the copies of its
instruments and study) or a bundle of one (``psyq bundle``'s ``.zip``, checked and unpacked into a
temporary folder that lives as long as the ``Run``). The manifest is read once, when the run is
opened; the instrument copies, the answer table and the judgements are read the first time they
are asked for and kept. So the report, the scores, the export, the viewer, the bundle and the
judges read a run's files once however many of them look at it (inspect_ai's ``read_eval_log``
giving one ``EvalLog`` is the model). Statistics take frames, never a ``Run``.

This module is the only place psyq opens a run from a path (tests/test_layout.py checks it); the
folder's layout (file names, :class:`~psyq.engine.store.run_dir.RunDir`) is
:mod:`psyq.engine.store.run_dir`'s, which ``psyq run`` writes.

Nothing is imported here that a light command does not need: pandas and the answer table's code
are imported when the table is first asked for (``psyq view`` and ``psyq status`` open runs).

Example (`run_dir`: 4 personas × the 4 items of tests/data/mini_1to7.yaml):
    >>> run = open_run(run_dir)
    >>> run.manifest["study"], sorted(run.instruments), len(run.answers())
    ('mini_run', ['mini'], 16)
    >>> run.answers() is run.answers()       # built once
    True
"""

from __future__ import annotations

import contextlib
import json
import weakref
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psyq.engine.files.errors import InputError
from psyq.engine.store.run_dir import DATABASE, MANIFEST, SITUATIONS, RunDir, manifest_file_paths

if TYPE_CHECKING:
    import pandas as pd

    from psyq.engine.bundle.read import OpenedBundle
    from psyq.engine.design.instrument import Instrument


class Run:
    """One run, opened by :func:`open_run`: its manifest (read once), its instrument copies, answer
    table and judgements (each read once, on first use), and where its files are.

    A ``Run`` opened from a bundle holds the bundle's temporary folder until :meth:`close` (or the
    end of a ``with`` block, or the ``Run`` being collected). The frames it gives are shared by
    every reader of the run: copy one before changing it.
    """

    def __init__(self, path: Path, manifest: dict[str, Any], bundle: OpenedBundle | None = None,
                 closer: contextlib.ExitStack | None = None):
        self.path = path
        self.manifest = manifest
        self.bundle = bundle
        self._tables: dict[bool, pd.DataFrame] = {}
        self._close = weakref.finalize(self, closer.close) if closer is not None else None

    @classmethod
    def in_memory(cls, manifest: dict[str, Any], instruments: dict[str, Instrument], answers: pd.DataFrame,
                  judgements: pd.DataFrame | None = None, path: str | Path = "<in memory>") -> Run:
        """A run held in memory, with no folder and no store: what the statistics and the report are
        tested on (every answer as :meth:`answers` would give it, the instruments by id).

        Example (`run_dir`: a finished stub run):
            >>> stored = open_run(run_dir)
            >>> held = Run.in_memory(stored.manifest, stored.instruments, stored.answers())
            >>> held.answers().equals(stored.answers()), held.staged, len(held.judgements)
            (True, False, 0)
        """
        import pandas as pd

        from psyq.engine.results.judgements import JUDGEMENT_COLUMNS

        run = cls(Path(path), manifest)
        run._tables[True] = answers
        run.__dict__.update(instruments=dict(instruments), staged="stage" in answers.columns,
                            judgements=judgements if judgements is not None else pd.DataFrame(columns=JUDGEMENT_COLUMNS))
        return run

    def __repr__(self) -> str:
        source = f", bundle={str(self.bundle.source)!r}" if self.bundle else ""
        return f"Run({str(self.path)!r}, study={self.manifest.get('study')!r}, run_id={self.manifest.get('run_id')!r}{source})"

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove a bundle's temporary folder (nothing to do for a run's own folder)."""
        if self._close is not None:
            self._close()

    @property
    def folder(self) -> RunDir:
        """The run's files by name (:class:`~psyq.engine.store.run_dir.RunDir`)."""
        return RunDir(self.path)

    @property
    def database(self) -> Path:
        """The run's SQLite store (read it with :func:`psyq.engine.store.readonly.connect_readonly`)."""
        return self.path / DATABASE

    @property
    def situations(self) -> Path:
        """The copy of a staged study's situation set."""
        return self.path / SITUATIONS

    @property
    def stages(self) -> list[dict[str, Any]]:
        """The study's ``stages:`` as the manifest records them (empty for a run without stages)."""
        return list(self.manifest.get("stages") or [])

    @property
    def conditions(self) -> list[dict[str, Any]]:
        """The study's conditions as the manifest records them (engine/design/conditions.py: each
        one's id, factor levels and changes), in order; empty for a run without `conditions:`."""
        return list(self.manifest.get("conditions") or [])

    @property
    def input_files(self) -> dict[Path, str]:
        """Where the input files the manifest records are now, with their recorded SHA-256
        (:func:`~psyq.engine.store.run_dir.manifest_file_paths`)."""
        return manifest_file_paths(self.folder, self.manifest)

    @cached_property
    def staged(self) -> bool:
        """True when the run's study copy declares ``stages:`` (its answers then have ``stage`` and
        ``situation_id``)."""
        import yaml

        copy = self.path / "study.yaml"
        if not copy.exists():
            return False
        data = yaml.safe_load(copy.read_text(encoding="utf-8"))
        return isinstance(data, dict) and bool(data.get("stages"))

    @cached_property
    def instruments(self) -> dict[str, Instrument]:
        """The instrument copies stored in the run, by id (what its answers were scored against)."""
        from psyq.engine.design.instrument import load_instrument

        return {p.stem: load_instrument(p) for p in sorted((self.path / "instruments").glob("*.yaml"))}

    def answers(self, *, raw_text: bool = True) -> pd.DataFrame:
        """The run's answers as one tidy long table (:mod:`psyq.engine.results.answers` names the
        columns), built the first time it is asked for. `raw_text` False leaves the replies' text
        out (the report reads none); the table with the text serves both."""
        if raw_text not in self._tables:
            if not raw_text and True in self._tables:     # the table with the text serves the one without
                self._tables[False] = self._tables[True].drop(columns="raw_text", errors="ignore")
            else:
                from psyq.engine.results.answers import answer_table

                self._tables[raw_text] = answer_table(self, raw_text=raw_text)
        return self._tables[raw_text]

    @cached_property
    def judgements(self) -> pd.DataFrame:
        """The levels judge models gave to its free-text answers (:mod:`psyq.engine.results.judgements`)."""
        from psyq.engine.results.judgements import judgement_table

        return judgement_table(self.database)


def read_manifest(folder: RunDir) -> dict[str, Any]:
    """A run folder's manifest (InputError naming the file and the way back if it is damaged)."""
    try:
        data = json.loads(folder.manifest.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise InputError.single(folder.manifest, f"the manifest is damaged or unreadable ({exc}); the answers "
                                f"are safe in {DATABASE}: run the same study again (psyq run STUDY.yaml, same "
                                f"backends) to rebuild it; nothing finished is sent again") from None
    if not isinstance(data, dict):
        raise InputError.single(folder.manifest, "the manifest is not a JSON object; run the same study again "
                                "to rebuild it")
    return data


def open_run(path: str | Path, *, write: bool = False) -> Run:
    """The run at `path`: a run's folder, or a bundle of one (``FILE.zip``, refused as untrusted
    input would be if it is not a sound bundle: :mod:`psyq.engine.bundle.read`). InputError when
    `path` is neither, or when `write` (a judge, an import: something is to be added to the run's
    store) and `path` is a bundle, which is read only.

    Example (`run_dir`: a finished stub run):
        >>> run = open_run(run_dir)
        >>> run.path == run_dir, run.bundle is None
        (True, True)
    """
    from psyq.engine.bundle.read import is_bundle, open_bundle

    if is_bundle(path):
        if write:
            raise InputError.single(path, "a bundle is read only: add to the run it was made from (its own folder, "
                                    "runs/STUDY/RUN_ID), then bundle it again")
        closer = contextlib.ExitStack()
        try:
            opened = closer.enter_context(open_bundle(path))
            return Run(opened.run, read_manifest(RunDir(opened.run)), opened, closer)
        except BaseException:
            closer.close()
            raise
    folder = RunDir(Path(path))
    if not folder.manifest.exists() or not folder.database.exists():
        raise InputError.single(path, f"not a run directory (no {MANIFEST} and {DATABASE} in it)")
    return Run(folder.path, read_manifest(folder))


def as_run(run: Run | str | Path) -> Run:
    """`run` itself, or the run at a path opened once (:func:`open_run`): what the top-level
    functions that take a run (the report, the scores, the export) accept.

    Example (`run_dir`: a finished stub run):
        >>> run = open_run(run_dir)
        >>> as_run(run) is run, as_run(run_dir).path == run_dir
        (True, True)
    """
    return run if isinstance(run, Run) else open_run(run)
