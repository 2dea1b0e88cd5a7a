"""Importing a Qualtrics survey export (``.qsf``: JSON with ``SurveyEntry`` and ``SurveyElements``).

Questions are the elements with ``"Element": "SQ"``; their ``Payload`` says the type:

- ``"QuestionType": "Matrix"`` with ``"Selector": "Likert"`` and one answer per row: each
  statement (``Choices``, in ``ChoiceOrder``) is a rating item, the columns (``Answers``, in
  ``AnswerOrder``) are the scale points, scored by ``RecodeValues`` when the survey sets them.
  The item id is the statement's export tag (``ChoiceDataExportTags``) or Qualtrics' default
  column name ``<DataExportTag>_<choice>``;
- ``"QuestionType": "MC"`` with a single-answer selector (``SAVR``, ``SAHR``, ``SACOL``, ``DL``,
  ``SB``): one rating item, id ``DataExportTag``, its choices the scale points.

The scale most items share is the instrument's; an item with the same labels on mirrored
recode values is reverse-keyed (Qualtrics then stores its answers already reversed). Texts are
stripped of HTML. Questions are taken in the order of the survey's blocks (trash left out).
Listed as not mapped: every other question type, items with other scales, display and skip
logic, branches and randomizers of the survey flow, Qualtrics scoring categories. A QSF holds
no subscales, so the items go to a placeholder subscale to finish.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from psyq.engine.files.errors import InputError
from psyq.engine.files.inputfile import line_column, read_input_bytes, decode_text
from psyq.engine.importers.base import Importer
from psyq.engine.importers.draft import (Draft, DraftItem, Options, describe, is_id, make_id, relation,
    scale_data, scale_problem, strip_html)

SINGLE_ANSWER = ("SAVR", "SAHR", "SACOL", "DL", "SB")
LOGIC = {"DisplayLogic": "display logic", "SkipLogic": "skip logic", "InPageDisplayLogic": "display logic"}


def load_qsf(path: str) -> dict[str, Any]:
    """The parsed JSON of a QSF file (size-capped read); bad JSON is an error at its line and column."""
    file = str(path)
    raw = read_input_bytes(path)
    text = decode_text(file, raw)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.single(file, f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise InputError.single(file, "the JSON is nested too deeply to be a survey") from None
    if not isinstance(data, dict) or not isinstance(data.get("SurveyElements"), list):
        line, column = line_column(raw, 0)
        raise InputError.single(file, "not a Qualtrics survey file: no list `SurveyElements` at the top level",
                                line, column)
    return data


def _elements(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in data["SurveyElements"] if isinstance(e, dict) and e.get("Element") == kind]


def _block_order(data: dict[str, Any]) -> list[str]:
    """Question ids in block order (trash excluded); blocks are a list or a dict by position."""
    order: list[str] = []
    for element in _elements(data, "BL"):
        blocks = element.get("Payload")
        blocks = list(blocks.values()) if isinstance(blocks, dict) else blocks or []
        for block in blocks:
            if not isinstance(block, dict) or block.get("Type") == "Trash":
                continue
            for entry in block.get("BlockElements") or []:
                if isinstance(entry, dict) and entry.get("Type") == "Question" and entry.get("QuestionID"):
                    order.append(str(entry["QuestionID"]))
    return order


def _ordered(mapping: Any, order: Any) -> list[tuple[str, Any]]:
    """(key, value) of a Qualtrics mapping in its `…Order` list (else in file order)."""
    if not isinstance(mapping, dict):
        return []
    keys = [str(k) for k in order] if isinstance(order, list) and order else list(mapping)
    return [(k, mapping[k]) for k in keys if k in mapping]


def _display(value: Any) -> str:
    return strip_html(str(value.get("Display", ""))) if isinstance(value, dict) else ""


def _options(payload: dict[str, Any], mapping_key: str, order_key: str) -> tuple[Options | None, str]:
    """The scale points of a question (values from RecodeValues, else the option ids), or why not."""
    recode = payload.get("RecodeValues") if isinstance(payload.get("RecodeValues"), dict) else {}
    out = []
    for key, value in _ordered(payload.get(mapping_key), payload.get(order_key)):
        if isinstance(value, dict) and value.get("TextEntry") not in (None, False, "false"):
            return None, f"option '{_display(value)}' asks for text"
        try:
            number = int(str(recode.get(key, key)))
        except ValueError:
            return None, f"option '{_display(value)}' has the value {recode.get(key, key)!r}, not a whole number"
        out.append((number, _display(value)))
    options = tuple(out)
    why = scale_problem(options)
    return (None, why) if why else (options, "")


class QsfImporter(Importer):
    name = "qsf"
    help = "a Qualtrics survey export (.qsf): Likert matrices and single-answer questions become items"
    file_help = "the .qsf file (Survey > Tools > Import/Export > Export survey)"

    def read(self, path: str, options: dict[str, Any]) -> list[Draft]:
        """One draft holding the survey's rating questions.

        Example:
            >>> [draft] = QsfImporter().read("tests/fixtures/import/survey.qsf", {})
            >>> [(i.id, i.reverse) for i in draft.items][2:5]
            [('f3', False), ('Q3_1', True), ('Q3_2', True)]
        """
        file = str(path)
        data = load_qsf(file)
        entry = data.get("SurveyEntry") if isinstance(data.get("SurveyEntry"), dict) else {}
        title = str(entry.get("SurveyName") or Path(file).stem)
        draft = Draft(id=make_id(title, "survey"), name=title, file=file, format_name="Qualtrics survey",
                      command="psyq import qsf", scope=f"survey '{title}'")
        questions = {str(e.get("PrimaryAttribute")): e.get("Payload") for e in _elements(data, "SQ")
                     if isinstance(e.get("Payload"), dict)}
        order = [q for q in _block_order(data) if q in questions] or list(questions)
        candidates = []      # (qid, item id, text, options, payload)
        for qid in order:
            candidates.extend(_read_question(draft, file, qid, questions[qid]))
        counts = Counter(options for *_, options, _ in candidates)
        if not counts:
            raise InputError.single(file, "no Likert matrix or single-answer question with whole-number values; "
                                          "nothing to import as rating items")
        scale = tuple(sorted(max(counts, key=lambda c: counts[c])))
        draft.scale = scale_data(scale)
        seen: set[str] = set()
        for qid, item_id, text, options, payload in candidates:
            where = f"{Path(file).name}: {qid}"
            related = relation(scale, options)
            if item_id in seen:
                draft.note(where, f"item '{item_id}' not mapped: its id is used by an earlier item")
                continue
            if related is None:
                draft.note(where, f"item '{item_id}' not mapped: its scale ({describe(options)}) is not the "
                                  f"instrument's ({describe(scale)}); a psyq instrument has one response scale")
                continue
            seen.add(item_id)
            draft.items.append(DraftItem(item_id, text or None, reverse=related == "mirrored", source=where,
                                         stored_reversed=related == "mirrored"))
            index = len(draft.items) - 1
            if related == "mirrored":
                draft.note(where, f"'{item_id}' has the scale's labels on mirrored recode values: imported as "
                                  "reverse-keyed (Qualtrics exports its answers already reversed; see the note "
                                  "on scoring exports)", ("items", index))
            for key, what in LOGIC.items():
                if payload.get(key):
                    draft.note(where, f"{what} of question {qid} not imported; psyq asks every item",
                               ("items", index))
        _flow_notes(draft, data, file)
        return [draft]


def _read_question(draft: Draft, file: str, qid: str, payload: dict[str, Any]) -> list[tuple]:
    """(qid, item id, text, options, payload) of each rating item of a question; notes for the rest."""
    where = f"{Path(file).name}: {qid}"
    kind, selector = payload.get("QuestionType"), payload.get("Selector")
    tag = str(payload.get("DataExportTag") or qid)
    question = strip_html(str(payload.get("QuestionText") or ""))
    if kind == "DB":
        if not draft.items and draft.instructions is None and question:
            draft.instructions = question
            draft.instructions_note = f"taken from the text question {qid}; check that it is the instructions"
        else:
            draft.note(where, f"text/graphic question {qid} not imported")
        return []
    if kind == "Matrix" and selector == "Likert" and payload.get("SubSelector", "SingleAnswer") == "SingleAnswer":
        options, why = _options(payload, "Answers", "AnswerOrder")
        if options is None:
            draft.note(where, f"matrix {tag} not mapped: its scale cannot be a psyq scale ({why})")
            return []
        if draft.instructions is None and not draft.items and question:
            draft.instructions = question
            draft.instructions_note = f"taken from the text of matrix {qid}; check that it is the instructions"
        elif question:
            draft.note(where, f"the text of matrix {tag} is not kept (psyq asks each statement with the "
                              f"instrument's instructions): {question!r}")
        tags = payload.get("ChoiceDataExportTags") if isinstance(payload.get("ChoiceDataExportTags"), dict) else {}
        out = []
        for cid, choice in _ordered(payload.get("Choices"), payload.get("ChoiceOrder")):
            item_id = str(tags.get(cid) or f"{tag}_{cid}")
            if isinstance(choice, dict) and choice.get("TextEntry") not in (None, False, "false"):
                draft.note(where, f"statement '{_display(choice)}' of matrix {tag} not mapped: it asks for text")
            elif not is_id(item_id):
                draft.note(where, f"statement {item_id!r} not mapped: not usable as an item id")
            else:
                out.append((qid, item_id, _display(choice), options, payload))
        return out
    if kind == "MC" and selector in SINGLE_ANSWER:
        options, why = _options(payload, "Choices", "ChoiceOrder")
        if options is None:
            draft.note(where, f"question {tag} not mapped: its choices cannot be a psyq scale ({why})")
            return []
        if not is_id(tag):
            draft.note(where, f"question {tag!r} not mapped: its export tag is not usable as an item id")
            return []
        return [(qid, tag, question, options, payload)]
    what = f"{kind} question" + (f" ({selector})" if selector else "")
    draft.note(where, f"question {tag} not mapped: a {what}, not a single rating on a scale")
    return []


def _flow_notes(draft: Draft, data: dict[str, Any], file: str) -> None:
    name = Path(file).name
    found: Counter = Counter()
    stack = [e.get("Payload") for e in _elements(data, "FL")]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("Type") in ("Branch", "Randomizer", "EndSurvey"):
                found[node["Type"]] += 1
            stack.extend(node.get("Flow") or [])
        elif isinstance(node, list):
            stack.extend(node)
    for kind, n in sorted(found.items()):
        draft.note(name, f"survey flow: {n} {kind} element(s) not imported; psyq asks every item of the instrument")
    for element in _elements(data, "SCO"):
        payload = element.get("Payload") if isinstance(element.get("Payload"), dict) else {}
        if payload.get("ScoringCategories"):
            draft.note(name, "Qualtrics scoring categories not imported; define the subscales by hand")
