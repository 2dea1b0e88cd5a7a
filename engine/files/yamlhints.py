"""YAML syntax errors said in plain words, at the line to fix, with the fix.

PyYAML reports where its parser gave up, in its own terms ("expected <block end>, but found
'?'"); the mistake is often elsewhere (a missing colon is reported on the *next* line) and the
words mean nothing to someone who writes a questionnaire. :func:`explain_syntax_error` looks
at the parser's error and at the lines of the file around it and recognises the mistakes people
make most: indentation that lines up with nothing, a missing colon, a tab, an unquoted ': '
inside a text, a text starting with a character YAML reserves, an unclosed quote or bracket, a
list entry without its dash. What it does not recognise keeps the parser's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from psyq.engine.files.errors import Problem

PREFIX = "YAML syntax error: "
# Characters that cannot start a plain (unquoted) text in YAML, and what YAML takes them for.
RESERVED_START = {"@": "reserved", "`": "reserved", "%": "a directive", "*": "an alias (*name)",
                  "&": "an anchor (&name)", "!": "a tag (!name)", "|": "a block text", ">": "a folded text"}
_KEY = re.compile(r"""^(?P<indent>\s*)(?P<dash>-\s+)?(?P<key>[^\s#'"{}\[\]][^#]*?):(?:\s+|$)""")


@dataclass(frozen=True)
class _Line:
    number: int        # 1-based
    indent: int        # spaces before the first character (a list dash is not counted: see open_levels)
    text: str


def _content_lines(lines: list[str], before: int) -> list[_Line]:
    """Lines above line `before` (1-based) that hold something, nearest first."""
    out = []
    for number in range(min(before - 1, len(lines)), 0, -1):
        text = lines[number - 1]
        stripped = text.strip()
        if stripped and not stripped.startswith("#"):
            out.append(_Line(number, len(text) - len(text.lstrip(" ")), text))
    return out


def open_levels(lines: list[str], line: int) -> list[tuple[int, int]]:
    """(indentation, line number) of each block still open at line `line`: the indentation a
    new line there may have. The nearest line above, then each less-indented ancestor; the
    content after a list dash (``- id: x``) is a level of its own.

    Example:
        >>> open_levels(["a:", "  - id: 1", "    b: 2", "x"], 4)
        [(4, 3), (2, 2), (0, 1)]
    """
    levels: list[tuple[int, int]] = []
    limit = None
    for above in _content_lines(lines, line):
        if limit is not None and above.indent >= limit:
            continue
        dash = re.match(r"^(\s*)-(\s+)\S", above.text)
        inner = len(dash.group(1)) + 1 + len(dash.group(2)) if dash else None
        if inner is not None and (limit is None or inner < limit):
            levels.append((inner, above.number))
        levels.append((above.indent, above.number))
        limit = above.indent
        if limit == 0:
            break
    return levels


def empty_file_message(text: str) -> str:
    """What to say of a file with no YAML value in it: empty, or only comments.

    Example:
        >>> empty_file_message("# to do\\n")[:45]
        'the file holds only comments (lines starting '
    """
    start = ("a psyq file starts with its format, e.g. 'psyq: instrument/1' (or cohort/1, study/1), "
             "followed by its fields")
    if any(line.strip() for line in text.splitlines()):
        return f"the file holds only comments (lines starting with '#') and no fields; {start}"
    return f"the file is empty; {start}"


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def quoted(key: str, value: str) -> str:
    """`key: "value"` as the user should write it (double quotes, inner ones escaped).

    Example:
        >>> quoted("text", 'I said "hi": yes')
        'text: "I said \\\\"hi\\\\": yes"'
    """
    inner = value.strip().replace("\\", "\\\\").replace('"', '\\"')
    return f'{key}: "{inner}"' if key else f'"{inner}"'


def key_and_value(text: str) -> tuple[str, str]:
    """The field name and the rest of a `key: value` line ("" for the key when there is none).

    Example:
        >>> key_and_value("  - text: I feel: happy")
        ('text', 'I feel: happy')
    """
    match = _KEY.match(text)
    if not match:
        stripped = text.strip()
        return "", stripped[2:] if stripped.startswith("- ") else stripped
    return match.group("key").strip(), text[match.end():]


def _levels_words(levels: list[tuple[int, int]], lines: list[str]) -> str:
    seen: dict[int, int] = {}
    for indent, number in levels:
        seen.setdefault(indent, number)
    parts = [f"{indent} (line {number}: {lines[number - 1].strip()[:30]!r})" for indent, number in seen.items()]
    return ", ".join(parts[:-1]) + (" or " if len(parts) > 1 else "") + parts[-1]


def explain_syntax_error(file: str, text: str, exc: yaml.MarkedYAMLError) -> Problem:
    """A :class:`Problem` saying what is wrong with a file PyYAML refused, in plain words.

    Example:
        >>> try:
        ...     yaml.safe_load("id: c\\ndescription: I feel: happy\\n")
        ... except yaml.MarkedYAMLError as exc:
        ...     print(explain_syntax_error("c.yaml", "id: c\\ndescription: I feel: happy\\n", exc))  # doctest: +ELLIPSIS
        c.yaml:2:20: YAML syntax error: the text after 'description:' holds ': ' (a colon and a space), ...
    """
    lines = text.splitlines()
    mark, context = exc.problem_mark, exc.context_mark
    problem, what = str(exc.problem or ""), str(exc.context or "")
    line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)

    def at(where_line: int | None, where_column: int | None, message: str) -> Problem:
        return Problem(file, where_line, where_column, "", PREFIX + message)

    def line_text(number: int | None) -> str:
        return lines[number - 1] if number and 0 < number <= len(lines) else ""

    here = line_text(line)

    if problem == "found character '\\t' that cannot start any token":
        return at(line, column, "this line is indented with a tab; YAML needs spaces: replace the tab "
                                "with spaces (most editors can be set to insert spaces for the Tab key)")

    start = re.match(r"found character '(.)' that cannot start any token", problem)
    if start:
        char = start.group(1)
        key, value = key_and_value(here)
        return at(line, column, f"a text cannot start with '{char}' unless it is in quotes ('{char}' is "
                                f"{RESERVED_START.get(char, 'reserved')} in YAML); write {quoted(key, value)}")

    alias = re.match(r"found undefined alias '(.*)'", problem)
    if alias:
        key, value = key_and_value(here)
        return at(line, column, f"'*{alias.group(1)}' is read as a reference to an anchor &{alias.group(1)} "
                                f"that the file does not define (a value starting with '*' is an alias); "
                                f"if this is a text, put it in quotes: {quoted(key, value)}")

    if what == "while scanning a quoted scalar" and context:
        quote = line_text(context.line + 1)[context.column:context.column + 1] or '"'
        return at(context.line + 1, context.column + 1,
                  f"the quoted text that starts here is not closed (it runs on to line {line}); end it "
                  f"with {quote} on the same line; to put a {quote} inside a text, "
                  + ("write it twice ('it''s')" if quote == "'" else "write it as \\\" or use single quotes around the text"))

    if what in ("while parsing a flow sequence", "while parsing a flow mapping") and context:
        opened = "[" if "sequence" in what else "{"
        closing = "]" if opened == "[" else "}"
        number = context.line + 1
        opening_line = line_text(number)
        key, value = key_and_value(opening_line)
        kind = "list" if opened == "[" else "mapping"
        starts_value = bool(value.strip()) and len(opening_line) - len(value.lstrip()) == context.column
        if starts_value and not key_and_value(opening_line)[0].startswith(("{", "[")):
            return at(number, context.column + 1,
                      f"a value starting with '{opened}' is read as a {kind} in brackets, and its '{closing}' "
                      f"is missing; add '{closing}' where the {kind} ends, or, if this is a text, put it in "
                      f"quotes: {quoted(key, value)}")
        return at(number, context.column + 1,
                  f"the {kind} that opens with '{opened}' here is not closed: add '{closing}' where it ends")

    if what == "while scanning a simple key" and context:
        number = context.line + 1
        field = line_text(number).strip()
        dash = next((n for i, n in open_levels(lines, number)
                     if i == _indent(line_text(number)) and line_text(n)[i:i + 1] == "-"), None)
        if dash is not None:
            return at(number, context.column + 1,
                      f"'{field[:40]}' is in the column of the list's dashes (line {dash}) but has no '- ' "
                      "and no colon: if it is a list entry, start it with '- '; if it is a field, write "
                      "'name: value'")
        return at(number, context.column + 1,
                  f"'{field[:40]}' has no colon: a field is written 'name: value' (a colon, then a space); "
                  "if this line continues the text above, indent it more than the field it belongs to")

    if problem == "mapping values are not allowed here" and line:
        before = here[:column - 1]
        # A field already begun on this line: the second ': ' is inside a text.
        if _KEY.match(before) and not before.rstrip().endswith(":"):
            key, value = key_and_value(here)
            return at(line, column, f"the text after '{key}:' holds ': ' (a colon and a space), which YAML "
                                    f"reads as the start of a new field; put the text in quotes: {quoted(key, value)}")
        above = _content_lines(lines, line)
        if above and above[0].indent == _indent(here) and ":" not in above[0].text \
                and not above[0].text.lstrip().startswith("-"):
            prev = above[0]
            return at(prev.number, prev.indent + 1,
                      f"'{prev.text.strip()[:40]}' has no colon: a field is written 'name: value' (a colon, "
                      "then a space)")
        if above:
            level, number = open_levels(lines, line)[0]
            field = line_text(number)[level:].strip()
            return at(line, _indent(here) + 1,
                      f"this line is indented by {_indent(here)} spaces, more than '{field[:30]}' on line "
                      f"{number} ({level} spaces), which already has its value; fields of the same group "
                      f"need the same indentation ({level} spaces here); only the fields inside a 'name:' "
                      "with nothing after its colon are indented more")
        return at(line, column, "a field (key: value) is not allowed here; check the indentation of this line")

    found = re.match(r"expected <block end>, but found '(.*)'", problem)
    if found and line:
        token = found.group(1)
        stripped = here[:column - 1].rstrip()
        if token == "<scalar>" and stripped and stripped[-1] in "\"'":
            quote = stripped[-1]
            key, _ = key_and_value(here)
            return at(line, column,
                      f"the quoted text ends at the {quote} before this and more text follows; to put a "
                      f"{quote} inside a text, " + ("write it twice ('it''s')" if quote == "'" else
                                                    "use single quotes around the whole text ('I said \"hi\"')"))
        if token == "<scalar>" and stripped and stripped[-1] in "]}":
            key, value = key_and_value(here)
            return at(line, column, f"a value starting with '{'[' if stripped[-1] == ']' else '{'}' is read as "
                                    "a list in brackets and more text follows it; if this is a text, put it in "
                                    f"quotes: {quoted(key, value)}")
        indent = _indent(here)
        levels = open_levels(lines, line)
        dashes = [(i, n) for i, n in levels if line_text(n)[i:i + 1] == "-"]
        is_dash = here.lstrip().startswith("-")
        if not is_dash and any(i == indent for i, _ in dashes):
            number = next(n for i, n in dashes if i == indent)
            return at(line, indent + 1,
                      f"this line is in the column of the list's dashes (line {number}) but has no '- ': "
                      f"start a new entry with '- ', or indent it by {indent + 2} spaces to add it to the "
                      "entry above")
        if is_dash and dashes and all(i != indent for i, _ in dashes):
            i, number = dashes[0]
            return at(line, indent + 1,
                      f"this list entry's '- ' is indented by {indent} spaces, but the entries of the list "
                      f"above are indented by {i} (line {number}); put the dashes of one list in the same column")
        if any(i == indent for i, _ in levels):
            number = context.line + 1 if context else line
            return at(line, indent + 1,
                      f"this line does not fit where it is (YAML expected the block that begins on line "
                      f"{number} to end before it: {problem}); check its indentation and that the line above "
                      "is complete")
        return at(line, indent + 1,
                  f"this line is indented by {indent} spaces, which lines up with nothing above it; the fields "
                  f"above are indented by {_levels_words(levels, lines)}: indent it like the fields it "
                  "belongs with")

    return at(line, column, " ".join(x for x in (what, problem) if x))
