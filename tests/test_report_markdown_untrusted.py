"""A reply, a persona's text or a cell is shown as text in the report's Markdown too (issue 54):
report.md, methods.md and preregistration.md open in viewers that render Markdown (GitHub, VS Code,
Jupyter), so what a run or a file holds must not become markup there: no HTML (a script, an image
that loads), no link or image of Markdown's own, no emphasis, heading or list, and a ``|`` or a line
break must not split a table's row.

Each Markdown file is rendered here by a real CommonMark renderer, markdown-it-py (with GitHub's
tables and strikethrough), to HTML and to its tokens: every element made must be one the renderer
itself writes, each payload's text shown as it is (a line break as a space), and every row of every
table as many cells as its header.
"""

from __future__ import annotations

import asyncio
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml

from psyq import administer, load_study
from psyq.analysis.report import views, write_report
from psyq.analysis.report.render import render_markdown, table_files
from psyq.analysis.report.section import Section
from cli_helper import psyq_in_process
from runs_helper import MINI
from stub_server import StubServer, default_answer
from test_report_untrusted import IMAGE, SCRIPT

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (a dependency of rich) is not installed")

PAYLOADS = [SCRIPT, IMAGE, "[link](javascript:alert(1))", "![x](http://tracker.example/p.png)", "a|b",
            "one\ntwo", "# heading", "**bold**", "- item", "1. item", "[ ] task", "[ref]: javascript:alert(2)",
            "_under_ `code` ~~gone~~ <https://example.com/auto> &lt;b&gt; back\\slash", "<!-- hidden -->",
            "<details open><summary>x</summary>", "---", "    indented"]
"""Markup of every kind a viewer could make live, each alone (the table cells) and all in one text."""
ALL = " ".join(PAYLOADS)
WRITTEN = {"h1", "h2", "p", "ul", "li", "strong", "em", "a", "table", "thead", "tbody", "tr", "th", "td",
           "details", "summary"}
"""The elements the Markdown renderer itself writes (the details fold the extra readings)."""


def renderer():
    """CommonMark with raw HTML allowed (as its spec and GitHub's renderer do), GitHub's tables and strikethrough."""
    return markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])


def shown(text: str) -> str:
    """The text as the Markdown shows it: one line, its ends trimmed as a paragraph's or cell's are."""
    return text.replace("\n", " ").strip()


class Elements(HTMLParser):
    """The elements of rendered HTML (tag, attributes, text inside) and its whole text."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[list] = []
        self.open: list[list] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        element = [tag, dict(attrs), ""]
        self.elements.append(element)
        self.open.append(element)

    def handle_endtag(self, tag):
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        self.text.append(data)
        for element in self.open:
            element[2] += data

    def handle_comment(self, data):
        self.elements.append(["!--", {}, data])


def table_rows(markdown: str) -> list[list[str]]:
    """Every table of the Markdown as its lines, each split into cells as GitHub splits them (a ``|``
    after a backslash is inside a cell); the delimiter row left out."""
    tables, current = [], None
    for line in markdown.split("\n"):
        if line.startswith("|"):
            if current is None:
                current = []
                tables.append(current)
            cells, cell, escaped = [], "", False
            for char in line.strip()[1:]:
                if char == "|" and not escaped:
                    cells.append(cell)
                    cell = ""
                else:
                    cell += char
                escaped = char == "\\" and not escaped
            current.append(cells + ([cell] if cell.strip() else []))
        else:
            current = None
    return [[row for row in table if not set("".join(row)) <= set("-: ")] for table in tables]


def assert_text_only(markdown: str, payloads: list[str], *, min_tables: int = 0) -> Elements:
    """The Markdown rendered: no element but those the renderer writes, no link but to a table's
    CSV file, no strong text but "Table N", no heading made of a payload; each payload's text shown;
    every table's rows as wide as its header."""
    page = Elements(renderer().render(markdown))
    made = {tag for tag, _, _ in page.elements}
    assert made <= WRITTEN, made - WRITTEN
    assert "<script" not in renderer().render(markdown) and "<img" not in renderer().render(markdown)
    for tag, attrs, text in page.elements:
        assert tag != "a" or attrs["href"].startswith("report_tables/table"), attrs
        assert tag != "strong" or re.fullmatch(r"Table \d+", text), text
        assert tag not in ("h1", "h2") or text.strip() not in ("heading", "item"), text
    visible = "".join(page.text)                  # the entities read as the characters they stand for
    for payload in payloads:
        assert shown(payload) in visible, payload
    tables = table_rows(markdown)
    assert len(tables) >= min_tables
    for rows in tables:
        assert all(len(row) == len(rows[0]) for row in rows), [row for row in rows if len(row) != len(rows[0])]
    return page


def inlines(markdown: str) -> list[tuple[str, str]]:
    """Every run of inline text in the order written, as (what holds it, its text): a heading's level,
    "li" (a reading), "p" (a paragraph), "th"/"td" (a cell); emphasis marked ``*...*``, bold ``**...**``;
    any other inline element (a link, an image, code, HTML) as ``<type>``."""
    out, holder = [], []
    for token in renderer().parse(markdown):
        if token.nesting == 1:
            holder.append(token.tag)
        elif token.nesting == -1:
            holder.pop()
        elif token.type == "inline":
            text = ""
            for child in token.children:
                text += {"text": child.content, "em_open": "*", "em_close": "*", "strong_open": "**",
                         "strong_close": "**"}.get(child.type, f"<{child.type}>")
            where = next((h for h in reversed(holder) if h in ("h1", "h2", "li", "th", "td")), "p")
            out.append((where, text))
        elif token.type == "html_block":
            out.append(("html", token.content.strip()))
    return out


