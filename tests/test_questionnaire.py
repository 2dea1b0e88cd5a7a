"""psyq questionnaire (issue 43): the same questionnaire for people, and their answers read back.

The shared part (what the personas were shown, engine/questionnaire/form.py), the jsPsych folder
answered in headless Chromium from disk by ten scripted people (Debian's chromium through
Playwright, as tests/test_view.py drives it; those tests skip when it is missing), the joined
answer files and the codebook it writes, and the command's errors.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from cli_helper import psyq_in_process
from psyq.cli.questionnaire import FORMATS
from psyq.engine.design.instrument import load_instrument
from psyq.engine.design.study import load_study
from psyq.engine.files.errors import InputError
from psyq.engine.files.shipped import locate
from psyq.engine.questionnaire import format_names
from psyq.engine.questionnaire.form import questionnaire_from
from psyq.engine.questionnaire.gather import gather_answers
from psyq.engine.trials.prompts import item_messages

ROOT = Path(__file__).resolve().parents[1]


def _psyq(argv: list[str]) -> tuple[int, str, str]:
    done = psyq_in_process(*argv)
    return done.returncode, done.stdout, done.stderr


# --- what the personas were shown -----------------------------------------------------------------

def _options_in_prompt(instrument, order: str) -> list[str]:
    """The option lines of the prompt a persona reads for item 1 in `order`."""
    text = item_messages(instrument, instrument.rating_items[0], system_prompt=None, option_order=order,
                         answer="text")[-1]["content"]
    block = text.split("Options:\n", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()


def test_people_get_the_words_options_and_orders_the_personas_got():
    study = load_study("quickstart")
    iri = study.instruments[0]
    asked = questionnaire_from("quickstart")
    [part] = asked.parts
    assert part.instructions == iri.instructions.strip()
    assert [(i.id, i.text) for i in part.items] == [(i.id, i.text) for i in iri.rating_items]
    assert [i.reverse for i in part.items] == [i.reverse for i in iri.rating_items]
    # counterbalanced, as the study: both orders, each exactly the persona's option lines
    assert asked.option_orders == ("as_written", "reversed") and asked.counterbalanced
    for order in asked.option_orders:
        assert [c.label for c in part.choices_in(order)] == _options_in_prompt(iri, order)
    assert [c.value for c in part.choices_in("reversed")] == [4, 3, 2, 1, 0]
    assert not part.matrix and part.item_order == "fixed"


def test_the_cohorts_attributes_are_asked_with_the_cohorts_categories():
    asked = questionnaire_from("quickstart")
    by_name = {d.name: d for d in asked.demographics}
    assert list(by_name) == ["gender", "age", "education", "occupation", "country"]
    # the sample's categories, also one no persona of the twelve drew (non-binary, weight 1)
    assert by_name["gender"].categories == ("female", "male", "non-binary")
    assert by_name["age"].whole_numbers == (18, 80) and by_name["age"].categories is None


def test_a_hand_written_cohort_gives_its_personas_values_with_a_note():
    asked = questionnaire_from("iri_hand_written")
    assert asked.demographics and all(d.source == "the personas' values" for d in asked.demographics)
    assert any("personas" in note for note in asked.notes)


def test_an_instrument_alone_is_asked_item_by_item_as_written():
    asked = questionnaire_from("iri")
    assert asked.option_orders == ("as_written",) and asked.demographics == ()
    assert asked.parts[0].items[0].column == "iri_1"


def test_the_formats_the_command_lists_are_the_registered_ones():
    assert FORMATS == format_names()


# --- licensed texts: refused as psyq run refuses them -----------------------------------------------

def test_an_instrument_without_its_licensed_texts_is_refused():
    with pytest.raises(InputError) as caught:
        questionnaire_from("bes")
    message = str(caught.value)
    assert "cannot ask people" in message and "bes_texts.csv" in message and "item_id,text" in message


def test_the_command_refuses_it_with_exit_2_and_no_traceback(tmp_path):
    code, out, err = _psyq(["questionnaire", "bes", "--to", "jspsych", "--out", str(tmp_path / "q")])
    assert code == 2 and "Traceback" not in err
    assert re.search(r"bes\.yaml: cannot ask people: instrument 'bes' has no text for 20 item\(s\)", err), err
    assert not (tmp_path / "q").exists()


def test_a_study_naming_it_is_refused_at_the_studys_line(tmp_path):
    (tmp_path / "study.yaml").write_text(locate("quickstart", "study").read_text().replace("  - iri\n", "  - bes\n"))
    code, _, err = _psyq(["questionnaire", str(tmp_path / "study.yaml"), "--to", "jspsych", "--out", str(tmp_path / "q")])
    assert code == 2 and "Traceback" not in err
    assert re.search(r"study\.yaml:\d+:\d+: instruments\[0\]: cannot administer: instrument 'bes' has no text", err), err


def test_texts_the_user_supplies_make_the_instrument_askable(tmp_path):
    bes = yaml.safe_load(locate("bes", "instrument").read_text())
    bes["item_texts"]["file"] = "bes_texts.csv"      # beside the copy, not in the home folder
    (tmp_path / "bes.yaml").write_text(yaml.safe_dump(bes, sort_keys=False))
    ids = [i["id"] for i in bes["items"]]
    (tmp_path / "bes_texts.csv").write_text("item_id,text\n" + "".join(f"{i},Statement {i}.\n" for i in ids))
    asked = questionnaire_from(tmp_path / "bes.yaml")
    assert [i.text for i in asked.parts[0].items][:2] == [f"Statement {ids[0]}.", f"Statement {ids[1]}."]


def test_a_file_that_is_neither_a_study_nor_an_instrument_is_refused(tmp_path):
    with pytest.raises(InputError, match="not a study .* or an instrument"):
        questionnaire_from(locate("adults_small", "cohort"))


# --- the jsPsych folder -------------------------------------------------------------------------------

def test_the_jspsych_folder_holds_jspsych_its_licence_and_a_codebook(tmp_path):
    code, out, err = _psyq(["questionnaire", "quickstart", "--to", "jspsych", "--out", str(tmp_path / "q")])
    assert code == 0, err
    folder = tmp_path / "q"
    assert (folder / "jspsych" / "LICENSE.txt").read_text().startswith("The MIT License")
    assert "8.3.0" in (folder / "jspsych" / "SOURCES.md").read_text()
    page = (folder / "index.html").read_text()
    # every script is a file of the folder, no CDN (the browser tests check that nothing else is requested)
    assert re.findall(r'src="([^"]+)"', page) == ["jspsych/jspsych.min.js", "jspsych/plugin-survey-likert.min.js",
                                                 "jspsych/plugin-survey-multi-choice.min.js",
                                                 "jspsych/plugin-survey-text.min.js", "jspsych/questionnaire.js"]
    assert "sourceMappingURL" not in (folder / "jspsych" / "jspsych.min.js").read_text()   # not even devtools fetch
    book = yaml.safe_load((folder / "iri.codebook.yaml").read_text())
    assert book["columns"]["items"] == "iri_{id}" and book["keyed"] is False
    assert book["columns"]["attributes"]["gender"] == "gender"


def _answer_in_browser(browser, folder: Path, person: dict, save_to: Path) -> list[str]:
    """Open the page from disk as `person` and answer it: each item screen's value clicked at the
    position it has in the order the person sees (`None`: left unanswered); returns the URLs the
    page requested."""
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{(folder / 'index.html').as_uri()}?respondent_id={person['id']}&option_order={person['order']}")
    form, column = page.locator("#jspsych-survey-likert-form"), None
    for _ in range(28):
        # the next screen's form has the same id: wait until it asks another item, and read which
        column = page.wait_for_function("c => { const n = document.querySelector('#jspsych-survey-likert-form ul')"
                                        "?.dataset.name; return n !== c && n; }", arg=column).json_value()
        value = person["answers"][int(column.removeprefix("iri_")) - 1]
        if value is not None:
            position = value if person["order"] == "as_written" else 4 - value
            form.locator(f"input[type=radio][value='{position}']").check()
        form.locator("#jspsych-survey-likert-next").click()
    choice = page.locator("#jspsych-survey-multi-choice_form")
    choice.wait_for()
    for question, category in enumerate(person["categories"]):
        choice.locator(f"#jspsych-survey-multi-choice-{question} input[value='{category}']").check()
    choice.locator("#jspsych-survey-multi-choice-next").click()
    page.locator("#jspsych-survey-text-form").wait_for()
    page.locator("#input-0").fill(str(person["age"]))
    with page.expect_download() as download:
        page.locator("#jspsych-survey-text-next").click()
    download.value.save_as(save_to)
    assert errors == []
    context.close()
    return requested


def _ten_people() -> list[dict]:
    rng = np.random.default_rng(43)
    people = []
    for k in range(10):
        answers: list[int | None] = [int(v) for v in rng.integers(0, 5, 28)]
        if k == 3:
            answers = [2] * 28                      # straight-lining
        if k == 6:
            answers[4] = None                       # item 5 left unanswered
        people.append({"id": f"p{k + 1:02d}", "order": "as_written" if k % 2 == 0 else "reversed",
                       "answers": answers, "age": 20 + 5 * k,
                       "categories": [["female", "male", "non-binary"][k % 3], "secondary school", "professional",
                                      "Germany"]})
    return people


def test_ten_people_answer_the_page_from_disk_and_their_scores_are_psyqs(browser, tmp_path):
    from psyq.analysis.scoring.human_answers import read_answers_csv
    from psyq.analysis.scoring.scores import score_humans

    folder = tmp_path / "iri_people"
    assert _psyq(["questionnaire", "quickstart", "--to", "jspsych", "--out", str(folder)])[0] == 0
    people = _ten_people()
    files = []
    for person in people:
        files.append(tmp_path / f"{person['id']}.csv")
        requested = _answer_in_browser(browser, folder, person, files[-1])
        assert requested and all(url.startswith("file://") for url in requested), requested   # nothing fetched
    code, out, err = _psyq(["questionnaire", "--gather", *map(str, files), "--out", str(tmp_path / "people.csv")])
    assert code == 0, err
    assert "10 people's answers" in out
    iri = load_instrument("iri")
    book = folder / "iri.codebook.yaml"
    saved = read_answers_csv(tmp_path / "people.csv", iri, codebook=book)
    assert saved.loc["p07", "5"] != saved.loc["p07", "5"]                         # left unanswered: missing
    assert (saved.loc["p04", [str(i) for i in range(1, 29)]] == 2).all()          # straight-lining
    assert saved["option_order"].tolist() == [p["order"] for p in people]
    assert saved["gender"].tolist()[:3] == ["female", "male", "non-binary"] and saved.loc["p10", "age"] == 65
    # the same answers typed into a CSV by hand, scored by psyq
    typed = tmp_path / "typed.csv"
    with typed.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["respondent_id", *[str(i) for i in range(1, 29)]])
        for person in people:
            writer.writerow([person["id"], *["" if v is None else v for v in person["answers"]]])
    keys = ["respondent_id", "subscale", "score", "n_answered", "prorated"]
    from_page = score_humans(tmp_path / "people.csv", iri, codebook=book)[keys].reset_index(drop=True)
    by_hand = score_humans(typed, iri)[keys].reset_index(drop=True)
    pd.testing.assert_frame_equal(from_page, by_hand)
    assert from_page["prorated"].sum() == 1          # p07's subscale of item 5 (FS), prorated over 6 items


def test_an_item_text_with_markup_shows_as_literal_text(browser, tmp_path):
    iri = yaml.safe_load(locate("iri", "instrument").read_text())
    hostile = "I <b>rarely</b> feel <script>document.title='pwned'</script> &amp; sad."
    iri["items"][0]["text"] = hostile
    iri["instructions"] = "Read <i>each</i> item.\nThen answer."
    (tmp_path / "iri.yaml").write_text(yaml.safe_dump(iri, sort_keys=False))
    folder = tmp_path / "q"
    assert _psyq(["questionnaire", str(tmp_path / "iri.yaml"), "--to", "jspsych", "--out", str(folder)])[0] == 0
    page = browser.new_page()
    page.goto((folder / "index.html").as_uri())
    form = page.locator("#jspsych-survey-likert-form")
    form.wait_for()
    assert form.locator("label.jspsych-survey-likert-statement").inner_text() == hostile
    assert page.locator("#jspsych-survey-likert-preamble").inner_text() == "Read <i>each</i> item.\nThen answer."
    assert page.locator("#jspsych-content b, #jspsych-content i, #jspsych-content script").count() == 0
    assert page.title() == "iri"
    page.close()


QUOTED_ITEM = """He said "I'm fine" & <b>left</b> <img src=x onerror="document.title='pwned'">."""
QUOTED_CATEGORY = """say "no" <i>&amp;</i> it's" onclick="document.title='pwned'"""


