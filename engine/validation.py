"""Turn a parsed YAML document into a typed model, with errors in plain words.

Pydantic checks the shape (types, required fields, unknown fields); each of its errors is
re-worded for a psychologist rather than a Python programmer and located in the file through
the document's position index. Meaning checks (ids that must exist, ranges that must agree)
live beside each model as functions returning :class:`~engine.errors.Problem` lists.
"""

from __future__ import annotations

import difflib
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InputError, Problem
from .yamlfile import FieldPath, YamlDocument

M = TypeVar("M", bound=BaseModel)


def _field_names(model: type[BaseModel], seen: set[type] | None = None) -> set[str]:
    """All field names of `model` and of the models nested in it (for 'did you mean')."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    names = set(model.model_fields)
    for info in model.model_fields.values():
        stack = [info.annotation]
        while stack:
            tp = stack.pop()
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                names |= _field_names(tp, seen)
            stack.extend(getattr(tp, "__args__", ()))
    return names


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def plain_message(error: dict[str, Any], known_fields: set[str]) -> str:
    """Re-word one pydantic error for someone who writes YAML, not Python.

    Example:
        >>> plain_message({"type": "bool_parsing", "input": "maybe", "msg": "", "loc": ("reverse",)}, set())
        "must be true or false, not 'maybe'"
    """
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        name = str(error["loc"][-1])
        close = difflib.get_close_matches(name, sorted(known_fields), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"unknown field '{name}'{hint}"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false, not {_show(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be a whole number, not {_show(value)}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"must be a number, not {_show(value)}"
    if kind == "string_type":
        return f"must be text, not {_show(value)}"
    if kind == "list_type":
        return f"must be a list, not {_show(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of fields (key: value), not {_show(value)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}, not {_show(value)}"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} entr{'y' if ctx.get('min_length') == 1 else 'ies'}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch":
        return (f"{_show(value)} is not a valid id: use letters, digits, '_', '-' or '.', "
                "starting with a letter or digit")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {"greater_than": "greater than", "greater_than_equal": "at least",
                 "less_than": "less than", "less_than_equal": "at most"}[kind]
        limit = next(iter(ctx.values()), "")
        return f"must be {words} {limit}, not {_show(value)}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    msg = str(error["msg"])
    return msg.replace("Input should be", "must be")


def parse_document(doc: YamlDocument, model: type[M], root: FieldPath = ()) -> M:
    """Validate `doc.data` (or its sub-tree at `root`) against `model`.

    Raises :class:`InputError` listing every shape problem with file, line, column and field.
    """
    data = doc.data
    for part in root:
        data = data[part]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        known = _field_names(model)
        problems: list[Problem] = []
        for error in exc.errors():
            loc = root + tuple(error["loc"])
            problems.append(doc.problem(loc, plain_message(error, known)))
        raise InputError(_dedupe(problems)) from None


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[str] = set()
    out = []
    for p in problems:
        if str(p) not in seen:
            seen.add(str(p))
            out.append(p)
    return out


def raise_problems(problems: list[Problem]) -> None:
    """Raise an :class:`InputError` if there is anything in `problems`."""
    if problems:
        raise InputError(_dedupe(problems))
