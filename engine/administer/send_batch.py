"""Batch mode: send a backend's trials through the provider's batch API instead of one by one.

A backend with ``mode: batch`` (OpenAI Batch API, Anthropic Message Batches) gets its unfinished
trials written into batches built from the same planned trials and request bodies as the online
path (``backend.payload``), with the trial id as each request's ``custom_id``. Every reply is
read by the same code as an online reply (``backend.result`` and
:func:`psyq.engine.administer.send_trial.run_trial_conversation`): the batch results are *replayed*
through a stand-in backend, so parsing, re-asks and the stored records are exactly those of an
online run. It is one way of sending (engine/administer/send.py starts it beside the online backends).

Nothing submitted is ever lost or sent twice:

- a row in the ``batches`` table is committed *before* anything is uploaded (its ``intent``);
  the provider's batch id is committed the moment the provider gives it. OpenAI batches carry
  the intent in their metadata, so a run killed between the two finds its batch by listing;
- a rerun first polls every batch not yet collected, by its stored id, and submits only the
  trials that are in no open batch and have no reply;
- replies are stored in ``batch_replies`` together with the batch's ``collected`` status in one
  transaction, and the trials are stored from them; a kill in between loses nothing.

A trial without a result (an error line, an expired or cancelled batch, a failed batch) is
stored as ``failed`` with why; the next run sends it again in a new batch. Corrective re-asks go
out online by default (``reasks: online``): they are few, and a follow-up batch would add up to
another 24 hours; ``reasks: batch`` sends them as follow-up batches (cheaper, slower).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from psyq.engine.backends.base import ChatRequest, ChatResult, HttpBackend

from psyq.engine.files.errors import BackendError
from psyq.engine.backends.bodies import kept_body
from psyq.engine.backends.batch_api import BatchLine, BatchState
from psyq.engine.files.errors import BatchApiError
from psyq.engine.administer.record import ProgressCallback, store_trial
from psyq.engine.administer.send_trial import run_trial_conversation
from psyq.engine.store.clock import utc_now
from psyq.engine.store.run_store import RunStore
from psyq.engine.trials.trial import Trial

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    intent TEXT PRIMARY KEY,          -- psyq's id for the batch, committed before anything is sent
    batch_id TEXT UNIQUE,             -- the provider's id (NULL until the provider gave it)
    backend_id TEXT NOT NULL,
    provider TEXT NOT NULL,           -- openai | anthropic
    status TEXT NOT NULL,             -- preparing | uploaded | submitted | the provider's word | collected | lost
    trial_ids TEXT NOT NULL,          -- JSON list: the custom_ids of its requests
    input_file_id TEXT,               -- OpenAI: the uploaded JSONL file
    created_at TEXT NOT NULL,
    submitted_at TEXT,
    collected_at TEXT,
    counts TEXT,                      -- JSON: requests with a result / without one, as psyq counted them
    note TEXT                         -- what went wrong, in plain words
);
CREATE TABLE IF NOT EXISTS batch_replies (   -- every reply body a batch returned, replayed into trials
    trial_id TEXT NOT NULL,
    seq INTEGER NOT NULL,             -- 0: the first reply; 1, 2 …: replies to re-asks
    batch_id TEXT NOT NULL,
    body TEXT NOT NULL,               -- JSON, as the online endpoint would have sent it
    PRIMARY KEY (trial_id, seq)
);
"""

OPEN = "status NOT IN ('collected', 'lost')"
REPLAY_CHUNK = 1000   # trials replayed at once (online re-asks among them run concurrently)

Log = Callable[[str], None]


def ensure_tables(store: RunStore) -> None:
    """Create the batch tables in a run store (idempotent)."""
    store.db.executescript(SCHEMA)


