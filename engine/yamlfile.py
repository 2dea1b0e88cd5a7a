"""Safe YAML loading that remembers where every value was written.

PyYAML's safe loader builds plain dicts and lists and forgets positions; error messages need
them. We compose the node graph once, construct the data from it with the *safe* constructor,
and index each node's line and column by its field path. Duplicate keys, which PyYAML silently
accepts (the last one wins), are reported as problems: in an instrument a duplicated `reverse:`
or item id would otherwise change scores without a word.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError, Problem

FieldPath = tuple[str | int, ...]


def format_path(path: FieldPath) -> str:
    """Render a field path the way users write it.

    Example:
        >>> format_path(("items", 3, "reverse"))
        'items[3].reverse'
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class YamlDocument:
    """A parsed YAML file: its data and the 1-based (line, column) of every field path."""

    file: str
    data: Any
    positions: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)

    def where(self, path: FieldPath) -> tuple[int | None, int | None]:
        """Position of `path`, or of its closest ancestor present in the file (for missing fields)."""
        for end in range(len(path), -1, -1):
            pos = self.positions.get(tuple(path[:end]))
            if pos is not None:
                return pos
        return (None, None)

    def problem(self, path: FieldPath, message: str) -> Problem:
        """A :class:`Problem` located at `path` in this file."""
        line, column = self.where(path)
        return Problem(self.file, line, column, format_path(path), message)


def _mark(node: yaml.Node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _index(node: yaml.Node, path: FieldPath, doc: YamlDocument, problems: list[Problem]) -> None:
    doc.positions[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            if key == "<<":  # merge key: its fields are indexed where they were written
                continue
            if key in seen:
                line, column = _mark(key_node)
                problems.append(Problem(doc.file, line, column, format_path(path + (key,)),
                                        f"duplicate key '{key}' (first written on line {seen[key]})"))
                continue
            seen[key] = _mark(key_node)[0]
            _index(value_node, path + (key,), doc, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _index(child, path + (i,), doc, problems)


def load_yaml(path: str | Path) -> YamlDocument:
    """Load one YAML document with the safe loader, keeping positions.

    Raises :class:`InputError` (file, line, column, what) for unreadable files, syntax errors,
    duplicate keys and documents that are not a mapping.

    Example:
        >>> doc = load_yaml("instruments/iri.yaml")  # doctest: +SKIP
        >>> doc.where(("items", 0, "text"))           # doctest: +SKIP
        (9, 20)
    """
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError.single(file, "file not found") from None
    except UnicodeDecodeError as exc:
        raise InputError.single(file, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError.single(file, f"cannot read: {exc.strerror}") from None

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise InputError.single(file, f"YAML syntax error: {what}", line, column) from None
    except yaml.YAMLError as exc:
        raise InputError.single(file, f"YAML error: {exc}") from None
    finally:
        loader.dispose()

    doc = YamlDocument(file, data)
    if node is None:
        raise InputError.single(file, "the file is empty")
    problems: list[Problem] = []
    _index(node, (), doc, problems)
    if problems:
        raise InputError(problems)
    if not isinstance(data, dict):
        line, column = _mark(node)
        raise InputError.single(file, "the file must be a mapping of fields (key: value)", line, column)
    return doc
