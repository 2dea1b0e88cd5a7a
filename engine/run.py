"""A run: the directory that holds one administration of a study.

``runs/<study-id>/<run-id>/`` holds a copy of the study file, ``manifest.json`` (versions,
hashes, backends, protocol, counts, times) and ``run.sqlite`` (the :class:`RunStore`). The run id
is a hash of the study, instrument and cohort files and of the backends' identities, so running
the same study again opens the same directory and resumes it; change anything that decides the
answers and a new run begins.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from . import __version__
from .backends import BackendConfig, HttpBackend, make_backend
from .errors import InputError
from .persona import render_system_prompt
from .runner import ProgressCallback, plan_trials, run_pending
from .store import RunStore
from .study import Study, require_item_texts

MANIFEST = "manifest.json"
DATABASE = "run.sqlite"


@dataclass(frozen=True)
class RunDir:
    """Paths of one run."""

    path: Path

    @property
    def manifest(self) -> Path:
        return self.path / MANIFEST

    @property
    def database(self) -> Path:
        return self.path / DATABASE

    def read_manifest(self) -> dict[str, Any]:
        return json.loads(self.manifest.read_text())


def open_run_dir(path: str | Path) -> RunDir:
    """An existing run directory (InputError if `path` is not one)."""
    run = RunDir(Path(path))
    if not run.manifest.exists() or not run.database.exists():
        raise InputError.single(path, f"not a run directory (no {MANIFEST} and {DATABASE} in it)")
    return run


def override_backend(base_url: str, model: str, api_key_env: str | None = None) -> BackendConfig:
    """The backend `psyq run --base-url URL --model NAME` puts in place of the study's."""
    return BackendConfig(id="cli", kind="openai", base_url=base_url, model=model, api_key_env=api_key_env)


def run_id_for(study: Study, backends: dict[str, HttpBackend]) -> str:
    """Same study files and backends → same id (so a rerun resumes)."""
    key = {"files": sorted(study.file_hashes().values()),
           "backends": {b: (backend.identity(), backend.config.model_dump(exclude={"concurrency",
                        "requests_per_minute", "tokens_per_minute", "timeout_s", "max_retries",
                        "backoff_s", "max_backoff_s"})) for b, backend in backends.items()}}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


def git_commit(folder: Path) -> str | None:
    """The git commit of the repository holding `folder`, if any (recorded in the manifest)."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _manifest(study: Study, backends: dict[str, HttpBackend], run_id: str, planned: int) -> dict[str, Any]:
    return {
        "psyq_version": __version__,
        "git_commit": git_commit(study.path.parent),
        "study": study.id,
        "run_id": run_id,
        "files": study.file_hashes(),
        "instruments": {i.id: i.version for i in study.instruments},
        "cohort": {"id": study.cohort.id, "respondents": len(study.cohort.personas)},
        # model_dump holds the *name* of the key's environment variable, never its value.
        "backends": {b: {"identity": x.identity(), "config": x.config.model_dump()} for b, x in backends.items()},
        "protocol": study.protocol.model_dump(),
        "seed": study.protocol.seed,
        "trials_planned": planned,
    }


@dataclass
class RunResult:
    run_dir: RunDir
    planned: int
    already_finished: int
    counts: dict[str, int]
    interrupted: bool = False


async def administer(study: Study, runs_dir: str | Path = "runs",
                     backend_configs: list[BackendConfig] | None = None,
                     on_start: Callable[[dict[str, HttpBackend], dict[str, int], dict[str, int]], None] | None = None,
                     on_trial: ProgressCallback | None = None,
                     log: Callable[[str], None] = print) -> RunResult:
    """Run (or resume) `study`; return where it went and what it counted.

    Example:
        >>> result = asyncio.run(administer(load_study("studies/quickstart.yaml")))  # doctest: +SKIP
    """
    require_item_texts(study)   # items without text cannot be asked
    configs = backend_configs or study.spec.backends
    backends = {c.id: make_backend(c, log=log) for c in configs}
    run_id = run_id_for(study, backends)
    run = RunDir(Path(runs_dir) / study.id / run_id)
    run.path.mkdir(parents=True, exist_ok=True)
    for backend in backends.values():
        if hasattr(backend, "log_dir"):
            backend.log_dir = run.path
    # Copies of what the answers depend on, so the run directory stands on its own.
    shutil.copy2(study.path, run.path / "study.yaml")
    (run.path / "instruments").mkdir(exist_ok=True)
    for instrument, source in zip(study.instruments, study.instrument_paths):
        shutil.copy2(source, run.path / "instruments" / f"{instrument.id}.yaml")
    trials = list(plan_trials(study, backends))
    manifest = _manifest(study, backends, run_id, len(trials))
    with RunStore(run.database) as store:
        store.put_respondents((p.id, p.attributes, p.backstory, render_system_prompt(p, study.cohort.template))
                              for p in study.cohort.personas)
        finished = store.finished_trial_ids()
        already = sum(t.trial_id in finished for t in trials)
        manifest["started_at"] = run.read_manifest().get("started_at") if run.manifest.exists() else _now()
        manifest["resumed_at"] = _now() if already else None
        run.manifest.write_text(json.dumps(manifest, indent=2))
        interrupted = False
        started: list[HttpBackend] = []
        try:
            pending = {b: sum(1 for t in trials if t.backend_id == b and t.trial_id not in finished) for b in backends}
            for backend_id, backend in backends.items():
                if pending[backend_id]:
                    await backend.start()
                    started.append(backend)
            if on_start:
                totals = {b: sum(t.backend_id == b for t in trials) for b in backends}
                on_start(backends, totals, {b: totals[b] - pending[b] for b in backends})
            await run_pending(trials, backends, store, study.protocol, on_trial)
        except (asyncio.CancelledError, KeyboardInterrupt):
            interrupted = True  # every trial finished so far is committed; a rerun resumes
        finally:
            for backend in started:
                await backend.close()
            counts = store.status_counts()
            manifest.update({
                "finished_at": None if interrupted else _now(),
                "trial_counts": counts,
                "answer_counts": store.answer_status_counts(),
                "backend_stats": {b: {"requests": x.stats.requests, "retries": x.stats.retries,
                                      "failures": x.stats.failures, "retry_reasons": x.stats.retry_reasons,
                                      "max_in_flight": x.stats.max_in_flight} for b, x in backends.items()},
            })
            run.manifest.write_text(json.dumps(manifest, indent=2))
    return RunResult(run, len(trials), already, counts, interrupted)
