"""A judge model: scoring free-text answers of a finished run with a rubric, through a backend.

A rubric (format `rubric/1`, ``instruments/rubrics/``) says what to ask: a system text, a prompt
template and the levels with their definitions. `psyq judge RUN --rubric FILE` sends one request
per free-text answer the rubric's item kind offers (:meth:`~psyq.engine.kinds.ItemKind.judge_tasks`) and stores
each judgement in the run's SQLite file, table ``judgements``, beside the answers and keyed by
(trial, item, rubric, judge): a rerun only sends what is not judged yet, and the lexicon scores
are never touched. (A multi-dimension `rubric/2` rubric, e.g. ``empathy_ceb``, rates the
rating targets of a run with response items instead: :mod:`psyq.engine.kinds.response.rubrics`,
:mod:`psyq.engine.judging.reply_judge`, table ``ratings``.) The judge reads the level in one of three ways:

* ``logprobs``: the probabilities of the first answer token over the level digits, most likely
  level kept (for small base models, which do not follow instructions in free text);
* ``json``: ``{"level": n}`` constrained by a JSON schema where the server supports it;
* ``text``: the one level digit in the reply.

Example:
    >>> rubric = load_rubric("leas_level")
    >>> sorted(rubric.spec.levels)          # `applies_to` names the item kind it judges
    [0, 1, 2, 3, 4]
    >>> asyncio.run(judge_run("runs/leas_repeated/ab12", config, rubric))  # sends requests  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import string
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Literal

import pandas as pd

from psyq.engine.backends import BackendConfig, BackendError, ChatRequest, HttpBackend, make_backend
from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scale import Option
from psyq.engine.kinds import JudgeTask, all_kinds, get_kind
from psyq.engine.judging.asking import level_request
from psyq.engine.trials.answer_mode import AnswerMode, read_level
from psyq.engine.results.run import open_run
from psyq.engine.store.runlock import RunLock
from psyq.engine.store.run_store import RunStore
from psyq.engine.files.validation import load_document, raise_problems

SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    trial_id TEXT NOT NULL,            -- the judged answer: (trial_id, item_id) of table answers
    item_id TEXT NOT NULL,
    rubric_id TEXT NOT NULL,
    judge_id TEXT NOT NULL,            -- the judge backend's id
    rubric_version TEXT NOT NULL,
    model TEXT,
    answer_mode TEXT NOT NULL,
    level INTEGER,                     -- NULL when the judge gave no readable level
    status TEXT NOT NULL,              -- answered | unparseable | no_option_tokens | failed ...
    reason TEXT,
    distribution TEXT,                 -- JSON {level: probability} (answer mode logprobs)
    request TEXT NOT NULL,             -- JSON payload sent (no headers, so no secrets)
    raw_text TEXT,
    attempts INTEGER NOT NULL,
    judged_at TEXT NOT NULL,
    PRIMARY KEY (trial_id, item_id, rubric_id, judge_id)
);
"""


# The item kinds a rubric can apply to: those that name placeholders for a judge's prompt.
PLACEHOLDERS = {kind.name: set(kind.judge_placeholders) for kind in all_kinds() if kind.judge_placeholders}
JudgedKind = Literal[tuple(PLACEHOLDERS)]   # type: ignore[valid-type]


class RubricFile(StrictModel):
    """A judge rubric as written (format `rubric/1`)."""

    psyq: Literal["rubric/1"]
    id: Id
    version: Text
    content_source: Literal["psyq", "published"]
    applies_to: JudgedKind
    description: Text
    levels: dict[int, Text]
    system: Text
    prompt: Text


@dataclass(frozen=True)
class Rubric:
    """A loaded rubric: the spec and the levels as a response scale."""

    spec: RubricFile
    path: Path

    @property
    def scale(self) -> list[Option]:
        return [Option(value=v, label=self.spec.levels[v]) for v in sorted(self.spec.levels)]

    def levels_text(self) -> str:
        return "\n".join(f"{v} = {text}" for v, text in sorted(self.spec.levels.items()))


MAX_LEVEL = 1_000_000


def load_rubric(path: str | Path) -> Rubric:
    """Load and check a rubric file (its path, or the name of a shipped one): consecutive
    whole-number levels, known placeholders only.

    Example:
        >>> load_rubric("leas_level").spec.levels[3][:20]
        'One differentiated e'
    """
    spec, doc, path = load_document(path, RubricFile, "rubric")
    problems: list[Problem] = []
    values = sorted(spec.levels)
    if values != list(range(values[0], values[0] + len(values))) or len(values) < 2:
        problems.append(doc.problem(("levels",), f"levels must be two or more consecutive whole numbers, "
                                                 f"not {values}"))
    if any(abs(level) > MAX_LEVEL for level in values):  # levels are stored as SQLite integers
        problems.append(doc.problem(("levels",), f"levels must be whole numbers between -{MAX_LEVEL} "
                                                 f"and {MAX_LEVEL}"))
    allowed = PLACEHOLDERS[spec.applies_to]
    used = {name for _, name, _, _ in string.Formatter().parse(spec.prompt) if name}
    unknown = sorted(used - allowed)
    if unknown:
        problems.append(doc.problem(("prompt",), f"unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}"
                                                 f"; a {spec.applies_to} rubric may use "
                                                 f"{', '.join('{' + a + '}' for a in sorted(allowed))}"))
    raise_problems(problems)
    return Rubric(spec, Path(path))


# --- what to judge ------------------------------------------------------------------------

def judge_tasks(rubric: Rubric, answers: pd.DataFrame, instruments: dict[str, Instrument]) -> list[JudgeTask]:
    """The tasks `rubric` applies to among a run's answers (columns ``trial_id, instrument,
    item_id, text``)."""
    return get_kind(rubric.spec.applies_to).judge_tasks(answers, instruments)


