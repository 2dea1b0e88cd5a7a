"""`psyq verify`: does a bundle hold what it says it holds?

Checked here, each difference said in one line: every member's sha256 against the bundle's
record; every input file against the sha256 the run's manifest recorded (a file the bundle left
out must be one its record says it left out, a file it changed one it says it changed); the
store's integrity (``PRAGMA integrity_check``), its rows per table against the record, and its
trials and answers by status against the manifest. Whether the recorded instruments still score
the stored answers to the stored scores needs ``psyq.analysis``: the command line checks that
(cli/bundle.py).
"""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from psyq.engine.bundle.layout import RECORD, RUN, STUDY_FOLDER
from psyq.engine.files.hashing import file_sha256
from psyq.engine.bundle.read import OpenedBundle
from psyq.engine.bundle.store_copy import row_counts, store_facts
from psyq.engine.store.readonly import connect_readonly
from psyq.engine.store.run_dir import DATABASE

if TYPE_CHECKING:
    from psyq.engine.results.run import Run


def _members(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def verify_members(bundle: OpenedBundle) -> list[str]:
    """Differences between the bundle's members and the sha256 its record gives each."""
    recorded = bundle.record.get("members") or {}
    present = _members(bundle.folder) - {RECORD}
    out = [f"{name}: in the record, not in the bundle" for name in sorted(set(recorded) - present)]
    out += [f"{name}: in the bundle, not in its record" for name in sorted(present - set(recorded))]
    for name in sorted(present & set(recorded)):
        if file_sha256(bundle.folder / name) != recorded[name]:
            out.append(f"{name}: sha256 differs from the record's")
    return out


def verify_inputs(run: Run) -> list[str]:
    """Differences between the input files in the bundle and the sha256 the run's manifest recorded
    (`run`: the bundle opened by :func:`psyq.open_run`)."""
    bundle, manifest = run.bundle, run.manifest
    changed = {c.get("what") for c in bundle.record.get("changed") or []}
    left_out = " ".join(str(x.get("what")) for x in bundle.record.get("left_out") or [])
    out = []
    for key, digest in (manifest.get("files") or {}).items():
        member = PurePosixPath(os.path.normpath(f"{STUDY_FOLDER}/{key}")).as_posix()
        path = bundle.folder / member
        if not path.is_file() or member.startswith(".."):
            if PurePosixPath(key).name not in left_out:
                out.append(f"{key}: recorded by the manifest, neither in the bundle nor said to be left out")
        elif file_sha256(path) != digest and member not in changed:
            out.append(f"{member}: sha256 differs from the one the run's manifest recorded")
    return out


def verify_store(run: Run) -> list[str]:
    """The store's integrity, its rows against the record, its counts against the manifest (`run`:
    the bundle opened by :func:`psyq.open_run`)."""
    bundle, database = run.bundle, run.database
    with closing(connect_readonly(database)) as db:
        integrity = [row[0] for row in db.execute("PRAGMA integrity_check").fetchall()]
    if integrity != ["ok"]:
        return [f"{RUN}/{DATABASE}: integrity check failed: " + "; ".join(integrity[:5])]
    out = []
    rows, recorded = row_counts(database), bundle.record.get("store_rows") or {}
    for table in sorted(set(rows) | set(recorded)):
        if rows.get(table) != recorded.get(table):
            out.append(f"{RUN}/{DATABASE}: table {table} has {rows.get(table, 'no')} rows, the record says "
                       f"{recorded.get(table, 'none')}")
    manifest = run.manifest
    facts = store_facts(database)
    for key in ("trial_counts", "answer_counts"):
        if key in manifest and dict(manifest[key]) != facts[key]:
            out.append(f"{RUN}/{DATABASE}: {key.replace('_', ' ')} {facts[key]}, the manifest says {manifest[key]}")
    return out


def verify_bundle(run: Run) -> list[str]:
    """Every difference between what a bundle holds and what it says (empty: none); `run` is the
    bundle opened by :func:`psyq.open_run`.

    Example (`run_dir`: a finished stub run):
        >>> import tempfile
        >>> from psyq.engine.bundle.write import write_bundle
        >>> from psyq.engine.results.run import open_run
        >>> with open_run(write_bundle(open_run(run_dir), Path(tempfile.mkdtemp()) / "run.zip").path) as bundle:
        ...     verify_bundle(bundle)
        []
    """
    return verify_members(run.bundle) + verify_inputs(run) + verify_store(run)
