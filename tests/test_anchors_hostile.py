"""A hostile or broken anchors file (`psyq: anchors/1`, engine/design/anchors.py): every fault is
one plain line, ``file:line:column: field: what is wrong``, exit 2, no traceback, from `psyq
validate` on the file and from `psyq validate`, `psyq plan` and `psyq run` of a study that names it
(test_ssr.py's study; nothing is sent).

The expected lines were written by reading each file below and counting its lines and columns by
hand (1-based; a value's column is where the value starts, a key's where the key starts). Two
faults have no line: an empty file and one over the 10 MB every input file is bounded by
(engine/files/inputfile.py); they are named by the file alone, as for every other kind
(tests/test_malformed.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_helper import psyq_in_process
from test_ssr import write_study

HEAD = ("psyq: anchors/1\nid: x\ncontent_source: user\nsource: written for this test\nscale:\n"
        "  - {value: 1, label: Never}\n  - {value: 2, label: Always}\n")   # lines 1-7


def statements(*lines: str) -> str:
    """HEAD and one set whose statements are `lines` (line 11 onwards)."""
    return HEAD + "sets:\n  - id: s\n    statements:\n" + "".join(f"      {line}\n" for line in lines)


# Ten aliases a line, each of the line before: the aliases' values pass 100,000 at the 8th alias of
# line 11 (e:): 10 x 11 (b) + 10 x 111 (c) + 10 x 1,111 (d) + 8 x 11,111 = 101,218 nodes, column 8 + 7 x 4.
BOMB = HEAD.replace("source: written for this test\n", 'source: &a ["lol", "lol", "lol", "lol", "lol", "lol", '
                    '"lol", "lol", "lol", "lol"]\n') + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi")) + \
    "sets:\n  - id: s\n    statements: {1: a, 2: b}\n"

GOOD = statements("1: Not at all.", "2: Always.")
HUGE = HEAD + ("# " + "x" * 97 + "\n") * 110_000 + "sets:\n  - id: s\n    statements: {1: Never., 2: Always.}\n"

CASES = {
    # what is wrong: (the file's text or bytes, where and what the error says)
    "an option without a statement": (statements("1: Not at all."), "11:7: sets[0].statements: set 's' has no "
                                      "statement for option 2 (one statement per option of the scale: 1, 2)"),
    "a statement for an option not on the scale": (
        statements("1: Not at all.", "2: Always.", "3: Somewhat."),
        "13:7: sets[0].statements[3]: 3 is not a value of the scale (1, 2)"),
    "an empty statement": (statements("1: Not at all.", "2: ''"), "12:10: sets[0].statements[2]: must not be empty"),
    "a statement of spaces": (statements("1: '   '", "2: Always."), "11:10: sets[0].statements[1]: must not be "
                              "empty (it is only spaces): write the statement for this option"),
    "nothing after the colon": (statements("1: Not at all.", "2:"), "12:7: sets[0].statements[2]: has nothing after "
                                "its colon: write a text after the colon (a text starting with '#' needs quotes: "
                                "'#' starts a comment)"),
    "a number for a statement": (statements("1: Not at all.", "2: 5"),
                                 "12:10: sets[0].statements[2]: must be text, not 5"),
    "a list for a statement": (statements("1: Not at all.", "2: [Always]"),
                               "12:10: sets[0].statements[2]: must be text, not ['Always']"),
    "true for an option": (statements("true: Not at all.", "2: Always."),
                           "11:7: sets[0].statements: must be a whole number, not True"),
    "a word for an option": (statements("1: Not at all.", "two: Always."),
                             "12:12: sets[0].statements.two: must be a whole number, not 'two'"),
    "a duplicate key": (statements("1: Not at all.", "1: Always."), "12:7: sets[0].statements.1: duplicate key '1' "
                        "(first written on line 11); YAML would silently keep only the last one: remove one of "
                        "them, or rename it"),
    "the same statement twice": (statements("1: Always.", "2: always. "), "11:7: sets[0].statements: set 's' gives "
                                 "2 options the same statement ('always.'): they could never be told apart"),
    "statements as a list": (HEAD + "sets:\n  - id: s\n    statements: [Never., Always.]\n",
                             "10:17: sets[0].statements: must be a mapping of fields (key: value), but a list is "
                             "written here (['Never.', 'Always.']): write 'name: value' lines without '- ' in front"),
    "no sets": (HEAD, "1:1: sets: required field is missing"),
    "a billion laughs": (BOMB, "11:36: aliases (*name) expand to more than 100,000 values in this file; write the "
                         "values out or use fewer nested aliases"),
    "a recursive alias": (HEAD + "sets: &s [*s]\n", "8:11: the alias *s is inside the value &s it refers to (a "
                          "recursive alias); write the value out"),
    "nesting 20,000 deep": (HEAD + "sets: " + "[" * 20_000 + "]" * 20_000 + "\n",
                            "8:106: values are nested more than 100 levels deep here"),
    "another format": (GOOD.replace("anchors/1", "anchors/2"), "1:7: psyq: must be one of instrument/1, cohort/1, "
                       "study/1, lexicon/1, real_words/1, rubric/2, rubric/1, situations/1, perturbations/1, anchors/1, codebook/1, "
                       "not 'anchors/2'"),
    "no format": (GOOD.replace("psyq: anchors/1\n", ""), "1:1: psyq: must be one of instrument/1, cohort/1, study/1, "
                  "lexicon/1, real_words/1, rubric/2, rubric/1, situations/1, perturbations/1, anchors/1, codebook/1, not None"),
    "binary garbage": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "1:1: the file is not UTF-8 text (the "
                       "character here is in another encoding); save it as UTF-8"),
    "a NUL byte": (HEAD.replace("id: x", "id: x\x00").encode(), "2:6: the file holds a NUL byte (binary data, or a "
                   "text encoding such as UTF-16); save it as UTF-8 text"),
    "a list": ("- Not at all.\n- Always.\n", "1:1: the file must be a mapping of fields (key: value), not a list"),
    "a YAML syntax error": (HEAD + "sets:\n  - id: s\n    statements: {1: Never., 2: Always.\n",
                            "10:17: YAML syntax error: a value starting with '{' is read as a mapping in brackets, "
                            "and its '}' is missing; add '}' where the mapping ends, or, if this is a text, put it in "
                            "quotes: statements: \"{1: Never., 2: Always.\""),
    "an empty file": ("", " the file is empty; a psyq file starts with its format, e.g. 'psyq: instrument/1' (or "
                      "cohort/1, study/1), followed by its fields"),
    "11 MB": (HUGE, f" the file is too large ({len(HUGE):,} bytes; psyq reads input files of at most 10 MB)"),
}


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def said(out, file: str, expected: str) -> None:
    """Exit 2, no traceback, and the error line `file:expected` (the first of its lines)."""
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and out.stdout == ""
    lines = out.stderr.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), out.stderr
    assert f"error: {file}:{expected}" in lines, out.stderr


@pytest.mark.parametrize("fault", list(CASES))
def test_validate_says_where_an_anchors_file_is_wrong(tmp_path, fault):
    content, expected = CASES[fault]
    write(tmp_path / "bad.yaml", content)
    said(psyq_in_process("validate", "bad.yaml", cwd=tmp_path), "bad.yaml", expected)


@pytest.mark.parametrize("fault", ["an option without a statement", "a number for a statement", "a billion laughs",
                                   "another format", "no format", "binary garbage", "a list", "11 MB"])
@pytest.mark.parametrize("command", ["validate", "plan", "run"])
def test_a_study_naming_a_broken_anchors_file_stops_before_anything_is_sent(tmp_path, fault, command):
    """The study's `protocol.ssr.anchors` names the file: the same line, whichever command reads
    the study (the servers' port 9 is never reached: nothing is sent)."""
    study = write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    content, expected = CASES[fault]
    anchors = write(tmp_path / "tiny_anchors.yaml", content)
    extra = [] if command == "validate" else ["--runs-dir", tmp_path / "runs"]
    if fault == "another format":   # the study reads it as anchors: the one format it can be
        expected = "1:7: psyq: must be 'anchors/1', not 'anchors/2'"
    if fault == "no format":
        expected = "1:1: psyq: required field is missing"
    if fault == "11 MB":            # not read at all: said where the study names it
        said(psyq_in_process(command, study, *extra), str(study), f"19:5: protocol.ssr.anchors: {anchors.resolve()}:"
             + expected)
    else:
        said(psyq_in_process(command, study, *extra), str(anchors.resolve()), expected)
    assert not (tmp_path / "runs").exists()


def test_a_whole_number_key_is_found_where_it_is_written(tmp_path):
    """pydantic names a statement by its option's value (a number), the file's index by the key as
    written (text): the error points at the statement, not at the mapping that holds it (line 11)."""
    write(tmp_path / "bad.yaml", statements("1: Not at all.", "2: Sometimes.", "3: Often.", "4: [Always.]"))
    out = psyq_in_process("validate", "bad.yaml", cwd=tmp_path)
    assert "error: bad.yaml:14:10: sets[0].statements[4]: must be text, not ['Always.']" in out.stderr, out.stderr
