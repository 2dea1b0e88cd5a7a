"""`psyq import`: REDCap dictionaries, R psych keys and Qualtrics .qsf files become instruments that
validate and score human data as the source tool would; what cannot be mapped is listed.

The fixtures in tests/fixtures/import/ were written by us for these tests (no published scale).
Expected scores are worked by hand in comments, from the keys as the source file states them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from psyq.analysis.scoring.scores import human_scores
from psyq.engine.files.errors import InputError
from psyq.analysis.scoring.human_answers import read_answers_csv
from psyq.engine.importers import get_importer, importer_names
from psyq.engine.importers.command import import_instruments
from psyq.engine.importers.psych_keys import parse_key_list
from psyq.engine.design.instrument import load_instrument
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "import"


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def scores_of(instrument, csv: Path) -> pd.DataFrame:
    """Subscale scores by respondent (rows) and subscale (columns), through psyq's own reader."""
    long = human_scores(read_answers_csv(csv, instrument), instrument)
    return long.pivot(index="respondent_id", columns="subscale", values="score")


def write_import(tmp_path: Path, fmt: str, file: Path, **options) -> Path:
    """Import in-process and write the YAML, as `psyq import ... --out` does."""
    [(draft, text)] = import_instruments(fmt, str(file), options)
    out = tmp_path / f"{draft.id}.yaml"
    out.write_text(text)
    return out


def comment_above(text: str, line_start: str) -> str:
    """The comment lines right above the first line starting with `line_start` (stripped)."""
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.strip().startswith(line_start))
    above = []
    while k > 0 and lines[k - 1].strip().startswith("#"):
        k -= 1
        above.insert(0, lines[k].strip())
    return " ".join(above)


# ---------------------------------------------------------------- REDCap


def test_redcap_form_imports_validates_and_scores(tmp_path):
    out = tmp_path / "empathy.yaml"
    result = psyq("import", "redcap", str(FIX / "redcap_dictionary.csv"), "--form", "empathy", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert psyq("validate", str(out)).returncode == 0
    inst = load_instrument(out)
    assert [i.id for i in inst.items] == ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]
    assert [o.value for o in inst.scale] == [1, 2, 3, 4, 5] and inst.scale[0].label == "Never"
    # e4 is reversed by the calculation (6-[e4]); e6 by its mirrored codes (5, Never ... 1, Always).
    assert {i.id for i in inst.items if i.reverse} == {"e4", "e6"}
    assert [i.id for i in inst.subscale_items("ec_total")] == ["e1", "e2", "e4"]
    assert [i.id for i in inst.subscale_items("pt_total")] == ["e3", "e5", "e6"]
    assert inst.item("e7").unscored          # in no calculation
    assert inst.instructions == "Please read each statement and say how often it is true of you."
    assert inst.content_source == "user" and "redcap_dictionary.csv" in inst.citations["source"]

    scored = psyq("score", str(out), str(FIX / "redcap_humans.csv"), "--out", str(tmp_path / "s.csv"))
    assert scored.returncode == 0, scored.stderr
    scores = pd.read_csv(tmp_path / "s.csv", index_col="respondent_id")
    # By hand, with REDCap's own formulas on the codes REDCap would store (an e6 answer v on psyq's
    # scale is stored as code 6 - v, so pt_total = e3 + e5 + (6 - e6)):
    #   r1: ec = 5 + 4 + (6-2) = 13, pt = 3 + 4 + (6-1) = 12
    #   r2: ec = 1 + 2 + (6-5) = 4,  pt = 5 + 2 + (6-4) = 9   (e7 blank: unscored, no effect)
    #   r3: ec = 3 + 3 + 3 = 9,      pt = 3 + 3 + 3 = 9
    assert scores["ec_total"].to_dict() == {"r1": 13, "r2": 4, "r3": 9}
    assert scores["pt_total"].to_dict() == {"r1": 12, "r2": 9, "r3": 9}


