"""Backends: one module per kind of server, chosen by `kind` in a study's backend entry.

- ``openai``: any OpenAI-compatible ``/v1/chat/completions`` server;
- ``anthropic``: the Anthropic Messages API;
- ``local``: the zero-configuration default, llama.cpp with a small model on 127.0.0.1.

Each is a subclass of :class:`HttpBackend` registered below under its `kind`
(:mod:`psyq.engine.backends.registry`); what differs between kinds (what a study's entry must
give, the batch client, how tokens are counted, how a judge answers, how a plan shows it) is
said by the class, and the rest of psyq asks the class, never the kind's name.

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
from psyq.engine.backends.registry import (BACKENDS, DEFAULT_KIND, URL_KIND, backend_class, backend_kinds,
    kinds_where, register)

register(OpenAIBackend)
register(AnthropicBackend)
register(LocalBackend)


def make_backend(config: BackendConfig, *, log_dir: Path | None = None,
                 log: Callable[[str], None] = print) -> HttpBackend:
    """The backend object for `config` (not started yet).

    Example:
        >>> b = make_backend(BackendConfig(id="x", kind="openai", model="m", base_url="http://127.0.0.1:1/v1"))
        >>> b.endpoint()
        'http://127.0.0.1:1/v1/chat/completions'
    """
    return backend_class(config.kind).create(config, log_dir=log_dir, log=log)


__all__ = ["BackendConfig", "BackendError", "BackendStats", "ChatRequest", "ChatResult", "HttpBackend",
           "BACKENDS", "DEFAULT_KIND", "URL_KIND", "backend_class", "backend_kinds", "kinds_where", "register",
           "make_backend"]
