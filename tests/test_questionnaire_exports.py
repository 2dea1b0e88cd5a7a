"""psyq questionnaire for REDCap and Qualtrics (issue 43): the files round-trip through psyq's own
importers, and the platforms' answer exports, written here by hand in their documented layouts,
read back through the codebooks written beside them (and through one written by hand for a survey
psyq did not write).

Layouts followed:
- REDCap data dictionary: the 18 columns of REDCap's "Data Dictionary" download (Variable / Field
  Name … Field Annotation), as engine/importers/redcap.py reads them;
- REDCap "CSV / Microsoft Excel (raw data)" export: one row per record, the first column
  ``record_id``, then every field that holds data in dictionary order (descriptive fields hold
  none; calc fields their value), each form followed by ``<form>_complete`` (2 = complete); radio
  fields hold their choice codes;
- Qualtrics CSV export (Data & Analysis > Export > CSV): the header of column names, then two
  more rows (the question texts, then ``{"ImportId":"QID…"}``), then one row per response; the
  metadata columns StartDate … UserLanguage with ``ResponseId`` among them; a question's column is
  its export tag (a matrix statement's ``<tag>_<n>``); "Use numeric values" gives recode values,
  "Use choice text" the choices' texts.
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from cli_helper import psyq_in_process
from psyq import keyed_answers, reverse_key
from psyq.analysis.scoring.human_answers import read_answers_csv
from psyq.analysis.scoring.scores import score_humans
from psyq.engine.design.instrument import load_instrument
from psyq.engine.files.errors import InputError
from psyq.engine.files.shipped import locate
from psyq.engine.questionnaire.form import questionnaire_from
from psyq.engine.trials.prompts import item_messages, option_lines, uses_codes

SHIPPED_WITH_TEXTS = ["iri", "affect_psyq"]      # the shipped instruments of rating items with their texts
QUALTRICS_META = ["StartDate", "EndDate", "Status", "IPAddress", "Progress", "Duration (in seconds)", "Finished",
                  "RecordedDate", "ResponseId", "RecipientLastName", "RecipientFirstName", "RecipientEmail",
                  "ExternalReference", "LocationLatitude", "LocationLongitude", "DistributionChannel", "UserLanguage"]
KEYS = ["respondent_id", "subscale", "score", "n_answered", "prorated"]


def _psyq(*argv: object) -> tuple[int, str, str]:
    done = psyq_in_process(*argv)
    return done.returncode, done.stdout, done.stderr


def _same_instrument(original, imported, column_of: dict[str, str]) -> None:
    """Items (by their answer columns), texts, keys and options of `imported` equal `original`'s;
    options as the people see them: the option lines of the prompt."""
    assert [i.id for i in imported.rating_items] == [column_of[i.id] for i in original.rating_items]
    assert [i.text for i in imported.rating_items] == [i.text for i in original.rating_items]
    assert [i.reverse for i in imported.rating_items] == [i.reverse for i in original.rating_items]
    shown = [(o.value, option_lines([o], uses_codes(original))) for o in original.scale]
    assert [(o.value, o.label) for o in imported.scale] == shown


@pytest.mark.parametrize("name", SHIPPED_WITH_TEXTS)
def test_a_redcap_dictionary_round_trips_to_the_same_instrument(name, tmp_path):
    assert _psyq("questionnaire", name, "--to", "redcap", "--out", tmp_path)[0] == 0
    code, _, err = _psyq("import", "redcap", tmp_path / f"{name}_dictionary.csv", "--form", name.replace(".", "_"),
                         "--out", tmp_path / "back.yaml")
    assert code == 0, err
    original, imported = load_instrument(name), load_instrument(tmp_path / "back.yaml")
    part = questionnaire_from(name).parts[0]
    _same_instrument(original, imported, {i.id: i.column for i in part.items})
    # the subscales too: REDCap's calc fields, read back as sums of the same items
    assert {s.id: [i.id for i in imported.subscale_items(s.id)] for s in imported.subscales} == {
        f"{name}_{s.id.lower()}_score": [f"{name}_{i.id}".lower() for i in original.subscale_items(s.id)]
        for s in original.subscales}
    # and their rule for blank items (psyq's, written into the calc fields): the same min_answered
    assert [imported.min_answered(s) for s in imported.subscales] == [original.min_answered(s)
                                                                      for s in original.subscales]


@pytest.mark.parametrize("name", SHIPPED_WITH_TEXTS)
def test_a_qualtrics_survey_round_trips_to_the_same_instrument(name, tmp_path):
    assert _psyq("questionnaire", name, "--to", "qualtrics", "--out", tmp_path)[0] == 0
    code, _, err = _psyq("import", "qsf", tmp_path / f"{name}.qsf", "--out", tmp_path / "back.yaml")
    assert code == 0, err
    original, imported = load_instrument(name), load_instrument(tmp_path / "back.yaml")
    part = questionnaire_from(name).parts[0]
    _same_instrument(original, imported, {i.id: i.column for i in part.items})
    assert imported.instructions == original.instructions.strip()


# SurveyEntry of a real export, its fields in their order (survey.qsf of psych251/porter_2016_1_rescue at
# 1abd9e7, the same in ztangent/norms-cogsci19 at a9a1503): None where those exports hold null.
REAL_SURVEY_ENTRY = ["SurveyID", "SurveyName", "SurveyDescription", "SurveyOwnerID", "SurveyBrandID", "DivisionID",
                     "SurveyLanguage", "SurveyActiveResponseSet", "SurveyStatus", "SurveyStartDate",
                     "SurveyExpirationDate", "SurveyCreationDate", "CreatorID", "LastModified", "LastAccessed",
                     "LastActivated", "Deleted"]
QUALTRICS_ID = {"SurveyID": "SV", "SurveyOwnerID": "UR", "CreatorID": "UR", "SurveyActiveResponseSet": "RS"}
QUALTRICS_DATES = ["SurveyStartDate", "SurveyExpirationDate", "SurveyCreationDate", "LastModified", "LastAccessed",
                   "LastActivated"]


def test_a_qualtrics_survey_has_the_parts_of_a_real_export(tmp_path):
    """The .qsf has what every export has: SurveyEntry's fields (ids in Qualtrics' form: a prefix and
    15 letters or digits; dates as "YYYY-MM-DD hh:mm:ss"), the scoring, project and statistics
    elements in an export's order and shape, and a number asked as a number: the age question is a
    text entry validated as a whole number in the cohort's range (Qualtrics' content validation)."""
    assert _psyq("questionnaire", "quickstart", "--to", "qualtrics", "--out", tmp_path)[0] == 0
    survey = json.loads((tmp_path / "quickstart.qsf").read_text())
    entry = survey["SurveyEntry"]
    assert list(entry) == REAL_SURVEY_ENTRY
    assert entry["SurveyName"] == "quickstart" and entry["SurveyStatus"] == "Inactive"
    assert entry["SurveyDescription"] is entry["DivisionID"] is entry["Deleted"] is None
    for field, prefix in QUALTRICS_ID.items():
        assert re.fullmatch(rf"{prefix}_[A-Za-z0-9]{{15}}", entry[field]), (field, entry[field])
    for field in QUALTRICS_DATES:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", entry[field]), (field, entry[field])
    elements = survey["SurveyElements"]
    assert {e["SurveyID"] for e in elements} == {entry["SurveyID"]}
    kinds = [e["Element"] for e in elements]
    assert kinds == ["BL", "FL", "SO", "SCO", "PROJ", "STAT", "QC", *["SQ"] * (kinds.count("SQ")), "RS"]
    by_kind = {e["Element"]: e for e in elements}
    assert by_kind["RS"]["PrimaryAttribute"] == entry["SurveyActiveResponseSet"]
    assert (by_kind["SCO"]["PrimaryAttribute"], by_kind["SCO"]["Payload"]) == ("Scoring", {
        "ScoringCategories": [], "ScoringCategoryGroups": [], "ScoringSummaryCategory": None,
        "ScoringSummaryAfterQuestions": 0, "ScoringSummaryAfterSurvey": 0, "DefaultScoringCategory": None,
        "AutoScoringCategory": None})
    proj = by_kind["PROJ"]
    assert (proj["PrimaryAttribute"], proj["TertiaryAttribute"], proj["Payload"]) == (
        "CORE", "1.1.0", {"ProjectCategory": "CORE", "SchemaVersion": "1.1.0"})
    stat = by_kind["STAT"]
    assert stat["PrimaryAttribute"] == "Survey Statistics" and set(stat["Payload"]) == {"MobileCompatible", "ID"}
    [age] = [e["Payload"] for e in elements if e["Element"] == "SQ" and e["Payload"]["DataExportTag"] == "age"]
    assert (age["QuestionType"], age["Selector"]) == ("TE", "SL")
    settings = age["Validation"]["Settings"]
    assert (settings["Type"], settings["ContentType"]) == ("ContentType", "ValidNumber")
    assert settings["ValidNumber"] == {"Min": "18", "Max": "80", "NumDecimals": "0"}


def test_item_texts_with_markup_stay_text_through_both_platforms(tmp_path):
    iri = yaml.safe_load(locate("iri", "instrument").read_text())
    iri["items"][0]["text"] = "I <b>rarely</b> feel <script>x()</script> & sad."
    (tmp_path / "iri.yaml").write_text(yaml.safe_dump(iri, sort_keys=False))
    for to in ("redcap", "qualtrics"):
        assert _psyq("questionnaire", tmp_path / "iri.yaml", "--to", to, "--out", tmp_path / to)[0] == 0
    dictionary = (tmp_path / "redcap" / "iri_dictionary.csv").read_text()
    survey = json.loads((tmp_path / "qualtrics" / "iri.qsf").read_text())
    shown = "I &lt;b&gt;rarely&lt;/b&gt; feel &lt;script&gt;x()&lt;/script&gt; &amp; sad."
    assert shown in dictionary and "<b>" not in dictionary
    texts = [e["Payload"]["QuestionText"] for e in survey["SurveyElements"] if e["Element"] == "SQ"]
    assert shown in texts and not any("<b>" in t for t in texts)


def test_what_a_platform_cannot_do_as_the_study_is_said(tmp_path):
    code, _, err = _psyq("questionnaire", "quickstart", "--to", "redcap", "--out", tmp_path)
    assert code == 0 and "note: REDCap shows every person the same order of options" in err
    code, _, err = _psyq("questionnaire", "quickstart", "--to", "qualtrics", "--out", tmp_path)
    assert code == 0 and "note: the .qsf shows every person the options as written" in err



def _redcap_pages(dictionary: Path, form: str) -> list[list[dict[str, str]]]:
    """The pages of a form's survey set to "One section per page": a new page at every field with a
    section header (REDCap's pagination), the fields before the first one on the first page."""
    pages: list[list[dict[str, str]]] = []
    with dictionary.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["Form Name"] != form:
                continue
            if row["Section Header"] or not pages:
                pages.append([])
            pages[-1].append(row)
    return pages


@pytest.mark.parametrize("presentation", ["per_item", "whole_instrument"])
def test_a_redcap_survey_shows_the_items_per_page_as_the_personas_got_them(presentation, tmp_path):
    """One item per screen (per_item): every item is a page of its own under REDCap's "one section per
    page", each page showing the instructions above the item, as each per-item prompt did, and a note
    says which survey setting to choose; the whole instrument at once: one page."""
    study = tmp_path / "study.yaml"
    study.write_text(f"psyq: study/1\nid: pages\ninstruments:\n  - iri\ncohort: adults_small\n"
                     f"backends:\n  - {{id: local, kind: local}}\nprotocol: {{presentation: {presentation}}}\n")
    code, _, err = _psyq("questionnaire", study, "--to", "redcap", "--out", tmp_path / "q")
    assert code == 0, err
    pages = _redcap_pages(tmp_path / "q" / "pages_dictionary.csv", "iri")
    instructions = html.escape(load_instrument("iri").instructions.strip(), quote=False).replace("\n", "<br>")
    items = [[row["Variable / Field Name"] for row in page if row["Field Type"] == "radio"] for page in pages]
    if presentation == "per_item":
        assert items == [[f"iri_{k}"] for k in range(1, 29)]
        for page in pages:        # the instructions on every page: a descriptive field, or the section header
            assert any(instructions in (row["Section Header"], row["Field Label"]) for row in page)
        assert 'note: REDCap: in the Survey Settings of iri, set the question display format to "One section per ' \
               'page (multiple pages)"' in err
        # read back, the instructions repeated above every item are said once, not once per item
        code, _, err = _psyq("import", "redcap", tmp_path / "q" / "pages_dictionary.csv", "--form", "iri",
                             "--out", tmp_path / "back.yaml")
        assert code == 0, err
        assert "the instructions repeated as the section header of 27 field(s) (iri_2 …)" in err
        assert "section header above" not in err
        assert load_instrument(tmp_path / "back.yaml").instructions.strip() == load_instrument("iri").instructions.strip()
    else:
        assert items == [[f"iri_{k}" for k in range(1, 29)]]
        assert 'note: REDCap: keep the Survey Settings of iri at "All on one page"' in err


MINI_1TO7 = Path(__file__).resolve().parent / "data" / "mini_1to7.yaml"


def _redcap_calc(expression: str, answers: dict[str, int | None]) -> float | None:
    """What REDCap computes for a calc field of the shape psyq writes, by REDCap's documented rules
    (engine/questionnaire/redcap.py, score_calc): ``sum()`` and ``mean()`` leave blank values out,
    ``if(condition, then, else)``, ``""`` is blank, a term ``(K-[x])`` on a blank item is blank,
    ``[x]<>""`` is true when x is answered, ``<``, ``=`` and ``*`` on numbers. None is blank.
    Anything else in the expression is refused, so the test reads only what psyq writes."""
    tokens = re.findall(r'\[\w+\]|\d+|""|<>|[(),<=*-]|\w+|\S', expression)
    at = 0

    def take(expected: str | None = None) -> str:
        nonlocal at
        token = tokens[at]
        assert expected is None or token == expected, (expected, token, expression)
        at += 1
        return token

    def value():
        token = take()
        if token in ("sum", "mean", "if"):
            take("(")
            args = [comparison()]
            while tokens[at] == ",":
                take(",")
                args.append(comparison())
            take(")")
            if token == "if":
                condition, then, otherwise = args
                assert isinstance(condition, bool), expression
                return then if condition else otherwise
            numbers = [a for a in args if a is not None]
            return sum(numbers) if token == "sum" else sum(numbers) / len(numbers)
        if token == "(":                                    # (K-[x])
            constant, _, field = int(take()), take("-"), take()
            take(")")
            answer = answers[field[1:-1]]
            return None if answer is None else constant - answer
        if token.startswith("["):
            return answers[token[1:-1]]
        if token == '""':
            return None
        assert token.isdigit(), (token, expression)
        return int(token)

    def product():
        left = value()
        while at < len(tokens) and tokens[at] == "*":
            take("*")
            right = value()
            left = None if left is None or right is None else left * right
        return left

    def comparison():
        left = product()
        if at < len(tokens) and tokens[at] in ("<", "=", "<>"):
            op, right = take(), product()
            if op == "<>":
                return left != right
            assert left is not None and right is not None, expression
            return left < right if op == "<" else left == right
        return left

    result = comparison()
    assert at == len(tokens), expression
    return result


def _calcs(dictionary: Path) -> dict[str, str]:
    with dictionary.open(newline="") as handle:
        return {row["Variable / Field Name"]: row["Choices, Calculations, OR Slider Labels"]
                for row in csv.DictReader(handle) if row["Field Type"] == "calc"}


def test_redcap_score_fields_reverse_key_as_psyq_does_on_a_1_to_7_scale(tmp_path):
    """Guards the reverse key of the calc fields: ``(min + max - [item])``, not ``(max - [item])``
    (the two agree on a 0-4 scale, as the IRI's, and differ by the scale's minimum on 1-7), and psyq's
    rule for blank items: each subscale's calc field, computed as REDCap would, equals psyq's own score
    of the same answers, blank where psyq gives none (fewer answers than min_answered), a sum prorated
    where some are blank."""
    assert _psyq("questionnaire", MINI_1TO7, "--to", "redcap", "--out", tmp_path)[0] == 0
    calcs = _calcs(tmp_path / "mini_dictionary.csv")
    mini = load_instrument(MINI_1TO7)
    assert sorted(calcs) == [f"mini_{s.id.lower()}_score" for s in mini.rating_subscales]
    # a person answering 1 everywhere: the reversed item a keys to 7, so X (a + b) is 7 + 1
    ones = {f"mini_{i}": 1 for i in "abcd"}
    assert _redcap_calc(calcs["mini_x_score"], ones) == 7 + 1
    assert _redcap_calc(calcs["mini_x_score"], {**ones, "mini_a": 7}) == 1 + 1
    rng = np.random.default_rng(17)
    people = [[1, 1, 1, 1], [7, 7, 7, 7], [1, 7, 2, 6], *[[int(v) for v in rng.integers(1, 8, 4)] for _ in range(7)],
              [None, 3, 5, 6], [2, None, 5, 6], [2, 3, None, None], [None, None, None, 4], [4, 3, 2, None]]
    typed = tmp_path / "typed.csv"
    with typed.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["respondent_id", "a", "b", "c", "d"])
        writer.writerows([f"r{k}", *["" if v is None else v for v in answers]] for k, answers in enumerate(people))
    scores = score_humans(typed, mini).set_index(["respondent_id", "subscale"])["score"]
    blanks = 0
    for k, answers in enumerate(people):
        fields = {f"mini_{i}": v for i, v in zip("abcd", answers)}
        for subscale in mini.rating_subscales:
            redcap = _redcap_calc(calcs[f"mini_{subscale.id.lower()}_score"], fields)
            psyq = scores[(f"r{k}", subscale.id)]
            if np.isnan(psyq):
                blanks += 1
                assert redcap is None, (answers, subscale.id, redcap)
            else:
                assert redcap == pytest.approx(psyq, rel=1e-12), (answers, subscale.id)
    assert blanks >= 4           # the rows below min_answered are among them