# --- asking ---------------------------------------------------------------------------------

def judge_request(rubric: Rubric, task: JudgeTask, answer: AnswerMode, top_logprobs: int) -> ChatRequest:
    """The request for one task: the rubric's system text and filled-in prompt."""
    user = rubric.spec.prompt.format(levels=rubric.levels_text(), **task.fields)
    return level_request(rubric.spec.system, user, [o.value for o in rubric.scale], answer, top_logprobs)


@dataclass
class Judgement:
    task: JudgeTask
    level: int | None
    status: str
    reason: str | None
    distribution: dict[int, float] | None
    request: dict[str, Any]
    raw_text: str | None
    attempts: int


async def judge_one(rubric: Rubric, task: JudgeTask, backend: HttpBackend, answer: AnswerMode) -> Judgement:
    """Ask the judge about one answer; a transient backend failure becomes status `failed`."""
    request = judge_request(rubric, task, answer, backend.top_logprobs)
    try:
        result = await backend.complete(request)
    except BackendError as exc:
        if exc.fatal:
            raise
        return Judgement(task, None, "failed", str(exc), None, backend.payload(request), None, exc.attempts)
    parsed, dist = read_level(result, answer, rubric.scale)
    return Judgement(task, parsed.value, parsed.status, parsed.reason, dist, backend.payload(request),
                     result.text, result.attempts)


# --- the run's judgements table ------------------------------------------------------------

def open_judgements(store: RunStore) -> None:
    """Create table ``judgements`` in a run's store if it is not there yet (a run never judged has none)."""
    store.db.executescript(SCHEMA)


def judged_keys(store: RunStore, rubric_id: str, judge_id: str) -> set[tuple[str, str]]:
    """(trial_id, item_id) already judged (failed ones are asked again)."""
    open_judgements(store)
    rows = store.db.execute("SELECT trial_id, item_id FROM judgements WHERE rubric_id = ? AND judge_id = ? "
                            "AND status != 'failed'", (rubric_id, judge_id))
    return {(t, i) for t, i in rows}


def put_judgement(store: RunStore, rubric: Rubric, judge_id: str, model: str | None, answer: AnswerMode,
                  j: Judgement) -> None:
    """Commit one judgement in its own transaction (a killed judge run keeps what it had)."""
    row = (j.task.trial_id, j.task.item_id, rubric.spec.id, judge_id, rubric.spec.version, model, answer,
           j.level, j.status, j.reason, json.dumps(j.distribution) if j.distribution else None,
           json.dumps(j.request), j.raw_text, j.attempts, datetime.now(timezone.utc).isoformat(timespec="seconds"))
    with store.db:
        store.db.execute("BEGIN")
        store.db.execute(f"INSERT OR REPLACE INTO judgements VALUES ({', '.join('?' * len(row))})", row)


ANSWERS_QUERY = """
SELECT a.trial_id, t.instrument_id AS instrument, a.item_id, a.text
FROM answers a JOIN trials t USING (trial_id) WHERE a.text IS NOT NULL
"""


@dataclass
class JudgeResult:
    tasks: int
    already: int
    counts: dict[str, int]


async def judge_run(run_path: str | Path, config: BackendConfig, rubric: Rubric, answer: AnswerMode = "logprobs",
                    on_judgement: Callable[[Judgement], None] | None = None,
                    log: Callable[[str], None] = print) -> JudgeResult:
    """Judge every free-text answer of a run that `rubric` applies to; resume where a run stopped.

    Example:
        >>> cfg = BackendConfig(id="judge", kind="local")
        >>> asyncio.run(judge_run("runs/leas_repeated/ab12", cfg, load_rubric(path)))  # starts a local model  # doctest: +SKIP
    """
    run = open_run(run_path, write=True)
    instruments = run.instruments
    backend = make_backend(config, log=log)
    # The run's own lock: a second judge (or a `psyq run` still writing) must not send the same
    # requests again; RunLocked names the process that holds it.
    with RunLock(run.path), RunStore(run.database) as store:
        answers = pd.read_sql_query(ANSWERS_QUERY, store.db)
        tasks = judge_tasks(rubric, answers, instruments)
        done = judged_keys(store, rubric.spec.id, config.id)
        pending = [t for t in tasks if (t.trial_id, t.item_id) not in done]
        if pending:
            await backend.start()
            try:
                await _judge_all(pending, rubric, backend, answer, store, config.id, on_judgement)
            finally:
                await backend.close()
        counts = dict(store.db.execute("SELECT status, COUNT(*) FROM judgements WHERE rubric_id = ? AND judge_id = ? "
                                       "GROUP BY status", (rubric.spec.id, config.id)).fetchall())
    return JudgeResult(len(tasks), len(tasks) - len(pending), counts)


async def _judge_all(tasks: list[JudgeTask], rubric: Rubric, backend: HttpBackend, answer: AnswerMode,
                     store: RunStore, judge_id: str, on_judgement: Callable[[Judgement], None] | None) -> None:
    queue: asyncio.Queue[JudgeTask] = asyncio.Queue()
    for task in tasks:
        queue.put_nowait(task)
    model = backend.identity().get("model")

    async def worker() -> None:
        while not queue.empty():
            judgement = await judge_one(rubric, queue.get_nowait(), backend, answer)
            put_judgement(store, rubric, judge_id, model, answer, judgement)
            if on_judgement:
                on_judgement(judgement)

    async with asyncio.TaskGroup() as group:
        for _ in range(backend.capacity):
            group.create_task(worker())


