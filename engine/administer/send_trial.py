"""Administration: plan the trials of a study, send the unfinished ones, store every answer.

A *trial* is one request (plus its corrective re-asks): one item for one respondent, or a whole
instrument in one request, for one backend and one repeat. Its id hashes everything that decides
the answer (backend identity and sampling parameters, the full messages, respondent, instrument,
items, repeat), so two personas with identical attributes, or two repeats, are never collapsed,
and a rerun of the same study recognises what it already has.

Trials run concurrently (bounded by each backend's `concurrency`); each is committed to the
:class:`~psyq.engine.store.run_store.RunStore` as soon as it ends.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Awaitable, Callable, Iterable, Iterator, TypeVar

import numpy as np

from psyq.engine.backends.base import BackendError, ChatRequest, HttpBackend
from psyq.engine.backends.bodies import request_body
from psyq.engine.kinds import all_kinds, get_kind
from psyq.engine.trials.logprobs import expected_value, most_likely, option_distribution, sample_answer
from psyq.engine.trials.parsing import ParsedAnswer, too_long
from psyq.engine.design.persona_prompt import render_system_prompt
from psyq.engine.store.clock import utc_now
from psyq.engine.store.run_store import REPLY_SEPARATOR, AnswerRecord, RunStore, TrialRecord
from psyq.engine.design.study import Protocol, Study
from psyq.engine.trials.answer_mode import reply_problem
from psyq.engine.trials.trial import Trial, TrialContext, stable_int


def option_order_for(protocol: Protocol, respondent_index: int) -> str:
    """Counterbalancing alternates respondents: even positions as written, odd reversed."""
    if protocol.option_order == "counterbalanced":
        return "as_written" if respondent_index % 2 == 0 else "reversed"
    return protocol.option_order


def plan_trials(study: Study, backends: dict[str, HttpBackend]) -> Iterator[Trial]:
    """Every trial of the study, in a deterministic order (backend, repeat, respondent, instrument)."""
    protocol = study.protocol
    personas = study.cohort.personas
    for backend_id, backend in backends.items():
        for repeat in range(protocol.repeats):
            for index, persona in enumerate(personas):
                system_prompt = render_system_prompt(persona, study.cohort.template)
                order = option_order_for(protocol, index)
                ctx = TrialContext(study, backend_id, backend, persona, system_prompt, repeat, order)
                for instrument in study.instruments:
                    # Each kind plans its own items' trials (engine/kinds/), in the order of their plan_rank.
                    for kind in sorted(all_kinds(), key=lambda k: k.plan_rank):
                        yield from kind.plan_trials(ctx, instrument)


def answer_ids(trial: Trial) -> list[str]:
    """The answer rows a trial produces, as its item kind says (e.g. one per rating item)."""
    return get_kind(trial.item_kind).answer_ids(trial)


def _answer_scale(trial: Trial) -> list:
    return get_kind(trial.item_kind).answer_scale(trial)


def _parse(trial: Trial, text: str, protocol: Protocol) -> dict[str, ParsedAnswer]:
    return get_kind(trial.item_kind).parse(trial, text, protocol)


# Replies longer than this are parsed in a worker thread, so that reading one (up to
# MAX_PARSE_CHARS, tenths of a second at worst) never holds up the event loop and the other
# requests; short replies, nearly all of them, are parsed in place (a thread costs more).
PARSE_IN_THREAD_CHARS = 2_000
# Statuses a corrective follow-up cannot fix: the reply itself was unusable (and re-asking
# would send it back to the server inside the next request).
NOT_REASKED = ("too_long", "unreadable_response", "parse_error")


async def read_reply(trial: Trial, text: str, protocol: Protocol,
                     ids: list[str] | None = None) -> dict[str, ParsedAnswer]:
    """Every answer of `trial` read from one reply: never raises, never takes long (`ids`: the
    trial's :func:`answer_ids`, when the caller has them already).

    A reply over MAX_PARSE_CHARS is `too_long`; a parser that fails on a reply (a bug, or a shape
    nobody foresaw) gives `parse_error: <ExceptionType>` for this trial only, and the run goes on.

    Example (the first trial of the shipped study quickstart: IRI item 1, options A to E):
        >>> from psyq import load_study
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> study = load_study("quickstart")
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> trial = next(plan_trials(study, {"b": backend}))
        >>> asyncio.run(read_reply(trial, "B", study.protocol))["1"].value
        1
        >>> asyncio.run(read_reply(trial, "x" * 20_000, study.protocol))["1"].status
        'too_long'
    """
    ids = answer_ids(trial) if ids is None else ids
    long = too_long(text)
    if long is not None:
        return {i: long for i in ids}
    try:
        if len(text) > PARSE_IN_THREAD_CHARS:
            parsed = await asyncio.to_thread(_parse, trial, text, protocol)
        else:
            parsed = _parse(trial, text, protocol)
    except Exception as exc:   # noqa: BLE001 - the boundary: one reply must not end the run
        return {i: _parse_error(exc) for i in ids}
    missing = ParsedAnswer(None, "parse_error", "parse_error: the parser returned no answer for this item")
    return {i: parsed.get(i, missing) for i in ids}


def _parse_error(exc: BaseException) -> ParsedAnswer:
    return ParsedAnswer(None, "parse_error", f"parse_error: {type(exc).__name__}: {str(exc)[:200]}")


async def run_trial(trial: Trial, backend: HttpBackend, protocol: Protocol) -> TrialRecord:
    """Send one trial (with corrective re-asks) and return its record; raises BackendError only
    for fatal backend errors (the caller stops the run)."""
    return (await run_trial_conversation(trial, backend, protocol))[0]


async def run_trial_conversation(trial: Trial, backend: HttpBackend,
                                 protocol: Protocol) -> tuple[TrialRecord, tuple[dict, ...], str | None]:
    """:func:`run_trial`, also returning the messages of the last request sent (re-asks included)
    and the last reply's text: what a later stage of a conversation carries (engine/administer/stages.py)."""
    started = utc_now()
    request = trial.request
    # What the trial's kind says about it, asked once (each answer is a lookup in the registry).
    kind = get_kind(trial.item_kind)
    ids = kind.answer_ids(trial)
    reads_logprobs = kind.reads_logprobs(trial, protocol)
    texts: list[str] = []
    attempts = reasks = 0
    latency = 0.0
    tokens = [0, 0]
    cached: int | None = None   # None until a reply reports its cached prompt tokens
    reasoning: int | None = None   # likewise for reasoning tokens
    budget_reasks = 0
    result = None
    sent: str | None = None   # the first request's body, as sent: what the store keeps
    answers: dict[str, ParsedAnswer] = {}
    extra: dict[str, dict] = {}
    try:
        while True:
            result = await backend.complete(request)
            if not attempts:   # the first reply: its request is the trial's own (None: read from a batch)
                sent = result.sent
            attempts += result.attempts
            latency += result.latency_s
            tokens[0] += result.prompt_tokens or 0
            tokens[1] += result.completion_tokens or 0
            if result.cached_tokens is not None:
                cached = (cached or 0) + result.cached_tokens
            if result.reasoning_tokens is not None:
                reasoning = (reasoning or 0) + result.reasoning_tokens
            texts.append(result.text)
            if (problem := reply_problem(result, reads_logprobs)) is not None:
                # The reply came but holds no readable answer: stored as missing, with why (an
                # answer read from an earlier reply of this trial stays; a trial read from
                # logprobs has none, as it is asked once).
                for i in ids:
                    if i not in answers or answers[i].status != "answered":
                        answers[i] = problem
                break
            if reads_logprobs:
                try:
                    answers, extra = _logprob_answer(trial, result.first_token_logprobs, result.text, protocol)
                except Exception as exc:   # noqa: BLE001 - as in read_reply
                    answers, extra = {i: _parse_error(exc) for i in ids}, {}
                break
            for item_id, parsed in (await read_reply(trial, result.text, protocol, ids)).items():
                if item_id not in answers or answers[item_id].status != "answered":
                    answers[item_id] = parsed
            unread = [i for i in ids if answers[i].status not in ("answered", "refusal")]
            if unread and result.budget_exhausted:
                # The reply ran out of its token limit (reasoning models spend it thinking before
                # they answer): sent again once, unchanged but for a doubled limit; then missing.
                if budget_reasks == 0:
                    budget_reasks += 1
                    request = replace(request, budget_factor=2 * request.budget_factor)
                    continue
                why = budget_exhausted_reason(backend, request, result)
                for i in unread:
                    answers[i] = ParsedAnswer(None, "token_budget_exhausted", why)
                break
            if not unread or reasks >= protocol.reask_limit or any(answers[i].status in NOT_REASKED for i in unread):
                break
            reasks += 1
            reason = answers[unread[0]].reason or answers[unread[0]].status
            follow_up = kind.reask(trial, reason, unread)
            request = replace(request, messages=request.messages + (
                {"role": "assistant", "content": result.text}, {"role": "user", "content": follow_up}))
    except BackendError as exc:
        if exc.fatal:
            raise
        # What the server last sent (an HTML page, a truncated body …) is kept with the trial.
        response = exc.body if exc.body is not None else (result.raw if result else None)
        record = _record(trial, backend, "failed", started, texts, response, attempts + exc.attempts,
                         reasks, latency, tokens,
                         {i: ParsedAnswer(None, "failed", str(exc)) for i in ids}, {}, str(exc), ids, sent)
        record.endpoint, record.cached_tokens = exc.endpoint or (result.endpoint if result else None), cached
        record.reasoning_tokens, record.budget_reasks = reasoning, budget_reasks
        return record, request.messages, None
    status = "answered" if all(answers[i].status == "answered" for i in ids) else "missing"
    record = _record(trial, backend, status, started, texts, result.raw if result else None, attempts, reasks,
                     latency, tokens, answers, extra, None, ids, sent)
    record.endpoint, record.cached_tokens = (result.endpoint if result else None), cached
    record.reasoning_tokens, record.budget_reasks = reasoning, budget_reasks
    return record, request.messages, texts[-1] if texts else None


def budget_exhausted_reason(backend: HttpBackend, request: ChatRequest, result) -> str:
    """Why an answer is missing as `token_budget_exhausted`, in words a user can act on.

    Example:
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.backends.base import ChatResult
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="o", kind="openai", model="o3", base_url="http://127.0.0.1:9/v1"))
        >>> request = ChatRequest(messages=({"role": "user", "content": "Rate 1 to 5."},), max_tokens=16)
        >>> result = ChatResult("", None, 12, 8208, {}, reasoning_tokens=8200, budget_exhausted=True)
        >>> print(budget_exhausted_reason(backend, request, result))
        the reply ran out of its token limit twice (max_completion_tokens 8,208 the second time; 8,200 of its tokens were reasoning); raise the backend's max_tokens or reasoning_budget, or lower reasoning_effort
    """
    limit = backend.token_limit(request)
    spent = (f"; {result.reasoning_tokens:,} of its tokens were reasoning" if result.reasoning_tokens else "")
    return (f"the reply ran out of its token limit twice ({backend.capabilities.token_limit_field} {limit:,} the "
            f"second time{spent}); raise the backend's max_tokens or reasoning_budget, or lower reasoning_effort")


def _logprob_answer(trial: Trial, logprobs: dict[str, float] | None, text: str,
                    protocol: Protocol) -> tuple[dict[str, ParsedAnswer], dict[str, dict]]:
    item_id = trial.item_ids[0]
    dist = option_distribution(logprobs or {}, _answer_scale(trial)) if logprobs else None
    if dist is None:
        why = ("the server returned no log probabilities" if not logprobs
               else f"no answer option among the {len(logprobs)} most likely first tokens")
        return {item_id: ParsedAnswer(None, "no_option_tokens", why)}, {}
    if protocol.logprob_answer == "sample":
        value = sample_answer(dist, np.random.default_rng(stable_int("sample", trial.request.seed)))
    else:
        value = most_likely(dist)
    mass = _option_mass(logprobs, trial)
    return ({item_id: ParsedAnswer(value, "answered")},
            {item_id: {"distribution": dist, "option_mass": mass, "expected": expected_value(dist)}})


def _option_mass(logprobs: dict[str, float], trial: Trial) -> float:
    # How much probability the model put on valid answers at all: a weak model may put 2 %.
    scale = _answer_scale(trial)
    tokens = {str(o.value) for o in scale} | {o.code.lower() for o in scale if o.code}
    return float(sum(np.exp(lp) for tok, lp in logprobs.items() if tok.strip().lower() in tokens))


def _record(trial: Trial, backend: HttpBackend, status: str, started: str, texts: list[str], response: dict | None,
            attempts: int, reasks: int, latency: float, tokens: list[int],
            answers: dict[str, ParsedAnswer], extra: dict[str, dict], error: str | None,
            ids: list[str] | None = None, sent: str | None = None) -> TrialRecord:
    records = []
    for position, item_id in enumerate(answer_ids(trial) if ids is None else ids):
        parsed = answers[item_id]
        more = extra.get(item_id)
        if more is None:   # nearly every answer: one read from text
            records.append(AnswerRecord(item_id, position, parsed.value, parsed.status, parsed.reason,
                                        parsed.disclaimer, None, None, None, parsed.text))
            continue
        records.append(AnswerRecord(item_id, position, parsed.value, parsed.status, parsed.reason,
                                    parsed.disclaimer, more.get("distribution"), more.get("option_mass"),
                                    more.get("expected"), parsed.text))
    return TrialRecord(
        trial_id=trial.trial_id, backend_id=trial.backend_id, model=backend.identity().get("model"),
        respondent_id=trial.respondent_id, instrument_id=trial.instrument.id, item_ids=list(trial.item_ids),
        repeat=trial.repeat, option_order=trial.option_order, status=status,
        request=sent if sent is not None else request_body(backend, trial.request), response=response,
        raw_text=REPLY_SEPARATOR.join(texts) if texts else None, attempts=attempts, reasks=reasks,
        latency_s=latency, prompt_tokens=tokens[0] or None, completion_tokens=tokens[1] or None,
        started_at=started, finished_at=utc_now(), error=error, answers=records)


ProgressCallback = Callable[[str, TrialRecord], None]


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
                      protocol: Protocol, on_trial: ProgressCallback | None = None) -> None:
    """Send every trial not already finished in `store`, committing each as it ends
    (:func:`per_backend_workers`: each backend's concurrency bounds its trials in flight)."""
    finished = store.finished_trial_ids()

    async def send(trial: Trial, backend: HttpBackend) -> None:
        record = await run_trial(trial, backend, protocol)
        store.put_trial_soon(record)   # committed with the others of this loop turn (group commit)
        if on_trial:
            on_trial(trial.backend_id, record)

    try:
        await per_backend_workers((t for t in trials if t.trial_id not in finished), lambda t: t.backend_id,
                                  backends, send)
    finally:
        store.flush()   # whatever ended the run, every answer received is committed
