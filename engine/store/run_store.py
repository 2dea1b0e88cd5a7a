"""RunStore: one SQLite file per run, the single truth every later step reads.

Each trial (one request and its re-asks) is committed the moment it ends, with the request sent
(payload only: no headers, so no secrets), the raw response, the parsed answers, status,
attempts, latency, tokens and timestamps. WAL mode with ``synchronous=NORMAL`` keeps every
committed trial through a killed process (when the WAL is copied into the database, a
*checkpoint*, changes only where the pages are, not whether they are kept: see WAL_CHECKPOINT_PAGES).
The runner uses a *group commit*
(:meth:`RunStore.put_trial_soon`): every trial that ends in one turn of the event loop is
committed in one transaction at the start of the next turn, before the process waits on anything.

A trial is *finished* when the model answered, or answered unreadably after the re-asks
(`answered` / `missing`): a rerun never sends it again. A `failed` trial (the backend never
gave an answer: retries exhausted, server gone) is retried by the next run.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS respondents (
    respondent_id TEXT PRIMARY KEY,
    attributes TEXT NOT NULL,          -- JSON object
    backstory TEXT,
    system_prompt TEXT
);
CREATE TABLE IF NOT EXISTS trials (
    trial_id TEXT PRIMARY KEY,         -- hash of everything that decides the answer
    backend_id TEXT NOT NULL,
    model TEXT,
    respondent_id TEXT NOT NULL,
    instrument_id TEXT NOT NULL,
    item_ids TEXT NOT NULL,            -- JSON list, in presentation order
    repeat INTEGER NOT NULL,
    option_order TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('answered', 'missing', 'failed')),
    request TEXT NOT NULL,             -- JSON payload of the first request (no headers)
    response TEXT,                     -- JSON of the last raw response
    raw_text TEXT,                     -- every assistant text received, joined by a separator
    attempts INTEGER NOT NULL,         -- HTTP attempts, retries included
    reasks INTEGER NOT NULL,           -- corrective follow-ups sent
    latency_s REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    error TEXT,
    endpoint TEXT,                     -- the server that gave the last reply (normalised base URL; pools)
    cached_tokens INTEGER,             -- prompt tokens served from the server's prompt cache (NULL: not reported)
    reasoning_tokens INTEGER,          -- part of completion_tokens spent reasoning (NULL: not reported)
    budget_reasks INTEGER              -- times sent again with a larger token limit after running out of it
);
CREATE TABLE IF NOT EXISTS answers (
    trial_id TEXT NOT NULL REFERENCES trials(trial_id) ON DELETE CASCADE,
    item_id TEXT NOT NULL,
    position INTEGER NOT NULL,         -- 0-based place in the order presented
    value INTEGER,                     -- a scale value; NULL when missing (never imputed)
    status TEXT NOT NULL,              -- answered | refusal | out_of_range | unparseable | empty | no_option_tokens |
                                       -- too_long | unreadable_response | parse_error |
                                       -- token_budget_exhausted | failed
    reason TEXT,
    disclaimer INTEGER NOT NULL DEFAULT 0,
    distribution TEXT,                 -- JSON {value: probability} (answer: logprobs)
    option_mass REAL,                  -- probability the model put on valid options before renormalising
    expected REAL,                     -- expected value under the distribution
    text TEXT,                         -- a free-text answer (item_id may name a part: '<item>:self')
    PRIMARY KEY (trial_id, item_id)
);
CREATE TABLE IF NOT EXISTS stage_trials (   -- only in runs of studies with `stages:` (engine/administer/stages.py)
    trial_id TEXT PRIMARY KEY REFERENCES trials(trial_id) ON DELETE CASCADE,
    chain_id TEXT NOT NULL,            -- one respondent x situation x repeat x backend: one conversation
    stage INTEGER NOT NULL,            -- 0-based index in the study's `stages:`
    situation_id TEXT NOT NULL,
    emotion TEXT NOT NULL,
    messages TEXT NOT NULL,            -- JSON: every message of the stage's last request, exactly as sent
    reply TEXT                         -- the last reply's text (what the next stage carries as history)
);
"""

INDEXES = {   # name: (table, columns)
    "trials_by_respondent": ("trials", ("respondent_id",)),
    "answers_by_item": ("answers", ("item_id", "status")),
    "stage_trials_by_chain": ("stage_trials", ("chain_id", "stage")),
}
"""What `psyq view` filters and looks up by (engine/view/). A run stored before them gets them when
psyq next opens it to write; the viewer, which never writes, reads an older run without them (more
slowly). An index is made only when its table has the columns (a store older than them has not)."""

