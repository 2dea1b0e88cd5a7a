"""One shape for every set of plug-ins: a name, the plug-in registered under it, in order.

Backends (``kind:`` of a study's backend entry), item kinds (``kind:`` of an item), importers
(``psyq import NAME``), questionnaire formats (``psyq questionnaire --to NAME``) and the report's
sections (:mod:`psyq.analysis.report.sections`) are each a :class:`Registry`; a package registers
its built-in plug-ins in its ``__init__.py`` and everything else asks the registry (its methods,
under the package's own names where it gives them, as ``get_importer = IMPORTERS.get``), never
names a plug-in. The registry imports nothing of psyq's own, so that any room can hold one.

Example:
    >>> class Csv:
    ...     name = "csv"
    >>> formats = Registry("format")
    >>> formats.register(Csv) is Csv
    True
    >>> formats.names(), formats.get("csv") is Csv, "csv" in formats
    (('csv',), True, True)
    >>> try:
    ...     formats.get("tsv")
    ... except KeyError as unknown:   # an UnknownName
    ...     print(unknown)
    unknown format 'tsv'; known: csv
"""

from __future__ import annotations

from typing import Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """No plug-in is registered under the name asked for; the message lists the names there are.

    A ``KeyError``, so that a caller may catch it as one; printed as its message (not quoted).
    """

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """Plug-ins by name, in registration order.

    `what` names one plug-in in messages ("item kind", "importer", "backend kind"); `key` is the
    attribute that holds a plug-in's name (``name``, or ``kind`` for backend classes).

    Example:
        >>> r = Registry("importer")
        >>> qsf = r.register(type("Qsf", (), {"name": "qsf"}))
        >>> r.names(), len(r)
        (('qsf',), 1)
    """

    def __init__(self, what: str, key: str = "name"):
        self.what, self.key = what, key
        self._plugins: dict[str, T] = {}

    def register(self, plugin: T) -> T:
        """Make `plugin` known under its name; returns it (ValueError if another has the name)."""
        name = getattr(plugin, self.key)
        if name in self._plugins and self._plugins[name] is not plugin:
            raise ValueError(f"{self.what} '{name}' is registered already")
        self._plugins[name] = plugin
        return plugin

    def get(self, name: str) -> T:
        """The plug-in registered as `name`; :class:`UnknownName` (a KeyError) listing the known
        names if there is none."""
        try:
            return self._plugins[name]
        except (KeyError, TypeError):
            raise UnknownName(f"unknown {self.what} {name!r}; known: {', '.join(self._plugins)}") from None

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._plugins)

    def values(self) -> tuple[T, ...]:
        """The registered plug-ins, in registration order."""
        return tuple(self._plugins.values())

    def __contains__(self, name: object) -> bool:
        try:
            return name in self._plugins
        except TypeError:   # an unhashable value (a list written where a name belongs)
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)
