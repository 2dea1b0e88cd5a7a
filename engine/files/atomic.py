"""Files written whole or not at all: a reader (or a rerun after a crash) never sees half a file.

The text goes to a temporary file in the same folder, is flushed and fsync'd, and then
replaces the target with ``os.replace`` (atomic on POSIX and Windows); the folder is fsync'd
too, so the rename itself survives a power cut.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` atomically (see the module docstring).

    Example:
        >>> write_text_atomic("runs/x/manifest.json", "{}")  # doctest: +SKIP
    """
    write_bytes_atomic(path, text.replace("\n", os.linesep).encode("utf-8"))   # as a file opened in text mode


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically (see the module docstring), e.g. a workbook.

    Example:
        >>> write_bytes_atomic("sheet.xlsx", b"PK")  # doctest: +SKIP
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):   # not every file system lets a folder be fsync'd
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def write_json_atomic(path: str | Path, data: Any) -> None:
    """`data` as indented JSON, written atomically.

    Example:
        >>> write_json_atomic("runs/x/manifest.json", {"run_id": "ab12"})  # doctest: +SKIP
    """
    write_text_atomic(path, json.dumps(data, indent=2))
