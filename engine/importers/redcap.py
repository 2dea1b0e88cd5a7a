"""Importing a REDCap data dictionary (the CSV a project's "Data Dictionary" page downloads).

Read: the columns ``Variable / Field Name``, ``Form Name``, ``Section Header``, ``Field Type``,
``Field Label``, ``Choices, Calculations, OR Slider Labels`` and, when present, ``Branching
Logic (Show field only if...)`` and ``Field Annotation`` (or the API's names: ``field_name``,
``form_name`` ...).

Mapped, one instrument per form (``--form NAME`` picks one):

- ``radio`` and ``dropdown`` fields with whole-number codes (``1, Not at all | 2, A little``)
  become rating items. The choice list most fields of the form share is the instrument's
  scale; a field listing the same labels on mirrored codes is a reverse-keyed item; a field
  with other choices is listed as not mapped (an instrument has one scale);
- ``calc`` fields that are plain sums or means of the form's items become subscales:
  ``sum([a],[b])``, ``[a]+[b]``, ``mean([a],[b])``, with ``(K-[c])`` marking a reversed item
  when K is the scale's min + max. Any other calculation is listed;
- a ``descriptive`` field before the first item becomes the instructions.

Listed as not mapped: every other field type (text, notes, slider, checkbox, yesno, truefalse,
file ...), branching logic, section headers, calculations that are not simple sums, and every
field annotation (action tags such as ``@HIDDEN``, and a project's own marks such as ``@REVERSE``:
psyq maps none of them, so each is left for the user to finish).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from psyq.engine.files.csvfile import CsvTable, read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.importers.base import Importer
from psyq.engine.importers.draft import (Draft, DraftItem, DraftSubscale, Options, describe, is_id, make_id,
    relation, scale_data, scale_problem, strip_html)

COLUMNS = {  # our name -> (data dictionary CSV header, API metadata header)
    "field": ("Variable / Field Name", "field_name"),
    "form": ("Form Name", "form_name"),
    "section": ("Section Header", "section_header"),
    "type": ("Field Type", "field_type"),
    "label": ("Field Label", "field_label"),
    "choices": ("Choices, Calculations, OR Slider Labels", "select_choices_or_calculations"),
}
BRANCHING = ("Branching Logic (Show field only if...)", "branching_logic")
ANNOTATION = ("Field Annotation", "field_annotation")
RATING_TYPES = ("radio", "dropdown")
WHY_NOT = {
    "text": "a text field (free answer)", "notes": "a notes field (free text)",
    "slider": "a slider (a continuous 0-100 answer, not options)", "checkbox": "a checkbox (several answers)",
    "yesno": "a yes/no field", "truefalse": "a true/false field", "file": "a file upload",
    "descriptive": "descriptive text", "sql": "an SQL field",
}
FIELD_REF = r"\[([A-Za-z0-9_]+)\]"
TERM = re.compile(rf"^\(?\s*(?:(\d+)\s*-\s*)?{FIELD_REF}\s*\)?$")


class RedcapImporter(Importer):
    name = "redcap"
    help = "a REDCap data dictionary (CSV): radio/dropdown fields become items, simple sums subscales"
    file_help = "the data dictionary CSV (Project setup > Data Dictionary > download)"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--form", help="import only this form (instrument) of the dictionary")

    def read(self, path: str, options: dict[str, Any]) -> list[Draft]:
        """One draft per form holding rating fields (or only `options['form']`).

        Example:
            >>> [d.id for d in RedcapImporter().read("tests/fixtures/import/redcap_dictionary.csv", {})]
            ['empathy', 'mood']
        """
        table = read_csv_table(path)
        names = _column_names(table)
        rows = _rows(table, names)
        forms = list(dict.fromkeys(row["form"] for row in rows))
        wanted = options.get("form")
        if wanted and wanted not in forms:
            raise InputError.single(path, f"no form '{wanted}' in the dictionary (forms: {', '.join(forms)})")
        drafts, skipped = [], []
        for form in [wanted] if wanted else forms:
            draft = _form_draft(path, form, [r for r in rows if r["form"] == form])
            if draft.items:
                drafts.append(draft)
            elif wanted:
                raise InputError.single(path, f"form '{form}' has no radio or dropdown field with whole-number "
                                              "codes, so nothing to import as rating items")
            else:
                skipped.append(form)
        for draft in drafts[:1]:
            for form in skipped:
                draft.note(path, f"form '{form}' not imported: it has no radio or dropdown field with "
                                 "whole-number codes")
        if not drafts:
            raise InputError.single(path, "no form has radio or dropdown fields with whole-number codes; "
                                          "nothing to import as rating items")
        return drafts


def _column_names(table: CsvTable) -> dict[str, str]:
    """Our name -> the header this file uses (the download's or the API's); missing ones are errors."""
    api = COLUMNS["field"][1] in table.header
    names = {key: pair[1 if api else 0] for key, pair in COLUMNS.items()}
    missing = [name for name in names.values() if name not in table.header]
    if missing:
        raise InputError.single(table.file, "missing column(s) of a REDCap data dictionary: " + ", ".join(missing),
                                line=1)
    branching = BRANCHING[1] if api else next((h for h in table.header if h.startswith("Branching Logic")), "")
    if branching in table.header:
        names["branching"] = branching
    annotation = ANNOTATION[1 if api else 0]
    if annotation in table.header:
        names["annotation"] = annotation
    return names


def _rows(table: CsvTable, names: dict[str, str]) -> list[dict[str, Any]]:
    index = {key: table.header.index(name) for key, name in names.items()}
    rows, problems = [], []
    for cells, line in zip(table.rows, table.lines):
        row = {key: cells[k] for key, k in index.items()}
        row.setdefault("branching", "")
        row.setdefault("annotation", "")
        row["line"] = line
        if not row["field"]:
            problems.append(Problem(table.file, line, None, names["field"], "the field name is empty"))
        if not row["form"]:
            problems.append(Problem(table.file, line, None, names["form"], "the form name is empty"))
        rows.append(row)
    if problems:
        raise InputError(problems)
    return rows


def parse_choices(text: str) -> Options | None:
    """REDCap choices ``"1, Not at all | 2, A little"`` as (code, label) pairs; None when a code is
    not a whole number.

    Example:
        >>> parse_choices("1, Not at all | 2, A little, or some")
        ((1, 'Not at all'), (2, 'A little, or some'))
    """
    out = []
    for part in text.split("|"):
        if not part.strip():
            continue
        code, _, label = part.partition(",")
        try:
            value = int(code.strip())
        except ValueError:
            return None
        out.append((value, strip_html(label)))
    return tuple(out)


def _form_draft(path: str, form: str, rows: list[dict[str, Any]]) -> Draft:
    file = str(path)
    draft = Draft(id=make_id(form), name=form.replace("_", " ").strip().capitalize() or form, file=file,
                  format_name="REDCap data dictionary", command="psyq import redcap", scope=f"form '{form}'")
    at = {row["field"]: f"{Path(file).name}:{row['line']}" for row in rows}
    rating = {}
    for row in rows:
        choices = parse_choices(row["choices"]) if row["type"] in RATING_TYPES else None
        if choices is not None and scale_problem(choices) is None and is_id(row["field"]):
            rating[row["field"]] = choices
    counts = Counter(rating.values())
    scale = max(counts, key=lambda c: counts[c]) if counts else None   # first of the most common
    if scale is not None:
        scale = tuple(sorted(scale))
        draft.scale = scale_data(scale)
        others = [c for c in counts if relation(scale, c) is None]
        if others:
            draft.note(file, f"the form's fields use {len(others) + 1} different choice lists; the scale is the "
                             f"one most fields use ({describe(scale)})", ("scale",))
    for row in rows:
        _read_field(draft, row, scale, rating, at[row["field"]])
    repeated = [row["field"] for row in rows if row["section"] and draft.instructions is not None
                and strip_html(row["section"]) == draft.instructions]
    if repeated:    # psyq's one-item-per-page dictionary: the instructions above every item, as the personas saw them
        draft.note(file, f"the instructions repeated as the section header of {len(repeated)} field(s) "
                         f"({repeated[0]} …): one item per page; read once, as the instructions")
    for row in rows:
        if row["type"] == "calc":
            _read_calc(draft, row, scale, at[row["field"]])
    for row in rows:   # after the calculations, which may key an item in reverse
        if row["annotation"].strip():
            _note_annotation(draft, row, at[row["field"]])
    return draft


def _read_field(draft: Draft, row: dict[str, Any], scale: Options | None, rating: dict[str, Options],
                where: str) -> None:
    field, kind = row["field"], row["type"]
    if row["section"] and strip_html(row["section"]) != draft.instructions:   # the instructions again: one note
        draft.note(where, f"section header above '{field}' not imported: {strip_html(row['section'])!r}")
    if kind == "calc":
        return
    if kind == "descriptive" and not draft.items and draft.instructions is None:
        draft.instructions = strip_html(row["label"]) or None
        draft.instructions_note = f"taken from the descriptive field '{field}' ({where}); check that it is the " \
                                  "instructions"
        return
    if kind not in RATING_TYPES:
        why = WHY_NOT.get(kind, f"a field of type '{kind}'")
        draft.note(where, f"field '{field}' not mapped: {why}, not a rating on the scale")
        return
    if field not in rating:
        choices = parse_choices(row["choices"])
        why = ("its choice codes are not whole numbers" if choices is None else
               f"its choices cannot be a scale ({scale_problem(choices)})" if scale_problem(choices) else
               f"'{field}' is not usable as an item id (letters, digits, '_', '.', '-')")
        draft.note(where, f"field '{field}' not mapped: {why}")
        return
    related = relation(scale, rating[field]) if scale else None
    if related is None:
        draft.note(where, f"field '{field}' not mapped: its choices ({describe(rating[field])}) are not the "
                          "instrument's scale; a psyq instrument has one response scale")
        return
    draft.items.append(DraftItem(field, strip_html(row["label"]) or None, reverse=related == "mirrored",
                                 source=where, stored_reversed=related == "mirrored"))
    index = len(draft.items) - 1
    if related == "mirrored":
        draft.note(where, f"'{field}' lists the scale's labels on mirrored codes: imported as reverse-keyed "
                          "(REDCap stores its answers already reversed; see the note on scoring exports)",
                    ("items", index))
    if row["branching"]:
        draft.note(where, f"branching logic of '{field}' not imported (shown only if {row['branching']}); psyq "
                          "asks every item", ("items", index))


def _note_annotation(draft: Draft, row: dict[str, Any], where: str) -> None:
    """List a field's annotation as not imported, beside the item or subscale it became; an
    annotation that speaks of reversing says how psyq keyed the item, since that is what it may
    contradict."""
    field, annotation = row["field"], " ".join(row["annotation"].split())
    items = [i.id for i in draft.items]
    subscales = [s.id for s in draft.subscales]
    path = (("items", items.index(field)) if field in items else
            ("subscales", subscales.index(field)) if field in subscales else ())
    message = f"field annotation of '{field}' not imported: {annotation!r} (psyq maps no annotation or action tag)"
    if field in items and re.search(r"revers", annotation, flags=re.IGNORECASE):
        keyed = "in reverse" if draft.items[items.index(field)].reverse else "forward"
        message += (f"; it may mark a reverse-keyed item: psyq keyed '{field}' {keyed}, as its choices and the "
                    "form's calculations say; set `reverse:` on the item if the annotation means otherwise")
    draft.note(where, message, path)


def parse_sum(formula: str) -> tuple[str, list[tuple[int | None, str]]] | None:
    """('sum' or 'mean', [(K or None, field)]) for ``sum([a],(6-[b]))``, ``[a]+[b]`` or
    ``mean([a],[b])``; None for any other calculation.

    Example:
        >>> parse_sum("sum([q1], (6-[q2]), [q3])")
        ('sum', [(None, 'q1'), (6, 'q2'), (None, 'q3')])
        >>> parse_sum("round(mean([q1],[q2]),1)") is None
        True
    """
    text = formula.strip()
    call = re.fullmatch(r"(sum|mean)\s*\((.*)\)", text, flags=re.IGNORECASE | re.DOTALL)
    if call:
        rule, parts = call.group(1).lower(), _split_top(call.group(2), ",")
    else:
        rule, parts = "sum", _split_top(text, "+")
    terms = []
    for part in parts:
        match = TERM.fullmatch(part.strip())
        if not match:
            return None
        terms.append((int(match.group(1)) if match.group(1) else None, match.group(2)))
    return (rule, terms) if len(terms) >= 2 else None


def parse_scored(formula: str) -> tuple[str, list[tuple[int | None, str]], int] | None:
    """('sum' or 'mean', [(K or None, field)], min_answered) for the score psyq writes
    (:func:`psyq.engine.questionnaire.redcap.score_calc`): blank when fewer than m of the items are
    answered, else their mean, or their sum (prorated as mean times n when some are blank); None for
    any other calculation, or one that counts other fields than it scores.

    Example:
        >>> parse_scored('if(sum(if([a]<>"",1,0),if([b]<>"",1,0))<1,"",if(sum(if([a]<>"",1,0),'
        ...              'if([b]<>"",1,0))=2,sum([a],(6-[b])),mean([a],(6-[b]))*2))')
        ('sum', [(None, 'a'), (6, 'b')], 1)
        >>> parse_scored("sum([a],[b])") is None
        True
    """
    guard = _call(formula, "if")
    if guard is None or len(guard) != 3 or guard[1].strip() != '""':
        return None
    condition = re.fullmatch(r"(.*)<\s*(\d+)", guard[0].strip(), flags=re.DOTALL)
    counted = _counted(condition.group(1)) if condition else None
    body = guard[2].strip()
    prorated = _call(body, "if")
    if prorated is not None:        # if(count=n, sum(terms), mean(terms)*n)
        if len(prorated) != 3 or not re.fullmatch(r"mean\s*\(.*\)\s*\*\s*\d+", prorated[2].strip(), re.DOTALL):
            return None
        body = prorated[1].strip()
    parsed = parse_sum(body) if re.match(r"(sum|mean)\s*\(", body, flags=re.IGNORECASE) else None
    if counted is None or parsed is None or counted != [field for _, field in parsed[1]]:
        return None
    return parsed[0], parsed[1], int(condition.group(2))


def _call(text: str, name: str) -> list[str] | None:
    """The arguments of ``name(...)`` when `text` is one call of it, else None."""
    call = re.fullmatch(rf"{name}\s*\((.*)\)", text.strip(), flags=re.IGNORECASE | re.DOTALL)
    return _split_top(call.group(1), ",") if call and _balanced(call.group(1)) else None


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


def _counted(text: str) -> list[str] | None:
    """The fields of ``sum(if([a]<>"",1,0),…)``, the count of answered items; None for other text."""
    terms = _call(text, "sum")
    if terms is None:
        return None
    fields = [re.fullmatch(rf'\s*if\s*\(\s*{FIELD_REF}\s*<>\s*""\s*,\s*1\s*,\s*0\s*\)\s*', t) for t in terms]
    return [f.group(1) for f in fields] if all(fields) else None


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside parentheses."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == sep and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts


def _read_calc(draft: Draft, row: dict[str, Any], scale: Options | None, where: str) -> None:
    field, formula = row["field"], " ".join(row["choices"].split())
    scored = parse_scored(formula)       # psyq's own score, with its missing-data rule
    parsed = scored[:2] if scored else parse_sum(formula)
    items = {i.id: i for i in draft.items}
    if parsed is None:
        draft.note(where, f"calc field '{field}' not mapped: `{formula}` is not a plain sum or mean of items; "
                          "define the subscale by hand if it is one")
        return
    rule, terms = parsed
    high_low = (min(v for v, _ in scale) + max(v for v, _ in scale)) if scale else None
    why = []
    for constant, item_id in terms:
        item = items.get(item_id)
        if item is None:
            why.append(f"[{item_id}] is not an imported item of this form")
        elif constant is not None and constant != high_low:
            why.append(f"({constant}-[{item_id}]) does not reverse on the scale (min + max = {high_low})")
        elif _settled(item) and _implied_reverse(item, constant) != item.reverse:
            why.append(f"[{item_id}] is keyed the other way in its choices or in another calculation")
    if why or not is_id(field):
        why = why or [f"'{field}' is not usable as a subscale id"]
        draft.note(where, f"calc field '{field}' not mapped (`{formula}`): " + "; ".join(why))
        return
    for constant, item_id in terms:
        items[item_id].reverse = _implied_reverse(items[item_id], constant)
    least = scored[2] if scored and scored[2] < len(terms) else None
    draft.subscales.append(DraftSubscale(field, strip_html(row["label"]) or field, rule, where, least))
    for _, item_id in terms:
        if field not in items[item_id].subscales:
            items[item_id].subscales.append(field)
    if rule == "sum" and formula.lower().startswith("sum"):
        draft.note(where, f"REDCap's sum() adds the answered items and skips blank ones; psyq gives no score "
                          f"for '{field}' unless every item is answered (set `min_answered` to prorate a sum "
                          "over fewer)", ("subscales", len(draft.subscales) - 1))


def _implied_reverse(item: DraftItem, constant: int | None) -> bool:
    """Whether a calculation term keys `item` in reverse: ``(K-[x])`` on an item stored as
    answered, or a plain ``[x]`` on an item REDCap stores mirrored (already reversed)."""
    return (constant is not None) != item.stored_reversed


def _settled(item: DraftItem) -> bool:
    """True when the item's keying is fixed already (by mirrored choices or an earlier calculation)."""
    return item.stored_reversed or bool(item.subscales)
