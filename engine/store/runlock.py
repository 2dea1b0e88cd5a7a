"""One run directory, one writer: an OS lock that a second `psyq run` of the same run meets.

The lock is ``fcntl.flock`` on ``run.lock`` in the run directory, taken without waiting; the
file holds the PID of the process that holds it, for the message the second process prints.
The operating system releases the lock when its holder exits, however it exits (SIGKILL
included), so a stale lock file never blocks a later run: only a live process does.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from psyq.engine.files.errors import PsyqError, RunLocked

LOCK_FILE = "run.lock"


class RunLock:
    """Hold the run directory's lock for the life of a ``with`` block (RunLocked if taken).

    Example (in a temporary folder; a second holder is refused while the first holds it):
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     with RunLock(folder):
        ...         try:
        ...             RunLock(folder).__enter__()
        ...         except RunLocked as exc:
        ...             exc.pid == str(os.getpid())
        True
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self._fd: int | None = None

    def __enter__(self) -> "RunLock":
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.read(fd, 32).decode("ascii", "replace").strip() or None
            os.close(fd)
            raise RunLocked(self.run_dir, pid, LOCK_FILE) from None
        except OSError as exc:   # a file system without locks: say so rather than run unguarded
            os.close(fd)
            raise PsyqError(f"cannot lock {self.run_dir / LOCK_FILE} ({exc.strerror}); psyq needs a file "
                            f"system with file locks for its runs directory") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def lock_holder(run_dir: str | Path) -> str | None:
    """Who is writing `run_dir` now: the PID in its lock file ("?" when the file holds none) while
    a live process holds the lock; None when no process does.

    The lock is probed with a shared, non-blocking ``flock`` released at once: it never waits, and
    creates nothing. A `psyq run` taking the lock in the same microsecond would meet the probe
    and be refused (exit 5); rerunning it then proceeds.

    Example (`run_dir`: a finished run; then a temporary folder locked by this process):
        >>> lock_holder(run_dir) is None
        True
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     with RunLock(folder):
        ...         lock_holder(folder) == str(os.getpid())
        True
    """
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None   # no lock file: never run by a psyq that locks, or not readable
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.read(fd, 32).decode("ascii", "replace").strip() or "?"
        except OSError:
            return None   # a file system without locks: `psyq run` refuses to run there at all
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
