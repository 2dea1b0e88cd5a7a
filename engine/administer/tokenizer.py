"""Counting a request's prompt tokens before it is sent: with the server's own tokenizer where
it offers one, else a stated approximation.

- **llama.cpp** (`llama-server`, also the local default once started): ``POST /apply-template``
  turns the messages into the prompt its chat template makes, ``POST /tokenize`` counts that
  prompt's tokens with the model's own vocabulary (special tokens included) — the number
  the server reports as ``prompt_tokens``.
- **vLLM**: ``POST /tokenize`` with the messages applies the chat template and returns ``count``.
- Anything else (a hosted API, Anthropic, a server without these endpoints): **approximate**,
  characters of the message texts / 4, chat-template and JSON-schema tokens not counted.

Only tokenizing endpoints are called, without the API key; nothing is generated. Every
counter says which method it used (:attr:`TokenCounter.method`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator, Protocol

import httpx

from psyq.engine.backends.base import ChatRequest, HttpBackend

if TYPE_CHECKING:
    from psyq.engine.backends.local import LocalBackend

CHARS_PER_TOKEN = 4
APPROXIMATE = f"approximate: characters/{CHARS_PER_TOKEN} of the message texts (chat template not counted)"
PROBE_TIMEOUT_S = 3.0


class TokenizerFailed(Exception):
    """A server that tokenized the probe failed on a later request (the plan falls back, saying so)."""


class TokenCounter(Protocol):
    """Counts prompt tokens of requests; `method` says how, `exact` whether it is the server's count."""

    method: str
    exact: bool

    def count(self, request: ChatRequest) -> float: ...


def request_chars(request: ChatRequest) -> int:
    """Characters of a request's message texts.

    Example:
        >>> request_chars(ChatRequest(messages=({"role": "user", "content": "abcd"},), max_tokens=1))
        4
    """
    return sum(len(m.get("content") or "") for m in request.messages)


class ApproximateCounter:
    """Characters / 4: a stated approximation, never presented as a count.

    Example:
        >>> ApproximateCounter("no tokenizer").count(ChatRequest(messages=({"role": "user", "content": "abcdefgh"},), max_tokens=1))
        2.0
    """

    exact = False

    def __init__(self, why: str):
        self.method = f"{APPROXIMATE}; {why}"

    def count(self, request: ChatRequest) -> float:
        return request_chars(request) / CHARS_PER_TOKEN


class ServerCounter:
    """The tokenizer of a llama.cpp or vLLM server at `root` (its URL without ``/v1``)."""

    exact = True

    def __init__(self, root: str, model: str | None, flavour: str, client: httpx.Client):
        self.root, self.model, self.flavour, self.client = root, model, flavour, client
        where = f"{root}/apply-template + /tokenize" if flavour == "llama.cpp" else f"{root}/tokenize"
        self.method = f"the server's own tokenizer ({flavour} {where}, chat template included)"

    def count(self, request: ChatRequest) -> float:
        try:
            return self._count(request)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise TokenizerFailed(f"{type(exc).__name__}: {str(exc)[:200]}") from None

    def _count(self, request: ChatRequest) -> float:
        messages = list(request.messages)
        if self.flavour == "llama.cpp":
            prompt = self._post("/apply-template", {"messages": messages})["prompt"]
            tokens = self._post("/tokenize", {"content": prompt, "add_special": True, "parse_special": True})
            return float(len(tokens["tokens"]))
        reply = self._post("/tokenize", {"model": self.model, "messages": messages, "add_generation_prompt": True})
        return float(reply["count"])

    def _post(self, path: str, body: dict) -> dict:
        response = self.client.post(self.root + path, json=body)
        response.raise_for_status()
        return response.json()


def server_root(base_url: str) -> str:
    """The server's own URL from an OpenAI-style base URL (``…/v1`` removed).

    Example:
        >>> server_root("http://127.0.0.1:8080/v1/")
        'http://127.0.0.1:8080'
    """
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def probe_server(base_url: str, model: str | None, client: httpx.Client) -> tuple[ServerCounter | None, str]:
    """A counter for the server at `base_url` if it tokenizes, else None and why not (plain words)."""
    root = server_root(base_url)
    probe = ChatRequest(messages=({"role": "user", "content": "1"},), max_tokens=1)
    tried = []
    for flavour in ("llama.cpp", "vllm"):
        counter = ServerCounter(root, model, flavour, client)
        try:
            counter._count(probe)
            return counter, counter.method
        except httpx.HTTPStatusError as exc:
            tried.append(f"{flavour}: HTTP {exc.response.status_code}")
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            tried.append(f"{flavour}: {type(exc).__name__}")
    return None, f"the server offers no tokenizer ({'; '.join(tried)})"


@contextlib.contextmanager
def token_counter(backend: HttpBackend, mode: str = "auto") -> Iterator[TokenCounter]:
    """The counter for one backend; `mode` is ``auto`` (ask an OpenAI-compatible server for its
    tokenizer, else approximate), ``approximate``, or ``server`` (as auto, and for the local
    default start the cached llama-server, ~3 s, to count with the GGUF's own vocabulary; it is
    never built for a plan).

    Example (``approximate`` asks no server):
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> request = ChatRequest(messages=({"role": "user", "content": "abcdefgh"},), max_tokens=1)
        >>> with token_counter(backend, "approximate") as counter:
        ...     counter.count(request), counter.exact
        (2.0, False)
    """
    if mode == "approximate":
        yield ApproximateCounter("--tokenizer approximate")
        return
    if backend.tokenizer_unavailable is not None:
        yield ApproximateCounter(backend.tokenizer_unavailable)
        return
    with httpx.Client(timeout=PROBE_TIMEOUT_S, trust_env=False) as client:
        if backend.starts_server:
            if mode != "server":
                yield ApproximateCounter("the local model's server is not started for a plan "
                                         "(--tokenizer server starts it to count exactly)")
                return
            with _local_server(backend) as (url, why):
                counter, why_not = probe_server(url, None, client) if url else (None, why)
                yield counter or ApproximateCounter(why_not)
            return
        counter, why_not = probe_server(backend.base_url, backend.config.model, client)
        yield counter or ApproximateCounter(why_not)


@contextlib.contextmanager
def _local_server(backend: LocalBackend) -> Iterator[tuple[str | None, str]]:
    """The local backend's llama-server (the backend that declares `starts_server`), started only if
    already built and its model already fetched (URL, or None and why): a plan never builds or
    downloads anything."""
    from psyq.engine.backends.local_build import llama_server_path
    from psyq.engine.backends.local_models import local_model_path
    from psyq.engine.backends.local_server import LlamaServer

    binary = llama_server_path()
    if not binary.exists():
        yield None, f"llama-server is not built yet ({binary}); `psyq run` builds it once"
        return
    entry = backend.entry
    model = local_model_path(entry) if entry is not None else backend.model_file
    if model is None or not model.is_file():
        yield None, (f"the local model {entry.name} is not fetched yet; `psyq run` fetches it once" if entry
                     else f"the local model file is not available ({model})")
        return
    server = LlamaServer(binary, model, parallel=1, ctx_size=8192)
    try:
        server.start()
    except Exception as exc:   # noqa: BLE001 - as above
        yield None, f"llama-server did not start ({exc})"
        return
    try:
        yield server.base_url, ""
    finally:
        server.stop()
