"""Safe YAML loading that remembers where every value was written.

PyYAML's safe loader builds plain dicts and lists and forgets positions; error messages need
them. We compose the node graph once, construct the data from it with the *safe* constructor,
and index each node's line and column by its field path. Duplicate keys, which PyYAML silently
accepts (the last one wins), are reported as problems: in an instrument a duplicated `reverse:`
or item id would otherwise change scores without a word.
"""

from __future__ import annotations

import re
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
    key_positions: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)

    def where(self, path: FieldPath) -> tuple[int | None, int | None]:
        """Position of `path`, or of its closest ancestor present in the file (for missing fields)."""
        for end in range(len(path), -1, -1):
            pos = self.positions.get(tuple(path[:end]))
            if pos is not None:
                return pos
        return (None, None)

    def problem(self, path: FieldPath, message: str, at_key: bool = False) -> Problem:
        """A :class:`Problem` located at `path` in this file (at its key with `at_key`, for
        problems with the field's name rather than its value)."""
        line, column = (self.key_positions.get(tuple(path)) if at_key else None) or self.where(path)
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
            doc.key_positions[path + (key,)] = _mark(key_node)
            _index(value_node, path + (key,), doc, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _index(child, path + (i,), doc, problems)


# PyYAML's wording for the syntax errors people make most, said in plain words.
_PLAIN_SYNTAX = {
    "mapping values are not allowed here":
        "a field (key: value) is not allowed here; check the indentation of this line against "
        "the line above",
    "found character '\\t' that cannot start any token":
        "this line is indented with a tab; indent with spaces only",
}
_QUOTE_OPENS = re.compile(r"""^\s*(?:-\s+)?(?:[^\s#'"][^#'"]*?:\s+)?(["'])""")


def _unclosed_quote(lines: list[str], before: int) -> tuple[int, int] | None:
    """(line, column) of the last value before line `before` whose quote is not closed on its line."""
    for number in range(min(before - 1, len(lines)), 0, -1):
        line = lines[number - 1]
        match = _QUOTE_OPENS.match(line)
        if not match:
            continue
        quote, rest = match.group(1), line[match.end():]
        # An escaped \" (double quotes) or a doubled '' (single quotes) does not close the text.
        rest = rest.replace('\\"', "") if quote == '"' else rest.replace("''", "")
        if quote not in rest:
            return number, match.start(1) + 1
    return None


def _syntax_problem(file: str, text: str, exc: yaml.MarkedYAMLError) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
    problem = str(exc.problem or "")
    if problem in _PLAIN_SYNTAX:
        return Problem(file, line, column, "", f"YAML syntax error: {_PLAIN_SYNTAX[problem]}")
    opened = _unclosed_quote(text.splitlines(), line) if line else None
    if opened:
        return Problem(file, opened[0], opened[1], "", "YAML syntax error: the quoted text that starts "
                       f"here is not closed (it runs on until line {line})")
    what = " ".join(str(x) for x in (exc.context, exc.problem) if x)
    return Problem(file, line, column, "", f"YAML syntax error: {what}")


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
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError.single(file, "file not found") from None
    except OSError as exc:
        raise InputError.single(file, f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[:exc.start].decode("utf-8", errors="replace")
        line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
        raise InputError.single(file, "the file is not UTF-8 text (the character here is in another "
                                      "encoding); save it as UTF-8", line, column) from None

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        raise InputError([_syntax_problem(file, text, exc)]) from None
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
        kind = "a list" if isinstance(data, list) else f"a single value ({data!r})"
        raise InputError.single(file, f"the file must be a mapping of fields (key: value), not {kind}",
                                line, column)
    return doc
