"""`psyq report RUN --format docx`: the report for Word (analysis/report/word.py).

A run of the IRI over the stub server (16 personas and the baseline, 2 repeats) is reported against
30 pattern people with ``--format docx``; the .docx is read back with python-docx and checked against
the files the same command wrote beside it:

* every table cell against the CSV file of its table: the CSV is read back (its values; the
  section's frame gives each column's type, which a CSV does not keep) and printed by the table's
  view, and that must be the .docx's cell, character for character; the .docx's cells are also the
  HTML table's (report.html, parsed), so CSV → HTML → Word is one chain; the CSV's values are
  the section's frame's (what the statistics computed);
* the APA 7 layout read from the XML: horizontal rules only (top and bottom of the table, under the
  header row; no vertical rule, none between body rows), "Table N" bold and the title in italics
  above, the note below; figures with "Figure N" and their title above, the same PNG bytes as the
  HTML's;
* the order: the title, then the verdict, then the methods paragraph (methods.md's text), then the
  HTML's sections in the HTML's order;
* text from runs and files stays text (no field code, no hyperlink, no markup).

Where the layout was looked at: docs/images/report_docx_page1.png and report_docx_table.png, from
docs/images/report_docx_pages.py (LibreOffice, not needed here).
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import docx
import pandas as pd
import pytest
import yaml
from docx.oxml.ns import qn

from psyq import administer, load_study
from psyq.analysis.report import views, word
from psyq.analysis.report.render import full_frame, markdown_text, table_files
from psyq.analysis.report.section import Section
from cli_helper import psyq_in_process
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    """The run reported with --format docx: the output folder, the sections render_docx was given
    (recorded on the way, so the run is reported once), and the document read back."""
    tmp = tmp_path_factory.mktemp("docx")
    personas = [{"id": f"p{i:02d}", "attributes": {"gender": "female" if i % 2 else "male", "age": 20 + 3 * i}}
                for i in range(16)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": True,
                                                     "personas": personas}))
    study = {"psyq": "study/1", "id": "docx_test", "instruments": [str(ROOT / "instruments" / "iri.yaml")],
             "cohort": "cohort.yaml",
             "backends": [{"id": "stub", "kind": "openai", "base_url": "", "model": "stub-model", "concurrency": 8}],
             "protocol": {"answer": "text", "option_order": "counterbalanced", "repeats": 2, "seed": 3}}
    with StubServer() as stub:
        study["backends"][0]["base_url"] = stub.url
        (tmp / "study.yaml").write_text(yaml.safe_dump(study))
        run = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None)).run_dir.path
    humans = pd.DataFrame({str(i): [(r * i + r // 3) % 5 for r in range(30)] for i in range(1, 29)})
    humans.insert(0, "respondent_id", [f"h{r}" for r in range(30)])
    humans.to_csv(tmp / "humans.csv", index=False)
    given = {}
    render = word.render_docx

    def recording(manifest, sections, **kwargs):
        given["sections"] = sections
        return render(manifest, sections, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(word, "render_docx", recording)
        out = psyq_in_process("report", run, "--out", tmp / "out", "--human", f"iri={tmp / 'humans.csv'}",
                              "--format", "docx")
    assert out.returncode == 0, out.stderr
    assert f"word -> {tmp / 'out' / 'report.docx'}" in out.stdout
    return {"out": tmp / "out", "sections": given["sections"],
            "document": docx.Document(str(tmp / "out" / "report.docx"))}


class _HtmlTables(HTMLParser):
    """The cells of every APA table (``<table class="... apa">``) of report.html, as text, and the
    section headings and figure images in order."""

    def __init__(self):
        super().__init__()
        self.tables, self.headings, self.images = [], [], []
        self._in_table = self._cell = self._heading = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "apa" in (attrs.get("class") or "").split():
            self._in_table = True
            self.tables.append([])
        elif self._in_table and tag == "tr":
            self.tables[-1].append([])
        elif self._in_table and tag in ("th", "td"):
            self._cell = []
        elif tag == "h2":
            self._heading = []
        elif tag == "img":
            self.images.append(base64.b64decode(attrs["src"].split(",", 1)[1]))

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False
        elif self._in_table and tag in ("th", "td"):
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "h2":
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self._heading.append(data)


@pytest.fixture(scope="module")
def html_report(report) -> _HtmlTables:
    parser = _HtmlTables()
    parser.feed((report["out"] / "report.html").read_text(encoding="utf-8"))
    return parser


def _cells(table) -> list[list[str]]:
    return [[cell.text for cell in row.cells] for row in table.rows]


def _from_csv(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """The table's frame read back from its CSV file: the values are the file's; a CSV keeps no
    types, so each column is read as the section's frame holds it (an object column's cell as the
    type of the frame's cell: a bool, a number or text), and the index columns are made the index
    again."""
    full = full_frame(frame)
    text = [c for c in full.columns if full[c].dtype == object or pd.api.types.is_string_dtype(full[c])]
    read = _read_csv(path, dtype={i: object for i, c in enumerate(full.columns) if c in text})
    assert list(read.columns) == [str(c) for c in full.columns]
    read.columns = full.columns
    for col in full.columns:
        if col in text:
            read[col] = [_as_type(text, like) for text, like in zip(read[col], full[col])]
        else:
            read[col] = read[col].astype(full[col].dtype)
    if not isinstance(frame.index, pd.RangeIndex):
        keys = list(full.columns[:frame.index.nlevels])
        read = read.set_index(keys)
        read.index.names = frame.index.names
    return read


def _read_csv(path: Path, dtype: dict | None = None) -> pd.DataFrame:
    """The CSV file as written: its header as it is (pandas would name an empty one "Unnamed: 1"),
    only an empty field missing."""
    with open(path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], header=None, skiprows=1, dtype=dtype)
    frame.columns = header
    return frame


def _as_type(text, like):
    if pd.isna(text):          # an empty field: empty text in a text cell, else the frame's kind of missing
        return "" if isinstance(like, str) else like if like is None or like is pd.NA else float("nan")
    if isinstance(like, bool):
        return {"True": True, "False": False}[text]
    if isinstance(like, int):
        return int(text)
    if isinstance(like, float):
        return float(text)
    return text


def test_every_cell_is_its_csv_value_as_the_html_table_prints_it(report, html_report):
    tables = [t for s in report["sections"] for t in s.tables]
    files = table_files(report["sections"])
    document = report["document"]
    assert len(tables) == len(files) == len(document.tables) == len(html_report.tables) >= 20
    checked = 0
    for table, name, grid, html_cells in zip(tables, files, document.tables, html_report.tables):
        cells = _cells(grid)
        assert cells == html_cells, name
        rebuilt = _from_csv(report["out"] / name, table.frame)
        # The CSV holds what the statistics computed (floats written in full): the frame, value for value.
        pd.testing.assert_frame_equal(rebuilt, table.frame, check_dtype=False, check_index_type=False,
                                      check_column_type=False, obj=name)
        shown = views.apa_table(rebuilt, table.view).frame
        assert cells[0] == [str(c) for c in shown.columns], name
        assert cells[1:] == [[word.cell_text(v) for v in row] for row in shown.itertuples(index=False)], name
        checked += sum(map(len, cells[1:]))
    assert checked > 500


def test_a_cell_is_formatted_once_by_the_tables_view(report):
    """Spot checks by hand that the chain is not vacuous: the HTML's and Word's cells are APA's, not
    the CSV's raw numbers (a true minus, no leading zero, p < .001, two decimals)."""
    document = report["document"]
    text = "\n".join(c for t in document.tables for row in _cells(t) for c in row)
    assert "\u2212" in text and "-0." not in text
    assert re.search(r"(?<![\d.])\.\d{2,3}\b", text)          # e.g. ".72", no leading zero
    norms = next(t for t in document.tables if _cells(t)[0][:3] == ["Subscale", "Norm group", "n"])
    row = _cells(norms)[1]
    assert re.fullmatch(r"\d+\.\d{2}\xa0\(\d+\.\d{2}\)", row[3])     # M (SD) with two decimals, kept on one line


