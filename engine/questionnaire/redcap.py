"""REDCap: a data dictionary CSV that REDCap's "Data Dictionary" page uploads.

The layout is REDCap's documented one (the 18 columns of a downloaded dictionary, ``Variable /
Field Name`` … ``Field Annotation``; field names in lower case, digits and ``_``; choices as
``code, label | code, label``): the first field is the record id (``record_id``, REDCap's first
field of a project). Each instrument is a form of its own: a ``descriptive`` field with its
instructions, then one ``radio`` field per item whose choices are the scale's values with the
option lines the personas read (``0, A = Does not describe me well | 1, B | …``) in the study's
order (a matrix group when the study shows every item at once; when it shows one item per
screen, every item after the first has the instructions as its section header, so that a survey
set to show one section per page shows each item on its own page, as a note says), then one
hidden ``calc`` field per subscale, scored by psyq's rule (:func:`score_calc`: blank below
``min_answered``, a sum prorated over blank items), a reverse-keyed item written ``(min + max -
[item])``, which is how ``psyq import redcap`` reads keys back. The demographics are a form
``demographics``: a ``radio`` field per categorical attribute (codes 1, 2, … in the cohort's
order) and an ``integer`` text field per numeric one.

Labels are HTML in REDCap, so every text is escaped (an item's ``<b>`` shows as ``<b>``); psyq's
importer unescapes it again.

REDCap shows every person the same order of options and items: a counterbalanced or shuffled
study is written in the order as written, with a note.

Two codebooks per instrument read REDCap's two CSV exports: ``<id>.codebook.yaml`` the "raw" one
(field names as columns, choice codes as values: the scale's values, so no recoding; demographics
coded 1, 2 … mapped back), ``<id>_labels.codebook.yaml`` the "labels" one (field labels as
columns, choice labels as values, recoded by ``item_values``).

Example:
    >>> import tempfile
    >>> from psyq.engine.questionnaire.form import questionnaire_from
    >>> written = RedcapFormat().write(questionnaire_from("quickstart"), Path(tempfile.mkdtemp()))
    >>> [p.name for p in written.files]
    ['quickstart_dictionary.csv', 'iri.codebook.yaml', 'iri_labels.codebook.yaml']
    >>> written.notes[-1][:60]
    'REDCap shows every person the same order of options: the stu'
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from psyq.engine.files.atomic import write_text_atomic
from psyq.engine.questionnaire.base import QuestionnaireFormat, Written, codebook_yaml, write_codebook
from psyq.engine.questionnaire.form import Part, Questionnaire, answer_column

# REDCap's data dictionary columns, in the order of its download.
COLUMNS = ("Variable / Field Name", "Form Name", "Section Header", "Field Type", "Field Label",
           "Choices, Calculations, OR Slider Labels", "Field Note", "Text Validation Type OR Show Slider Number",
           "Text Validation Min", "Text Validation Max", "Identifier?", "Branching Logic (Show field only if...)",
           "Required Field?", "Custom Alignment", "Question Number (surveys only)", "Matrix Group Name",
           "Matrix Ranking?", "Field Annotation")
RECORD_ID = "record_id"
RECORD_LABEL = "Record ID"


def _text(text: str) -> str:
    """A text as REDCap shows it: its labels are HTML, so ``<``, ``>`` and ``&`` are escaped."""
    return html.escape(text, quote=False)


def _row(**cells: str) -> list[str]:
    names = {"field": 0, "form": 1, "section": 2, "type": 3, "label": 4, "choices": 5, "note": 6, "validation": 7,
             "low": 8, "high": 9, "matrix": 15, "annotation": 17}
    row = [""] * len(COLUMNS)
    for key, value in cells.items():
        row[names[key]] = value
    return row


def form_name(part: Part) -> str:
    """The REDCap form (instrument) of an instrument: its id as a REDCap name.

    Example:
        >>> from psyq.engine.questionnaire.form import questionnaire_from
        >>> form_name(questionnaire_from("iri").parts[0])
        'iri'
    """
    return answer_column(part.instrument.id, "")[:-1]


def _page_header(part: Part, k: int, instructions: str) -> str:
    """The ``Section Header`` of the `k`-th item (from 0): the instructions above every item but the
    first when the study asked one item per screen, nothing on a matrix.

    A REDCap survey set to show one section per page starts a page at every section header (REDCap
    Knowledge Base RC-SURV-03, "Pagination",
    https://bdeveer.github.io/REDCap_KB_RAG/RC-SURV-03_Survey-Settings-Behavior-Access-and-Termination/),
    so each item is a page of its own below the instructions, as each per-item prompt gave them to a
    persona; the first item shares its page with the descriptive field holding the instructions
    (which ``psyq import redcap`` reads back as them)."""
    return instructions if not part.matrix and k > 0 else ""


def _pagination_notes(asked: Questionnaire) -> list[str]:
    """Which survey setting shows each form's pages as the study showed them: the data dictionary
    cannot set it (it is a survey setting of each form, not a column)."""
    per_item = [form_name(p) for p in asked.parts if not p.matrix]
    whole = [form_name(p) for p in asked.parts if p.matrix]
    notes = []
    if per_item:
        notes.append(f"REDCap: in the Survey Settings of {', '.join(per_item)}, set the question display format to "
                     "\"One section per page (multiple pages)\": each item has a section header, so each is a page "
                     "of its own below the instructions, as the personas were asked one item per screen (the data "
                     "dictionary cannot set this; with REDCap's default, \"All on one page\", every item shows on "
                     "one page)")
    if whole:
        notes.append(f"REDCap: keep the Survey Settings of {', '.join(whole)} at \"All on one page\" (REDCap's "
                     "default): the study showed the whole instrument at once")
    return notes


def score_calc(part: Part, subscale) -> str:
    """A subscale's score as a REDCap calculation, by psyq's rule (:mod:`psyq.engine.trials.scoring`):
    blank when fewer than ``min_answered`` items are answered; a mean subscale the mean of the
    answered items; a sum subscale their sum when all are answered, else their mean times the number
    of items (prorated). A reverse-keyed item is ``(min + max-[item])``.

    REDCap's ``sum()`` and ``mean()`` leave blank values out, ``if(condition, then, else)`` chooses,
    and a blank is written ``""`` (REDCap Help & FAQ, "Calculations", as the University of Florida's
    "Calculated Fields - REDCap How-To Guide" gives it:
    https://www.scribd.com/document/628776406/Calculated-Fields-REDCap-How; Wake Forest CTSI,
    https://ctsi.wakehealth.edu/announcements/2021/05/redcap-calculated-fields-if-then); the answered
    items are counted as ``sum(if([item]<>"",1,0),…)``, the idiom of Indiana University's
    REDCap_Missing_Syntax.R (github.com/iu-dms/ayaniR), which counts blanks with ``if([item]='',1,0)``.
    The expression is psyq's; it was not run on a REDCap server here.

    Example:
        >>> from psyq.engine.questionnaire.form import questionnaire_from
        >>> part = questionnaire_from("iri").parts[0]
        >>> fs = part.instrument.rating_subscales[1]
        >>> fs.id, fs.score, part.instrument.min_answered(fs)
        ('FS', 'sum', 6)
        >>> score_calc(part, fs)[:46]
        'if(sum(if([iri_1]<>"",1,0),if([iri_5]<>"",1,0)'
    """
    low, high = part.instrument.scale_min, part.instrument.scale_max
    items = [i for i in part.items if subscale.id in part.instrument.item(i.id).subscales]
    terms = ",".join(f"({low + high}-[{i.column}])" if i.reverse else f"[{i.column}]" for i in items)
    answered = "sum(" + ",".join(f'if([{i.column}]<>"",1,0)' for i in items) + ")"
    n, least = len(items), part.instrument.min_answered(subscale)
    score = f"{subscale.score}({terms})"
    if subscale.score == "sum" and least < n:
        score = f"if({answered}={n},{score},mean({terms})*{n})"
    return f'if({answered}<{least},"",{score})'


class RedcapFormat(QuestionnaireFormat):
    name = "redcap"
    help = "a REDCap data dictionary (DIR/STUDY_dictionary.csv) to upload on the Data Dictionary page"

    def write(self, asked: Questionnaire, out: Path) -> Written:
        out.mkdir(parents=True, exist_ok=True)
        notes = list(asked.notes)
        rows = [_row(field=RECORD_ID, form=form_name(asked.parts[0]), type="text", label=RECORD_LABEL)]
        order = asked.option_orders[0]
        for part in asked.parts:
            form = form_name(part)
            instructions = _text(part.instructions).replace("\n", "<br>")
            rows.append(_row(field=f"{form}_instructions", form=form, type="descriptive", label=instructions))
            choices = " | ".join(f"{c.value}, {_text(c.label)}" for c in part.choices_in(order))
            for k, item in enumerate(part.items):
                rows.append(_row(field=item.column, form=form, section=_page_header(part, k, instructions),
                                 type="radio", label=_text(part.prompt(item)), choices=choices,
                                 matrix=f"{form}_items" if part.matrix else ""))
            for subscale in part.instrument.rating_subscales:
                rows.append(_row(field=answer_column(form, f"{subscale.id}_score"), form=form, type="calc",
                                 label=_text(f"{subscale.name} ({subscale.score})"),
                                 choices=score_calc(part, subscale), annotation="@HIDDEN"))
            if part.item_order == "shuffled":
                notes.append(f"{part.instrument.id}: the study shuffles the items per persona; REDCap asks them in "
                             "the order written")
        notes.extend(_pagination_notes(asked))
        for d in asked.demographics:
            if d.categories:
                rows.append(_row(field=answer_column("demographics", d.name)[len("demographics_"):],
                                 form="demographics", type="radio", label=_text(d.question),
                                 choices=" | ".join(f"{k}, {_text(c)}" for k, c in enumerate(d.categories, 1))))
            else:
                low, high = d.whole_numbers
                rows.append(_row(field=answer_column("demographics", d.name)[len("demographics_"):],
                                 form="demographics", type="text", label=_text(d.question),
                                 validation="integer", low=str(low), high=str(high)))
        if asked.counterbalanced:
            notes.append("REDCap shows every person the same order of options: the study counterbalances them, "
                         "the dictionary lists them as written (ask half of the people with a second project "
                         "written from a study with option_order: reversed to counterbalance)")
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(rows)
        dictionary = out / f"{asked.id}_dictionary.csv"
        write_text_atomic(dictionary, text.getvalue())
        files = [dictionary]
        fields = {d.name: answer_column("demographics", d.name)[len("demographics_"):] for d in asked.demographics}
        codes = {d.name: {str(k): c for k, c in enumerate(d.categories, 1)} for d in asked.demographics if d.categories}
        for part in asked.parts:
            raw = codebook_yaml(
                part, describes=f"REDCap's CSV export (raw data) of the project made from {dictionary.name}",
                respondent_column=RECORD_ID, attributes=fields, values=codes,
                comment=f"Written by psyq questionnaire {asked.source.name} --to redcap: REDCap's \"CSV / Microsoft "
                        "Excel (raw data)\" export.\nItems hold the choice codes, which are the scale's values "
                        "(raw answers).")
            files.append(write_codebook(out, part.instrument.id, raw))
            labels = {item.id: part.prompt(item) for item in part.items}      # the labels export's header
            label_book = codebook_yaml(
                part, describes=f"REDCap's CSV export (labels) of the project made from {dictionary.name}",
                respondent_column=RECORD_LABEL, attributes={d.name: d.question for d in asked.demographics},
                item_values={c.label: c.value for c in part.choices}, items=labels,
                comment=f"Written by psyq questionnaire {asked.source.name} --to redcap: REDCap's \"CSV / Microsoft "
                        "Excel (labels)\" export.\nColumns are the field labels, answers the choice labels, recoded "
                        "to the scale's values by item_values.")
            files.append(write_codebook(out, f"{part.instrument.id}_labels", label_book))
        return Written(tuple(files), tuple(notes))
