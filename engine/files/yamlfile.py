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

from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.inputfile import read_input_bytes, decode_text
from psyq.engine.files.yamlhints import empty_file_message, explain_syntax_error, key_and_value, quoted

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
        path = self.as_written(path)
        for end in range(len(path), -1, -1):
            pos = self.positions.get(tuple(path[:end]))
            if pos is not None:
                return pos
        return (None, None)

    def problem(self, path: FieldPath, message: str, at_key: bool = False) -> Problem:
        """A :class:`Problem` located at `path` in this file (at its key with `at_key`, for
        problems with the field's name rather than its value)."""
        line, column = (self.key_positions.get(self.as_written(path)) if at_key else None) or self.where(path)
        return Problem(self.file, line, column, format_path(path), message)

    def as_written(self, path: FieldPath) -> FieldPath:
        """`path` with each number that is a mapping's key in the file (``1:``, as an anchors file
        keys its statements by option value) written as that key is indexed, as text; a list's
        index stays a number.

        Example:
            >>> doc = YamlDocument("a.yaml", None, {("sets",): (1, 1), ("sets", 0): (2, 3), ("sets", 0, "2"): (4, 5)})
            >>> doc.as_written(("sets", 0, 2)), doc.where(("sets", 0, 2))
            (('sets', 0, '2'), (4, 5))
        """
        out: tuple[str | int, ...] = ()
        for part in path:
            if isinstance(part, int) and out + (part,) not in self.positions and out + (str(part),) in self.positions:
                part = str(part)
            out += (part,)
        return out


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
                                        f"duplicate key '{key}' (first written on line {seen[key]}); YAML would "
                                        "silently keep only the last one: remove one of them, or rename it"))
                continue
            seen[key] = _mark(key_node)[0]
            doc.key_positions[path + (key,)] = _mark(key_node)
            _index(value_node, path + (key,), doc, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _index(child, path + (i,), doc, problems)


# Bounds that no psyq file comes near and that stop a small hostile file from taking the
# memory or the stack: nesting depth, and nodes added by expanding aliases (*name), which
# PyYAML shares in the node graph but every reader of the data (the position index, pydantic)
# walks as a tree, so that ten nested aliases of ten copies each make 10**10 values.
MAX_DEPTH = 100
MAX_ALIAS_NODES = 100_000


class _BoundedComposer(yaml.composer.Composer):
    """PyYAML's composer, refusing deep nesting, recursive aliases and alias expansions above
    :data:`MAX_ALIAS_NODES` while the node graph is composed (before anything walks it)."""

    def _bound(self, file: str) -> None:
        self._file = file
        self._depth = 0
        self._open_anchors: set[str] = set()
        self._sizes: dict[int, int] = {}     # id(node) -> number of nodes of its expansion
        self._alias_nodes = 0
        self.anchored_texts: dict[str, yaml.Mark] = {}   # &name on a text value -> where
        self.aliased: set[str] = set()                    # names referred to with *name

    def _refuse(self, mark: yaml.Mark, message: str) -> InputError:
        return InputError.single(self._file, message, mark.line + 1, mark.column + 1)

    def compose_node(self, parent: Any, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self.aliased.add(event.anchor)
            if event.anchor in self._open_anchors:
                raise self._refuse(event.start_mark, f"the alias *{event.anchor} is inside the value "
                                   f"&{event.anchor} it refers to (a recursive alias); write the value out")
            node = super().compose_node(parent, index)
            self._alias_nodes += self._sizes.get(id(node), 1)
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise self._refuse(event.start_mark, f"aliases (*name) expand to more than "
                                   f"{MAX_ALIAS_NODES:,} values in this file; write the values out "
                                   "or use fewer nested aliases")
            return node
        if self._depth >= MAX_DEPTH:
            raise self._refuse(event.start_mark, f"values are nested more than {MAX_DEPTH} levels deep here")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open_anchors.add(anchor)
            if isinstance(event, yaml.ScalarEvent):
                self.anchored_texts[anchor] = event.start_mark
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open_anchors.discard(anchor)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        self._sizes[id(node)] = 1 + sum(self._sizes.get(id(child), 1) for child in children)
        return node


class _BoundedLoader(_BoundedComposer, yaml.SafeLoader):
    """The pure-Python safe loader with the bounds of :class:`_BoundedComposer`."""

    def __init__(self, file: str, text: str):
        yaml.SafeLoader.__init__(self, text)
        self._bound(file)


try:
    from yaml._yaml import CParser

    class _FastLoader(_BoundedComposer, CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """libyaml's parser (five times faster on a large file) feeding the same bounded
        composer and the safe constructor. Its syntax errors are worded differently, so a file
        it refuses is read again by :class:`_BoundedLoader` for PyYAML's messages."""

        def __init__(self, file: str, text: str):
            CParser.__init__(self, text)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self._bound(file)
except ImportError:  # PyYAML built without libyaml
    _FastLoader = None  # type: ignore[assignment,misc]


def _compose(loader: Any) -> tuple[yaml.Node | None, Any, list[tuple[str, yaml.Mark]]]:
    """The node graph, the data, and the anchors (&name) put on a text and never referred to."""
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        unused = [(a, m) for a, m in loader.anchored_texts.items() if a not in loader.aliased]
        return node, data, unused
    finally:
        loader.dispose()


def _unused_anchor(file: str, text: str, anchor: str, mark: yaml.Mark) -> Problem:
    """A text written `key: &word more` loses '&word' (YAML reads an anchor); said, with the fix."""
    lines = text.splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    key, value = key_and_value(line)
    return Problem(file, mark.line + 1, mark.column + 1, "",
                   f"'&{anchor}' at the start of this value is read by YAML as an anchor name and left out of "
                   f"the text (nothing in the file refers to it as *{anchor}); if the text starts with '&', "
                   f"put it in quotes: {quoted(key, value)}")


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


# Parser errors whose place is exact whatever quotes came before (see engine/files/yamlhints.py).
_EXACT = ("found character", "found undefined alias")


def _syntax_problem(file: str, text: str, exc: yaml.MarkedYAMLError) -> Problem:
    """The syntax error in plain words (engine/files/yamlhints.py); a quote opened on an earlier line
    and never closed there, which makes the parser fail further down, is named first."""
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else None
    problem = str(exc.problem or "")
    if line and not problem.startswith(_EXACT) and exc.context != "while scanning a quoted scalar":
        opened = _unclosed_quote(text.splitlines(), line)
        if opened:
            quote = text.splitlines()[opened[0] - 1][opened[1] - 1]
            return Problem(file, opened[0], opened[1], "", "YAML syntax error: the quoted text that starts "
                           f"here is not closed on its line (the file cannot be read from line {line} on); "
                           f"end it with {quote} on the same line")
    return explain_syntax_error(file, text, exc)


def load_yaml(path: str | Path) -> YamlDocument:
    """Load one YAML document with the safe loader, keeping positions.

    Raises :class:`InputError` (file, line, column, what) for unreadable files (not a regular
    file, larger than :data:`~psyq.engine.files.inputfile.MAX_FILE_BYTES`, not UTF-8, NUL bytes), syntax
    errors, nesting deeper than :data:`MAX_DEPTH`, recursive aliases or aliases expanding to
    more than :data:`MAX_ALIAS_NODES` values, duplicate keys and documents that are not a mapping.

    Example (a path, not a shipped name: :func:`psyq.engine.files.shipped.locate` finds those):
        >>> from psyq.engine.files.shipped import locate
        >>> doc = load_yaml(locate("iri", "instrument"))
        >>> doc.data["id"], doc.where(("items", 0, "text"))      # line and column of the first item's text
        ('iri', (65, 21))
    """
    file = str(path)
    text = decode_text(file, read_input_bytes(path))
    try:
        try:
            if _FastLoader is None:
                raise yaml.YAMLError("libyaml is not available")
            node, data, unused = _compose(_FastLoader(file, text))
        except yaml.YAMLError:
            node, data, unused = _compose(_BoundedLoader(file, text))
    except yaml.MarkedYAMLError as exc:
        raise InputError([_syntax_problem(file, text, exc)]) from None
    except RecursionError:  # not expected below MAX_DEPTH; said plainly rather than as a traceback
        raise InputError.single(file, "values are nested too deeply") from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, by its position in the text
        before = text[:exc.position]
        line, column = before.count("\n") + 1, exc.position - before.rfind("\n")
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise InputError.single(file, f"the character U+{code:04X} is not allowed in a YAML file "
                                      "(a control character); remove it", line, column) from None
    except yaml.YAMLError as exc:
        raise InputError.single(file, f"YAML error: {exc}") from None

    doc = YamlDocument(file, data)
    if node is None:
        raise InputError.single(file, empty_file_message(text))
    problems: list[Problem] = [_unused_anchor(file, text, a, m) for a, m in unused]
    _index(node, (), doc, problems)
    if problems:
        raise InputError(list(dict.fromkeys(problems)))  # an aliased mapping is indexed once per use
    if not isinstance(data, dict):
        line, column = _mark(node)
        kind = "a list" if isinstance(data, list) else f"a single value ({data!r})"
        raise InputError.single(file, f"the file must be a mapping of fields (key: value), not {kind}",
                                line, column)
    return doc