def test_a_redcap_score_field_prorates_a_sum_with_one_blank_item_as_psyq_does(tmp_path):
    """The IRI's Fantasy scale with one of its 7 items blank: REDCap's plain sum() would give the sum
    of the other six; psyq prorates (their mean times 7, min_answered 6), and so does the calc field."""
    assert _psyq("questionnaire", "iri", "--to", "redcap", "--out", tmp_path)[0] == 0
    iri = load_instrument("iri")
    fs = [i.id for i in iri.subscale_items("FS")]
    answers = {i.id: 2 for i in iri.rating_items}
    answers[fs[1]] = None
    typed = tmp_path / "typed.csv"
    typed.write_text("respondent_id," + ",".join(answers) + "\nr1," +
                     ",".join("" if v is None else str(v) for v in answers.values()) + "\n")
    psyq = score_humans(typed, iri).set_index("subscale").loc["FS", "score"]
    keyed = [4 - 2 if iri.item(i).reverse else 2 for i in fs if answers[i] is not None]
    assert psyq == pytest.approx(sum(keyed) / 6 * 7) and psyq != sum(keyed)
    redcap = _redcap_calc(_calcs(tmp_path / "iri_dictionary.csv")["iri_fs_score"],
                          {f"iri_{i}": v for i, v in answers.items()})
    assert redcap == pytest.approx(psyq, rel=1e-12)


