"""The rating sheet people open holds every reply as text, never as a formula (OWASP "CSV
injection"), and `psyq import ratings` reads the filled-in sheet back with every reply and id intact.

The hostile texts come twice: as a model's replies (over the stub server, as in the run that found
the problem) and as reference replies stored exactly (so a tab or CR that a reply's parsing might
trim is still there to test).
"""

from __future__ import annotations

import csv
import io
import itertools
import shutil
import subprocess
import zipfile
from pathlib import Path

import openpyxl
import pytest

from psyq.cli import main
from psyq.engine.judging.rating_sheet import read_rating_workbook, sheet_text
from psyq.engine.store.ratings import RatingTarget, put_targets, read_ratings, read_targets
from psyq.engine.store.run_store import RunStore
from stub_server import StubServer
from test_administer import run, write_study
from test_response import DIMENSIONS, MESSAGES, N_MESSAGES, PERSONAS

# Each begins with a character a spreadsheet takes as the start of a formula.
HOSTILE = ['=HYPERLINK("http://x","click")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]
# Texts a workbook cannot hold as they are (a control character XML refuses; the workbook format's
# own escape written literally): written escaped, read back exactly.
ESCAPED = ["bell\x07 and escape\x1b", "literally _x0041_ and _x005F_x0042_"]
# CRs, which XML reads back as LF unless written as a character reference.
CARRIAGE_RETURNS = ["line one\r\nline two\r"]


def hostile_run(tmp_path: Path) -> Path:
    """A run whose persona replies are the hostile texts, plus each hostile and escaped text as a
    reference reply stored byte for byte (the persona replies become targets with the sheet)."""
    counter = itertools.count()
    with StubServer(answer=lambda body: HOSTILE[next(counter) % len(HOSTILE)]) as stub:
        result = run(write_study(tmp_path, stub.url, personas=PERSONAS, instrument=MESSAGES,
                                 protocol={"answer": "text"}), tmp_path / "runs")
    assert result.counts == {"answered": len(PERSONAS) * N_MESSAGES}
    run_dir = result.run_dir.path
    with RunStore(run_dir / "run.sqlite") as store:
        exact = HOSTILE + ESCAPED + CARRIAGE_RETURNS
        put_targets(store, [RatingTarget.reference(f"ref_{k}", item_id="m01_stress", instrument="help_messages_psyq",
                                                   text=text) for k, text in enumerate(exact)])
    return run_dir


def stored_texts(run_dir: Path) -> dict[str, str]:
    with RunStore(run_dir / "run.sqlite") as store:
        targets = read_targets(store)
    return dict(zip(targets["response_id"], targets["text"]))


def write_sheet(run_dir: Path, sheet: Path) -> dict[str, str]:
    """Write the sheet; returns every rating target's stored text by response_id."""
    assert main(["rating-sheet", str(run_dir), str(sheet), "--rubric", "empathy_ceb", "--seed", "5"]) == 0
    return stored_texts(run_dir)


def test_every_reply_of_the_sheet_is_a_text_cell_equal_to_the_stored_reply(tmp_path):
    run_dir = hostile_run(tmp_path)
    sheet = tmp_path / "sheet.xlsx"
    texts = write_sheet(run_dir, sheet)
    book = openpyxl.load_workbook(sheet)   # as a spreadsheet reads it: the cells and their types
    ws = book["ratings"]
    header = [c.value for c in ws[1]]
    assert header == ["rater_id", "response_id", "message", "reply"] + DIMENSIONS
    rows = list(ws.iter_rows(min_row=2))
    assert len(rows) == len(texts) == len(PERSONAS) * N_MESSAGES + len(HOSTILE) + len(ESCAPED) + len(CARRIAGE_RETURNS)
    replies = []
    for row in rows:
        rid, message, reply = row[1], row[2], row[3]
        for cell in (rid, message, reply):
            assert cell.data_type == "s" and cell.number_format == "@", cell.coordinate
        assert rid.value in texts
        replies.append(reply.value)
        stored = texts[rid.value]
        if stored in ESCAPED:   # held in the workbook's escape, which Excel and LibreOffice decode
            assert sheet_text(reply.value) == stored and reply.value != stored
        else:
            assert reply.value == stored, (rid.value, reply.value, stored)   # byte for byte
        for cell in (row[0], *row[4:]):   # left for the rater, formatted as text
            assert cell.value is None and cell.number_format == "@"
    for text in HOSTILE + CARRIAGE_RETURNS:   # each is there literally, as a reference reply at least
        assert text in replies
    persona_replies = [t for rid, t in texts.items() if not rid.startswith("ref_")]
    assert set(persona_replies) >= {'=HYPERLINK("http://x","click")', "+1+1", "-2+3", "@SUM(A1)"}
    # No formula anywhere in the file: every cell holds an inline string, none a <f>.
    xml = zipfile.ZipFile(sheet).read("xl/worksheets/sheet1.xml")
    assert b"<f>" not in xml and b"<f " not in xml and b't="inlineStr"' in xml


def test_the_sheet_is_never_written_as_a_csv(tmp_path, capsys):
    run_dir = hostile_run(tmp_path)
    sheet = tmp_path / "sheet.csv"
    assert main(["rating-sheet", str(run_dir), str(sheet), "--rubric", "empathy_ceb"]) == 2
    err = capsys.readouterr().err
    assert f"{sheet}: the rating sheet is a workbook: name it .xlsx" in err and "Traceback" not in err
    assert not sheet.exists()


def _office() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def _calc() -> bool:
    """Is LibreOffice's spreadsheet (Calc) installed? soffice alone may be Writer only (Debian's
    libreoffice-writer, which turns .docx into PDF), and converts no workbook."""
    office = _office()
    return office is not None and (Path(office).resolve().parent / "libsclo.so").exists()


@pytest.mark.skipif(not _calc(), reason="LibreOffice Calc is not installed here; the cell types were "
                                        "checked with openpyxl in the test above")
def test_libreoffice_converts_the_sheet_to_the_literal_replies(tmp_path):
    run_dir = hostile_run(tmp_path)
    sheet = tmp_path / "sheet.xlsx"
    texts = write_sheet(run_dir, sheet)
    out = tmp_path / "converted"
    subprocess.run([_office(), "--headless", f"-env:UserInstallation=file://{tmp_path / 'profile'}",
                    "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76", "--outdir", str(out), str(sheet)],
                   check=True, capture_output=True, timeout=180)
    with (out / "sheet.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    got = {r["response_id"]: r["reply"] for r in rows}
    for text in HOSTILE[:4]:   # shown as typed, not computed ("click", 2, 1, an error)
        assert text in got.values()
    assert "click" not in got.values() and "2" not in got.values()


def fill_in(sheet: Path, rater: str = "h7") -> list[tuple[str, dict[str, str]]]:
    """Fill rater_id and every level as a rater would (typing into the text cells); returns
    (response_id, levels) per row."""
    book = openpyxl.load_workbook(sheet)
    ws = book["ratings"]
    header = [c.value for c in ws[1]]
    filled = []
    for k, row in enumerate(ws.iter_rows(min_row=2)):
        cells = dict(zip(header, row))
        cells["rater_id"].value = rater
        levels = {d: str(1 + (k + j) % 3) for j, d in enumerate(DIMENSIONS)}
        for d, level in levels.items():
            cells[d].value = level
        filled.append((cells["response_id"].value, levels))
    book.save(sheet)
    return filled


def _replies(sheet: Path) -> dict[str, str]:
    table = read_rating_workbook(sheet, ("rater_id", "response_id"))   # what psyq import ratings reads
    replies = {row[table.header.index("response_id")]: row[table.header.index("reply")] for row in table.rows}
    assert len(replies) == len(table.rows)   # every id once
    return replies


def test_the_filled_in_sheet_imports_back_with_every_reply_and_id_intact(tmp_path, capsys):
    run_dir = hostile_run(tmp_path)
    sheet = tmp_path / "sheet.xlsx"
    texts = write_sheet(run_dir, sheet)
    assert _replies(sheet) == texts   # as psyq wrote it: every reply exactly (the CRs, the tab, the escapes)
    filled = fill_in(sheet)
    # Saved again by openpyxl as the rater's program: every id and reply intact. openpyxl writes a CR
    # raw; read back through lxml (installed with psyq: python-docx needs it) it stays a CR, through
    # the standard library's XML parser it would become LF (Excel writes it _x000D_, which psyq reads
    # as CR); the import accepts either line end and stores the ratings by id.
    read_back = _replies(sheet)
    assert read_back == texts
    assert main(["import", "ratings", str(sheet), "--run", str(run_dir), "--rubric", "empathy_ceb"]) == 0
    with RunStore(run_dir / "run.sqlite") as store:
        ratings = read_ratings(store, "empathy_ceb")
    assert len(ratings) == len(texts) * len(DIMENSIONS) and set(ratings["rater_id"]) == {"h7"}
    level = ratings.set_index(["response_id", "dimension"])["level"]
    assert all(level[(rid, d)] == int(v) for rid, levels in filled for d, v in levels.items())
    assert set(ratings["response_id"]) == texts.keys() and stored_texts(run_dir) == texts   # the texts unchanged


def _set_cell(sheet: Path, column: str, row: int, value) -> None:
    book = openpyxl.load_workbook(sheet)
    book["ratings"][f"{column}{row}"].value = value
    book["ratings"][f"{column}{row}"].data_type = "s"
    book.save(sheet)


@pytest.mark.parametrize("column,value,problem", [
    ("D", "a reply the rater edited", "!D3: reply: is not the text psyq wrote for"),
    ("E", "4", "!E3: cognitive: 4 must be one of the levels 1, 2, 3 of cognitive"),
    ("E", "=1+1", "!E3: cognitive: '=1+1' is not a number"),
    ("B", "r_unknown", "!B3: response_id: 'r_unknown' is not a rating target of this run"),
])
def test_a_bad_cell_of_the_filled_in_sheet_is_named_by_its_address_and_nothing_is_written(tmp_path, capsys,
                                                                                         column, value, problem):
    run_dir = hostile_run(tmp_path)
    sheet = tmp_path / "sheet.xlsx"
    write_sheet(run_dir, sheet)
    fill_in(sheet)
    _set_cell(sheet, column, 3, value)
    assert main(["import", "ratings", str(sheet), "--run", str(run_dir), "--rubric", "empathy_ceb"]) == 2
    err = capsys.readouterr().err
    assert f"{sheet}:ratings{problem}" in err and "Traceback" not in err
    with RunStore(run_dir / "run.sqlite") as store:
        assert read_ratings(store).empty


def test_a_csv_copy_of_the_filled_in_sheet_still_imports(tmp_path):
    # A rater who saved the sheet as CSV: read as before (cells stripped, so replies compared stripped).
    run_dir = hostile_run(tmp_path)
    sheet = tmp_path / "sheet.xlsx"
    texts = write_sheet(run_dir, sheet)
    fill_in(sheet)
    table = read_rating_workbook(sheet)
    buffer = io.StringIO()
    writer = csv.writer(buffer)   # as spreadsheets write CSV: CRLF rows, a cell with a line break quoted
    writer.writerow(table.header)
    writer.writerows(table.rows)
    copy = tmp_path / "sheet.csv"
    copy.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    assert main(["import", "ratings", str(copy), "--run", str(run_dir), "--rubric", "empathy_ceb"]) == 0
    with RunStore(run_dir / "run.sqlite") as store:
        assert len(read_ratings(store, "empathy_ceb")) == len(texts) * len(DIMENSIONS)


def test_vertical_tab_and_form_feed_are_written_escaped_and_read_back_exactly(tmp_path, capsys):
    """XML 1.0 allows no U+000B (vertical tab) or U+000C (form feed) in text (its Char production admits
    only tab, LF and CR below U+0020); openpyxl refuses such a cell. Written in the workbook's escape
    (_x000B_, _x000C_), they read back exactly, through openpyxl and through psyq's import."""
    run_dir = hostile_run(tmp_path)
    texts = ["a vertical\x0btab", "a form\x0cfeed", "both\x0b\x0c at once"]
    targets = [RatingTarget.reference(f"ctl_{k}", item_id="m01_stress", instrument="help_messages_psyq", text=text)
               for k, text in enumerate(texts)]
    with RunStore(run_dir / "run.sqlite") as store:
        put_targets(store, targets)
    sheet = tmp_path / "sheet.xlsx"
    stored = write_sheet(run_dir, sheet)
    assert "Traceback" not in capsys.readouterr().err
    cells = {row[1].value: row[3].value for row in openpyxl.load_workbook(sheet)["ratings"].iter_rows(min_row=2)}
    for target, text in zip(targets, texts):
        assert cells[target.response_id] == text.replace("\x0b", "_x000B_").replace("\x0c", "_x000C_")
        assert sheet_text(cells[target.response_id]) == text
    assert _replies(sheet) == stored


def test_a_reply_that_escaping_makes_longer_than_a_cell_exits_2_with_its_id(tmp_path, capsys):
    """32,000 characters fit a cell (32,767, Excel's limit), but not once each of the reply's 320 bell
    characters is written _x0007_ (7 characters for 1): 33,920. The check is on the text as written, so
    psyq refuses with its reason and the reply's id (exit 2, no traceback, no sheet)."""
    run_dir = hostile_run(tmp_path)
    reply = ("x" * 99 + "\x07") * 320
    assert len(reply) == 32_000 < 32_767 < len(reply.replace("\x07", "_x0007_")) == 33_920
    target = RatingTarget.reference("long", item_id="m01_stress", instrument="help_messages_psyq", text=reply)
    with RunStore(run_dir / "run.sqlite") as store:
        put_targets(store, [target])
    sheet = tmp_path / "sheet.xlsx"
    capsys.readouterr()
    assert main(["rating-sheet", str(run_dir), str(sheet), "--rubric", "empathy_ceb"]) == 2
    err = capsys.readouterr().err
    assert f"{sheet}: 1 repl(ies) longer than a spreadsheet cell holds (32,767 characters" in err
    assert target.response_id in err and "Traceback" not in err
    assert not sheet.exists()
