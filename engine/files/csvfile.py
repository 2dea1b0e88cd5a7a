"""Reading a CSV file whose shape is checked, so that no value is ever read into the wrong column.

Every CSV psyq reads (human answers, perceivers' ratings, targets' reports) goes through
:func:`read_csv_table`. It reads a bounded, regular UTF-8 file (:mod:`psyq.engine.files.inputfile`),
then checks the shape before any value is used:

- every row has as many cells as the header has names; a longer or shorter row is an error
  naming its line (pandas would shift it, or take its first cell as an index, without a word);
- header names are not empty and not repeated (pandas renames a repeat ``x.1``), unless the
  caller reads the file through a codebook that names the columns it reads: a platform's export
  may repeat its own bookkeeping columns (REDCap's labels export has a "Complete?" and a "Survey
  Timestamp" per form), and :func:`without_repeated` then leaves those out, with a notice, and
  refuses a repeated column that is read;
- an empty last column on *every* row, as spreadsheet exports leave (each line ending with a
  comma, with or without one on the header), is dropped and said in a notice;
- a file separated by ``;`` or tabs (spreadsheets in many locales) is read as such when that
  gives the required columns, and said in a notice; otherwise the error names the separator.

Blank rows (no cell holds anything) are skipped. Cells are stripped of surrounding spaces.
Notices are :class:`~psyq.engine.files.notices.InputNotice` warnings, which the command line prints.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.inputfile import decode_text, read_input_bytes
from psyq.engine.files.notices import notify

OTHER_DELIMITERS = {";": "';'", "\t": "tabs"}


@dataclass
class CsvTable:
    """A CSV file checked for shape: header names and rows of text cells, each row with the
    line it starts on (line 1 is the header; a quoted cell may span lines)."""

    file: str
    header: list[str]
    rows: list[list[str]]
    lines: list[int]
    delimiter: str = ","
    notices: list[Problem] = field(default_factory=list)

    def column(self, name: str) -> list[str]:
        """The cells of column `name`, in row order."""
        k = self.header.index(name)
        return [row[k] for row in self.rows]


def _records(file: str, text: str, delimiter: str) -> list[tuple[int, list[str]]]:
    """(start line, cells) of every record; csv.reader's line_num is where a record *ends*."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    out = []
    try:
        while True:
            start = reader.line_num + 1
            try:
                out.append((start, [cell.strip() for cell in next(reader)]))
            except StopIteration:
                return out
    except csv.Error as exc:
        raise InputError.single(file, f"not a readable CSV file: {exc}", line=reader.line_num + 1) from None


def _first_record(text: str, delimiter: str) -> list[str]:
    first = text.split("\n", 1)[0].rstrip("\r")
    return [name.strip() for name in next(csv.reader([first], delimiter=delimiter), [])]


def _choose_delimiter(file: str, text: str, required: Sequence[str]) -> tuple[str, Problem | None]:
    """',' unless the header has none and ';' or a tab splits it into the required columns
    (or, with nothing required, into more than one column)."""
    commas = _first_record(text, ",")
    if all(name in commas for name in required) and (required or len(commas) > 1):
        return ",", None
    for delimiter, said in OTHER_DELIMITERS.items():
        names = _first_record(text, delimiter)
        if len(names) > 1 and all(name in names for name in required) and len(commas) == 1:
            return delimiter, Problem(file, 1, None, "", f"the columns are separated by {said}, "
                                      "not commas; the file was read with that separator")
    return ",", None


def _likely_separator(header: list[str]) -> str:
    """A hint for a header that lacks required columns: the separator it seems to use."""
    if len(header) == 1:
        for delimiter, said in OTHER_DELIMITERS.items():
            if delimiter in header[0]:
                return (f" (the header seems to be separated by {said}, not commas, and does not "
                        "give these columns either way; save the file as comma-separated CSV)")
    return ""


def _drop_trailing_empty_column(file: str, header: list[str], records: list[tuple[int, list[str]]],
                                notices: list[Problem]) -> list[str]:
    """Drop an empty last column left on every row by a spreadsheet export; records are edited
    in place. Returns the header without it."""
    if not records and header and header[-1] == "" and len(header) > 1:
        notices.append(Problem(file, 1, None, "", "the header ends with a comma; the empty column was ignored"))
        return header[:-1]
    if not records:
        return header
    lengths = {len(cells) for _, cells in records}
    empty_last = all(cells[-1] == "" for _, cells in records)
    if header[-1] == "" and lengths == {len(header)} and empty_last and len(header) > 1:
        for _, cells in records:
            del cells[-1]
        notices.append(Problem(file, 1, None, "", "every line ends with a comma (an empty last column); "
                                                  "the empty column was ignored"))
        return header[:-1]
    if header[-1] != "" and lengths == {len(header) + 1} and empty_last:
        for _, cells in records:
            del cells[-1]
        notices.append(Problem(file, 2, None, "", "every row ends with a comma but the header does not; "
                                                  "the empty last cell of each row was ignored"))
        return header
    if header[-1] == "" and lengths == {len(header) - 1} and len(header) > 1:
        notices.append(Problem(file, 1, None, "", "the header ends with a comma but the rows do not; "
                                                  "the empty column name was ignored"))
        return header[:-1]
    return header


