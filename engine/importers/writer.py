"""Writing a draft instrument as YAML with the importer's notes as comments where they belong.

Values are written by :func:`yaml.safe_dump` (quoting is PyYAML's, never ours); only the
comment lines and the layout (one flow mapping per item, as the shipped instruments have it)
are added here, so that a user finishing the file finds each note beside what it is about.
"""

from __future__ import annotations

import textwrap
from typing import Any

import yaml

from psyq.engine.importers.draft import Draft, Note

WIDTH = 100
LIST_KEYS = ("scale", "items", "subscales")


def _dump(value: Any, flow: bool = False) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=flow,
                          width=float("inf") if flow else WIDTH)


def _comment(text: str, indent: str) -> list[str]:
    """`text` as comment lines (wrapped; a line break inside a note can never end the comment)."""
    lines = textwrap.wrap(" ".join(text.split()), WIDTH - len(indent) - 2,
                          subsequent_indent="  " if text.startswith("- ") else "") or [""]
    return [f"{indent}# {line}" for line in lines]


def _notes_at(notes: list[Note], path: tuple) -> list[str]:
    return [n.message for n in notes if n.path == path]


def render(draft: Draft, document: dict[str, Any], header: list[str]) -> str:
    """The YAML text of `document` (from :meth:`Draft.document`), `header` lines and every note
    of `draft` as comments: at the item, option or subscale they are about, else at the field,
    else in the header.

    Example:
        >>> d = Draft(id="x", name="X", file="x.csv", format_name="test file", command="psyq import test")
        >>> "psyq: instrument/1" in render(d, {"psyq": "instrument/1"}, ["made by hand"])
        True
    """
    notes = draft.notes
    placed = {n.path for n in notes if _placeable(n.path, document)}
    out = [f"# {line}" if line else "#" for line in header]
    unplaced = [n for n in notes if n.path not in placed]
    if unplaced:
        out.append("#")
        out.append("# What psyq could not map (also printed when importing):")
        for note in unplaced:
            out += _comment(f"- {note}", "")
    for key, value in document.items():
        out += _comment_lines(notes, (key,), "")
        if key in LIST_KEYS and isinstance(value, list):
            out.append(f"{key}:")
            for i, element in enumerate(value):
                out += _comment_lines(notes, (key, i), "  ")
                out.append(f"  - {_dump(element, flow=True).strip()}")
        else:
            out.append(_dump({key: value}).rstrip("\n"))
    return "\n".join(out) + "\n"


def _comment_lines(notes: list[Note], path: tuple, indent: str) -> list[str]:
    lines: list[str] = []
    for message in _notes_at(notes, path):
        lines += _comment(message if message.startswith("TO FINISH") else f"TO FINISH: {message}", indent)
    return lines


def _placeable(path: tuple, document: dict[str, Any]) -> bool:
    """True when `path` names a top-level field, or an element of one of the listed fields."""
    if len(path) == 1:
        return path[0] in document
    if len(path) == 2 and path[0] in LIST_KEYS:
        value = document.get(path[0])
        return isinstance(value, list) and isinstance(path[1], int) and 0 <= path[1] < len(value)
    return False
