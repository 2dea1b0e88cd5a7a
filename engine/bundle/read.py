"""Reading a bundle, which is input from someone else: checked before anything is unpacked, unpacked
into a temporary folder only, and that folder removed afterwards.

Refused, each with ``FILE: what is wrong`` (an :class:`InputError`, exit 2), before one byte is
written: a file that is not a zip; a zip without ``bundle.json`` or of a format this psyq cannot
read (a later psyq's, named with the version that made it); more members than
:data:`~psyq.engine.bundle.layout.MAX_MEMBERS`; a declared size above
:data:`~psyq.engine.bundle.layout.MAX_TOTAL_BYTES` or a compression ratio above
:data:`~psyq.engine.bundle.layout.MAX_RATIO` (a zip bomb); a member named outside the bundle
(``../x``, ``/x``, ``C:x``, a backslash) or twice; a member that is a symbolic link (zip files
can carry one in their Unix mode bits; followed, it would let a later member write anywhere).
While unpacking, sizes are counted as the bytes come, so a member declaring less than it holds
is refused too, and every file is created new (``O_EXCL``, ``O_NOFOLLOW``) inside the folder.

The store is read as every reader of psyq reads a run, through
``psyq.engine.store.readonly.connect_readonly``: no journal is created and nothing is changed.
What the bundle's members say (a reply holding ``<script>``) is data, shown as text by whoever
shows it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from psyq.engine import __version__
from psyq.engine.bundle.layout import FORMAT, MAX_MEMBERS, MAX_RATIO, MAX_TOTAL_BYTES, RECORD, RUN
from psyq.engine.files.errors import InputError

MAX_RECORD_BYTES = 64 * 1024**2
_CHUNK = 1024**2


@dataclass(frozen=True)
class OpenedBundle:
    """A bundle unpacked into a temporary folder: its record (bundle.json), and the run in it."""

    source: Path             # the zip file
    folder: Path             # the temporary folder it was unpacked into
    record: dict[str, Any]

    @property
    def run(self) -> Path:
        """The run's folder inside the unpacked bundle."""
        return self.folder / RUN


def is_bundle(path: str | Path) -> bool:
    """Whether `path` names a bundle (a file ending in .zip) rather than a run's folder.

    Example:
        >>> is_bundle("runs/quickstart"), is_bundle("run.zip")
        (False, True)
    """
    return str(path).lower().endswith(".zip") and not Path(path).is_dir()


def _refuse(path: Path, message: str) -> InputError:
    return InputError.single(path, message)