def test_every_text_the_markdown_renderer_writes_is_shown_as_it_is():
    frame = pd.DataFrame({"persona": PAYLOADS, "reply": PAYLOADS[::-1], **{f"column {k}": ["x"] * len(PAYLOADS)
                                                                         for k in range(4)},
                          ALL: pd.Series([ALL] * len(PAYLOADS), dtype=object)})   # > 6 columns: a constant one is a note
    section = Section(ALL, readings=PAYLOADS, details=PAYLOADS, note=ALL)
    section.add_table(ALL, frame)
    view = views.apa_table(frame)
    assert ALL not in view.frame.columns and view.notes == [f"{ALL.replace('_', ' ')}: {ALL}."]   # its label, its value
    markdown = render_markdown({"study": ALL, "run_id": "r1"}, [section], methods=ALL)
    assert_text_only(markdown, PAYLOADS, min_tables=1)
    expected = ([("h1", shown(f"psyq report: {ALL} (run r1)")), ("h2", "Methods (generated: paste and edit)"),
                 ("p", shown(ALL)), ("h2", shown(ALL))]
                + [("li", shown(p)) for p in PAYLOADS] + [("html", "<details><summary>More readings</summary>")]
                + [("li", shown(p)) for p in PAYLOADS] + [("html", "</details>")]
                + [("p", "**Table 1**"), ("p", f"*{shown(ALL)}*")]
                + [("th", shown(c)) for c in view.frame.columns]
                + [("td", shown(c)) for row in view.frame.to_numpy().tolist() for c in row]
                + [("p", f"*Note.* {shown(' '.join(view.notes))}"),
                   ("p", f"Full table: <link_open>{table_files([section])[0]}<link_close>"), ("p", f"*{shown(ALL)}*")])
    assert inlines(markdown) == expected


def test_a_line_break_or_a_bar_in_a_cell_keeps_the_row_whole():
    frame = pd.DataFrame({"a": ["one\ntwo", "x|y", "\\|", "end\\"], "b": ["1", "2", "3", "4"]})
    markdown = render_markdown({"study": "s", "run_id": "r"}, [Section("S", tables=[("T", frame)])])
    (rows,) = table_rows(markdown)
    assert [len(row) for row in rows] == [2] * 5
    cells = [text for where, text in inlines(markdown) if where == "td"]
    assert cells == ["one two", "1", "x|y", "2", "\\|", "3", "end\\", "4"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, Path]:
    """A run of the toy instrument whose personas' attributes and backstories, the model's replies and
    the model the replies name as served carry the payloads; reported, and pre-registered."""
    tmp = tmp_path_factory.mktemp("markdown_untrusted")
    personas = [{"id": f"p{i}", "backstory": ALL,
                 "attributes": {"gender": "female" if i % 2 else "male", "occupation": PAYLOADS[i],
                                "country": PAYLOADS[-1 - i]}} for i in range(len(PAYLOADS))]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    with StubServer(answer=lambda body: f"{ALL} {default_answer(body)}",
                    served=lambda body: {"model": IMAGE}) as stub:
        (tmp / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "untrusted", "instruments": [str(MINI)], "cohort": "cohort.yaml",
            "backends": [{"id": "stub", "kind": "openai", "base_url": stub.url, "model": "m"}],
            "protocol": {"answer": "text", "seed": 1}}))
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    html_path, md_path = write_report(result.run_dir.path, out_dir=tmp / "report")
    planned = psyq_in_process("preregister", tmp / "study.yaml", "--out", tmp / "prereg")
    assert planned.returncode == 0, planned.stderr
    return {"report": md_path, "methods": tmp / "report" / "methods.md",
            "preregistration": tmp / "prereg" / "preregistration.md"}


def test_the_reports_markdown_shows_replies_and_persona_texts_as_text(hostile):
    markdown = hostile["report"].read_text(encoding="utf-8")
    assert SCRIPT not in markdown and IMAGE not in markdown and not re.search(r"[^\\]\]\(javascript:", markdown)
    page = assert_text_only(markdown, PAYLOADS, min_tables=5)      # the cohort's table lists every attribute value
    # The model the replies named as served is in the methods paragraph, as text.
    assert any(tag == "p" and IMAGE in text for tag, _, text in page.elements)


def test_methods_md_and_the_preregistration_show_them_as_text_too(hostile):
    methods = hostile["methods"].read_text(encoding="utf-8")
    assert methods.count("\n") == 1
    page = assert_text_only(methods, [IMAGE])
    assert {tag for tag, _, _ in page.elements} == {"p"}
    # The plan lists each hand-written persona's attributes as JSON ("one\ntwo" is "one\\ntwo" there).
    assert_text_only(hostile["preregistration"].read_text(encoding="utf-8"), [json.dumps(p)[1:-1] for p in PAYLOADS],
                     min_tables=3)
