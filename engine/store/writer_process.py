"""The run store's writer: a process of its own that commits the groups of trials a run hands it.

:class:`~psyq.engine.store.run_store.RunStore` starts it for a run's group commits, as a script
(``python -I -S writer_process.py DATABASE``) that imports only the standard library, so it is up
in tens of milliseconds. SQLite's inserts, index updates and WAL writes, about a sixth of the event
loop's time per trial at high concurrency when done in it (bench/RESULTS.md, issue 42), then run on
another core. A thread cannot do this: it would take Python's lock back after every row it binds.

Its input (stdin) is frames of a 4-byte big-endian length and a pickle, from the run only:

- ``("setup", pragmas, statements)``: the connection's PRAGMAs and the four INSERT/DELETE
  statements, so that the store's module keeps the one spelling of them;
- ``("group", rows, answers, stages)``: commit these rows in one transaction; should it fail,
  each trial alone (a string Python cannot encode to UTF-8, a lone surrogate, with U+FFFD);
- ``("sync",)``: answer once everything before it is committed.

Its output (stdout) is one line per event: ``synced``, or ``error <sqlite3 class> <message>``. At
the end of its input (the run closed the store, or was killed: what the pipe holds is still read)
it commits what it has and exits. It ignores SIGINT, SIGTERM and SIGHUP, which a terminal, `timeout`,
`kill -- -PGID`, Slurm's `scancel` and `systemctl stop` send to the whole process group: the run
decides when the store stops (it stops cleanly on the same signal and closes the writer's input),
and a run that is killed outright closes that input too (its end of the pipe), so the writer never
outlives it.
"""

from __future__ import annotations

import pickle
import re
import signal
import sqlite3
import struct
import sys
from typing import Any, BinaryIO, TextIO

FRAME_HEAD = struct.Struct(">I")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")   # in a Python string, a surrogate is always half a pair


def frame(message: tuple) -> bytes:
    """`message` as one frame of the writer's input.

    Example:
        >>> len(frame(("sync",))) > FRAME_HEAD.size
        True
    """
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME_HEAD.pack(len(body)) + body


def encodable(rows: list[tuple]) -> list[tuple]:
    """`rows` with every lone surrogate in their strings replaced by U+FFFD.

    Example:
        >>> encodable([("D \\ud800", 1)])
        [('D \\ufffd', 1)]
    """
    return [tuple(_LONE_SURROGATE.sub("\ufffd", v) if isinstance(v, str) else v for v in row) for row in rows]


def write(db: sqlite3.Connection, statements: dict[str, str], rows: list[tuple], answers: list[tuple],
          stages: list[tuple]) -> None:
    """Commit the rows of some trials in one transaction (each replaces an earlier attempt)."""
    try:
        _write(db, statements, rows, answers, stages)
    except UnicodeEncodeError:   # rolled back: written again, whole, with U+FFFD in its place
        _write(db, statements, encodable(rows), encodable(answers), encodable(stages))


def _write(db: sqlite3.Connection, statements: dict[str, str], rows: list[tuple], answers: list[tuple],
           stages: list[tuple]) -> None:
    with db:
        db.execute("BEGIN")
        db.executemany(statements["delete_trial"], [(r[0],) for r in rows])
        db.executemany(statements["insert_trial"], rows)
        db.executemany(statements["insert_answer"], answers)
        if stages:
            db.executemany(statements["insert_stage"], stages)


def write_each(db: sqlite3.Connection, statements: dict[str, str], rows: list[tuple], answers: list[tuple],
               stages: list[tuple]) -> list[sqlite3.Error]:
    """Commit the group; should that fail, each trial on its own. Returns the errors (none: every
    trial stored), so that one unstorable trial costs no other trial its answers."""
    try:
        write(db, statements, rows, answers, stages)
        return []
    except sqlite3.Error as exc:
        if len(rows) == 1:
            return [exc]
    errors = []
    for row in rows:
        mine = [a for a in answers if a[0] == row[0]], [s for s in stages if s[0] == row[0]]
        try:
            write(db, statements, [row], *mine)
        except sqlite3.Error as exc:
            errors.append(exc)
    return errors


def serve(source: BinaryIO, events: TextIO, database: str) -> None:
    """Commit what `source` hands over to `database` until it ends, saying on `events` what happened."""
    db: sqlite3.Connection | None = None
    statements: dict[str, str] = {}
    while True:
        head = source.read(FRAME_HEAD.size)
        if len(head) < FRAME_HEAD.size:
            break
        size = FRAME_HEAD.unpack(head)[0]
        body = source.read(size)
        if len(body) < size:   # the run was killed while writing this frame: what it held is lost
            break
        message: tuple[Any, ...] = pickle.loads(body)
        if message[0] == "setup":
            db = sqlite3.connect(database, isolation_level=None)
            for pragma in message[1]:
                db.execute(pragma)
            statements = message[2]
        elif message[0] == "group":
            assert db is not None, "a group before the setup"
            for error in write_each(db, statements, *message[1:]):
                events.write(f"error {type(error).__name__} {str(error).replace(chr(10), ' ')}\n")
                events.flush()
        elif message[0] == "sync":
            events.write("synced\n")
            events.flush()
    if db is not None:
        db.close()


def main() -> None:
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)
    serve(sys.stdin.buffer, sys.stdout, sys.argv[1])


if __name__ == "__main__":
    main()
