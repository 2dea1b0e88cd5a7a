"""A provider's refusal in its own words, and what to change when psyq knows it.

An HTTP 4xx that retrying cannot fix (not 408, 409, 425 or 429) is read into a
:class:`ProviderRefusal`: status, the error's ``code``, ``type``, ``param`` and ``message`` as
OpenAI (``{"error": {...}}``) and Anthropic (``{"type": "error", "error": {...}}``) send them,
or the body's text when it is neither. The backend prints the first refusal of each kind at once,
and stops the run after :data:`STOP_AFTER` identical ones (401, 403 and 404 after the first:
every later request would meet the same key or model). :data:`FIXES` holds what psyq knows to
suggest, matched on the refused parameter or words of the message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

STOP_AFTER = 5                    # identical refusals before the run stops
STOP_AT_ONCE = (401, 403, 404)    # a bad key, no access, no such model: every request would fail

KEY_FIX = "check the key in the environment variable named by the backend's `api_key_env`"
# (parameter refused, or a regular expression on the message) -> what to change in the study.
FIXES: tuple[tuple[str | None, str | None, str], ...] = (
    ("max_tokens", None, "this model wants `max_completion_tokens`: add `capabilities: {token_limit_field: "
                         "max_completion_tokens}` (or `capabilities: {profile: openai-reasoning}`) to the backend"),
    (None, r"max_completion_tokens", "this model wants `max_completion_tokens`: add `capabilities: "
                                     "{token_limit_field: max_completion_tokens}` to the backend"),
    ("temperature", None, "the model refuses this temperature: remove `temperature` from the backend (or set it "
                          "to 1), and add `capabilities: {temperature: default_only}` so psyq checks it before "
                          "sending"),
    ("top_p", None, "remove `top_p` from the backend; `capabilities: {top_p: false}` makes psyq check it"),
    ("logprobs", None, "the model returns no log probabilities: use `answer: text` or `answer: json`, and add "
                       "`capabilities: {logprobs: false}` so psyq checks it before sending"),
    ("top_logprobs", None, "the model returns no log probabilities: use `answer: text` or `answer: json`"),
    ("reasoning_effort", None, "remove `reasoning_effort` or give a value this model accepts"),
    ("response_format", None, "the model does not take a JSON schema: use `answer: text`, or add `capabilities: "
                              "{json_schema: instruction}` to ask for JSON by instruction only"),
    ("seed", None, "add `capabilities: {seed: false}` to the backend (psyq then sends no seed)"),
    ("thinking", None, "check `reasoning_budget`: Anthropic wants at least 1,024 tokens, below max_tokens"),
    ("model", None, "check the backend's `model` name against the provider's model list"),
    (None, r"(?i)model.*(not found|does not exist)", "check the backend's `model` name against the provider's "
                                                     "model list"),
    (None, r"(?i)(api key|api_key|authentication|unauthori[sz]ed)", KEY_FIX),
)


@dataclass(frozen=True)
class ProviderRefusal:
    """One refusal as the provider worded it.

    Example:
        >>> r = read_refusal(400, b'{"error": {"message": "Unsupported parameter: \\'max_tokens\\'", '
        ...                  b'"type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}')
        >>> r.describe()
        "HTTP 400 (unsupported_parameter, param max_tokens): Unsupported parameter: 'max_tokens'"
    """

    status: int
    message: str
    code: str | None = None
    type: str | None = None
    param: str | None = None

    def describe(self) -> str:
        """Status, code, parameter and the provider's message, as printed and stored."""
        tags = [t for t in (self.code or self.type, f"param {self.param}" if self.param else None) if t]
        return f"HTTP {self.status}" + (f" ({', '.join(tags)})" if tags else "") + f": {self.message}"

    def signature(self) -> tuple:
        """What makes two refusals 'the same': numbers in the message (token counts, ids) ignored."""
        return (self.status, self.code, self.param, re.sub(r"\d+", "N", self.message))

    def fix(self) -> str | None:
        """What to change, where psyq knows it (None otherwise)."""
        for param, pattern, fix in FIXES:
            if param is not None and self.param == param:
                return fix
            if pattern is not None and re.search(pattern, self.message):
                return fix
        return KEY_FIX if self.status == 401 else None


def read_refusal(status: int, body: bytes, limit: int = 500) -> ProviderRefusal:
    """The refusal in a 4xx body: OpenAI's and Anthropic's error objects, else the body's text.

    Example:
        >>> read_refusal(400, b'{"type": "error", "error": {"type": "invalid_request_error", '
        ...              b'"message": "max_tokens: Field required"}}').describe()
        'HTTP 400 (invalid_request_error): max_tokens: Field required'
        >>> read_refusal(400, b"<html>Bad Request</html>").describe()
        'HTTP 400: <html>Bad Request</html>'
    """
    text = body.decode("utf-8", "replace")
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        def field(name: str) -> str | None:
            value = error.get(name)
            return str(value)[:100] if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        return ProviderRefusal(status, _short(error["message"], limit), field("code"), field("type"), field("param"))
    if isinstance(error, str):   # some servers send {"error": "text"}
        return ProviderRefusal(status, _short(error, limit))
    return ProviderRefusal(status, _short(text, limit) or "(empty body)")


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
