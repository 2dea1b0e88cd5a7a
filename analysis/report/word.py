"""The report as a Word document (``report.docx``, python-docx): the sections the HTML report shows,
in its order (the verdict first, then the methods paragraph and the rest), for a psychologist who
writes the paper in Word.

Every table is an APA 7 table: "Table N" in bold on its own line, the title in italics on the next,
horizontal rules only (above and below the table and under the header row: the table's and the
header cells' borders, set in the XML, as python-docx has no API for borders), the header row
repeated on every page, and a "*Note.*" paragraph below when the table has one. The cells are the
strings the HTML table shows, from the same view (:func:`psyq.analysis.report.views.apa_table`):
nothing is formatted a second time here. Every figure is a PNG with its caption above it ("Figure
N" in bold, the title in italics).

Every text from a run or a file (a reply, a persona's text, a cell) goes in as the text of a run
(python-docx escapes it; a character XML cannot hold becomes U+FFFD): never as markup or a field
code, so a cell beginning with ``=`` is text in Word.

Example:
    >>> import io, docx
    >>> data = render_docx({"study": "s", "run_id": "r"}, [Section("Study", readings=["=1+1"])])
    >>> [p.text for p in docx.Document(io.BytesIO(data)).paragraphs][:3]
    ['psyq report: s (run r)', 'Study', '=1+1']

References
----------
American Psychological Association (2020). *Publication Manual of the American Psychological
Association* (7th ed.), sections 7.8–7.21 (tables) and 7.22–7.36 (figures).
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Mapping
from typing import Any

import docx
from docx.enum.section import WD_ORIENT, WD_SECTION
from docx.enum.table import WD_TABLE_ALIGNMENT
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Inches, Pt, RGBColor
from docx.table import Table as DocxTable
from docx.text.paragraph import Paragraph

from psyq.analysis.report import views
from psyq.analysis.report.apa import is_missing
from psyq.analysis.report.figures import figure_to_data_uri
from psyq.analysis.report.render import FigureImages, report_title, table_files
from psyq.analysis.report.section import Section, Table

FONT = "Times New Roman"      # one of APA 7's fonts (LibreOffice shows Liberation Serif, of the same metrics)
TABLE_FONT = 9.0        # points; down to SMALLEST_FONT in a table whose words do not fit a landscape page
SMALLEST_FONT = 7.0
NOTE_FONT = Pt(9)
RULE = "8"            # a rule's width in eighths of a point: 1 pt
# Characters XML 1.0 cannot hold (python-docx would refuse them): the C0 controls but tab, newline and
# carriage return, the surrogates and U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(text: Any) -> str:
    """`text` as a run holds it: a character XML cannot hold becomes U+FFFD."""
    return _NOT_XML.sub("\ufffd", str(text))


def cell_text(value: Any) -> str:
    """A cell of a printed table as the HTML table shows it (its text; empty when missing, as
    ``to_html(na_rep="")`` prints it).

    Example:
        >>> cell_text("<\xa0.001"), cell_text(None), cell_text(float("nan"))
        ('<\xa0.001', '', '')
    """
    return "" if is_missing(value) else str(value)


def _in_order(parent: Any, child: Any, after: tuple[str, ...]) -> None:
    """Insert `child` into `parent` before its first child whose tag is one of `after` (the elements
    the schema puts after `child`), else at the end; an old element of the same tag is replaced."""
    for old in parent.findall(child.tag):
        parent.remove(old)
    for element in parent:
        if element.tag in {qn(tag) for tag in after}:
            element.addprevious(child)
            return
    parent.append(child)


def _border(edge: str, rule: bool) -> Any:
    element = OxmlElement(f"w:{edge}")
    if rule:
        for name, value in (("val", "single"), ("sz", RULE), ("space", "0"), ("color", "000000")):
            element.set(qn(f"w:{name}"), value)
    else:
        element.set(qn("w:val"), "nil")
    return element


def apa_rules(table: DocxTable) -> None:
    """Horizontal rules only (APA 7): a rule above and below the table and under the header row,
    none between columns or body rows and no frame at the sides.

    Example:
        >>> table = docx.Document().add_table(rows=2, cols=2)
        >>> apa_rules(table)
        >>> [(b.tag.split("}")[1], b.get(qn("w:val"))) for b in table._tbl.tblPr.find(qn("w:tblBorders"))]
        [('top', 'single'), ('left', 'nil'), ('bottom', 'single'), ('right', 'nil'), ('insideH', 'nil'), ('insideV', 'nil')]
    """
    borders = OxmlElement("w:tblBorders")
    for edge in ("top", "left", "bottom", "right", "insideH", "insideV"):
        borders.append(_border(edge, edge in ("top", "bottom")))
    _in_order(table._tbl.tblPr, borders, ("w:shd", "w:tblLayout", "w:tblCellMar", "w:tblLook",
                                         "w:tblCaption", "w:tblDescription"))
    for cell in table.rows[0].cells:
        tc_borders = OxmlElement("w:tcBorders")
        tc_borders.append(_border("bottom", True))
        _in_order(cell._tc.get_or_add_tcPr(), tc_borders, ("w:shd", "w:noWrap", "w:tcMar", "w:textDirection",
                                                          "w:tcFitText", "w:vAlign", "w:hideMark"))


def _row_flags(row: Any, header: bool) -> None:
    """A row never split across pages; the header row repeated at the top of every page."""
    tr_pr = row._tr.get_or_add_trPr()
    tr_pr.append(OxmlElement("w:cantSplit"))
    if header:
        tr_pr.append(OxmlElement("w:tblHeader"))


def _fill(cell: Any, text: str, size: float) -> None:
    paragraph = cell.paragraphs[0]
    paragraph.paragraph_format.space_before = paragraph.paragraph_format.space_after = Pt(1)
    paragraph.paragraph_format.line_spacing = 1.0
    run = paragraph.add_run(_text(text))
    run.font.size = Pt(size)


EM = 0.52 / 72          # a character's width in inches per point of font size (Times: digits .5 em)
PAD = 0.1               # a cell's margins, left and right, in inches (CELL_MARGIN each)
CELL_MARGIN = "72"      # twentieths of a point: 0.05 in


def _column_widths(rows: list[list[str]], width: float, wide: float) -> tuple[list[float], bool, float]:
    """Column widths in inches, whether the table needs a landscape page, and its font size: each
    column as wide as its longest cell (at most 40 characters) when the table fits `width` (the
    portrait page's text), else `wide` (the landscape page's) when the table's words do not fit
    `width` or its cells would need 30 % more; narrowed to fit, but never below its
    longest word (a cell of non-breaking spaces is one word): when even the words do not fit, the
    font is made smaller (down to 7 pt) rather than a word broken.

    Example:
        >>> _column_widths([["Subscale", "α"], ["PT", ".79"]], 6.5, 9)
        ([0.62, 0.295], False, 9.0)
        >>> _column_widths([["Item", "Text"], ["1", "a long text " * 40]], 2, 3)
        ([0.36, 2.64], True, 9.0)
    """
    columns = list(zip(*rows))
    longest = [min(40, max(max(map(len, column[1:]), default=1), max(map(_longest_word, column))))
               for column in columns]
    words = [min(40, max(map(_longest_word, column))) for column in columns]
    pads = PAD * len(columns)
    # A landscape page (and the page breaks around it) when the words do not fit the portrait page, or
    # fitting it would wrap most long cells.
    landscape = (sum(words) * EM * TABLE_FONT + pads > width) or (sum(longest) * EM * TABLE_FONT + pads > 1.3 * width)
    width = wide if landscape else width
    size = TABLE_FONT
    if sum(words) * EM * size + pads > width:
        size = max(SMALLEST_FONT, int(2 * (width - pads) / (sum(words) * EM)) / 2)   # in half points
    natural = [n * EM * size + PAD for n in longest]
    least = [n * EM * size + PAD for n in words]
    if sum(natural) <= width:
        return [round(w, 3) for w in natural], landscape, size
    if sum(least) >= width:
        return [round(w * width / sum(least), 3) for w in least], landscape, size
    share = (width - sum(least)) / (sum(natural) - sum(least))
    return [round(lo + (w - lo) * share, 3) for lo, w in zip(least, natural)], landscape, size


def _longest_word(text: str) -> int:
    return max((len(word) for word in re.split(r"[ \t\n]+", text)), default=1)   # a no-break space joins its words


def _page(document: Any, landscape: bool) -> float:
    """The text's width in inches, the page turned first when it is not as asked (a new section
    from a new page: a table too wide for a portrait page is printed on a landscape one, APA 7.8)."""
    section = document.sections[-1]
    if (section.orientation == WD_ORIENT.LANDSCAPE) != landscape:
        turned = document.add_section(WD_SECTION.NEW_PAGE)
        turned.orientation = WD_ORIENT.LANDSCAPE if landscape else WD_ORIENT.PORTRAIT
        turned.page_width, turned.page_height = section.page_height, section.page_width
        section = turned
    return _text_width(section, landscape)


def _text_width(section: Any, landscape: bool) -> float:
    """The width in inches of a `section`'s text, or of the text of the section turned when
    `landscape` is not its orientation."""
    turned = (section.orientation == WD_ORIENT.LANDSCAPE) != landscape
    page = section.page_height if turned else section.page_width
    return (page - section.left_margin - section.right_margin) / 914400      # EMU to inches


def _caption(document: Any, label: str, title: str) -> None:
    """APA 7's label (bold) and title (italics), each on its own line, kept with what follows."""
    for text, bold in ((label, True), (title, False)):
        paragraph = document.add_paragraph()
        paragraph.paragraph_format.keep_with_next = True
        paragraph.paragraph_format.space_after = Pt(2 if bold else 6)
        run = paragraph.add_run(_text(text))
        run.bold, run.italic = bold, not bold


