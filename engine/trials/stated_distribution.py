"""A distribution the respondent states (`answer: verbalized`): one probability per option, read
from the forms models write, normalised, and refused with the reason when it is not one.

Meister, Guestrin & Hashimoto (*Benchmarking distributional alignment of large language models*,
NAACL 2025) ask the model for the distribution itself, in words or as JSON, beside sampling and
log-probabilities; psyq asks for a JSON object with one probability per option and reads:

* the object keyed by an option's code (``"A"``), value (``"0"``) or label (``"Describes me very
  well"``), whole, in a ``` fence or in prose, or nested once (``{"probabilities": {...}}``); or
  lines such as ``A: 40%`` / ``B = 0.2`` (a ``Total: 100%`` line is passed over);
* each probability as a number (``0.4``), a percentage (``"40%"``) or a fraction (``"2/5"``);
  numbers that sum to 100 are read as percentages.

What was done to read it is said in the answer's ``reason`` (None when the model wrote
probabilities that sum to 1): percentages divided by 100, fractions, and a sum within the
tolerance renormalised to 1. Refused as ``unparseable`` with the reason (and so re-asked up to the
protocol's ``reask_limit``): no probabilities at all, a probability that is not a number, a
negative one, percentages mixed with plain numbers, an option given twice, an option left out, a
key that names no option, and a sum further from 1 than the tolerance (on the probability scale,
after percentages are read: 0.02 by default, ``protocol.verbalized.tolerance``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from psyq.engine.trials.json_object import find_json_object
from psyq.engine.trials.parsing import ParsedAnswer, is_refusal, normalise
from psyq.engine.trials.scale import Option

DEFAULT_TOLERANCE = 0.02
"""How far the stated probabilities may sum from 1 and still be read (then renormalised)."""

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_VALUE_RE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?:/\s*(?P<den>{_NUMBER}))?\s*(?P<pct>%)?\s*$")
# "A: 40%", "- **B** = 0.2", "Describes me very well: 2/5": a key, ':' or '=', one probability.
_LINE_RE = re.compile(rf"^[\s>*_#|-]*(?P<key>[^:=\n]*?[^\s:=*_])[*_]*\s*[:=]\s*[*_]*(?P<value>{_NUMBER}\s*"
                      rf"(?:/\s*{_NUMBER})?\s*%?)[*_]*\s*[.,;]?\s*$")
_KEY_WRAP = " \t*_`\"'()[]{}<>.:;"
_KEY_PREFIX_RE = re.compile(r"^(?:option|choice|letter|answer)\s+", re.IGNORECASE)
_TOTAL_KEYS = {"total", "sum", "sum total"}


def option_name(option: Option) -> str:
    """How a stated distribution names `option`: its code, else its value.

    Example:
        >>> option_name(Option(value=0, code="A")), option_name(Option(value=3))
        ('A', '3')
    """
    return option.code if option.code else str(option.value)


def _key_table(scale: Sequence[Option]) -> dict[str, int]:
    """Every way a key may name an option (lower case): label, value, code (a code wins)."""
    table: dict[str, int] = {}
    for o in scale:
        if o.label:
            table[" ".join(o.label.lower().split())] = o.value
    for o in scale:
        table[str(o.value)] = o.value
    for o in scale:
        if o.code:
            table[o.code.strip().lower()] = o.value
    return table


def _clean_key(key: Any) -> str:
    text = " ".join(str(key).split()).strip(_KEY_WRAP)
    return _KEY_PREFIX_RE.sub("", text).strip(_KEY_WRAP).lower()


def _number(value: Any) -> tuple[float, str] | str:
    """(probability as written, its form: 'number' | 'percent' | 'fraction'), or why it is none."""
    if isinstance(value, bool) or value is None:
        return f"{value!r} is not a number"
    if isinstance(value, (int, float)):
        return (float(value), "number") if math.isfinite(value) else f"{value!r} is not a finite number"
    if not isinstance(value, str):
        return f"{value!r} is not a number"
    m = _VALUE_RE.match(value)
    if m is None:
        return f"'{value}' is not a number, a percentage or a fraction"
    number = float(m.group("num"))
    if m.group("den") is not None:
        den = float(m.group("den"))
        if den == 0:
            return f"'{value}' divides by zero"
        number /= den
        return (number / 100, "percent") if m.group("pct") else (number, "fraction")
    return (number / 100, "percent") if m.group("pct") else (number, "number")


def _pairs_from_text(text: str) -> list[tuple[str, Any]] | None:
    """(key, value) pairs from a JSON object in `text`, else from its `key: value` lines."""
    obj = find_json_object(text) if "{" in text else None
    if obj is not None:
        return list(obj.items())
    pairs = [(m.group("key"), m.group("value").strip()) for line in text.splitlines()
             if (m := _LINE_RE.match(line)) is not None]
    return pairs or None


def _unnest(pairs: list[tuple[str, Any]], keys: Mapping[str, int]) -> list[tuple[str, Any]]:
    """The pairs of a single nested object ({"probabilities": {...}}) when no key names an option."""
    if any(_clean_key(k) in keys for k, _ in pairs):
        return pairs
    nested = [v for _, v in pairs if isinstance(v, dict)]
    return list(nested[0].items()) if len(nested) == 1 else pairs


def read_stated_distribution(text: str, scale: Sequence[Option],
                             tolerance: float = DEFAULT_TOLERANCE) -> ParsedAnswer:
    """The distribution a reply states over the options of `scale`, as an answer without a value
    (``distribution`` set; ``reason`` says what was done to read it, None when nothing was), or
    a missing answer saying why it is not one (see the module docstring for the forms and rules).

    Example:
        >>> scale = [Option(value=v, code=c) for v, c in enumerate("ABC")]
        >>> got = read_stated_distribution('{"A": "20%", "B": "50%", "C": "30%"}', scale)
        >>> got.status, got.distribution, got.reason
        ('answered', {0: 0.2, 1: 0.5, 2: 0.3}, 'read as percentages (divided by 100)')
        >>> read_stated_distribution("A: 2/5\\nB: 2/5", scale).reason
        'the stated distribution gives no probability for option C'
    """
    t = normalise(text)
    if not t.strip():
        return ParsedAnswer(None, "empty", "the answer is empty")
    names = {o.value: option_name(o) for o in scale}
    keys = _key_table(scale)
    pairs = _pairs_from_text(t)
    if pairs is None:
        if is_refusal(t):
            return ParsedAnswer(None, "refusal", "the answer declines to give probabilities "
                                                 "(refusal or AI disclaimer language, no distribution)")
        return _unreadable(f"no probabilities found; expected one for each option ({', '.join(names.values())})")
    pairs = _unnest(pairs, keys)
    stated: dict[int, float] = {}
    forms: set[str] = set()
    for key, raw in pairs:
        name = _clean_key(key)
        if name in _TOTAL_KEYS:
            continue
        if name not in keys:
            return _unreadable(f"the stated distribution names '{key}', which is not an option (options: "
                               f"{', '.join(names.values())})")
        value = keys[name]
        if value in stated:
            return _unreadable(f"the stated distribution gives option {names[value]} twice")
        number = _number(raw)
        if isinstance(number, str):
            return _unreadable(f"the probability stated for option {names[value]}: {number}")
        stated[value], form = number
        if number[0] != 0:
            forms.add(form)
    missing = [names[o.value] for o in scale if o.value not in stated]
    if missing:
        return _unreadable(f"the stated distribution gives no probability for option{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(missing)}")
    negative = [f"{names[v]}: {p:g}" for v, p in stated.items() if p < 0]
    if negative:
        return _unreadable(f"the stated distribution holds a negative probability ({', '.join(negative)})")
    if "percent" in forms and forms - {"percent"}:
        return _unreadable("the stated distribution mixes percentages with plain numbers or fractions; write every "
                           "probability the same way")
    done = []
    total = sum(stated.values())
    if forms == {"percent"}:
        done.append("read as percentages (divided by 100)")
    elif forms <= {"number"} and abs(total - 100) <= tolerance * 100 and max(stated.values()) > 1:
        stated = {v: p / 100 for v, p in stated.items()}
        total /= 100
        done.append("numbers summing to 100 read as percentages (divided by 100)")
    if "fraction" in forms:
        done.append("fractions read as probabilities")
    if total <= 0:
        return _unreadable("every stated probability is 0")
    if abs(total - 1) > tolerance:
        return _unreadable(f"the stated probabilities sum to {total:.4g}, not 1 (tolerance {tolerance:g})")
    if abs(total - 1) > 1e-9:   # more than a float's last digits: renormalised, and said so
        done.append(f"renormalised from a sum of {total:.4g}")
    else:
        total = 1.0
    distribution = {o.value: stated[o.value] / total for o in scale}
    return replace(ParsedAnswer(None, "answered", "; ".join(done) or None), distribution=distribution)


def _unreadable(why: str) -> ParsedAnswer:
    return ParsedAnswer(None, "unparseable", why)
