"""What every backend shares: the request and result types, configuration, limits and retries.

A backend turns a :class:`ChatRequest` into a :class:`ChatResult` over HTTP. Subclasses only say
how to build the payload and read the response (:class:`HttpBackend`); the HTTP client (one
``aiohttp.ClientSession``), concurrency, request and token rate limits, timeouts and bounded
retries with exponential backoff and jitter (honouring ``Retry-After``) live here once (the
pacers in `pacing.py`, the bytes of a request and a reply in `bodies.py`).
Secrets: an API key is read from the environment variable the configuration names, at request
time, and put in a header only; it is never part of a payload, an identity, a log line or an
error message.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from psyq.engine.backends.bodies import KEPT_BODY_CHARS, MAX_BODY_BYTES, kept_body, read_bounded, request_body
from psyq.engine.backends.endpoint import normalise_endpoint
from psyq.engine.backends.capabilities import (Capabilities, CapabilityOverride, capabilities_for,
    reasoning_allowance)
from psyq.engine.backends.pacing import RateLimiter, parse_retry_after, token_cost
from psyq.engine.backends.pool import EndpointPool
from psyq.engine.backends.provider_errors import STOP_AFTER, STOP_AT_ONCE, ProviderRefusal, read_refusal
from psyq.engine.backends.registry import BACKENDS, quoted_kinds
from psyq.engine.files.errors import BackendError, BackendUnreachable, ProviderRefused
from psyq.engine.files.fields import Id, StrictModel

if TYPE_CHECKING:
    import aiohttp

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
# Connection attempts that fail in a row (refused, unknown host, connect timeout) before the
# backend counts as unreachable and the run stops, rather than retrying every trial for minutes.
UNREACHABLE_AFTER = 20


class BackendConfig(StrictModel):
    """How to reach one model, as written under `backends:` in a study file."""

    id: Id
    # One of the registered backend kinds (engine/backends/registry.py), as the schema lists them.
    kind: str = Field(json_schema_extra=lambda schema: schema.update(enum=list(BACKENDS.names())))
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None          # the NAME of an environment variable, never the key
    temperature: float | None = Field(default=1.0, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)   # None: chosen by the protocol
    top_logprobs: int | None = Field(default=None, ge=1)  # answer: logprobs; None: the backend's default
    # Reasoning models (engine/backends/capabilities.py): OpenAI-style `reasoning_effort`, and the
    # reasoning tokens allowed on top of the answer budget (Anthropic: thinking.budget_tokens,
    # which switches extended thinking on). None: the provider's default.
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    reasoning_budget: int | None = Field(default=None, ge=1, le=200_000)
    # Corrections of the capability table for this backend (a row by name, or single fields).
    capabilities: CapabilityOverride | None = None
    concurrency: int = Field(default=4, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    backoff_s: float = Field(default=0.5, gt=0)           # first retry waits up to this, doubling
    max_backoff_s: float = Field(default=30.0, gt=0)
    # Provider batch APIs (engine/administer/send_batch.py): `mode: batch` sends the trials as OpenAI / Anthropic
    # batches (half price, answered within 24 h) instead of one request at a time.
    mode: Literal["online", "batch"] = "online"
    reasks: Literal["online", "batch"] = "online"   # batch mode: how corrective re-asks go out
    batch_size: int = Field(default=50_000, ge=1, le=100_000)  # requests per batch (OpenAI's limit: 50,000)
    batch_poll_s: float = Field(default=30.0, gt=0)       # first wait between status polls, growing ×1.5
    batch_max_poll_s: float = Field(default=600.0, gt=0)
    # Replicas of the same model (engine/backends/pool.py): `concurrency` is then per endpoint.
    base_urls: list[str] | None = Field(default=None, min_length=1)
    endpoint_cooldown_s: float = Field(default=10.0, gt=0)   # a failing replica's first pause
    # kind: local only: how psyq's own llama-server serves the requests (engine/backends/local_server.py,
    # SERVING): "reproducible" (the default: the same study gives the same answers) or "fast".
    serving: Literal["reproducible", "fast"] | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _registered_kind(cls, kind: Any) -> Any:
        # Worded as pydantic words a wrong literal, so that the message lists the known kinds.
        if not isinstance(kind, str) or kind not in BACKENDS:
            raise PydanticCustomError("literal_error", "Input should be {expected}",
                                      {"expected": quoted_kinds(BACKENDS.names())})
        return kind


@dataclass(frozen=True)
class ChatRequest:
    """One request: the messages and the sampling parameters that decide the answer."""

    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    top_logprobs: int | None = None       # ask for this many alternatives of each answer token
    json_schema: dict[str, Any] | None = None
    # The whole token limit is multiplied by this: 2 when a reply that ran out of its budget is
    # sent again (engine/administer/send_trial.py), 1 otherwise.
    budget_factor: int = 1


@dataclass
class ChatResult:
    """What came back: text, first-token alternatives (if asked), usage and the raw response."""

    text: str
    first_token_logprobs: dict[str, float] | None
    prompt_tokens: int | None
    completion_tokens: int | None
    raw: dict[str, Any]
    attempts: int = 1
    latency_s: float = 0.0
    # Set when the reply arrived but cannot be read as an answer: a status for every answer of
    # the trial (``unreadable_response``, ``too_long``) and why, in plain words.
    problem: str | None = None
    problem_reason: str | None = None
    # Why the first-token alternatives are unusable (null token, NaN …); only matters to a
    # request that asked for them (answer: logprobs), which then stores `unreadable_response`.
    logprobs_problem: str | None = None
    cached_tokens: int | None = None      # prompt tokens the server read from its prompt cache (None: not reported)
    endpoint: str | None = None           # the endpoint that answered (normalised base URL)
    # Part of completion_tokens the model spent reasoning (OpenAI completion_tokens_details.
    # reasoning_tokens; None: not reported). Anthropic reports no count: its thinking blocks are
    # kept in `raw` and counted inside output_tokens.
    reasoning_tokens: int | None = None
    # The reply ended because the token limit was reached (finish_reason "length", stop_reason
    # "max_tokens"), whatever it holds.
    budget_exhausted: bool = False
    # The request body this reply answers, as sent (JSON text; None for a reply not sent by psyq,
    # such as one read back from a batch's results).
    sent: str | None = None


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, status: int | None = None,
                 body: dict[str, Any] | None = None):
        super().__init__(reason)
        self.reason, self.retry_after, self.status, self.body = reason, retry_after, status, body


@dataclass
class BackendStats:
    """Live counters for the progress display and the manifest."""

    requests: int = 0
    retries: int = 0
    failures: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    retry_reasons: dict[str, int] = field(default_factory=dict)


class HttpBackend:
    """Base of HTTP backends: one ``aiohttp.ClientSession``, limits, bounded retries.

    Subclasses implement :meth:`endpoint`, :meth:`headers`, :meth:`payload` and :meth:`result`.

    The client is aiohttp itself, not httpx: on this project's two-core machines plain
    ``httpx.AsyncClient`` falls to ~350 requests/s at 64 concurrent requests and httpx over
    aiohttp's transport (``httpx-aiohttp``) reaches ~4,000, while aiohttp alone reaches ~10,000
    against the same zero-latency stub; the engine's own work per trial fits in the difference
    (measured in ``bench/overhead.py``, figures in ``bench/RESULTS.md``).
    """

    kind = "http"
    default_top_logprobs = 20  # the most OpenAI's API returns
    # What a kind of backend is, as the study's checks, the plan and the commands ask it:
    needs_model: ClassVar[bool] = True        # a study's entry must name its `model`
    needs_base_url: ClassVar[bool] = False    # ... and its server (`base_url` or `base_urls`)
    # psyq serves the model itself (a catalogue model or a GGUF file on its own llama-server):
    # no `base_url`, a `serving:` setting, the server's start counted in a plan.
    starts_server: ClassVar[bool] = False
    # The client of the provider's batch API (`mode: batch`); None: the kind has none.
    batch_client: ClassVar[type | None] = None
    # How a judge on this kind answers unless told (`psyq judge --answer`).
    judge_answer: ClassVar[str] = "json"
    # Why psyq cannot count this provider's tokens exactly (None: it asks the server's tokenizer).
    tokenizer_unavailable: ClassVar[str | None] = None
    # Where a reply names what the provider served (engine/results/served.py): the top-level
    # field of the response body holding the model (snapshot) that answered, and the one holding
    # the serving configuration's fingerprint; None: the provider does not say.
    served_model_field: ClassVar[str | None] = None
    fingerprint_field: ClassVar[str | None] = None
    # What a backend object holds, declared here with its default so that the rest of psyq asks
    # it rather than probing for it:
    # the folder where the server it starts (a kind that `starts_server`) writes its log; a run
    # points it at its directory; None: no log of its own (HTTP backends start no server).
    log_dir: Path | None = None
    # The replicas sharing its requests (`base_urls`, engine/backends/pool.py; their health goes in
    # the run's manifest); None: one endpoint.
    pool: EndpointPool | None = None
    # The most of a reply that is read (bodies.py): a chat answer's bound; an embeddings client
    # sizes its own to the texts of a request (engine/backends/embeddings.py).
    max_reply_bytes: int = MAX_BODY_BYTES

    def __init__(self, config: BackendConfig, *, base_url: str | None = None):
        self.config = config
        # Where a backend says what the user must see at once (the first refusal of each kind);
        # the run points it at its progress display.
        self.log: Any = lambda message: print(message, file=sys.stderr)
        self._refusals: dict[tuple, int] = {}
        urls = config.base_urls if config.base_urls and not base_url else None
        self.base_url = (base_url or config.base_url or (urls[0] if urls else "")).rstrip("/")
        self.stats = BackendStats()
        # What the model accepts (engine/backends/capabilities.py): decides the payload's fields.
        self.capabilities: Capabilities = capabilities_for(config.kind, self.base_url, config.model,
                                                           config.capabilities).reasoning_on(config)
        self._slots = asyncio.Semaphore(config.concurrency)
        # Several replicas: a pool chooses the endpoint of each request (engine/backends/pool.py).
        self.pool = (EndpointPool(urls, concurrency=config.concurrency, cooldown_s=config.endpoint_cooldown_s,
                                  backend_id=config.id) if urls and len(urls) > 1 else None)
        self._requests = RateLimiter(config.requests_per_minute) if config.requests_per_minute else None
        self._tokens = RateLimiter(config.tokens_per_minute) if config.tokens_per_minute else None
        self._session: aiohttp.ClientSession | None = None
        self._rng = random.Random()
        self._unreachable_in_a_row = 0

    @classmethod
    def create(cls, config: BackendConfig, *, log_dir: Any = None, log: Any = print) -> "HttpBackend":
        """The backend for `config` (not started); `log` is where a refusal the user must see at once
        is said, `log_dir` where a server psyq starts writes its log (unused here)."""
        backend = cls(config)
        backend.log = log
        return backend

    @classmethod
    def helper_config(cls, backend_id: str, *, base_url: str | None = None, model: str | None = None,
                      api_key_env: str | None = None) -> BackendConfig:
        """The configuration of a judge or rewriter on this kind of backend: the server at
        `base_url` serving `model`, at temperature 0 (the same text gets the same level or rewrite)
        unless the model takes only its default temperature.

        Example:
            >>> from psyq.engine.backends import backend_class
            >>> backend_class("openai").helper_config("judge", base_url="http://127.0.0.1:1/v1", model="o3").temperature is None
            True
        """
        caps = capabilities_for(cls.kind, base_url, model)
        return BackendConfig(id=backend_id, kind=cls.kind, base_url=base_url, model=model, api_key_env=api_key_env,
                             temperature=None if caps.temperature == "default_only" else 0.0)

    def start_time(self) -> tuple[float, str] | None:
        """Seconds this backend needs before its first request and why, as a plan counts them
        (None: it sends at once)."""
        return None

    def shown_endpoint(self) -> str:
        """The endpoint as a plan shows it before the run (:meth:`endpoint` where it is known)."""
        return self.endpoint()

    # --- what subclasses say -------------------------------------------------------------
    def endpoint(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        return {}

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        raise NotImplementedError

    def result(self, body: dict[str, Any]) -> ChatResult:
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        """Everything about this backend that decides an answer (goes into trial ids and the
        manifest); no secrets, nothing that changes between runs of the same study."""
        c = self.config
        # The endpoint as normalised (localhost = 127.0.0.1, no default port, no trailing
        # slash): two spellings of one server are one identity (engine/backends/endpoint.py).
        return {"kind": c.kind, "base_url": normalise_endpoint(self.base_url) if self.base_url else self.base_url,
                "model": c.model}

    @property
    def capacity(self) -> int:
        """Requests this backend may have in flight: `concurrency` per endpoint."""
        return self.config.concurrency * (len(self.pool.endpoints) if self.pool else 1)

    @property
    def served_at_once(self) -> int:
        """Requests the model computes at once, the pace `psyq plan` assumes: all those in flight,
        unless the server queues them (the local backend's reproducible serving)."""
        return self.capacity

    def token_limit(self, request: ChatRequest) -> int:
        """The request's whole token limit: the answer budget plus the reasoning allowance
        (engine/backends/capabilities.py), times the request's budget factor.

        Example:
            >>> b = HttpBackend(BackendConfig(id="r", kind="openai", model="o3", base_url="http://127.0.0.1:1/v1",
            ...                               reasoning_effort="low"))
            >>> b.token_limit(ChatRequest(messages=(), max_tokens=48))
            4144
        """
        return (request.max_tokens + reasoning_allowance(self.config, self.capabilities)) * request.budget_factor

    @property
    def top_logprobs(self) -> int:
        return self.config.top_logprobs or self.default_top_logprobs

    # --- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Open the HTTP session: at most `concurrency` connections, kept alive between requests.

        `timeout_s` bounds connecting (at most 10 s), waiting for a connection and every wait
        for data from the server, as httpx's timeouts did. Proxy settings in the environment
        (``HTTPS_PROXY``, ``NO_PROXY`` …) are honoured when there are any.
        """
        import aiohttp   # here, not at the top: commands that read runs (a report) import backends but send nothing

        timeout = aiohttp.ClientTimeout(total=None, connect=self.config.timeout_s,
                                        sock_connect=min(10.0, self.config.timeout_s),
                                        sock_read=self.config.timeout_s)
        connector = aiohttp.TCPConnector(limit=self.capacity)
        # Looking proxies up costs time on every request; only when the environment names one.
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout,
                                              trust_env=bool(urllib.request.getproxies()))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def api_key(self) -> str | None:
        """The API key from the environment variable named by `api_key_env` (None if unnamed)."""
        name = self.config.api_key_env
        if not name:
            return None
        key = os.environ.get(name)
        if not key:
            raise BackendError(f"backend '{self.config.id}': environment variable {name} is not set "
                               f"(it should hold the API key)", fatal=True)
        return key

    def _redact(self, text: str) -> str:
        """`text` (a server's error message, printed and stored) with the API key blanked out:
        some servers quote the key they refused."""
        key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        return text.replace(key, "[API key]") if key and len(key) >= 4 else text

    # --- one request with retries --------------------------------------------------------
    async def complete(self, request: ChatRequest) -> ChatResult:
        """Send `request`, retrying transient failures at most `max_retries` times."""
        assert self._session is not None, "call start() first"
        # Encoded once, whatever the retries.
        sent = request_body(self, request)
        data = sent.encode()
        cost = token_cost(request) if self._tokens else 0.0   # only a tokens-per-minute pacer counts it
        attempt = 0
        began = time.monotonic()
        while True:
            attempt += 1
            try:
                result = await self._attempt(data, cost)
                result.attempts, result.latency_s, result.sent = attempt, time.monotonic() - began, sent
                return result
            except BackendError as exc:
                exc.attempts = attempt
                raise
            except _Retryable as exc:
                self.stats.retry_reasons[exc.reason] = self.stats.retry_reasons.get(exc.reason, 0) + 1
                if self._unreachable_in_a_row >= UNREACHABLE_AFTER:
                    where = f"any of its {len(self.pool.endpoints)} endpoints" if self.pool else self.endpoint()
                    raise BackendUnreachable(
                        f"backend '{self.config.id}' cannot be reached at {where}: "
                        f"{self._unreachable_in_a_row} connection attempts in a row failed (last: {exc.reason}); "
                        f"is the server running and the base_url right?", url=self.endpoint()) from None
                if attempt > self.config.max_retries:
                    self.stats.failures += 1
                    raise BackendError(f"gave up after {attempt} attempts; last: {exc.reason}",
                                       status=exc.status, attempts=attempt, body=exc.body) from None
                self.stats.retries += 1
                await asyncio.sleep(self._backoff(attempt, exc.retry_after))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # The server said when; everyone waits (so the others do not hit the wall too).
            wait = retry_after + self._rng.uniform(0, 0.1 * retry_after + 0.01)
            for limiter in (self._requests, self._tokens):
                if limiter:
                    limiter.pause_until(time.monotonic() + retry_after)
            return wait
        cap = min(self.config.max_backoff_s, self.config.backoff_s * 2 ** (attempt - 1))
        return self._rng.uniform(0, cap)  # "full jitter": spreads the retries of many requests

    async def _attempt(self, data: bytes, cost: float) -> ChatResult:
        if self.pool is None:
            async with self._slots:
                result = await self._send(self.endpoint(), data, cost)
            result.endpoint = normalise_endpoint(self.base_url)
            return result
        # A pool: the least-loaded healthy replica; whether it answered decides its health.
        chosen = await self.pool.acquire()
        healthy, why = False, ""
        try:
            result = await self._send(chosen.url + self.endpoint()[len(self.base_url):], data, cost)
            healthy = True
        except _Retryable as exc:
            healthy, why = not _counts_against_endpoint(exc), exc.reason
            raise
        except BackendError as exc:
            healthy = True   # the server answered (a 4xx): alive
            exc.endpoint = chosen.name
            raise
        finally:
            self.pool.release(chosen, healthy=healthy, why=why)
        result.endpoint = chosen.name
        return result

    def _refused(self, refusal: ProviderRefusal, body: dict[str, Any]) -> ProviderRefused:
        """The error for a refusal: printed at once the first time it is seen, fatal when the
        run should stop (see engine/backends/provider_errors.py)."""
        signature = refusal.signature()
        count = self._refusals[signature] = self._refusals.get(signature, 0) + 1
        text, fix = self._redact(refusal.describe()), refusal.fix()
        if count == 1:
            self.log(f"backend '{self.config.id}': the server refused a request: {text}"
                     + (f"\n  fix: {fix}" if fix else ""))
        fatal = refusal.status in STOP_AT_ONCE or count >= STOP_AFTER
        return ProviderRefused(text, refusal=refusal, fix=fix, count=count, fatal=fatal, backend_id=self.config.id,
                               body={**body, "unreadable_body": self._redact(body["unreadable_body"])})

    async def _send(self, url: str, data: bytes, cost: float) -> ChatResult:
        """One HTTP exchange with `url` (the caller holds a slot)."""
        import aiohttp   # imported by start(): a look-up in sys.modules
        headers = {"Content-Type": "application/json", **self.headers()}
        if self._requests:
            await self._requests.acquire()
        if self._tokens:
            await self._tokens.acquire(cost)
        self.stats.requests += 1
        self.stats.in_flight += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
        try:
            async with self._session.post(url, data=data, headers=headers) as response:
                status, retry_after = response.status, response.headers.get("Retry-After")
                self._unreachable_in_a_row = 0   # a server answered
                body_bytes, too_long = await read_bounded(response, self.max_reply_bytes)
        except aiohttp.InvalidURL:
            raise BackendError(f"backend '{self.config.id}': the base_url is not a valid URL", fatal=True) from None
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            # Refused, reset, dropped mid-response, timed out, an unreadable HTTP reply …
            if isinstance(exc, (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)):
                self._unreachable_in_a_row += 1   # no server at all (not one that misbehaves)
            raise _Retryable(_transport_reason(exc)) from None
        finally:
            self.stats.in_flight -= 1
        if status in RETRYABLE_STATUS:
            raise _Retryable(f"HTTP {status}", parse_retry_after(retry_after), status)
        if status >= 400:
            raise self._refused(read_refusal(status, body_bytes), kept_body(body_bytes))
        if too_long:
            return ChatResult(text="", first_token_logprobs=None, prompt_tokens=None, completion_tokens=None,
                              raw=kept_body(body_bytes, truncated=True), problem="too_long",
                              problem_reason=f"the server's reply is longer than {self.max_reply_bytes:,} bytes; "
                                             f"its first {KEPT_BODY_CHARS} characters are kept")
        try:
            body = json.loads(body_bytes)
        except (ValueError, RecursionError, MemoryError):   # not JSON, empty, nested too deep …
            raise _Retryable("malformed response", body=kept_body(body_bytes)) from None
        try:
            result = self.result(body)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError):
            # JSON, but not a chat reply (no choices / content blocks): a proxy's page, an error
            # object sent with 200 … retried like a dropped connection.
            raise _Retryable("malformed response", body=kept_body(body_bytes)) from None
        except Exception as exc:   # noqa: BLE001 - a reader's own failure costs this reply only
            return ChatResult(text="", first_token_logprobs=None, prompt_tokens=None, completion_tokens=None,
                              raw=kept_body(body_bytes), problem="parse_error",
                              problem_reason=f"parse_error: {type(exc).__name__}: {str(exc)[:200]}")
        self.stats.prompt_tokens += result.prompt_tokens or 0
        self.stats.completion_tokens += result.completion_tokens or 0
        self.stats.reasoning_tokens += result.reasoning_tokens or 0
        return result


def _counts_against_endpoint(exc: _Retryable) -> bool:
    """True when a retried attempt says the replica is unwell (no connection, a timeout, a 5xx, a
    reply that is not a chat answer); a 429 or 408 says it is alive but busy."""
    return exc.status is None or exc.status >= 500


def _transport_reason(exc: BaseException) -> str:
    """The retry reason of a failed exchange: ``timeout`` or ``connection error (KindOfError)``."""
    if isinstance(exc, asyncio.TimeoutError):   # aiohttp's read and connect timeouts are these
        return "timeout"
    return f"connection error ({type(exc).__name__})"