def test_quotes_in_texts_and_in_the_attributes_that_carry_them_stay_as_written(browser, tmp_path):
    """Guards questionnaire.js's escaping of `"` (and `'`, `<`, `&`): jsPsych's survey-multi-choice
    puts each category into the radio's value="…" attribute, so an unescaped `"` ends the attribute
    early (the value saved is cut short and the rest of the text becomes attributes of its own);
    an item text and a category show exactly as written and the saved answer is the category."""
    mini = yaml.safe_load((ROOT / "tests" / "data" / "mini_1to7.yaml").read_text())
    mini["items"][0]["text"] = QUOTED_ITEM
    (tmp_path / "mini.yaml").write_text(yaml.safe_dump(mini, sort_keys=False))
    (tmp_path / "people.yaml").write_text(yaml.safe_dump({
        "psyq": "cohort/1", "id": "people", "include_baseline": False,
        "personas": [{"id": "p1", "attributes": {"group": QUOTED_CATEGORY}},
                     {"id": "p2", "attributes": {"group": "plain"}}]}, sort_keys=False))
    (tmp_path / "study.yaml").write_text(
        "psyq: study/1\nid: quotes\ninstruments:\n  - ./mini.yaml\ncohort: ./people.yaml\n"
        "backends:\n  - {id: local, kind: local}\nprotocol: {presentation: per_item, option_order: as_written}\n")
    folder = tmp_path / "q"
    code, _, err = _psyq(["questionnaire", str(tmp_path / "study.yaml"), "--to", "jspsych", "--out", str(folder)])
    assert code == 0, err
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{(folder / 'index.html').as_uri()}?respondent_id=q1")
    form, column = page.locator("#jspsych-survey-likert-form"), None
    for k in range(4):                                   # items a, b, c, d, one per screen
        column = page.wait_for_function("c => { const n = document.querySelector('#jspsych-survey-likert-form ul')"
                                        "?.dataset.name; return n !== c && n; }", arg=column).json_value()
        if k == 0:
            assert column == "mini_a"
            assert form.locator("label.jspsych-survey-likert-statement").inner_text() == QUOTED_ITEM
            form.locator("input[type=radio][value='0']").check()
        form.locator("#jspsych-survey-likert-next").click()
    choice = page.locator("#jspsych-survey-multi-choice_form")
    choice.wait_for()
    radio = choice.locator("#jspsych-survey-multi-choice-response-0-0")
    # the attribute holds the whole category and nothing spilled out of it into attributes of its own
    assert radio.get_attribute("value") == QUOTED_CATEGORY
    assert sorted(radio.evaluate("e => e.getAttributeNames()")) == ["data-option-index", "id", "name", "type",
                                                                     "value"]
    assert choice.locator("#jspsych-survey-multi-choice-option-0-0 label").inner_text().strip() == QUOTED_CATEGORY
    injected = "#jspsych-content b, #jspsych-content i, #jspsych-content img, #jspsych-content [onclick]"
    assert page.locator(injected).count() == 0
    radio.check()
    with page.expect_download() as download:
        choice.locator("#jspsych-survey-multi-choice-next").click()
    download.value.save_as(tmp_path / "q1.csv")
    assert errors == [] and page.title() == "quotes"
    context.close()
    with (tmp_path / "q1.csv").open(newline="") as handle:
        [saved] = list(csv.DictReader(handle))
    assert saved["group"] == QUOTED_CATEGORY and saved["mini_a"] == "1"


