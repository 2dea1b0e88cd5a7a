"""Endpoint pools: one backend served by several replicas of the same model (`base_urls:`).

A study may list several base URLs for one backend (e.g. four vLLM or llama.cpp servers each
holding the same model). Each request goes to the *least-loaded healthy* replica: the one with
the fewest requests in flight (ties: the one that has been sent fewest so far), among those with
a free slot. Limits:

- ``concurrency`` is **per endpoint**: each replica gets at most that many requests in flight,
  so two replicas at ``concurrency: 4`` carry 8 (a replica is a server with its own slots);
- ``requests_per_minute`` and ``tokens_per_minute`` stay **per backend** (shared by the pool):
  a provider's rate limit belongs to the account and key, not to one URL.

Health. A replica whose requests fail ``FAIL_AFTER`` times in a row (connection refused, reset or
timed out, HTTP 5xx, a reply that is not a chat answer) is taken out for ``endpoint_cooldown_s``
seconds; the failed requests are retried on the others under the backend's retry policy. When
the cool-down ends, *one* request is let through as a probe (half-open): an answer brings the
replica back, another failure takes it out again for twice as long (at most
``MAX_COOLDOWN_FACTOR`` times the cool-down). A 429 or 4xx is an answer (the server is alive)
and does not count against it. Every change is printed to standard error and the per-endpoint
counts go into the run's manifest; the store records which endpoint answered each trial.

The first URL of the list names the pool in the backend's identity, so replicas do not change
trial ids or the run id: ``base_url: A`` and ``base_urls: [A, B]`` are one run.

Pure bookkeeping, no I/O: the backend (engine/backends/base.py) sends the requests.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Callable

from psyq.engine.backends.endpoint import normalise_endpoint

FAIL_AFTER = 3              # failures in a row that take a replica out
MAX_COOLDOWN_FACTOR = 8     # a replica that keeps failing its probes waits at most 8 × the cool-down


@dataclass
class Endpoint:
    """One replica and its live counters."""

    url: str                  # the base URL as written (no trailing slash): where requests go
    name: str                 # normalised (engine/backends/endpoint.py): what the store and manifest record
    in_flight: int = 0
    requests: int = 0
    answered: int = 0         # attempts that got an HTTP answer (any status the server chose to send)
    failures: int = 0         # attempts that counted against its health
    fails_in_a_row: int = 0
    down_until: float = 0.0   # monotonic time its cool-down ends; 0: in service
    times_taken_out: int = 0
    probing: bool = False     # a half-open probe is in flight

    def summary(self) -> dict:
        """The counters as recorded in the manifest."""
        return {"requests": self.requests, "answered": self.answered, "failures": self.failures,
                "times_taken_out": self.times_taken_out, "in_service": self.down_until == 0.0}


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


class EndpointPool:
    """Chooses a replica for each request and keeps each replica's health.

    Example:
        >>> pool = EndpointPool(["http://a:8000/v1", "http://b:8000/v1"], concurrency=2, cooldown_s=10)
        >>> e = pool.try_acquire(); e.name, e.in_flight
        ('http://a:8000/v1', 1)
        >>> pool.try_acquire().name      # the other one has fewer in flight
        'http://b:8000/v1'
        >>> pool.release(e, healthy=True)
    """

    def __init__(self, urls: list[str], *, concurrency: int, cooldown_s: float, backend_id: str = "",
                 clock: Callable[[], float] = time.monotonic, log: Callable[[str], None] = _stderr):
        self.endpoints = [Endpoint(u.rstrip("/"), normalise_endpoint(u)) for u in urls]
        self.concurrency, self.cooldown_s = concurrency, cooldown_s
        self.backend_id, self.clock, self.log = backend_id, clock, log
        self._changed: asyncio.Event | None = None

    # --- choosing ------------------------------------------------------------------------
    def try_acquire(self) -> Endpoint | None:
        """The replica for the next request, now, or None when every usable one is full or out.

        A replica whose cool-down has ended and that has nothing in flight takes one request as
        its probe, before the others (so a recovered server comes back promptly).
        """
        now = self.clock()
        probes = [e for e in self.endpoints if e.down_until and now >= e.down_until and not e.probing
                  and e.in_flight == 0]
        if probes:
            chosen = probes[0]
            chosen.probing = True
        else:
            ready = [e for e in self.endpoints if not e.down_until and e.in_flight < self.concurrency]
            if not ready:
                return None
            chosen = min(ready, key=lambda e: (e.in_flight, e.requests))
        chosen.in_flight += 1
        chosen.requests += 1
        return chosen

    async def acquire(self) -> Endpoint:
        """:meth:`try_acquire`, waiting for a free slot or the end of a cool-down."""
        if self._changed is None:
            self._changed = asyncio.Event()
        while True:
            chosen = self.try_acquire()
            if chosen is not None:
                return chosen
            self._changed.clear()
            waits = [e.down_until - self.clock() for e in self.endpoints if e.down_until and not e.probing]
            timeout = max(0.0, min(waits)) + 0.001 if waits else None
            try:
                await asyncio.wait_for(self._changed.wait(), timeout)
            except TimeoutError:
                pass   # a cool-down ended: try again

    # --- health --------------------------------------------------------------------------
    def release(self, endpoint: Endpoint, *, healthy: bool, why: str = "") -> None:
        """One attempt on `endpoint` ended: it answered (`healthy`) or failed (and why)."""
        endpoint.in_flight -= 1
        was_probe, endpoint.probing = endpoint.probing, False
        if healthy:
            endpoint.answered += 1
            endpoint.fails_in_a_row = 0
            if endpoint.down_until:
                endpoint.down_until = 0.0
                self.log(f"note: backend '{self.backend_id}': endpoint {endpoint.name} answered again; back in service")
        else:
            endpoint.failures += 1
            endpoint.fails_in_a_row += 1
            if was_probe or (not endpoint.down_until and endpoint.fails_in_a_row >= FAIL_AFTER):
                self._take_out(endpoint, why)
        if self._changed is not None:
            self._changed.set()

    def _take_out(self, endpoint: Endpoint, why: str) -> None:
        endpoint.times_taken_out += 1
        factor = min(MAX_COOLDOWN_FACTOR, 2 ** (endpoint.times_taken_out - 1))
        pause = self.cooldown_s * factor
        endpoint.down_until = self.clock() + pause
        others = sum(1 for e in self.endpoints if not e.down_until)
        self.log(f"note: backend '{self.backend_id}': endpoint {endpoint.name} taken out for {pause:g} s after "
                 f"{endpoint.fails_in_a_row} failures in a row (last: {why or 'unknown'}); "
                 f"{others} of {len(self.endpoints)} endpoints in service; it is probed again after the pause")

    def summary(self) -> dict[str, dict]:
        """Per endpoint: requests, answers, failures, times taken out (for the manifest)."""
        return {e.name: e.summary() for e in self.endpoints}
