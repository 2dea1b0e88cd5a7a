"""Planning: which trials a study makes, in which order, under which ids (nothing is sent here).

A *trial* is one request (plus its corrective re-asks): one item for one respondent, or a whole
instrument in one request, for one backend and one repeat. Its id hashes everything that decides
the answer (backend identity and sampling parameters, the full messages, respondent, instrument,
items, repeat), so two personas with identical attributes, or two repeats, are never collapsed,
and a rerun of the same study recognises what it already has. Each item kind plans its own
items' trials (engine/kinds/); :func:`plan_trials` puts them in order.

A study with `conditions:` (engine/design/conditions.py) plans each condition's trials from the
study as that condition asks it (:func:`condition_views`: its protocol, persona template,
sampling and backends): the condition's id is in each trial's id and on the trial, and so is the
protocol it is asked and read under, so that sending, reading and storing need no condition of
their own.

A study with `stages:` (engine/design/study.py) runs as conversations: every backend × repeat ×
respondent × situation gives a *chain* (:func:`plan_chains`), its stages in order, each one stored
trial. A `measure:` stage asks the whole instrument in one request (the rating kind's
whole-instrument prompt and reader, engine/trials/prompts.py); with ``answer: logprobs`` (one
answer token per request) it asks the items one by one in the same conversation, each item a step
of the stage. An `evoke:` stage sends the situation's text with an instruction to imagine being in
it (:func:`evoke_text`). How a chain is sent, each stage with the earlier ones as history, is
engine/administer/send.py's. A stage trial's id hashes the id the same request would have alone
(backend, sampling, persona, instrument, repeat, seed, the stage's own question), the stage's
index, the study's stages and the situation; its history is not in the id (it is not known when
planning) but is stored with it.

:func:`plan_run` is what `psyq run` sends (engine/administer/run.py); `psyq plan` counts the same
trials (engine/administer/plan_estimate.py), a staged study's later stages shown with the earlier
stages' questions and placeholders for the replies (:func:`preview_trials`).

Example (a test study: two personas, two situations each, measure – evoke – measure; nothing is sent):
    >>> from psyq import load_study
    >>> from psyq.engine.backends import make_backend
    >>> study = load_study("tests/fixtures/stages/staged_study.yaml")
    >>> chains = plan_chains(study, {b.id: make_backend(b) for b in study.spec.backends})
    >>> len(chains), [s.kind for s in chains[0].steps]
    (4, ['measure', 'evoke', 'measure'])
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Literal

import numpy as np

from psyq.engine.backends.base import HttpBackend
from psyq.engine.kinds import all_kinds, get_kind
from psyq.engine.design.persona import Persona
from psyq.engine.design.persona_prompt import render_system_prompt
from psyq.engine.trials.prompts import answer_json_schema, instrument_messages
from psyq.engine.design.situations import Situation
from psyq.engine.design.study import EvokeStage, Protocol, Study, condition_study
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


def option_order_for(protocol: Protocol, respondent_index: int) -> str:
    """Counterbalancing alternates respondents: even positions as written, odd reversed."""
    if protocol.option_order == "counterbalanced":
        return "as_written" if respondent_index % 2 == 0 else "reversed"
    return protocol.option_order


def condition_views(study: Study, backends: dict[str, HttpBackend]) -> Iterator[tuple[str, Study, HttpBackend]]:
    """Per backend, the study as each of its conditions asks it (engine/design/study.py's
    `condition_study`) and the backend as it plans that condition's requests (its temperature and
    top_p the condition's), in the order the conditions are written, each backend only with the
    conditions it asks; a study without conditions is itself, once per backend.

    The backend a condition plans with is a copy that only its trials' requests and ids read: the
    run sends every condition's requests through the backend itself (a request carries its own
    temperature and top_p).

    Example (the test study of conditions: 2 backends × 4 conditions):
        >>> from psyq import load_study
        >>> from psyq.engine.backends import make_backend
        >>> study = load_study("tests/fixtures/conditions/conditions_study.yaml")
        >>> views = list(condition_views(study, {b.id: make_backend(b) for b in study.spec.backends}))
        >>> len(views), views[2][0], views[2][1].condition.id
        (8, 'stub_a', 'asking=reversed,persona=plain')
    """
    if not study.conditions:
        for backend_id, backend in backends.items():
            yield backend_id, study, backend
        return
    asked = [condition_study(study, condition) for condition in study.conditions]
    for backend_id, backend in backends.items():
        for view in asked:
            condition = view.condition
            assert condition is not None
            if condition.backends is not None and backend_id not in condition.backends:
                continue
            planning = backend
            if condition.sampling:
                planning = copy.copy(backend)
                planning.config = backend.config.model_copy(update=condition.sampling)
            yield backend_id, view, planning


def respondent_contexts(study: Study, backends: dict[str, HttpBackend]) -> Iterator[TrialContext]:
    """What every respondent is asked under, in a deterministic order (backend, [condition,] repeat,
    respondent): the study as its condition asks it, the persona's system prompt, its option order.
    Both independent trials (:func:`plan_trials`) and a staged study's chains (:func:`plan_chains`)
    are planned from these."""
    for backend_id, asked, backend in condition_views(study, backends):
        for repeat in range(asked.protocol.repeats):
            for index, persona in enumerate(asked.cohort.personas):
                system_prompt = render_system_prompt(persona, asked.cohort.template)
                yield TrialContext(asked, backend_id, backend, persona, system_prompt, repeat,
                                   option_order_for(asked.protocol, index))


def plan_trials(study: Study, backends: dict[str, HttpBackend]) -> Iterator[Trial]:
    """Every trial of the study, in a deterministic order (backend, condition, repeat, respondent,
    instrument; a study without conditions: backend, repeat, respondent, instrument)."""
    for ctx in respondent_contexts(study, backends):
        for instrument in ctx.study.instruments:
            # Each kind plans its own items' trials (engine/kinds/), in the order of their plan_rank.
            for kind in sorted(all_kinds(), key=lambda k: k.plan_rank):
                yield from kind.plan_trials(ctx, instrument)


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
    """Every chain of a staged study, in a deterministic order (backend, [condition,] repeat,
    respondent, situation); each chain's steps in the order of `stages:`."""
    assert study.spec.stages is not None and study.situations is not None
    by_id = {inst.id: inst for inst in study.instruments}
    stages_key = [s.model_dump() for s in study.spec.stages]
    chains = []
    for ctx in respondent_contexts(study, backends):
        asked, backend_id, backend, persona = ctx.study, ctx.backend_id, ctx.backend, ctx.persona
        protocol, repeat, system_prompt = asked.protocol, ctx.repeat, ctx.system_prompt
        for situation in situations_for(study, persona):
            chain_key = {"stages": stages_key, "set": study.situations.id,
                         "situation": [situation.id, situation.emotion, situation.text]}
            if asked.condition is not None:   # only then: the chains of other studies keep their ids
                chain_key["condition"] = asked.condition.id
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