REPLY_SEPARATOR = "\n<<<psyq re-ask>>>\n"
# A writer copies the WAL into the database (a checkpoint: two fsyncs) once it holds this many
# pages (SQLite's default: 1,000). A run rewrites the same index pages in every group commit, so
# at the default a 10,000-trial run checkpointed ~40 times and waited on ~80 fsyncs, with the
# event loop stopped; at 4,000 pages (16 MiB of WAL at most) a quarter as often (bench/RESULTS.md,
# issue 42). Committed trials survive a kill either way: they are in the WAL.
WAL_CHECKPOINT_PAGES = 4000
# The columns of a trials row as written (named: a run from an older psyq had them added at the end).
TRIAL_COLUMNS = ("trial_id", "backend_id", "model", "respondent_id", "instrument_id", "item_ids", "repeat",
                 "option_order", "status", "request", "response", "raw_text", "attempts", "reasks", "latency_s",
                 "prompt_tokens", "completion_tokens", "started_at", "finished_at", "error", "endpoint",
                 "cached_tokens", "reasoning_tokens", "budget_reasks")
# The statements of a group commit, spelled once (sqlite3 keeps them prepared by their text).
_DELETE_TRIAL = "DELETE FROM trials WHERE trial_id = ?"
_INSERT_TRIAL = f"INSERT INTO trials ({', '.join(TRIAL_COLUMNS)}) VALUES ({', '.join('?' * len(TRIAL_COLUMNS))})"
_INSERT_ANSWER = "INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_STAGE = "INSERT INTO stage_trials VALUES (?, ?, ?, ?, ?, ?, ?)"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")   # in a Python string, a surrogate is always half a pair


@dataclass
class AnswerRecord:
    """One item's answer within a trial."""

    item_id: str
    position: int
    value: int | None
    status: str
    reason: str | None = None
    disclaimer: bool = False
    distribution: dict[int, float] | None = None
    option_mass: float | None = None
    expected: float | None = None
    text: str | None = None


@dataclass
class TrialRecord:
    """A finished (or failed) trial as stored."""

    trial_id: str
    backend_id: str
    model: str | None
    respondent_id: str
    instrument_id: str
    item_ids: list[str]
    repeat: int
    option_order: str
    status: str
    request: dict[str, Any]
    response: dict[str, Any] | None
    raw_text: str | None
    attempts: int
    reasks: int
    latency_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    started_at: str
    finished_at: str
    error: str | None
    answers: list[AnswerRecord]
    stage: "StageRecord | None" = None   # set for a stage of a multi-stage study only
    endpoint: str | None = None          # which server answered (the last reply's)
    cached_tokens: int | None = None     # prompt tokens read from the server's cache (None: not reported)
    reasoning_tokens: int | None = None  # part of completion_tokens spent reasoning (None: not reported)
    budget_reasks: int = 0               # sent again with a doubled token limit (at most once)


@dataclass
class StageRecord:
    """Where a stage trial sits in its conversation, and exactly what it sent and got back."""

    chain_id: str
    stage: int
    situation_id: str
    emotion: str
    messages: list[dict[str, Any]]
    reply: str | None


