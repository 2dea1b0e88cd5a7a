"""Finding the JSON object in a reply: the whole reply, a ``` fence, or an object embedded in
prose (a Python-style dict as a fallback), bounded so that deep nesting costs nothing; and reading
a key of it as a person would write it. Every kind that asks for a JSON answer reads it here.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

_FENCE_RE = re.compile(r"```[A-Za-z]*\s*(.*?)```", re.DOTALL)

# An answer object is shallow ({"answer": 3}, {"answers": {"1": 3}}): text nested deeper than
# this is not read as JSON at all (the decoders recurse per level and would overflow the stack),
# and at most this many "{" are tried as the start of an object embedded in prose.
MAX_JSON_DEPTH = 32
MAX_JSON_STARTS = 64
_BRACKET_RE = re.compile(r"[{}\[\]]")


def _nesting_depth(text: str) -> int:
    """The deepest nesting of brackets and braces in `text` (strings not considered: an upper bound)."""
    depth = deepest = 0
    for m in _BRACKET_RE.finditer(text):
        if m.group() in "{[":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def _balanced_object(text: str, start: int) -> str | None:
    """The {...} starting at text[start], braces balanced (strings not considered)."""
    depth = 0
    for m in re.compile(r"[{}]").finditer(text, start):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return text[start:m.end()]
    return None


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in the text: the whole text, a ``` fence, or embedded in prose.

    Python-style dicts with single quotes are accepted as a fallback. Text nested deeper than
    MAX_JSON_DEPTH holds no object (see there).

    Example:
        >>> find_json_object('Sure! {"answer": 3} Hope that helps.'), find_json_object("no object")
        ({'answer': 3}, None)
    """
    if _nesting_depth(text) > MAX_JSON_DEPTH:
        return None
    candidates = [text.strip()] + [m.group(1).strip() for m in _FENCE_RE.finditer(text)]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            obj = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    for tries, m in enumerate(re.finditer(r"\{", text)):
        if tries >= MAX_JSON_STARTS:
            break
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            snippet = _balanced_object(text, m.start())
            if snippet is None:
                continue
            try:
                obj = ast.literal_eval(snippet)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
        if isinstance(obj, dict):
            return obj
    return None


def lookup(obj: Mapping[Any, Any], key: str) -> tuple[bool, Any]:
    """Whether `obj` has `key` (else the same key in other case or with spaces around it), and its value.

    Example:
        >>> lookup({" Answer ": 2}, "answer"), lookup({}, "answer")
        ((True, 2), (False, None))
    """
    if key in obj:
        return True, obj[key]
    for k, v in obj.items():
        if str(k).strip().lower() == key.strip().lower():
            return True, v
    return False, None
