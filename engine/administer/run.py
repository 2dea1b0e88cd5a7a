"""A run: the directory that holds one administration of a study.

``runs/<study-id>/<run-id>/`` holds a copy of the study file, ``manifest.json`` (versions,
hashes, backends, protocol, counts, times) and ``run.sqlite`` (the :class:`RunStore`). The run id
is a hash of the instrument and cohort files, the study's protocol and the backends' identities, so running
the same study again opens the same directory and resumes it; change anything that decides the
answers and a new run begins. What does not decide an answer is left out of the id: the name of
the environment variable holding the key, pacing and retry settings, and how the endpoint is
spelled (``localhost`` or ``127.0.0.1``, a default port, a trailing slash: engine/backends/endpoint.py).

One process writes a run at a time (:class:`~psyq.engine.store.runlock.RunLock`): a second `psyq run` of
the same run stops at once with :class:`~psyq.engine.store.runlock.RunLocked`. The manifest is written
atomically; should it be damaged all the same, rerunning the study rebuilds it (the answers
are in ``run.sqlite``, and nothing finished is sent again).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from psyq.engine import __version__
from psyq.engine.files.atomic import write_json_atomic, write_text_atomic
from psyq.engine.backends import BackendConfig, HttpBackend, make_backend
from psyq.engine.backends.base import BackendUnreachable, ProviderRefused
from psyq.engine.backends.endpoint import base_url_problem, key_env_problem, normalise_endpoint
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.shipped import shipped_name
from psyq.engine.store.clock import utc_now
from psyq.engine.store.run_dir import DATABASE, SITUATIONS, RunDir
from psyq.engine.design.persona_prompt import render_system_prompt
from psyq.engine.design.prices import PriceTable, combine
from psyq.engine.store.runlock import RunLock
from psyq.engine.administer.runner import ProgressCallback, plan_trials, run_pending
from psyq.engine.administer.stages import plan_chains, run_chains, stage_trials
from psyq.engine.store.run_store import RunStore
from psyq.engine.design.study import Study, require_item_texts
from psyq.engine.results.usage import token_usage


def check_command_line_backend(base_url: str | None, api_key_env: str | None) -> None:
    """--base-url and --api-key-env checked as a study's backend is (InputError with the option's name).

    Example:
        >>> check_command_line_backend("http://127.0.0.1:8080/v1", "MY_KEY")
    """
    problems = []
    if base_url is not None and (why := base_url_problem(base_url)):
        problems.append(Problem("--base-url", None, None, "", why))
    if api_key_env is not None and (why := key_env_problem(api_key_env)):
        problems.append(Problem("--api-key-env", None, None, "", why))
    if problems:
        raise InputError(problems)


# Settings that pace or retry requests: they never change an answer, so not part of the run id.
_NOT_IDENTITY = {"concurrency", "requests_per_minute", "tokens_per_minute", "timeout_s", "max_retries",
                 "backoff_s", "max_backoff_s",
                 # how requests go out (one by one or as provider batches) does not change an answer
                 "mode", "reasks", "batch_size", "batch_poll_s", "batch_max_poll_s",
                 # Replicas of one model (engine/backends/pool.py): the first URL is in the identity;
                 # adding or removing replicas resumes the same run.
                 "base_urls", "endpoint_cooldown_s",
                 # A local backend's identity holds its serving as resolved (left out: reproducible),
                 # so leaving it out and writing the default are one run, and other kinds keep their ids.
                 "serving"}


# Backend settings for reasoning models: in the id only when set, so a study that does not use them
# has the same id whichever psyq computes it.
_ONLY_WHEN_SET = ("reasoning_effort", "reasoning_budget", "capabilities")


def run_id_for(study: Study, backends: dict[str, HttpBackend]) -> str:
    """Same answers decided the same way → same id (so a rerun resumes).

    Hashed: the instrument and cohort files, the study's id and protocol, and each backend's
    identity and settings that decide answers. Left out: the study file's comments and
    description, the key variable's NAME (K1 and K2 holding one key are one run), pacing and
    retry settings, and the base URL's spelling (normalised, engine/backends/endpoint.py), and
    how the study names its files (a shipped name or a path to the same bytes is one run).
    """
    def config_key(backend: HttpBackend) -> dict[str, Any]:
        config = backend.config.model_dump(exclude=_NOT_IDENTITY)
        for name in _ONLY_WHEN_SET:
            if config.get(name) is None:
                config.pop(name, None)
        config["api_key_env"] = None
        if backend.config.base_urls and not config.get("base_url"):
            config["base_url"] = backend.config.base_urls[0]   # a pool is named by its first replica
        if config.get("base_url"):
            config["base_url"] = normalise_endpoint(config["base_url"])
        return config

    hashes = study.file_hashes()
    study_file = str(study.path)
    key: dict[str, Any] = {"files": sorted(h for p, h in hashes.items() if p != study_file),
                           "study": study.spec.model_dump(include={"psyq", "id", "protocol"}), "format": 2}
    key["backends"] = {b: (backend.identity(), config_key(backend)) for b, backend in backends.items()}
    if study.prompt_perturbation is not None:   # perturbed prompts: another run (absent: not in the key)
        key["prompt_perturbation"] = study.prompt_perturbation
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


def manifest_files(study: Study) -> dict[str, str]:
    """The study's input files as the manifest records them: sha256 by path relative to the study
    file's folder, with '/' as separator, so that a run directory names no folder of this machine.

    The run id still hashes :meth:`Study.file_hashes` (paths as loaded), so ids do not change.

    Example:
        >>> from psyq.engine.design.study import load_study
        >>> sorted(manifest_files(load_study("iri_adults")))
        ['../instruments/iri.yaml', '../personas/adults_small.yaml', 'iri_adults.yaml']
    """
    folder = study.path.resolve().parent
    return {_relative(Path(p).resolve(), folder): digest for p, digest in study.file_hashes().items()}


def shipped_record(study: Study) -> dict[str, str]:
    """Which of the study's input files are psyq's own, as the manifest records them (the path as in
    `files` -> kind, name and the psyq version that shipped it): a later psyq with an edited
    instrument is then visibly another file, not the same name meaning something else.

    Example:
        >>> from psyq.engine.design.study import load_study
        >>> shipped_record(load_study("quickstart"))["../instruments/iri.yaml"][:14]
        'instrument iri'
    """
    folder = study.path.resolve().parent
    out = {}
    for path in study.file_hashes():
        named = shipped_name(path)
        if named is not None:
            out[_relative(Path(path).resolve(), folder)] = f"{named[0]} {named[1]} (shipped with psyq {__version__})"
    return out


def cohort_record(provenance: dict[str, Any], study_path: Path) -> dict[str, Any]:
    """A `from_data:` cohort's provenance (engine/design/cohort_data.py) as the manifest records it:
    the data file's and codebook's paths relative to the study file's folder, as `files` gives them.

    Example:
        >>> cohort_record({"file": "/w/data/x.csv", "codebook": None, "mode": "twins"}, Path("/w/studies/s.yaml"))
        {'file': '../data/x.csv', 'codebook': None, 'mode': 'twins'}
    """
    folder = study_path.resolve().parent
    out = dict(provenance)
    for key in ("file", "codebook"):
        if out.get(key):
            out[key] = _relative(Path(out[key]).resolve(), folder)
    return out


def _relative(path: Path, folder: Path) -> str:
    """`path` relative to `folder` ('/'-separated); absolute when there is no relative path (another
    drive on Windows)."""
    try:
        return Path(os.path.relpath(path, folder)).as_posix()
    except ValueError:
        return path.as_posix()


def git_commit(folder: Path) -> str | None:
    """The git commit of the repository holding `folder`, if any (recorded in the manifest)."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _manifest(study: Study, backends: dict[str, HttpBackend], run: RunDir, run_id: str,
              planned: int) -> dict[str, Any]:
    return {
        "psyq_version": __version__,
        "git_commit": git_commit(study.path.parent),
        "study": study.id,
        "run_id": run_id,
        # Relative paths, so that the run directory can be shared (manifest_file_paths reads them).
        "study_folder": _relative(study.path.resolve().parent, run.path.resolve()),
        "files": manifest_files(study),
        "shipped": shipped_record(study),
        "instruments": {i.id: i.version for i in study.instruments},
        "cohort": {"id": study.cohort.id, "respondents": len(study.cohort.personas),
                   # A cohort drawn from a human data file: which rows, with what weights, how, and what was skipped.
                   **({"from_data": cohort_record(study.cohort.provenance, study.path)}
                      if study.cohort.provenance is not None else {})},
        # model_dump holds the *name* of the key's environment variable, never its value.
        "backends": {b: {"identity": x.identity(), "config": x.config.model_dump(),
                         # what the model accepts, as psyq read it (engine/backends/capabilities.py)
                         "capabilities": x.capabilities.to_json()} for b, x in backends.items()},
        "protocol": study.protocol.model_dump(),
        "seed": study.protocol.seed,
        "trials_planned": planned,
        **({"prompt_perturbation": study.prompt_perturbation} if study.prompt_perturbation is not None else {}),
        # Only for a staged study, so that the manifests of all other runs stay as they were.
        **({"stages": [stage.model_dump() for stage in study.spec.stages],
            "situations": {"id": study.situations.id, "content_source": study.situations.content_source,
                           "source": study.situations.source, "count": len(study.situations.situations),
                           "per_respondent": study.spec.situations.model_dump()["per_respondent"]}}
           if study.spec.stages and study.situations is not None and study.spec.situations is not None else {}),
    }


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
                     on_start: Callable[[dict[str, HttpBackend], dict[str, int], dict[str, int]], None] | None = None,
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
    run = RunDir(Path(runs_dir) / study.id / run_id)
    # Taken before anything in the directory is written: a second process stops here.
    with RunLock(run.path):
        table = prices or combine(study.spec.prices, study.path, None)
        extra = {"overrides": overrides or [], "prices": table.to_json() if table else None}
        return await _administer_locked(study, run, backends, run_id, on_start, on_trial, log, extra)


