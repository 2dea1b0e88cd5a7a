"""People's answer files of a jsPsych questionnaire, joined into the one CSV ``psyq report --human`` reads.

Opened from disk, the page saves one file per person (``<study>_<respondent>.csv``: a header and one
row); a hosting service may join many people's results into one file, each with its own header
(JATOS's export of result data puts one result after another). :func:`gather_answers` reads any
mix of both, keeps every header line out but the first, and writes one CSV.

Every file must have the same columns in the same order (the same questionnaire): a file with
other columns is an error at its line 1 naming the difference, never merged by guessing.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.csv").write_text('"respondent_id","iri_1"\\r\\n"p1","3"\\r\\n')
    >>> _ = (folder / "b.csv").write_text('"respondent_id","iri_1"\\r\\n"p2",""\\r\\n"respondent_id","iri_1"\\r\\n"p3","0"\\r\\n')
    >>> gather_answers([folder / "a.csv", folder / "b.csv"], folder / "people.csv")
    3
    >>> (folder / "people.csv").read_text().splitlines()
    ['respondent_id,iri_1', 'p1,3', 'p2,', 'p3,0']
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Sequence

from psyq.engine.files.atomic import write_text_atomic
from psyq.engine.files.csvfile import read_csv_table
from psyq.engine.files.errors import InputError, Problem


def gather_answers(files: Sequence[str | Path], out: str | Path) -> int:
    """Join the answer files `files` into one CSV at `out`; returns the number of people (rows).

    Raises :class:`InputError` (``file:line: what``) for a file with other columns than the first
    file's, or one without answers.
    """
    header: list[str] | None = None
    first = ""
    rows: list[list[str]] = []
    problems: list[Problem] = []
    for path in files:
        table = read_csv_table(path)
        if header is None:
            header, first = list(table.header), str(path)
        elif table.header != header:
            missing = [c for c in header if c not in table.header]
            extra = [c for c in table.header if c not in header]
            said = "; ".join(part for part in (f"lacks {', '.join(missing[:8])}" if missing else "",
                                               f"has {', '.join(extra[:8])} besides" if extra else "") if part)
            problems.append(Problem(table.file, 1, None, "", f"not the same questionnaire as {first}: its columns "
                                    f"differ ({said or 'the same columns in another order'})"))
            continue
        kept = [r for r in table.rows if r != header]     # a joined export repeats the header per result
        if not kept:
            problems.append(Problem(table.file, 1, None, "", "no answers: the file holds only its header"))
        rows.extend(kept)
    if problems:
        raise InputError(problems)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    write_text_atomic(out, text.getvalue())
    return len(rows)
