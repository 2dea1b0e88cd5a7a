"""The live progress display of `psyq run`: per backend done/total, rate, ETA, retries, failures.

Retries and failures are shown as they happen, so a run that is waiting on a rate-limited or
failing server never looks hung.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from .backends import HttpBackend
from .store import TrialRecord


class RunProgress:
    """Wraps a rich Progress; call :meth:`start` when backends are up, :meth:`trial` per trial."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("{task.fields[health]}"), console=self.console, transient=False)
        self.tasks: dict[str, TaskID] = {}
        self.backends: dict[str, HttpBackend] = {}
        self.missing: dict[str, int] = {}

    def start(self, backends: dict[str, HttpBackend], totals: dict[str, int], already: dict[str, int]) -> None:
        self.backends = backends
        for backend_id, total in totals.items():
            self.missing[backend_id] = 0
            self.tasks[backend_id] = self.progress.add_task(
                backend_id, total=total, completed=already.get(backend_id, 0), rate="", health="")
        self.progress.start()

    def trial(self, backend_id: str, record: TrialRecord) -> None:
        if record.status != "answered":
            self.missing[backend_id] += 1
        stats = self.backends[backend_id].stats
        task = self.progress.tasks[self.tasks[backend_id]]
        speed = task.speed
        self.progress.update(
            self.tasks[backend_id], advance=1,
            rate=f"{speed:.1f}/s" if speed else "",
            health=f"retries {stats.retries}  failed {stats.failures}  missing {self.missing[backend_id]}")

    def stop(self) -> None:
        self.progress.stop()
