"""Multi-stage protocols: measure, imagine a situation, measure again, in ONE conversation.

A study with `stages:` (engine/design/study.py) gives every backend × repeat × respondent × situation
a *chain*: its stages in order, each one stored trial. Stage k is sent with, as conversation
history, the messages stage k-1 sent (the persona's system prompt first, then every earlier
stage's question, re-asks included) and the model's own reply to it, then stage k's own
question. A `measure:` stage asks the whole instrument in one request (the rating kind's
whole-instrument prompt and reader, engine/trials/prompts.py); with ``answer: logprobs`` (one answer
token per request) it asks the items one by one in the same conversation, each item a stored
step of the stage, and the history carries the model's own reply token (the recorded answer is
read from that reply's log probabilities: sampled or the most likely option, so it can differ
from the token). An `evoke:` stage sends the situation's text with an instruction to imagine
being in it and stores the reply as text.

Resuming: each stage trial is committed (with the exact messages it sent, table
``stage_trials`` of engine/store/run_store/run_store.py) before the next stage of its chain is sent; a rerun rebuilds
the history from the store, byte for byte what the model saw, and never re-sends a finished
stage. A stage that *failed* (the backend gave no answer) stops its chain there; the rerun sends
it again with the same history. A stage that finished without a reply to carry (an empty or
unreadable reply) stops its chain for good, and the run says so.

Trial ids: a stage trial's id hashes the id the same request would have alone (backend,
sampling, persona, instrument, repeat, seed, the stage's own question), the stage's index, the
study's stages and the situation; its history is not in the id (it is not known when planning)
but is stored with it.

Example (a test study: two personas, two situations each, measure – evoke – measure; nothing is sent):
    >>> from psyq import load_study
    >>> from psyq.engine.backends import make_backend
    >>> study = load_study("tests/fixtures/stages/staged_study.yaml")
    >>> chains = plan_chains(study, {b.id: make_backend(b) for b in study.spec.backends})
    >>> len(chains), [s.kind for s in chains[0].steps]
    (4, ['measure', 'evoke', 'measure'])
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Literal

import numpy as np

from psyq.engine.backends.base import BackendError, HttpBackend
from psyq.engine.backends.bodies import request_body
from psyq.engine.kinds import get_kind
from psyq.engine.trials.parsing import too_long
from psyq.engine.design.persona import Persona
from psyq.engine.design.persona_prompt import render_system_prompt
from psyq.engine.trials.prompts import answer_json_schema, instrument_messages
from psyq.engine.administer.runner import option_order_for, per_backend_workers, run_trial_conversation
from psyq.engine.design.situations import Situation
from psyq.engine.store.clock import utc_now
from psyq.engine.store.run_store import AnswerRecord, RunStore, StageRecord, TrialRecord
from psyq.engine.design.study import EvokeStage, Study
from psyq.engine.trials.trial import Trial, TrialContext, make_trial, max_tokens_for, stable_int

EVOKE_ID = "evoke"                 # the instrument id an evoke stage's trial is stored under
EVOKE_MAX_TOKENS = 300
EVOKE_PROMPT = ("Imagine that you are the person in the following situation. Picture it as vividly as you can: "
                "where you are, what happens, and what goes through your mind.\n\n"
                "Situation: {text}\n\n"
                "In two or three sentences, describe how you feel right now, as that person.")
PLACEHOLDER = "<reply of stage {k}>"
PREVIEW_NOTE = ("a later stage is sent with the earlier stages' questions and the model's own replies as "
                "conversation history; the preview shows those replies as placeholders such as '<reply of stage 0>' "
                "(they are not known before the run), so its prompt tokens are a lower bound")


@dataclass(frozen=True)
class EvokeTarget:
    """Stands in for an instrument in an evoke stage's trial (it asks no instrument's items)."""

    id: str = EVOKE_ID
    version: str = ""


@dataclass(frozen=True)
class StageStep:
    """One stage of one chain: its trial, whose request holds the persona's system prompt (if
    any) and this stage's own question only; the history is put before the question when sent."""

    trial: Trial
    stage: int
    kind: Literal["measure", "evoke"]
    chain_id: str
    situation: Situation


@dataclass(frozen=True)
class Chain:
    """The stages one respondent goes through for one situation, repeat and backend."""

    chain_id: str
    backend_id: str
    steps: tuple[StageStep, ...]


def situations_for(study: Study, persona: Persona) -> list[Situation]:
    """The situations `persona` is given: all, or a seeded sample (in the set's order).

    Example (a test study whose personas get every situation of a set of two):
        >>> from psyq import load_study
        >>> study = load_study("tests/fixtures/stages/staged_study.yaml")
        >>> [s.id for s in situations_for(study, study.cohort.personas[0])]
        ['anger_01', 'joy_01']
    """
    assert study.situations is not None and study.spec.situations is not None
    every = list(study.situations.situations)
    per = study.spec.situations.per_respondent
    if per == "all":
        return every
    rng = np.random.default_rng(stable_int("situations", per.seed, persona.id))
    chosen = sorted(rng.choice(len(every), size=per.sample, replace=False).tolist())
    return [every[i] for i in chosen]


