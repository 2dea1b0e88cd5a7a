"""The words sent to a model: an instrument's items rendered as chat messages.

Pure functions. A persona becomes the system message (none for the baseline respondent); the
user message holds the instrument's own instructions, the item(s) and the response options in
the order the protocol asks for, and says how to answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:   # annotations only: the item kinds (imported by the instrument) use these prompts
    from psyq.engine.design.instrument import Instrument
    from psyq.engine.kinds.rating import Item
    from psyq.engine.trials.scale import Option


def ordered_options(instrument: Instrument, order: str) -> list[Option]:
    """The scale as presented: as written, or reversed.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> [o.value for o in ordered_options(load_instrument("bes"), "reversed")]
        [5, 4, 3, 2, 1]
    """
    options = list(instrument.scale)
    return options[::-1] if order == "reversed" else options


def _token(option: Option, use_codes: bool) -> str:
    return option.code if use_codes and option.code else str(option.value)


def uses_codes(instrument: Instrument) -> bool:
    """True when every option has a code: respondents then answer with codes, as on the form."""
    return all(o.code for o in instrument.scale)


def answer_tokens(instrument: Instrument) -> list[str]:
    """What a respondent answers with: the codes if every option has one (e.g. the IRI's
    letters, as on the published form), otherwise the values.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> answer_tokens(load_instrument("iri"))
        ['A', 'B', 'C', 'D', 'E']
    """
    codes = uses_codes(instrument)
    return [_token(o, codes) for o in instrument.scale]


def options_block(instrument: Instrument, order: str) -> str:
    """One line per option, e.g. ``A = Does not describe me well`` then ``B`` …"""
    return option_lines(ordered_options(instrument, order), uses_codes(instrument))


def option_lines(options: Sequence[Option], use_codes: bool) -> str:
    """The options as a prompt lists them, one a line: ``value = label`` (``code = label`` with
    `use_codes`), the token alone for an option without a label.

    Example:
        >>> from psyq.engine.trials.scale import Option
        >>> option_lines([Option(value=1, label="never"), Option(value=2)], use_codes=False)
        '1 = never\\n2'
    """
    tokens = [(_token(o, use_codes), o.label) for o in options]
    return "\n".join(f"{token} = {label}" if label else token for token, label in tokens)


def _answer_kind(instrument: Instrument) -> str:
    return "letter" if uses_codes(instrument) else "number"


# The options block and the answer's kind of each scale and order, made once and used by every
# trial of a run (a run asks the same options thousands of times: bench/RESULTS.md, issue 42).
_blocks: dict[tuple[int, str], tuple[tuple[Option, ...], str, str]] = {}


def _options_and_kind(instrument: Instrument, order: str) -> tuple[str, str]:
    """:func:`options_block` and :func:`_answer_kind` of `instrument`, kept per scale and order.

    Keyed by the scale object; its options (frozen) are compared too, so other options under a
    reused id are a miss, never another scale's block.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> iri = load_instrument("iri")
        >>> _options_and_kind(iri, "reversed") == (options_block(iri, "reversed"), "letter")
        True
    """
    scale = instrument.scale
    options = tuple(scale)
    key = (id(scale), order)
    kept = _blocks.get(key)
    if kept is None or kept[0] != options:
        if len(_blocks) >= 256:
            _blocks.clear()
        kept = _blocks[key] = (options, options_block(instrument, order), _answer_kind(instrument))
    return kept[1], kept[2]


def item_messages(instrument: Instrument, item: Item, *, system_prompt: str | None,
                  option_order: str, answer: str) -> list[dict[str, str]]:
    """Messages asking one item.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> iri = load_instrument("iri")
        >>> msgs = item_messages(iri, iri.item("1"), system_prompt=None, option_order="as_written", answer="text")
        >>> msgs[0]["role"], msgs[0]["content"].splitlines()[-2:]
        ('user', ['', 'Answer with the letter of one option only.'])
    """
    block, kind = _options_and_kind(instrument, option_order)
    if answer == "json":
        how = f'Reply with JSON only, in the form {{"answer": <the {kind} of one option>}}.'
    elif answer == "verbalized":
        how = verbalized_request(instrument)
    elif answer == "ssr":
        how = FREE_TEXT_REQUEST
    else:
        how = f"Answer with the {kind} of one option only."
    user = (f"{instrument.instructions.strip()}\n\n"
            f"Statement: {item.text}\n\n"
            f"Options:\n{block}\n\n{how}")
    return with_system(system_prompt, user)


def instrument_messages(instrument: Instrument, items: Sequence[Item], *, system_prompt: str | None,
                        option_order: str, answer: str) -> list[dict[str, str]]:
    """Messages asking every item of an instrument at once (items labelled by their ids)."""
    block, kind = _options_and_kind(instrument, option_order)
    example = items[0].id
    if answer == "json":
        how = (f"Answer every statement. Reply with JSON only: an object mapping each statement's "
               f'number to the {kind} of one option, e.g. {{"{example}": ...}}.')
    else:
        how = (f"Answer every statement. Reply with one line per statement in the form "
               f"\"number: {kind}\", e.g. \"{example}: ...\".")
    statements = "\n".join(f"{item.id}. {item.text}" for item in items)
    user = (f"{instrument.instructions.strip()}\n\n"
            f"Options:\n{block}\n\n"
            f"Statements:\n{statements}\n\n{how}")
    return with_system(system_prompt, user)


# How a free-text answer to a rating item is asked for (`answer: ssr`): the options are shown, as
# the instrument's instructions speak of them, but the answer is the respondent's own words, which
# engine/trials/ssr.py maps onto the options by their similarity to anchor statements.
FREE_TEXT_REQUEST = ("Answer in your own words, in one or two sentences: how well does the statement fit you? "
                     "Do not answer with a letter or a number.")


def verbalized_request(instrument: Instrument) -> str:
    """How a stated distribution is asked for (`answer: verbalized`): one probability per option,
    as a JSON object keyed by the options' letters (or values).

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> print(verbalized_request(load_instrument("iri")))
        How likely are you to choose each option? Reply with JSON only: an object giving each option's probability as a number from 0 to 1, the probabilities summing to 1, in the form {"A": <probability>, "B": <probability>, "C": <probability>, "D": <probability>, "E": <probability>}.
    """
    keys = ", ".join(f'"{token}": <probability>' for token in answer_tokens(instrument))
    return ("How likely are you to choose each option? Reply with JSON only: an object giving each option's "
            f"probability as a number from 0 to 1, the probabilities summing to 1, in the form {{{keys}}}.")


def verbalized_json_schema(instrument: Instrument) -> dict[str, Any]:
    """JSON Schema of a stated distribution: an object with one number property per option, keyed
    as :func:`answer_tokens` (servers that take a schema enforce it; the sum is checked on reading).

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> verbalized_json_schema(load_instrument("bes"))["properties"]["5"]
        {'type': 'number'}
    """
    tokens = answer_tokens(instrument)
    return {"type": "object", "properties": {t: {"type": "number"} for t in tokens}, "required": tokens,
            "additionalProperties": False}


def reask_message(instrument: Instrument, reason: str, missing_items: Sequence[str] | None = None,
                  answer: str = "text") -> str:
    """The corrective follow-up after an answer that could not be read (`answer`: the protocol's mode)."""
    if answer == "ssr":
        return f"Your answer could not be read ({reason}). {FREE_TEXT_REQUEST}"
    if answer == "verbalized":
        tokens = ", ".join(answer_tokens(instrument))
        return (f"Your answer could not be read ({reason}). Reply with JSON only: one probability from 0 to 1 for "
                f"each option ({tokens}), the probabilities summing to 1.")
    kind = _answer_kind(instrument)
    tokens = ", ".join(answer_tokens(instrument))
    if missing_items:
        return (f"Your reply gave no valid answer for statement(s) {', '.join(missing_items)} ({reason}). "
                f"Answer those statements only, in the same form, each with one of: {tokens}.")
    return f"Your answer could not be read ({reason}). Answer with the {kind} of one option only: {tokens}."


def answer_json_schema(instrument: Instrument, item_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """JSON Schema that constrains a JSON answer to the scale (servers that support it enforce it)."""
    codes = uses_codes(instrument)
    allowed: list[Any] = [o.code if codes else o.value for o in instrument.scale]
    if item_ids is None:
        return {"type": "object", "properties": {"answer": {"enum": allowed}}, "required": ["answer"]}
    return {"type": "object", "properties": {i: {"enum": allowed} for i in item_ids},
            "required": list(item_ids)}


def with_system(system_prompt: str | None, user: str) -> list[dict[str, str]]:
    """The chat messages of one question: the system prompt (when there is one), then `user`.

    Example:
        >>> with_system(None, "Hi"), len(with_system("You are Ana.", "Hi"))
        ([{'role': 'user', 'content': 'Hi'}], 2)
    """
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": "user", "content": user}]
