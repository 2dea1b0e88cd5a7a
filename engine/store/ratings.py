"""Ratings: texts to be rated on a rubric's dimensions, and every rater's score of them, in one table.

A run of a study with `kind: response` items ends with replies written by personas. They, the
human reference replies a user imports (e.g. written by clinicians), and perturbed versions of
either are all *rating targets*: rows of table ``rating_targets``, each under an opaque
``response_id`` so a rater (judge model or person) sees a text without its source. Every score
any rater gives a target on one dimension of a rubric is one row of table ``ratings``: judge
models (``rater_kind='judge'``, stored by ``psyq judge``) and people (``rater_kind='human'``,
imported from a CSV) side by side, so agreement and comparisons read one table.

Both tables live in the run's SQLite file beside the answers; a target's ``response_id`` is a
hash of what it is (persona answer, reference reply id, perturbation of which original), so the
same target always gets the same id and re-adding it changes nothing.

Example:
    >>> t = RatingTarget.reference("clin_01", item_id="m01", instrument="help_messages_psyq",
    ...                            text="That sounds exhausting.", detail={"author": "clinician"})
    >>> t.response_id == RatingTarget.reference("clin_01", item_id="m01", instrument="help_messages_psyq",
    ...                                         text="other text").response_id
    True
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Literal

import pandas as pd

from psyq.engine.store.run_store import RunStore

Source = Literal["persona", "reference"]
RaterKind = Literal["judge", "human"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS rating_targets (
    response_id TEXT PRIMARY KEY,      -- opaque id a rater sees: 'r' + 12 hex digits of a hash of `key`
    key TEXT NOT NULL UNIQUE,          -- what the target is: 'persona/<trial_id>/<item_id>' or
                                       -- 'reference/<reply_id>', + '~<perturbation>' for a perturbed text
    source TEXT NOT NULL CHECK (source IN ('persona', 'reference')),
    instrument TEXT NOT NULL,          -- the response instrument whose item was answered
    item_id TEXT NOT NULL,             -- the help-seeker message the text replies to
    trial_id TEXT,                     -- persona replies: the trial that produced the reply
    reply_id TEXT,                     -- reference replies: the id given in the imported CSV
    original_id TEXT,                  -- perturbed texts: response_id of the unperturbed target; else NULL
    perturbation TEXT,                 -- perturbed texts: the perturbation's id; else NULL
    text TEXT NOT NULL,                -- exactly the text raters are shown
    detail TEXT NOT NULL DEFAULT '{}'  -- JSON: e.g. a reference's author/source, a perturbation's seed,
                                       -- method and (for rewrites through a backend) the request and reply
);
CREATE TABLE IF NOT EXISTS ratings (
    response_id TEXT NOT NULL REFERENCES rating_targets(response_id),
    rubric_id TEXT NOT NULL,
    dimension TEXT NOT NULL,           -- a dimension of the rubric (one-dimension rubrics: 'level')
    rater_kind TEXT NOT NULL CHECK (rater_kind IN ('judge', 'human')),
    rater_id TEXT NOT NULL,            -- the judge's id (psyq judge --judge-id) or the human rater's id
    level REAL,                        -- NULL when the rater gave no readable level (never imputed)
    status TEXT NOT NULL,              -- answered | unparseable | no_option_tokens | failed | missing ...
    reason TEXT,
    model TEXT,                        -- judges: the model that rated
    answer_mode TEXT,                  -- judges: logprobs | json | text
    distribution TEXT,                 -- judges, logprobs: JSON {level: probability}
    request TEXT,                      -- judges: JSON payload sent (no headers, so no secrets)
    raw_text TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    rated_at TEXT NOT NULL,
    PRIMARY KEY (response_id, rubric_id, dimension, rater_kind, rater_id)
);
"""

TARGET_COLUMNS = ["response_id", "source", "instrument", "item_id", "trial_id", "reply_id", "original_id",
                  "perturbation", "text", "detail"]
RATING_COLUMNS = ["response_id", "source", "instrument", "item_id", "trial_id", "reply_id", "original_id",
                  "perturbation", "rubric_id", "dimension", "rater_kind", "rater_id", "level", "status", "reason"]
"""The columns of :func:`read_ratings`: one row per target × rubric × dimension × rater."""


@dataclass(frozen=True)
class RatingTarget:
    """One text to be rated, as stored in table ``rating_targets``.

    Build one with :meth:`persona`, :meth:`reference` or :meth:`perturbed`; ``response_id`` is
    derived from ``key`` (what the target is), never from the text.
    """

    key: str
    source: Source
    instrument: str
    item_id: str
    text: str
    trial_id: str | None = None
    reply_id: str | None = None
    original_id: str | None = None
    perturbation: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def response_id(self) -> str:
        return response_id_of(self.key)

    @classmethod
    def persona(cls, trial_id: str, item_id: str, *, instrument: str, text: str,
                detail: dict[str, Any] | None = None) -> "RatingTarget":
        """A persona's reply: the free-text answer (trial_id, item_id) of table ``answers``."""
        return cls(f"persona/{trial_id}/{item_id}", "persona", instrument, item_id, text,
                   trial_id=trial_id, detail=detail or {})

    @classmethod
    def reference(cls, reply_id: str, *, item_id: str, instrument: str, text: str,
                  detail: dict[str, Any] | None = None) -> "RatingTarget":
        """A reference reply a user imported (e.g. written by a clinician) to message `item_id`."""
        return cls(f"reference/{reply_id}", "reference", instrument, item_id, text,
                   reply_id=reply_id, detail=detail or {})

    def perturbed(self, perturbation: str, text: str, detail: dict[str, Any] | None = None) -> "RatingTarget":
        """This target's text after perturbation `perturbation` (a new target pointing back here)."""
        return replace(self, key=f"{self.key}~{perturbation}", text=text, original_id=self.response_id,
                       perturbation=perturbation, detail=detail or {})