def client_for(backend: HttpBackend) -> Any:
    """The batch client of a backend's provider (the class the backend declares, ``batch_client``).

    Example:
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> client_for(make_backend(BackendConfig(id="a", kind="anthropic", model="m"))).provider
        'anthropic'
    """
    if backend.batch_client is None:   # refused when the study is loaded; said plainly if reached anyway
        raise BackendError(f"backend '{backend.config.id}': kind {backend.config.kind} has no batch API", fatal=True)
    return backend.batch_client(backend)


class NeedsRequest(Exception):
    """The replay reached a request that has no reply yet: it must be sent (in a batch)."""

    def __init__(self, request: ChatRequest):
        super().__init__("needs a request")
        self.request = request


class ReplayBackend:
    """Stands in for a backend while a trial is read from its batch replies.

    Each ``complete`` returns the next stored reply, read by the real backend's ``result``;
    past the last one it sends online (re-asks with ``reasks: online``), raises the failure of
    a batch that gave no result, or raises :class:`NeedsRequest`.
    """

    def __init__(self, real: HttpBackend, replies: list[dict[str, Any]], *, online: bool, failure: str | None):
        self.real, self.replies, self.online, self.failure = real, list(replies), online, failure
        self.config, self.stats = real.config, real.stats
        self._used = 0

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        return self.real.payload(request)

    def identity(self) -> dict[str, Any]:
        return self.real.identity()

    @property
    def capabilities(self):
        return self.real.capabilities

    def token_limit(self, request: ChatRequest) -> int:
        return self.real.token_limit(request)

    async def complete(self, request: ChatRequest) -> ChatResult:
        if self._used < len(self.replies):
            body = self.replies[self._used]
            self._used += 1
            return read_body(self.real, body)
        if self.failure is not None and self._used == 0:
            raise BackendError(self.failure)
        if self.online and self._used > 0:
            return await self.real.complete(request)
        if self.failure is not None:
            raise BackendError(self.failure)
        raise NeedsRequest(request)


def read_body(backend: HttpBackend, body: dict[str, Any]) -> ChatResult:
    """A batch reply read as the online path reads a reply (``backend.result``); one that is not
    a chat reply at all is an unreadable response (it cannot be retried like an online one).

    Example:
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> read_body(backend, {"choices": [{"message": {"content": "3"}}]}).text
        '3'
    """
    try:
        return backend.result(body)
    except Exception as exc:   # noqa: BLE001 - one odd line costs its trial only
        return ChatResult(text="", first_token_logprobs=None, prompt_tokens=None, completion_tokens=None,
                          raw=kept_body(json.dumps(body).encode()), problem="unreadable_response",
                          problem_reason=f"the batch result is not a chat reply ({type(exc).__name__})")


@dataclass
class BatchReport:
    """What batch mode did in one run, for the CLI and the manifest."""

    submitted: int = 0       # batches created by this run
    collected: int = 0       # batches whose results this run stored
    without_result: int = 0  # requests that came back without a result (stored as failed)
    notes: list[str] | None = None


async def run_batches(trials: list[Trial], backends: dict[str, HttpBackend], store: RunStore,
                      on_trial: ProgressCallback | None = None, log: Log = print) -> BatchReport:
    """Administer `trials` of the batch-mode `backends` through their providers' batch APIs.

    Example:
        >>> report = asyncio.run(run_batches(trials, {"b": backend}, store))  # sends batches  # doctest: +SKIP
    """
    ensure_tables(store)
    report = BatchReport(notes=[])
    tasks = [asyncio.ensure_future(_run_backend([t for t in trials if t.backend_id == b], backend, store, on_trial,
                                                log, report)) for b, backend in backends.items()]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:   # one backend's fatal error (or an interrupt) stops the others too
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return report


