"""Reading a user's input file safely: a regular file, of bounded size, in UTF-8 text.

Every YAML and CSV reader of psyq starts here, so that a directory, a device (``/dev/zero``),
a FIFO, a huge file or binary bytes given where a file is expected end in one plain
:class:`~psyq.engine.files.errors.InputError` (``file:line:column: what``) rather than a hang, an
exhausted memory or a traceback.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from psyq.engine.files.errors import InputError

# No instrument, study, cohort, rubric, lexicon or human-data file comes near this; a file
# larger than it is almost certainly the wrong file, and reading it whole would cost memory.
MAX_FILE_BYTES = 10 * 1024 * 1024


def _what_it_is(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_input_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes` bytes, else an :class:`InputError`.

    The file's type is checked before it is opened (opening a FIFO would wait for a writer),
    and at most `max_bytes` + 1 bytes are read whatever the file claims to be.

    Example:
        >>> read_input_bytes("/dev/zero")
        Traceback (most recent call last):
        psyq.engine.files.errors.InputError: /dev/zero: this is a device, not a file; give the path of a file
    """
    file = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError.single(file, "file not found") from None
    except OSError as exc:
        raise InputError.single(file, f"cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError.single(file, f"this is {_what_it_is(info.st_mode)}, not a file; give the path of a file")
    if info.st_size > max_bytes:
        raise InputError.single(file, _too_large(info.st_size, max_bytes))
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InputError.single(file, f"cannot read: {exc.strerror}") from None
    if len(raw) > max_bytes:  # the file grew after stat
        raise InputError.single(file, _too_large(len(raw), max_bytes))
    return raw


def _too_large(size: int, max_bytes: int) -> str:
    return (f"the file is too large ({size:,} bytes; psyq reads input files of at most "
            f"{max_bytes // (1024 * 1024)} MB)")


def line_column(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of byte `offset` of UTF-8 `raw`.

    Example:
        >>> line_column(b"ab\\ncd", 4)
        (2, 2)
    """
    before = raw[:offset]
    line = before.count(b"\n") + 1
    last = before[before.rfind(b"\n") + 1:]
    return line, len(last.decode("utf-8", errors="replace")) + 1


def decode_text(file: str, raw: bytes) -> str:
    """`raw` as text: UTF-8 (a leading byte-order mark is dropped), without NUL characters.

    Raises :class:`InputError` at the line and column of the first byte that is not UTF-8 or NUL.

    Example:
        >>> decode_text("x.csv", b"\\xef\\xbb\\xbfa,b\\n")
        'a,b\\n'
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # exc.start counts from after a byte-order mark, if the file has one.
        offset = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        line, column = line_column(raw, offset)
        raise InputError.single(file, "the file is not UTF-8 text (the character here is in another "
                                      "encoding); save it as UTF-8", line, column) from None
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, column = line_column(raw, nul)
        raise InputError.single(file, "the file holds a NUL byte (binary data, or a text encoding "
                                      "such as UTF-16); save it as UTF-8 text", line, column)
    return text


def read_input_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """:func:`read_input_bytes` then :func:`decode_text`: a small regular UTF-8 text file's text.

    Example (a path, not a shipped name: :func:`psyq.engine.files.shipped.locate` finds those):
        >>> from psyq.engine.files.shipped import locate
        >>> read_input_text(locate("iri", "instrument")).splitlines()[0]
        '# yaml-language-server: $schema=instrument.schema.json'
    """
    return decode_text(str(path), read_input_bytes(path, max_bytes))