@dataclass(frozen=True)
class Rating:
    """One rater's score of one target on one dimension of a rubric (a row of table ``ratings``)."""

    response_id: str
    rubric_id: str
    dimension: str
    rater_kind: RaterKind
    rater_id: str
    level: float | None
    status: str
    rated_at: str
    reason: str | None = None
    model: str | None = None
    answer_mode: str | None = None
    distribution: dict[str, float] | None = None
    request: dict[str, Any] | None = None
    raw_text: str | None = None
    attempts: int = 0


def response_id_of(key: str) -> str:
    """The opaque id raters see for the target `key`.

    Example:
        >>> len(response_id_of("reference/clin_01")), response_id_of("x")[0]
        (13, 'r')
    """
    return "r" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def open_ratings(store: RunStore) -> None:
    """Create the two tables in a run's store if they are not there yet (older runs have none)."""
    store.db.executescript(SCHEMA)


def put_targets(store: RunStore, targets: Iterable[RatingTarget]) -> int:
    """Add targets not stored yet (by key); returns how many were new. Existing ones are never
    changed, so a text once shown to a rater stays what was rated."""
    open_ratings(store)
    rows = [(t.response_id, t.key, t.source, t.instrument, t.item_id, t.trial_id, t.reply_id, t.original_id,
             t.perturbation, t.text, json.dumps(t.detail, sort_keys=True)) for t in targets]
    before = store.db.total_changes
    with store.db:
        store.db.execute("BEGIN")
        store.db.executemany("INSERT OR IGNORE INTO rating_targets (response_id, key, source, instrument, item_id, "
                             "trial_id, reply_id, original_id, perturbation, text, detail) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return store.db.total_changes - before


def put_ratings(store: RunStore, ratings: Iterable[Rating]) -> None:
    """Store ratings, replacing an earlier rating of the same target, dimension and rater (a
    re-import of a corrected human rating sheet, or a judge's retried failure)."""
    open_ratings(store)
    rows = [(r.response_id, r.rubric_id, r.dimension, r.rater_kind, r.rater_id, r.level, r.status, r.reason, r.model,
             r.answer_mode, None if r.distribution is None else json.dumps(r.distribution, sort_keys=True),
             None if r.request is None else json.dumps(r.request, sort_keys=True), r.raw_text, r.attempts, r.rated_at)
            for r in ratings]
    with store.db:
        store.db.execute("BEGIN")
        store.db.executemany("INSERT OR REPLACE INTO ratings (response_id, rubric_id, dimension, rater_kind, rater_id, "
                             "level, status, reason, model, answer_mode, distribution, request, raw_text, attempts, "
                             "rated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def read_targets(store: RunStore) -> pd.DataFrame:
    """Every rating target of a run (columns :data:`TARGET_COLUMNS`; ``detail`` decoded)."""
    open_ratings(store)
    frame = pd.read_sql_query(f"SELECT {', '.join(TARGET_COLUMNS)} FROM rating_targets ORDER BY key", store.db)
    frame["detail"] = frame["detail"].map(json.loads)
    return frame


def rated_keys(store: RunStore, rubric_id: str, rater_kind: RaterKind, rater_id: str) -> set[tuple[str, str]]:
    """(response_id, dimension) pairs this rater has a finished rating of (``failed`` ones are
    not finished: a rerun of the judge tries them again)."""
    open_ratings(store)
    rows = store.db.execute("SELECT response_id, dimension FROM ratings WHERE rubric_id = ? AND rater_kind = ? "
                            "AND rater_id = ? AND status != 'failed'", (rubric_id, rater_kind, rater_id))
    return {(r[0], r[1]) for r in rows}


def read_ratings(store: RunStore, rubric_id: str | None = None) -> pd.DataFrame:
    """The tidy ratings of a run (columns :data:`RATING_COLUMNS`), optionally of one rubric.

    Missing levels stay NaN with their status and reason; nothing is dropped or imputed here.
    """
    open_ratings(store)
    where, params = ("WHERE r.rubric_id = ?", (rubric_id,)) if rubric_id else ("", ())
    cols = ", ".join(f"t.{c}" for c in TARGET_COLUMNS[:8]) + ", r.rubric_id, r.dimension, r.rater_kind, " \
        "r.rater_id, r.level, r.status, r.reason"
    return pd.read_sql_query(f"SELECT {cols} FROM ratings r JOIN rating_targets t USING (response_id) {where} "
                             "ORDER BY t.key, r.rubric_id, r.dimension, r.rater_kind, r.rater_id", store.db,
                             params=params)