class RunStore:
    """The SQLite file of one run.

    Example (`run_dir`: a finished run of 16 trials, one with an answer refused):
        >>> with RunStore(run_dir / "run.sqlite") as store:
        ...     len(store.finished_trial_ids()), store.status_counts()
        (16, {'answered': 15, 'missing': 1})
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        # Runs stored before free-text answers existed lack answers.text: add it (empty).
        if "text" not in {row[1] for row in self.db.execute("PRAGMA table_info(answers)")}:
            self.db.execute("ALTER TABLE answers ADD COLUMN text TEXT")
        # Runs stored before endpoint pools, prompt-cache and reasoning accounting lack these: added (NULL).
        trial_columns = {row[1] for row in self.db.execute("PRAGMA table_info(trials)")}
        for column, kind in (("endpoint", "TEXT"), ("cached_tokens", "INTEGER"), ("reasoning_tokens", "INTEGER"),
                             ("budget_reasks", "INTEGER")):
            if column not in trial_columns:
                self.db.execute(f"ALTER TABLE trials ADD COLUMN {column} {kind}")
        for name, (table, columns) in INDEXES.items():
            if set(columns) <= {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}:
                self.db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({', '.join(columns)})")
        self._pending: list[TrialRecord] = []
        self._flush_scheduled = False
        self._flush_error: BaseException | None = None

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.db.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def put_respondents(self, rows: Iterable[tuple[str, dict[str, Any], str | None, str | None]]) -> None:
        """Store (respondent_id, attributes, backstory, system_prompt) rows."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT OR REPLACE INTO respondents VALUES (?, ?, ?, ?)",
                                [(r, json.dumps(a), b, s) for r, a, b, s in rows])

    def put_trial(self, trial: TrialRecord) -> None:
        """Commit one trial and its answers atomically (replacing an earlier failed attempt)."""
        self._commit([trial])

    def put_trial_soon(self, trial: TrialRecord) -> None:
        """Queue `trial` for a group commit at the start of the event loop's next turn.

        Called from a coroutine. Every trial queued during one turn of the loop (several workers'
        answers often arrive together) is written in one transaction by a callback that
        ``call_soon`` schedules; asyncio runs it before the callbacks of any I/O that becomes
        ready later, so an answer is never held while the process waits on the network, a timer
        or anything else: the window in which a SIGKILL loses a received answer stays one turn
        of the loop (microseconds; a few milliseconds when hundreds of answers arrive together),
        as with a commit per trial, whose window is the code between the response and the
        commit; a rerun sends such a trial again. The gain is one WAL write of the shared
        B-tree pages per turn instead of one per trial (bench/RESULTS.md). A failed commit is
        raised by the next call here or by :meth:`flush`, so a run cannot go on without storing.
        """
        self._raise_flush_error()
        self._pending.append(trial)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_soon)

    def flush(self) -> None:
        """Commit every trial queued by :meth:`put_trial_soon` now (and raise a failed group
        commit's error).

        Should the group's transaction fail, each trial is committed on its own, so that one
        unstorable trial costs no other trial its answers; the first error is then raised.
        """
        self._raise_flush_error()
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            self._commit(pending)
        except sqlite3.Error:
            errors = []
            for trial in pending:
                try:
                    self._commit([trial])
                except sqlite3.Error as exc:
                    errors.append(exc)
            if errors:
                raise errors[0]

    def _flush_soon(self) -> None:
        self._flush_scheduled = False
        try:
            self.flush()
        except BaseException as exc:  # kept for the caller: a loop callback cannot raise to it
            self._flush_error = exc

    def _raise_flush_error(self) -> None:
        if self._flush_error is not None:
            error, self._flush_error = self._flush_error, None
            raise error

    def _commit(self, trials: list[TrialRecord]) -> None:
        """Write `trials` and their answers in one transaction (each replaces an earlier attempt)."""
        rows, answers = [], []
        latest = {t.trial_id: t for t in trials}   # the same trial twice: the later record wins
        for trial in latest.values():
            rows.append(_trial_row(trial))
            answers.extend(_answer_rows(trial))
        stages = [(t.trial_id, t.stage.chain_id, t.stage.stage, t.stage.situation_id, t.stage.emotion,
                   _dumps(t.stage.messages), t.stage.reply) for t in latest.values() if t.stage]
        try:
            self._write(rows, answers, stages)
        except UnicodeEncodeError:
            # A lone surrogate, which a reply's JSON may escape ("\ud800") and Python then holds in
            # a string, cannot be given to SQLite as UTF-8: stored as U+FFFD (the raw response,
            # JSON with ASCII escapes, keeps it as sent). Rolled back: written again, whole.
            self._write(*(_encodable(part) for part in (rows, answers, stages)))

    def _write(self, rows: list[tuple], answers: list[tuple], stages: list[tuple]) -> None:
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany(_DELETE_TRIAL, [(r[0],) for r in rows])
            self.db.executemany(_INSERT_TRIAL, rows)
            self.db.executemany(_INSERT_ANSWER, answers)
            if stages:
                self.db.executemany(_INSERT_STAGE, stages)

    # --- reading -------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def finished_trial_ids(self) -> set[str]:
        """Trials a rerun must not send again."""
        self.flush()
        rows = self.db.execute("SELECT trial_id FROM trials WHERE status IN ('answered', 'missing')")
        return {r[0] for r in rows}

    def stage_trials(self) -> dict[str, tuple[str, list[dict[str, Any]], str | None]]:
        """Every stored stage trial: trial_id -> (status, messages sent, reply) (engine/administer/stages.py)."""
        self.flush()
        rows = self.db.execute("SELECT s.trial_id, t.status, s.messages, s.reply "
                               "FROM stage_trials s JOIN trials t USING (trial_id)")
        return {r[0]: (r[1], json.loads(r[2]), r[3]) for r in rows}

    def status_counts(self) -> dict[str, int]:
        """Number of trials per status."""
        self.flush()
        return dict(self.db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())

    def frequent_errors(self, limit: int = 5) -> list[tuple[str, int]]:
        """The most frequent error messages of failed trials, most frequent first, with their counts.

        Example (`run_dir`: no trial failed):
            >>> with RunStore(run_dir / "run.sqlite") as store:
            ...     store.frequent_errors()
            []
            >>> store.frequent_errors()   # a run whose server refused a parameter  # doctest: +SKIP
            [("HTTP 400 (unsupported_parameter, param max_tokens): Unsupported parameter: 'max_tokens' ...", 364)]
        """
        self.flush()
        return [(m, n) for m, n in self.db.execute(
            "SELECT error, COUNT(*) AS n FROM trials WHERE status = 'failed' AND error IS NOT NULL "
            "GROUP BY error ORDER BY n DESC, error LIMIT ?", (limit,)).fetchall()]

    def answer_status_counts(self) -> dict[str, int]:
        """Number of item answers per status (answered, refusal, unparseable …)."""
        self.flush()
        return dict(self.db.execute("SELECT status, COUNT(*) FROM answers GROUP BY status").fetchall())