def evoke_text(situation: Situation) -> str:
    """The question of an evoke stage.

    Example:
        >>> from psyq.engine.design.situations import Situation
        >>> evoke_text(Situation(id="a", emotion="joy", text="You win.")).splitlines()[2]
        'Situation: You win.'
    """
    return EVOKE_PROMPT.format(text=situation.text.strip())


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _staged(trial: Trial, protocol_seed: int, chain_key: dict, stage: int) -> Trial:
    """`trial` under a stage id (its own id, the chain and the stage's index) and that id's seed."""
    trial_id = _hash("stage", trial.trial_id, chain_key, stage)
    request = replace(trial.request, seed=stable_int(protocol_seed, trial_id) % 2**31)
    return replace(trial, trial_id=trial_id, request=request)


def plan_chains(study: Study, backends: dict[str, HttpBackend]) -> list[Chain]:
    """Every chain of a staged study, in a deterministic order (backend, repeat, respondent,
    situation); each chain's steps in the order of `stages:`."""
    assert study.spec.stages is not None and study.situations is not None
    protocol = study.protocol
    by_id = {inst.id: inst for inst in study.instruments}
    stages_key = [s.model_dump() for s in study.spec.stages]
    chains = []
    for backend_id, backend in backends.items():
        for repeat in range(protocol.repeats):
            for index, persona in enumerate(study.cohort.personas):
                system_prompt = render_system_prompt(persona, study.cohort.template)
                order = option_order_for(protocol, index)
                ctx = TrialContext(study, backend_id, backend, persona, system_prompt, repeat, order)
                for situation in situations_for(study, persona):
                    chain_key = {"stages": stages_key, "set": study.situations.id,
                                 "situation": [situation.id, situation.emotion, situation.text]}
                    chain_id = _hash("chain", backend_id, backend.identity(), persona.id, repeat, chain_key,
                                     protocol.seed)
                    steps = []
                    for k, stage in enumerate(study.spec.stages):
                        if isinstance(stage, EvokeStage):
                            trials = [_evoke_trial(ctx, situation, system_prompt)]
                        elif protocol.answer == "logprobs":
                            # One answer token per request: the measure is asked item by item inside
                            # the conversation, each item a step of this stage (the rating kind's
                            # per-item trials, in the protocol's item order).
                            trials = list(get_kind("rating").plan_trials(ctx, by_id[stage.measure]))
                        else:
                            trials = [_measure_trial(ctx, by_id[stage.measure], system_prompt)]
                        for trial in trials:
                            # kind: what `psyq plan` groups and labels requests by (its "stage" column: "1: evoke")
                            trial = replace(trial, kind=f"{k}: {'evoke' if isinstance(stage, EvokeStage) else 'measure'}")
                            steps.append(StageStep(_staged(trial, protocol.seed, chain_key, k), k,
                                                   "evoke" if isinstance(stage, EvokeStage) else "measure",
                                                   chain_id, situation))
                    chains.append(Chain(chain_id, backend_id, tuple(steps)))
    return chains


def _measure_trial(ctx: TrialContext, instrument, system_prompt: str | None) -> Trial:
    """The whole instrument in one request (the rating kind's whole-instrument prompt)."""
    protocol, backend = ctx.study.protocol, ctx.backend
    items = list(instrument.rating_items)
    messages = instrument_messages(instrument, items, system_prompt=system_prompt, option_order=ctx.option_order,
                                   answer=protocol.answer)
    schema = answer_json_schema(instrument, [i.id for i in items]) if protocol.answer == "json" else None
    return make_trial(ctx, instrument, tuple(i.id for i in items), messages,
                      max_tokens_for(protocol, len(items), backend), None, schema, "rating", "rating",
                      ctx.option_order)


def _evoke_trial(ctx: TrialContext, situation: Situation, system_prompt: str | None) -> Trial:
    messages = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + \
        [{"role": "user", "content": evoke_text(situation)}]
    return make_trial(ctx, EvokeTarget(), (situation.id,), messages,  # type: ignore[arg-type]
                      ctx.backend.config.max_tokens or EVOKE_MAX_TOKENS, None, None, "evoke", EVOKE_ID,
                      ctx.option_order)


def stage_trials(chains: Iterable[Chain]) -> list[Trial]:
    """The trials of `chains` (for counts: their requests hold no history)."""
    return [step.trial for chain in chains for step in chain.steps]