@dataclass(frozen=True)
class RunPlan:
    """What a run sends: every trial in order, and for a staged study the same trials as chains
    (``None`` otherwise: the trials are independent)."""

    trials: list[Trial]
    chains: list[Chain] | None = None


def plan_run(study: Study, backends: dict[str, HttpBackend]) -> RunPlan:
    """The study's trials as `psyq run` sends them: a study with `stages:` as conversations
    (:func:`plan_chains`), any other as independent trials (:func:`plan_trials`).

    Example (the test study of measure – evoke – measure: 4 chains of 3 stages; nothing is sent):
        >>> from psyq import load_study
        >>> from psyq.engine.backends import make_backend
        >>> study = load_study("tests/fixtures/stages/staged_study.yaml")
        >>> planned = plan_run(study, {b.id: make_backend(b) for b in study.spec.backends})
        >>> len(planned.trials), len(planned.chains)
        (12, 4)
    """
    if study.spec.stages:
        chains = plan_chains(study, backends)
        return RunPlan(stage_trials(chains), chains)
    return RunPlan(list(plan_trials(study, backends)))


__all__ = ["Chain", "StageStep", "RunPlan", "plan_run", "plan_trials", "plan_chains", "condition_views", "preview_trials",
           "first_conversations", "stage_trials", "option_order_for", "situations_for", "evoke_text", "EVOKE_ID",
           "PLACEHOLDER", "PREVIEW_NOTE"]
