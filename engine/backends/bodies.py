"""The bytes of one exchange: a request's body as sent and stored (compact UTF-8 JSON, by one
encoder made once), a reply read at most MAX_BODY_BYTES (or its backend's own bound), and an
unreadable reply as kept with its trial (cut to KEPT_BODY_CHARS).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from psyq.engine.files.json_text import json_encoder

if TYPE_CHECKING:
    import aiohttp

    from psyq.engine.backends.base import ChatRequest

# A reply body is read up to this size; a larger one is not a chat answer (a rating, a free text,
# even 200 logprob alternatives are kilobytes) and is stored cut, as missing (`too_long`).
MAX_BODY_BYTES = 4 * 2**20
KEPT_BODY_CHARS = 64_000          # how much of an unreadable or oversized body is stored

# How a request body is sent: compact UTF-8 JSON, by one encoder made once.
compact_json = json_encoder(ensure_ascii=False, separators=(",", ":"))


def request_body(backend: Any, request: ChatRequest) -> str:
    """The body `backend` sends for `request`: its payload as compact UTF-8 JSON (what the store
    keeps as the trial's request, byte for byte what went out; no headers, so no key).

    Example:
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.backends.base import ChatRequest
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> request_body(backend, ChatRequest(messages=({"role": "user", "content": "Zoë?"},), max_tokens=8))
        '{"model":"m","messages":[{"role":"user","content":"Zoë?"}],"max_tokens":8}'
    """
    return compact_json(backend.payload(request))


async def read_bounded(response: aiohttp.ClientResponse, limit: int = MAX_BODY_BYTES) -> tuple[bytes, bool]:
    """The response body, at most `limit` bytes of it (a chat reply's MAX_BODY_BYTES unless told);
    True when there was more (the rest is never read)."""
    content = response.content
    if content.is_eof():
        # The whole body arrived with the head (a chat reply nearly always does) and the parser
        # is done with it: taken as it is, without a read per chunk.
        body = content.read_nowait()
        return (body[:limit], True) if len(body) > limit else (body, False)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def kept_body(body: bytes, truncated: bool = False) -> dict[str, Any]:
    """An unreadable reply as stored: its text, cut to KEPT_BODY_CHARS, flagged when cut.

    Example:
        >>> kept_body(b"<html>oops</html>")
        {'unreadable_body': '<html>oops</html>', 'truncated': False}
    """
    text = body.decode("utf-8", "replace")
    cut = len(text) > KEPT_BODY_CHARS
    return {"unreadable_body": text[:KEPT_BODY_CHARS], "truncated": truncated or cut}
