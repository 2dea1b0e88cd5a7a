"""Backends: one module per kind of server, chosen by `kind` in a study's backend entry.

- ``openai``: any OpenAI-compatible ``/v1/chat/completions`` server;
- ``anthropic``: the Anthropic Messages API;
- ``local``: the zero-configuration default, llama.cpp with a small model on 127.0.0.1.

May import: files (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from psyq.engine.backends.anthropic import AnthropicBackend
from psyq.engine.backends.base import (BackendConfig, BackendError, BackendStats, ChatRequest, ChatResult,
    HttpBackend)
from psyq.engine.backends.local import LocalBackend
from psyq.engine.backends.openai import OpenAIBackend

KINDS: dict[str, type[HttpBackend]] = {
    "openai": OpenAIBackend,
    "anthropic": AnthropicBackend,
    "local": LocalBackend,
}


def make_backend(config: BackendConfig, *, log_dir: Path | None = None,
                 log: Callable[[str], None] = print) -> HttpBackend:
    """The backend object for `config` (not started yet).

    Example:
        >>> b = make_backend(BackendConfig(id="x", kind="openai", model="m", base_url="http://127.0.0.1:1/v1"))
        >>> b.endpoint()
        'http://127.0.0.1:1/v1/chat/completions'
    """
    if config.kind == "local":
        return LocalBackend(config, log_dir=log_dir, log=log)
    backend = KINDS[config.kind](config)
    backend.log = log   # where a refusal the user must see at once is said
    return backend


__all__ = ["BackendConfig", "BackendError", "BackendStats", "ChatRequest", "ChatResult",
           "HttpBackend", "KINDS", "make_backend"]
