"""Bounding the length of a JSON reply: the free-text strings of a JSON schema given a `maxLength`
(and, for a model that needs it, a `pattern` of the characters it may write), so that the whole
reply fits in `max_tokens` and llama-server's grammar never cuts it inside a string.
"""

from __future__ import annotations

import json
from typing import Any


def bound_free_text(schema: dict[str, Any], max_tokens: int, chars: str | None = None) -> dict[str, Any]:
    """A copy of a JSON schema whose free-text strings carry a `maxLength`, so that the whole
    reply fits in `max_tokens` (llama-server's grammar enforces `maxLength`; the schema sets the
    shape of a reply, not its length, and a reply cut off inside a string is not JSON).

    The characters left after the reply's skeleton (braces, keys, enum values: about 2 characters
    a token, plus the whitespace the grammar allows) are shared equally among the free strings, at
    CHARS_PER_TOKEN characters a token (SmolLM2's replies measured 2.7 to 3.8) and at least
    MIN_FIELD_CHARS. A length in characters bounds tokens only while a character is not several
    tokens (emoji, other scripts): `chars`, a regex character class (the catalogue's
    `json_text_chars`), also keeps the text to those characters, as a `pattern` of that class
    repeated at most `maxLength` times (llama-server's grammar follows the pattern). Strings
    with an `enum`, `const`, `pattern` or their own `maxLength` are left as they are; a schema
    without free strings is returned unchanged.

    Example:
        >>> s = {"type": "object", "properties": {"you": {"type": "string"}, "other": {"type": "string"}}}
        >>> bounded = bound_free_text(s, 120)
        >>> bounded["properties"]["you"]["maxLength"], "maxLength" in s["properties"]["you"]
        (126, False)
        >>> bound_free_text(s, 120, "[a-z ]")["properties"]["you"]["pattern"]
        '^[a-z ]{0,126}$'
    """
    fields = _free_strings(schema)
    if not fields:
        return schema
    free_tokens = max(0, max_tokens - _skeleton_tokens(schema))
    per_field = max(MIN_FIELD_CHARS, int(free_tokens * CHARS_PER_TOKEN / fields))
    return _with_max_length(schema, per_field, chars)


CHARS_PER_TOKEN = 2.5     # free text; SmolLM2-135M-Instruct's LEAS replies: 2.7-3.8 characters a token
MIN_FIELD_CHARS = 16


def _is_free_string(node: Any) -> bool:
    return (isinstance(node, dict) and node.get("type") == "string"
            and not {"enum", "const", "pattern", "maxLength", "format"} & node.keys())


def _children(node: dict[str, Any]) -> list[Any]:
    kids = list((node.get("properties") or {}).values())
    if isinstance(node.get("items"), dict):
        kids.append(node["items"])
    return kids


def _free_strings(node: Any) -> int:
    if _is_free_string(node):
        return 1
    return sum(_free_strings(k) for k in _children(node)) if isinstance(node, dict) else 0


def _skeleton_tokens(node: Any) -> int:
    # An estimate of the tokens a reply spends outside free text: braces, quoted keys, colons,
    # commas, enum values, and a token of whitespace around each.
    if not isinstance(node, dict):
        return 1
    if _is_free_string(node):
        return 2
    if "enum" in node:
        return 1 + max((len(json.dumps(v)) for v in node["enum"]), default=1) // 2
    properties = node.get("properties") or {}
    if properties:
        return 2 + sum(3 + (len(key) + 3) // 2 + _skeleton_tokens(v) for key, v in properties.items())
    if isinstance(node.get("items"), dict):
        return 2 + _skeleton_tokens(node["items"])
    return 2


def _with_max_length(node: Any, length: int, chars: str | None) -> Any:
    if _is_free_string(node):
        return {**node, "maxLength": length, **({"pattern": f"^{chars}{{0,{length}}}$"} if chars else {})}
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if isinstance(node.get("properties"), dict):
        out["properties"] = {k: _with_max_length(v, length, chars) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _with_max_length(node["items"], length, chars)
    return out
