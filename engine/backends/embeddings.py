"""Embeddings from an OpenAI-compatible server (``POST {base_url}/embeddings``), for `answer: ssr`.

The request is OpenAI's CreateEmbeddingRequest, ``{"model": M, "input": [text, ...]}``; the reply
its CreateEmbeddingResponse, ``{"object": "list", "data": [{"object": "embedding", "embedding":
[floats], "index": i}, ...], "model": M, "usage": {"prompt_tokens": n, "total_tokens": n}}``
(github.com/openai/openai-openapi, checked against the schemas in tests/data/provider_schemas/openai/).
The vectors are put back in the order of the inputs by ``index``; a reply that is not that shape
(a vector missing, not a list of finite numbers, vectors of different lengths) is retried like a
malformed chat reply. Retries, pacing, refusals and the key's header are :class:`HttpBackend`'s.

Served by OpenAI, vLLM (``--task embed``), Ollama and llama.cpp's llama-server started with
``--embeddings`` (a study names the server in ``protocol.ssr.embeddings``); without a server,
``kind: local`` computes them with psyq's own model (local_embeddings.py; embedders.py chooses).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any, Callable

from psyq.engine.backends.base import BackendConfig, ChatResult, HttpBackend
from psyq.engine.backends.openai import usage_count
from psyq.engine.files.errors import BackendError


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
        """The reply checked (a wrong shape raises: the base class retries it); the vectors, in
        input order, are the result's ``raw["vectors"]``."""
        data = body["data"]
        if not isinstance(data, list) or not data:
            raise ValueError("no embeddings in the reply")
        by_index: dict[int, list[float]] = {}
        for entry in data:
            index, vector = entry["index"], entry["embedding"]
            if isinstance(index, bool) or not isinstance(index, int) or index in by_index:
                raise ValueError("an embedding's index is not a new whole number")
            if not isinstance(vector, list) or not vector or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
                raise ValueError("an embedding is not a list of finite numbers")
            by_index[index] = [float(x) for x in vector]
        if sorted(by_index) != list(range(len(by_index))) or len({len(v) for v in by_index.values()}) != 1:
            raise ValueError("the embeddings' indexes or lengths do not fit")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return ChatResult(text="", first_token_logprobs=None, prompt_tokens=usage_count(usage.get("prompt_tokens")),
                          completion_tokens=0, raw={"vectors": [by_index[i] for i in range(len(by_index))]})

    async def embed(self, texts: list[str]) -> tuple[list[list[float]], int | None]:
        """The embedding of each of `texts` (one request; call :meth:`start` first), and the
        prompt tokens the server counted (None: not reported)."""
        result = await self.complete(EmbeddingRequest(tuple(texts)))   # type: ignore[arg-type]
        if result.problem is not None:   # e.g. a reply over the size psyq reads
            raise BackendError(f"embeddings server: {result.problem_reason}; fewer texts per request "
                               "(protocol.ssr.embeddings.batch_size) make smaller replies", fatal=True)
        vectors = result.raw["vectors"]
        if len(vectors) != len(texts):
            raise ValueError(f"the server returned {len(vectors)} embeddings for {len(texts)} texts")
        return vectors, result.prompt_tokens

    async def embed_all(self, texts: list[str], batch_size: int,
                        on_batch: Callable[[list[str], list[list[float]]], None]) -> int:
        """Embed `texts` in requests of at most `batch_size` texts, `concurrency` at a time, handing
        each batch's texts and vectors to `on_batch` as it arrives; return the requests sent.

        After a failure no new request is sent, but those already out are waited for and kept
        (never cancelled: a reply paid for is not thrown away); then the first failure is raised.
        """
        batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
        queue = list(reversed(batches))
        failures: list[BaseException] = []
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
                on_batch(batch, vectors)

        await asyncio.gather(*(worker() for _ in range(min(self.capacity, len(batches)))))
        if failures:
            raise failures[0]
        return sent
