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
from typing import Any, BinaryIO, Iterator


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` atomically (see the module docstring).

    Example (in a temporary folder; no temporary file is left beside the target):
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     write_text_atomic(Path(folder) / "manifest.json", "{}")
        ...     [(p.name, p.read_text()) for p in Path(folder).iterdir()]
        [('manifest.json', '{}')]
    """
    write_bytes_atomic(path, text.replace("\n", os.linesep).encode("utf-8"))   # as a file opened in text mode


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically (see the module docstring), e.g. a workbook.

    Example (in a temporary folder):
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     write_bytes_atomic(Path(folder) / "sheet.xlsx", b"PK")
        ...     (Path(folder) / "sheet.xlsx").read_bytes()
        b'PK'
    """
    with atomic_file(path) as handle:
        handle.write(data)


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write in pieces (a bundle's zip, copied from disk), that replaces `path` only
    when the block ends without an error, as :func:`write_bytes_atomic` does: flushed, fsync'd,
    renamed over the target, the folder fsync'd; on an error the temporary file is removed and the
    target left as it was.

    Example (in a temporary folder; the target appears whole, nothing else is left):
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     with atomic_file(Path(folder) / "run.zip") as handle:
        ...         _ = handle.write(b"PK"); _ = handle.write(b"..")
        ...     [(p.name, p.read_bytes()) for p in Path(folder).iterdir()]
        [('run.zip', b'PK..')]
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
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

    Example (in a temporary folder):
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     write_json_atomic(Path(folder) / "manifest.json", {"run_id": "ab12"})
        ...     print((Path(folder) / "manifest.json").read_text())
        {
          "run_id": "ab12"
        }
    """
    write_text_atomic(path, json.dumps(data, indent=2))
