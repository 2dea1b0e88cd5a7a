"""Sending one trial: asked, its reply read, re-asked until it can be read, and recorded.

:func:`run_trial_conversation` sends a trial's request, reads every answer from the reply with the
trial's item kind (:func:`read_reply`: never raises, never holds up the other requests) or from the
first token's log probabilities, and asks again: once with a doubled token limit when the reply ran
out of it before answering (reasoning models), and up to the protocol's ``reask_limit`` with the
kind's corrective follow-up when an answer cannot be read (never when the reply itself was
unusable). Retries after transient failures, pacing and refusals are the backend's
(engine/backends/base.py). What could not be read is stored as a missing answer with its reason
(engine/administer/record.py).

An evoke stage of a staged study (engine/administer/plan.py) is one request whose reply is kept
as text (:func:`send_evoke`). Many trials at once, a staged study's chains and batch mode are
engine/administer/send.py's and engine/administer/send_batch.py's.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np

from psyq.engine.backends.base import ChatRequest, HttpBackend

from psyq.engine.files.errors import BackendError
from psyq.engine.kinds import get_kind
from psyq.engine.trials.logprobs import chosen_value, expected_value, option_distribution
from psyq.engine.trials.parsing import ParsedAnswer, too_long
from psyq.engine.administer.record import answer_ids, evoke_record, trial_record
from psyq.engine.store.clock import utc_now
from psyq.engine.store.run_store import AnswerRecord, TrialRecord
from psyq.engine.design.study import Protocol
from psyq.engine.trials.answer_mode import reply_problem
from psyq.engine.trials.ssr import awaiting_rating
from psyq.engine.trials.trial import Trial


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
        >>> from psyq.engine.administer.plan import plan_trials
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
    and the last reply's text: what a later stage of a conversation carries (engine/administer/send.py)."""
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
        record = trial_record(trial, backend, "failed", started, texts, response, attempts + exc.attempts,
                         reasks, latency, tokens,
                         {i: ParsedAnswer(None, "failed", str(exc)) for i in ids}, {}, str(exc), ids, sent)
        record.endpoint, record.cached_tokens = exc.endpoint or (result.endpoint if result else None), cached
        record.reasoning_tokens, record.budget_reasks = reasoning, budget_reasks
        return record, request.messages, None
    # An answer chosen from a distribution the reply stated (answer: verbalized) keeps it, as logprobs' do.
    extra = extra or {i: {"distribution": a.distribution, "expected": expected_value(a.distribution)}
                      for i, a in answers.items() if a.distribution is not None and a.status == "answered"}
    if trial.kind == "ssr":   # free text, mapped onto the options once the run's replies are in (ssr_rating.py)
        answers = {i: awaiting_rating(a) for i, a in answers.items()}
    status = "answered" if all(answers[i].status == "answered" for i in ids) else "missing"
    record = trial_record(trial, backend, status, started, texts, result.raw if result else None, attempts, reasks,
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
    value = chosen_value(dist, protocol.logprob_answer, trial.request.seed)
    mass = _option_mass(logprobs, trial)
    return ({item_id: ParsedAnswer(value, "answered")},
            {item_id: {"distribution": dist, "option_mass": mass, "expected": expected_value(dist)}})


def _option_mass(logprobs: dict[str, float], trial: Trial) -> float:
    # How much probability the model put on valid answers at all: a weak model may put 2 %.
    scale = _answer_scale(trial)
    tokens = {str(o.value) for o in scale} | {o.code.lower() for o in scale if o.code}
    return float(sum(np.exp(lp) for tok, lp in logprobs.items() if tok.strip().lower() in tokens))


async def send_evoke(trial: Trial, backend: HttpBackend) -> tuple[TrialRecord, tuple[dict, ...], str | None]:
    """Send an evoke stage: one request, the reply stored as text (no re-asks: any reply is one)."""
    started = utc_now()
    situation_id = trial.item_ids[0]
    try:
        result = await backend.complete(trial.request)
    except BackendError as exc:
        if exc.fatal:
            raise
        answer = AnswerRecord(situation_id, 0, None, "failed", str(exc))
        return (evoke_record(trial, backend, "failed", started, None, exc.body, exc.attempts, 0.0, None, None,
                             answer, str(exc)), trial.request.messages, None)
    text = result.text
    status, reason = result.problem, result.problem_reason
    if status is None and (long := too_long(text)) is not None:
        status, reason = long.status, long.reason
    if status is None and not text.strip():
        status, reason = "empty", "the reply was empty"
    answer = AnswerRecord(situation_id, 0, None, status or "answered", reason, text=text if status is None else None)
    reply = text if status is None else None
    return (evoke_record(trial, backend, "missing" if status else "answered", started, text, result.raw,
                         result.attempts, result.latency_s, result.prompt_tokens, result.completion_tokens,
                         answer, None), trial.request.messages, reply)
