"""Opening a run store for reading only, creating and changing nothing in its folder.

``sqlite3.connect("file:...?mode=ro")`` alone is not enough for a store in WAL mode (every run
store is: engine/store/run_store.py): SQLite then creates ``run.sqlite-wal`` and
``run.sqlite-shm`` beside it when they are absent (a finished run, whose writer removed them on
closing), and leaves them there. So:

- when both files exist, a writer has the store open (or had, and was killed): the connection is
  ``mode=ro``, an ordinary WAL reader that sees every committed trial and never blocks the writer
  (its read mark in the ``-shm`` file is how SQLite's readers and writer coordinate);
- otherwise no process is writing: the store is opened ``immutable=1``, which takes no lock and
  creates no file. Should a writer start during that one short read, it writes into a new WAL
  file and leaves the main file alone until a checkpoint (every ~1000 pages), so the read still
  sees a consistent store.

``timeout`` is SQLite's busy timeout: a read meeting a writer's checkpoint waits for it rather
than failing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote


def connect_readonly(database: str | Path, timeout: float = 2.0) -> sqlite3.Connection:
    """A read-only connection to the run store at `database` that creates and alters nothing.

    Example (`run_dir`: a finished run of 16 trials):
        >>> db = connect_readonly(run_dir / "run.sqlite")
        >>> db.execute("SELECT COUNT(*) FROM trials").fetchone()
        (16,)
        >>> db.close()
    """
    path = Path(database).resolve()
    live = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    mode = "mode=ro" if live else "mode=ro&immutable=1"
    if not path.is_file():
        raise sqlite3.OperationalError(f"unable to open database file {path}")
    return sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True, timeout=timeout)
