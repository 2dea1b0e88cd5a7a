"""Item kinds as plug-ins: one module per kind of item, and the registry that finds them.

An instrument's items are told apart by `kind:` (`rating` when left out). Everything that is
particular to one kind (the fields of its items and their meaning checks, the subscale scoring
rules it owns, the range of its scores) lives in that kind's module; the shared machinery asks
the registry instead of branching on the kind's name:

- :mod:`engine.instrument` builds its item union, its `score:` rules and its checks from the
  registered kinds;
- :mod:`engine.validation` strips the kinds' tags from error locations.

Built in: :mod:`~engine.kinds.rating` (answered on the instrument's scale),
:mod:`~engine.kinds.scene` (free-text LEAS-format scenes), :mod:`~engine.kinds.vignette`
(empathic-accuracy stories with stop points).

How to add a kind
-----------------
Write one module in this package and register an instance of your :class:`ItemKind` at the
end of this file. The smallest kind, :mod:`engine.kinds.scene`, is the worked example::

    # engine/kinds/scene.py
    class SceneItem(StrictModel):
        id: Id
        kind: Literal["scene"]          # the tag that picks this model in an instrument file
        text: Text
        other: Text
        subscales: list[Id] = Field(default_factory=list)

    class Scene(ItemKind):
        name = "scene"
        model = SceneItem
        scores = ("leas_self", "leas_other", "leas_total")   # the `score:` rules it owns

        def score_range(self, inst, score):                   # for checking norm values
            return {"leas_self": (0, 4), "leas_other": (0, 4), "leas_total": (0, 5)}[score]

    # engine/kinds/__init__.py (below)
    register(scene.Scene())

That is all the instrument format needs: `kind: scene` items validate, their subscales may use
the kind's score rules, and errors name the item's fields. Override
:meth:`ItemKind.check_instrument` / :meth:`ItemKind.check_item` for meaning checks.
Administering, scoring and reporting a kind are not plug-ins yet (they still branch on the
kind in engine/runner.py, prompts.py, parsing.py and the analysis modules).

Example:
    >>> get_kind("scene").scores
    ('leas_self', 'leas_other', 'leas_total')
    >>> item_kinds()
    ('rating', 'scene', 'vignette')
"""

from __future__ import annotations

from .base import ItemKind

_REGISTRY: dict[str, ItemKind] = {}


def register(kind: ItemKind) -> ItemKind:
    """Make `kind` known under its `name` (the `kind:` of its items); returns it.

    Register before :mod:`engine.instrument` is imported: the instrument model is built from
    the kinds registered then.
    """
    if kind.name in _REGISTRY and _REGISTRY[kind.name] is not kind:
        raise ValueError(f"item kind '{kind.name}' is registered already")
    _REGISTRY[kind.name] = kind
    return kind


def get_kind(name: str) -> ItemKind:
    """The registered kind called `name` (KeyError if none)."""
    return _REGISTRY[name]


def item_kinds() -> tuple[str, ...]:
    """Names of the registered kinds, in registration order."""
    return tuple(_REGISTRY)


def all_kinds() -> tuple[ItemKind, ...]:
    """The registered kinds, in registration order."""
    return tuple(_REGISTRY.values())


def score_kinds() -> dict[str, str]:
    """Each subscale `score:` rule and the kind of item it scores."""
    return {score: kind.name for kind in _REGISTRY.values() for score in kind.scores}


from . import rating, scene, vignette  # noqa: E402  (the built-in kinds, registered in this order)

register(rating.Rating())
register(scene.Scene())
register(vignette.Vignette())

__all__ = ["ItemKind", "register", "get_kind", "item_kinds", "all_kinds", "score_kinds"]