def member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a member may not be unpacked (None when it may): a path outside the bundle, a link.

    Example:
        >>> member_problem(zipfile.ZipInfo("../../x")), member_problem(zipfile.ZipInfo("run/a.yaml"))
        ("member '../../x': a path outside the bundle", None)
    """
    name = info.filename
    parts = PurePosixPath(name).parts
    if ("\\" in name or "\0" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name)
            or ".." in parts or not parts or any(p in ("", ".") for p in name.rstrip("/").split("/"))):
        return f"member {name!r}: a path outside the bundle"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return f"member {name!r}: a symbolic link (a bundle holds files only)"
    if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and stat.S_IFMT(mode):
        return f"member {name!r}: not a file"
    return None


def check_archive(path: Path, archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The members of `archive`, after every check that needs no unpacking (module docstring)."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _refuse(path, f"{len(infos)} members, more than a bundle holds ({MAX_MEMBERS}); refused")
    declared = sum(i.file_size for i in infos)
    compressed = sum(i.compress_size for i in infos)
    if declared > MAX_TOTAL_BYTES:
        raise _refuse(path, f"would unpack to {declared:,} bytes, more than the {MAX_TOTAL_BYTES:,} a bundle may hold; "
                            "refused (a zip bomb, or not a psyq bundle)")
    if declared > _CHUNK and declared > MAX_RATIO * max(compressed, 1):
        raise _refuse(path, f"compressed {declared / max(compressed, 1):,.0f} times over (a bundle's text and store "
                            f"compress at most {MAX_RATIO} times); refused as a zip bomb")
    seen: set[str] = set()
    for info in infos:
        problem = member_problem(info)
        if problem:
            raise _refuse(path, f"{problem}; refused, nothing unpacked")
        if info.filename.rstrip("/") in seen:
            raise _refuse(path, f"member {info.filename!r} is there twice; refused, nothing unpacked")
        seen.add(info.filename.rstrip("/"))
    return infos


def read_record(path: Path, archive: zipfile.ZipFile) -> dict[str, Any]:
    """The bundle's record (bundle.json), its format checked against the one this psyq reads."""
    try:
        info = archive.getinfo(RECORD)
    except KeyError:
        raise _refuse(path, f"not a psyq bundle (no {RECORD} in it)") from None
    if info.file_size > MAX_RECORD_BYTES:
        raise _refuse(path, f"{RECORD} is {info.file_size:,} bytes; refused")
    try:
        with archive.open(info) as handle:
            record = json.loads(handle.read(MAX_RECORD_BYTES + 1).decode("utf-8"))
    except (ValueError, zipfile.BadZipFile, OSError) as exc:
        raise _refuse(path, f"{RECORD} cannot be read ({exc})") from None
    if not isinstance(record, dict):
        raise _refuse(path, f"{RECORD} is not a JSON object")
    if record.get("format") != FORMAT:
        made = record.get("psyq_version", "an unknown version")
        raise _refuse(path, f"a bundle of format {record.get('format')!r} (made by psyq {made}); this psyq "
                            f"({__version__}) reads {FORMAT} only: install psyq {made} or later to read it")
    return record


def _unpack(path: Path, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], folder: Path) -> None:
    total = 0
    root = folder.resolve()
    for info in infos:
        target = root.joinpath(*PurePosixPath(info.filename).parts)
        if root not in target.parents and target != root:
            raise _refuse(path, f"member {info.filename!r}: a path outside the bundle; refused")
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.parent.resolve() != target.parent or root not in target.parent.resolve().parents and \
                target.parent.resolve() != root:
            raise _refuse(path, f"member {info.filename!r}: its folder is not inside the bundle; refused")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        written = 0
        with os.fdopen(fd, "wb") as out, archive.open(info) as member:
            while chunk := member.read(_CHUNK):
                written += len(chunk)
                total += len(chunk)
                if written > info.file_size or total > MAX_TOTAL_BYTES:
                    raise _refuse(path, f"member {info.filename!r} holds more than it declares; refused as a zip bomb")
                out.write(chunk)


@contextlib.contextmanager
def open_bundle(path: str | Path) -> Iterator[OpenedBundle]:
    """The bundle at `path`, checked and unpacked into a temporary folder that is removed when the
    block ends (module docstring: what is refused, and why).

    Example (`run_dir`: a finished stub run):
        >>> from psyq.engine.bundle.write import write_bundle
        >>> from psyq.engine.results.run import open_run
        >>> bundled = write_bundle(open_run(run_dir), Path(tempfile.mkdtemp()) / "run.zip")
        >>> with open_bundle(bundled.path) as bundle:
        ...     (bundle.run / "manifest.json").is_file(), bundle.record["format"]
        (True, 'psyq-bundle/1')
    """
    path = Path(path)
    if not path.is_file():
        raise _refuse(path, "no such bundle (a .zip file made by psyq bundle)")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise _refuse(path, f"not a psyq bundle: not a zip file ({exc})") from None
    folder = Path(tempfile.mkdtemp(prefix="psyq-bundle-"))
    try:
        with archive:
            infos = check_archive(path, archive)
            record = read_record(path, archive)
            try:
                _unpack(path, archive, infos, folder)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
                raise _refuse(path, f"cannot be unpacked ({exc}); refused") from None
        if not (folder / RUN / "manifest.json").is_file():
            raise _refuse(path, "not a psyq bundle (no run/manifest.json in it)")
        yield OpenedBundle(path, folder, record)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
