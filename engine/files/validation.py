"""Turn a parsed YAML document into a typed model, with errors in plain words.

Pydantic checks the shape (types, required fields, unknown fields); each of its errors is
re-worded for a psychologist rather than a Python programmer and located in the file through
the document's position index. Meaning checks (ids that must exist, ranges that must agree)
live beside each model as functions returning :class:`~psyq.engine.files.errors.Problem` lists.
:func:`load_document` is the one loader of psyq's YAML files: found (a shipped one by its name),
read, its shape checked, then its meaning.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.shipped import locate
from psyq.engine.files.yamlfile import FieldPath, YamlDocument, load_yaml

M = TypeVar("M", bound=BaseModel)
# The tags pydantic puts into an error's location for a discriminated union (the item kinds'
# names): added by the kinds' registry when a kind registers (engine/kinds/registry.py), so that
# reading files never imports the rooms above it.
UNION_TAGS: set[str] = set()


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model that holds the fields at `loc` (e.g. Item for ('items', 3)), if one does."""
    current: Any = model
    annotation: Any = None
    for part in loc:
        if isinstance(part, int):
            continue  # a list index: the element type is found with the field below
        if annotation is not None and isinstance(part, str):
            # A union tag (pydantic puts the item kind in the location): pick that member.
            tagged = [m for m in _models_in(annotation) if _kind_default(m) == part]
            if tagged:
                current, annotation = tagged[0], None
                continue
            # A key of a mapping written as data (a factor's levels, a price table's models): its value's model.
            if (values := _mapping_values(annotation)) is not None:
                annotation, current = values, _inner_model(values)
                continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) \
                or part not in current.model_fields:
            return None
        annotation = current.model_fields[part].annotation
        current = _inner_model(annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _mapping_values(annotation: Any) -> Any:
    """The type of the values of the mapping `annotation` is (or holds: ``dict[...] | None``), else None.

    Example:
        >>> _mapping_values(dict[str, int] | None)
        <class 'int'>
    """
    stack = [annotation]
    while stack:
        tp = stack.pop(0)
        if typing.get_origin(tp) is dict:
            return typing.get_args(tp)[1]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            stack.extend(typing.get_args(tp))
    return None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    found, stack = [], [annotation]
    while stack:
        tp = stack.pop(0)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            found.append(tp)
        else:
            stack.extend(getattr(tp, "__args__", ()))
    return found


def _kind_default(model: type[BaseModel]) -> Any:
    field = model.model_fields.get("kind")
    if field is None:
        return None
    return field.default if field.default is not None else getattr(field.annotation, "__args__", [None])[0]


def _inner_model(annotation: Any) -> Any:
    """The model inside list[...], dict[..., ...] or X | None, if any (else the annotation)."""
    stack = [annotation]
    while stack:
        tp = stack.pop(0)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp
        stack.extend(getattr(tp, "__args__", ()))
    return annotation


def _unknown_field(name: str, holder: type[BaseModel] | None) -> str:
    if holder is None:
        return f"unknown field '{name}'"
    allowed = list(holder.model_fields)
    close = difflib.get_close_matches(name, allowed, n=1)
    if close:
        return f"unknown field '{name}' (did you mean '{close[0]}'?)"
    # The model's name as a reader would say it: StudySpec -> "study", CohortFile -> "cohort".
    what = re.sub(r"(File|Spec|Params)$", "", holder.__name__).lower()
    article = "an" if what[0] in "aeiou" else "a"
    return f"unknown field '{name}' ({article} {what} can have: {', '.join(allowed)})"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def plain_message(error: dict[str, Any], model: type[BaseModel]) -> str:
    """Re-word one pydantic error (validating `model`) for someone who writes YAML, not Python.

    Example:
        >>> plain_message({"type": "bool_parsing", "input": "maybe", "msg": "", "loc": ("reverse",)}, BaseModel)
        "must be true or false, not 'maybe'"
    """
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if value is None and kind != "missing" and "input" in error:
        loc = tuple(error.get("loc", ()))
        holder = _model_at(model, loc[:-1]) if loc else None
        field = holder.model_fields.get(loc[-1]) if holder is not None and isinstance(loc[-1], str) else None
        return _nothing_after_colon(kind, optional=field is not None and not field.is_required())
    if kind == "list_type" and isinstance(value, dict):
        return ("must be a list (entries each starting with '- '), but fields (key: value) are written "
                "here: put '- ' before the first field of each entry")
    if kind in ("dict_type", "model_type", "model_attributes_type") and isinstance(value, list):
        return (f"must be a mapping of fields (key: value), but a list is written here ({_show(value)}): "
                "write 'name: value' lines without '- ' in front")
    if kind == "union_tag_invalid":
        return f"kind must be one of {ctx.get('expected_tags', '')}, not {ctx.get('tag')!r}"
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(str(error["loc"][-1]), _model_at(model, tuple(error["loc"][:-1])))
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false, not {_show(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be a whole number, not {_show(value)}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"must be a number, not {_show(value)}"
    if kind == "string_type" and isinstance(value, bool):
        return (f"must be text, not {str(value).lower()}: YAML reads an unquoted yes, no, on, off, true or "
                "false as true or false; put the text in quotes (e.g. \"Yes\")")
    if kind == "string_type":
        return f"must be text, not {_show(value)}"
    if kind == "list_type":
        return f"must be a list, not {_show(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of fields (key: value), not {_show(value)}"
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        return f"must be {'one of ' if ' or ' in expected else ''}{expected}, not {_show(value)}"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} entr{'y' if ctx.get('min_length') == 1 else 'ies'}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch":
        return (f"{_show(value)} is not a valid id: use letters, digits, '_', '-' or '.', "
                "starting with a letter or digit")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        limit = next(iter(ctx.values()), "")
        if kind == "greater_than" and isinstance(limit, int):  # whole numbers: "at least 2", not "> 1"
            kind, limit = "greater_than_equal", limit + 1
        words = {"greater_than": "greater than", "greater_than_equal": "at least",
                 "less_than": "less than", "less_than_equal": "at most"}[kind]
        return f"must be {words} {_number(limit)}, not {_show(value)}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    msg = str(error["msg"])
    return msg.replace("Input should be", "must be")


def _nothing_after_colon(kind: str, optional: bool = False) -> str:
    """A field written `name:` with nothing after it (YAML reads null), and what to write.

    Example:
        >>> _nothing_after_colon("list_type")[:40]
        'has nothing after its colon: write its e'
    """
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        what = "write its fields (key: value) on the lines below it, indented by 2 more spaces"
    elif kind == "list_type":
        what = "write its entries on the lines below it, each starting with '- ', indented by 2 more spaces"
    elif kind == "string_type":
        what = "write a text after the colon (a text starting with '#' needs quotes: '#' starts a comment)"
    elif kind.startswith(("int", "float")):
        what = "write a number after the colon"
    elif kind.startswith("bool"):
        what = "write true or false after the colon"
    else:
        what = "write its value after the colon"
    return f"has nothing after its colon: {what}" + (" (or remove the line: the field is optional)" if optional else "")


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
        problems: list[Problem] = []
        for error in exc.errors():
            loc = root + _untagged(tuple(error["loc"]))
            if loc and loc[-1] == "[key]":   # a mapping's key is wrong: point at the mapping (a YAML true has no name)
                loc = loc[:-2] if isinstance(error.get("input"), bool) else loc[:-1]
            problems.append(doc.problem(loc, plain_message(error, model),
                                        at_key=error["type"] == "extra_forbidden" or _is_empty_value(error)))
        raise InputError(_dedupe(sorted(problems, key=_position))) from None


def _untagged(loc: tuple) -> tuple:
    """Drop the union tags pydantic puts in a location (items.3.<kind>.text → items[3].text)."""
    tags = UNION_TAGS
    return tuple(p for i, p in enumerate(loc) if not (p in tags and i and isinstance(loc[i - 1], int)))


def _is_empty_value(error: dict[str, Any]) -> bool:
    """A field written with nothing after its colon (pointed at by its name: the null has no place)."""
    return "input" in error and error["input"] is None and error["type"] != "missing"


def _position(problem: Problem) -> tuple[int, int]:
    return (problem.line or 0, problem.column or 0)


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


class LoadedDocument(NamedTuple, Generic[M]):
    """A YAML file read and checked by :func:`load_document`: its model, the document (for the
    positions of later problems) and the file's path."""

    spec: M
    doc: YamlDocument
    path: Path


def load_document(path: str | Path, model: type[M], kind: str | None = None,
                  check: Callable[[M, YamlDocument], list[Problem]] | None = None) -> LoadedDocument[M]:
    """Read a YAML file of psyq's (with `kind`, a path or the name of a shipped file of that
    kind: :func:`~psyq.engine.files.shipped.locate`), check its shape against `model`, then,
    with `check`, its meaning; raises :class:`InputError` naming file, line, column and field of
    every problem, shape problems before meaning.

    Example (any model: here only a file's format and id):
        >>> class Named(BaseModel):
        ...     psyq: str
        ...     id: str
        >>> spec, doc, path = load_document("iri", Named, "instrument")
        >>> spec.psyq, spec.id, path.name
        ('instrument/1', 'iri', 'iri.yaml')
    """
    if kind is not None:
        path = locate(path, kind)
    doc = load_yaml(path)
    spec = parse_document(doc, model)
    if check is not None:
        raise_problems(check(spec, doc))
    return LoadedDocument(spec, doc, Path(path))