def _small(document: Any, text: str, lead: str | None = None) -> Paragraph:
    paragraph = document.add_paragraph()
    paragraph.paragraph_format.space_before = Pt(3)
    paragraph.paragraph_format.space_after = Pt(10)
    if lead:
        run = paragraph.add_run(lead)
        run.italic = True
        run.font.size = NOTE_FONT
    run = paragraph.add_run(_text(text))
    run.font.size = NOTE_FONT
    return paragraph


def _table(document: Any, number: int, table: Table, csv_name: str) -> None:
    """One APA table: number, title, the view's cells with horizontal rules only, the note, and the
    CSV file holding the full table; on a landscape page when it is too wide for a portrait one."""
    caption, frame = table
    view = views.apa_table(frame, table.view)
    rows = [[cell_text(c) for c in view.frame.columns]] + [[cell_text(v) for v in row]
                                                           for row in view.frame.itertuples(index=False)]
    section = document.sections[-1]
    widths, landscape, size = _column_widths(rows, _text_width(section, False), _text_width(section, True))
    _page(document, landscape=landscape)
    _caption(document, f"Table {number}", caption)
    if rows[0]:                                 # a table without columns has no grid (Word refuses a row without cells)
        _grid(document, rows, widths, size)
    if view.notes:
        _small(document, " " + " ".join(view.notes), lead="Note.")
    _small(document, f"Full table: {csv_name}").runs[0].font.color.rgb = RGBColor(0x55, 0x55, 0x55)


