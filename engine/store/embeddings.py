"""The embeddings a run paid for (`answer: ssr`), kept in its store so that none is asked twice.

One row per embedding model and text: table ``embeddings`` of the run's SQLite file, keyed by the
embedder (the model and the server's normalised base URL) and the SHA-256 of the text, holding the
vector as little-endian float64. A resumed run reads them back instead of asking again; the
anchor statements are embedded once per run, and an answer text met twice (two personas writing
the same sentence) once. Written by the run's own connection between the phases of the run (the
store's writer process holds no transaction then).
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from array import array
from collections.abc import Iterable, Sequence

SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    embedder TEXT NOT NULL,            -- the model and where it is served: '<model> @ <normalised base URL>'
    text_sha256 TEXT NOT NULL,         -- SHA-256 of the text's UTF-8 bytes
    dimensions INTEGER NOT NULL,
    vector BLOB NOT NULL,              -- little-endian float64 x dimensions
    PRIMARY KEY (embedder, text_sha256)
);
"""


def text_key(text: str) -> str:
    """The SHA-256 of a text, as the table keys it.

    Example:
        >>> text_key("I cry easily.")[:12]
        '74c97348ae83'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _blob(vector: Sequence[float]) -> bytes:
    values = array("d", vector)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def _vector(blob: bytes) -> list[float]:
    values = array("d")
    values.frombytes(blob)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


class EmbeddingStore:
    """The embeddings of one run's store (`db`: its SQLite connection).

    Example:
        >>> store = EmbeddingStore(sqlite3.connect(":memory:"))
        >>> store.put("m @ http://x/v1", ["a"], [[0.5, -1.0]])
        >>> store.get("m @ http://x/v1", ["a", "b"])
        {'a': [0.5, -1.0]}
    """

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self.db.executescript(SCHEMA)

    def get(self, embedder: str, texts: Iterable[str]) -> dict[str, list[float]]:
        """The stored embeddings of those of `texts` that have one (by text)."""
        wanted = {text_key(t): t for t in texts}
        found: dict[str, list[float]] = {}
        keys = list(wanted)
        for start in range(0, len(keys), 500):   # SQLite's bound on a statement's parameters
            chunk = keys[start:start + 500]
            rows = self.db.execute(f"SELECT text_sha256, vector FROM embeddings WHERE embedder = ? AND text_sha256 IN "
                                   f"({', '.join('?' * len(chunk))})", [embedder, *chunk])
            for key, blob in rows:
                found[wanted[key]] = _vector(blob)
        return found

    def put(self, embedder: str, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Keep the embeddings of `texts` (committed at once: they were paid for)."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)",
                                [(embedder, text_key(t), len(v), _blob(v)) for t, v in zip(texts, vectors)])

    def count(self, embedder: str | None = None) -> int:
        """How many embeddings are kept (of `embedder`, or of all)."""
        if embedder is None:
            return self.db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM embeddings WHERE embedder = ?", (embedder,)).fetchone()[0]
