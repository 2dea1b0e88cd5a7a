"""Embeddings from an OpenAI-compatible server (``POST {base_url}/embeddings``), for `answer: ssr`.

The request is OpenAI's CreateEmbeddingRequest, ``{"model": M, "input": [text, ...]}``; the reply
its CreateEmbeddingResponse, ``{"object": "list", "data": [{"object": "embedding", "embedding":
[floats], "index": i}, ...], "model": M, "usage": {"prompt_tokens": n, "total_tokens": n}}``
(github.com/openai/openai-openapi, checked against the schemas in tests/data/provider_schemas/openai/).
The vectors are put back in the order of the inputs by ``index``; a reply that is not that shape
(empty, not JSON, no ``data``, a vector missing, not a list of finite numbers, vectors of different
lengths) is retried like a malformed chat reply, and when the retries are spent the error says what
was wrong. A reply of another number of vectors than texts, or of vectors of another length than
the server gave before, is not retried (a server that does it does it again): the phase stops and
its answers wait, with that reason, for the next run. A reply is read up to :func:`reply_bound`
(sized to the texts of a request; a longer one stops the run, saying which setting makes replies
smaller). Retries, pacing, refusals and the key's header are :class:`HttpBackend`'s.

Served by OpenAI, vLLM (``--task embed``), Ollama and llama.cpp's llama-server started with
``--embeddings`` (a study names the server in ``protocol.ssr.embeddings``); without a server,
``kind: local`` computes them with psyq's own model (local_embeddings.py; embedders.py chooses).
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any, Callable

from psyq.engine.backends.base import BackendConfig, ChatResult, HttpBackend
from psyq.engine.backends.bodies import MAX_BODY_BYTES
from psyq.engine.backends.openai import usage_count
from psyq.engine.files.errors import BackendError, ProviderRefused

# The most of an embeddings reply read, per text of its request: 4,096 numbers (the longest
# vectors served: Qwen3-Embedding-8B, NV-Embed-v2; text-embedding-3-large has 3,072) of up to 32
# bytes each as JSON indented one number a line, as OpenAI's reference shows a reply
# ("        -0.006929283495992422,\n"). Never less than a chat reply's bound, never more than
# MAX_EMBEDDINGS_REPLY_BYTES, whatever the batch: a server that sends more is refused unread.
EMBEDDING_BYTES_PER_TEXT = 128 * 1024
MAX_EMBEDDINGS_REPLY_BYTES = 64 * 2**20


def reply_bound(texts: int) -> int:
    """The most of a reply to a request of `texts` texts that is read, in bytes.

    Example:
        >>> reply_bound(3) == MAX_BODY_BYTES, reply_bound(64) // 2**20, reply_bound(2048) // 2**20
        (True, 8, 64)
    """
    return min(MAX_EMBEDDINGS_REPLY_BYTES, max(MAX_BODY_BYTES, texts * EMBEDDING_BYTES_PER_TEXT))


def reply_vectors(body: Any) -> list[list[float]]:
    """The vectors of a CreateEmbeddingResponse, in input order; ValueError says what is wrong
    with a reply that is not one.

    Example:
        >>> reply_vectors({"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1.5, 0]}]})
        [[1.5, 0.0], [0.0, 1.0]]
        >>> reply_vectors({"object": "list"})
        Traceback (most recent call last):
        ValueError: the reply has no `data` list
    """
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not data:
        raise ValueError("the reply has no `data` list" if not isinstance(data, list) else "the reply's `data` is empty")
    by_index: dict[int, list[float]] = {}
    for i, entry in enumerate(data):
        index = entry.get("index") if isinstance(entry, dict) else None
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"data[{i}] has no whole-number `index`")
        if index in by_index:
            raise ValueError(f"data[{i}] repeats the index {index}")
        vector = entry.get("embedding")
        if not isinstance(vector, list) or not vector or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
            raise ValueError(f"data[{i}].embedding is not a list of finite numbers")
        by_index[index] = [float(x) for x in vector]
    if sorted(by_index) != list(range(len(by_index))):
        raise ValueError(f"the indexes are not 0 to {len(by_index) - 1}")
    lengths = sorted({len(v) for v in by_index.values()})
    if len(lengths) > 1:
        raise ValueError(f"the embeddings have different lengths ({' and '.join(map(str, lengths))} numbers)")
    return [by_index[i] for i in range(len(by_index))]


def malformed_detail(kept: Any) -> str | None:
    """What is wrong with a reply kept as unreadable (bodies.kept_body), in words; None when it
    cannot be told (a reply kept cut).

    Example:
        >>> malformed_detail({"unreadable_body": "<html>Bad Gateway</html>", "truncated": False})
        'the reply is not JSON: <html>Bad Gateway</html>'
    """
    if not isinstance(kept, dict) or not isinstance(kept.get("unreadable_body"), str) or kept.get("truncated"):
        return None
    text = kept["unreadable_body"]
    if not text.strip():
        return "the reply is empty"
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return f"the reply is not JSON: {' '.join(text.split())[:80]}"
    try:
        reply_vectors(body)
    except (ValueError, RecursionError) as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class EmbeddingRequest:
    """One request: the texts to embed, in order."""

    texts: tuple[str, ...]


class EmbeddingsClient(HttpBackend):
    """An OpenAI-compatible embeddings endpoint.

    Example:
        >>> client = EmbeddingsClient.for_server("http://127.0.0.1:8000/v1", "text-embedding-3-small")
        >>> client.endpoint(), client.payload(EmbeddingRequest(("I cry easily.",)))
        ('http://127.0.0.1:8000/v1/embeddings', {'model': 'text-embedding-3-small', 'input': ['I cry easily.']})
    """

    kind = "openai"
    computes_here = False      # a server computes the embeddings (LocalEmbeddings: this process)

    @classmethod
    def for_server(cls, base_url: str, model: str, *, api_key_env: str | None = None, concurrency: int = 2,
                   timeout_s: float = 60.0, max_retries: int = 5) -> "EmbeddingsClient":
        """The client of the embeddings server at `base_url` serving `model` (not started)."""
        return cls(BackendConfig(id="embeddings", kind="openai", model=model, base_url=base_url,
                                 api_key_env=api_key_env, temperature=None, concurrency=concurrency,
                                 timeout_s=timeout_s, max_retries=max_retries))

    def endpoint(self) -> str:
        return f"{self.base_url}/embeddings"

    def where(self) -> str:
        """Where the embeddings are computed, for messages: the endpoint."""
        return self.endpoint()

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def payload(self, request: EmbeddingRequest) -> dict[str, Any]:   # type: ignore[override]
        return {"model": self.config.model, "input": list(request.texts)}

    def result(self, body: dict[str, Any]) -> ChatResult:
        """The reply checked (a wrong shape raises ValueError: the base class retries it); the
        vectors, in input order, are the result's ``raw["vectors"]``."""
        vectors = reply_vectors(body)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return ChatResult(text="", first_token_logprobs=None, prompt_tokens=usage_count(usage.get("prompt_tokens")),
                          completion_tokens=0, raw={"vectors": vectors})

    async def embed(self, texts: list[str]) -> tuple[list[list[float]], int | None]:
        """The embedding of each of `texts` (one request; call :meth:`start` first), and the
        prompt tokens the server counted (None: not reported). Every failure is a BackendError:
        fatal (or a refusal) when the run should stop, else one the next run may not meet."""
        try:
            result = await self.complete(EmbeddingRequest(tuple(texts)))   # type: ignore[arg-type]
        except BackendError as exc:
            why = None if exc.fatal or isinstance(exc, ProviderRefused) else malformed_detail(exc.body)
            if why is None:
                raise
            raise BackendError(f"{exc}: {why}", status=exc.status, attempts=exc.attempts, body=exc.body) from None
        if result.problem is not None:   # e.g. a reply over the size psyq reads
            raise BackendError(f"embeddings server: {result.problem_reason}; fewer texts per request "
                               "(protocol.ssr.embeddings.batch_size) make smaller replies", fatal=True)
        vectors = result.raw["vectors"]
        if len(vectors) != len(texts):
            raise BackendError(f"the server returned {len(vectors)} embeddings for {len(texts)} texts",
                               status=200, attempts=result.attempts)
        return vectors, result.prompt_tokens

    async def embed_all(self, texts: list[str], batch_size: int,
                        on_batch: Callable[[list[str], list[list[float]]], None]) -> int:
        """Embed `texts` in requests of at most `batch_size` texts, `concurrency` at a time, handing
        each batch's texts and vectors to `on_batch` as it arrives; return the requests sent.

        After a failure no new request is sent, but those already out are waited for and kept
        (never cancelled: a reply paid for is not thrown away); then the first failure is raised.
        The first vectors to arrive set their length: a batch of another length is not kept (it
        could not be compared with the others) but fails as a malformed reply.
        """
        self.max_reply_bytes = reply_bound(batch_size)
        batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
        queue = list(reversed(batches))
        failures: list[BaseException] = []
        dimensions: list[int] = []
        sent = 0

        async def worker() -> None:
            nonlocal sent
            while queue and not failures:
                batch = queue.pop()
                sent += 1
                try:
                    vectors, _ = await self.embed(batch)
                except Exception as exc:   # noqa: BLE001 - raised below, once the others are in
                    failures.append(exc)
                    return
                dimensions[:] = dimensions or [len(vectors[0])]
                if len(vectors[0]) != dimensions[0]:
                    failures.append(BackendError(f"the server's embeddings have {len(vectors[0])} numbers, those "
                                                 f"it gave before {dimensions[0]}", status=200))
                    return
                on_batch(batch, vectors)

        await asyncio.gather(*(worker() for _ in range(min(self.capacity, len(batches)))))
        if failures:
            raise failures[0]
        return sent