def store_is_current(database: str | Path) -> bool:
    """Whether the store at `database` has every column this psyq writes (read-only: a store of an older
    psyq is brought up to date by opening it as a :class:`RunStore`)."""
    from psyq.engine.store.readonly import connect_readonly

    db = connect_readonly(database)
    try:
        answers = {row[1] for row in db.execute("PRAGMA table_info(answers)")}
        trials = {row[1] for row in db.execute("PRAGMA table_info(trials)")}
    finally:
        db.close()
    return "text" in answers and set(TRIAL_COLUMNS) <= trials


def _json_dumps() -> Callable[[Any], str]:
    """``json.dumps`` with its default settings, made once: the same C encoder ``json.dumps``
    builds on every call (so the same text, byte for byte), built here once per process.

    ``json.dumps`` spends about as long building its encoder as encoding a short object; a stored
    trial encodes three (item ids, request, response). What is stored holds no cycles (payloads
    the backends build, replies parsed from JSON), so the encoder keeps no circular-reference
    marks, which also leaves it safe to share between threads; an object nested too deep raises
    RecursionError as ``json.dumps`` does. Where Python has no C encoder, ``json.dumps`` itself.

    Example:
        >>> value = {"b": [1, 2.5, float("nan"), None, True], "a": "caf\u00e9", 3: {"x": []}}
        >>> _dumps(value) == json.dumps(value)
        True
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:   # pragma: no cover - CPython has it
        return json.dumps
    base = json.JSONEncoder()   # json.dumps's defaults: ensure_ascii, allow_nan, ", " and ": "
    encode = make(None, base.default, json.encoder.encode_basestring_ascii, None, base.key_separator,
                  base.item_separator, base.sort_keys, base.skipkeys, base.allow_nan)

    def dumps(obj: Any) -> str:
        return "".join(encode(obj, 0))

    return dumps


_dumps = _json_dumps()


def _trial_row(trial: TrialRecord) -> tuple:
    """The `trials` row of a trial record."""
    return (trial.trial_id, trial.backend_id, trial.model, trial.respondent_id, trial.instrument_id,
            _dumps(trial.item_ids), trial.repeat, trial.option_order, trial.status,
            _dumps(trial.request), _response_json(trial.response),
            trial.raw_text, trial.attempts, trial.reasks, trial.latency_s, trial.prompt_tokens,
            trial.completion_tokens, trial.started_at, trial.finished_at, trial.error, trial.endpoint,
            trial.cached_tokens, trial.reasoning_tokens, trial.budget_reasks)


def _encodable(rows: list[tuple]) -> list[tuple]:
    """`rows` with every lone surrogate in their strings replaced by U+FFFD."""
    return [tuple(_LONE_SURROGATE.sub("\ufffd", v) if isinstance(v, str) else v for v in row) for row in rows]


def _response_json(response: dict[str, Any] | None) -> str | None:
    """The raw response as JSON; one too deeply nested to encode is replaced by a note saying so
    (a server's odd reply must never make a trial unstorable)."""
    if response is None:
        return None
    try:
        return _dumps(response)
    except (ValueError, TypeError, RecursionError) as exc:
        return json.dumps({"unstorable_response": f"{type(exc).__name__}: the response could not be encoded"})


def _answer_rows(trial: TrialRecord) -> list[tuple]:
    """The `answers` rows of a trial record."""
    return [(trial.trial_id, a.item_id, a.position, a.value, a.status, a.reason, int(a.disclaimer),
             _dumps(a.distribution) if a.distribution is not None else None,
             a.option_mass, a.expected, a.text) for a in trial.answers]