def _grid(document: Any, rows: list[list[str]], widths: list[float], size: float) -> None:
    """The table's cells (the first row its header) in `size` points, each column `widths` inches
    wide, narrow cell margins, APA rules."""
    grid = document.add_table(rows=len(rows), cols=len(rows[0]))
    grid.alignment = WD_TABLE_ALIGNMENT.LEFT
    margins = OxmlElement("w:tblCellMar")
    for side in ("left", "right"):
        margin = OxmlElement(f"w:{side}")
        margin.set(qn("w:w"), CELL_MARGIN)
        margin.set(qn("w:type"), "dxa")
        margins.append(margin)
    _in_order(grid._tbl.tblPr, margins, ("w:tblLook", "w:tblCaption", "w:tblDescription"))
    for width_in, column, grid_column in zip(widths, grid.columns, grid._tbl.tblGrid.gridCol_lst):
        grid_column.w = Inches(width_in)         # LibreOffice reads the grid, Word the cells
        for cell in column.cells:
            cell.width = Inches(width_in)
    for i, (values, row) in enumerate(zip(rows, grid.rows)):
        _row_flags(row, header=i == 0)
        for text, cell in zip(values, row.cells):
            _fill(cell, text, size)
    apa_rules(grid)


def _figure(document: Any, number: int, caption: str, png: bytes) -> None:
    """One figure: "Figure N" and its title above it (APA 7), at most the text's width."""
    from matplotlib.image import imread        # the PNG's size: matplotlib is imported by the report anyway

    width = _page(document, landscape=False)
    _caption(document, f"Figure {number}", caption)
    height_px, width_px = imread(io.BytesIO(png)).shape[:2]
    document.add_picture(io.BytesIO(png), width=Inches(min(width, width_px / 150)))   # drawn at 150 dpi
    document.paragraphs[-1].paragraph_format.space_after = Pt(12)


