"""A file's SHA-256, the one way psyq computes it: the run's manifest, the run id, a bundle's record
and its check, the cohort's data file, the local model's cache and the methods' materials all call
:func:`file_sha256`, so that the same file always gives the same digest, read in blocks (a model
file is hundreds of MB).

May import: the standard library only.

Example:
    >>> import tempfile; from pathlib import Path
    >>> f = Path(tempfile.mkdtemp()) / "x"; _ = f.write_bytes(b"abc")
    >>> file_sha256(f)[:16]             # SHA-256 of "abc" (FIPS 180-2, appendix B.1)
    'ba7816bf8f01cfea'
"""

from __future__ import annotations

import hashlib
from pathlib import Path

BLOCK = 1 << 20


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of the file at `path`, hex, read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()
