"""Judging rating targets with a multi-dimension rubric: one judge request per target × dimension.

``psyq judge RUN --rubric empathy_ceb`` on a run with response items (:mod:`psyq.engine.kinds.response`):

1. adds the run's persona replies to table ``rating_targets`` (:func:`sync_persona_targets`;
   idempotent: a target once added is never changed);
2. rates every target that this judge has no finished rating of yet, on every dimension of the
   rubric: persona replies, imported reference replies and perturbed texts alike, since they are
   all rows of ``rating_targets``;
3. stores each rating as a row of table ``ratings`` (``rater_kind='judge'``, ``rater_id`` = the
   judge id) in its own transaction, so a killed judge keeps what it received and a rerun sends
   only what is missing (``failed`` ratings are asked again). The run's lock keeps a second
   judge process from sending the same requests.

Blind: the request shows the help-seeker's message and the text rated, never its source,
author, persona or perturbation; the (target, dimension) pairs are sent in an order shuffled
with a seed (:func:`blind_order`), so persona and reference replies are interleaved.

Example:
    >>> from psyq.engine.kinds.response.rubrics import load_multi_rubric
    >>> rubric = load_multi_rubric("empathy_ceb")
    >>> rubric.dimension_ids
    ['cognitive', 'emotional', 'behavioural']
    >>> asyncio.run(judge_targets("runs/rated_replies/ab12", config, rubric, "json"))  # sends requests  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from psyq.engine.backends import BackendConfig, BackendError, ChatRequest, HttpBackend, make_backend
from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scale import Option
from psyq.engine.kinds.response import ResponseItem, rating_targets, response_items
from psyq.engine.judging.asking import level_request
from psyq.engine.trials.answer_mode import AnswerMode, read_level
from psyq.engine.store.ratings import Rating, put_ratings, put_targets, rated_keys, read_targets
from psyq.engine.kinds.response.rubrics import Dimension, MultiRubric, levels_text
from psyq.engine.results.run import open_run
from psyq.engine.store.runlock import RunLock
from psyq.engine.store.run_store import RunStore

ANSWERS_QUERY = """
SELECT a.trial_id, t.instrument_id AS instrument, a.item_id, a.text
FROM answers a JOIN trials t USING (trial_id) WHERE a.text IS NOT NULL
"""


@dataclass(frozen=True)
class TargetTask:
    """One request to send: rate target `response_id` on `dimension`, with the texts shown."""

    response_id: str
    dimension: str
    message: str
    context: str
    reply: str


def sync_persona_targets(store: RunStore, instruments: Mapping[str, Instrument]) -> int:
    """Add the run's non-empty persona replies to ``rating_targets``; returns how many were new."""
    answers = pd.read_sql_query(ANSWERS_QUERY, store.db)
    return put_targets(store, rating_targets(answers, instruments))


def message_of(instruments: Mapping[str, Instrument], instrument: str, item_id: str) -> ResponseItem | None:
    """The response item `item_id` of `instrument` among the run's instruments (None if absent)."""
    inst = instruments.get(instrument)
    if inst is None:
        return None
    return next((i for i in response_items(inst) if i.id == item_id), None)


def blind_order(tasks: list[TargetTask], seed: int) -> list[TargetTask]:
    """`tasks` in an order shuffled with `seed` (sorted first, so the order depends on the seed
    and the tasks only, not on how they were read).

    Example:
        >>> ts = [TargetTask(r, "d", "m", "", "t") for r in "abcdef"]
        >>> [t.response_id for t in blind_order(ts, 1)] == [t.response_id for t in blind_order(ts[::-1], 1)]
        True
    """
    ordered = sorted(tasks, key=lambda t: (t.response_id, t.dimension))
    random.Random(seed).shuffle(ordered)
    return ordered


def target_request(rubric: MultiRubric, dimension: Dimension, task: TargetTask, answer: AnswerMode,
                   top_logprobs: int) -> ChatRequest:
    """The request rating one target on one dimension: only the message and the reply are shown."""
    user = rubric.spec.prompt.format(message=task.message, context=task.context, reply=task.reply,
                                     dimension=dimension.name.lower(), definition=dimension.description.strip(),
                                     levels=levels_text(dimension))
    return level_request(rubric.spec.system, user, sorted(dimension.levels), answer, top_logprobs)


def dimension_scale(dimension: Dimension) -> list[Option]:
    """A dimension's levels as a response scale (for the shared answer readers)."""
    return [Option(value=v, label=dimension.levels[v]) for v in sorted(dimension.levels)]