def _shown_options(instrument, order: str) -> list[str]:
    """The option lines of the prompt a persona reads in `order`, top to bottom."""
    text = item_messages(instrument, instrument.rating_items[0], system_prompt=None, option_order=order,
                         answer="text")[-1]["content"]
    return text.split("Options:\n", 1)[1].split("\n\n", 1)[0].splitlines()


@pytest.mark.parametrize("presentation", ["per_item", "whole_instrument"])
def test_a_qualtrics_choice_keeps_its_id_and_value_whichever_order_shows_it(presentation, tmp_path):
    """Guards the .qsf's choice ids: numbered over the options as written, never over the order
    shown, so that with the options reversed choice k still shows option k's label and recodes to
    its value (reverse-keyed items to min + max - value); ChoiceOrder (AnswerOrder in a matrix)
    alone gives the order the personas read. The ids, labels and recodes are the same in the
    survey of a study showing the options as written, reversed and counterbalanced (the .qsf
    shows a counterbalanced study as written, with a note)."""
    shutil.copyfile(MINI_1TO7, tmp_path / "mini.yaml")
    mini = load_instrument(MINI_1TO7)
    value_of = {option_lines([o], uses_codes(mini)): o.value for o in mini.scale}   # the line each value is shown as
    reverse = {f"mini_{i.id}": i.reverse for i in mini.rating_items}                 # by export tag
    seen = {}
    for order in ("as_written", "reversed", "counterbalanced"):
        study = tmp_path / f"study_{order}.yaml"
        study.write_text(f"psyq: study/1\nid: s_{order}\ninstruments:\n  - ./mini.yaml\ncohort: adults_small\n"
                         f"backends:\n  - {{id: local, kind: local}}\n"
                         f"protocol: {{presentation: {presentation}, option_order: {order}}}\n")
        assert _psyq("questionnaire", study, "--to", "qualtrics", "--out", tmp_path / order)[0] == 0
        survey = json.loads((tmp_path / order / f"s_{order}.qsf").read_text())
        shown = _shown_options(mini, "reversed" if order == "reversed" else "as_written")
        questions = [e["Payload"] for e in survey["SurveyElements"]
                     if e["Element"] == "SQ" and e["Payload"]["DataExportTag"].startswith("mini_")
                     and e["Payload"]["QuestionType"] in ("MC", "Matrix")]
        assert len(questions) == (4 if presentation == "per_item" else 1)
        mapping = {}
        for q in questions:
            choices, ids = (q["Choices"], q["ChoiceOrder"]) if q["QuestionType"] == "MC" else (q["Answers"],
                                                                                             q["AnswerOrder"])
            label = {k: html.unescape(c["Display"]) for k, c in choices.items()}
            assert [label[k] for k in ids] == shown, (order, q["DataExportTag"])
            assert sorted(ids) == sorted(choices) == sorted(q["RecodeValues"])
            keyed = q["QuestionType"] == "MC" and reverse[q["DataExportTag"]]
            for k, text in label.items():
                value = value_of[text]
                assert int(q["RecodeValues"][k]) == (reverse_key(value, 1, 7) if keyed else value), (order, k, text)
            mapping[q["DataExportTag"]] = {k: (label[k], q["RecodeValues"][k]) for k in choices}
        seen[order] = mapping
    assert seen["reversed"] == seen["as_written"] == seen["counterbalanced"]

