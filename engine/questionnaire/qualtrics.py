"""Qualtrics: a survey file (``.qsf``, JSON) that Qualtrics imports (Survey > Tools > Import/Export >
Import survey).

The file has the parts of a survey Qualtrics exports (``SurveyEntry`` with every field of an export,
placeholders for the ids psyq cannot know; ``SurveyElements``: the blocks ``BL``, the flow ``FL``,
the options ``SO``, the scoring ``SCO`` (none), project ``PROJ`` and statistics ``STAT`` elements,
the question count ``QC``, one ``SQ`` per question, the response set ``RS``), the layout ``psyq
import qsf`` reads. Each instrument is a block: a text
question (``DB``) with its instructions, then one single-answer question (``MC``, ``SAVR``) per item,
a page break between them, whose choices are the option lines the personas read in the study's
order, scored by ``RecodeValues`` (the scale's values; for a reverse-keyed item the same labels on
mirrored values, the Qualtrics idiom ``psyq import qsf`` reads as reverse keying); or, when the study
shows every item at once, one Likert matrix with the instructions as its text (a matrix recodes all
its statements alike, so its reverse keys stay in the codebook alone, and a note says so). Each
answer's column is its export tag (``iri_1``). The demographics are a block of ``MC`` questions
(categories coded 1, 2 …) and single-line text entries for numbers, validated as whole numbers
within the cohort's range (Qualtrics' content validation "Number").

Texts are HTML in Qualtrics, so every text is escaped (an item's ``<b>`` shows as ``<b>``);
psyq's importer unescapes it again. Qualtrics shows every person the same order of options and
items here: a counterbalanced or shuffled study is written as written, with a note.

Two codebooks per instrument read Qualtrics' CSV export (its header, then two more rows: the
question texts and the import ids, left out by ``skip_rows: 2``): ``<id>.codebook.yaml`` for "Use
numeric values" (the recode values: reverse-keyed items stored reversed, so ``keyed: true``),
``<id>_labels.codebook.yaml`` for "Use choice text" (recoded by ``item_values``).

Example:
    >>> import tempfile
    >>> from psyq.engine.questionnaire.form import questionnaire_from
    >>> written = QualtricsFormat().write(questionnaire_from("iri"), Path(tempfile.mkdtemp()))
    >>> [p.name for p in written.files]
    ['iri.qsf', 'iri.codebook.yaml', 'iri_labels.codebook.yaml']
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from psyq.engine.files.atomic import write_text_atomic
from psyq.engine.questionnaire.base import QuestionnaireFormat, Written, codebook_yaml, write_codebook
from psyq.engine.questionnaire.form import Questionnaire

RESPONSE_ID = "ResponseId"       # the respondent column of Qualtrics' CSV export
HEADER_ROWS = 2                  # the export's rows after the header: question texts, import ids

# The shape of a real export, field by field: survey.qsf of github.com/psych251/porter_2016_1_rescue
# (commit 1abd9e7, exported 2024) and of ztangent/norms-cogsci19 (a9a1503, exported 2019), which hold
# the same SurveyEntry fields and the same SCO, PROJ and STAT elements. Ids take Qualtrics' form (a
# prefix and 15 letters or digits, as SV_8AhNKUkgXXDVaOa); what psyq cannot know gets a placeholder
# of that form. Qualtrics makes the imported survey its own (the importer's account owns it): .qsf
# files shared publicly to be imported elsewhere carry their author's owner, creator and brand ids,
# so other accounts' ids are accepted; that an import accepts these placeholders is unverified (no
# Qualtrics account was at hand).
SURVEY_ID = "SV_psyq00000000000"
OWNER_ID = "UR_psyq00000000000"
RESPONSE_SET = "RS_psyq00000000000"
NO_DATE = "0000-00-00 00:00:00"  # how an export writes a date never set (LastAccessed, SurveyStartDate)


def _text(text: str) -> str:
    """A text as Qualtrics shows it: question and choice texts are HTML, so ``<``, ``>``, ``&`` are escaped."""
    return html.escape(text, quote=False).replace("\n", "<br>")


def _element(kind: str, primary: str, secondary: str | None, payload: Any) -> dict[str, Any]:
    return {"SurveyID": SURVEY_ID, "Element": kind, "PrimaryAttribute": primary, "SecondaryAttribute": secondary,
            "TertiaryAttribute": None, "Payload": payload}


def _question(qid: str, tag: str, text: str, kind: str, selector: str, validation: dict[str, Any] | None = None,
              **rest: Any) -> dict[str, Any]:
    payload = {"QuestionText": _text(text), "DataExportTag": tag, "QuestionType": kind, "Selector": selector,
               "Configuration": {"QuestionDescriptionOption": "UseText"}, "QuestionDescription": text[:100],
               **rest, "Validation": validation or {"Settings": {"ForceResponse": "OFF", "Type": "None"}},
               "Language": [], "QuestionID": qid}
    return _element("SQ", qid, text[:100], payload)


def _survey_entry(name: str) -> dict[str, Any]:
    """``SurveyEntry`` with every field of a real export, in its order, the ids placeholders. Every
    date is :data:`NO_DATE`, the value an export gives a date not set, where an export dates the
    survey's creation and last change: the same study writes the same file (the survey an import
    makes gets its own dates; unverified, as above)."""
    return {"SurveyID": SURVEY_ID, "SurveyName": name, "SurveyDescription": None, "SurveyOwnerID": OWNER_ID,
            "SurveyBrandID": "", "DivisionID": None, "SurveyLanguage": "EN", "SurveyActiveResponseSet": RESPONSE_SET,
            "SurveyStatus": "Inactive", "SurveyStartDate": NO_DATE, "SurveyExpirationDate": NO_DATE,
            "SurveyCreationDate": NO_DATE, "CreatorID": OWNER_ID, "LastModified": NO_DATE, "LastAccessed": NO_DATE,
            "LastActivated": NO_DATE, "Deleted": None}


def _survey_parts() -> list[dict[str, Any]]:
    """The scoring (none: psyq scores from the export), project and statistics elements every export
    holds, with the payloads of a survey that has none of its own (as the exports above)."""
    return [
        _element("SCO", "Scoring", None, {"ScoringCategories": [], "ScoringCategoryGroups": [],
                                          "ScoringSummaryCategory": None, "ScoringSummaryAfterQuestions": 0,
                                          "ScoringSummaryAfterSurvey": 0, "DefaultScoringCategory": None,
                                          "AutoScoringCategory": None}),
        {**_element("PROJ", "CORE", None, {"ProjectCategory": "CORE", "SchemaVersion": "1.1.0"}),
         "TertiaryAttribute": "1.1.0"},
        _element("STAT", "Survey Statistics", None, {"MobileCompatible": True, "ID": "Survey Statistics"}),
    ]


def _whole_number(low: int, high: int) -> dict[str, Any]:
    """A text entry's validation as a number from `low` to `high` with no decimals: the settings of
    Qualtrics' content validation "Number" as an export writes them (the text entry of
    psych251/porter_2016_1_rescue's survey.qsf, where NumDecimals is "" for any number of decimals)."""
    return {"Settings": {"ForceResponse": "OFF", "Type": "ContentType", "MinChars": "1", "ContentType": "ValidNumber",
                         "ValidDateType": "DateWithFormat", "ValidPhoneType": "ValidUSPhone",
                         "ValidZipType": "ValidUSZip",
                         "ValidNumber": {"Min": str(low), "Max": str(high), "NumDecimals": "0"}}}