def test_redcap_lists_what_it_could_not_map_on_stderr_and_beside_the_item(tmp_path):
    out = tmp_path / "empathy.yaml"
    result = psyq("import", "redcap", str(FIX / "redcap_dictionary.csv"), "--form", "empathy", "--out", str(out))
    err = result.stderr
    for expected in ["redcap_dictionary.csv:12: field 'mood_now' not mapped: a slider",
                     "redcap_dictionary.csv:13: field 'helpers' not mapped: a checkbox",
                     "redcap_dictionary.csv:14: field 'comments' not mapped: a notes field",
                     "redcap_dictionary.csv:11: field 'e8' not mapped: its choices (0 = Not sure | 1 = Sure)",
                     "redcap_dictionary.csv:17: calc field 'ec_mean' not mapped",
                     "redcap_dictionary.csv:10: branching logic of 'e7' not imported",
                     # e6 is stored reversed by REDCap, e4 reversed by a calculation: no single way
                     "e6 stored already reversed by the source tool, e4 not; to score an export of its "
                     "data, first recode e6"]:
        assert expected in err
    text = out.read_text()
    assert "branching logic of 'e7'" in comment_above(text, "- {id: e7")
    assert "mirrored codes" in comment_above(text, "- {id: e6")
    assert comment_above(text, "- {id: e5") == ""          # nothing to finish on a plain item
    assert "record_id" in text.split("psyq: instrument/1")[0]   # unplaced notes go in the header


