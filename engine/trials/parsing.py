"""Parsing answers: from a model's answer text, or its first-token log-probabilities, to a value
of the instrument's response scale.

This module holds what several readers share, so it is not in one kind's module: a value on a
scale is read for rating items, for another kind's ratings of emotions and for a judge's level
(:mod:`psyq.engine.trials.answer_mode`); a block of ratings for rating items asked as a whole
instrument and for a story's stop points; refusals for every kind. What one kind alone reads is
in that kind's module. Beside it: finding a JSON object in a reply (`json_object.py`), free-text
answers kept whole (`free_text.py`), and an answer read from the first token's log-probabilities
rather than from text (`logprobs.py`).

Pure functions, no I/O. A missing answer is never imputed: when no single value of the scale can
be read, the result has ``value=None`` and a status and reason saying why (empty, refusal, out of
range, unparseable). The parser would rather leave an answer missing than guess:

* numbers are read whole ("10" is ten; the last character is never taken on its own);
* several different values in one answer ("3 or 4", "between 2 and 3", "2 - agree" on a scale
  where "agree" is 4) make it ambiguous, hence unparseable;
* a label preceded by a negation ("I don't agree") is not read as that label;
* a code letter counts only as a standalone token: never inside a word, "I" only when it is the
  whole answer, and "A"/"a" not when it reads as the article ("A lot of the time ...");
* markup is not an answer: a script or style block and a tag with attributes are read as blank
  (a bare tag around an answer, "<b>3</b>", is read).

Words and phrases that only describe the scale are not answers: a range spanning the whole scale
("on a scale from 1 to 5", "A to E"), a denominator ("4/5", "4 out of 5"), an item reference
("question 3") and abbreviations such as "e.g.".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from psyq.engine.trials.json_object import find_json_object, lookup
from psyq.engine.trials.scale import Option

Status = Literal["answered", "refusal", "out_of_range", "unparseable", "empty",
                 # set by the runner, not by these parsers: the reply was too long to read, the
                 # server's reply held no readable answer, or a parser failed on it
                 "too_long", "unreadable_response", "parse_error", "token_budget_exhausted",
                 # a free-text answer waiting to be mapped onto the options (answer: ssr, engine/trials/ssr.py)
                 "unrated"]

# Replies longer than this are not parsed (stored whole, missing as `too_long`): reading costs
# time in proportion to length, and no rating or free-text answer needs 12,000 characters
# (about 3,000 tokens; the default limits are 48 to 832 tokens).
MAX_PARSE_CHARS = 12_000


def too_long(text: str) -> ParsedAnswer | None:
    """A `too_long` missing answer when `text` is over MAX_PARSE_CHARS (None otherwise).

    Example:
        >>> too_long("3") is None, too_long("3" * 20_000).status
        (True, 'too_long')
    """
    if len(text) <= MAX_PARSE_CHARS:
        return None
    return ParsedAnswer(None, "too_long", f"the reply has {len(text)} characters; replies over "
                                          f"{MAX_PARSE_CHARS} are kept but not read")


@dataclass(frozen=True)
class ParsedAnswer:
    """The outcome of parsing one answer.

    `value` is a value of the scale, or None when the answer is missing; `status` says why it is
    missing; `reason` says it in plain words (None when answered; for an answer read from a
    stated distribution, what was done to read it); `disclaimer` is True when a value was found in
    a text that also contains refusal or AI-disclaimer language; `distribution` is the
    distribution over the options an answer was chosen from (`answer: verbalized`), None otherwise.

    Example:
        >>> ParsedAnswer(3, "answered")
        ParsedAnswer(value=3, status='answered', reason=None, disclaimer=False, text=None)
    """

    value: int | None
    status: Status
    reason: str | None = None
    disclaimer: bool = False
    text: str | None = None     # a free-text answer, kept whole
    distribution: dict[int, float] | None = field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------------------------
# Text normalisation and small helpers
# --------------------------------------------------------------------------------------------

# One character for one character, so that positions found in the normalised text stay valid.
_CHAR_MAP = str.maketrans({
    "\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"',
    "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u2010": "-", "\u2011": "-",
    "\u00a0": " ", "\u202f": " ", "\u2009": " ",
})


def normalise(text: str) -> str:
    """`text` with typographic quotes, dashes and spaces made plain, one character for one (so
    positions found in it hold in the original).

    Example:
        >>> normalise("I don\u2019t \u2013 no")
        "I don't - no"
    """
    return text.translate(_CHAR_MAP)


def _mask_spans(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """Blank out every text[start:end] of `spans` at once (one copy, whatever their number)."""
    if not spans:
        return text
    pieces, last = [], 0
    for start, end in sorted(spans):
        start = max(start, last)
        pieces += [text[last:start], " " * max(0, end - start)]
        last = max(last, end)
    pieces.append(text[last:])
    return "".join(pieces)


def _mask_all(text: str, pattern: re.Pattern[str], group: int = 0) -> str:
    return _mask_spans(text, [(m.start(group), m.end(group)) for m in pattern.finditer(text)
                              if m.group(group) is not None])


# Context rules look this far around a match: a few words, never the whole reply, so reading a
# reply costs time in proportion to its length (a reply full of numbers or letters was quadratic).
_WINDOW = 80


def _before(pattern: re.Pattern[str], text: str, at: int) -> re.Match[str] | None:
    """`pattern` (anchored with $) searched in the _WINDOW characters before position `at`."""
    return pattern.search(text, max(0, at - _WINDOW), at)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _scale_text(scale: Sequence[Option]) -> str:
    """E.g. 'whole numbers 0 to 4, or codes A to E' for the IRI scale."""
    values = [o.value for o in scale]
    text = f"whole numbers {min(values)} to {max(values)}"
    codes = [o.code for o in scale if o.code is not None]
    if codes:
        if len(codes) == len(scale) and len(codes) > 2:
            text += f", or codes {codes[0]} to {codes[-1]}"
        else:
            text += ", or codes " + ", ".join(codes)
    return text


def _on_scale(x: float, scale: Sequence[Option]) -> int | None:
    """`x` as a value of the scale, or None if it is not one (2.5, 9 on 0-4 ...)."""
    if isinstance(x, float) and not (math.isfinite(x) and x.is_integer()):
        return None
    v = int(x)
    return v if any(o.value == v for o in scale) else None


def _answered(value: int, disclaimer: bool) -> ParsedAnswer:
    return ParsedAnswer(value, "answered", None, disclaimer)


_EMPTY = ParsedAnswer(None, "empty", "the answer is empty")
_REFUSAL = ParsedAnswer(None, "refusal", "the answer declines to give a rating "
                                         "(refusal or AI disclaimer language, no value)")


# --------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------

_AI = (r"(?:ai|a\.i\.|artificial intelligence|(?:large )?language model|llm|"
       r"ai (?:language )?model|ai assistant|ai system|chatbot|virtual assistant|computer program|machine)")
_REFUSAL_PATTERNS = [
    # Identity disclaimers.
    rf"\bas an? {_AI}\b",
    rf"\bi(?:'m| am) (?:just |only |merely |simply )?(?:an? )?{_AI}\b",
    rf"\bbeing an? {_AI}\b",
    # "I don't have feelings / personal opinions ..." (but not "I don't have strong feelings").
    r"\bi (?:don't|do not|cannot|can't|can not) (?:really |actually )?(?:have|experience|possess) "
    r"(?:any )?(?:personal |real |human |genuine |subjective |my own )?"
    r"(?:feelings|emotions|opinions|beliefs|preferences|experiences|a personality|personal|"
    r"consciousness|a body|a life|the ability to)\b",
    # "I cannot answer", "I'm unable to respond", "I won't rate this".
    r"\bi(?: cannot| can't| can not| won't| will not| am unable to| am not able to|'m unable to|"
    r"'m not able to| must decline to| have to decline to| prefer not to| would prefer not to|"
    r"'d prefer not to| would rather not|'d rather not| am not in a position to|'m not in a position to)"
    r"(?: \w+){0,2}? (?:answer|respond|rate|complete|participate|comply|fill)\b",
    r"\bi(?: cannot| can't| can not| won't| will not| am unable to| am not able to|'m unable to|"
    r"'m not able to| must decline to| prefer not to| would rather not|'d rather not)"
    r" (?:provide|give|share|express|offer|choose|select|pick|make|form)"
    r"(?: \w+){0,3}? (?:answer|answers|rating|ratings|response|responses|opinion|opinions|view|views|"
    r"feelings|choice|preference|preferences|score|judgment|judgement)\b",
    r"\bi(?:'m| am) not (?:able|comfortable|in a position) to\b",
    r"\bi (?:must|have to|need to|will|would have to) (?:respectfully |politely )?decline\b",
    r"\bi (?:respectfully |politely )?decline to\b",
    r"\bprefer not to (?:answer|say|respond)\b",
]
_REFUSAL_RE = re.compile("|".join(f"(?:{p})" for p in _REFUSAL_PATTERNS), re.IGNORECASE)
_REFUSAL_WHOLE_RE = re.compile(
    r"^[\s*_\"'(\[]*(?:n/?a|no answer|no response|pass|skip|decline|declined|refuse|refused|"
    r"i refuse|prefer not to say|no comment)[\s*_\"')\].!]*$", re.IGNORECASE)


def is_refusal(text: str) -> bool:
    """True when the text contains refusal or AI-disclaimer language.

    This looks at language only; whether a value is also present is for the parsers to decide.

    Example:
        >>> is_refusal("As an AI, I don't have feelings.")
        True
        >>> is_refusal("I cannot stand seeing people suffer, so 4.")
        False
    """
    t = re.sub(r"\s+", " ", normalise(text))
    return bool(_REFUSAL_RE.search(t) or _REFUSAL_WHOLE_RE.match(t))


# --------------------------------------------------------------------------------------------
# Free text
# --------------------------------------------------------------------------------------------

_WRAP = " \t\r\n*_`\"'()[]{}<>.,:;!?"
_ANSWER_PREFIX_RE = re.compile(
    r"^(?:(?:my|the|final)\s+)*(?:answer|option|choice|letter|response|rating|selection)\b"
    r"\s*(?:is\b)?\s*[:=-]?\s*", re.IGNORECASE)
_ABBREVIATION_RE = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx)\.", re.IGNORECASE)
_ITEM_REF_RE = re.compile(r"\b(?:item|statement|question|q)\s*#?\s*\d+[a-z]?\b", re.IGNORECASE)
# "4/5", "4 out of 5": the part after the numerator is a denominator, not an answer.
_DENOMINATOR_RE = re.compile(r"(?:(?<=\d)\s*/\s*|\bout\s+of\s+)-?\d+(?:\.\d+)?(?![\w.]?\d)",
                             re.IGNORECASE)
# Markup is not an answer: a script or style block with its content, and a tag with attributes
# (`<img src=x onerror=alert(1)>`), are blanked before reading, so that the "1" of alert(1) is not
# taken for a rating. A bare tag such as <b> or <answer> is left: its content may be the answer.
_MARKUP_RE = re.compile(r"<(script|style)\b[^>]{0,200}>.*?(?:</\1\s*>|$)|<[A-Za-z][\w-]{0,30}\s[^<>]{0,500}>",
                        re.IGNORECASE | re.DOTALL)
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])(?!\.\d)")
_NEGATION_RE = re.compile(r"(?:\bnot|n't|\bnever|\bno)\s+(?:\w+\s+)?$", re.IGNORECASE)
# Words after which even a lowercase letter is read as a code ("option d", "answer: b").
_CODE_KEYWORD_RE = re.compile(
    r"(?:\b(?:option|choice|letter|answer|response|rating|select|selected|choose|chose|pick|"
    r"picked|with|is|be)|[:=])[\s*_\"'(\[]*$", re.IGNORECASE)
_STRONG_CODE_KEYWORD_RE = re.compile(r"\b(?:option|choice|letter)[\s*_\"'(\[:]*$", re.IGNORECASE)


def _core(text: str) -> str:
    """The answer stripped of wrappers and of a leading 'Answer:' / 'Option' / 'My answer is'."""
    core = text.strip(_WRAP)
    core = _ANSWER_PREFIX_RE.sub("", core, count=1)
    return core.strip(_WRAP)


def _range_re(low: str, high: str) -> re.Pattern[str]:
    """The whole scale written as a range, in either direction ("1 to 5", "from A-E", "(0-4)")."""
    ends = rf"(?:{low}\s*(?:-|to|through|until)\s*{high}|{high}\s*(?:-|to|through|until)\s*{low})"
    return re.compile(rf"(?<![\w.])(?:from\s+)?{ends}(?![\w])(?!\.\d)", re.IGNORECASE)


def _mask_scale_description(text: str, scale: Sequence[Option]) -> str:
    """Blank out what only describes the scale or the question, not an answer."""
    text = _mask_all(text, _ABBREVIATION_RE)
    text = _mask_all(text, _ITEM_REF_RE)
    values = [o.value for o in scale]
    text = _mask_all(text, _range_re(re.escape(str(min(values))), re.escape(str(max(values)))))
    first, last = scale[0].code, scale[-1].code
    if first is not None and last is not None:
        text = _mask_all(text, _range_re(re.escape(first), re.escape(last)))
    return _mask_all(text, _DENOMINATOR_RE)


def _find_labels(text: str, scale: Sequence[Option]) -> tuple[str, list[tuple[str, int]], list[str]]:
    """Labels in the text, longest first (so 'strongly agree' is not also read as 'agree').

    Returns the text with every label blanked out, the (label, value) pairs found, and the
    labels found negated ("don't agree"), which are not answers.
    """
    found: list[tuple[str, int]] = []
    negated: list[str] = []
    labelled = sorted((o for o in scale if o.label), key=lambda o: -len(o.label or ""))
    for option in labelled:
        words = (option.label or "").split()
        pattern = re.compile(r"(?<![\w])" + r"\s+".join(map(re.escape, words)) + r"(?![\w])",
                             re.IGNORECASE)
        spans = []
        for m in reversed(list(pattern.finditer(text))):
            if _before(_NEGATION_RE, text, m.start()):
                negated.append(m.group())
            else:
                found.append((m.group(), option.value))
            spans.append((m.start(), m.end()))
        text = _mask_spans(text, spans)   # matches of one label never overlap: mask them together
    return text, found, negated


_ABBREVIATION_END_RE = re.compile(r"\b[A-Za-z]\.$")
_OPENING_BRACKET_RE = re.compile(r"[(\[]\s*$")


def _find_codes(text: str, scale: Sequence[Option]) -> tuple[str, list[tuple[str, int]]]:
    """Option codes standing alone in running text (see the module docstring for the rules)."""
    found: list[tuple[str, int]] = []
    coded = sorted((o for o in scale if o.code), key=lambda o: -len(o.code or ""))
    for option in coded:
        code = option.code or ""
        if code.upper() == "I":  # the pronoun; a code only when it is the whole answer
            continue
        pattern = re.compile(r"(?<![\w'])" + re.escape(code) + r"(?![\w'])", re.IGNORECASE)
        spans: list[tuple[int, int]] = []   # this code's matches found so far (later in the text)
        for m in reversed(list(pattern.finditer(text))):
            start, end, token = m.start(), m.end(), m.group()
            # What follows, with this code's later matches already blanked out.
            after = text[end:end + _WINDOW]
            if spans and spans[-1][0] < end + _WINDOW:   # the rules look at what comes first
                after = _mask_spans(after, [(a - end, b - end) for a, b in spans[-4:]])
            if re.match(r"\.[A-Za-z]", after) or _before(_ABBREVIATION_END_RE, text, start):
                continue  # an abbreviation such as "D.C." or "U.S."
            followed_by_word = bool(re.match(r"\s+[a-z]", after))
            strong = bool(_before(_STRONG_CODE_KEYWORD_RE, text, start))
            parenthesised = bool(_before(_OPENING_BRACKET_RE, text, start) and re.match(r"\s*[)\]]", after))
            if token.upper() == "A" and followed_by_word and not strong:
                continue  # the article: "A lot of the time", "is a bit"
            if token != token.upper() and not (
                    strong or parenthesised
                    or (_before(_CODE_KEYWORD_RE, text, start) and not followed_by_word)):
                continue  # a lowercase letter in running text is a word, not a code
            found.append((token, option.value))
            spans.append((start, end))
        text = _mask_spans(text, spans)
    return text, found


def _parse_text(text: str, scale: Sequence[Option]) -> ParsedAnswer:
    """Free-text answer → ParsedAnswer (no JSON handling)."""
    t = _mask_all(normalise(text), _MARKUP_RE)
    if not t.strip():
        return _EMPTY if not text.strip() else ParsedAnswer(
            None, "unparseable", "the reply holds only markup (a script block or tags with attributes), no answer")
    refusal = is_refusal(t)
    codes = {o.code.lower(): o.value for o in scale if o.code}

    # The whole answer is a code: "D", "(d)", "Option D", "My answer is D", "**B**".
    core = _core(t)
    if core.lower() in codes:
        return _answered(codes[core.lower()], refusal)

    masked = _mask_scale_description(t, scale)
    masked, labels, negated = _find_labels(masked, scale)
    masked, code_hits = _find_codes(masked, scale)
    mentions: list[tuple[str, float]] = [(s, float(v)) for s, v in labels + code_hits]
    mentions += [(m.group(), float(m.group())) for m in _NUMBER_RE.finditer(masked)]

    distinct = sorted({x for _, x in mentions})
    if len(distinct) == 1:
        value = _on_scale(distinct[0], scale)
        if value is not None:
            return _answered(value, refusal)
        if refusal:
            return _REFUSAL
        shown = next(s for s, x in mentions if x == distinct[0])
        return ParsedAnswer(None, "out_of_range",
                            f"{shown} is not a value of the scale ({_scale_text(scale)})")
    if refusal:
        return _REFUSAL
    if len(distinct) > 1:
        return ParsedAnswer(None, "unparseable",
                            "ambiguous: the answer mentions several values ("
                            + ", ".join(_fmt(x) for x in distinct) + ")")
    if negated:
        return ParsedAnswer(None, "unparseable",
                            f"the label '{negated[0]}' is negated; a negated label is not an answer")
    if codes and all(len(c) == 1 for c in codes) and re.fullmatch(r"[A-Za-z]", core):
        return ParsedAnswer(None, "out_of_range",
                            f"'{core}' is not a code of the scale ({_scale_text(scale)})")
    return ParsedAnswer(None, "unparseable",
                        f"no value of the scale ({_scale_text(scale)}) or label found in the answer")


# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------

_ANSWER_KEYS = ("answer", "rating", "response", "score", "value", "choice", "option")


def _parse_json_value(value: Any, scale: Sequence[Option], key: str) -> ParsedAnswer:
    """The value found under `key` → ParsedAnswer."""
    if isinstance(value, bool):
        return ParsedAnswer(None, "unparseable", f"the value of '{key}' is {str(value).lower()}, not a rating")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return ParsedAnswer(None, "unparseable", f"the value of '{key}' is {value}, not a rating")
        on_scale = _on_scale(value, scale)
        if on_scale is not None:
            return _answered(on_scale, False)
        return ParsedAnswer(None, "out_of_range",
                            f"{_fmt(value)} is not a value of the scale ({_scale_text(scale)})")
    if isinstance(value, str):
        return _parse_text(value, scale)
    if value is None:
        return ParsedAnswer(None, "unparseable", f"the value of '{key}' is null")
    kind = "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__
    return ParsedAnswer(None, "unparseable", f"the value of '{key}' is {kind}, not a rating")


def _with_refusal(result: ParsedAnswer, refusal: bool) -> ParsedAnswer:
    """Apply the text-wide refusal rule: a value → disclaimer; no value → refusal."""
    if result.status == "answered":
        return replace(result, disclaimer=result.disclaimer or refusal)
    if refusal or result.status == "refusal":
        return _REFUSAL
    return result


def parse_json_rating(text: str, scale: Sequence[Option], key: str = "answer") -> ParsedAnswer:
    """Parse an answer given as a JSON object (possibly in a ```json fence or amid prose).

    The value of `key` (matched exactly, else case-insensitively) may be an integer, a numeric
    string, a code or a label; anything else is unparseable or out of range, with the reason.

    Example:
        >>> scale = [Option(value=0, code="A", label="No"), Option(value=1, code="B", label="Yes")]
        >>> parse_json_rating('```json\\n{"answer": "B"}\\n```', scale).value
        1
        >>> parse_json_rating('{"answer": 7}', scale).status
        'out_of_range'
    """
    t = normalise(text)
    if not t.strip():
        return _EMPTY
    refusal = is_refusal(t)
    obj = find_json_object(t)
    if obj is None:
        return _REFUSAL if refusal else ParsedAnswer(None, "unparseable", "no JSON object found in the answer")
    present, value = lookup(obj, key)
    if not present:
        if refusal:
            return _REFUSAL
        keys = ", ".join(repr(str(k)) for k in obj) or "none"
        return ParsedAnswer(None, "unparseable", f"the JSON object has no key '{key}' (keys: {keys})")
    return _with_refusal(_parse_json_value(value, scale, key), refusal)


# Short replies ("D", "4", "Answer: B") repeat from trial to trial, and reading one takes tens of
# microseconds (refusal language, markup, codes): what a short reply read as on a scale is kept,
# at most _PARSED_SIZE of them (bench/RESULTS.md, issue 42). The answer is a pure function of the
# text and the scale's options (frozen), and ParsedAnswer is frozen, so one is shared.
_PARSED_CHARS = 64
_PARSED_SIZE = 4096
_parsed: dict[tuple[str, int], tuple[tuple[Option, ...], ParsedAnswer]] = {}


def parse_rating(text: str, scale: Sequence[Option]) -> ParsedAnswer:
    """Parse a free-text answer into a value of the scale.

    Reads numbers, option codes and anchor labels with the usual wrappers ("Answer: 4", "**4**",
    "4 - Agree", "My answer is D", "4/5", {"answer": 4}). Several different values make the answer
    ambiguous (unparseable); a single number off the scale is out of range; refusal language with
    no value is a refusal, and with a value sets `disclaimer`. A short reply read before on the
    same options is not read again (the same answer is returned).

    Example:
        >>> scale = [Option(value=1, label="Disagree"), Option(value=2, label="Agree")]
        >>> parse_rating("I would say 2.", scale)
        ParsedAnswer(value=2, status='answered', reason=None, disclaimer=False, text=None)
        >>> parse_rating("1 or 2", scale).status
        'unparseable'
        >>> parse_rating("2", scale) is parse_rating("2", scale)   # read once
        True
    """
    if len(text) > _PARSED_CHARS:
        return _parse_rating(text, scale)
    options = tuple(scale)
    # Keyed by the scale object; the options themselves are compared (by identity first), so a
    # scale freed and its id reused by other options is a miss, never a wrong answer.
    key = (text, id(scale))
    kept = _parsed.get(key)
    if kept is not None and kept[0] == options:
        return kept[1]
    parsed = _parse_rating(text, scale)
    if len(_parsed) >= _PARSED_SIZE:
        _parsed.clear()
    _parsed[key] = (options, parsed)
    return parsed


def _parse_rating(text: str, scale: Sequence[Option]) -> ParsedAnswer:
    t = normalise(text)
    if not t.strip():
        return _EMPTY
    if "{" in t:
        obj = find_json_object(t)
        if obj is not None:
            for key in _ANSWER_KEYS:
                present, _ = lookup(obj, key)
                if present:
                    return parse_json_rating(t, scale, key)
    return _parse_text(t, scale)


# --------------------------------------------------------------------------------------------
# A whole instrument in one answer
# --------------------------------------------------------------------------------------------

_ITEM_PREFIX_RE = re.compile(r"^(?:item|statement|question|q)[\s_#.-]*", re.IGNORECASE)


def _norm_id(key: Any) -> str:
    return _ITEM_PREFIX_RE.sub("", str(key).strip()).strip().lower()


def _line_re(item_ids: Sequence[str]) -> re.Pattern[str]:
    ids = sorted(item_ids, key=len, reverse=True)
    alternatives = "|".join(re.escape(i) for i in ids)
    return re.compile(
        r"^[\s>*_#|-]*(?:(?:item|statement|question|q)\s*#?\s*)?"
        rf"(?P<id>{alternatives})[*_]*\s*"
        r"(?:[:=)|]|\.(?!\w)|-(?!\d)|(?<=\d)\s)\s*(?P<rest>.*)$",
        re.IGNORECASE)


def _combine(results: list[ParsedAnswer], item_id: str) -> ParsedAnswer:
    """Several lines for one item: agreeing values are fine, different ones are ambiguous."""
    answered = [r for r in results if r.status == "answered"]
    values = sorted({r.value for r in answered if r.value is not None})
    if len(values) == 1:
        return replace(answered[0], disclaimer=any(r.disclaimer for r in answered))
    if len(values) > 1:
        return ParsedAnswer(None, "unparseable", f"conflicting answers for item {item_id} ("
                            + ", ".join(map(str, values)) + ")")
    return results[0]


def parse_ratings_block(text: str, item_ids: Sequence[str], scale: Sequence[Option],
                        as_json: bool) -> dict[str, ParsedAnswer]:
    """Parse one answer that rates many items: a JSON object or one "id: value" line per item.

    With `as_json`, the text is (or contains) an object such as {"1": 3, "2": 0}; otherwise lines
    like "1: 3", "1. 3", "Item 1: 3" or "- **1.** D". Returns one ParsedAnswer per requested id;
    ids with no answer are unparseable ("no answer for item X"); ids not requested are ignored.

    Example:
        >>> scale = [Option(value=v) for v in range(1, 6)]
        >>> got = parse_ratings_block("1: 3\\nItem 2: 5\\n9: 4", ["1", "2", "3"], scale, as_json=False)
        >>> {k: (v.value, v.status) for k, v in got.items()}
        {'1': (3, 'answered'), '2': (5, 'answered'), '3': (None, 'unparseable')}
    """
    t = normalise(text)
    if not t.strip():
        return {i: _EMPTY for i in item_ids}
    refusal = is_refusal(t)
    per_item: dict[str, list[ParsedAnswer]] = {i: [] for i in item_ids}

    if as_json:
        obj = find_json_object(t)
        if obj is None:
            missing = _REFUSAL if refusal else ParsedAnswer(None, "unparseable", "no JSON object found in the answer")
            return {i: missing for i in item_ids}
        wanted = {_norm_id(i): i for i in item_ids}
        if not any(_norm_id(k) in wanted for k in obj):
            nested = [v for v in obj.values() if isinstance(v, dict)]
            if len(nested) == 1:  # e.g. {"answers": {"1": 3, ...}}
                obj = nested[0]
        for k, v in obj.items():
            item_id = wanted.get(_norm_id(k))
            if item_id is not None:
                per_item[item_id].append(_parse_json_value(v, scale, str(k)))
    elif item_ids:
        pattern = _line_re(item_ids)
        by_lower = {i.lower(): i for i in item_ids}
        for line in t.splitlines():
            m = pattern.match(line)
            if m is None:
                continue
            item_id = m.group("id") if m.group("id") in per_item else by_lower[m.group("id").lower()]
            per_item[item_id].append(parse_rating(m.group("rest"), scale))

    any_answered = any(r.status == "answered" for rs in per_item.values() for r in rs)
    out: dict[str, ParsedAnswer] = {}
    for item_id in item_ids:
        results = per_item[item_id]
        if not results:
            out[item_id] = (_REFUSAL if refusal and not any_answered
                            else ParsedAnswer(None, "unparseable", f"no answer for item {item_id}"))
            continue
        result = _combine(results, item_id)
        if result.status == "answered" and refusal:
            result = replace(result, disclaimer=True)
        out[item_id] = result
    return out