def _choices(labels: list[str]) -> dict[str, dict[str, str]]:
    return {str(k): {"Display": _text(label)} for k, label in enumerate(labels, 1)}


class QualtricsFormat(QuestionnaireFormat):
    name = "qualtrics"
    help = "a Qualtrics survey (DIR/STUDY.qsf) to import under Survey > Tools > Import/Export"

    def write(self, asked: Questionnaire, out: Path) -> Written:
        out.mkdir(parents=True, exist_ok=True)
        notes = list(asked.notes)
        questions: list[dict[str, Any]] = []
        blocks: list[dict[str, Any]] = []
        order = asked.option_orders[0]

        def add(question: dict[str, Any], block: list[dict[str, str]]) -> None:
            questions.append(question)
            block.append({"Type": "Question", "QuestionID": question["PrimaryAttribute"]})

        for part in asked.parts:
            elements: list[dict[str, str]] = []
            low, high = part.instrument.scale_min, part.instrument.scale_max
            shown = part.choices_in(order)
            # Choice k (1-based, as written) keeps its id in either order; ChoiceOrder gives the order shown.
            ids = {c.value: str(k) for k, c in enumerate(part.choices, 1)}
            labels = _choices([c.label for c in part.choices])
            shown_ids = [ids[c.value] for c in shown]
            if part.matrix:
                statements = {str(k): {"Display": _text(part.prompt(i))} for k, i in enumerate(part.items, 1)}
                add(_question(f"QID{len(questions) + 1}", f"{part.instrument.id}_items", part.instructions, "Matrix",
                              "Likert", SubSelector="SingleAnswer", Choices=statements,
                              ChoiceOrder=[str(k) for k in range(1, len(part.items) + 1)],
                              ChoiceDataExportTags={str(k): i.column for k, i in enumerate(part.items, 1)},
                              Answers=labels, AnswerOrder=shown_ids,
                              RecodeValues={ids[c.value]: str(c.value) for c in part.choices}), elements)
                if any(i.reverse for i in part.items):
                    notes.append(f"{part.instrument.id}: a Qualtrics matrix recodes all its statements alike, so the "
                                 "reverse-keyed items are not marked in the .qsf; the codebook keys them")
            else:
                add(_question(f"QID{len(questions) + 1}", f"{part.instrument.id}_instructions", part.instructions,
                              "DB", "TB"), elements)
                for item in part.items:
                    elements.append({"Type": "Page Break"})
                    recode = {ids[c.value]: str(low + high - c.value if item.reverse else c.value) for c in part.choices}
                    add(_question(f"QID{len(questions) + 1}", item.column, part.prompt(item), "MC", "SAVR",
                                  SubSelector="TX", Choices=labels, ChoiceOrder=shown_ids, RecodeValues=recode),
                        elements)
            if part.item_order == "shuffled":
                notes.append(f"{part.instrument.id}: the study shuffles the items per persona; the .qsf asks them in "
                             "the order written (Qualtrics' block randomization can shuffle them; record the order)")
            blocks.append({"Type": "Standard", "Description": part.instrument.name, "ID": f"BL_{len(blocks) + 1}",
                           "BlockElements": elements})
        if asked.demographics:
            elements = []
            for d in asked.demographics:
                if d.categories:
                    add(_question(f"QID{len(questions) + 1}", d.name, d.question, "MC", "SAVR", SubSelector="TX",
                                  Choices=_choices(list(d.categories)),
                                  ChoiceOrder=[str(k) for k in range(1, len(d.categories) + 1)],
                                  RecodeValues={str(k): str(k) for k in range(1, len(d.categories) + 1)}), elements)
                else:
                    low, high = d.whole_numbers
                    add(_question(f"QID{len(questions) + 1}", d.name, f"{d.question} (a whole number from {low} to "
                                  f"{high})", "TE", "SL", validation=_whole_number(low, high)), elements)
            blocks.append({"Type": "Standard", "Description": "Demographics", "ID": f"BL_{len(blocks) + 1}",
                           "BlockElements": elements})
        blocks[0]["Type"] = "Default"
        blocks.append({"Type": "Trash", "Description": "Trash / Unused Questions", "ID": f"BL_{len(blocks) + 1}",
                       "BlockElements": []})
        if asked.counterbalanced:
            notes.append("the .qsf shows every person the options as written; the study counterbalances them (write "
                         "a second survey from a study with option_order: reversed for the other half)")
        flow = [{"Type": "Block", "ID": b["ID"], "FlowID": f"FL_{k + 2}"} for k, b in enumerate(blocks[:-1])]
        survey = {
            "SurveyEntry": _survey_entry(asked.id),
            "SurveyElements": [
                _element("BL", "Survey Blocks", None, blocks),
                _element("FL", "Survey Flow", None, {"Type": "Root", "FlowID": "FL_1", "Flow": flow,
                                                     "Properties": {"Count": len(flow) + 1}}),
                _element("SO", "Survey Options", None, {"BackButton": "false", "SurveyProtection": "PublicSurvey",
                                                         "SurveyTermination": "DefaultMessage",
                                                         "ProgressBarDisplay": "None", "PartialData": "+1 week"}),
                *_survey_parts(),
                _element("QC", "Survey Question Count", str(len(questions)), None),
                *questions,
                _element("RS", RESPONSE_SET, "Default Response Set", None),
            ],
        }
        survey_file = out / f"{asked.id}.qsf"
        write_text_atomic(survey_file, json.dumps(survey, ensure_ascii=False, indent=1) + "\n")
        files = [survey_file]
        attributes = {d.name: d.name for d in asked.demographics}
        codes = {d.name: {str(k): c for k, c in enumerate(d.categories, 1)} for d in asked.demographics if d.categories}
        for part in asked.parts:
            stored_reversed = not part.matrix and any(i.reverse for i in part.items)
            numeric = codebook_yaml(
                part, describes=f"Qualtrics' CSV export (Use numeric values) of the survey imported from "
                                f"{survey_file.name}", respondent_column=RESPONSE_ID, attributes=attributes,
                values=codes, keyed=stored_reversed, skip_rows=HEADER_ROWS,
                comment=f"Written by psyq questionnaire {asked.source.name} --to qualtrics: Qualtrics' CSV export "
                        "with \"Use numeric values\".\nItems hold the recode values"
                        + (": reverse-keyed items stored reversed (keyed: true)." if stored_reversed else "."))
            files.append(write_codebook(out, part.instrument.id, numeric))
            text = codebook_yaml(
                part, describes=f"Qualtrics' CSV export (Use choice text) of the survey imported from "
                                f"{survey_file.name}", respondent_column=RESPONSE_ID, attributes=attributes,
                item_values={c.label: c.value for c in part.choices}, skip_rows=HEADER_ROWS,
                comment=f"Written by psyq questionnaire {asked.source.name} --to qualtrics: Qualtrics' CSV export "
                        "with \"Use choice text\".\nAnswers are the choice texts, recoded to the scale's values by "
                        "item_values (raw answers).")
            files.append(write_codebook(out, f"{part.instrument.id}_labels", text))
        return Written(tuple(files), tuple(notes))
