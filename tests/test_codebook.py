"""Human data as it comes: a codebook names the columns and codes of a data file, keying that
looks wrong is said loudly, and labels that differ from the cohort's and the norms' are pointed out.

Runs the command line as a user would (``python -m psyq.cli``) on the shipped Briganti et
al. (2018) IRI file, whose columns are ``davi1`` … ``davi28``, whose gender is ``F``/``M`` and
whose reverse-keyed items are stored already reversed (instruments/data/README.md).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq import load_instrument
from psyq.engine.files.errors import InputError
from psyq.analysis.scoring.human_answers import keying_check, keying_warning, read_answers_csv
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
BRIGANTI = ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv"
IRI = ROOT / "instruments" / "iri.yaml"
REVERSE = ["3", "15", "7", "12", "4", "14", "18", "13", "19"]   # IRI reverse items, by subscale PT, FS, EC, PD


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def copy_briganti(folder: Path, codebook: str | None) -> Path:
    """The Briganti CSV in `folder`, with `codebook` (YAML text) beside it when given."""
    csv = folder / "people.csv"
    shutil.copy(BRIGANTI, csv)
    if codebook is not None:
        (folder / "people.codebook.yaml").write_text(codebook)
    return csv


ITEMS_ONLY = "psyq: codebook/1\ncolumns:\n  items: \"davi{id}\"\n"


def test_the_documented_command_reads_the_shipped_file_as_it_is():
    result = psyq("score", str(IRI), str(BRIGANTI.relative_to(ROOT)), "--keyed")
    assert result.returncode == 0, result.stderr
    assert "read with the codebook instruments/data/iri_briganti2018_keyed.codebook.yaml found beside it" in result.stderr
    assert "WARNING" not in result.stderr
    scores = pd.read_csv(pd.io.common.StringIO(result.stdout))
    assert len(scores) == 1973 and set(scores["gender"]) == {"female", "male"}
    # The briganti2018 norms of instruments/iri.yaml were computed from this file (women, men).
    means = scores.groupby("gender")[["PT", "FS", "EC", "PD"]].mean().round(2)
    assert means.loc["female"].tolist() == [16.91, 18.25, 20.54, 13.55]
    assert means.loc["male"].tolist() == [16.48, 15.68, 17.66, 10.70]
    # The codebook declares the file keyed: the same scores without --keyed.
    again = psyq("score", str(IRI), str(BRIGANTI.relative_to(ROOT)))
    assert again.returncode == 0 and again.stdout == result.stdout


def test_without_a_codebook_the_missing_columns_error_points_to_one(tmp_path):
    csv = copy_briganti(tmp_path, None)
    result = psyq("score", str(IRI), str(csv))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    items = ", ".join(str(k) for k in range(1, 29))
    assert result.stderr.strip() == (f"error: {csv}:1: missing column(s): {items}; if the file names its columns "
                                     "otherwise, describe them in a codebook (--codebook FILE, or <csv name>"
                                     ".codebook.yaml beside the CSV; see docs/comparing.md#codebooks)")


def test_an_explicit_codebook_maps_ids_items_attributes_and_values(tmp_path):
    people = tmp_path / "export.csv"
    people.write_text("id,q_a,q_b,c,d,sex\nr1,2,5,7,4,1\nr2,,3,,6,2\nr4,1,2,3,,1\n")
    book = tmp_path / "book.yaml"
    book.write_text("psyq: codebook/1\ninstrument: mini\ncolumns:\n  respondent_id: id\n"
                    "  items: {a: q_a, b: q_b}\n  attributes: {gender: sex}\nvalues:\n  gender: {1: female, 2: male}\n")
    mini = load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml")
    answers = read_answers_csv(people, mini, codebook=book)
    expected = read_answers_csv(ROOT / "tests" / "data" / "mini_answers.csv", mini)
    pd.testing.assert_frame_equal(answers[expected.columns], expected)
    assert answers.attrs["codebook"] == str(book) and answers.attrs["keyed"] is False
    out = tmp_path / "scores.csv"
    result = psyq("score", str(ROOT / "tests" / "data" / "mini_1to7.yaml"), str(people), "--codebook", str(book),
                  "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert pd.read_csv(out)["gender"].tolist() == ["female", "male", "female"]


@pytest.mark.parametrize("text, where", [
    # a column the CSV does not have: at the codebook's line of that entry
    ("psyq: codebook/1\ncolumns:\n  items:\n    '1': davi1\n    '2': dav2\n", "book.yaml:5:10: columns.items.2: column 'dav2' is not in"),
    ("psyq: codebook/1\ncolumns:\n  items: \"item{id}\"\n", "book.yaml:3:10: columns.items: the pattern 'item{id}' names column(s) not in"),
    ("psyq: codebook/1\ncolumns:\n  items: \"davi\"\n", "book.yaml:3:10: columns.items: a pattern must hold {id} exactly once"),
    ("psyq: codebook/1\ncolumns:\n  items: {'99': davi1}\n", "book.yaml:3:11: columns.items.99: '99' is not a rating item of 'iri'"),
    ("psyq: codebook/1\ncolumns:\n  items: \"davi{id}\"\nvalues:\n  sex: {F: female}\n",
     "book.yaml:5:3: values.sex: the data have no attribute 'sex'"),
    ("psyq: codebook/1\ninstrument: tas20\ncolumns:\n  items: \"davi{id}\"\n", "book.yaml:2:13: instrument: the codebook is for instrument 'tas20'"),
    ("psyq: codebook/1\ncolumns:\n  item: \"davi{id}\"\n", "book.yaml:3:3: columns.item: unknown field 'item' (did you mean 'items'?)"),
    ("psyq: codebook/1\nkeyed: false\ncolumns:\n  items: \"davi{id}\"\n", "book.yaml:2:8: keyed: the codebook says keyed: false"),
    ("psyq: codebook/1\ncolumns:\n  items: \"davi{id}\"\nvalues:\n  gender: {yes: female}\n", "book.yaml:5:11: values.gender: YAML reads an unquoted yes"),
])
def test_codebook_errors_name_file_line_column_and_exit_2(tmp_path, text, where):
    csv = copy_briganti(tmp_path, None)
    (tmp_path / "book.yaml").write_text(text)
    result = psyq("score", str(IRI), str(csv), "--codebook", str(tmp_path / "book.yaml"), "--keyed")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{tmp_path / where}" in result.stderr, result.stderr


def test_keyed_data_read_as_raw_are_warned_about_naming_the_reverse_items(tmp_path):
    csv = copy_briganti(tmp_path, ITEMS_ONLY)
    result = psyq("score", str(IRI), str(csv))
    assert result.returncode == 0, result.stderr    # warned, not refused: the data are not changed
    [line] = [x for x in result.stderr.splitlines() if x.startswith("WARNING")]
    assert "look ALREADY KEYED but were read as raw answers: 9 of 9 reverse-keyed items" in line
    assert "PT: 3 (r = \u2212.26), 15 (r = \u2212.24); FS: 7 (r = \u2212.25), 12 (r = \u2212.37)" in line
    for item in REVERSE:
        assert f" {item} (r = \u2212." in line
    assert "add --keyed" in line
    keyed = psyq("score", str(IRI), str(csv), "--keyed")
    assert keyed.returncode == 0 and "WARNING" not in keyed.stderr


def simulated_raw(n: int = 400, seed: int = 3) -> pd.DataFrame:
    """Raw IRI answers 0-4: each subscale one latent trait, reverse items answered against it."""
    iri = load_instrument(IRI)
    rng = np.random.default_rng(seed)
    traits = {s.id: rng.standard_normal(n) for s in iri.rating_subscales}
    columns = {}
    for item in iri.rating_items:
        sign = -1 if item.reverse else 1
        columns[item.id] = np.clip(np.rint(2 + sign * traits[item.subscales[0]] + rng.normal(0, 0.9, n)), 0, 4)
    return pd.DataFrame(columns, index=pd.Index([f"s{k}" for k in range(n)], name="respondent_id"))


def test_simulated_raw_data_are_not_warned_about_but_raw_data_declared_keyed_are(tmp_path):
    raw = simulated_raw()
    csv = tmp_path / "raw.csv"
    raw.reset_index().to_csv(csv, index=False)
    plain = psyq("score", str(IRI), str(csv))
    assert plain.returncode == 0 and "WARNING" not in plain.stderr
    declared = psyq("score", str(IRI), str(csv), "--keyed")
    assert declared.returncode == 0
    assert "declared already keyed, but they look RAW: 9 of 9" in declared.stderr
    assert "remove --keyed" in declared.stderr


def test_keying_check_needs_forward_items_and_enough_people():
    iri = load_instrument(IRI)
    few = simulated_raw(n=8)
    assert keying_check(iri, few)["r_scored"].isna().all()
    assert keying_warning(keying_check(iri, few), "few.csv", keyed=False) is None


def test_a_codebook_and_a_caller_that_disagree_are_an_error(tmp_path):
    csv = copy_briganti(tmp_path, ITEMS_ONLY.replace("columns", "keyed: true\ncolumns"))
    with pytest.raises(InputError, match="people.codebook.yaml:2:8: keyed: the codebook says keyed: true"):
        read_answers_csv(csv, load_instrument(IRI), keyed=False)
    assert read_answers_csv(csv, load_instrument(IRI)).attrs["keyed"] is True


def test_human_labels_that_match_no_norm_group_are_pointed_out(tmp_path):
    from psyq.analysis.report.readings import value_mismatch_warnings
    from psyq.analysis.statistics import norms
    from psyq.analysis.scoring.scores import human_scores

    iri = load_instrument(IRI)
    answers = read_answers_csv(copy_briganti(tmp_path, ITEMS_ONLY), iri, keyed=True)
    assert set(answers["gender"]) == {"F", "M"}          # the norms list F and M too: they match
    assert norms.value_mismatches(human_scores(answers, iri), {"iri": iri}).empty
    coded = answers.assign(gender=answers["gender"].map({"F": "1", "M": "2"}))
    mismatches = norms.value_mismatches(human_scores(coded, iri), {"iri": iri}, samples=["briganti2018"])
    assert mismatches[["attribute", "data_values"]].values.tolist() == [["gender", ["1", "2"]]]
    [message] = value_mismatch_warnings(mismatches)
    assert "matches gender on female, woman, F, male, man, M; the data's gender values are 1, 2" in message
    assert "codebook's `values:`" in message


def test_report_codebook_option_needs_its_human_file(tmp_path):
    result = psyq("report", str(tmp_path), "--codebook", "iri=book.yaml")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no --human file is given for it" in result.stderr


# A code the codebook's `values:` leaves out is kept as the file writes it (a label psyq cannot
# guess is better shown than dropped: a NaN would silently leave the respondent out of every
# group), and a notice at the codebook's `values:` line names it. A cell already holding a target
# value ("female") is not such a code and is not listed.
PARTLY_MAPPED = ("psyq: codebook/1\ncolumns:\n  respondent_id: id\n  items: {a: q_a, b: q_b}\n"
                 "  attributes: {gender: sex}\nvalues:\n  gender: {F: female, M: male}\n")
PARTLY_CODED = "id,q_a,q_b,c,d,sex\nr1,2,5,7,4,F\nr2,,3,,6,X\nr3,1,2,3,,M\nr4,3,3,3,3,female\nr5,4,4,4,4,X\n"


def _notices(seen) -> list[str]:
    from psyq.engine.files.notices import InputNotice
    return [str(w.message) for w in seen if issubclass(w.category, InputNotice)]


def test_a_code_the_values_map_leaves_out_is_kept_as_written_with_a_notice(tmp_path):
    import warnings
    people, book = tmp_path / "export.csv", tmp_path / "book.yaml"
    people.write_text(PARTLY_CODED)
    book.write_text(PARTLY_MAPPED)
    mini = load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        answers = read_answers_csv(people, mini, codebook=book)
    assert answers["gender"].tolist() == ["female", "X", "male", "female", "X"]
    # `gender: {...}` is line 7; its map starts at column 11. 'X' once, however many rows hold it.
    assert _notices(seen) == [f"{book}:7:11: values.gender: value(s) 'X' of {people} are not in the map and were "
                              "kept as written"]


def test_a_table_read_through_a_codebook_keeps_unmapped_codes_too(tmp_path):
    # The same rule for a table read without an instrument (a cohort drawn from the file).
    import warnings
    from psyq.engine.files.codebook import read_table_through_codebook
    people, book = tmp_path / "export.csv", tmp_path / "book.yaml"
    people.write_text(PARTLY_CODED)
    book.write_text(PARTLY_MAPPED)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        table, used = read_table_through_codebook(people, codebook=book)
    assert used == str(book)
    assert table.column("gender") == ["female", "X", "male", "female", "X"]
    assert _notices(seen) == [f"{book}:7:11: values.gender: value(s) 'X' of {people} are not in the map and were "
                              "kept as written"]


def opposed_parts(n: int = 400, seed: int = 7) -> pd.DataFrame:
    """Raw answers to the mini instrument (X = a, b; Y = b, c, d; Z = all four, composite) in which
    each reverse item goes with its own first-order subscale, but the total's forward items (b + d)
    run against item a: d loads -1.6 on the trait that b and a carry.

    Keyed a ~ f, b ~ f, keyed c ~ 0.8 (g - f), d ~ 0.5 g - 1.6 f: a against b and c against b + d are
    positive (the right keying), a against b + d is negative."""
    rng = np.random.default_rng(seed)
    f, g = rng.standard_normal(n), rng.standard_normal(n)

    def answer(latent: np.ndarray) -> np.ndarray:
        return np.clip(np.rint(4 + latent + rng.normal(0, 0.5, n)), 1, 7)

    keyed = pd.DataFrame({"a": answer(f), "b": answer(f), "c": answer(0.8 * g - 0.8 * f), "d": answer(0.5 * g - 1.6 * f)})
    raw = keyed.assign(a=8 - keyed["a"], c=8 - keyed["c"])          # a and c are reverse-keyed (scale 1-7)
    return raw.set_index(pd.Index([f"s{k}" for k in range(n)], name="respondent_id"))


def test_the_keying_check_of_an_instrument_with_a_total_uses_first_order_subscales_only():
    mini = load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml")
    raw = opposed_parts()
    keyed_a = 8 - raw["a"]
    # The trap, computed without psyq: against the total's forward items item a looks keyed the
    # wrong way, so a check that took Z as a subscale would warn about correctly keyed data.
    assert np.corrcoef(keyed_a, raw["b"] + raw["d"])[0, 1] < -0.2
    assert np.corrcoef(keyed_a, raw["b"])[0, 1] > 0.3
    assert np.corrcoef(8 - raw["c"], raw["b"] + raw["d"])[0, 1] > 0.3
    check = keying_check(mini, raw)
    assert list(zip(check["subscale"], check["item_id"])) == [("X", "a"), ("Y", "c")]
    assert (check["r_scored"] > 0.3).all() and not check["looks_wrong"].any()
    assert keying_warning(check, "people.csv", keyed=False) is None


ORDERS_BOOK = ("psyq: codebook/1\ninstrument: mini\n"
               "option_orders: {column: option_order, orders: [as_written, reversed]}\n")
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"


def test_an_order_of_the_options_written_with_spaces_around_it_is_that_order(tmp_path):
    """Guards the codebook's option_orders check, through the path that reads people's answers: a
    cell ' reversed ' (quoted, spaces kept by the CSV syntax) or 'as_written ' is the order
    reversed or as_written, and a row's other order is refused at its line, named without its spaces.
    (read_csv_table strips the cells before the codebook sees them; the test below checks the
    comparison's own strip.)"""
    (tmp_path / "people.codebook.yaml").write_text(ORDERS_BOOK)
    people = tmp_path / "people.csv"
    people.write_text('respondent_id,option_order,a,b,c,d\np1," reversed ",1,2,3,4\np2,as_written ,7,6,5,4\n'
                      'p3,"\treversed",2,2,2,2\n')
    answers = read_answers_csv(people, load_instrument(MINI), codebook=tmp_path / "people.codebook.yaml")
    assert answers["option_order"].tolist() == ["reversed", "as_written", "reversed"]
    assert answers.loc["p1", ["a", "b", "c", "d"]].tolist() == [1, 2, 3, 4]
    people.write_text(people.read_text() + 'p4," shuffled ",1,1,1,1\n')
    with pytest.raises(InputError) as caught:
        read_answers_csv(people, load_instrument(MINI), codebook=tmp_path / "people.codebook.yaml")
    assert f"{people}:5:2: column 'option_order': 'shuffled' is not an order of the options" in str(caught.value)


def test_the_option_orders_check_strips_the_cells_of_any_table(tmp_path):
    """Guards the strip in engine/files/codebook.py's option-order comparison itself: read_csv_table
    strips every cell, which hides a comparison without strip on the CSV path above, so the check
    is given a table whose cells keep their spaces, as a table read by any other reader would be."""
    from psyq.engine.files.codebook import load_codebook, other_orders, plan_columns, recoded_answers
    from psyq.engine.files.csvfile import CsvTable

    (tmp_path / "book.yaml").write_text(ORDERS_BOOK)
    book = load_codebook(tmp_path / "book.yaml")
    header = ["respondent_id", "option_order", "a", "b", "c", "d"]
    rows = [["p1", " reversed ", "1", "2", "3", "4"], ["p2", "as_written ", "7", "6", "5", "4"],
            ["p3", "\treversed", "2", "2", "2", "2"]]
    table = CsvTable("people.csv", header, rows, [2, 3, 4])
    assert other_orders(book, table) == []
    plan = plan_columns(book, header, list("abcd"), "mini", "people.csv")
    assert recoded_answers(book, table, plan, list(range(1, 8))).rows == rows
    rows.append(["p4", " shuffled ", "1", "1", "1", "1"])
    problems = other_orders(book, CsvTable("people.csv", header, rows, [2, 3, 4, 5]))
    assert [(p.line, p.column) for p in problems] == [(5, 2)] and "'shuffled' is not an order" in problems[0].message