def _header_problems(file: str, header: list[str], required: Sequence[str],
                     row_names: bool = False, repeated_names: bool = False) -> list[Problem]:
    problems = []
    if missing := [name for name in required if name not in header]:
        problems.append(Problem(file, 1, None, "", "missing column(s): " + ", ".join(missing)
                                + _likely_separator(header)))
    repeated = [name for name, count in Counter(header).items() if count > 1 and name]
    if repeated and not repeated_names:
        problems.append(Problem(file, 1, None, "", "duplicated column(s): " + ", ".join(repeated)
                                + " (each column name may appear once)"))
    for k, name in enumerate(header):
        if name == "" and not (row_names and k == 0):   # R's write.csv leaves the row-name column unnamed
            problems.append(Problem(file, 1, None, f"column {k + 1}", "the column has no name"))
    return problems


def read_csv_table(path: str | Path, required: Sequence[str] = (), row_names: bool = False,
                   repeated_names: bool = False) -> CsvTable:
    """Read and shape-check a CSV file; `required` are column names it must have.

    Raises :class:`InputError` (file, line, what) for an unreadable file, a header lacking
    `required` columns or repeating or leaving out a name, or rows whose number of cells is not
    the header's. With `row_names`, the first column holds row names and may have no name in the
    header (as R's ``write.csv`` writes a matrix). With `repeated_names`, a name may repeat: the
    caller then passes the table through :func:`without_repeated` with the columns it reads. Emits an :class:`~psyq.engine.files.notices.InputNotice` for everything read otherwise
    than written (a dropped empty last column, a ';' or tab separator); they are also in
    :attr:`CsvTable.notices`.

    Example:
        >>> table = read_csv_table("tests/data/mini_answers.csv", required=["respondent_id"])
        >>> table.header[:2], table.lines[:2]
        (['respondent_id', 'a'], [2, 3])
    """
    file = str(path)
    text = decode_text(file, read_input_bytes(path))
    if not text.strip():
        raise InputError.single(file, "the file is empty (no header line)")
    notices: list[Problem] = []
    delimiter, said = _choose_delimiter(file, text, required)
    if said:
        notices.append(said)
    records = _records(file, text, delimiter)
    header = records[0][1]
    body = [(line, cells) for line, cells in records[1:] if any(cells)]
    header = _drop_trailing_empty_column(file, header, body, notices)
    if problems := _header_problems(file, header, required, row_names, repeated_names):
        raise InputError(problems)
    problems = []
    for line, cells in body:
        if len(cells) != len(header):
            more = len(cells) > len(header)
            problems.append(Problem(file, line, None, "", f"the row has {len(cells)} cells but the header has "
                                    f"{len(header)} columns" + ("; is there a comma in a value that is not "
                                                                "in quotes?" if more else "")))
    if problems:
        raise InputError(problems)
    for notice in notices:
        notify(notice)
    return CsvTable(file, header, [cells for _, cells in body], [line for line, _ in body], delimiter, notices)


def without_repeated(table: CsvTable, read: Sequence[str], reader: str) -> CsvTable:
    """`table` without every column whose name its header repeats and that is not among `read`
    (the columns `reader`, e.g. a codebook, reads); a notice names those left out. A column that is
    read and repeated is an error at each of its later places (``file:1:column``): which of them
    holds the answers cannot be told.

    Example:
        >>> table = CsvTable("x.csv", ["id", "Complete?", "q1", "Complete?"], [["p1", "2", "3", "2"]], [2])
        >>> without_repeated(table, ["id", "q1"], "the codebook b.yaml").header
        ['id', 'q1']
        >>> without_repeated(CsvTable("x.csv", ["id", "q1", "q1"], [["p1", "3", "4"]], [2]), ["id", "q1"], "it")
        Traceback (most recent call last):
        ...
        psyq.engine.files.errors.InputError: x.csv:1:3: column 'q1': the header names 'q1' 2 times (columns 2, 3); it reads it, so it must appear once
    """
    counts = Counter(table.header)
    repeated = [name for name, count in counts.items() if count > 1]
    if not repeated:
        return table
    wanted = set(read)
    problems = []
    for name in repeated:
        if name not in wanted:
            continue
        places = [k + 1 for k, h in enumerate(table.header) if h == name]
        for place in places[1:]:
            problems.append(Problem(table.file, 1, place, f"column '{name}'", f"the header names '{name}' "
                                    f"{counts[name]} times (columns {', '.join(map(str, places))}); {reader} reads "
                                    "it, so it must appear once"))
    if problems:
        raise InputError(problems)
    keep = [k for k, name in enumerate(table.header) if counts[name] == 1]
    notice = Problem(table.file, 1, None, "", f"column(s) {', '.join(repr(n) for n in repeated)} appear more than "
                                              f"once and are not read by {reader}: left out")
    notify(notice)
    return CsvTable(table.file, [table.header[k] for k in keep], [[row[k] for k in keep] for row in table.rows],
                    list(table.lines), table.delimiter, [*table.notices, notice])
