"""The registry of importers: the name ``psyq import NAME`` uses and the :class:`Importer` behind it.

Apart from the package ``__init__`` (which registers the built-in formats), so that the formats'
modules and the command never import the package that imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psyq.engine.registry import Registry

if TYPE_CHECKING:
    from psyq.engine.importers.base import Importer

IMPORTERS: Registry["Importer"] = Registry("importer")


def register(importer: "Importer") -> "Importer":
    """Make `importer` available as ``psyq import <importer.name>``; returns it."""
    return IMPORTERS.register(importer)


def get_importer(name: str) -> "Importer":
    """The importer registered as `name` (:class:`~psyq.engine.registry.UnknownName`, a KeyError
    naming the known formats, if none)."""
    return IMPORTERS.get(name)


def importer_names() -> tuple[str, ...]:
    """Names of the registered importers, in registration order."""
    return IMPORTERS.names()
