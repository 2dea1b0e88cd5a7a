"""How fast a backend's requests go out: an even pacer of requests or tokens a minute
(:class:`RateLimiter`), what a request costs the tokens pacer (:func:`token_cost`), and a
server's ``Retry-After`` (:func:`parse_retry_after`), which holds the pacers back.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psyq.engine.backends.base import ChatRequest


class RateLimiter:
    """Paces events so that at most `per_minute` units pass per minute, evenly spread.

    Pacing (rather than bursting up to a window's budget) keeps a server that counts a sliding
    window from ever seeing more than its limit, which is what keeps 429s near zero.

    Example:
        >>> limiter = RateLimiter(600)   # one unit every 0.1 s
    """

    def __init__(self, per_minute: float):
        self.interval = 60.0 / per_minute
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def acquire(self, units: float = 1.0) -> None:
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + units * self.interval
        if start > now:
            await asyncio.sleep(start - now)

    def pause_until(self, t: float) -> None:
        """Hold every later request until monotonic time `t` (a server asked us to wait)."""
        self._next = max(self._next, t)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds form; dates are ignored).

    Example:
        >>> parse_retry_after("1.5"), parse_retry_after(None), parse_retry_after("soon")
        (1.5, None, None)
    """
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def token_cost(request: ChatRequest) -> float:
    """What a request costs the tokens-per-minute pacer: a rough count (4 characters a token,
    enough to pace a budget) of its messages, plus its answer budget.

    Example:
        >>> from psyq.engine.backends.base import ChatRequest
        >>> token_cost(ChatRequest(messages=({"role": "user", "content": "12345678"},), max_tokens=10))
        12.0
    """
    chars = sum(len(m.get("content", "")) for m in request.messages)
    return chars / 4 + request.max_tokens
