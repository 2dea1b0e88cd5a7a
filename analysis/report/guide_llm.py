"""The GUIDE-LLM reporting checklist (Feuerriegel et al., 2026), filled from one report: for each of its
14 core items, where this report (or the run's bundle) answers it, or "to be written by you".

The items, psyq's paraphrase of each, their source and how they were verified are data
(``guide_llm.yaml`` beside this module), each mapped to the places psyq answers it in: a table by
its caption, a section by its title, the generated methods paragraph, or a file of the run that
``psyq bundle`` packs. An item counts as answered only when one of its places is in the report at
hand (:func:`fill_checklist`): a report without the served-model table leaves the item on the
model's version to the author.

Example:
    >>> checklist = load_checklist()
    >>> len(checklist.items), checklist.items[0].id, checklist.items[-1].id
    (14, 'A.1', 'G.1')
    >>> from psyq.analysis.report.section import Section
    >>> materials = Section("Materials")
    >>> materials.add_table("Models requested and served", pd.DataFrame())
    >>> filled = fill_checklist([materials], methods=False, bundle_files=()).set_index("item")
    >>> filled.loc["B.1", "where answered"], filled.loc["B.2", "where answered"]
    ('table “Models requested and served” (Materials)', 'to be written by you')
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from psyq.engine.files.yamlfile import load_yaml

from psyq.analysis.report.section import Section

CHECKLIST_FILE = Path(__file__).with_name("guide_llm.yaml")
TO_WRITE = "to be written by you"
PLACE_KINDS = ("table", "section", "methods", "bundle")
TITLE = "GUIDE-LLM checklist"
"""The caption of the checklist's table in the report."""


@dataclass(frozen=True)
class Place:
    """Where psyq answers an item: a table (by caption), a section (by title), the methods paragraph,
    or a file of the run's bundle."""

    kind: str
    name: str = ""

    def said(self, holder: str | None = None) -> str:
        """The place in words (`holder`: the title of the section holding the table)."""
        if self.kind == "table":
            return f"table “{self.name}”" + (f" ({holder})" if holder else "")
        if self.kind == "section":
            return f"section “{self.name}”"
        if self.kind == "methods":
            return "the methods paragraph"
        return f"run/{self.name} in the run's bundle (psyq bundle)"


@dataclass(frozen=True)
class ChecklistItem:
    """One item: its id, group, what it asks for (paraphrased), where psyq answers it, and what the
    author still adds where psyq answers it in part."""

    id: str
    group: str
    asks: str
    places: tuple[Place, ...]
    add: str | None = None


@dataclass(frozen=True)
class Checklist:
    """The checklist as shipped: its name, version, reference, source, how it was verified, items."""

    name: str
    version: str
    citation: str
    source: str
    verified: str
    items: tuple[ChecklistItem, ...]


def _place(entry: object, where: str) -> Place:
    if not isinstance(entry, dict) or len(entry) != 1 or next(iter(entry)) not in PLACE_KINDS:
        raise ValueError(f"{where}: a place is one of {', '.join(PLACE_KINDS)}, as `kind: name`")
    kind, name = next(iter(entry.items()))
    if kind == "methods":
        if name is not True:
            raise ValueError(f"{where}: write `methods: true`")
        return Place(kind)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: {kind} needs a name")
    return Place(kind, name)


def load_checklist(path: str | Path = CHECKLIST_FILE) -> Checklist:
    """The checklist file (psyq's own, ``guide_llm.yaml``), read with the bounded YAML reader and checked
    (ValueError naming the item otherwise)."""
    data = load_yaml(path).data
    items = []
    for k, entry in enumerate(data.get("items") or []):
        where = f"{path}: items[{k}]"
        places = entry.get("places")
        if not isinstance(places, list) or not all(isinstance(entry.get(f), str) for f in ("id", "group", "asks")):
            raise ValueError(f"{where}: an item has an id, a group, what it asks and a list of places")
        items.append(ChecklistItem(entry["id"], entry["group"], entry["asks"],
                                   tuple(_place(p, f"{where}.places[{i}]") for i, p in enumerate(places)),
                                   entry.get("add")))
    return Checklist(str(data["checklist"]), str(data["version"]), str(data["citation"]), str(data["source"]),
                     str(data["verified"]), tuple(items))


def place_found(place: Place, sections: Sequence[Section], *, methods: bool,
                bundle_files: Collection[str]) -> str | None:
    """`place` in words as it is in this report (with the section holding a table), or None when the
    report does not have it. `methods`: whether the report has its methods paragraph; `bundle_files`:
    the files of the run a bundle of it holds."""
    if place.kind == "table":
        holder = next((s.title for s in sections for t in s.tables if t.caption == place.name), None)
        return place.said(holder) if holder is not None else None
    if place.kind == "section":
        return place.said() if any(s.title == place.name for s in sections) else None
    if place.kind == "methods":
        return place.said() if methods else None
    return place.said() if place.name in bundle_files else None


def fill_checklist(sections: Sequence[Section], *, methods: bool, bundle_files: Collection[str],
                   checklist: Checklist | None = None) -> pd.DataFrame:
    """One row per item: ``item`` (its id), ``asks`` (what it asks for, paraphrased), ``where answered``
    (the places of this report that answer it, or "to be written by you") and ``to add`` (what the
    author adds where psyq answers in part). `sections` are the report's; `methods` and
    `bundle_files` as :func:`place_found`.

    Example: see the module's.
    """
    checklist = checklist or load_checklist()
    rows = []
    for item in checklist.items:
        found = [said for place in item.places
                 if (said := place_found(place, sections, methods=methods, bundle_files=bundle_files))]
        rows.append({"item": item.id, "asks": item.asks, "where answered": "; ".join(found) or TO_WRITE,
                     "to add": (item.add or "") if found else ""})
    return pd.DataFrame(rows, columns=["item", "asks", "where answered", "to add"])