def _borders(element, path: str) -> dict[str, str]:
    found = element.find(path)
    return {} if found is None else {b.tag[len(W):]: b.get(qn("w:val")) for b in found}


def test_tables_have_horizontal_rules_only(report):
    for table in report["document"].tables:
        tbl = table._tbl
        assert _borders(tbl, f"{W}tblPr/{W}tblBorders") == {
            "top": "single", "bottom": "single", "left": "nil", "right": "nil", "insideH": "nil", "insideV": "nil"}
        rows = tbl.findall(f"{W}tr")
        for cell in rows[0].findall(f"{W}tc"):            # the rule under the header row
            assert _borders(cell, f"{W}tcPr/{W}tcBorders") == {"bottom": "single"}
        for row in rows[1:]:                               # no other rule, no vertical one
            assert all(cell.find(f"{W}tcPr/{W}tcBorders") is None for cell in row.findall(f"{W}tc"))
        assert rows[0].find(f"{W}trPr/{W}tblHeader") is not None      # repeated on every page
    xml = report["document"].element.xml
    assert "w:insideV w:val=\"single\"" not in xml and "<w:left w:val=\"single\"" not in xml


def _body(document) -> list:
    """The body's paragraphs and tables, in order."""
    return [docx.text.paragraph.Paragraph(e, document) if e.tag == f"{W}p" else e
            for e in document.element.body if e.tag in (f"{W}p", f"{W}tbl")]