def test_redcap_several_forms_need_form_or_out_dir(tmp_path):
    result = psyq("import", "redcap", str(FIX / "redcap_dictionary.csv"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "form 'empathy', form 'mood'" in result.stderr and "--out-dir" in result.stderr
    result = psyq("import", "redcap", str(FIX / "redcap_dictionary.csv"), "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    mood = load_instrument(tmp_path / "mood.yaml")
    assert [o.value for o in mood.scale] == [0, 1, 2, 3]
    # No calculation in the form: one placeholder subscale, said on stderr.
    assert [s.id for s in mood.subscales] == ["total"]
    assert "defines no subscales" in result.stderr
    assert "form 'demographics' not imported" in result.stderr   # letter codes: no rating field


def test_redcap_bad_row_is_an_error_at_its_line():
    file = FIX / "redcap_bad_row.csv"
    result = psyq("import", "redcap", str(file))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (f"error: {file}:3: the row has 8 cells but the header has 6 columns; "
                                     "is there a comma in a value that is not in quotes?")


def test_redcap_missing_column_is_an_error(tmp_path):
    file = tmp_path / "dict.csv"
    file.write_text('"Variable / Field Name","Form Name","Field Label"\nq1,f,Hello\n')
    with pytest.raises(InputError) as caught:
        get_importer("redcap").read(str(file), {})
    [problem] = caught.value.problems
    assert problem.line == 1 and "Field Type" in problem.message


HEADER = ('"Variable / Field Name","Form Name","Section Header","Field Type","Field Label",'
          '"Choices, Calculations, OR Slider Labels"\n')
FIVE = '"1, Never | 2, Rarely | 3, Sometimes | 4, Often | 5, Always"'


def test_redcap_calculations_that_key_items_inconsistently_are_not_mapped(tmp_path):
    file = tmp_path / "dict.csv"
    file.write_text(HEADER + "".join(f'{q},f,,radio,"Item {q}",{FIVE}\n' for q in ("a", "b", "c"))
                    + 'one,f,,calc,"One","[a]+(6-[b])"\n'          # b reversed (1 + 5 - b)
                    + 'two,f,,calc,"Two","sum([a],[b])"\n'         # b not reversed: contradicts `one`
                    + 'three,f,,calc,"Three","[c]+(7-[a])"\n'      # 7 is not min + max on 1-5
                    + 'four,f,,calc,"Four","mean([a],[c])"\n')
    [draft] = get_importer("redcap").read(str(file), {})
    document = draft.document()
    assert [s["id"] for s in document["subscales"]] == ["one", "four"]
    assert [s["score"] for s in document["subscales"]] == ["sum", "mean"]
    assert [i["id"] for i in document["items"] if i.get("reverse")] == ["b"]
    said = "\n".join(str(n) for n in draft.notes)
    assert "dict.csv:6: calc field 'two' not mapped" in said and "keyed the other way" in said
    assert "dict.csv:7: calc field 'three' not mapped" in said and "(7-[a]) does not reverse" in said


def test_redcap_every_field_annotation_is_listed_to_finish(tmp_path):
    # Issue 24: a TAS-20-like form marks its five reverse-keyed items with a project's own
    # `@REVERSE` annotation (the choices are not mirrored and no calculation reverses them); the
    # importer dropped every annotation without a word. Item texts here are placeholders.
    reverse = {4, 5, 10, 18, 19}
    rows = ['record_id,tas,,text,"Record ID",,"@HIDDEN"\n']
    rows += [f'tas_{k},tas,,radio,"Item {k}",{FIVE},"{"@REVERSE" if k in reverse else ""}"\n' for k in range(1, 21)]
    rows += ['tas_total,tas,,calc,"Total","sum(' + ",".join(f"[tas_{k}]" for k in range(1, 21)) + ')",'
             '"@HIDDEN-SURVEY\n@READONLY"\n']
    file = tmp_path / "tas.csv"
    file.write_text(HEADER.rstrip("\n") + ',"Field Annotation"\n' + "".join(rows))
    out = tmp_path / "tas.yaml"
    result = psyq("import", "redcap", str(file), "--out", str(out))
    assert result.returncode == 0, result.stderr
    to_finish = result.stderr.split("to finish (")[1]
    for k in sorted(reverse):
        assert (f"tas.csv:{k + 2}: field annotation of 'tas_{k}' not imported: '@REVERSE' (psyq maps no "
                f"annotation or action tag); it may mark a reverse-keyed item: psyq keyed 'tas_{k}' forward") in to_finish
        assert "'@REVERSE'" in comment_above(out.read_text(), f"- {{id: tas_{k},")
    assert "tas.csv:2: field annotation of 'record_id' not imported: '@HIDDEN'" in to_finish
    assert "tas.csv:23: field annotation of 'tas_total' not imported: '@HIDDEN-SURVEY @READONLY'" in to_finish
    assert to_finish.count("field annotation of") == 7                      # one per annotated field, no more
    assert not any(i.reverse for i in load_instrument(out).items)          # keyed as the file says, and said


def test_redcap_unknown_form_is_an_error():
    with pytest.raises(InputError) as caught:
        get_importer("redcap").read(str(FIX / "redcap_dictionary.csv"), {"form": "nope"})
    assert "no form 'nope'" in str(caught.value) and "empathy, mood, demographics" in str(caught.value)


# ---------------------------------------------------------------- psych keys


def test_item_reversed_in_one_scale_only_is_left_out_of_the_other_and_said(tmp_path):
    keys = tmp_path / "k.R"
    keys.write_text('list(A = c("x", "-y"),\n     B = c("y", "z"))\n')
    [draft] = get_importer("psych-keys").read(str(keys), {"scale": "1-4"})
    document = draft.document()
    assert {i["id"]: i.get("subscales") for i in document["items"]} == {"x": ["A"], "y": ["A"], "z": ["B"]}
    assert any(str(n).startswith("k.R:2: 'y' is reversed in one scale and not in another") for n in draft.notes)


def test_psych_key_list_imports_and_scores_like_score_items(tmp_path):
    out = tmp_path / "keys.yaml"
    result = psyq("import", "psych-keys", str(FIX / "keys.R"), "--items", str(FIX / "keys_items.csv"),
                  "--scale", "1-5", "--labels", "Strongly disagree|Strongly agree", "--out", str(out))
    assert result.returncode == 0, result.stderr
    inst = load_instrument(out)
    assert {i.id for i in inst.items if i.reverse} == {"q2", "q5"}       # "-q2" and '-q5'
    assert [i.id for i in inst.subscale_items("PT")] == ["q1", "q2", "q3"]
    assert inst.item("q7").unscored and "'q7' is in no subscale" in result.stderr
    assert inst.item("q2").text == "I find it hard to see, at times, why others disagree."
    assert [s.score for s in inst.subscales] == ["mean", "mean"]
    scores = scores_of(inst, FIX / "keys_humans.csv")
    # psych::scoreItems (totals = FALSE): mean of keyed items, a reversed item as (1 + 5) - x.
    #   r1: PT = (4 + (6-2) + 5)/3 = 13/3, EC = (3 + (6-1) + 4)/3 = 4
    #   r2: PT = (1 + (6-5) + 2)/3 = 4/3,  EC = (5 + (6-5) + 5)/3 = 11/3
    #   r3: PT = (3 + 3 + 3)/3 = 3;        EC: q6 blank -> no score (psyq does not impute)
    assert scores.loc["r1", "PT"] == pytest.approx(13 / 3) and scores.loc["r1", "EC"] == pytest.approx(4)
    assert scores.loc["r2", "PT"] == pytest.approx(4 / 3) and scores.loc["r2", "EC"] == pytest.approx(11 / 3)
    assert scores.loc["r3", "PT"] == pytest.approx(3) and pd.isna(scores.loc["r3", "EC"])


def test_keys_matrix_csv_gives_the_same_instrument_as_the_key_list(tmp_path):
    options = {"items": str(FIX / "keys_items.csv"), "scale": "1-5"}
    (tmp_path / "a").mkdir()
    from_list = load_instrument(write_import(tmp_path / "a", "psych-keys", FIX / "keys.R", **options))
    from_matrix = load_instrument(write_import(tmp_path, "psych-keys", FIX / "keys_matrix.csv", **options))
    shape = lambda inst: [(i.id, i.reverse, tuple(i.subscales), i.unscored) for i in inst.items]  # noqa: E731
    assert shape(from_matrix) == shape(from_list)
    assert [(s.id, s.score) for s in from_matrix.subscales] == [("PT", "mean"), ("EC", "mean")]


def test_item_positions_and_ranges_refer_to_the_item_file(tmp_path):
    inst = load_instrument(write_import(tmp_path, "psych-keys", FIX / "keys_positions.R",
                                        items=str(FIX / "keys_items.csv"), scale="0-4"))
    # list(A = c(1, -2), B = c(3:4, -5)) over the rows q1..q7 of the item file.
    assert [i.id for i in inst.subscale_items("A")] == ["q1", "q2"]
    assert [i.id for i in inst.subscale_items("B")] == ["q3", "q4", "q5"]
    assert {i.id for i in inst.items if i.reverse} == {"q2", "q5"}
    assert (inst.scale_min, inst.scale_max) == (0, 4)


def test_keys_without_items_or_scale_validate_with_placeholders_listed(tmp_path):
    [(draft, text)] = import_instruments("psych-keys", str(FIX / "keys.R"), {})
    path = tmp_path / "keys.yaml"
    path.write_text(text)
    inst = load_instrument(path)
    assert inst.items_without_text == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert inst.item_texts is not None
    assert (inst.scale_min, inst.scale_max) == (1, 5)
    said = " ".join(str(n) for n in draft.notes)
    assert "no response scale" in said and "--labels" in said and "no text for item(s) q1" in said
    assert "no response scale" in comment_above(text, "scale:")


def test_r_function_call_is_an_error_at_its_line_and_column():
    file = FIX / "keys_call.R"
    result = psyq("import", "psych-keys", str(file))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    # `paste0(` starts on line 2, column 8 of keys_call.R.
    assert result.stderr.startswith(f"error: {file}:2:8: `paste0(` is a function call psyq does not run")


@pytest.mark.parametrize("snippet, line, column, words", [
    ('list(A = c("q1"); B)', 1, 17, "unexpected character ';'"),
    ('list(A = c(q1))', 1, 12, "unquoted name q1"),
    ('make.keys(7, list(A = c(1)))', 1, 1, "function call"),
    ('list(A = c("q1"),\n     B = c("q 2"))', 2, 12, "cannot be a psyq item id"),
    ('list(A = c(1, 2)', 1, 17, "expected ',' or ')', found the end of the file"),
    ('list(A = c(-2:4))', 1, 13, "reversed range"),
    ('list(A = c(1.5))', 1, 12, "not an item position"),
])
def test_r_snippets_outside_the_subset_are_located(snippet, line, column, words):
    with pytest.raises(InputError) as caught:
        parse_key_list("k.R", snippet)
    [problem] = caught.value.problems
    assert (problem.line, problem.column) == (line, column)
    assert words in problem.message


def test_bad_keys_matrix_cell_is_an_error():
    file = FIX / "keys_matrix_bad.csv"
    result = psyq("import", "psych-keys", str(file))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: {file}:3: column 'PT': '2' is not -1, 0 or 1"


# ---------------------------------------------------------------- Qualtrics


def test_qsf_imports_validates_and_scores(tmp_path):
    out = tmp_path / "survey.yaml"
    result = psyq("import", "qsf", str(FIX / "survey.qsf"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    inst = load_instrument(out)
    # Matrix QID2 (export tags f1-f3), matrix QID3 (default names Q3_1, Q3_2), MC QID4 (tag f6);
    # QID7 is in the trash block and is left out.
    assert [i.id for i in inst.items] == ["f1", "f2", "f3", "Q3_1", "Q3_2", "f6"]
    assert inst.item("f2").text == "I notice small changes in mood."          # HTML and &nbsp; stripped
    assert inst.instructions == "In this survey, say how much you agree with each statement."
    assert {i.id for i in inst.items if i.reverse} == {"Q3_1", "Q3_2"}      # recoded 5..1
    assert [o.label for o in inst.scale] == ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
    for expected in ["QID5: question Q5 not mapped: a TE question", "QID6: question Q6 not mapped: a Slider",
                     "display logic of question QID3", "1 Branch element(s) not imported", "defines no subscales"]:
        assert expected in result.stderr
    assert "display logic" in comment_above(out.read_text(), "- {id: Q3_1")
    assert "Q3_1, Q3_2 already reversed: score an export of its data with `psyq score --keyed`" in result.stderr

    scores = scores_of(inst, FIX / "survey_humans.csv")
    # Answers are the positions chosen (1 = Strongly disagree ... 5 = Strongly agree); Qualtrics
    # recodes Q3's to 6 - position, which is what reversing does. Placeholder `total` = sum:
    #   r1: 5 + 4 + 4 + (6-1) + (6-2) + 5 = 27;  r2: 1 + 2 + 1 + 1 + 1 + 2 = 8;  r3: 6 x 3 = 18
    assert scores["total"].to_dict() == {"r1": 27, "r2": 8, "r3": 18}


def test_qsf_export_with_recoded_values_scores_the_same_with_keyed(tmp_path):
    inst = load_instrument(write_import(tmp_path, "qsf", FIX / "survey.qsf"))
    raw = pd.read_csv(FIX / "survey_humans.csv")
    exported = raw.assign(Q3_1=6 - raw["Q3_1"], Q3_2=6 - raw["Q3_2"])   # Qualtrics' RecodeValues 5..1
    path = tmp_path / "export.csv"
    exported.to_csv(path, index=False)
    keyed = human_scores(read_answers_csv(path, inst, keyed=True), inst)
    assert keyed.set_index("respondent_id")["score"].to_dict() == {"r1": 27, "r2": 8, "r3": 18}


def test_qsf_bad_json_is_an_error_at_its_line_and_column():
    file = FIX / "survey_bad.qsf"
    result = psyq("import", "qsf", str(file))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    # Line 4 is `    {"Element": "SQ",}`: the '}' after the comma is column 22.
    assert result.stderr.strip() == (f"error: {file}:4:22: not valid JSON: Expecting property name enclosed "
                                     "in double quotes")


def test_qsf_that_is_not_a_survey_is_an_error(tmp_path):
    file = tmp_path / "x.qsf"
    file.write_text('{"SurveyEntry": {}}')
    with pytest.raises(InputError) as caught:
        get_importer("qsf").read(str(file), {})
    assert "SurveyElements" in str(caught.value)


# ---------------------------------------------------------------- registry


def test_every_registered_format_is_a_subcommand():
    assert set(importer_names()) == {"redcap", "psych-keys", "qsf", "emotionbench-situations", "emotionbench-humans",
                                     "replies", "ratings", "emotionbench-results"}
    result = psyq("import", "--help")
    assert result.returncode == 0
    for name in importer_names():
        assert name in result.stdout


@pytest.mark.parametrize("fmt, says, options", [
    ("emotionbench-results", ["--out DIR", "imported run directory to write", "imported.json", "stage_scores.csv",
                              "psyq report DIR"], ["--out"]),
    ("emotionbench-humans", ["--out FILE", "write the human change CSV here"], ["--out"]),
    ("emotionbench-situations", ["--out FILE", "write the situation set YAML here", "--id ID",
                                 "the situation set's id"], ["--out", "--id"]),
])
def test_a_format_that_writes_no_instrument_offers_only_the_options_it_uses(fmt, says, options):
    # Issue 24: emotionbench-results documented --out as "write the instrument YAML" and offered
    # --id and --out-dir, which it never read.
    result = psyq("import", fmt, "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())           # argparse wraps lines
    for phrase in says:
        assert phrase in text
    assert "instrument" not in text.lower()
    offered = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text)) - {"--help"})
    assert offered == sorted(options)
    for unused in {"--out-dir", "--id"} - set(options):
        refused = psyq("import", fmt, "file.csv", "--out", "x", unused, "y")
        assert refused.returncode == 2 and f"unrecognized arguments: {unused}" in refused.stderr


@pytest.mark.parametrize("fmt, suffix", [("redcap", ".csv"), ("psych-keys", ".R"), ("psych-keys", ".csv"),
                                         ("qsf", ".qsf")])
def test_not_a_text_file_is_refused_in_every_format(tmp_path, fmt, suffix):
    with pytest.raises(InputError) as caught:
        get_importer(fmt).read("/dev/zero", {})
    assert "this is a device" in str(caught.value)
    utf16 = tmp_path / f"file{suffix}"
    utf16.write_bytes("list(A = 1)\n".encode("utf-16-le"))   # every other byte is NUL
    with pytest.raises(InputError) as caught:
        get_importer(fmt).read(str(utf16), {})
    [problem] = caught.value.problems
    assert (problem.line, problem.column) == (1, 2) and "NUL byte" in problem.message


def test_texts_that_look_like_yaml_survive_the_round_trip(tmp_path):
    labels = ["- starts like a list", "Say: yes # not a comment", "{braces} and [brackets]", "'quoted' \"twice\"",
              "@at & *star", "yes", "12"]
    file = tmp_path / "dict.csv"
    rows = "".join(f'q{k},f,,radio,"{label.replace(chr(34), chr(34) * 2)}",{FIVE}\n' for k, label in enumerate(labels))
    file.write_text(HEADER + rows + 'weird,f,,calc,"Multi\nline: # label","[q0]+[q1]+[q2]+[q3]+[q4]+[q5]+[q6]"\n')
    inst = load_instrument(write_import(tmp_path, "redcap", file, id="renamed"))
    assert inst.id == "renamed"
    assert [i.text for i in inst.items] == labels        # strings stay strings ("yes", "12"), nothing cut
    assert inst.subscales[0].name == "Multi line: # label"   # whitespace collapsed, '#' kept
