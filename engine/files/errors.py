"""The exceptions psyq raises for bad input.

Every problem a user can fix in a file is a :class:`Problem` that names the file, the line and
column, the field path and what is wrong. Loaders collect all problems of a file before raising
one :class:`InputError`, so a user fixes a file in one pass rather than one error per run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file.

    Example:
        >>> str(Problem("iri.yaml", 12, 5, "items[3].reverse", "must be true or false"))
        'iri.yaml:12:5: items[3].reverse: must be true or false'
    """

    file: str
    line: int | None
    column: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class PsyqError(Exception):
    """Base class of every error psyq raises on purpose."""


class InputError(PsyqError):
    """A user-supplied file (YAML, CSV) is malformed or inconsistent.

    Raised by every loader; the CLI prints each problem on its own line and exits with code 2.
    """

    def __init__(self, problems: list[Problem]):
        if not problems:
            raise ValueError("InputError needs at least one problem")
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def single(cls, file: str | Path, message: str, line: int | None = None,
               column: int | None = None, field: str = "") -> "InputError":
        """Build an error from one problem (for files that fail before any field is read)."""
        return cls([Problem(str(file), line, column, field, message)])