# --- joining people's files ---------------------------------------------------------------------------

def test_gathering_files_of_another_questionnaire_is_an_error_at_its_line_1(tmp_path):
    (tmp_path / "a.csv").write_text('"respondent_id","iri_1"\r\n"p1","3"\r\n')
    (tmp_path / "b.csv").write_text('"respondent_id","bes_1"\r\n"p2","3"\r\n')
    code, _, err = _psyq(["questionnaire", "--gather", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"),
                                    "--out", str(tmp_path / "people.csv")])
    assert code == 2 and "Traceback" not in err
    assert f"{tmp_path / 'b.csv'}:1: not the same questionnaire as {tmp_path / 'a.csv'}: its columns differ " \
           "(lacks iri_1; has bes_1 besides)" in err
    assert not (tmp_path / "people.csv").exists()


def test_a_joined_export_repeating_its_header_reads_as_one_table(tmp_path):
    header = '"respondent_id","iri_1"\r\n'
    (tmp_path / "jatos.csv").write_text(header + '"p1","3"\r\n' + header + '"p2","1"\r\n')
    assert gather_answers([tmp_path / "jatos.csv"], tmp_path / "people.csv") == 2
    assert (tmp_path / "people.csv").read_text() == "respondent_id,iri_1\np1,3\np2,1\n"


