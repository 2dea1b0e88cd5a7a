"""A run: one administration of a study, its phases called in order.

:func:`administer` builds the study's backends and its run directory, ``runs/<study-id>/<run-id>/``
(the run id: engine/administer/record.py), takes the run's lock, then: copies what the answers depend
on into the directory (record), plans every trial (engine/administer/plan.py), writes the manifest
(record), sends the trials not yet finished, storing each as it ends (engine/administer/send.py),
and writes in the manifest how the run ended (record). Running the same study again opens the same
directory and resumes it: nothing finished is sent again.

One process writes a run at a time (:class:`~psyq.engine.store.runlock.RunLock`): a second `psyq run` of
the same run stops at once with :class:`~psyq.engine.files.errors.RunLocked`. A backend that cannot be
reached, a provider that refuses requests in a way retrying cannot fix, and an interrupt (Ctrl-C,
SIGTERM) stop the run early; every answer received is kept, and the result says why it stopped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from psyq.engine.backends import BackendConfig, HttpBackend, make_backend
from psyq.engine.files.errors import BackendUnreachable, ProviderRefused
from psyq.engine.store.run_dir import RunDir
from psyq.engine.design.prices import PriceTable, combine
from psyq.engine.store.runlock import RunLock
from psyq.engine.administer.plan import plan_run
from psyq.engine.administer.record import (ProgressCallback, copy_inputs, record_end, record_start, run_id_for,
                                           run_manifest)
from psyq.engine.administer.send import StartCallback, send_run
from psyq.engine.administer.ssr_rating import rate_unrated
from psyq.engine.store.run_store import RunStore
from psyq.engine.design.study import Study, require_item_texts


@dataclass
class RunResult:
    run_dir: RunDir
    planned: int
    already_finished: int
    counts: dict[str, int]
    interrupted: bool = False
    unreachable: str | None = None   # why the run stopped early: a backend could not be reached
    refused: str | None = None       # why the run stopped early: the provider refused requests (its words)
    notes: list[str] | None = None   # what the user should know (e.g. a manifest rebuilt)


async def administer(study: Study, runs_dir: str | Path = "runs",
                     backend_configs: list[BackendConfig] | None = None,
                     on_start: StartCallback | None = None,
                     on_trial: ProgressCallback | None = None,
                     log: Callable[[str], None] = print, overrides: list[dict[str, Any]] | None = None,
                     prices: PriceTable | None = None) -> RunResult:
    """Run (or resume) `study`; return where it went and what it counted.

    `overrides`: the command-line changes to the study's backends (engine/administer/overrides.py), recorded
    in the manifest; `prices`: the price table for the manifest's cost (default: the study's `prices:`).

    Example:
        >>> result = asyncio.run(administer(load_study("quickstart")))  # sends requests to the local model  # doctest: +SKIP
    """
    require_item_texts(study)   # items without text cannot be asked (the one check, psyq run's too)
    configs = backend_configs or study.spec.backends
    backends = {c.id: make_backend(c, log=log) for c in configs}
    run_id = run_id_for(study, backends)
    run = run_folder(study, runs_dir, run_id)
    # Taken before anything in the directory is written: a second process stops here.
    with RunLock(run.path):
        table = prices or combine(study.spec.prices, study.path, None)
        extra = {"overrides": overrides or [], "prices": table.to_json() if table else None}
        return await _administer_locked(study, run, backends, run_id, on_start, on_trial, log, extra)


def run_folder(study: Study, runs_dir: str | Path, run_id: str) -> RunDir:
    """The folder a run of `study` with id `run_id` has under `runs_dir` (``runs_dir/<study id>/<run
    id>``), whether or not it exists yet: where `administer` writes it, and what a plan names.

    Example:
        >>> from psyq import load_study
        >>> run_folder(load_study("quickstart"), "runs", "3f86b62be981").path.as_posix()
        'runs/quickstart/3f86b62be981'
    """
    return RunDir(Path(runs_dir) / study.id / run_id)


async def _administer_locked(study: Study, run: RunDir, backends: dict[str, HttpBackend], run_id: str,
                             on_start: StartCallback | None, on_trial: ProgressCallback | None,
                             log: Callable[[str], None], extra: dict[str, Any] | None = None) -> RunResult:
    for backend in backends.values():
        if backend.starts_server:   # the log of the server it starts goes in the run's directory
            backend.log_dir = run.path
    copy_inputs(study, run)
    planned = plan_run(study, backends)
    manifest = run_manifest(study, backends, run, run_id, planned.trials, extra)
    notes: list[str] = []
    unreachable: str | None = None
    refused: str | None = None
    with RunStore(run.database) as store:
        finished, already = record_start(study, run, store, manifest, planned.trials, notes)
        interrupted = False
        started: list[HttpBackend] = []
        try:
            await send_run(planned, backends, store, finished, started, notes, on_start, on_trial, log)
            notes.extend((await rate_unrated(study, planned.trials, store, log)).notes())   # answer: ssr's mapping
        except BackendUnreachable as exc:
            unreachable = str(exc)   # every answer received so far is committed; a rerun resumes
        except ProviderRefused as exc:
            refused = exc.stop_message()   # retrying cannot fix it: stop rather than send every trial
        except (asyncio.CancelledError, KeyboardInterrupt):
            interrupted = True  # every trial finished so far is committed; a rerun resumes
        finally:
            for backend in started:
                await backend.close()
            counts = record_end(run, store, manifest, backends, interrupted, unreachable or refused)
    return RunResult(run, len(planned.trials), already, counts, interrupted, unreachable, refused, notes)
