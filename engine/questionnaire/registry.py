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

# The registry's own methods are the package's API: one shape for every set of plug-ins.
FORMATS: Registry["QuestionnaireFormat"] = Registry("questionnaire format")
register = FORMATS.register            # make a format available as ``psyq questionnaire --to <form.name>``
get_format = FORMATS.get               # UnknownName (a KeyError naming the known formats) if none
format_names = FORMATS.names           # in registration order