def _methods(document: Any, methods: str) -> None:
    _page(document, landscape=False)
    document.add_heading("Methods (generated: paste and edit)", level=1)
    _small(document, "Written from the run's manifest, study, instruments and answers; [fill in] marks what the run "
           "does not record. Also saved as methods.md.")
    for part in (p for p in methods.split("\n\n") if p.strip()):
        document.add_paragraph(_text(part))


def _styles(document: Any) -> None:
    """One font (the template's theme fonts taken out), headings in black and bold (APA 7), 1-inch
    margins."""
    for name in ("Normal", "Title", "Heading 1", "Heading 2"):
        style = document.styles[name]
        style.font.name = FONT
        fonts = style.element.get_or_add_rPr().get_or_add_rFonts()
        for attribute in ("asciiTheme", "hAnsiTheme", "eastAsiaTheme", "cstheme"):
            fonts.attrib.pop(qn(f"w:{attribute}"), None)
        fonts.set(qn("w:cs"), FONT)
        fonts.set(qn("w:eastAsia"), FONT)
        if name != "Normal":
            style.font.color.rgb = RGBColor(0, 0, 0)
            style.font.bold = True
    document.styles["Normal"].font.size = Pt(11)
    document.styles["Title"].font.size = Pt(18)
    for border in document.styles["Title"].element.findall(f"{qn('w:pPr')}/{qn('w:pBdr')}"):
        border.getparent().remove(border)      # the template's blue rule under the title
    document.styles["Heading 1"].font.size = Pt(14)
    for section in document.sections:
        section.left_margin = section.right_margin = section.top_margin = section.bottom_margin = Inches(1)


def render_docx(manifest: Mapping[str, Any], sections: list[Section], *, methods: str | None = None,
                images: FigureImages | None = None, title: str | None = None) -> bytes:
    """The whole report as a Word document (.docx bytes), in the HTML report's order: the lead
    sections (the verdict), the methods paragraph (when given), then every other section, each with
    its readings, its tables numbered as in the HTML (APA 7, see the module's docstring), its
    figures numbered, and its note. `images`, when given, has the figures' images (drawn while the
    report was being built); otherwise each is drawn here. `title` heads the document (default:
    the report's, naming the study and run).

    Example:
        >>> import io, docx, pandas as pd
        >>> data = render_docx({"study": "s", "run_id": "r"},
        ...                    [Section("Study", tables=[("Run", pd.DataFrame({"p": [0.0004]}))])])
        >>> document = docx.Document(io.BytesIO(data))
        >>> [p.text for p in document.paragraphs[2:4]], [c.text for c in document.tables[0].rows[1].cells]
        (['Table 1', 'Run'], ['<\\xa0.001'])
    """
    document = docx.Document()
    _styles(document)
    title = title or report_title(manifest)
    document.core_properties.title = _text(title)
    document.core_properties.author = "psyq"
    document.add_heading(_text(title), level=0)
    files = iter(table_files(sections))
    tables = figures = 0
    for i, section in enumerate(sections):
        if methods and not section.lead and (i == 0 or sections[i - 1].lead):
            _methods(document, methods)
        _page(document, landscape=False)
        document.add_heading(_text(section.title), level=1)
        for reading in [*section.readings, *section.details]:
            document.add_paragraph(_text(reading))
        for table in section.tables:
            tables += 1
            _table(document, tables, table, next(files))
        for caption, fig in section.figures:
            figures += 1
            uri = images.uri(fig) if images is not None else figure_to_data_uri(fig)
            _figure(document, figures, caption, base64.b64decode(uri.split(",", 1)[1]))
        if section.note:
            _small(document, section.note)
    if methods and (not sections or sections[-1].lead):
        _methods(document, methods)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()

