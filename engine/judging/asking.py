"""Asking a judge model for a level: the one request both judges send.

The answer judge (:mod:`psyq.engine.judging.answer_judge`, a rubric's levels for a free-text
answer) and the reply judge (:mod:`psyq.engine.judging.reply_judge`, a dimension's levels for a
reply) fill in their own prompt; how the level is asked for in each answer mode, and read back
(:func:`psyq.engine.trials.answer_mode.read_level`), is the same.
"""

from __future__ import annotations

from typing import Sequence

from psyq.engine.backends.base import ChatRequest
from psyq.engine.trials.answer_mode import AnswerMode


def level_request(system: str, user: str, levels: Sequence[int], answer: AnswerMode,
                  top_logprobs: int) -> ChatRequest:
    """The request asking for one of `levels`, the prompt `user` ended as the mode `answer` needs:
    ``{"level": n}`` under a JSON schema, ``Level:`` before the one token read from its
    probabilities, or nothing more for a level written in text; temperature 0 and seed 0.

    Example:
        >>> r = level_request("You rate.", "How clear is it?", [0, 1, 2], "json", 20)
        >>> r.messages[1]["content"], r.json_schema["properties"], r.max_tokens
        ('How clear is it?\\nReply with JSON only: {"level": <digit>}.', {'level': {'enum': [0, 1, 2]}}, 64)
        >>> r = level_request("You rate.", "How clear is it?", [0, 1, 2], "logprobs", 20)
        >>> r.messages[1]["content"][-6:], r.max_tokens, r.top_logprobs
        ('Level:', 1, 20)
    """
    schema = None
    if answer == "json":
        user += '\nReply with JSON only: {"level": <digit>}.'
        schema = {"type": "object", "properties": {"level": {"enum": list(levels)}}, "required": ["level"]}
    elif answer == "logprobs":
        user += "\nLevel:"
    messages = ({"role": "system", "content": system}, {"role": "user", "content": user})
    return ChatRequest(messages=messages, max_tokens=1 if answer == "logprobs" else 64, temperature=0.0,
                       seed=0, top_logprobs=top_logprobs if answer == "logprobs" else None, json_schema=schema)
