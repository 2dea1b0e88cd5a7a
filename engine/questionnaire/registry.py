"""The registry of questionnaire formats: the name ``psyq questionnaire --to NAME`` uses and the
:class:`~psyq.engine.questionnaire.base.QuestionnaireFormat` behind it.

Apart from the package ``__init__`` (which registers the built-in formats), so that the formats'
modules never import the package that imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psyq.engine.registry import Registry

if TYPE_CHECKING:
    from psyq.engine.questionnaire.base import QuestionnaireFormat

FORMATS: Registry["QuestionnaireFormat"] = Registry("questionnaire format")


def register(form: "QuestionnaireFormat") -> "QuestionnaireFormat":
    """Make `form` available as ``psyq questionnaire --to <form.name>``; returns it."""
    return FORMATS.register(form)


def get_format(name: str) -> "QuestionnaireFormat":
    """The format registered as `name` (:class:`~psyq.engine.registry.UnknownName`, a KeyError
    naming the known formats, if none)."""
    return FORMATS.get(name)


def format_names() -> tuple[str, ...]:
    """Names of the registered formats, in registration order."""
    return FORMATS.names()