async def rate_one(rubric: MultiRubric, task: TargetTask, backend: HttpBackend, answer: AnswerMode) -> Rating:
    """Ask the judge about one target on one dimension; a transient failure becomes `failed`."""
    dimension = rubric.dimension(task.dimension)
    scale = dimension_scale(dimension)
    request = target_request(rubric, dimension, task, answer, backend.top_logprobs)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    common = dict(response_id=task.response_id, rubric_id=rubric.spec.id, dimension=task.dimension,
                  rater_kind="judge", rater_id=backend.config.id, model=backend.identity().get("model"),
                  answer_mode=answer, request=backend.payload(request), rated_at=now)
    try:
        result = await backend.complete(request)
    except BackendError as exc:
        if exc.fatal:
            raise
        return Rating(level=None, status="failed", reason=str(exc), attempts=exc.attempts, **common)
    parsed, dist = read_level(result, answer, scale)
    return Rating(level=None if parsed.value is None else float(parsed.value), status=parsed.status,
                  reason=parsed.reason, raw_text=result.text, attempts=result.attempts,
                  distribution=None if dist is None else {str(k): v for k, v in dist.items()}, **common)


@dataclass
class TargetJudgeResult:
    targets: int          # targets in the run (all sources)
    new_targets: int      # persona replies added to rating_targets by this call
    requests: int         # target × dimension pairs in all
    already: int          # of which rated by this judge before this call
    skipped: list[str]    # why targets could not be rated (e.g. their message is not in the run)
    counts: dict[str, int]


def pending_tasks(store: RunStore, rubric: MultiRubric, judge_id: str,
                  instruments: Mapping[str, Instrument]) -> tuple[list[TargetTask], int, int, list[str]]:
    """(tasks not rated yet by `judge_id`, targets, all target × dimension pairs, skipped notes)."""
    targets = read_targets(store)
    done = rated_keys(store, rubric.spec.id, "judge", judge_id)
    tasks, skipped, total = [], [], 0
    for row in targets.itertuples(index=False):
        item = message_of(instruments, row.instrument, row.item_id)
        if item is None:
            skipped.append(f"{row.response_id}: message {row.instrument}/{row.item_id} is not a response item "
                           "of this run; not rated")
            continue
        for dim in rubric.dimension_ids:
            total += 1
            if (row.response_id, dim) not in done:
                tasks.append(TargetTask(row.response_id, dim, item.message.strip(), (item.context or "").strip(),
                                        row.text))
    return tasks, len(targets), total, skipped


async def judge_targets(run_path: str | Path, config: BackendConfig, rubric: MultiRubric,
                        answer: AnswerMode = "json", order_seed: int = 0,
                        on_rating: Callable[[Rating], None] | None = None,
                        log: Callable[[str], None] = print) -> TargetJudgeResult:
    """Rate every target of a run on every dimension of `rubric`; resume where a run stopped.

    Example:
        >>> cfg = BackendConfig(id="judge_a", kind="openai", base_url="http://127.0.0.1:8080/v1", model="m")
        >>> asyncio.run(judge_targets("runs/rated_replies/ab12", cfg, rubric)).counts  # sends requests  # doctest: +SKIP
        {'answered': 144}
    """
    run = open_run(run_path, write=True)
    instruments = run.instruments
    backend = make_backend(config, log=log)
    with RunLock(run.path), RunStore(run.database) as store:
        new = sync_persona_targets(store, instruments)
        tasks, n_targets, total, skipped = pending_tasks(store, rubric, config.id, instruments)
        already = total - len(tasks)
        if tasks:
            await backend.start()
            try:
                await _rate_all(blind_order(tasks, order_seed), rubric, backend, answer, store, on_rating)
            finally:
                await backend.close()
        counts = dict(store.db.execute("SELECT status, COUNT(*) FROM ratings WHERE rubric_id = ? AND rater_kind = "
                                       "'judge' AND rater_id = ? GROUP BY status",
                                       (rubric.spec.id, config.id)).fetchall())
    return TargetJudgeResult(n_targets, new, total, already, skipped, counts)


async def _rate_all(tasks: list[TargetTask], rubric: MultiRubric, backend: HttpBackend, answer: AnswerMode,
                    store: RunStore, on_rating: Callable[[Rating], None] | None) -> None:
    # Workers take tasks in the blind order; each rating is committed on its own.
    queue: asyncio.Queue[TargetTask] = asyncio.Queue()
    for task in tasks:
        queue.put_nowait(task)

    async def worker() -> None:
        while not queue.empty():
            rating = await rate_one(rubric, queue.get_nowait(), backend, answer)
            put_ratings(store, [rating])
            if on_rating:
                on_rating(rating)

    async with asyncio.TaskGroup() as group:
        for _ in range(backend.config.concurrency):
            group.create_task(worker())
