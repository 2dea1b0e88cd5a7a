"""The live progress display of `psyq run`: per backend done/total, rate, ETA, retries, failures.

Retries and failures are shown as they happen, so a run that is waiting on a rate-limited or
failing server never looks hung. "failed" and "missing" count the trials stored with that status,
exactly as the run's closing summary and `psyq status` count them.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from psyq.engine.backends import HttpBackend
from psyq.engine.store.run_store import TrialRecord


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
        self.missing: dict[str, int] = {}    # trials stored as missing (an answer with its reason)
        self.failed: dict[str, int] = {}     # trials stored as failed (no answer: a rerun retries them)
        self._shown: dict[str, float] = {}   # when each backend's rate and health text were last set
        self._advanced: dict[str, float] = {}   # when each backend's bar was last advanced
        self._pending: dict[str, int] = {}   # trials finished since then

    def start(self, backends: dict[str, HttpBackend], totals: dict[str, int], already: dict[str, int]) -> None:
        self.backends = backends
        for backend_id, total in totals.items():
            self.missing[backend_id] = self.failed[backend_id] = 0
            self.tasks[backend_id] = self.progress.add_task(
                backend_id, total=total, completed=already.get(backend_id, 0), rate="", health="")
        self.progress.start()

    def trial(self, backend_id: str, record: TrialRecord) -> None:
        if record.status == "missing":
            self.missing[backend_id] += 1
        elif record.status == "failed":
            self.failed[backend_id] += 1
        self._pending[backend_id] = self._pending.get(backend_id, 0) + 1
        now = time.monotonic()
        # rich's update takes a lock and keeps a sample per call, and Task.speed sums up to 1,000
        # samples: hand rich the trials finished every 20 ms and recompute the text at most 5
        # times a second (rich redraws 10 times a second anyway), not per trial (bench/RESULTS.md).
        if now - self._advanced.get(backend_id, 0.0) < 0.02:
            return
        self._advanced[backend_id] = now
        advance, self._pending[backend_id] = self._pending[backend_id], 0
        if now - self._shown.get(backend_id, 0.0) >= 0.2:
            self._shown[backend_id] = now
            self.progress.update(self.tasks[backend_id], advance=advance, **self._fields(backend_id))
        else:
            self.progress.update(self.tasks[backend_id], advance=advance)

    def _fields(self, backend_id: str) -> dict[str, str]:
        stats = self.backends[backend_id].stats
        speed = self.progress.tasks[self.tasks[backend_id]].speed
        return {"rate": f"{speed:.1f}/s" if speed else "",
                "health": f"retries {stats.retries}  failed {self.failed[backend_id]}  missing {self.missing[backend_id]}"}

    def say(self, message: str) -> None:
        """Print a message above the bars as it is: a server's words are not rich markup, and a
        long line is not wrapped (so it can be searched and copied whole)."""
        self.console.print(message, markup=False, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        for backend_id, task in self.tasks.items():    # the last counts shown are exact
            self.progress.update(task, advance=self._pending.pop(backend_id, 0), **self._fields(backend_id))
        self.progress.stop()
