"""A cohort's personas read from a CSV file (a cohort file's `csv:` source, or
:func:`read_personas_csv`): column `id`, optional `backstory`, every other column an attribute;
every bad row reported with its line.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from psyq.engine.design.persona import Persona, check_attribute_name, check_persona_id
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.inputfile import decode_text, read_input_bytes
from psyq.engine.files.validation import raise_problems

_INT = re.compile(r"^[+-]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")


def parse_cell(text: str) -> str | int | float:
    """A CSV cell as a number where it is one, else as text.

    Only plain decimal numbers count: 'nan', 'inf' and '1_000' stay text, and so do codes with a
    leading zero ('007', '02139'), which a number would silently change.

    Example:
        >>> parse_cell("34"), parse_cell("2.5"), parse_cell("02139"), parse_cell("female")
        (34, 2.5, '02139', 'female')
    """
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text) and not re.match(r"^[+-]?0[0-9]", text):
        return float(text)
    return text


def read_personas_csv_lines(path: str | Path) -> list[tuple[int, Persona]]:
    """Personas of a CSV file, each with the line its row starts on (header = line 1), so that a
    problem found later (a placeholder a persona cannot fill) is said at its row.

    Example (a CSV written to a temporary folder):
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "personas.csv"
        ...     _ = path.write_text('id,backstory\\np1,"A nurse\\nin Leeds."\\np2,\\n', encoding="utf-8")
        ...     [(line, persona.id) for line, persona in read_personas_csv_lines(path)]
        [(2, 'p1'), (4, 'p2')]
    """
    file = str(path)
    # A bounded regular UTF-8 file (a byte-order mark, which spreadsheets often write, is dropped).
    text = decode_text(file, read_input_bytes(path))
    rows = _csv_rows(file, io.StringIO(text, newline=""))
    if not rows:
        raise InputError.single(file, "the file is empty")
    header = [name.strip() for name in rows[0][1]]
    raise_problems(_check_header(file, header))

    problems: list[Problem] = []
    out: list[tuple[int, Persona]] = []
    first_line: dict[str, int] = {}
    for line, cells in rows[1:]:
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue  # blank rows, or the ',,,' spreadsheets leave at the end, hold no persona
        if len(cells) != len(header):
            problems.append(Problem(file, line, None, "", f"the row has {len(cells)} cells but the "
                                                          f"header has {len(header)} columns"))
            continue
        row = dict(zip(header, cells))
        pid = row["id"]
        if message := _csv_id_problem(pid, first_line):
            problems.append(Problem(file, line, None, "column 'id'", message))
            continue
        first_line[pid] = line
        attributes = {name: parse_cell(value) for name, value in row.items()
                      if name not in ("id", "backstory") and value != ""}
        out.append((line, Persona(id=pid, attributes=attributes, backstory=row.get("backstory") or None)))
    raise_problems(problems)
    if not out:
        raise InputError.single(file, "no personas: the file has a header but no rows")
    return out


def _csv_rows(file: str, handle: Iterable[str]) -> list[tuple[int, list[str]]]:
    # csv.reader's line_num is the line a row *ends* on; a quoted cell may span lines (a
    # backstory often does), so the row starts one line after the previous row ended.
    reader = csv.reader(handle)
    rows = []
    try:
        while True:
            start = reader.line_num + 1
            try:
                rows.append((start, next(reader)))
            except StopIteration:
                return rows
    except csv.Error as exc:
        raise InputError.single(file, f"not a readable CSV file: {exc}", line=reader.line_num) from None


def _check_header(file: str, header: list[str]) -> list[Problem]:
    def at_header(field: str, message: str) -> Problem:
        return Problem(file, 1, None, field, message)

    problems = []
    if "id" not in header:
        problems.append(at_header("", "missing column 'id' (the persona ids)"))
    for name, count in Counter(header).items():
        if count > 1:
            problems.append(at_header(f"column '{name}'", "the column appears more than once"))
    for i, name in enumerate(header):
        if name == "":
            problems.append(at_header(f"column {i + 1}", "the column has no name"))
        elif name not in ("id", "backstory") and (message := check_attribute_name(name)):
            problems.append(at_header(f"column '{name}'", message))
    return problems


def _csv_id_problem(pid: str, first_line: dict[str, int]) -> str | None:
    if pid == "":
        return "the id is empty"
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", pid):  # the pattern of psyq.engine.design.instrument.Id
        return (f"{pid!r} is not a valid id: use letters, digits, '_', '-' or '.', "
                "starting with a letter or digit")
    if pid in first_line:
        return f"id '{pid}' is already used on line {first_line[pid]}"
    return check_persona_id(pid)


def read_personas_csv(path: str | Path) -> list[Persona]:
    """Read personas from a CSV file: column `id`, optional `backstory`, every other column an attribute.

    Cells holding numbers become numbers; an empty cell leaves the attribute out for that persona.
    Raises :class:`~psyq.engine.files.errors.InputError` with the line of every bad row (header = line 1).

    Example (a CSV written to a temporary folder):
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "personas.csv"
        ...     _ = path.write_text("id,age,gender,backstory\\np1,34,female,A nurse in Leeds.\\np2,,male,\\n",
        ...                         encoding="utf-8")
        ...     personas = read_personas_csv(path)
        >>> personas[0].attributes, personas[0].backstory
        ({'age': 34, 'gender': 'female'}, 'A nurse in Leeds.')
        >>> personas[1].attributes, personas[1].backstory
        ({'gender': 'male'}, None)
    """
    return [persona for _, persona in read_personas_csv_lines(path)]
