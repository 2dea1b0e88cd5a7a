"""A draft instrument: what an importer read from another tool's file, and what it could not map.

Every importer (one module per format in this package) fills a :class:`Draft`: items, one
response scale, subscales, and :class:`Note` s saying what was not mapped and where in the
draft the user has to finish it. :func:`Draft.document` turns it into the data of a psyq
instrument (format ``instrument/1``) that validates: an item psyq found no subscale for is kept
as ``unscored`` (or, when no subscale at all was found, put in a placeholder ``total``
subscale), missing texts are declared user-supplied (``item_texts``) and missing instructions
get a neutral placeholder, each with a note so that nothing is guessed silently.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from psyq.engine.trials.scale import MAX_SCALE_VALUE

# The pattern of psyq.engine.files.fields.Id: item ids are also column names of answer files.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Shown to respondents when the source file had no instructions; neutral on purpose, and flagged.
PLACEHOLDER_INSTRUCTIONS = ("For each statement below, choose the answer that describes you best. "
                            "There are no right or wrong answers.")
TO_FINISH = "TO FINISH:"


@dataclass(frozen=True)
class Note:
    """Something the importer could not map, or mapped with a choice the user should check.

    `source` says where in the imported file (``dictionary.csv:7``, ``survey.qsf: QID5``), `path`
    where in the instrument the comment goes (``("items", 3)``; ``()`` is the file's header).
    """

    source: str
    message: str
    path: tuple = ()

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass
class DraftItem:
    """A rating item as read; `text` None when the source file has none."""

    id: str
    text: str | None
    reverse: bool = False
    subscales: list[str] = field(default_factory=list)
    unscored: bool = False
    source: str = ""
    stored_reversed: bool = False  # the source codes its answers mirrored (already keyed)


@dataclass
class DraftSubscale:
    id: str
    name: str
    score: str = "sum"
    source: str = ""
    min_answered: int | None = None     # fewer answered items give no score (None: all of them)


@dataclass
class Draft:
    """What one import produced (one instrument), with the notes for the user."""

    id: str
    name: str
    file: str                      # the imported file, as the user named it
    format_name: str               # e.g. "REDCap data dictionary"
    command: str                   # e.g. "psyq import redcap"
    scope: str = ""                # e.g. "form 'empathy'"
    instructions: str | None = None
    instructions_note: str = ""
    scale: list[dict[str, Any]] = field(default_factory=list)
    items: list[DraftItem] = field(default_factory=list)
    subscales: list[DraftSubscale] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    texts_file: str = ""           # where a user writes missing item texts (item_texts.file)
    finished: bool = False         # placeholders filled in (once: each adds a note)

    def note(self, source: str, message: str, path: tuple = ()) -> None:
        """Record a note (listed on stderr and written as a comment at `path`); a note about the
        whole file names it as the user wrote it."""
        self.notes.append(Note(Path(source).name if source == self.file else source, message, path))

    def item_index(self, item_id: str) -> int:
        return [i.id for i in self.items].index(item_id)

    def finish(self) -> None:
        """Fill in what the source lacked (scoring of items without a subscale), and note every
        placeholder :meth:`document` writes. Runs once (each step adds a note)."""
        if self.finished:
            return
        self.finished = True
        self._complete_scoring()
        self._note_stored_keying()
        if self.instructions is None:
            self.note(self.file, "no instructions in the file; psyq wrote a neutral placeholder: replace it "
                                 "with the instrument's instructions", ("instructions",))
        elif self.instructions_note:
            self.note(self.file, self.instructions_note, ("instructions",))
        missing = [i.id for i in self.items if i.text is None]
        if missing:
            self.note(self.file, f"no text for item(s) {', '.join(missing)}: declared user-supplied in "
                                 "`item_texts`; the instrument scores data but cannot be administered until "
                                 "the texts are given", ("item_texts",))

    def document(self) -> dict[str, Any]:
        """The instrument's data, in the field order of the shipped instruments (after
        :meth:`finish`, which it calls)."""
        self.finish()
        where = f"{Path(self.file).name}" + (f", {self.scope}" if self.scope else "")
        doc: dict[str, Any] = {
            "psyq": "instrument/1",
            "id": self.id,
            "name": self.name,
            "version": "imported",
            "content_source": "user",
            "citations": {"source": f"Imported with `{self.command}` from the {self.format_name} {where}. "
                                    f"{TO_FINISH} replace with the reference of the instrument."},
            "terms": (f"Imported from the user's own {self.format_name} ({where}); the user is responsible "
                      f"for the right to use these items. {TO_FINISH} state the instrument's licence and "
                      "what to cite."),
            "instructions": self.instructions or PLACEHOLDER_INSTRUCTIONS,
            "scale": self.scale,
        }
        missing = [i.id for i in self.items if i.text is None]
        if missing:
            doc["item_texts"] = {
                "file": self.texts_file or f"{self.id}_texts.csv",
                "how": (f"{TO_FINISH} the imported file has no text for {len(missing)} item(s); write them in "
                        "this CSV (header item_id,text), or put each text in its item."),
            }
        doc["items"] = [_item_data(i) for i in self.items]
        doc["subscales"] = [{"id": s.id, "name": s.name, "score": s.score,
                             **({"min_answered": s.min_answered} if s.min_answered is not None else {})}
                            for s in self.subscales]
        return doc

    def _note_stored_keying(self) -> None:
        """How to score data exported from the source tool when it stores some answers already
        reversed: with `--keyed` when those are all the reversed items, else after recoding them
        (neither plain scoring nor `--keyed` reads a mix right)."""
        stored = [i.id for i in self.items if i.stored_reversed]
        plain = [i.id for i in self.items if i.reverse and not i.stored_reversed]
        if stored and plain:
            self.note(self.file, f"reverse-keyed items of two sorts: {', '.join(stored)} stored already reversed "
                                 f"by the source tool, {', '.join(plain)} not; to score an export of its data, "
                                 f"first recode {', '.join(stored)} as min + max - answer, then score without --keyed")
        elif stored:
            self.note(self.file, f"the source tool stores the answers of the reverse-keyed item(s) "
                                 f"{', '.join(stored)} already reversed: score an export of its data with "
                                 "`psyq score --keyed` (or `--human ID=FILE.csv:keyed`)")

    def _complete_scoring(self) -> None:
        """Every rating item must be scored or marked unscored: say which were neither in the source."""
        loose = [i for i in self.items if not i.subscales and not i.unscored]
        if not loose:
            return
        if not self.subscales:
            self.subscales.append(DraftSubscale("total", "Total (placeholder)", "sum"))
            for item in loose:
                item.subscales.append("total")
            self.note(self.file, "the file defines no subscales: psyq put every item in a placeholder "
                                 "subscale `total` (a sum); define the real subscales and each item's "
                                 "`subscales`", ("subscales", 0))
            return
        for item in loose:
            item.unscored = True
            self.note(item.source or self.file, f"item '{item.id}' is in no subscale of the file: marked "
                                                "`unscored: true`; list its subscales if it is scored",
                      ("items", self.item_index(item.id)))


def _item_data(item: DraftItem) -> dict[str, Any]:
    data: dict[str, Any] = {"id": item.id}
    if item.text is not None:
        data["text"] = item.text
    if item.reverse:
        data["reverse"] = True
    if item.unscored:
        data["unscored"] = True
    else:
        data["subscales"] = list(item.subscales)
    return data


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("br", "p", "div", "li"):
            self.parts.append(" ")


def strip_html(text: str) -> str:
    """The text of an HTML fragment (as survey tools store question texts), spaces collapsed.

    Example:
        >>> strip_html("<p>I feel <b>calm</b>&nbsp;today.<br>Really</p>")
        'I feel calm today. Really'
    """
    parser = _TextOnly()
    parser.feed(text)
    parser.close()
    return " ".join(html.unescape("".join(parser.parts)).split())


def make_id(text: str, fallback: str = "imported") -> str:
    """A psyq id from a name: characters outside letters, digits, '_', '.', '-' become '_'.

    Example:
        >>> make_id("My Empathy Form!")
        'my_empathy_form'
    """
    out = re.sub(r"[^A-Za-z0-9_.-]+", "_", text.strip().lower()).strip("_.-")
    return out if out and ID_PATTERN.match(out) else fallback


def is_id(text: str) -> bool:
    """True when `text` is usable as a psyq id (and so as a CSV column of answers)."""
    return bool(ID_PATTERN.match(text))


Options = tuple[tuple[int, str], ...]
"""A response scale as read: (value, label) pairs in the order the source lists them."""


def scale_problem(options: Options) -> str | None:
    """Why `options` cannot be a psyq scale (None when they can, once sorted by value).

    Example:
        >>> scale_problem(((1, "No"), (3, "Yes")))
        'the values 1, 3 are not consecutive whole numbers'
    """
    values = sorted(v for v, _ in options)
    if len(values) < 2:
        return "fewer than 2 options"
    if any(abs(v) > MAX_SCALE_VALUE for v in values):
        return "a value is out of range"
    if values != list(range(values[0], values[0] + len(values))):
        return f"the values {', '.join(str(v) for v in values)} are not consecutive whole numbers"
    labels = [label for _, label in options if label]
    if len(set(labels)) != len(labels):
        return "two options have the same label"
    ordered = sorted(options)
    if not ordered[0][1] or not ordered[-1][1]:
        return "an end point has no label"
    return None


def scale_data(options: Options) -> list[dict[str, Any]]:
    """`options` as the `scale:` of an instrument (ascending values, labels where given)."""
    return [{"value": v, "label": label} if label else {"value": v} for v, label in sorted(options)]


def relation(scale: Options, options: Options) -> str | None:
    """'same' when `options` are the scale's, 'mirrored' when they have its labels on reversed
    values (an item keyed in reverse by its coding), else None.

    Example:
        >>> s = ((1, "No"), (2, "Some"), (3, "Yes"))
        >>> relation(s, ((3, "No"), (2, "Some"), (1, "Yes")))
        'mirrored'
    """
    by_value = dict(scale)
    given = dict(options)
    if sorted(given) != sorted(by_value):
        return None
    if given == by_value:
        return "same"
    low, high = min(by_value), max(by_value)
    if all(given[v] == by_value[low + high - v] for v in given):
        return "mirrored"
    return None


def describe(options: Options) -> str:
    """`options` in the source's own notation, for messages.

    Example:
        >>> describe(((1, "No"), (2, "Yes")))
        '1 = No | 2 = Yes'
    """
    return " | ".join(f"{v} = {label}" for v, label in options)
