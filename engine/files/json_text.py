"""JSON text exactly as ``json.dumps`` writes it, from an encoder made once.

``json.dumps`` builds a new encoder on every call with any setting other than its defaults (and
then the C encoder inside it): on a short object, about as long as the encoding itself, and psyq
encodes a few objects per trial (the request body, the trial's key, the stored reply).
"""

from __future__ import annotations

import json
from typing import Any, Callable


def json_encoder(*, sort_keys: bool = False, ensure_ascii: bool = True, separators: tuple[str, str] = (", ", ": "),
                 default: Callable[[Any], Any] | None = None, allow_nan: bool = True) -> Callable[[Any], str]:
    """``json.dumps(obj, ...)`` with these settings, as a function whose encoder is built once:
    the same text, byte for byte, for any object without cycles.

    It keeps no circular-reference marks (what psyq encodes has no cycles: payloads it builds,
    replies parsed from JSON), which also makes it safe to share between threads; an object nested
    too deep raises RecursionError as ``json.dumps`` does. Where Python has no C encoder, it is
    ``json.dumps`` itself.

    Example:
        >>> compact = json_encoder(ensure_ascii=False, separators=(",", ":"))
        >>> value = {"b": [1, 2.5, None, True], "a": "café"}
        >>> compact(value)
        '{"b":[1,2.5,null,true],"a":"café"}'
        >>> compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        True
        >>> json_encoder(sort_keys=True)(value) == json.dumps(value, sort_keys=True)
        True
    """
    settings = dict(sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=separators, default=default,
                    allow_nan=allow_nan)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:   # pragma: no cover - CPython has it
        return lambda obj: json.dumps(obj, **settings)
    base = json.JSONEncoder(**settings)
    encode_string = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    encode = make(None, base.default, encode_string, None, base.key_separator, base.item_separator,
                  base.sort_keys, base.skipkeys, base.allow_nan)
    return lambda obj: "".join(encode(obj, 0))
