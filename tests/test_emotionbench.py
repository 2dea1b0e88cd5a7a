"""The PANAS-format state instrument, psyq's own situation set, and the EmotionBench importers.

Fixtures (tests/fixtures/import/eb_*, tests/fixtures/panas_humans.csv) were written by us: they
follow the column layout of EmotionBench's files (situations.csv / situations.json, the crowd
workbook's sheet Raw) with made-up content; PANAS item words are replaced by ids (item01 ...).
Expected values are worked by hand in the comments.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from psyq.engine.files.errors import InputError
from psyq.engine.importers import get_importer
from psyq.engine.importers.emotionbench import read_crowd, read_situations
from psyq.engine.design.instrument import load_instrument
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "import"
PA_POSITIONS = {1, 3, 5, 9, 10, 12, 14, 16, 17, 19}   # Watson et al. (1988) key, as in panas.yaml


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def check_situation_set(doc: dict) -> None:
    """The fields of COMMON.md's situation set format (psyq: situations/1)."""
    assert doc["psyq"] == "situations/1"
    assert set(doc) <= {"psyq", "id", "description", "content_source", "source", "terms", "situations"}
    assert doc["content_source"] in {"psyq", "user", "imported"}
    assert isinstance(doc["source"], str) and doc["source"]
    ids = [s["id"] for s in doc["situations"]]
    assert len(ids) == len(set(ids))
    for s in doc["situations"]:
        assert set(s) <= {"id", "emotion", "category", "text", "source"}
        assert s["emotion"] and s["text"].strip()


# ---------------------------------------------------------------- PANAS


def test_panas_validates_and_ships_keys_not_words():
    result = psyq("validate", "instruments/panas.yaml")
    assert result.returncode == 0, result.stderr
    inst = load_instrument(ROOT / "instruments" / "panas.yaml")
    assert inst.items_without_text == [str(k) for k in range(1, 21)]    # no item word shipped
    assert inst.item_texts is not None
    assert [i.id for i in inst.subscale_items("PA")] == [str(k) for k in sorted(PA_POSITIONS)]
    assert [i.id for i in inst.subscale_items("NA")] == [str(k) for k in range(1, 21) if k not in PA_POSITIONS]
    assert not any(i.reverse for i in inst.items)
    assert (inst.scale_min, inst.scale_max) == (1, 5)
    assert "right now" in inst.instructions
    template = (ROOT / "instruments" / "data" / "panas_texts_template.csv").read_text().splitlines()
    assert template[0] == "item_id,text" and [r.split(",")[0] for r in template[1:]] == [str(k) for k in range(1, 21)]


def test_panas_scores_human_answers(tmp_path):
    out = tmp_path / "s.csv"
    result = psyq("score", "instruments/panas.yaml", "tests/fixtures/panas_humans.csv", "--out", str(out))
    assert result.returncode == 0, result.stderr
    scores = pd.read_csv(out, index_col="respondent_id")
    # By hand: h1 answers 3 everywhere: PA = NA = 10 x 3 = 30.
    # h2 answers (k-1) % 5 + 1 to item k: 1 2 3 4 5 1 2 3 4 5 ...; PA items 1 3 5 9 10 12 14 16 17 19
    #   -> 1 + 3 + 5 + 4 + 5 + 2 + 4 + 1 + 2 + 4 = 31; all 20 items sum to 4 x 15 = 60, so NA = 29.
    # h3 answers 5 to PA items and 1 to NA items: PA = 50, NA = 10.
    assert scores["PA"].to_dict() == {"h1": 30, "h2": 31, "h3": 50}
    assert scores["NA"].to_dict() == {"h1": 30, "h2": 29, "h3": 10}


def test_panas_norm_provenance_is_read_by_psyq():
    inst = load_instrument(ROOT / "instruments" / "panas.yaml")
    text = (ROOT / "instruments" / "panas.yaml").read_text()
    # No norm could be read in an open source, so none ships; the file says why and warns that a
    # trait ("in general") norm is no baseline for state change.
    assert inst.norms == []
    assert "No norm sample is shipped" in text and "not a baseline" in text
    for sample in inst.norms:     # for norms added later: every provenance field psyq reads
        assert sample.verified and sample.verification and sample.table and sample.n > 1


# ---------------------------------------------------------------- psyq's situations


