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
