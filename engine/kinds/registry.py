"""The registry of item kinds: the `kind:` name of an item and the :class:`ItemKind` that handles it.

Apart from the package ``__init__`` (which registers the built-in kinds) so that modules the kinds
themselves use (e.g. :mod:`psyq.engine.files.validation`) can ask it without importing any kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from psyq.engine.files.validation import UNION_TAGS
from psyq.engine.registry import Registry

if TYPE_CHECKING:
    from psyq.engine.design.instrument import Instrument
    from psyq.engine.kinds.base import ItemKind

KINDS: Registry["ItemKind"] = Registry("item kind")


def register(kind: "ItemKind") -> "ItemKind":
    """Make `kind` known under its `name` (the `kind:` of its items); returns it.

    Register at the end of engine/kinds/__init__.py: the instrument model is built from the kinds registered
    when :mod:`psyq.engine.design.instrument` is first imported (which ``import engine`` does).
    """
    KINDS.register(kind)
    UNION_TAGS.add(kind.name)   # error locations name the item's fields, not its kind's tag
    return kind


def get_kind(name: str) -> "ItemKind":
    """The registered kind called `name` (:class:`~psyq.engine.registry.UnknownName`, a KeyError
    naming the known kinds, if none)."""
    return KINDS.get(name)


def item_kinds() -> tuple[str, ...]:
    """Names of the registered kinds, in registration order."""
    return KINDS.names()


def all_kinds() -> tuple["ItemKind", ...]:
    """The registered kinds, in registration order."""
    return KINDS.values()


def score_kinds() -> dict[str, str]:
    """Each subscale `score:` rule and the kind of item it scores."""
    return {score: kind.name for kind in KINDS.values() for score in kind.scores}


def instruments_with(name: str, instruments: Mapping[str, "Instrument"]) -> list[str]:
    """Ids of the instruments in `instruments` that hold items of the kind `name`, in order.

    Example:
        >>> from psyq import load_instrument
        >>> shipped = {"iri": load_instrument("iri"), "leas": load_instrument("leas_psyq")}
        >>> instruments_with("rating", shipped), [i for i in shipped if i not in instruments_with("rating", shipped)]
        (['iri'], ['leas'])
    """
    return [i for i, inst in instruments.items() if any(x.kind == name for x in inst.items)]
