"""Reading a sheet of an .xlsx workbook psyq did not write, bounded before openpyxl parses it.

A workbook is a zip: a small file can unzip to a sheet of millions of cells, on which openpyxl
spends minutes (a zip bomb). So the zip members' declared sizes are summed first
(:func:`check_xlsx_unzipped_size`), and the sheet's cells are counted while they stream
(:func:`bounded_sheet_rows`). The limits bound the parsing time: openpyxl took 15 s here on 31 MB of
tiny shared strings and 3.5 s on a sheet of 500,000 cells. EmotionBench's crowd workbook (the
largest psyq reads in practice) is 0.25 MB on disk, 2.1 MB unzipped, 68,472 cells.

Example:
    >>> import io, zipfile
    >>> buffer = io.BytesIO()
    >>> with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
    ...     z.writestr("xl/worksheets/sheet1.xml", b" " * 5000)
    >>> check_xlsx_unzipped_size("crowd.xlsx", buffer.getvalue(), limit=1000)
    Traceback (most recent call last):
    psyq.engine.files.errors.InputError: crowd.xlsx: the workbook unzips to 5,000 bytes (xl/worksheets/sheet1.xml: 5,000); psyq opens workbooks of at most 1,000 bytes unzipped
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from psyq.engine.files.errors import InputError
from psyq.engine.files.inputfile import read_input_bytes

MAX_XLSX_BYTES = 50 * 1024 * 1024
MAX_XLSX_UNZIPPED_BYTES = 16 * 1024 * 1024
MAX_SHEET_CELLS = 500_000


def _about(text: str) -> str:
    return f" ({text})" if text else ""


def check_xlsx_unzipped_size(path: str, raw: bytes, limit: int = MAX_XLSX_UNZIPPED_BYTES, about: str = "") -> None:
    """Refuse a workbook (its bytes `raw`) whose zip members add up to more than `limit` bytes;
    `about` is said after the limit (e.g. how large a genuine file of the kind is).

    The sizes are the ones the zip directory declares; Python's zipfile, which openpyxl reads
    through, never unpacks more of a member than its declared size, so the sum bounds what is read.
    """
    try:
        members = zipfile.ZipFile(io.BytesIO(raw)).infolist()
    except (zipfile.BadZipFile, ValueError) as exc:   # ValueError: a corrupt directory entry
        raise InputError.single(path, f"not a readable .xlsx workbook: {exc}") from None
    total = sum(m.file_size for m in members)
    if total > limit:
        largest = max(members, key=lambda m: m.file_size)
        raise InputError.single(path, f"the workbook unzips to {total:,} bytes ({largest.filename}: "
                                      f"{largest.file_size:,}); psyq opens workbooks of at most {limit:,} bytes "
                                      f"unzipped{_about(about)}")


def bounded_sheet_rows(path: str, sheet: Any, limit: int = MAX_SHEET_CELLS, about: str = "") -> list[list[Any]]:
    """The rows of a read-only openpyxl `sheet`, refused past `limit` cells (`about` as above).

    The sheet's own <dimension> is checked first (openpyxl pads every row to it); rows are then
    counted while streaming, since a dimension may be missing or wrong. A row counts as at
    least one cell, so that millions of empty rows are bounded too.
    """
    where = f"sheet {sheet.title!r}"
    if sheet.max_row is not None and sheet.max_column is not None:
        declared = (sheet.max_row - sheet.min_row + 1) * (sheet.max_column - sheet.min_column + 1)
        if declared > limit:
            raise InputError.single(path, f"{where} declares the range {sheet.calculate_dimension()} "
                                          f"({declared:,} cells); psyq reads sheets of at most {limit:,} cells"
                                          f"{_about(about)}", field="dimension")
    rows, cells = [], 0
    for row in sheet.iter_rows(values_only=True):
        cells += max(len(row), 1)
        if cells > limit:
            raise InputError.single(path, f"{where} holds more than {limit:,} cells (stopped reading at row "
                                          f"{len(rows) + 1:,}); psyq reads sheets of at most {limit:,} cells"
                                          f"{_about(about)}", line=len(rows) + 1)
        rows.append(list(row))
    return rows


def read_sheet_rows(path: str, sheet_name: str, *, max_cells: int = MAX_SHEET_CELLS, about_size: str = "",
                    about_cells: str = "") -> tuple[str, list[list[Any]]]:
    """(title, rows) of the sheet `sheet_name` of the workbook at `path` (else its first sheet),
    values as saved (no formula is evaluated), bounded as above; every failure is an
    :class:`InputError` naming the file.

    Example:
        >>> read_sheet_rows("people.xlsx", "ratings")
        Traceback (most recent call last):
        psyq.engine.files.errors.InputError: people.xlsx: file not found
    """
    raw = read_input_bytes(path, max_bytes=MAX_XLSX_BYTES)   # a regular file of sane size, else a plain error
    check_xlsx_unzipped_size(path, raw, about=about_size)
    try:
        import openpyxl

        book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
        sheet = book[sheet_name] if sheet_name in book.sheetnames else book.worksheets[0]
        return sheet.title, bounded_sheet_rows(path, sheet, max_cells, about=about_cells)
    except InputError:
        raise
    except Exception as exc:   # openpyxl raises many kinds (zip, XML, key errors) for a broken file
        raise InputError.single(path, f"not a readable .xlsx workbook: {exc}") from None
