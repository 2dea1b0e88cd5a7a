"""Field types shared by every file format (instruments, cohorts, studies, backends)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, StringConstraints


def number_to_text(value: Any) -> Any:
    """YAML reads `id: 1` and `version: 1980` as numbers; they are names, so accept them as text."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Id = Annotated[
    str,
    BeforeValidator(number_to_text, json_schema_input_type=str | int),
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
]
Text = Annotated[str, StringConstraints(min_length=1)]


class StrictModel(BaseModel):
    """A model read from a user's file: unknown fields are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def format_json_schema(model: type[BaseModel], title: str) -> dict[str, Any]:
    """The JSON Schema of one of psyq's file formats (what ``psyq schema`` prints), for editors.

    Example:
        >>> class Demo(StrictModel):
        ...     id: str
        >>> format_json_schema(Demo, "psyq demo")["title"]
        'psyq demo'
    """
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = title
    return schema