async def _administer_locked(study: Study, run: RunDir, backends: dict[str, HttpBackend], run_id: str,
                             on_start, on_trial: ProgressCallback | None,
                             log: Callable[[str], None], extra: dict[str, Any] | None = None) -> RunResult:
    for backend in backends.values():
        if backend.starts_server:   # the log of the server it starts goes in the run's directory
            backend.log_dir = run.path
    # Copies of what the answers depend on, so the run directory stands on its own.
    write_text_atomic(run.path / "study.yaml", study.path.read_text(encoding="utf-8"))
    (run.path / "instruments").mkdir(exist_ok=True)
    for instrument, source in zip(study.instruments, study.instrument_paths):
        write_text_atomic(run.path / "instruments" / f"{instrument.id}.yaml", source.read_text(encoding="utf-8"))
    if study.situations_path is not None:   # a staged study's situation set (engine/administer/stages.py)
        write_text_atomic(run.path / SITUATIONS, study.situations_path.read_text(encoding="utf-8"))
    # A study with `stages:` runs as conversations (engine/administer/stages.py); any other as independent trials.
    chains = plan_chains(study, backends) if study.spec.stages else None
    trials = stage_trials(chains) if chains is not None else list(plan_trials(study, backends))
    manifest = _manifest(study, backends, run, run_id, len(trials))
    manifest.update(extra or {})
    manifest["trials_planned_by"] = planned_by(trials)   # per backend and instrument, for `psyq status`
    notes: list[str] = []
    unreachable: str | None = None
    refused: str | None = None
    with RunStore(run.database) as store:
        store.put_respondents((p.id, p.attributes, p.backstory, render_system_prompt(p, study.cohort.template))
                              for p in study.cohort.personas)
        finished = store.finished_trial_ids()
        already = sum(t.trial_id in finished for t in trials)
        manifest["started_at"] = _started_at(run, store, notes)
        manifest["resumed_at"] = utc_now() if already else None
        write_json_atomic(run.manifest, manifest)
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
            if chains is not None:
                notes.extend((await run_chains(chains, backends, store, study.protocol, on_trial)).notes())
            else:
                # Backends with `mode: batch` go through their provider's batch API (engine/administer/batch.py).
                online = {b: x for b, x in backends.items() if x.config.mode != "batch"}
                batched = {b: x for b, x in backends.items() if x.config.mode == "batch"}
                jobs = [run_pending([t for t in trials if t.backend_id in online], online, store, study.protocol,
                                    on_trial)] if online else []
                if batched:
                    jobs.append(_run_batches(trials, batched, store, study, on_trial, log, notes))
                await _all_or_none(jobs)
        except BackendUnreachable as exc:
            unreachable = str(exc)   # every answer received so far is committed; a rerun resumes
        except ProviderRefused as exc:
            refused = exc.stop_message()   # retrying cannot fix it: stop rather than send every trial
        except (asyncio.CancelledError, KeyboardInterrupt):
            interrupted = True  # every trial finished so far is committed; a rerun resumes
        finally:
            for backend in started:
                await backend.close()
            counts = store.status_counts()
            manifest.update({
                "finished_at": None if interrupted or unreachable or refused else utc_now(),
                "stopped_early": unreachable or refused,
                "trial_counts": counts,
                "answer_counts": store.answer_status_counts(),
                "backend_stats": {b: {"requests": x.stats.requests, "retries": x.stats.retries,
                                      "reasoning_tokens": x.stats.reasoning_tokens,
                                      "failures": x.stats.failures, "retry_reasons": x.stats.retry_reasons,
                                      "max_in_flight": x.stats.max_in_flight,
                                      **({"endpoints": x.pool.summary()} if x.pool is not None else {})}
                                  for b, x in backends.items()},
                # Tokens the servers reported, summed over the stored trials, and their cost (engine/results/usage.py).
                "usage": {u.backend_id: u.to_json(PriceTable.from_json(manifest["prices"]) if manifest.get("prices")
                                                  else None) for u in token_usage(store.db)},
            })
            write_json_atomic(run.manifest, manifest)
    return RunResult(run, len(trials), already, counts, interrupted, unreachable, refused, notes)


