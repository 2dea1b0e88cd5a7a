"""A blind rating sheet: every rating target of a run, for people to rate on a rubric's dimensions.

``psyq rating-sheet RUN OUT.xlsx --rubric empathy_ceb [--seed N] [--with-perturbed]`` writes one
row per target (persona and reference replies; perturbed texts only with ``--with-perturbed``:
people's time is dear, and robustness is usually asked of judges), in an order shuffled with the seed,
with columns ``rater_id`` (for the rater to fill in), ``response_id``, ``message`` (the
help-seeker's message, with its context in brackets when the item has one), ``reply`` (the text
to rate) and one empty column per dimension of the rubric. Nothing says where a text came from.
The filled-in sheet imports as it is: ``psyq import ratings SHEET.xlsx --run RUN --rubric ID``
(:func:`read_rating_workbook` reads it back).

**Why a workbook and not a CSV.** The sheet is opened by people in Excel, LibreOffice or Google
Sheets, and what it holds (model replies above all, but also ids, messages and the rubric's
dimension names) is untrusted text. A CSV cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return is taken there as a formula (OWASP "CSV injection"): a reply
``=HYPERLINK("http://…","click")`` becomes a live link, others a computation. The sheet is
therefore an .xlsx whose every cell is a *text* cell (data type ``s``, number format ``@``):
the file itself says "this is text", so no spreadsheet evaluates it, and no character is added
to any reply. The OWASP alternative for a CSV (a leading apostrophe) was rejected: it changes
the text the rater reads (LibreOffice shows the apostrophe), whether a spreadsheet keeps, drops
or doubles it on saving differs between programs and versions, so stripping it on import could
not tell psyq's apostrophe from a rater's or a reply's own; and a CSV read back is stripped of
surrounding whitespace (:mod:`psyq.engine.files.csvfile`), so a reply ``"\\t=1"`` could not come
back exactly. Exports meant for R or pandas (``psyq export``, ``psyq scores``) stay CSV with
the raw text: they are read by programs, not opened as sheets.

The empty cells to fill in (``rater_id`` and the levels) are text cells too, so what a rater
types is kept as typed (a rater id ``007`` keeps its zeros, a typed ``=1+1`` is text and is
refused on import as not a level).

Two characters need more than a text cell to survive the file. XML turns a carriage return in
text into a line feed when it is read, so each CR is written as the character reference
``&#13;``, which every XML reader (openpyxl, Excel, LibreOffice) reads back as a CR. Control
characters XML cannot hold at all (U+0000-U+0008, U+000B, U+000C, U+000E-U+001F) are written in
the workbook format's own escape ``_xHHHH_``, and a literal ``_xHHHH_`` in a text as
``_x005F_xHHHH_`` (ECMA-376 ST_Xstring, the convention Excel and LibreOffice decode);
:func:`sheet_text` undoes both on import, so every text reads back exactly.

Example:
    >>> sheet_rows(pd.DataFrame(columns=["response_id", "instrument", "item_id", "text"]), {}, ["a"], 0)
    []
    >>> cell_text("a\\x1bb_x0041_"), sheet_text(cell_text("a\\x1bb_x005F_x0041_")) == "a\\x1bb_x005F_x0041_"
    ('a_x001B_b_x005F_x0041_', True)
"""

from __future__ import annotations

import io
import random
import re
import zipfile
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from psyq.engine.files.atomic import write_bytes_atomic
from psyq.engine.files.csvfile import CsvTable
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.workbook import read_sheet_rows
from psyq.engine.design.instrument import Instrument
from psyq.engine.kinds.response import response_items
from psyq.engine.kinds.response.rubrics import MultiRubric

FIXED_COLUMNS = ["rater_id", "response_id", "message", "reply"]
SHEET_TITLE = "ratings"
# Columns whose text is compared exactly on import; every other cell (ids, levels) is stripped.
EXACT_COLUMNS = ("message", "reply")
MAX_CELL_CHARS = 32_767   # the most a spreadsheet cell holds (Excel's limit; it cuts longer texts)
_XSTRING = re.compile(r"_x[0-9A-Fa-f]{4}_")
_ESCAPE_START = re.compile(r"_(?=x[0-9A-Fa-f]{4}_)")
_NOT_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_COLUMN_WIDTHS = {"rater_id": 10, "response_id": 16, "message": 50, "reply": 80}


