"""Sending: every planned trial not yet finished asked of its backend, each answer stored as it ends.

:func:`send_run` starts the backends that have trials to send and hands the trials out by how the
study is run, the three ways one phase:

- independent trials (:func:`run_pending`): side by side, each backend with as many workers as its
  concurrency (:func:`per_backend_workers`), each trial (engine/administer/send_trial.py: asked,
  read, re-asked) committed to the run store as soon as it ends;
- a staged study's chains (:func:`run_chains`, planned in engine/administer/plan.py): chains side by
  side, the stages of one chain one after the other. Stage k is sent with, as conversation history,
  the messages stage k-1 sent (the persona's system prompt first, then every earlier stage's
  question, re-asks included) and the model's own reply to it, then stage k's own question; with
  ``answer: logprobs`` the history carries the model's own reply token (the recorded answer is read
  from that reply's log probabilities: sampled or the most likely option, so it can differ from the
  token). Each stage trial is committed (with the exact messages it sent, table ``stage_trials`` of
  engine/store/run_store.py) before the next stage of its chain is sent; a rerun rebuilds the
  history from the store, byte for byte what the model saw, and never re-sends a finished stage. A
  stage that *failed* (the backend gave no answer) stops its chain there; the rerun sends it again
  with the same history. A stage that finished without a reply to carry (an empty or unreadable
  reply) stops its chain for good, and the run says so (:class:`ChainOutcome`);
- backends with ``mode: batch``: through their provider's batch API (engine/administer/send_batch.py),
  at the same time as the online backends.

The first fatal error (bad key, unknown model, a server that cannot be reached) stops every worker
and is raised to engine/administer/run.py, which records how the run ended.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Awaitable, Callable, Iterable, TypeVar

from psyq.engine.backends.base import HttpBackend
from psyq.engine.administer.plan import Chain, RunPlan, StageStep
from psyq.engine.administer.record import ProgressCallback, store_trial
from psyq.engine.administer.send_trial import run_trial, run_trial_conversation, send_evoke
from psyq.engine.store.run_store import RunStore, StageRecord
from psyq.engine.trials.trial import Trial

# Called once the backends are up: the backends, the trials planned per backend and those already finished.
StartCallback = Callable[[dict[str, HttpBackend], dict[str, int], dict[str, int]], None]


async def send_run(planned: RunPlan, backends: dict[str, HttpBackend], store: RunStore,
                   finished: set[str], started: list[HttpBackend], notes: list[str],
                   on_start: StartCallback | None = None, on_trial: ProgressCallback | None = None,
                   log: Callable[[str], None] = print) -> None:
    """Send every trial of `planned` not in `finished` and store each as it ends, each asked and
    read under the protocol it carries (the study's, or its condition's: engine/administer/plan.py).

    Each backend with a trial to send is started and appended to `started`, for the caller to close
    once it has recorded how the run ended; what the user should know is appended to `notes`.

    Example:
        >>> started = []   # the backends it starts, closed by the caller
        >>> asyncio.run(send_run(plan_run(study, backends), backends, store, set(), started, []))  # sends  # doctest: +SKIP
    """
    trials = planned.trials
    pending = {b: sum(1 for t in trials if t.backend_id == b and t.trial_id not in finished) for b in backends}
    for backend_id, backend in backends.items():
        if pending[backend_id]:
            await backend.start()
            started.append(backend)
    if on_start:
        totals = {b: sum(t.backend_id == b for t in trials) for b in backends}
        on_start(backends, totals, {b: totals[b] - pending[b] for b in backends})
    if planned.chains is not None:
        notes.extend((await run_chains(planned.chains, backends, store, on_trial)).notes())
        return
    # Backends with `mode: batch` go through their provider's batch API (engine/administer/send_batch.py).
    online = {b: x for b, x in backends.items() if x.config.mode != "batch"}
    batched = {b: x for b, x in backends.items() if x.config.mode == "batch"}
    jobs = [run_pending([t for t in trials if t.backend_id in online], online, store, on_trial)] if online else []
    if batched:
        jobs.append(_run_batches(trials, batched, store, on_trial, log, notes))
    await _all_or_none(jobs)


Job = TypeVar("Job")


async def per_backend_workers(jobs: Iterable[Job], backend_of: Callable[[Job], str],
                              backends: dict[str, HttpBackend],
                              handle: Callable[[Job, HttpBackend], Awaitable[None]]) -> None:
    """Await `handle(job, backend)` for every job, each backend with as many workers as its
    capacity (its concurrency, per endpoint for a pool), taking jobs in order from its queue.

    The backend's own semaphore enforces the bound; the workers just keep the number of waiting
    coroutines small for huge studies. The first fatal error (bad key, unknown model) stops
    every worker and is raised plainly, not as an ExceptionGroup.

    Example:
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> done = []
        >>> async def handle(job, backend):            # a job that sends nothing
        ...     done.append((job, backend.config.id))
        >>> asyncio.run(per_backend_workers([1, 2, 3], lambda job: "b", {"b": backend}, handle))
        >>> sorted(done)
        [(1, 'b'), (2, 'b'), (3, 'b')]
    """
    queues: dict[str, asyncio.Queue] = {b: asyncio.Queue() for b in backends}
    for job in jobs:
        queues[backend_of(job)].put_nowait(job)

    async def worker(backend_id: str) -> None:
        queue, backend = queues[backend_id], backends[backend_id]
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await handle(job, backend)

    try:
        async with asyncio.TaskGroup() as group:
            for backend_id, backend in backends.items():
                for _ in range(backend.capacity):   # per endpoint
                    group.create_task(worker(backend_id))
    except ExceptionGroup as group:
        raise group.exceptions[0] from None


async def run_pending(trials: Iterable[Trial], backends: dict[str, HttpBackend], store: RunStore,
                      on_trial: ProgressCallback | None = None) -> None:
    """Send every trial not already finished in `store`, committing each as it ends
    (:func:`per_backend_workers`: each backend's concurrency bounds its trials in flight)."""
    finished = store.finished_trial_ids()

    async def send(trial: Trial, backend: HttpBackend) -> None:
        store_trial(store, await run_trial(trial, backend, trial.protocol), on_trial)

    try:
        await per_backend_workers((t for t in trials if t.trial_id not in finished), lambda t: t.backend_id,
                                  backends, send)
    finally:
        store.flush()   # whatever ended the run, every answer received is committed


def with_history(step: StageStep, history: list[dict]) -> Trial:
    """The trial of `step` as sent: `history` (system prompt, earlier questions and replies), then
    this stage's own question."""
    messages = tuple(history) + (step.trial.request.messages[-1],)
    return replace(step.trial, request=replace(step.trial.request, messages=messages))


@dataclass
class ChainOutcome:
    """How the chains of a run ended (for the run's notes)."""

    complete: int = 0
    stopped_failed: int = 0         # a stage failed: the rerun sends it again
    stopped_no_reply: int = 0       # a stage finished without a reply to carry: stopped for good

    def notes(self) -> list[str]:
        """What the user should know, in words (none when every chain completed)."""
        out = []
        if self.stopped_failed:
            out.append(f"{self.stopped_failed} conversation(s) stopped at a stage that failed (the backend gave no "
                       "answer); their later stages were not sent; run the study again to resume them there")
        if self.stopped_no_reply:
            out.append(f"{self.stopped_no_reply} conversation(s) stopped at a stage whose reply was empty or "
                       "unreadable: there is nothing to carry as history, so their later stages are not sent "
                       "(stored as missing; not retried)")
        return out


async def run_chain(chain: Chain, backend: HttpBackend, store: RunStore,
                    stored: dict[str, tuple[str, list[dict], str | None]], outcome: ChainOutcome,
                    on_trial: ProgressCallback | None = None) -> None:
    """Send the stages of `chain` not yet finished, each with the history rebuilt from the store,
    committing each stage before the next is sent (under the protocol its trials carry)."""
    protocol = chain.steps[0].trial.protocol
    # A measure stage asks all items in one request, except with logprobs (one item per request).
    whole = protocol if protocol.answer == "logprobs" else protocol.model_copy(update={"presentation": "whole_instrument"})
    history = list(chain.steps[0].trial.request.messages[:-1])
    for step in chain.steps:
        done = stored.get(step.trial.trial_id)
        if done is not None and done[0] in ("answered", "missing"):
            status, messages, reply = done
        else:
            trial = with_history(step, history)
            if step.kind == "evoke":
                record, sent, reply = await send_evoke(trial, backend)
            else:
                record, sent, reply = await run_trial_conversation(trial, backend, whole)
            messages = [dict(m) for m in sent]
            record.stage = StageRecord(chain.chain_id, step.stage, step.situation.id, step.situation.emotion,
                                       messages, reply)
            store.put_trial(record)          # committed before the next stage is sent
            if on_trial:
                on_trial(chain.backend_id, record)
            status = record.status
        if status == "failed":
            outcome.stopped_failed += 1
            return
        if not reply:
            outcome.stopped_no_reply += 1
            return
        history = list(messages) + [{"role": "assistant", "content": reply}]
    outcome.complete += 1


async def run_chains(chains: list[Chain], backends: dict[str, HttpBackend], store: RunStore,
                     on_trial: ProgressCallback | None = None) -> ChainOutcome:
    """Run (or resume) every chain; chains run side by side up to each backend's concurrency, the
    stages of one chain one after the other.

    Example:
        >>> outcome = asyncio.run(run_chains(chains, backends, store))  # sends requests  # doctest: +SKIP
    """
    stored = store.stage_trials()
    outcome = ChainOutcome()
    await per_backend_workers(chains, lambda chain: chain.backend_id, backends,
                              lambda chain, backend: run_chain(chain, backend, store, stored, outcome, on_trial))
    return outcome


async def _all_or_none(jobs: list) -> None:
    """Await the jobs together; when one fails (or the run is interrupted) the others are cancelled."""
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _run_batches(trials: list[Trial], batched: dict[str, HttpBackend], store: RunStore,
                       on_trial: ProgressCallback | None, log: Callable[[str], None], notes: list[str]) -> None:
    # batch mode only: the online path does not load it
    from psyq.engine.administer.send_batch import open_batch_count, run_batches

    try:
        report = await run_batches([t for t in trials if t.backend_id in batched], batched, store, on_trial, log)
    except asyncio.CancelledError:
        if open_batches := open_batch_count(store):
            notes.append(f"batch mode: {open_batches} submitted batch(es) go on at the provider; run the same "
                         f"command again to collect them (psyq status RUN lists them; nothing is submitted twice)")
        raise
    notes.extend(report.notes or [])
    notes.append("batch mode: token costs (manifest, psyq status) are at the price table's online rates; "
                 "OpenAI and Anthropic bill batches at about half of those")
