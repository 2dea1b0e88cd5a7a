"""jsPsych: a folder whose ``index.html`` runs the questionnaire in a browser, opened from disk.

The folder holds ``index.html`` (the questionnaire as JSON in a ``<script type="application/json">``
block, which a browser never runs), ``jspsych/`` (jsPsych 8.3.0 and its survey-likert,
survey-multi-choice and survey-text plugins as shipped with psyq, their MIT licence and
``SOURCES.md``: versions, npm tarballs, sha256; psyq's ``questionnaire.js``) and one codebook per
instrument. Nothing is fetched at run time: no server, no CDN.

Each person's answers are saved as one row of jsPsych's own CSV (a download named
``<study>_<respondent>.csv`` when opened from disk; a hosting service's save call otherwise, see
docs/asking-people.md). :func:`~psyq.engine.questionnaire.gather.gather_answers` joins the
people's files into the one CSV ``psyq report --human`` reads with the codebook written here.

Example:
    >>> import tempfile
    >>> from psyq.engine.questionnaire.form import questionnaire_from
    >>> out = Path(tempfile.mkdtemp())
    >>> written = JsPsychFormat().write(questionnaire_from("quickstart"), out)
    >>> [p.name for p in written.files]
    ['index.html', 'iri.codebook.yaml']
    >>> sorted(p.name for p in (out / "jspsych").iterdir())[:3]
    ['LICENSE.txt', 'SOURCES.md', 'jspsych.css']
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from typing import Any

from psyq.engine.files.atomic import write_text_atomic
from psyq.engine.questionnaire.base import QuestionnaireFormat, Written, codebook_yaml, write_codebook
from psyq.engine.questionnaire.form import ORDER_COLUMN, RESPONDENT_COLUMN, Questionnaire

ASSETS = Path(__file__).resolve().parent / "assets"
JSPSYCH_FILES = ("jspsych.min.js", "jspsych.css", "plugin-survey-likert.min.js", "plugin-survey-multi-choice.min.js",
                 "plugin-survey-text.min.js", "LICENSE.txt", "SOURCES.md")
SCRIPTS = ("jspsych.min.js", "plugin-survey-likert.min.js", "plugin-survey-multi-choice.min.js",
           "plugin-survey-text.min.js", "questionnaire.js")

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="jspsych/jspsych.css">
<style>.psyq-text {{ white-space: pre-line; text-align: left; max-width: 48em; margin: 0 auto 1em; }}</style>
<!-- Written by psyq questionnaire ({source}). The questionnaire is the JSON below: data, never run. -->
<script id="psyq-questionnaire" type="application/json">{spec}</script>
{scripts}
</head>
<body></body>
</html>
"""


def page_json(data: Any) -> str:
    """`data` as JSON that cannot end the ``<script>`` block it sits in (``<``, ``>`` and ``&`` as
    ``\\u`` escapes, which JSON.parse reads back as the same characters).

    Example:
        >>> page_json({"text": "</script><b>"})
        '{"text": "\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e"}'
    """
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def questionnaire_data(asked: Questionnaire) -> dict[str, Any]:
    """The questionnaire as ``questionnaire.js`` reads it (texts as plain text; the script escapes them).

    Example:
        >>> from psyq.engine.questionnaire.form import questionnaire_from
        >>> data = questionnaire_data(questionnaire_from("quickstart"))
        >>> data["option_orders"], data["parts"][0]["choices"][0], data["demographics"][1]["hint"]
        (['as_written', 'reversed'], {'value': 0, 'label': 'A = Does not describe me well'}, 'a whole number from 18 to 80')
    """
    return {
        "id": asked.id,
        "file_stem": asked.id,
        "respondent_column": RESPONDENT_COLUMN,
        "order_column": ORDER_COLUMN,
        "option_orders": list(asked.option_orders),
        "button_label": "Continue",
        "thanks": "Thank you. Your answers are saved as",
        "parts": [{
            "instrument": part.instrument.id,
            "instructions": part.instructions,
            "matrix": part.matrix,
            "item_order": part.item_order,
            "item_order_column": part.item_order_column,
            "choices": [{"value": c.value, "label": c.label} for c in part.choices],
            "items": [{"id": i.id, "column": i.column, "prompt": part.prompt(i)} for i in part.items],
        } for part in asked.parts],
        "demographics": [{
            "column": d.name, "question": d.question,
            "categories": list(d.categories) if d.categories else None,
            "hint": (f"a whole number from {d.whole_numbers[0]} to {d.whole_numbers[1]}" if d.whole_numbers else ""),
        } for d in asked.demographics],
    }


class JsPsychFormat(QuestionnaireFormat):
    name = "jspsych"
    help = "a folder that runs in a browser from disk (DIR/index.html): jsPsych 8.3.0, shipped with psyq"

    def write(self, asked: Questionnaire, out: Path) -> Written:
        out.mkdir(parents=True, exist_ok=True)
        assets = out / "jspsych"
        assets.mkdir(exist_ok=True)
        for name in JSPSYCH_FILES:
            shutil.copyfile(ASSETS / "jspsych" / name, assets / name)
        shutil.copyfile(ASSETS / "questionnaire.js", assets / "questionnaire.js")
        scripts = "\n".join(f'<script src="jspsych/{name}"></script>' for name in SCRIPTS[:-1])
        # questionnaire.js last, at the end of <head> with `defer`: it runs once the body exists
        scripts += f'\n<script src="jspsych/{SCRIPTS[-1]}" defer></script>'
        page = out / "index.html"
        write_text_atomic(page, PAGE.format(title=html.escape(asked.id), source=html.escape(asked.source.name),
                                            spec=page_json(questionnaire_data(asked)), scripts=scripts))
        files = [page]
        attributes = {d.name: d.name for d in asked.demographics}
        for part in asked.parts:
            text = codebook_yaml(
                part, describes=f"the answers of the jsPsych questionnaire {asked.id} ({out.name}/index.html), "
                                "one file per person joined by psyq questionnaire --gather",
                respondent_column=RESPONDENT_COLUMN, attributes=attributes,
                option_orders=(ORDER_COLUMN, asked.option_orders),
                comment=f"Written by psyq questionnaire {asked.source.name} --to jspsych: the data the page saves.\n"
                        f"Items hold the value on {part.instrument.id}'s scale (raw answers: reverse-keyed items not "
                        "reversed);\nan item left unanswered is empty. option_order says which order of the options "
                        "the person saw.")
            files.append(write_codebook(out, part.instrument.id, text))
        return Written(tuple(files), asked.notes)
