"""Backends: one module per kind of server, chosen by `kind` in a study's backend entry.

- ``openai``: any OpenAI-compatible ``/v1/chat/completions`` server;
- ``anthropic``: the Anthropic Messages API;
- ``local``: the zero-configuration default, llama.cpp with a small model on 127.0.0.1.

Each is a subclass of :class:`HttpBackend` registered below under its `kind` by the module that
defines it (:mod:`psyq.engine.backends.registry`), and imported the first time it is used: a
backend's module imports its HTTP client (aiohttp, httpx), which loading instruments or checking a
study's kinds does not need. What differs between kinds (what a study's entry must give, the
batch client, how tokens are counted, how a judge answers, how a plan shows it) is said by the
class, and the rest of psyq asks the class, never the kind's name. The names below are imported
from their modules on first use too (:mod:`psyq.engine.lazy`).

May import: files (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from psyq.engine.backends.registry import (BACKENDS, DEFAULT_KIND, URL_KIND, backend_class, backend_kinds,
    kinds_where, register)
from psyq.engine.lazy import lazy_names

if TYPE_CHECKING:
    from psyq.engine.backends.base import BackendConfig, HttpBackend

BUILT_IN = (register("openai", "psyq.engine.backends.openai:OpenAIBackend"),
            register("anthropic", "psyq.engine.backends.anthropic:AnthropicBackend"),
            register("local", "psyq.engine.backends.local:LocalBackend"))

# name -> the module defining it, imported on first use: base.py imports aiohttp, each backend its client.
_EXPORTS = {**{name: "psyq.engine.backends.base" for name in
               ("BackendConfig", "BackendError", "BackendStats", "ChatRequest", "ChatResult", "HttpBackend")},
            **{entry.where.partition(":")[2]: entry.where.partition(":")[0] for entry in BUILT_IN}}
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)


def make_backend(config: BackendConfig, *, log_dir: Path | None = None,
                 log: Callable[[str], None] = print) -> HttpBackend:
    """The backend object for `config` (not started yet); imports the module of its kind.

    Example:
        >>> from psyq.engine.backends import BackendConfig
        >>> b = make_backend(BackendConfig(id="x", kind="openai", model="m", base_url="http://127.0.0.1:1/v1"))
        >>> b.endpoint()
        'http://127.0.0.1:1/v1/chat/completions'
    """
    return backend_class(config.kind).create(config, log_dir=log_dir, log=log)


__all__ = ["BackendConfig", "BackendError", "BackendStats", "ChatRequest", "ChatResult", "HttpBackend",
           "BACKENDS", "DEFAULT_KIND", "URL_KIND", "backend_class", "backend_kinds", "kinds_where", "register",
           "make_backend"]
