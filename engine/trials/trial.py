"""Trials: one planned request (plus its corrective re-asks) and what it is about.

Shared by the runner, which sends trials, and the item kinds (engine/kinds/), which plan and read
them; kept apart from both so that neither imports the other's internals.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from psyq.engine.files.json_text import json_encoder

if TYPE_CHECKING:   # annotations only: the study and instrument modules import the kinds
    from psyq.engine.backends.base import ChatRequest, HttpBackend
    from psyq.engine.design.instrument import Instrument
    from psyq.engine.design.persona import Persona
    from psyq.engine.design.study import Protocol, Study


@dataclass(frozen=True)
class Trial:
    """One planned request and what it is about."""

    trial_id: str
    backend_id: str
    respondent_id: str
    instrument: "Instrument"
    item_ids: tuple[str, ...]
    repeat: int
    option_order: str
    request: ChatRequest
    # What the trial asks, in its item kind's words (e.g. "rating"; engine/kinds/ lists the others).
    kind: str = "rating"
    item_kind: str = "rating"       # the registered item kind (engine/kinds/) that planned and reads it
    # The study's condition it is asked under (engine/design/conditions.py; '' without conditions),
    # and the protocol it is asked and read under (that condition's, when the study has conditions).
    condition: str = ""
    protocol: "Protocol | None" = None


@dataclass(frozen=True)
class TrialContext:
    """Who is asked, by which backend, in which repeat: what every trial of one respondent shares."""

    study: "Study"
    backend_id: str
    backend: HttpBackend
    persona: "Persona"
    system_prompt: str | None
    repeat: int
    option_order: str


# The texts hashed into trial ids and seeds: json.dumps(..., sort_keys=True) (with default=str for
# seeds' parts), byte for byte, so ids and seeds stay those of every run before; encoders made once.
_key_json = json_encoder(sort_keys=True)
_parts_json = json_encoder(sort_keys=True, default=str)


def stable_int(*parts: object) -> int:
    """A 63-bit integer from `parts` that is the same in every process (unlike ``hash``).

    Example:
        >>> stable_int("a", 1) == stable_int("a", 1)
        True
    """
    digest = hashlib.sha256(_parts_json(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def max_tokens_for(protocol: "Protocol", n_items: int, backend: HttpBackend) -> int:
    """Reply length allowed for a rating trial of `n_items` items."""
    if backend.config.max_tokens:
        return backend.config.max_tokens
    if protocol.answer == "logprobs":
        return 1
    return 48 if n_items == 1 else 16 * n_items + 64


def make_trial(ctx: TrialContext, instrument: "Instrument", item_ids: tuple[str, ...], messages: list[dict[str, str]],
               max_tokens: int, top_logprobs: int | None, schema: dict | None, kind: str, item_kind: str,
               option_order: str = "as_written") -> Trial:
    """A trial whose id hashes everything that decides the answer (see engine/administer/plan.py)."""
    protocol, backend = ctx.study.protocol, ctx.backend
    key = {"backend": backend.identity(), "temperature": backend.config.temperature, "top_p": backend.config.top_p,
           "max_tokens": max_tokens, "answer": protocol.answer, "top_logprobs": top_logprobs,
           "logprob_answer": protocol.logprob_answer if top_logprobs else None,
           "reask_limit": protocol.reask_limit, "messages": messages, "respondent": ctx.persona.id,
           "instrument": [instrument.id, instrument.version], "items": list(item_ids), "repeat": ctx.repeat,
           "seed": protocol.seed}
    condition = ctx.study.condition.id if ctx.study.condition is not None else ""
    if condition:   # a condition's trials are its own; in the key only then, so the ids of other studies stay
        key["condition"] = condition
    # Reasoning controls decide answers; in the key only when set, so the ids of other studies stay.
    for name in ("reasoning_effort", "reasoning_budget"):
        if getattr(backend.config, name) is not None:
            key[name] = getattr(backend.config, name)
    key.update(protocol.reading_key())   # how a distribution mode's answer is read (empty for the other modes)
    trial_id = hashlib.sha256(_key_json(key).encode()).hexdigest()[:32]
    # Imported here: the item kinds import this module, and loading an instrument needs no backend.
    from psyq.engine.backends.base import ChatRequest

    request = ChatRequest(messages=tuple(messages), max_tokens=max_tokens, temperature=backend.config.temperature,
                          top_p=backend.config.top_p, seed=stable_int(protocol.seed, trial_id) % 2**31,
                          top_logprobs=top_logprobs, json_schema=schema)
    return Trial(trial_id, ctx.backend_id, ctx.persona.id, instrument, item_ids, ctx.repeat, option_order, request,
                 kind, item_kind, condition, protocol)