def preview_trials(chains: Iterable[Chain]) -> list[Trial]:
    """The trials of `chains` as `psyq plan` shows them: each later stage with the earlier
    stages' questions and placeholders for the replies not yet given (see :data:`PREVIEW_NOTE`).

    Example (a test study of measure – evoke – measure; the third trial is the second measure):
        >>> from psyq import load_study
        >>> from psyq.engine.backends import make_backend
        >>> study = load_study("tests/fixtures/stages/staged_study.yaml")
        >>> chains = plan_chains(study, {b.id: make_backend(b) for b in study.spec.backends})
        >>> messages = preview_trials(chains)[2].request.messages
        >>> [m["role"] for m in messages], messages[2]["content"]
        (['system', 'user', 'assistant', 'user', 'assistant', 'user'], '<reply of stage 0>')
    """
    out = []
    for chain in chains:
        history = list(chain.steps[0].trial.request.messages[:-1])
        for step in chain.steps:
            messages = history + [step.trial.request.messages[-1]]
            out.append(replace(step.trial, request=replace(step.trial.request, messages=tuple(messages))))
            history = messages + [{"role": "assistant", "content": PLACEHOLDER.format(k=step.stage)}]
    return out


def first_conversations(chains: Iterable[Chain]) -> list[Trial]:
    """The preview trials of the first chain of each backend, in stage order (what `psyq plan`
    shows first: one whole conversation per backend)."""
    seen: set[str] = set()
    firsts = []
    for chain in chains:
        if chain.backend_id not in seen:
            seen.add(chain.backend_id)
            firsts.append(chain)
    return preview_trials(firsts)


def with_history(step: StageStep, history: list[dict]) -> Trial:
    """The trial of `step` as sent: `history` (system prompt, earlier questions and replies), then
    this stage's own question."""
    messages = tuple(history) + (step.trial.request.messages[-1],)
    return replace(step.trial, request=replace(step.trial.request, messages=messages))


async def _send_evoke(trial: Trial, backend: HttpBackend) -> tuple[TrialRecord, tuple[dict, ...], str | None]:
    """Send an evoke stage: one request, the reply stored as text (no re-asks: any reply is one)."""
    started = utc_now()
    situation_id = trial.item_ids[0]
    try:
        result = await backend.complete(trial.request)
    except BackendError as exc:
        if exc.fatal:
            raise
        answer = AnswerRecord(situation_id, 0, None, "failed", str(exc))
        return (_evoke_record(trial, backend, "failed", started, None, exc.body, exc.attempts, 0.0, None, None,
                              answer, str(exc)), trial.request.messages, None)
    text = result.text
    status, reason = result.problem, result.problem_reason
    if status is None and (long := too_long(text)) is not None:
        status, reason = long.status, long.reason
    if status is None and not text.strip():
        status, reason = "empty", "the reply was empty"
    answer = AnswerRecord(situation_id, 0, None, status or "answered", reason, text=text if status is None else None)
    reply = text if status is None else None
    return (_evoke_record(trial, backend, "missing" if status else "answered", started, text, result.raw,
                          result.attempts, result.latency_s, result.prompt_tokens, result.completion_tokens,
                          answer, None), trial.request.messages, reply)


def _evoke_record(trial: Trial, backend: HttpBackend, status: str, started: str, text: str | None, response,
                  attempts: int, latency: float, prompt_tokens, completion_tokens, answer: AnswerRecord,
                  error: str | None) -> TrialRecord:
    return TrialRecord(
        trial_id=trial.trial_id, backend_id=trial.backend_id, model=backend.identity().get("model"),
        respondent_id=trial.respondent_id, instrument_id=EVOKE_ID, item_ids=list(trial.item_ids),
        repeat=trial.repeat, option_order=trial.option_order, status=status,
        request=request_body(backend, trial.request), response=response, raw_text=text, attempts=attempts,
        reasks=0, latency_s=latency,
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, started_at=started, finished_at=utc_now(),
        error=error, answers=[answer])


ProgressCallback = Callable[[str, TrialRecord], None]


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


async def run_chain(chain: Chain, backend: HttpBackend, store: RunStore, protocol,
                    stored: dict[str, tuple[str, list[dict], str | None]], outcome: ChainOutcome,
                    on_trial: ProgressCallback | None = None) -> None:
    """Send the stages of `chain` not yet finished, each with the history rebuilt from the store,
    committing each stage before the next is sent."""
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
                record, sent, reply = await _send_evoke(trial, backend)
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


async def run_chains(chains: list[Chain], backends: dict[str, HttpBackend], store: RunStore, protocol,
                     on_trial: ProgressCallback | None = None) -> ChainOutcome:
    """Run (or resume) every chain; chains run side by side up to each backend's concurrency, the
    stages of one chain one after the other.

    Example:
        >>> outcome = asyncio.run(run_chains(chains, backends, store, study.protocol))  # sends requests  # doctest: +SKIP
    """
    stored = store.stage_trials()
    outcome = ChainOutcome()
    await per_backend_workers(chains, lambda chain: chain.backend_id, backends,
                              lambda chain, backend: run_chain(chain, backend, store, protocol, stored, outcome,
                                                               on_trial))
    return outcome


__all__ = ["Chain", "StageStep", "ChainOutcome", "plan_chains", "run_chains", "preview_trials", "stage_trials",
           "situations_for", "evoke_text", "EVOKE_ID", "PREVIEW_NOTE"]
