"""Notices: things psyq did with an input file that the user must hear about, though they are
not errors (a trailing empty column ignored, a file read as ';'-separated).

A notice is a Python warning of category :class:`InputNotice`, so library users see it (or
turn it into an error with ``warnings.simplefilter("error", InputNotice)``) and tests can catch
it with ``pytest.warns``; the command line prints each one to standard error as
``note: file:line: what was done`` (see :func:`print_notices_to_stderr`).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from psyq.engine.files.errors import Problem


class InputNotice(UserWarning):
    """An input file was read, but not exactly as written; the message says what was done."""


def notify(problem: Problem) -> None:
    """Emit `problem` (file, line, what was done) as an :class:`InputNotice`.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     notify(Problem("a.csv", 1, None, "", "read as ';'-separated"))
        >>> str(seen[0].message)
        "a.csv:1: read as ';'-separated"
    """
    warnings.warn(InputNotice(str(problem)), stacklevel=2)


def print_notices_to_stderr() -> None:
    """Make every :class:`InputNotice` print as ``note: …`` on standard error, once per distinct
    message (not once per place in the code, Python's default: a file read three times by one
    command says what was done to it once); other warnings are unchanged."""
    warnings.simplefilter("always", InputNotice)
    shown = warnings.showwarning
    printed: set[str] = set()

    def show(message: Any, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if issubclass(category, InputNotice):
            if str(message) not in printed:
                printed.add(str(message))
                print(f"note: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
