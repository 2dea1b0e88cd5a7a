"""The registry of backends: the `kind:` of a study's backend entry and the class that speaks it.

Apart from the package ``__init__`` (which registers the built-in kinds), so that
:class:`~psyq.engine.backends.base.BackendConfig` can check a `kind:` against it without
importing any backend. What differs between kinds is said by the class (its attributes, e.g.
:attr:`~psyq.engine.backends.base.HttpBackend.needs_model`, and methods), never by a test of
the kind's name outside ``engine/backends/``.

Example:
    >>> backend_kinds()
    ('openai', 'anthropic', 'local')
    >>> backend_class("anthropic").needs_base_url, kinds_where("starts_server")
    (False, ('local',))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psyq.engine.registry import Registry

if TYPE_CHECKING:
    from psyq.engine.backends.base import HttpBackend

BACKENDS: Registry[type["HttpBackend"]] = Registry("backend kind", key="kind")

# The kind a server named only by its URL (`--base-url` on the command line) is spoken to as,
# and the kind a command uses when no server is named (psyq's own local model).
URL_KIND = "openai"
DEFAULT_KIND = "local"


def register(backend: type["HttpBackend"]) -> type["HttpBackend"]:
    """Make the backend class `backend` known under its `kind`; returns it."""
    return BACKENDS.register(backend)


def backend_class(kind: str) -> type["HttpBackend"]:
    """The class registered for `kind` (:class:`~psyq.engine.registry.UnknownName`, a KeyError
    naming the known kinds, if none)."""
    return BACKENDS.get(kind)


def backend_kinds() -> tuple[str, ...]:
    """The registered kinds, in registration order."""
    return BACKENDS.names()


def kinds_where(attribute: str) -> tuple[str, ...]:
    """The registered kinds whose class has a true `attribute` (e.g. ``needs_base_url``), in order."""
    return tuple(kind for kind, cls in zip(BACKENDS.names(), BACKENDS.values()) if getattr(cls, attribute))


def quoted_kinds(kinds: tuple[str, ...]) -> str:
    """`kinds` as a message lists them.

    Example:
        >>> quoted_kinds(("openai", "anthropic", "local")), quoted_kinds(("local",))
        ("'openai', 'anthropic' or 'local'", "'local'")
    """
    quoted = [f"'{k}'" for k in kinds]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
