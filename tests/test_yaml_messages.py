"""The ten commonest YAML mistakes, said in plain words at the line and column to fix.

Each test writes a small cohort or instrument with one mistake, runs ``psyq validate`` (its
``main``, in this process: exit 2, no traceback) and checks the printed ``file:line:column: message``.
The expected line and column were found by reading the small file: they are where the mistake
is (the line without its colon, the misplaced key, the quote that opens), which is not always
where the parser gave up (a missing colon is noticed on the next line).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from psyq.cli import main

ROOT = Path(__file__).resolve().parents[1]
MINI = (ROOT / "tests" / "data" / "mini_1to7.yaml").read_text()


def validate(tmp_path: Path, text: str, name: str = "cohort.yaml") -> list[str]:
    """Run `psyq validate` (in process) on `text`; return its error lines without 'error: FILE'."""
    path = tmp_path / name
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["validate", str(path)])
    assert code == 2, err.getvalue()
    assert "Traceback" not in err.getvalue() and out.getvalue() == ""
    prefix = f"error: {path}"
    lines = err.getvalue().splitlines()
    assert lines and all(line.startswith(prefix) for line in lines), err.getvalue()
    return [line[len(prefix):] for line in lines]


COHORT = "psyq: cohort/1\nid: c\npersonas:\n  - id: p1\n    attributes:\n      age: 30\n"


# 1. indentation: a key indented less, and a key indented more, than its siblings
def test_key_indented_less_than_its_siblings(tmp_path):
    # line 7 "     gender: f" has 5 spaces; 'age' above it has 6, 'attributes' 4
    errors = validate(tmp_path, COHORT + "     gender: f\n")
    assert errors[0].startswith(":7:6: YAML syntax error: this line is indented by 5 spaces, which lines up "
                                "with nothing above it; the fields above are indented by 6 (line 6: 'age: 30'), "
                                "4 (line 5: 'attributes:')")
    assert "indent it like the fields it belongs with" in errors[0]


def test_key_indented_more_than_its_siblings(tmp_path):
    # line 7 "        gender: f": 8 spaces, below 'age: 30' (6 spaces, already valued); 'gender' at column 9
    errors = validate(tmp_path, COHORT + "        gender: f\n")
    assert errors == [":7:9: YAML syntax error: this line is indented by 8 spaces, more than 'age: 30' on "
                      "line 6 (6 spaces), which already has its value; fields of the same group need the same "
                      "indentation (6 spaces here); only the fields inside a 'name:' with nothing after its "
                      "colon are indented more"]


# 2. a missing colon: pointed at the line that lacks it, not at the next line where YAML notices
def test_missing_colon_after_a_key(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription a small cohort\npersonas:\n  - id: p1\n")
    assert errors == [":3:1: YAML syntax error: 'description a small cohort' has no colon: a field is written "
                      "'name: value' (a colon, then a space); if this line continues the text above, indent it "
                      "more than the field it belongs to"]


def test_missing_colon_inside_a_mapping(tmp_path):
    # "age 30" (line 6, column 7) runs into "gender: f" below it: YAML complains on line 7
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\npersonas:\n  - id: p1\n    attributes:\n"
                                "      age 30\n      gender: f\n")
    assert errors == [":6:7: YAML syntax error: 'age 30' has no colon: a field is written 'name: value' "
                      "(a colon, then a space)"]


# 3. a tab used for indentation (line 4 starts with a tab)
def test_tab_used_for_indentation(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\npersonas:\n\t- id: p1\n")
    assert errors == [":4:1: YAML syntax error: this line is indented with a tab; YAML needs spaces: replace "
                      "the tab with spaces (most editors can be set to insert spaces for the Tab key)"]


# 4. an unquoted colon inside a text: column 20 is the second ':' of "description: I feel: happy"
def test_unquoted_colon_in_a_text(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription: I feel: happy\npersonas:\n  - id: p1\n")
    assert errors == [":3:20: YAML syntax error: the text after 'description:' holds ': ' (a colon and a "
                      "space), which YAML reads as the start of a new field; put the text in quotes: "
                      "description: \"I feel: happy\""]


# 5. a list where a mapping belongs, and a mapping where a list belongs
def test_mapping_written_where_a_list_belongs(tmp_path):
    # personas' fields start at line 4 column 3, without the dash a list entry needs
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\npersonas:\n  id: p1\n  attributes: {age: 3}\n")
    assert errors == [":4:3: personas: must be a list (entries each starting with '- '), but fields "
                      "(key: value) are written here: put '- ' before the first field of each entry"]


def test_list_written_where_a_mapping_belongs(tmp_path):
    # attributes (line 5) holds a list entry at line 6 column 7
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\npersonas:\n  - id: p1\n    attributes:\n"
                                "      - age: 30\n")
    assert errors == [":6:7: personas[0].attributes: must be a mapping of fields (key: value), but a list is "
                      "written here ([{'age': 30}]): write 'name: value' lines without '- ' in front"]


# 6. an unquoted text starting with a character YAML reserves (the value starts at column 14)
@pytest.mark.parametrize("char, meaning", [("@", "reserved"), ("`", "reserved"), ("%", "a directive")])
def test_text_starting_with_a_reserved_character(tmp_path, char, meaning):
    errors = validate(tmp_path, f"psyq: cohort/1\nid: c\ndescription: {char}home\npersonas:\n  - id: p1\n")
    assert errors == [f":3:14: YAML syntax error: a text cannot start with '{char}' unless it is in quotes "
                      f"('{char}' is {meaning} in YAML); write description: \"{char}home\""]


def test_text_starting_with_a_star(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription: *bold text\npersonas:\n  - id: p1\n")
    assert errors == [":3:14: YAML syntax error: '*bold' is read as a reference to an anchor &bold that the "
                      "file does not define (a value starting with '*' is an alias); if this is a text, put it "
                      "in quotes: description: \"*bold text\""]


def test_text_starting_with_an_ampersand_is_not_silently_cut(tmp_path):
    # YAML reads "&bold text" as the anchor 'bold' on the text "text": the file would load with
    # the description cut short, so it is refused.
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription: &bold text\npersonas:\n  - id: p1\n")
    assert errors == [":3:14: '&bold' at the start of this value is read by YAML as an anchor name and left "
                      "out of the text (nothing in the file refers to it as *bold); if the text starts with "
                      "'&', put it in quotes: description: \"&bold text\""]


@pytest.mark.parametrize("opened, closing, kind", [("[", "]", "list"), ("{", "}", "mapping")])
def test_text_starting_with_an_unbalanced_bracket(tmp_path, opened, closing, kind):
    errors = validate(tmp_path, f"psyq: cohort/1\nid: c\ndescription: {opened}a note\npersonas:\n  - id: p1\n")
    assert errors == [f":3:14: YAML syntax error: a value starting with '{opened}' is read as a {kind} in "
                      f"brackets, and its '{closing}' is missing; add '{closing}' where the {kind} ends, or, if "
                      f"this is a text, put it in quotes: description: \"{opened}a note\""]


def test_text_starting_with_a_closed_bracket_and_more(tmp_path):
    # "[a] note": a list [a] followed by text; YAML stops at 'note' (column 18)
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription: [a] note\npersonas:\n  - id: p1\n")
    assert errors == [":3:18: YAML syntax error: a value starting with '[' is read as a list in brackets and "
                      "more text follows it; if this is a text, put it in quotes: description: \"[a] note\""]


# 7. a duplicated key: the second one is named, with the line of the first
def test_duplicated_key(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\nid: d\npersonas:\n  - id: p1\n")
    assert errors == [":3:1: id: duplicate key 'id' (first written on line 2); YAML would silently keep only "
                      "the last one: remove one of them, or rename it"]


# 8. an empty file, and a file holding only comments
def test_empty_file(tmp_path):
    assert validate(tmp_path, "") == [": the file is empty; a psyq file starts with its format, e.g. "
                                      "'psyq: instrument/1' (or cohort/1, study/1), followed by its fields"]


def test_file_of_comments_only(tmp_path):
    assert validate(tmp_path, "# my cohort\n\n# to do\n") == [
        ": the file holds only comments (lines starting with '#') and no fields; a psyq file starts with its "
        "format, e.g. 'psyq: instrument/1' (or cohort/1, study/1), followed by its fields"]


# 9. wrong quotes: not closed, closed too early, mixed
def test_unclosed_quote(tmp_path):
    # the quote opens at line 3 column 14; YAML reads on to the end of the file (line 6)
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription: \"a note\npersonas:\n  - id: p1\n")
    assert errors == [":3:14: YAML syntax error: the quoted text that starts here is not closed (it runs on "
                      "to line 6); end it with \" on the same line; to put a \" inside a text, write it as \\\" "
                      "or use single quotes around the text"]


def test_single_quote_inside_single_quotes(tmp_path):
    # 'it's: the text 'it' ends at column 17 and "s" follows at column 18
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription: 'it's mine'\npersonas:\n  - id: p1\n")
    assert errors == [":3:18: YAML syntax error: the quoted text ends at the ' before this and more text "
                      "follows; to put a ' inside a text, write it twice ('it''s')"]


def test_quote_closed_on_a_later_line(tmp_path):
    # the quote of line 3 closes on line 4, so that YAML fails further down; line 3 is named
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription: \"a note\npersonas:\"\n  - id: p1\n")
    assert errors == [":3:14: YAML syntax error: the quoted text that starts here is not closed on its line "
                      "(the file cannot be read from line 5 on); end it with \" on the same line"]


# 10. a missing dash before a list entry; and a dash in the wrong column
def test_missing_dash_before_a_list_entry(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\npersonas:\n  - id: p1\n  id: p2\n")
    assert errors == [":5:3: YAML syntax error: this line is in the column of the list's dashes (line 4) but "
                      "has no '- ': start a new entry with '- ', or indent it by 4 spaces to add it to the entry "
                      "above"]


def test_dash_in_the_wrong_column(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\npersonas:\n  - id: p1\n   - id: p2\n")
    assert errors == [":5:4: YAML syntax error: this list entry's '- ' is indented by 3 spaces, but the entries "
                      "of the list above are indented by 2 (line 4); put the dashes of one list in the same column"]


# 11. a key with nothing after it: pointed at the key (the empty value has no place of its own)
def test_key_with_nothing_after_it(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\npersonas:\n  - id: p1\n    attributes:\n  - id: p2\n")
    assert errors == [":5:5: personas[0].attributes: has nothing after its colon: write its fields (key: value) "
                      "on the lines below it, indented by 2 more spaces (or remove the line: the field is "
                      "optional)"]


def test_required_text_with_nothing_after_it(tmp_path):
    errors = validate(tmp_path, "psyq: cohort/1\nid:\npersonas:\n  - id: p1\n")
    assert errors == [":2:1: id: has nothing after its colon: write a text after the colon (a text starting "
                      "with '#' needs quotes: '#' starts a comment)"]


# A wrongly ordered scale: one message, not one per option.
def _with_scale(values: list[int]) -> str:
    start, end = MINI.index("scale:"), MINI.index("items:")
    options = "".join(f"  - {{value: {v}{', label: end' + str(i) if i in (0, len(values) - 1) else ''}}}\n"
                      for i, v in enumerate(values))
    return MINI[:start] + "scale:\n" + options + MINI[end:]


def test_descending_scale_gives_one_message(tmp_path):
    # mini_1to7.yaml's scale starts on line 13; the first option's value is on line 14, column 13
    errors = validate(tmp_path, _with_scale([5, 4, 3, 2, 1]), "inst.yaml")
    assert errors == [":14:13: scale[0].value: the options are listed from the highest value to the lowest "
                      "(5, 4, 3, 2, 1); psyq needs the options in ascending order, lowest value first, in steps "
                      "of 1: list them from 1 to 5 (to show them to respondents the other way round, set "
                      "option_order: reversed in the study's protocol)"]


def test_shuffled_scale_gives_one_message(tmp_path):
    # the first option out of place is the second (value 3, line 15)
    errors = validate(tmp_path, _with_scale([1, 3, 2, 5, 4]), "inst.yaml")
    assert errors == [":15:13: scale[1].value: the values are not in order (1, 3, 2, 5, 4); psyq needs the "
                      "options in ascending order, lowest value first, in steps of 1: list the options as "
                      "1, 2, 3, 4, 5"]


def test_yes_or_no_read_as_true_or_false(tmp_path):
    # `label: No` (line 14, value at column 23) is read by YAML as false, not as the text "No"
    text = _with_scale([1, 2, 3]).replace("{value: 1, label: end0}", "{value: 1, label: No}")
    errors = validate(tmp_path, text, "inst.yaml")
    assert errors == [":14:23: scale[0].label: must be text, not false: YAML reads an unquoted yes, no, on, off, "
                      "true or false as true or false; put the text in quotes (e.g. \"Yes\")"]


def test_missing_dash_before_a_text_entry(tmp_path):
    # "Thing b" (line 5, column 3) is in the column of the dash of line 4, with neither '- ' nor ':'
    errors = validate(tmp_path, "psyq: cohort/1\nid: c\ndescription:\n  - Thing a\n  Thing b\n")
    assert errors == [":5:3: YAML syntax error: 'Thing b' is in the column of the list's dashes (line 4) but has "
                      "no '- ' and no colon: if it is a list entry, start it with '- '; if it is a field, write "
                      "'name: value'"]
