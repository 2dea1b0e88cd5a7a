"""Rendering: the sections of a report as one self-contained HTML file (figures inline, tables in
APA style with the full table behind a collapsible section and in a CSV file) and as Markdown.

Every text that comes from a run or a file (a reply, a persona's text, a cell) is escaped: it is
shown as text, never as markup.

Example:
    >>> html = render_html({"study": "s", "run_id": "r"}, [Section("Study", readings=["<b>x</b>"])])
    >>> "&lt;b&gt;x&lt;/b&gt;" in html
    True
"""

from __future__ import annotations

import html
import multiprocessing
import os
import pickle
import re
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import pandas as pd

from psyq.analysis.report import apa, views
from psyq.analysis.report.figures import figure_to_data_uri
from psyq.analysis.report.section import Section, Table

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:.3em 0 .4em}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;overflow-wrap:break-word}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}.reading{background:#f6f8fa;border-left:4px solid #4a7ab5;padding:.4em .8em;margin:.3em 0}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}img{max-width:100%;height:auto}.note{font-size:.8em;color:#555}
nav a{margin-right:1em}
.apa-table{margin:1.4em 0}
.table-number{font-weight:bold;margin:0}.table-title{font-style:italic;margin:.1em 0 .3em}
table.apa{border:none;border-top:2px solid #222;border-bottom:2px solid #222;max-width:100%}
table.apa th{background:none;border:none;border-bottom:1px solid #222;vertical-align:bottom}
table.apa td{border:none;vertical-align:top;text-align:left;overflow-wrap:break-word}table.apa th{text-align:left}
table.apa th,table.apa td{padding:3px 5px}
.methods h2{margin-top:.2em}
.table-note{font-size:.85em;margin:.2em 0}
details.full{font-size:.85em;margin:.2em 0 1em}details.full summary{cursor:pointer;color:#4a7ab5}
details.full .wide{overflow-x:auto;max-width:100%}details.full table{font-size:.85em}
.methods{border:1px solid #4a7ab5;background:#fbfcfe;padding:.6em 1em;margin:1em 0}
.methods textarea{width:100%;box-sizing:border-box;min-height:14em;font:inherit;font-size:.95em;line-height:1.4;border:1px solid #ccc;padding:.5em}
.methods .methods-print{display:none}
@page{size:A4;margin:16mm 14mm}
@media print{
 body{max-width:none;margin:0;padding:0;font-size:10pt}
 nav,.no-print,.methods textarea,.methods button{display:none}
 details.full summary{list-style:none;color:#555}
 .methods .methods-print{display:block;white-space:pre-wrap}
 h2{break-before:page;page-break-before:always}
 h2.first{break-before:avoid;page-break-before:avoid}
 h2,h3,.table-number,.table-title{break-after:avoid;page-break-after:avoid}
 table{font-size:8.5pt;width:auto;max-width:100%}
 thead{display:table-header-group}tr,img,figure{break-inside:avoid;page-break-inside:avoid}
 img{max-width:100%;max-height:24cm;object-fit:contain}
 details.full .wide{overflow:visible}details.full table{font-size:6.5pt}
 .reading{background:none;border-left:2px solid #888}
 a{color:inherit;text-decoration:none}
}
"""


def _round(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].map(lambda x: "" if pd.isna(x) else (
                f"{x:.3g}" if abs(x) < 1e-3 and x != 0 else f"{x:.3f}".rstrip("0").rstrip(".")).replace("-", apa.MINUS))
    return out


TABLE_DIR = "report_tables"
"""Folder (next to report.html) of the full tables as CSV files, one per numbered table."""


def table_files(sections: list[Section]) -> list[str]:
    """The CSV file of every table, in the order the tables are numbered (Table 1, 2, ...),
    relative to the report: ``report_tables/table01_run.csv`` and so on.

    Example:
        >>> table_files([Section("Study", tables=[("Run", pd.DataFrame())])])
        ['report_tables/table01_run.csv']
    """
    names = []
    for caption, _ in (t for s in sections for t in s.tables):
        slug = "".join(c if c.isalnum() else "_" for c in caption.lower().split("(")[0].strip())[:40].strip("_")
        names.append(f"{TABLE_DIR}/table{len(names) + 1:02d}_{slug or 'table'}.csv")
    return names


def full_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with every column, its index a column when it carries labels (as written to CSV)."""
    return frame.reset_index() if not isinstance(frame.index, pd.RangeIndex) else frame


WORD_COMMA = re.compile(r"(?<=[^\s\d,<>]),(?=[^\s,<>])|(?<=\d),(?=[^\s\d,<>])")
"""A comma joining two words with no space (a condition's levels: ``asking=ssr,temperature=0.7,persona=plain``),
not one inside a number (1,973)."""


def break_after_commas(cells: str) -> str:
    """Escaped table cells with a line-break opportunity (``<wbr>``) after each comma joining two words,
    so that a long label of a condition wraps in its cell rather than widening the table past the
    page; the text, and what is copied or searched, is unchanged. Numbers (1,973) and lists with
    spaces keep their commas as they are.

    Example:
        >>> break_after_commas("<td>a · asking=ssr,t=0.7,persona=plain</td><td>1,973</td><td>[0.1, 0.2]</td>")
        '<td>a · asking=ssr,<wbr>t=0.7,<wbr>persona=plain</td><td>1,973</td><td>[0.1, 0.2]</td>'
    """
    return WORD_COMMA.sub(",<wbr>", cells)


PART_BREAK = re.compile("\xa0(?=[(\\[])|:\xa0")
"""Where a cell kept on one line (:func:`~psyq.analysis.report.tables.assemble`: its spaces non-breaking)
may break when the table is short of room: before the interval or the parenthesis after a value
("−0.20 [−0.71, 0.31]", "−6.71 (1134.0)", "not shown (p .994)") and after the colon of a norm group
("briganti2018: women"); never inside the interval or the value."""


def break_between_parts(cells: str) -> str:
    """Escaped table cells with a line-break opportunity (``<wbr>``) at each :data:`PART_BREAK`, so that
    a table of many statistics wraps a value above its interval rather than widening the table past
    the page (a table lays its columns out wider than a line only when it has the room); the text,
    and what is copied or searched, is unchanged.

    Example:
        >>> break_between_parts("<td>−0.20\xa0[−0.71,\xa00.31]</td><td>briganti2018:\xa0men</td><td><\xa0.001</td>")
        '<td>−0.20\xa0<wbr>[−0.71,\xa00.31]</td><td>briganti2018:\xa0<wbr>men</td><td><\xa0.001</td>'
    """
    return PART_BREAK.sub(lambda m: m.group() + "<wbr>", cells)


def _html_table(number: int, table: Table, csv_name: str) -> str:
    """One numbered table: number and title above, the APA view its section named, notes below,
    and the full table behind a collapsible section with a link to its CSV file."""
    caption, frame = table
    view = views.apa_table(frame, table.view)
    full = full_frame(frame)
    body = break_between_parts(break_after_commas(
        view.frame.to_html(index=False, border=0, na_rep="", classes="apa", escape=True)))
    note = ("<p class='table-note'><i>Note.</i> " + html.escape(" ".join(view.notes)) + "</p>") if view.notes else ""
    wide = _round(full).to_html(index=False, border=0, na_rep="")
    return (f"<div class='apa-table'><p class='table-number'>Table {number}</p>"
            f"<p class='table-title'>{html.escape(caption)}</p>{body}{note}"
            f"<details class='full'><summary>Full table: {len(full)} rows × {len(full.columns)} columns "
            f"(<a class='csv' href='{html.escape(csv_name)}'>{html.escape(csv_name)}</a>)</summary>"
            f"<div class='wide'>{wide}</div></details></div>")


def _methods_html(methods: str, first: bool = True) -> str:
    """The generated methods paragraph in a box the researcher can copy and edit."""
    text = html.escape(methods)
    heading = "<h2 class='first'>" if first else "<h2>"
    return ("<section class='methods' id='methods'>" + heading + "Methods (generated: paste and edit)</h2>"
            "<p class='note no-print'>Written from the run's manifest, study, instruments and answers; "
            "[fill in] marks what the run does not record. Also saved as methods.md.</p>"
            f"<textarea id='methods-text' readonly aria-label='Methods paragraph'>{text}</textarea>"
            f"<div class='methods-print'>{text}</div>"
            "<button type='button' class='no-print' onclick=\"navigator.clipboard.writeText("
            "document.getElementById('methods-text').value)\">Copy</button></section>")


def _figure_uri(data: bytes) -> str:
    """A pickled figure drawn as a PNG data URI (in the figure process of :class:`FigureImages`)."""
    return figure_to_data_uri(pickle.loads(data))


def _started() -> None:
    """Nothing: submitted first, so that the figure process is forked while this one is still small."""


class FigureImages:
    """The report's figures drawn as PNG data URIs, each once, by the one function that draws them
    (:func:`psyq.analysis.report.figures.figure_to_data_uri`), in a second process while this one
    computes the statistics (the report is single-threaded; the figures take a third of it).

    :meth:`add` hands over the figures of a section as soon as it is built; :meth:`uri` gives a
    figure's image, waiting for it if need be, or drawing it here when there is no second process
    (one core, no ``fork``, other Python threads running, `parallel` False) or it failed. The second
    process is forked when the object is made, before the run's answers are read, so it holds little
    memory. The images are the same bytes either way (a figure pickled and drawn there is drawn as it
    would be here).

    Example:
        >>> from psyq.analysis.report.figures import message_figure
        >>> fig = message_figure("no norms for this instrument")
        >>> with FigureImages(parallel=False) as images:
        ...     images.add([("A figure", fig)])
        ...     images.uri(fig)[:22]
        'data:image/png;base64,'
    """

    def __init__(self, parallel: bool = True):
        self._futures: dict[int, Future] = {}
        self._figures: dict[int, Any] = {}
        self._uris: dict[int, str] = {}       # drawn once for both the HTML and the Word report
        self._pool: ProcessPoolExecutor | None = None
        # Forked only from a process with no other Python thread (a notebook's kernel, the viewer): a fork
        # copies the locks other threads hold, and the child could wait on them for ever.
        if (parallel and (os.cpu_count() or 1) > 1 and "fork" in multiprocessing.get_all_start_methods()
                and threading.active_count() == 1):
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
            self._pool.submit(_started).result()

    @property
    def in_second_process(self) -> bool:
        """Whether the figures are drawn in a second process (else each here, when asked for)."""
        return self._pool is not None

    def __enter__(self) -> FigureImages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, figures: Iterable[tuple[str, Any]]) -> None:
        """Start drawing these (caption, figure) pairs (a section's figures)."""
        for _, fig in figures:
            key = id(fig)
            if key in self._figures:
                continue
            self._figures[key] = fig
            if self._pool is not None:
                try:
                    self._futures[key] = self._pool.submit(_figure_uri, pickle.dumps(fig))
                except Exception:         # a figure that cannot be pickled, a pool that broke: drawn here
                    pass

    def uri(self, fig: Any) -> str:
        """The figure's PNG data URI (drawn once, however often asked for)."""
        key = id(fig)
        if key in self._uris:
            return self._uris[key]
        future = self._futures.pop(key, None)
        uri = None
        if future is not None:
            try:
                uri = future.result()
            except Exception:
                pass
        uri = uri or figure_to_data_uri(fig)
        if key in self._figures:              # kept alive by self._figures: its id is not reused
            self._uris[key] = uri
        return uri

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def render_html(manifest: Mapping[str, Any], sections: list[Section], *, methods: str | None = None,
                images: FigureImages | None = None) -> str:
    """The whole report as one HTML document (figures inline): the methods paragraph (when given)
    first, then every section; tables numbered, in APA style, with the full table behind a
    collapsible section linking to its CSV file (see :func:`table_files`). `images`, when given, has
    the figures' images (drawn while the report was being built); otherwise each is drawn here."""
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>psyq report: "
             f"{html.escape(manifest['study'])}</title><style>{CSS}</style></head><body>",
             f"<h1>psyq report: {html.escape(manifest['study'])} <small>(run {html.escape(manifest['run_id'])})</small></h1>",
             "<nav>" + "".join(f"<a href='#s{i}'>{html.escape(s.title)}</a>" for i, s in enumerate(sections) if s.lead)
             + ("<a href='#methods'>Methods</a>" if methods else "")
             + "".join(f"<a href='#s{i}'>{html.escape(s.title)}</a>" for i, s in enumerate(sections) if not s.lead)
             + "</nav>"]
    files = iter(table_files(sections))
    number = 0
    for i, section in enumerate(sections):
        if methods and not section.lead and (i == 0 or sections[i - 1].lead):
            parts.append(_methods_html(methods, first=i == 0))
        first = " class='first'" if i == 0 else ""
        parts.append(f"<h2 id='s{i}'{first}>{html.escape(section.title)}</h2>")
        parts.extend(f"<p class='reading'>{html.escape(r)}</p>" for r in section.readings)
        if section.details:
            parts.append(f"<details class='full more'><summary>{len(section.details)} more reading(s)</summary>"
                         + "".join(f"<p class='reading'>{html.escape(r)}</p>" for r in section.details)
                         + "</details>")
        for table in section.tables:
            number += 1
            parts.append(_html_table(number, table, next(files)))
        for caption, fig in section.figures:
            uri = images.uri(fig) if images is not None else figure_to_data_uri(fig)
            parts.append(f"<figure><img alt='{html.escape(caption)}' src='{uri}'>"
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        if section.note:
            parts.append(f"<p class='note'>{html.escape(section.note)}</p>")
    if methods and (not sections or sections[-1].lead):
        parts.append(_methods_html(methods, first=not sections))
    parts.append("</body></html>")
    return "\n".join(parts)


LINE_BREAK = re.compile(r"\r\n|\r|\n")
MARKDOWN_SPECIAL = re.compile(r"[\\`*#|~]|\](?=[(\[])|_+")
"""What :func:`markdown_text` escapes with a backslash anywhere in a text: ``\\``, a backtick, ``*``, ``#``,
``|``, ``~``; a ``]`` opening a link's destination or reference (``](``, ``][``); a run of underscores
unless it joins two letters or digits (snake_case, which CommonMark never reads as emphasis)."""
MARKDOWN_LINE_START = re.compile(r"^(?:[-+](?=[ \t-]|$)|\d{1,9}[.)](?=[ \t]|$)|\[)")
"""What would start a list item, a rule, a task box or a link's definition at the start of a line
(``- ``, ``---``, ``+ ``, ``1. ``, ``2) ``, ``[ ] ``, ``[x]: ``): its last character is escaped there
("0.48" and "-0.5" are left as they are)."""


def _escaped(match: re.Match[str]) -> str:
    """A backslash before what :data:`MARKDOWN_SPECIAL` found (before each underscore of a run not
    joining two letters or digits)."""
    found, text, start, end = match.group(), match.string, match.start(), match.end()
    if found[0] != "_":
        return "\\" + found
    joined = 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()
    return found if joined else "\\_" * len(found)


def markdown_text(text: object) -> str:
    r"""`text` as Markdown that shows it as text, never as markup (CommonMark, with GitHub's tables):
    what the Markdown renderer writes of a reply, a persona's text, a cell, a caption, and of psyq's
    own sentences alike. ``&``, ``<`` and ``>`` become entities (no HTML, no autolink); the characters
    of :data:`MARKDOWN_SPECIAL`, and those of :data:`MARKDOWN_LINE_START` at its start, get a
    backslash (no emphasis, code, heading, link, image, list, task box or table cell of its own); line
    breaks become spaces, so that it stays one line (a table row, a list item), and the spaces and tabs
    at its ends go (as a viewer trims them; four would make code of it). Brackets that open no
    link ("[95 % CI]", "[fill in: ...]") and snake_case names are left as they are, to stay legible.
    A bare web address may still be shown as a link by a viewer that links them (GitHub): its text is
    the address itself.

    Example:
        >>> print(markdown_text("<img src=x onerror=alert(1)> **bold** [a](javascript:x) a|b"))
        &lt;img src=x onerror=alert(1)&gt; \*\*bold\*\* [a\](javascript:x) a\|b
        >>> print(markdown_text("# one\ntwo"), markdown_text("1. first"), markdown_text("0.48 [0.1, 0.9] n_valid"))
        \# one two 1\. first 0.48 [0.1, 0.9] n_valid
    """
    line = LINE_BREAK.sub(" ", str(text)).strip(" \t")
    escaped = MARKDOWN_SPECIAL.sub(_escaped, html.escape(line, quote=False))
    return MARKDOWN_LINE_START.sub(lambda m: m.group()[:-1] + "\\" + m.group()[-1], escaped)


def _md_table(frame: pd.DataFrame) -> str:
    frame = _round(frame.reset_index() if not isinstance(frame.index, pd.RangeIndex) else frame)
    cells = [[str(c) for c in frame.columns]] + [["" if pd.isna(v) else str(v) for v in row] for row in frame.to_numpy()]
    lines = ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in cells]
    lines.insert(1, "|" + "---|" * len(frame.columns))
    return "\n".join(lines)


def report_title(manifest: Mapping[str, Any]) -> str:
    """The report's title, naming the study and run (what each renderer heads the report with).

    Example:
        >>> report_title({"study": "quickstart", "run_id": "3f86b62be981"})
        'psyq report: quickstart (run 3f86b62be981)'
    """
    return f"psyq report: {manifest['study']} (run {manifest['run_id']})"


def render_markdown(manifest: Mapping[str, Any], sections: list[Section], *, methods: str | None = None,
                    title: str | None = None) -> str:
    """A Markdown summary: the methods paragraph (when given), the readings and the numbered
    tables in APA style with their notes and the CSV file of the full table (no figures). `title`
    heads the document (default: the report's, naming the study and run). Every text is written by
    :func:`markdown_text`: a reply, a persona's text or a cell is shown as text, never as markup.

    Example:
        >>> print(render_markdown({"study": "s", "run_id": "r"}, [Section("Study", readings=["<b>x</b> *y*"])]))
        # psyq report: s (run r)
        <BLANKLINE>
        ## Study
        <BLANKLINE>
        - &lt;b&gt;x&lt;/b&gt; \\*y\\*
        <BLANKLINE>
    """
    text = markdown_text
    out = [f"# {text(title or report_title(manifest))}", ""]
    files = iter(table_files(sections))
    number = 0
    methods_part = ["## Methods (generated: paste and edit)", "", text(methods), ""] if methods else []
    for i, section in enumerate(sections):
        if not section.lead and (i == 0 or sections[i - 1].lead):
            out += methods_part
        out += [f"## {text(section.title)}", ""]
        out += [f"- {text(r)}" for r in section.readings] + [""]
        if section.details:
            out += ["<details><summary>More readings</summary>", ""] + [f"- {text(r)}" for r in section.details]
            out += ["", "</details>", ""]
        for table in section.tables:
            caption, frame = table
            number += 1
            view = views.apa_table(frame, table.view)
            out += [f"**Table {number}**", "", f"*{text(caption)}*", "", _md_table(view.frame), ""]
            if view.notes:
                out += ["*Note.* " + text(" ".join(view.notes)), ""]
            name = text(next(files))          # psyq's file name: letters, digits, '_', '/' and '.'
            out += [f"Full table: [{name}]({name})", ""]
        if section.note:
            out += [f"_{text(section.note)}_", ""]
    if not sections or sections[-1].lead:
        out += methods_part
    return "\n".join(out)