def test_psyq_everyday_situations_follow_the_format():
    doc = yaml.safe_load((ROOT / "instruments" / "situations" / "psyq_everyday.yaml").read_text())
    check_situation_set(doc)
    assert doc["id"] == "psyq_everyday" and doc["content_source"] == "psyq"
    per = pd.Series([s["emotion"] for s in doc["situations"]]).value_counts().to_dict()
    assert per == {e: 2 for e in ["anger", "anxiety", "fear", "sadness", "embarrassment", "guilt"]}


# ---------------------------------------------------------------- EmotionBench situations


def test_situations_csv_and_json_import_the_same_set(tmp_path):
    out = tmp_path / "eb.yaml"
    result = psyq("import", "emotionbench-situations", str(FIX / "eb_situations.csv"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "5 situations (anger 3, guilt 2)" in result.stderr
    doc = yaml.safe_load(out.read_text())
    check_situation_set(doc)
    assert doc["content_source"] == "imported" and "Huang" in doc["source"] and "NeurIPS 2024" in doc["source"]
    # Column Anger-0 (factor 1) holds two situations, Anger-1 (factor 2) one, Guilt-0 two.
    assert [s["id"] for s in doc["situations"]] == ["anger_f1_s1", "anger_f1_s2", "anger_f2_s1",
                                                    "guilt_f1_s1", "guilt_f1_s2"]
    assert doc["situations"][2]["category"] == "Broken Promises"
    from_json = read_situations(str(FIX / "eb_situations.json"))
    strip = lambda entries: [{k: v for k, v in e.items() if k != "source"} for e in entries]   # noqa: E731
    assert strip(from_json) == strip(doc["situations"])


@pytest.mark.parametrize("name, content, where", [
    ("bad.csv", "Anger-0,Oops\nA,B\nx,y\n", "bad.csv:1:2: header:"),
    ("gap.csv", "Anger-0,Guilt-0\nA,\nx,y\n", "gap.csv:2:2: factor:"),
    ("bad.json", '{"emotions": [\n  {"name": "Anger",, }\n]}', "bad.json:2:20:"),
])
def test_malformed_situations_name_file_line_column_and_exit_2(tmp_path, name, content, where):
    path = tmp_path / name
    path.write_text(content)
    result = psyq("import", "emotionbench-situations", str(path))
    assert result.returncode == 2
    assert where in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- EmotionBench crowd


def expected_change() -> list[dict]:
    # By hand from the fixture (columns C, D, E of the sheet; item k is row k + 3 before, k + 23 after):
    #   C (Angry_F1S1): before all 2 -> PA 20, NA 20; after PA items 1, NA items 4 -> PA 10, NA 40.
    #   D (Guilt_F1S2): before (k-1) % 5 + 1 -> PA 31, NA 29 (see test_panas_scores_human_answers);
    #                   after all 3 -> 30, 30.
    #   E (Angry_F2S1): before all 5 -> 50, 50; after all 1 -> 10, 10.
    return [
        {"respondent_id": "crowd_C", "emotion": "anger", "situation_id": "anger_f1_s1", "subscale": "PA", "before": 20, "after": 10},
        {"respondent_id": "crowd_C", "emotion": "anger", "situation_id": "anger_f1_s1", "subscale": "NA", "before": 20, "after": 40},
        {"respondent_id": "crowd_D", "emotion": "guilt", "situation_id": "guilt_f1_s2", "subscale": "PA", "before": 31, "after": 30},
        {"respondent_id": "crowd_D", "emotion": "guilt", "situation_id": "guilt_f1_s2", "subscale": "NA", "before": 29, "after": 30},
        {"respondent_id": "crowd_E", "emotion": "anger", "situation_id": "anger_f2_s1", "subscale": "PA", "before": 50, "after": 10},
        {"respondent_id": "crowd_E", "emotion": "anger", "situation_id": "anger_f2_s1", "subscale": "NA", "before": 50, "after": 10},
    ]


def as_xlsx(csv_path: Path, xlsx_path: Path) -> Path:
    """The CSV fixture as a workbook with a sheet Raw (numbers as numbers, as in crowd.xlsx)."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Raw"
    for row in csv.reader(io.StringIO(csv_path.read_text())):
        sheet.append([int(c) if c.isdigit() else (c or None) for c in row])
    book.create_sheet("Summary")
    book.save(xlsx_path)
    return xlsx_path


def test_crowd_sheet_becomes_the_human_change_csv(tmp_path):
    out = tmp_path / "humans.csv"
    result = psyq("import", "emotionbench-humans", str(FIX / "eb_crowd_raw.csv"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "3 respondents" in result.stderr
    table = pd.read_csv(out, keep_default_na=False)     # the subscale "NA" is not a missing value
    assert list(table.columns) == ["respondent_id", "emotion", "situation_id", "subscale", "before", "after"]
    assert table.to_dict("records") == expected_change()


def test_crowd_workbook_reads_like_its_csv_export(tmp_path):
    rows, notes = read_crowd(str(as_xlsx(FIX / "eb_crowd_raw.csv", tmp_path / "crowd.xlsx")))
    assert rows == expected_change() and notes == []


def test_crowd_sums_that_disagree_with_the_items_are_listed(tmp_path):
    lines = (FIX / "eb_crowd_raw.csv").read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith(",Positive Affect(General)"))
    lines[k] = ",Positive Affect(General),20,32,50"       # D's items sum to 31 (see above)
    path = tmp_path / "crowd.csv"
    path.write_text("\n".join(lines) + "\n")
    rows, notes = read_crowd(str(path))
    assert rows == expected_change()                      # the item sums are kept
    assert notes[0].startswith("1 of the sheet's own PA/NA sums differ")
    assert f"crowd.csv:{k + 1}:4:" in notes[1] and "is 32" in notes[1] and "is 31" in notes[1]


@pytest.mark.parametrize("edit, where", [
    (lambda rows: rows[0].__setitem__(3, "Guilt-1"), "crowd.csv:1:4: situation:"),
    (lambda rows: rows[5].__setitem__(2, "6"), "crowd.csv:6:3: answer:"),
    (lambda rows: rows[30].__setitem__(4, "a lot"), "crowd.csv:31:5: answer:"),
    (lambda rows: rows.__delitem__(10), "crowd.csv:4:2: labels:"),
])
def test_malformed_crowd_sheet_names_file_line_column_and_exits_2(tmp_path, edit, where):
    rows = list(csv.reader(io.StringIO((FIX / "eb_crowd_raw.csv").read_text())))
    edit(rows)
    path = tmp_path / "crowd.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    result = psyq("import", "emotionbench-humans", str(path))
    assert result.returncode == 2, result.stderr
    assert where in result.stderr and "Traceback" not in result.stderr


def test_broken_workbook_is_an_input_error(tmp_path):
    path = tmp_path / "crowd.xlsx"
    path.write_bytes(b"not a zip file")
    with pytest.raises(InputError, match="not a readable .xlsx workbook"):
        get_importer("emotionbench-humans").convert(str(path), {})


def stream_workbook(path: Path, rows: int, columns: int, dimension: str | None = None, row_step: int = 1) -> Path:
    """A workbook written part by part: one sheet Raw of `rows` rows of `columns` cells holding 1
    (rows numbered 1, 1 + row_step, ...), with a <dimension ref> when given. The same row
    repeated compresses about 400 to 1, so millions of cells take little room on disk."""
    import zipfile

    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006/relationships"
    cells = b"<c><v>1</v></c>" * columns
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>'))
        z.writestr("_rels/.rels", f'<Relationships xmlns="{pkg}"><Relationship Id="rId1" '
                                  f'Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
        z.writestr("xl/workbook.xml", f'<workbook xmlns="{main}" xmlns:r="{rel}"><sheets>'
                                      '<sheet name="Raw" sheetId="1" r:id="rId1"/></sheets></workbook>')
        z.writestr("xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{pkg}"><Relationship Id="rId1" '
                                                 f'Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>')
        with z.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet:
            sheet.write(f'<worksheet xmlns="{main}">'.encode())
            if dimension:
                sheet.write(f'<dimension ref="{dimension}"/>'.encode())
            sheet.write(b"<sheetData>")
            for r in range(rows):
                sheet.write(b'<row r="%d">' % (1 + r * row_step) + cells + b"</row>")
            sheet.write(b"</sheetData></worksheet>")
    return path


def test_workbook_that_unzips_to_millions_of_cells_is_refused_at_once(tmp_path, monkeypatch):
    # 3000 rows x 1000 cells: 3 million cells, about 45 MB unzipped, about 0.1 MB on disk.
    # Before the limit openpyxl spent over a minute on such a file (issue 24). "At once": refused
    # from the zip directory's sizes, before openpyxl is asked to open the workbook at all.
    import openpyxl

    path = stream_workbook(tmp_path / "crowd.xlsx", 3000, 1000, dimension="A1:ALL3000")
    assert path.stat().st_size < 400_000
    opened: list = []
    monkeypatch.setattr(openpyxl, "load_workbook", lambda *a, **k: opened.append(a) or pytest.fail("opened"))
    result = psyq_in_process("import", "emotionbench-humans", path, "--out", tmp_path / "humans.csv")
    assert result.returncode == 2, result.stderr
    assert f"{path}: the workbook unzips to 45," in result.stderr
    assert "at most 16,777,216 bytes unzipped" in result.stderr and "Traceback" not in result.stderr
    assert opened == []
    assert not (tmp_path / "humans.csv").exists()


def test_sheet_declaring_more_cells_than_the_limit_is_refused_before_reading_it(tmp_path):
    # A few real cells, but a <dimension> of 702 columns x 5000 rows, to which openpyxl pads every row.
    path = stream_workbook(tmp_path / "crowd.xlsx", 3, 3, dimension="A1:ZZ5000")
    with pytest.raises(InputError, match=r"crowd.xlsx: dimension: sheet 'Raw' declares the range A1:ZZ5000 "
                                         r"\(3,510,000 cells\); psyq reads sheets of at most 500,000 cells"):
        read_crowd(str(path))


@pytest.mark.parametrize("rows, columns, row_step, stopped_at", [
    (10, 200, 1, 6),          # 1200 cells: the 6th row passes 1000
    (2, 1, 999_999, 1001),    # two cells, rows 1 and 1,000,000: openpyxl fills the gap with empty rows
])
def test_sheet_cells_are_counted_while_reading_when_the_dimension_is_missing(tmp_path, monkeypatch,
                                                                              rows, columns, row_step, stopped_at):
    monkeypatch.setattr("psyq.engine.importers.emotionbench.MAX_SHEET_CELLS", 1000)
    path = stream_workbook(tmp_path / "crowd.xlsx", rows, columns, row_step=row_step)
    with pytest.raises(InputError, match=rf"crowd.xlsx:{stopped_at}: sheet 'Raw' holds "
                                         r"more than 1,000 cells"):
        read_crowd(str(path))


# ---------------------------------------------------------------- a user's real copy (optional)

EB_DIR = os.environ.get("PSYQ_EMOTIONBENCH_DIR")   # a checkout of github.com/CUHK-ARISE/EmotionBench


@pytest.mark.skipif(not EB_DIR, reason="set PSYQ_EMOTIONBENCH_DIR to a copy of EmotionBench (not shipped: GPL-3)")
def test_real_crowd_workbook_reproduces_its_own_summary_sheet():
    import openpyxl
    from scipy import stats

    workbook = Path(EB_DIR) / "results" / "PANAS Test" / "crowd.xlsx"
    rows, notes = read_crowd(str(workbook))
    assert notes == []                        # every sheet sum equals the sum of its items
    change = pd.DataFrame(rows)
    summary = list(openpyxl.load_workbook(workbook, read_only=True, data_only=True)["Summary"].iter_rows(values_only=True))
    # The Summary sheet: under each header row (s1_mean, s1_sd, s1_n, s2_mean ...) a row of numbers,
    # PA first, then NA; s1 = after, s2 = before (its paired t is s1 vs s2).
    stats_rows = [summary[k + 1] for k, row in enumerate(summary) if len(row) > 1 and row[1] == "s1_mean"]
    for subscale, row in zip(("PA", "NA"), stats_rows, strict=True):
        mine = change[change.subscale == subscale]
        assert row[3] == row[6] == len(mine)
        assert mine["after"].mean() == pytest.approx(row[1], abs=1e-6)
        assert mine["before"].mean() == pytest.approx(row[4], abs=1e-6)
        assert stats.ttest_rel(mine["after"], mine["before"]).statistic == pytest.approx(row[11], abs=1e-6)


@pytest.mark.parametrize("fmt, name", [("emotionbench-situations", "s.json"), ("emotionbench-situations", "s.csv"),
                                       ("emotionbench-humans", "crowd.csv"), ("emotionbench-humans", "crowd.xlsx")])
def test_not_a_regular_file_is_refused(tmp_path, fmt, name):
    with pytest.raises(InputError, match="a device"):
        get_importer(fmt).convert("/dev/zero", {})
    with pytest.raises(InputError):
        get_importer(fmt).convert(str(tmp_path / name), {})    # does not exist
