"""What the provider batch clients share: a batch's state, one result line, and plain HTTP calls.

A batch client (engine/backends/openai_batch.py, anthropic_batch.py) speaks one provider's batch
API through the backend's own ``aiohttp`` session and headers, so the API key is read from the
environment as for online requests and never appears in a batch file, the store or a log line.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Iterator


from psyq.engine.backends.base import HttpBackend


from psyq.engine.files.errors import BatchApiError

# Transient failures of a batch-API call (submit, poll, download) are retried this many times,
# waiting 1, 2, 4 … s: a poll that fails once must not end a run that waited hours.
API_RETRIES = 6
TRANSIENT = {408, 409, 425, 429, 500, 502, 503, 504, 529}
# Statuses that say the server did not act on the request: the only retries of a call that
# creates something (a lost reply to a create may mean it was created: that is not retried).
NOT_DONE = {429, 503, 529}


@dataclass
class BatchState:
    """A batch as the provider reports it, in terms common to every provider.

    `status` is the provider's own word; `ended` says whether it will change no more;
    `outputs` are the places (file ids or URLs) to download result lines from.
    """

    batch_id: str
    status: str
    ended: bool
    outputs: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)   # batch-level errors (e.g. a rejected input file)


@dataclass(frozen=True)
class BatchLine:
    """One request's outcome: the reply body (as the online endpoint would send it) or why there is none."""

    custom_id: str
    body: dict[str, Any] | None
    error: str | None = None


async def call(backend: HttpBackend, method: str, url: str, *, json_body: Any = None,
               data: Any = None, raw: bool = False, idempotent: bool = True) -> Any:
    """One batch-API call with bounded retries of transient failures; the JSON reply (or bytes if `raw`).

    A call that is not `idempotent` (creating a batch) is retried only after a status saying the
    server did nothing (429, 503, 529): a dropped connection or a 500 raise at once (status None
    or the status), and the caller finds out whether the batch was created.

    Example:
        >>> state = asyncio.run(call(backend, "GET", backend.base_url + "/batches/b1"))  # sends a request  # doctest: +SKIP
    """
    assert backend._session is not None, "call backend.start() first"
    import aiohttp   # imported by the backend's start(): a look-up
    headers = dict(backend.headers())
    delay = 1.0
    for attempt in range(API_RETRIES + 1):
        try:
            async with backend._session.request(method, url, json=json_body, data=data, headers=headers) as response:
                body = await response.read()
                status = response.status
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            if attempt == API_RETRIES or not idempotent:
                raise BatchApiError(f"{method} {url}: {type(exc).__name__} after {attempt + 1} attempts") from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)
            continue
        if status in (TRANSIENT if idempotent else NOT_DONE) and attempt < API_RETRIES:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)
            continue
        if status >= 400:
            text = backend._redact(" ".join(body.decode("utf-8", "replace").split())[:300])
            raise BatchApiError(f"{method} {url}: HTTP {status}: {text}", status=status,
                                fatal=status in (401, 403))
        if raw:
            return body
        try:
            return json.loads(body)
        except ValueError:
            raise BatchApiError(f"{method} {url}: the reply is not JSON") from None
    raise AssertionError("unreachable")


def jsonl(rows: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> bytes:
    """Rows as JSON Lines (UTF-8, one compact object per line).

    Example:
        >>> jsonl([{"a": 1}, {"b": "é"}])
        b'{"a":1}\\n{"b":"\\xc3\\xa9"}\\n'
    """
    return b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in rows)


def read_jsonl(data: bytes) -> Iterator[dict[str, Any] | None]:
    """The objects of a JSON Lines file; None for a line that is not a JSON object (blank lines skipped).

    Example:
        >>> list(read_jsonl(b'{"a":1}\\n\\nnot json\\n'))
        [{'a': 1}, None]
    """
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            yield None
            continue
        yield obj if isinstance(obj, dict) else None