def test_the_command_needs_a_source_and_a_format(tmp_path):
    code, _, err = _psyq(["questionnaire", "quickstart", "--out", str(tmp_path / "q")])
    assert code == 2 and "--to FORMAT" in err


def test_a_person_who_saw_another_order_of_the_options_is_an_error_at_their_line(tmp_path):
    """The page records the order each person saw; its codebook lists the orders the study shows,
    so answers given to another questionnaire (here a study with the options shuffled) are refused."""
    folder = tmp_path / "q"
    assert _psyq(["questionnaire", "quickstart", "--to", "jspsych", "--out", str(folder)])[0] == 0
    book = yaml.safe_load((folder / "iri.codebook.yaml").read_text())
    assert book["option_orders"] == {"column": "option_order", "orders": ["as_written", "reversed"]}
    header = ["respondent_id", "option_order", *[f"iri_{i}" for i in range(1, 29)],
              "gender", "age", "education", "occupation", "country"]
    rows = [["p1", "as_written", *["1"] * 28, "female", "30", "secondary school", "professional", "Germany"],
            ["p2", "shuffled", *["2"] * 28, "male", "41", "secondary school", "professional", "Germany"],
            ["p3", "reversed", *["3"] * 28, "male", "52", "secondary school", "professional", "Germany"]]
    people = tmp_path / "people.csv"
    with people.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    code, _, err = _psyq(["score", "iri", str(people), "--codebook", str(folder / "iri.codebook.yaml")])
    assert code == 2 and "Traceback" not in err
    assert (f"{people}:3:2: column 'option_order': 'shuffled' is not an order of the options this questionnaire "
            "showed (as_written, reversed") in err
    rows[1][1] = "reversed"
    with people.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    code, out, err = _psyq(["score", "iri", str(people), "--codebook", str(folder / "iri.codebook.yaml")])
    assert code == 0, err