async def _all_or_none(jobs: list) -> None:
    """Await the jobs together; when one fails (or the run is interrupted) the others are cancelled."""
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _run_batches(trials: list, batched: dict[str, HttpBackend], store: RunStore, study: Study,
                       on_trial: ProgressCallback | None, log: Callable[[str], None], notes: list[str]) -> None:
    from psyq.engine.administer.batch import open_batch_count, run_batches  # batch mode only: the online path does not load it

    try:
        report = await run_batches([t for t in trials if t.backend_id in batched], batched, store, study.protocol,
                                   on_trial, log)
    except asyncio.CancelledError:
        if open_batches := open_batch_count(store):
            notes.append(f"batch mode: {open_batches} submitted batch(es) go on at the provider; run the same "
                         f"command again to collect them (psyq status RUN lists them; nothing is submitted twice)")
        raise
    notes.extend(report.notes or [])
    notes.append("batch mode: token costs (manifest, psyq status) are at the price table's online rates; "
                 "OpenAI and Anthropic bill batches at about half of those")


def planned_by(trials: list) -> dict[str, dict[str, int]]:
    """Trials planned per backend and instrument: {backend_id: {instrument_id: n}}.

    Example:
        >>> planned_by(list(plan_trials(study, backends)))   # needs a study's backends built  # doctest: +SKIP
        {'stub': {'iri': 56}}
    """
    out: dict[str, dict[str, int]] = {}
    for trial in trials:
        per_backend = out.setdefault(trial.backend_id, {})
        per_backend[trial.instrument.id] = per_backend.get(trial.instrument.id, 0) + 1
    return out


def _started_at(run: RunDir, store: RunStore, notes: list[str]) -> str:
    """When the run first started: from the manifest, or (damaged manifest) from the store."""
    if not run.manifest.exists():
        return utc_now()
    try:
        return run.read_manifest().get("started_at") or utc_now()
    except InputError:
        first = store.db.execute("SELECT MIN(started_at) FROM trials").fetchone()[0]
        notes.append(f"{run.manifest} was damaged; rebuilt from the study and {DATABASE} "
                     f"(started_at taken from the first stored trial)")
        return first or utc_now()
