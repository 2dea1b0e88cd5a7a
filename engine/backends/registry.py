"""The registry of backends: the `kind:` of a study's backend entry and the class that speaks it.

Apart from the package ``__init__`` (which registers the built-in kinds), so that
:class:`~psyq.engine.backends.base.BackendConfig` can check a `kind:` against it without
importing any backend. A kind is registered with the module that defines its class, and that
module is imported the first time the class is asked for (:func:`backend_class`): each backend
imports its own HTTP client (aiohttp, httpx), so a command that loads instruments or checks a
study's kinds pays for none, and one that uses an OpenAI-compatible server loads only that
backend's module. What differs between kinds is said by the class (its attributes, e.g.
:attr:`~psyq.engine.backends.base.HttpBackend.needs_model`, and methods), never by a test of
the kind's name outside ``engine/backends/``.

Example:
    >>> backend_kinds()
    ('openai', 'anthropic', 'local')
    >>> backend_class("anthropic").needs_base_url, kinds_where("starts_server")
    (False, ('local',))
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from psyq.engine.registry import Registry

if TYPE_CHECKING:
    from psyq.engine.backends.base import HttpBackend


@dataclass(frozen=True)
class BackendModule:
    """Where the class of one backend `kind` is defined (``module:Class``), not imported yet.

    Example:
        >>> BackendModule("anthropic", "psyq.engine.backends.anthropic:AnthropicBackend").load().__name__
        'AnthropicBackend'
    """

    kind: str
    where: str

    def load(self) -> type["HttpBackend"]:
        """Import the module and return the class, which must speak this `kind`."""
        module, _, name = self.where.partition(":")
        backend = getattr(importlib.import_module(module), name)
        if backend.kind != self.kind:
            raise ValueError(f"{self.where} speaks kind '{backend.kind}', but is registered as '{self.kind}'")
        return backend


class BackendRegistry(Registry[Union[type["HttpBackend"], BackendModule]]):
    """Backend classes by `kind`; a kind registered by its module gets its class on first use.

    Registered names are known at once (checking a `kind:` imports nothing); :meth:`get` and
    :meth:`values` return classes, importing a registered module the first time (Python keeps it).

    Example:
        >>> "local" in BACKENDS, BACKENDS.get("openai").__name__
        (True, 'OpenAIBackend')
    """

    def register(self, plugin: type["HttpBackend"] | BackendModule) -> type["HttpBackend"] | BackendModule:
        if isinstance(plugin, BackendModule) and self._plugins.get(plugin.kind) == plugin:
            return self._plugins[plugin.kind]   # the same module again: nothing changes
        return super().register(plugin)

    def get(self, name: str) -> type["HttpBackend"]:
        plugin = super().get(name)
        return plugin.load() if isinstance(plugin, BackendModule) else plugin

    def values(self) -> tuple[type["HttpBackend"], ...]:
        return tuple(self.get(name) for name in self.names())


BACKENDS = BackendRegistry("backend kind", key="kind")

# The kind a server named only by its URL (`--base-url` on the command line) is spoken to as,
# and the kind a command uses when no server is named (psyq's own local model).
URL_KIND = "openai"
DEFAULT_KIND = "local"


def register(kind: str, where: str) -> BackendModule:
    """Make the backend class `where` (``"package.module:Class"``) known under `kind`, without
    importing it: :func:`backend_class` imports it when it is first asked for. Returns the entry.

    Example (the line engine/backends/__init__.py has; registering it again changes nothing):
        >>> register("anthropic", "psyq.engine.backends.anthropic:AnthropicBackend")
        BackendModule(kind='anthropic', where='psyq.engine.backends.anthropic:AnthropicBackend')
    """
    return BACKENDS.register(BackendModule(kind, where))


def backend_class(kind: str) -> type["HttpBackend"]:
    """The class registered for `kind`, imported on first use (:class:`~psyq.engine.registry.UnknownName`,
    a KeyError naming the known kinds, if none)."""
    return BACKENDS.get(kind)


def backend_kinds() -> tuple[str, ...]:
    """The registered kinds, in registration order (nothing imported)."""
    return BACKENDS.names()


def kinds_where(attribute: str) -> tuple[str, ...]:
    """The registered kinds whose class has a true `attribute` (e.g. ``needs_base_url``), in order;
    imports every backend's module (messages that list the kinds able to do something use it)."""
    return tuple(kind for kind, cls in zip(BACKENDS.names(), BACKENDS.values()) if getattr(cls, attribute))


def quoted_kinds(kinds: tuple[str, ...]) -> str:
    """`kinds` as a message lists them.

    Example:
        >>> quoted_kinds(("openai", "anthropic", "local")), quoted_kinds(("local",))
        ("'openai', 'anthropic' or 'local'", "'local'")
    """
    quoted = [f"'{k}'" for k in kinds]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