# --- answers back: ten people each ---------------------------------------------------------------------

def _ten_answers() -> list[list[int | None]]:
    rng = np.random.default_rng(7)
    people = [[int(v) for v in rng.integers(0, 5, 28)] for _ in range(10)]
    people[2] = [4] * 28                # straight-lining
    people[5][10] = None                # item 11 left unanswered
    return people


def _typed(path: Path, ids: list[str], people: list[list[int | None]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["respondent_id", *[str(i) for i in range(1, 29)]])
        for rid, answers in zip(ids, people):
            writer.writerow([rid, *["" if v is None else v for v in answers]])
    return path


def _scores(path: Path, codebook: Path | None = None, keyed: bool | None = None) -> pd.DataFrame:
    iri = load_instrument("iri")
    frame = score_humans(path, iri, codebook=codebook, keyed=keyed)[KEYS]
    return frame.assign(respondent_id=frame["respondent_id"].astype(str)).reset_index(drop=True)


def test_a_redcap_raw_export_reads_back_with_the_written_codebook(tmp_path):
    assert _psyq("questionnaire", "quickstart", "--to", "redcap", "--out", tmp_path / "q")[0] == 0
    people = _ten_answers()
    iri = load_instrument("iri")
    sums = {s.id: s for s in iri.subscales}
    header = ["record_id", *[f"iri_{i}" for i in range(1, 29)], *[f"iri_{s.lower()}_score" for s in sums],
              "iri_complete", "gender", "age", "education", "occupation", "country", "demographics_complete"]
    with (tmp_path / "redcap_raw.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for k, answers in enumerate(people, 1):
            writer.writerow([k, *["" if v is None else v for v in answers], *[""] * len(sums), 2,
                             1 + k % 3, 20 + k, 2, 2, 5, 2])     # radio codes 1, 2 …, as REDCap's raw export
    book = tmp_path / "q" / "iri.codebook.yaml"
    answers = read_answers_csv(tmp_path / "redcap_raw.csv", iri, codebook=book)
    assert answers.loc["3", "1"] == 4 and np.isnan(answers.loc["6", "11"])
    assert answers["gender"].tolist()[:3] == ["male", "non-binary", "female"]
    assert answers["education"].unique().tolist() == ["secondary school"]
    expected = _scores(_typed(tmp_path / "typed.csv", [str(k) for k in range(1, 11)], people))
    pd.testing.assert_frame_equal(_scores(tmp_path / "redcap_raw.csv", book), expected)


def _redcap_labels_export(path: Path, people: list[list[int | None]], extra: list[tuple[str, str]] = ()) -> Path:
    """REDCap's "CSV / Microsoft Excel (labels)" export of the quickstart project: field labels as the
    header, every survey form with its "Survey Timestamp" before and "Complete?" after its fields (so
    both names repeat with the demographics form), choice labels as answers; `extra` adds columns
    (header, cell)."""
    part = questionnaire_from("quickstart").parts[0]
    label = {c.value: c.label for c in part.choices}
    iri = load_instrument("iri")
    header = ["Record ID", "Survey Identifier", "Survey Timestamp", *[i.text for i in part.items],
              *[f"{s.name} ({s.score})" for s in iri.subscales], "Complete?",
              "Survey Timestamp", "Gender", "Age", "Education", "Occupation", "Country", "Complete?",
              *[h for h, _ in extra]]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for k, answers in enumerate(people, 1):
            writer.writerow([k, "", "2026-11-28 10:09:01", *["" if v is None else label[v] for v in answers],
                             *[""] * len(iri.subscales), "Complete", "2026-11-28 10:11:30",
                             ["female", "male", "non-binary"][k % 3], 20 + k, "secondary school", "manager",
                             "Japan", "Complete", *[cell for _, cell in extra]])
    return path


def test_a_redcap_labels_export_repeating_redcaps_own_columns_reads_back(tmp_path):
    """REDCap's labels export names every form's timestamp "Survey Timestamp" and its status
    "Complete?", so a project with demographics repeats both: columns the codebook does not read,
    left out with a notice; the answers read as the same answers typed."""
    assert _psyq("questionnaire", "quickstart", "--to", "redcap", "--out", tmp_path / "q")[0] == 0
    people = _ten_answers()
    export = _redcap_labels_export(tmp_path / "labels.csv", people)
    book = tmp_path / "q" / "iri_labels.codebook.yaml"
    with pytest.warns(Warning, match=r"'Survey Timestamp', 'Complete\?' appear more than once and are not read"):
        answers = read_answers_csv(export, load_instrument("iri"), codebook=book)
    assert "Complete?" not in answers.columns and answers["gender"].tolist()[:3] == ["male", "non-binary", "female"]
    expected = _scores(_typed(tmp_path / "typed.csv", [str(k) for k in range(1, 11)], people))
    pd.testing.assert_frame_equal(_scores(export, book), expected)
    code, _, err = _psyq("score", "iri", export, "--codebook", book)
    assert code == 0, err


def test_an_item_column_repeated_in_a_labels_export_is_an_error_at_its_place(tmp_path):
    """A column the codebook reads that the header names twice cannot be read (which one holds the
    answers?): an error at the later one's line 1 and column."""
    assert _psyq("questionnaire", "quickstart", "--to", "redcap", "--out", tmp_path / "q")[0] == 0
    first = questionnaire_from("quickstart").parts[0].items[0].text
    export = _redcap_labels_export(tmp_path / "labels.csv", _ten_answers(), extra=[(first, "B")])
    code, _, err = _psyq("score", "iri", export, "--codebook", tmp_path / "q" / "iri_labels.codebook.yaml")
    assert code == 2 and "Traceback" not in err
    assert f"{export}:1:44: column '{first}': the header names '{first}' 2 times (columns 4, 44)" in err


def _qualtrics_export(path: Path, columns: list[str], texts: list[str], rows: list[list[str]]) -> Path:
    """A Qualtrics CSV export: header, question-text row, import-id row, then the responses."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*QUALTRICS_META, *columns])
        writer.writerow([*[m.replace("Id", " ID") for m in QUALTRICS_META], *texts])
        writer.writerow([json.dumps({"ImportId": m}) for m in QUALTRICS_META]
                        + [json.dumps({"ImportId": f"QID{k}"}) for k in range(2, 2 + len(columns))])
        for k, cells in enumerate(rows):
            meta = ["2026-11-28 10:00:00", "2026-11-28 10:09:00", "IP Address", "192.0.2.1", "100", "540", "True",
                    "2026-11-28 10:09:01", f"R_{k:03d}x", "", "", "", "", "", "", "anonymous", "EN"]
            writer.writerow([*meta, *cells])
    return path


def test_a_qualtrics_choice_text_export_reads_back_with_the_written_codebook(tmp_path):
    assert _psyq("questionnaire", "quickstart", "--to", "qualtrics", "--out", tmp_path / "q")[0] == 0
    part = questionnaire_from("quickstart").parts[0]
    label = {c.value: c.label for c in part.choices}
    people = _ten_answers()
    columns = [*[i.column for i in part.items], "gender", "age", "education", "occupation", "country"]
    texts = [*[i.text for i in part.items], "Gender", "Age (a whole number from 18 to 80)", "Education", "Occupation",
             "Country"]
    rows = [[*["" if v is None else label[v] for v in answers], ["female", "male", "non-binary"][k % 3], str(30 + k),
             "bachelor's degree", "manager", "Japan"] for k, answers in enumerate(people)]
    export = _qualtrics_export(tmp_path / "qualtrics_text.csv", columns, texts, rows)
    book = tmp_path / "q" / "iri_labels.codebook.yaml"
    answers = read_answers_csv(export, load_instrument("iri"), codebook=book)
    assert len(answers) == 10 and answers.index[0] == "R_000x"
    assert answers.loc["R_002x", [str(i) for i in range(1, 29)]].tolist() == [4.0] * 28
    assert answers["gender"].tolist()[:3] == ["female", "male", "non-binary"]
    expected = _scores(_typed(tmp_path / "typed.csv", [f"R_{k:03d}x" for k in range(10)], people))
    pd.testing.assert_frame_equal(_scores(export, book), expected)


def test_a_qualtrics_numeric_export_stores_reverse_items_reversed_and_reads_keyed(tmp_path):
    assert _psyq("questionnaire", "iri", "--to", "qualtrics", "--out", tmp_path / "q")[0] == 0
    iri = load_instrument("iri")
    people = _ten_answers()
    # "Use numeric values": each answer exported as its choice's recode value, read from the .qsf written
    survey = json.loads((tmp_path / "q" / "iri.qsf").read_text())
    recodes = {}
    for element in survey["SurveyElements"]:
        payload = element["Payload"] if element["Element"] == "SQ" else None
        if payload and payload["QuestionType"] == "MC":
            by_label = {choice["Display"]: payload["RecodeValues"][key] for key, choice in payload["Choices"].items()}
            recodes[payload["DataExportTag"]] = by_label
    label = {c.value: c.label for c in questionnaire_from("iri").parts[0].choices}
    rows = [["" if v is None else recodes[f"iri_{k}"][label[v]] for k, v in enumerate(answers, 1)]
            for answers in people]
    assert rows[0][2] == str(4 - people[0][2])        # item 3 is reverse-keyed: stored reversed
    export = _qualtrics_export(tmp_path / "numeric.csv", [f"iri_{i}" for i in range(1, 29)],
                               [i.text for i in iri.rating_items], rows)
    book = tmp_path / "q" / "iri.codebook.yaml"
    assert yaml.safe_load(book.read_text())["keyed"] is True
    expected = _scores(_typed(tmp_path / "typed.csv", [f"R_{k:03d}x" for k in range(10)], people))
    pd.testing.assert_frame_equal(_scores(export, book), expected)


HAND_WRITTEN = """\
psyq: codebook/1
instrument: iri
keyed: false
columns:
  respondent_id: ResponseId
  items: "Q1_{id}"
item_values: {"1": 0, "2": 1, "3": 2, "4": 3, "5": 4}
skip_rows: 2
"""


def test_a_qualtrics_numeric_export_coded_1_to_5_of_a_survey_psyq_did_not_write(tmp_path):
    people = _ten_answers()
    rows = [["" if v is None else str(v + 1) for v in answers] for answers in people]   # coded 1-5
    export = _qualtrics_export(tmp_path / "their_survey.csv", [f"Q1_{i}" for i in range(1, 29)],
                               [f"Statement {i}" for i in range(1, 29)], rows)
    (tmp_path / "their_survey.codebook.yaml").write_text(HAND_WRITTEN)
    expected = _scores(_typed(tmp_path / "typed.csv", [f"R_{k:03d}x" for k in range(10)], people))
    with pytest.warns(Warning, match="line\\(s\\) 2, 3 left out"):
        scored = _scores(export, tmp_path / "their_survey.codebook.yaml")
    pd.testing.assert_frame_equal(scored, expected)
    code, out, err = _psyq("score", "iri", export, "--codebook", tmp_path / "their_survey.codebook.yaml")
    assert code == 0, err


# --- bad input ------------------------------------------------------------------------------------------

def test_a_code_the_codebook_does_not_map_is_an_error_at_its_line(tmp_path):
    people = _ten_answers()
    rows = [["" if v is None else str(v + 1) for v in answers] for answers in people]
    rows[4][6] = "6"                                          # off the survey's 1-5
    export = _qualtrics_export(tmp_path / "their_survey.csv", [f"Q1_{i}" for i in range(1, 29)],
                               [f"Statement {i}" for i in range(1, 29)], rows)
    (tmp_path / "book.yaml").write_text(HAND_WRITTEN)
    code, _, err = _psyq("score", "iri", export, "--codebook", tmp_path / "book.yaml")
    assert code == 2 and "Traceback" not in err
    assert f"{export}:8:24: column 'Q1_7': '6' is not one of the codes the codebook's item_values map" in err


def test_a_value_off_the_scale_in_a_raw_export_is_an_error_at_its_line(tmp_path):
    assert _psyq("questionnaire", "iri", "--to", "redcap", "--out", tmp_path / "q")[0] == 0
    with (tmp_path / "raw.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["record_id", *[f"iri_{i}" for i in range(1, 29)], "iri_complete"])
        writer.writerow(["1", *["2"] * 28, "2"])
        writer.writerow(["2", "7", *["2"] * 27, "2"])
    code, _, err = _psyq("score", "iri", tmp_path / "raw.csv", "--codebook", tmp_path / "q" / "iri.codebook.yaml")
    assert code == 2 and f"{tmp_path / 'raw.csv'}:3: column 'iri_1' (item 1): 7 is not on the scale" in err


def test_an_export_missing_an_item_column_is_an_error_at_the_codebooks_line(tmp_path):
    assert _psyq("questionnaire", "iri", "--to", "qualtrics", "--out", tmp_path / "q")[0] == 0
    columns = [f"iri_{i}" for i in range(1, 29) if i != 5]
    export = _qualtrics_export(tmp_path / "export.csv", columns, columns, [["2"] * 27])
    code, _, err = _psyq("score", "iri", export, "--codebook", tmp_path / "q" / "iri_labels.codebook.yaml")
    assert code == 2 and "Traceback" not in err
    assert "iri_labels.codebook.yaml:" in err and "columns.items: the pattern 'iri_{id}' names column(s) not in" in err
    assert "iri_5" in err


def test_a_code_mapped_off_the_scale_is_an_error_at_the_codebooks_line(tmp_path):
    export = _qualtrics_export(tmp_path / "x.csv", [f"Q1_{i}" for i in range(1, 29)], ["t"] * 28, [["1"] * 28])
    (tmp_path / "book.yaml").write_text(HAND_WRITTEN.replace('"5": 4', '"5": 5'))
    with pytest.raises(InputError, match=r"book.yaml:7:\d+: item_values.5: '5' is mapped to 5, which is not on"):
        read_answers_csv(export, load_instrument("iri"), codebook=tmp_path / "book.yaml")