async def _run_backend(trials: list[Trial], backend: HttpBackend, store: RunStore,
                       on_trial: ProgressCallback | None, log: Log, report: BatchReport) -> None:
    client = client_for(backend)
    backend_id = backend.config.id
    no_result: dict[str, str] = {}   # trial -> why, for batches collected by this process
    failed: set[str] = set()          # trials this process stored as failed (not replayed again)
    # Each trial needs at most 1 + reask_limit requests (its protocol's); one more round collects the last batch.
    rounds = max((t.protocol.reask_limit for t in trials), default=0) + 3
    for _round in range(rounds):
        await _collect_open(client, backend, store, no_result, log, report)
        needs = await _replay_unfinished(trials, backend, store, no_result, failed, on_trial)
        if not needs:
            return
        await _submit(client, backend, store, needs, no_result, log, report)
    report.notes.append(f"backend '{backend_id}': trials still need requests after "
                        f"{rounds} batch rounds; run the same command again")


async def _replay_unfinished(trials: list[Trial], backend: HttpBackend, store: RunStore,
                             no_result: dict[str, str], failed: set[str], on_trial: ProgressCallback | None
                             ) -> list[tuple[Trial, ChatRequest]]:
    """Store every trial its replies complete; the requests the others still need."""
    finished = store.finished_trial_ids()
    todo = [t for t in trials if t.trial_id not in finished and t.trial_id not in failed]
    replies = _replies(store, {t.trial_id for t in todo})
    online = backend.config.reasks == "online"
    needs: list[tuple[Trial, ChatRequest]] = []

    async def one(trial: Trial) -> None:
        stand_in = ReplayBackend(backend, replies.get(trial.trial_id, []), online=online,
                                 failure=no_result.get(trial.trial_id))
        try:
            record = (await run_trial_conversation(trial, stand_in, trial.protocol))[0]   # type: ignore[arg-type]
        except NeedsRequest as need:
            needs.append((trial, need.request))
            return
        if record.status == "failed":
            failed.add(trial.trial_id)
        store_trial(store, record, on_trial)

    for start in range(0, len(todo), REPLAY_CHUNK):
        await asyncio.gather(*(one(t) for t in todo[start:start + REPLAY_CHUNK]))
        store.flush()
    return needs


