"""Every exception psyq raises on purpose, in one tree under :class:`PsyqError`, defined here in
the lowest room so that every room raises them; ``psyq.errors`` (the repository's errors.py) is
their public name and draws the tree.

Every problem a user can fix in a file is a :class:`Problem` that names the file, the line and
column, the field path and what is wrong. Loaders collect all problems of a file before raising
one :class:`InputError`, so a user fixes a file in one pass rather than one error per run.

Exceptions used inside one module to steer its own flow (a retryable reply, a reply too long to
read) are that module's and never leave it.

Example:
    >>> issubclass(ProviderRefused, BackendError) and issubclass(BackendError, PsyqError)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psyq.engine.backends.provider_errors import ProviderRefusal


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


class RunLocked(PsyqError):
    """Another live process is writing to this run directory (it holds the run's lock file)."""

    def __init__(self, run_dir: Path, pid: str | None, lock_file: str = "run.lock"):
        holder = f"process {pid}" if pid else "another process"
        super().__init__(f"run {run_dir} is in progress in {holder} (it holds {run_dir / lock_file}); "
                         f"wait for it to finish or stop it, then run the same command again to resume")
        self.run_dir, self.pid = run_dir, pid


class StoreWriterGone(PsyqError):
    """The store's writer process ended while the run still had answers for it."""


class BackendError(PsyqError):
    """A request failed for good (retries exhausted, or an error that retrying cannot fix)."""

    def __init__(self, message: str, *, status: int | None = None, fatal: bool = False, attempts: int = 1,
                 body: dict[str, Any] | None = None):
        super().__init__(message)
        self.status = status
        self.endpoint: str | None = None   # the endpoint last tried (endpoint pools)
        self.fatal = fatal  # e.g. 401: every later request would fail the same way
        self.attempts = attempts
        self.body = body    # what the server last sent, cut to KEPT_BODY_CHARS (kept with the trial)


class ProviderRefused(BackendError):
    """The server refused a request in a way retrying cannot fix (a 4xx but 408/409/425/429).

    ``fatal`` once the run should stop: at the first 401/403/404, or at the STOP_AFTER-th
    identical refusal (engine/backends/provider_errors.py).
    """

    def __init__(self, message: str, *, refusal: ProviderRefusal, fix: str | None, count: int, fatal: bool,
                 backend_id: str, body: dict[str, Any] | None = None):
        super().__init__(message, status=refusal.status, fatal=fatal, body=body)
        self.refusal, self.fix, self.count, self.backend_id = refusal, fix, count, backend_id

    def stop_message(self) -> str:
        """Why the run stopped, in the provider's words, with the fix where psyq knows one."""
        times = "once" if self.count == 1 else f"{self.count} times"
        return (f"backend '{self.backend_id}': the server refused requests {times} in a way retrying cannot fix: "
                f"{self}" + (f"\nfix: {self.fix}" if self.fix else ""))


class BackendUnreachable(BackendError):
    """Connections to the server failed UNREACHABLE_AFTER times in a row: the run stops."""

    def __init__(self, message: str, *, url: str):
        super().__init__(message, fatal=True)
        self.url = url


class BatchApiError(BackendError):
    """A batch-API call failed for good."""

