"""The registry of importers: the name ``psyq import NAME`` uses and the :class:`Importer` behind it.

Apart from the package ``__init__`` (which registers the built-in formats), so that the formats'
modules and the command never import the package that imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psyq.engine.registry import Registry

if TYPE_CHECKING:
    from psyq.engine.importers.base import Importer

# The registry's own methods are the package's API: one shape for every set of plug-ins.
IMPORTERS: Registry["Importer"] = Registry("importer")
register = IMPORTERS.register          # make an importer available as ``psyq import <importer.name>``
get_importer = IMPORTERS.get           # UnknownName (a KeyError naming the known formats) if none
importer_names = IMPORTERS.names       # in registration order
