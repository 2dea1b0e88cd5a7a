"""RunStore: one SQLite file per run, the single truth every later step reads.

Each trial (one request and its re-asks) is committed the moment it ends, with the request's
body exactly as sent (no headers, so no secrets), the raw response, the parsed answers, status,
attempts, latency, tokens and timestamps. WAL mode with ``synchronous=NORMAL`` keeps every
committed trial through a killed process (when the WAL is copied into the database, a
*checkpoint*, changes only where the pages are, not whether they are kept: see WAL_CHECKPOINT_PAGES).
The runner uses a *group commit* (:meth:`RunStore.put_trial_soon`): every trial that ends in one
turn of the event loop is handed, at the start of the next turn, to the store's writer process
(engine/store/writer_process.py), which commits the group in one transaction on another core.

A trial is *finished* when the model answered, or answered unreadably after the re-asks
(`answered` / `missing`): a rerun never sends it again. A `failed` trial (the backend never
gave an answer: retries exhausted, server gone) is retried by the next run.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from psyq.engine.files.errors import StoreWriterGone
from psyq.engine.files.json_text import json_encoder
from psyq.engine.store import writer_process
from psyq.engine.store.writer_process import frame, write_each

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
    request TEXT NOT NULL,             -- the first request's body as sent: JSON (no headers)
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
    budget_reasks INTEGER,             -- times sent again with a larger token limit after running out of it
    condition TEXT NOT NULL DEFAULT '' -- the study's condition it was asked under ('' without `conditions:`)
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
CREATE TABLE IF NOT EXISTS stage_trials (   -- only in runs of studies with `stages:` (engine/administer/send.py)
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
                 "cached_tokens", "reasoning_tokens", "budget_reasks", "condition")
# Every writing connection's settings (the store's own and its writer process's).
PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}",
           "PRAGMA foreign_keys=ON")
# The statements that write trials, spelled once (sqlite3 keeps them prepared by their text).
STATEMENTS = {
    "delete_trial": "DELETE FROM trials WHERE trial_id = ?",
    "insert_trial": f"INSERT INTO trials ({', '.join(TRIAL_COLUMNS)}) VALUES ({', '.join('?' * len(TRIAL_COLUMNS))})",
    "insert_answer": "INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "insert_stage": "INSERT INTO stage_trials VALUES (?, ?, ?, ?, ?, ?, ?)",
}


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
    request: str                         # the first request's body as sent (JSON text; no headers, so no key)
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
    condition: str = ""                  # the study's condition it was asked under ('' without `conditions:`)


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
        for pragma in PRAGMAS:
            self.db.execute(pragma)
        self.db.executescript(SCHEMA)
        # Runs stored before free-text answers existed lack answers.text: add it (empty).
        if "text" not in {row[1] for row in self.db.execute("PRAGMA table_info(answers)")}:
            self.db.execute("ALTER TABLE answers ADD COLUMN text TEXT")
        # Runs stored before endpoint pools, prompt-cache and reasoning accounting lack these: added (NULL);
        # runs stored before conditions lack `condition`: added, '' (they were asked one way).
        trial_columns = {row[1] for row in self.db.execute("PRAGMA table_info(trials)")}
        for column, kind in (("endpoint", "TEXT"), ("cached_tokens", "INTEGER"), ("reasoning_tokens", "INTEGER"),
                             ("budget_reasks", "INTEGER"), ("condition", "TEXT NOT NULL DEFAULT ''")):
            if column not in trial_columns:
                self.db.execute(f"ALTER TABLE trials ADD COLUMN {column} {kind}")
        for name, (table, columns) in INDEXES.items():
            if set(columns) <= {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}:
                self.db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({', '.join(columns)})")
        self._pending: list[TrialRecord] = []
        self._flush_scheduled = False
        self._flush_error: BaseException | None = None
        self._writer: _Writer | None = None   # started by the first group commit

    def close(self) -> None:
        try:
            self.flush()
        finally:
            try:
                if self._writer is not None:
                    self._writer.stop()
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
        """Commit one trial and its answers atomically (replacing an earlier failed attempt), now,
        after every trial queued before it."""
        self.flush()
        errors = write_each(self.db, STATEMENTS, *_rows([trial]))
        if errors:
            raise errors[0]

    def put_trial_soon(self, trial: TrialRecord) -> None:
        """Queue `trial` for a group commit, handed to the store's writer process at the start of
        the event loop's next turn.

        Called from a coroutine. Every trial queued during one turn of the loop (several workers'
        answers often arrive together) goes as one group, by a callback that ``call_soon``
        schedules; asyncio runs it before the callbacks of any I/O that becomes ready later, so an
        answer is never held while the process waits on the network, a timer or anything else.
        The writer (engine/store/writer_process.py) commits it in one transaction on another core.
        What a SIGKILL of the run loses is that turn's answers: the groups already handed over
        are in the pipe to the writer, which reads it to the end and commits them. Killed with the
        writer (the whole process group), it also loses what the pipe held: at most its 64 KiB
        (some 30 one-item trials) and the group being written. A rerun sends a lost trial again. A
        failed commit is raised by the next call here or by :meth:`flush`, so a run cannot go on
        without storing.
        """
        self._raise_flush_error()
        self._pending.append(trial)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._hand_over_soon)

    def flush(self) -> None:
        """Commit every trial queued by :meth:`put_trial_soon` and wait until it is committed (and
        raise a failed commit's error).

        Should a group's transaction fail, each of its trials is committed on its own, so that
        one unstorable trial costs no other trial its answers; the first error is then raised.
        """
        self._raise_flush_error()
        self._hand_over()
        if self._writer is not None:
            self._writer.sync()
            self._raise_flush_error()

    def _hand_over(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            if self._writer is None:
                self._writer = _Writer(self.path)
            self._writer.send(("group", *_rows(pending)))

    def _hand_over_soon(self) -> None:
        self._flush_scheduled = False
        try:
            self._hand_over()
        except BaseException as exc:  # kept for the caller: a loop callback cannot raise to it
            self._flush_error = exc

    def _raise_flush_error(self) -> None:
        if self._flush_error is None and self._writer is not None:
            self._flush_error = self._writer.first_error()
        if self._flush_error is not None:
            error, self._flush_error = self._flush_error, None
            raise error

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
        """Every stored stage trial: trial_id -> (status, messages sent, reply) (engine/administer/send.py)."""
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


# json.dumps's text, by one encoder made once: a stored trial encodes its item ids and the reply.
_dumps = json_encoder()


def _rows(trials: list[TrialRecord]) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """The trials, answers and stage_trials rows of `trials` (the same trial twice: the later wins)."""
    rows, answers, stages = [], [], []
    for trial in {t.trial_id: t for t in trials}.values():
        rows.append(_trial_row(trial))
        answers.extend(_answer_rows(trial))
        if trial.stage:
            stage = trial.stage
            stages.append((trial.trial_id, stage.chain_id, stage.stage, stage.situation_id, stage.emotion,
                           _dumps(stage.messages), stage.reply))
    return rows, answers, stages


class _Writer:
    """The store's writer process (engine/store/writer_process.py), seen from the run."""

    def __init__(self, database: Path):
        script = Path(writer_process.__file__)
        # -I -S: the standard library only (it imports nothing else), so it starts at once.
        self._process = subprocess.Popen([sys.executable, "-I", "-S", str(script), str(database)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._events = self._process.stdout.fileno()   # type: ignore[union-attr]
        os.set_blocking(self._events, False)
        self._unread = b""
        self._errors: list[BaseException] = []
        self._synced = 0   # "synced" lines read so far
        self.send(("setup", PRAGMAS, STATEMENTS))

    def send(self, message: tuple) -> None:
        """Hand `message` over (waits only while the pipe is full, so the writer is never far behind)."""
        try:
            self._process.stdin.write(frame(message))   # type: ignore[union-attr]
            self._process.stdin.flush()                 # type: ignore[union-attr]
        except BrokenPipeError:
            raise self._gone() from None
        self._read(wait=False)

    def sync(self) -> None:
        """Return once everything handed over is committed (or has failed: see :meth:`first_error`)."""
        target = self._synced + 1
        self.send(("sync",))
        while self._synced < target:
            self._read(wait=True)

    def first_error(self) -> BaseException | None:
        return self._errors.pop(0) if self._errors else None

    def stop(self) -> None:
        """End the writer's input; it commits what it has and exits."""
        try:
            self._process.stdin.close()   # type: ignore[union-attr]
        except BrokenPipeError:   # it has gone already (the error was raised when it went)
            pass
        self._process.wait()
        os.set_blocking(self._events, True)
        self._unread += self._process.stdout.read()   # type: ignore[union-attr]
        self._take_lines()
        self._process.stdout.close()   # type: ignore[union-attr]

    def _read(self, wait: bool) -> None:
        """Read the writer's events (with `wait`, wait for some)."""
        if wait:
            while not select.select([self._events], [], [], 1.0)[0]:
                if self._process.poll() is not None:
                    raise self._gone()
        try:
            chunk = os.read(self._events, 65536)
        except BlockingIOError:
            return
        if not chunk:   # it closed its output: it is ending
            self._process.wait()
            raise self._gone()
        self._unread += chunk
        self._take_lines()

    def _take_lines(self) -> None:
        *lines, self._unread = self._unread.split(b"\n")
        for line in lines:
            kind, _, rest = line.decode("utf-8", "replace").partition(" ")
            if kind == "synced":
                self._synced += 1
            elif kind == "error":
                name, _, message = rest.partition(" ")
                error = getattr(sqlite3, name, None)
                self._errors.append((error if isinstance(error, type) and issubclass(error, sqlite3.Error)
                                     else sqlite3.Error)(message))

    def _gone(self) -> "StoreWriterGone":
        return StoreWriterGone(f"the run store's writer process ended (exit code {self._process.poll()}) before "
                               f"it had committed every answer handed to it; run the same command again to resume "
                               f"(what it did not commit is sent again)")


def _trial_row(trial: TrialRecord) -> tuple:
    """The `trials` row of a trial record."""
    return (trial.trial_id, trial.backend_id, trial.model, trial.respondent_id, trial.instrument_id,
            _dumps(trial.item_ids), trial.repeat, trial.option_order, trial.status,
            trial.request, _response_json(trial.response),
            trial.raw_text, trial.attempts, trial.reasks, trial.latency_s, trial.prompt_tokens,
            trial.completion_tokens, trial.started_at, trial.finished_at, trial.error, trial.endpoint,
            trial.cached_tokens, trial.reasoning_tokens, trial.budget_reasks, trial.condition)


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