def test_tables_and_figures_are_numbered_and_titled_as_apa_asks(report, html_report):
    body, sections = _body(report["document"]), report["sections"]
    tables = [t for s in sections for t in s.tables]
    grids = [i for i, e in enumerate(body) if not isinstance(e, docx.text.paragraph.Paragraph)]
    for number, (i, table) in enumerate(zip(grids, tables), start=1):
        label, title = body[i - 2], body[i - 1]
        assert label.text == f"Table {number}" and all(r.bold for r in label.runs)
        assert title.text == table.caption and all(r.italic for r in title.runs)
        notes = views.apa_table(table.frame, table.view).notes
        after = body[i + 1]
        if notes:
            assert after.text == "Note. " + " ".join(notes) and after.runs[0].text == "Note." and after.runs[0].italic
        else:
            assert not after.text.startswith("Note.")
    figures = [caption for s in sections for caption, _ in s.figures]
    labels = [i for i, e in enumerate(body) if isinstance(e, docx.text.paragraph.Paragraph)
              and re.fullmatch(r"Figure \d+", e.text)]
    assert len(labels) == len(figures) == len(html_report.images) > 5
    for number, (i, caption) in enumerate(zip(labels, figures), start=1):
        assert body[i].text == f"Figure {number}" and body[i].runs[0].bold
        assert body[i + 1].text == caption and body[i + 1].runs[0].italic
        assert body[i + 2]._p.findall(f".//{W}drawing")           # the picture below its caption
    document = report["document"]
    blobs = [document.part.related_parts[shape._inline.graphic.graphicData.pic.blipFill.blip.embed].blob
             for shape in document.inline_shapes]
    assert blobs == html_report.images                               # the same PNGs as the HTML's


def test_the_verdict_comes_first_then_the_methods_then_the_html_order(report, html_report):
    document = report["document"]
    styled = [(p.style.name, p.text) for p in document.paragraphs if p.style.name in ("Title", "Heading 1")]
    assert styled[0][0] == "Title" and styled[0][1].startswith("psyq report: docx_test (run ")
    assert styled[1] == ("Heading 1", "Can the personas stand in for people?")
    assert [text for _, text in styled[1:]] == html_report.headings
    assert styled[2][1] == "Methods (generated: paste and edit)"
    methods = (report["out"] / "methods.md").read_text(encoding="utf-8").strip()
    assert methods in [markdown_text(p.text) for p in document.paragraphs]     # methods.md: as Markdown shows text


def test_text_from_runs_and_files_stays_text():
    hostile = ["=HYPERLINK(\"http://example.com\",\"x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
               "<w:fldSimple w:instr=\"DATE\"/>", "{ DATE \\@ \"yyyy\" }", "a\x00b\x1bc"]
    section = Section(hostile[4], readings=hostile, note=hostile[0])
    section.add_table(hostile[1], pd.DataFrame({"persona": hostile, "text": hostile[::-1]}))
    data = word.render_docx({"study": hostile[0], "run_id": hostile[5]}, [section], methods=hostile[3])
    document = docx.Document(io.BytesIO(data))
    xml = document.element.xml
    for code in ("w:fldChar", "w:instrText", "w:fldSimple", "w:hyperlink"):
        assert f"<{code}" not in xml
    safe = [h.replace("\x00", "\ufffd").replace("\x1b", "\ufffd") for h in hostile]
    texts = [p.text for p in document.paragraphs]
    assert texts[0] == f"psyq report: {safe[0]} (run {safe[5]})" and texts[3] == safe[3]
    assert texts[4] == safe[4] and texts[5:12] == safe and texts[-1] == safe[0]
    assert [p.text for p in document.paragraphs if p.text.startswith("Table 1")] == ["Table 1"]
    plain = [[c.replace("\xa0", " ") for c in row] for row in _cells(document.tables[0])]   # short cells: no-break spaces
    assert plain == [["persona", "text"]] + [[a, b] for a, b in zip(safe, safe[::-1])]


def test_without_format_docx_there_is_no_word_report(tmp_path):
    from psyq.analysis.report.build import DOCX_NAME
    from runs_helper import make_mini_run

    run = make_mini_run(tmp_path, n_personas=3, repeats=1)
    assert psyq_in_process("report", run, "--out", tmp_path / "out").returncode == 0
    assert (tmp_path / "out" / "report.html").exists() and not (tmp_path / "out" / DOCX_NAME).exists()


def test_a_figure_is_drawn_once_for_both_reports(monkeypatch):
    """render_html and render_docx ask FigureImages for the same figures: each is drawn once."""
    from psyq.analysis.report import render
    from psyq.analysis.report.figures import message_figure

    drawn = []
    draw = render.figure_to_data_uri
    monkeypatch.setattr(render, "figure_to_data_uri", lambda fig: drawn.append(fig) or draw(fig))
    fig = message_figure("one figure")
    with render.FigureImages(parallel=False) as images:
        images.add([("A figure", fig)])
        assert images.uri(fig) == images.uri(fig)
    assert drawn == [fig]