def sheet_rows(targets: pd.DataFrame, instruments: Mapping[str, Instrument], dimensions: list[str],
               seed: int) -> list[dict[str, str]]:
    """The sheet's rows: targets whose message is a response item of the run, shuffled with `seed`
    (sorted by response_id first, so the order depends on the seed and the targets only)."""
    messages = {(inst_id, item.id): item.message.strip() + (f" [{item.context.strip()}]" if item.context else "")
                for inst_id, inst in instruments.items() for item in response_items(inst)}
    rows = [{"rater_id": "", "response_id": t.response_id, "message": messages[(t.instrument, t.item_id)],
             "reply": t.text, **{d: "" for d in dimensions}}
            for t in targets.sort_values("response_id").itertuples(index=False)
            if (t.instrument, t.item_id) in messages]
    random.Random(seed).shuffle(rows)
    return rows


def cell_text(text: str) -> str:
    """`text` as a workbook cell holds it: XML-illegal control characters as ``_xHHHH_``, and a
    literal ``_xHHHH_`` as ``_x005F_xHHHH_`` (ECMA-376 ST_Xstring); everything else unchanged."""
    text = _ESCAPE_START.sub("_x005F_", text)   # every such "_", also one inside another escape
    return _NOT_IN_XML.sub(lambda m: f"_x{ord(m.group(0)):04X}_", text)


def sheet_text(value: Any) -> str:
    """The text of a cell as openpyxl reads it (the inverse of :func:`cell_text` for strings; a
    number a spreadsheet stored as a number is written as a person would type it)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return _XSTRING.sub(lambda m: chr(int(m.group(0)[2:6], 16)), value)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    return str(value)


def workbook_bytes(header: Sequence[str], rows: Sequence[Sequence[str]]) -> bytes:
    """An .xlsx of one sheet (:data:`SHEET_TITLE`) whose every cell is a text cell: `header`,
    then `rows`; empty strings are left as empty text-formatted cells for a rater to fill in."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter

    book = Workbook()
    sheet = book.active
    sheet.title = SHEET_TITLE
    for r, values in enumerate([header, *rows], start=1):
        for c, value in enumerate(values, start=1):
            cell = sheet.cell(r, c)
            cell.number_format = "@"   # text: what a rater types in is kept as typed, never evaluated
            if value != "":
                cell.value = cell_text(value)
                cell.data_type = "s"   # never "f": openpyxl takes a string beginning with "=" as a formula
            if r == 1:
                cell.font = Font(bold=True)
            elif header[c - 1] in EXACT_COLUMNS:
                cell.alignment = Alignment(wrap_text=True, vertical="top")
    for c, name in enumerate(header, start=1):
        sheet.column_dimensions[get_column_letter(c)].width = _COLUMN_WIDTHS.get(name, 12)
    sheet.freeze_panes = "A2"
    buffer = io.BytesIO()
    book.save(buffer)
    return _carriage_returns_as_references(buffer.getvalue())


def _carriage_returns_as_references(raw: bytes) -> bytes:
    """The workbook `raw` with every CR of its sheets' XML written ``&#13;``: a raw CR in XML text
    is read back as a line feed by every XML parser. openpyxl writes no CR of its own in a
    sheet's markup, so each one is a character of a cell's text."""
    source = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.startswith("xl/worksheets/"):
                data = data.replace(b"\r", b"&#13;")
            target.writestr(info, data)
    return out.getvalue()


def check_sheet_path(out: str | Path) -> None:
    """Refuse a sheet named other than .xlsx (see the module docstring: why not a CSV)."""
    if Path(out).suffix.lower() != ".xlsx":
        raise InputError.single(out, "the rating sheet is a workbook: name it .xlsx. A CSV opened in Excel or "
                                     "LibreOffice runs a reply beginning with =, +, - or @ as a formula; every "
                                     "cell of the .xlsx is text (psyq export writes the replies as CSV for R/pandas)")


