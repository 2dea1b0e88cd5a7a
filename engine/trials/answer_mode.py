"""The answer mode: how an answer is asked for and read, one reader for the runner and the judges.

A trial's or a judge's answer comes in one of three ways (:data:`AnswerMode`): ``logprobs``, the
probabilities of the first answer token; ``json``, an object constrained by a JSON schema where
the server supports it; ``text``, the answer written out. Before any of them is read, a reply may
already hold no answer (:func:`reply_problem`); a judge's level is then read by
:func:`read_level` in its mode.

A study's respondents may also be asked for a distribution over the options
(:data:`DISTRIBUTION_MODES`, rating items only): ``verbalized``, the respondent states one
probability per option (engine/trials/stated_distribution.py); ``ssr``, the respondent answers in
its own words and the text is mapped onto the options by the similarity of its embedding to
anchor statements (engine/trials/ssr.py). :data:`ProtocolAnswer` is what `protocol: answer:` takes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Sequence

from psyq.engine.trials.logprobs import most_likely, option_distribution
from psyq.engine.trials.parsing import ParsedAnswer, parse_json_rating, parse_rating, too_long
from psyq.engine.trials.scale import Option

if TYPE_CHECKING:
    from psyq.engine.backends.base import ChatResult

# How a judge's or a trial's reply is read.
AnswerMode = Literal["text", "json", "logprobs"]
# What a study's protocol may ask for, in this order in the study file's schema (`protocol: answer:`).
ProtocolAnswer = Literal["text", "json", "logprobs", "verbalized", "ssr"]
DISTRIBUTION_MODES = ("verbalized", "ssr")
"""The answer modes whose answer is a distribution over the options, its value chosen from it."""


def reply_problem(result: "ChatResult", reads_logprobs: bool) -> ParsedAnswer | None:
    """Why the reply `result` holds no answer to read, as a missing answer (None: read it).

    The server's reply may be unreadable as a whole (``problem``: not text, too long, a reader's
    failure), which does not matter when only its first token's probabilities are read
    (`reads_logprobs`) and the text part is what could not be read; an answer read from
    probabilities is missing when those are unusable (``logprobs_problem``).

    Example:
        >>> from psyq.engine.backends.base import ChatResult
        >>> odd = ChatResult("", {"1": -0.1}, None, None, {}, problem="unreadable_response", problem_reason="a list")
        >>> reply_problem(odd, reads_logprobs=False).status, reply_problem(odd, reads_logprobs=True)
        ('unreadable_response', None)
    """
    if result.problem and not (result.problem == "unreadable_response" and reads_logprobs):
        return ParsedAnswer(None, result.problem, result.problem_reason)
    if reads_logprobs and result.logprobs_problem:
        return ParsedAnswer(None, "unreadable_response", result.logprobs_problem)
    return None


def read_level(result: "ChatResult", answer: AnswerMode,
               scale: Sequence[Option]) -> tuple[ParsedAnswer, dict[int, float] | None]:
    """A judge's level on `scale` from its reply in mode `answer`, and the level distribution
    (mode ``logprobs`` only): the most likely level of the first token, ``{"level": n}``, or the
    one level in the text.

    Example:
        >>> from psyq.engine.backends.base import ChatResult
        >>> scale = [Option(value=v) for v in range(4)]
        >>> read_level(ChatResult('{"level": 2}', None, None, None, {}), "json", scale)
        (ParsedAnswer(value=2, status='answered', reason=None, disclaimer=False, text=None), None)
        >>> read_level(ChatResult("", {"3": -0.1, "1": -2.4}, None, None, {}), "logprobs", scale)[0].value
        3
    """
    reads_logprobs = answer == "logprobs"
    if (problem := reply_problem(result, reads_logprobs)) is not None:
        return problem, None
    if not reads_logprobs and (long := too_long(result.text)) is not None:
        return long, None
    if reads_logprobs:
        logprobs = result.first_token_logprobs
        dist = option_distribution(logprobs or {}, scale) if logprobs else None
        if dist is None:
            return ParsedAnswer(None, "unparseable", "no level digit among the most likely first tokens"), None
        return ParsedAnswer(most_likely(dist), "answered"), dist
    if answer == "json":
        return parse_json_rating(result.text, scale, key="level"), None
    return parse_rating(result.text, scale), None