def _replies(store: RunStore, trial_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for trial_id, body in store.db.execute("SELECT trial_id, body FROM batch_replies ORDER BY trial_id, seq"):
        if trial_id in trial_ids:
            out.setdefault(trial_id, []).append(json.loads(body))
    return out


async def _submit(client, backend: HttpBackend, store: RunStore, needs: list[tuple[Trial, ChatRequest]],
                  no_result: dict[str, str], log: Log, report: BatchReport) -> None:
    """Send the requests as batches of at most `batch_size`, each recorded before it is sent."""
    size = backend.config.batch_size
    backend_id = backend.config.id
    for start in range(0, len(needs), size):
        chunk = needs[start:start + size]
        requests = [(trial.trial_id, backend.payload(request)) for trial, request in chunk]
        ids = [cid for cid, _ in requests]
        intent = uuid.uuid4().hex
        store.db.execute("INSERT INTO batches (intent, backend_id, provider, status, trial_ids, created_at) "
                         "VALUES (?, ?, ?, 'preparing', ?, ?)",
                         (intent, backend_id, client.provider, json.dumps(ids), utc_now()))
        try:
            file_id = await client.upload(requests)
            store.db.execute("UPDATE batches SET input_file_id = ?, status = 'uploaded' WHERE intent = ?",
                             (file_id, intent))
            batch_id = await client.create(file_id, requests, intent)
        except BatchApiError as exc:
            if exc.fatal or exc.status is None or exc.status >= 500 or exc.status == 429:
                # Perhaps created after all: the row stays open, and the next run finds the batch
                # by its intent (OpenAI) or says it cannot (Anthropic) before sending anything.
                raise
            # The provider refused the batch (4xx): these trials fail now and go again next run.
            store.db.execute("UPDATE batches SET status = 'lost', note = ? WHERE intent = ?", (str(exc), intent))
            no_result.update({i: f"the batch was refused: {exc}" for i in ids})
            report.notes.append(f"backend '{backend_id}': a batch of {len(ids)} requests was refused ({exc}); "
                                f"its trials are stored as failed; run the same command again to retry them")
            continue
        store.db.execute("UPDATE batches SET batch_id = ?, status = 'submitted', submitted_at = ? WHERE intent = ?",
                         (batch_id, utc_now(), intent))
        backend.stats.requests += len(ids)
        report.submitted += 1
        log(f"batch {batch_id} ({backend_id}): {len(ids)} requests submitted")


async def _collect_open(client, backend: HttpBackend, store: RunStore, no_result: dict[str, str], log: Log,
                        report: BatchReport) -> None:
    """Wait for every open batch of the backend, then store its replies (one transaction per batch)."""
    rows = store.db.execute(f"SELECT intent, batch_id, status, trial_ids FROM batches WHERE backend_id = ? "
                            f"AND {OPEN} ORDER BY created_at", (backend.config.id,)).fetchall()
    for intent, batch_id, status, trial_ids in rows:
        ids = json.loads(trial_ids)
        if batch_id is None:
            batch_id = await client.find(intent)
            if batch_id is None:
                # Recorded, but the provider never gave an id: never created, or (Anthropic) created
                # in the instant before the id was committed, which its API cannot tell us.
                why = ("was never created (the run stopped before the provider answered); its trials are sent again"
                       if client.can_find else
                       "has no id: the run stopped between submitting it and recording the provider's answer; "
                       "if the provider did create it, its requests may be answered (and billed) twice")
                store.db.execute("UPDATE batches SET status = 'lost', note = ? WHERE intent = ?", (why, intent))
                report.notes.append(f"backend '{backend.config.id}': a batch of {len(ids)} requests {why}")
                continue
            store.db.execute("UPDATE batches SET batch_id = ?, status = 'submitted', submitted_at = ? "
                             "WHERE intent = ?", (batch_id, utc_now(), intent))
            log(f"batch {batch_id} ({backend.config.id}): found again by its psyq intent {intent}")
        try:
            state = await _wait(client, backend, store, intent, batch_id, log)
        except BatchApiError as exc:
            if exc.status != 404:
                raise   # the run stops; the batch stays recorded and a rerun polls it again
            # The provider no longer knows the batch (deleted, another account): its trials go again.
            why = f"the provider does not know batch {batch_id} ({exc}); its trials are stored as failed"
            store.db.execute("UPDATE batches SET status = 'lost', note = ? WHERE intent = ?", (why, intent))
            no_result.update({i: why for i in ids})
            report.notes.append(f"backend '{backend.config.id}': {why}; run the same command again to send them")
            continue
        lines = await client.results(state)
        _store_results(store, intent, batch_id, ids, state, lines, no_result, report, backend.config.id)


async def _wait(client, backend: HttpBackend, store: RunStore, intent: str, batch_id: str, log: Log) -> BatchState:
    """Poll the batch until it has ended, waiting longer each time (up to `batch_max_poll_s`)."""
    wait = backend.config.batch_poll_s
    last = None
    while True:
        state = await client.poll(batch_id)
        if state.status != last:
            store.db.execute("UPDATE batches SET status = ? WHERE intent = ?", (state.status, intent))
            log(f"batch {batch_id} ({backend.config.id}): {state.status}"
                + (f" {json.dumps(state.counts, sort_keys=True)}" if state.counts else ""))
            last = state.status
        if state.ended:
            return state
        await asyncio.sleep(wait)
        wait = min(wait * 1.5, backend.config.batch_max_poll_s)


def _store_results(store: RunStore, intent: str, batch_id: str, ids: list[str], state: BatchState,
                   lines, no_result: dict[str, str], report: BatchReport, backend_id: str) -> None:
    """Replies and the batch's `collected` status, in one transaction; trials without a result noted."""
    wanted = set(ids)
    got: dict[str, BatchLine] = {}
    for line in lines:
        if line.custom_id in wanted and (line.custom_id not in got or got[line.custom_id].body is None):
            got[line.custom_id] = line   # a duplicate line (a provider's bug) never counts twice
    answered = [line for line in got.values() if line.body is not None]
    missing = {i: (got[i].error if i in got else f"no result: the batch ended '{state.status}'"
                   + (f" ({'; '.join(state.errors)})" if state.errors else "")) for i in ids
               if i not in got or got[i].body is None}
    counts = {"with_result": len(answered), "without_result": len(missing)}
    note = None
    if missing:
        said = f": {'; '.join(state.errors)}" if state.errors else ""
        note = (f"{len(missing)} of {len(ids)} requests came back without a result (batch {state.status}{said}); "
                f"stored as failed, sent again by the next run")
    db = store.db
    db.execute("BEGIN IMMEDIATE")
    try:
        for line in answered:
            db.execute("INSERT INTO batch_replies (trial_id, seq, batch_id, body) VALUES (?, (SELECT COALESCE("
                       "MAX(seq) + 1, 0) FROM batch_replies WHERE trial_id = ?), ?, ?)",
                       (line.custom_id, line.custom_id, batch_id,
                        json.dumps(line.body, ensure_ascii=False, separators=(",", ":"))))
        db.execute("UPDATE batches SET status = 'collected', collected_at = ?, counts = ?, note = ? WHERE intent = ?",
                   (utc_now(), json.dumps(counts), note, intent))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    no_result.update({i: f"batch {batch_id}: {why}" for i, why in missing.items()})
    report.collected += 1
    report.without_result += len(missing)
    if note:
        report.notes.append(f"batch {batch_id} (backend '{backend_id}'): {note}")


def open_batch_count(store: RunStore) -> int:
    """Batches recorded and not yet collected (0 when the run has no batch table).

    Example:
        >>> with RunStore(run_dir / "run.sqlite") as store:   # `run_dir` was not run in batch mode
        ...     open_batch_count(store)
        0
    """
    if not store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'batches'").fetchone():
        return 0
    return store.db.execute(f"SELECT COUNT(*) FROM batches WHERE {OPEN}").fetchone()[0]


def batch_status_lines(store: RunStore) -> list[str]:
    """What `psyq status` says about a run's batches: each open one, and a count of the collected.

    Example:
        >>> with RunStore(run_dir / "run.sqlite") as store:   # `run_dir` was not run in batch mode
        ...     batch_status_lines(store)
        []
        >>> batch_status_lines(store)   # a run in batch mode, one batch still open  # doctest: +SKIP
        ['batches    1 collected; open: batch_abc (stub) in_progress, 100 trials, submitted 2026-11-23T11:00:00+00:00']
    """
    if not store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'batches'").fetchone():
        return []
    rows = store.db.execute("SELECT batch_id, intent, backend_id, status, trial_ids, submitted_at, note "
                            "FROM batches ORDER BY created_at").fetchall()
    if not rows:
        return []
    collected = sum(r[3] == "collected" for r in rows)
    lost = [r for r in rows if r[3] == "lost"]
    lines = [f"batches    {len(rows)}: {collected} collected, {len(lost)} lost or refused, "
             f"{len(rows) - collected - len(lost)} open"]
    for batch_id, intent, backend_id, status, trial_ids, submitted, _note in rows:
        if status not in ("collected", "lost"):
            lines.append(f"  pending  {batch_id or '(intent ' + intent + ')'} ({backend_id}) {status}, "
                         f"{len(json.loads(trial_ids))} trials, submitted {submitted or '-'}; "
                         f"run the study again to collect it")
    for batch_id, intent, backend_id, status, trial_ids, _s, note in rows:
        if note:
            lines.append(f"  note     {batch_id or intent} ({backend_id}): {note}")
    lines.append("  cost     tokens below are priced at online rates; batches are billed at about half")
    return lines