def write_rating_sheet(run_path: str | Path, out: str | Path, rubric: MultiRubric, seed: int = 0,
                       with_perturbed: bool = False) -> int:
    """Add the run's persona replies to its targets, then write the blind sheet (perturbed texts
    left out unless `with_perturbed`) as an .xlsx of text cells; returns its rows."""
    from psyq.engine.store.ratings import read_targets
    from psyq.engine.results.run import open_run
    from psyq.engine.store.runlock import RunLock
    from psyq.engine.store.run_store import RunStore
    from psyq.engine.judging.reply_judge import sync_persona_targets

    check_sheet_path(out)
    run = open_run(run_path, write=True)
    instruments = run.instruments
    with RunLock(run.path), RunStore(run.database) as store:
        sync_persona_targets(store, instruments)
        targets = read_targets(store)
    if not with_perturbed:
        targets = targets[targets["perturbation"].isna()]
    rows = sheet_rows(targets, instruments, rubric.dimension_ids, seed)
    header = FIXED_COLUMNS + rubric.dimension_ids
    too_long = [r["response_id"] for r in rows if len(cell_text(r["reply"])) > MAX_CELL_CHARS]
    if too_long:
        raise InputError.single(out, f"{len(too_long)} repl(ies) longer than a spreadsheet cell holds "
                                     f"({MAX_CELL_CHARS:,} characters; Excel would cut them): "
                                     f"{', '.join(too_long[:5])}{' ...' if len(too_long) > 5 else ''}")
    write_bytes_atomic(out, workbook_bytes(header, [[r[c] for c in header] for r in rows]))
    return len(rows)


# ---------------------------------------------------------------- reading a filled-in sheet


@dataclass
class SheetTable(CsvTable):
    """A worksheet read as a table of text cells; `lines` are its row numbers (1: the header),
    and a problem is placed at the cell's address (``sheet.xlsx:ratings!C7``)."""

    sheet: str = SHEET_TITLE

    def address(self, row: int | None, column: str | None = None) -> str:
        """``file:sheet!C7`` of a cell (`row` an index into `rows`, None: the header row)."""
        from openpyxl.utils import get_column_letter

        number = 1 if row is None else self.lines[row]
        if column is None:
            return f"{self.file}:{self.sheet}!{number}:{number}"
        return f"{self.file}:{self.sheet}!{get_column_letter(self.header.index(column) + 1)}{number}"


def read_rating_workbook(path: str | Path, required: Sequence[str] = ()) -> SheetTable:
    """The sheet :data:`SHEET_TITLE` (else the first) of an .xlsx as text cells, checked for shape
    like a CSV (:func:`~psyq.engine.files.csvfile.read_csv_table`): named, unrepeated columns, the
    `required` ones present, no value in a column without a name; blank rows skipped. The cells of
    :data:`EXACT_COLUMNS` are kept exactly (:func:`sheet_text`), the others stripped.

    The workbook is bounded before openpyxl parses it (:mod:`psyq.engine.files.workbook`).
    """
    path = str(path)
    title, cells = read_sheet_rows(path, SHEET_TITLE)
    table = SheetTable(path, [], [], [], sheet=title)
    if not cells:
        raise InputError.single(table.address(None), "the sheet is empty; expected a header row")
    header = [sheet_text(v).strip() for v in cells[0]]
    while header and header[-1] == "":
        header.pop()
    table.header = header
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for c, name in enumerate(header):
        if name in seen:
            problems.append(Problem(f"{path}:{table.sheet}!{_letter(c)}1", None, None, name,
                                    f"is the name of column {_letter(seen[name])} too; each column needs its own name"))
        if name:
            seen.setdefault(name, c)
    missing = [name for name in required if name not in header]
    if missing:
        problems.append(Problem(table.address(None), None, None, "", f"missing column(s) {', '.join(missing)}"))
    for k, values in enumerate(cells[1:], start=2):
        texts = [sheet_text(v) for v in values]
        if not any(t.strip() for t in texts):
            continue
        for c, text in enumerate(texts):
            if text.strip() and (c >= len(header) or header[c] == ""):
                problems.append(Problem(f"{path}:{table.sheet}!{_letter(c)}{k}", None, None, "",
                                        "holds a value, but its column has no name in row 1; name the column "
                                        "or clear the cell"))
        row = [text if name in EXACT_COLUMNS else text.strip()
               for name, text in zip(header, texts + [""] * (len(header) - len(texts)))]
        table.rows.append(row)
        table.lines.append(k)
    if problems:
        raise InputError(problems)
    return table


def _letter(index: int) -> str:
    """The spreadsheet letter of a 0-based column index (0: A)."""
    from openpyxl.utils import get_column_letter

    return get_column_letter(index + 1)
