"""Recording a run: its directory, its manifest, and every trial's answers as stored records.

``runs/<study-id>/<run-id>/`` holds a copy of the study file and its instruments (:func:`copy_inputs`),
``manifest.json`` (versions, hashes, backends, protocol, counts, times: :func:`run_manifest`,
:func:`record_start`, :func:`record_end`) and ``run.sqlite`` (the
:class:`~psyq.engine.store.run_store.RunStore`). The run id (:func:`run_id_for`) is a hash of the
instrument and cohort files, the study's protocol (and its conditions' changes, when it has
`conditions:`) and the backends' identities, so running the same
study again opens the same directory and resumes it; change anything that decides the answers and a
new run begins. What does not decide an answer is left out of the id: the name of the environment
variable holding the key, pacing and retry settings, and how the endpoint is spelled (``localhost``
or ``127.0.0.1``, a default port, a trailing slash: engine/backends/endpoint.py).

The manifest is written atomically; should it be damaged all the same, rerunning the study rebuilds
it (the answers are in ``run.sqlite``, and nothing finished is sent again).

A trial's record (:func:`trial_record`, :func:`evoke_record`) holds the request as sent, the replies
and one answer row per :func:`answer_ids`: the value read, or a missing answer with its status and
the reason in words (refused, unreadable, out of tokens, failed); :func:`store_trial` commits it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from psyq.engine import __version__
from psyq.engine.files.atomic import write_json_atomic, write_text_atomic
from psyq.engine.backends.base import HttpBackend
from psyq.engine.backends.bodies import request_body
from psyq.engine.backends.endpoint import normalise_endpoint
from psyq.engine.files.errors import InputError
from psyq.engine.files.shipped import shipped_name
from psyq.engine.kinds import get_kind
from psyq.engine.trials.parsing import ParsedAnswer
from psyq.engine.administer.plan import EVOKE_ID
from psyq.engine.administer.ssr_rating import ssr_record
from psyq.engine.store.clock import utc_now
from psyq.engine.store.run_dir import DATABASE, SITUATIONS, RunDir
from psyq.engine.design.persona_prompt import render_system_prompt
from psyq.engine.design.prices import PriceTable
from psyq.engine.store.run_store import REPLY_SEPARATOR, AnswerRecord, RunStore, TrialRecord
from psyq.engine.design.study import Study
from psyq.engine.results.run import read_manifest
from psyq.engine.results.usage import token_usage
from psyq.engine.trials.trial import Trial

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
    if study.conditions:   # what each condition changes decides answers (absent: not in the key)
        key["conditions"] = [c.to_json() for c in study.conditions]
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


def copy_inputs(study: Study, run: RunDir) -> None:
    """Copies of what the answers depend on (the study file, its instruments, a staged study's
    situation set), so the run directory stands on its own."""
    write_text_atomic(run.path / "study.yaml", study.path.read_text(encoding="utf-8"))
    (run.path / "instruments").mkdir(exist_ok=True)
    for instrument, source in zip(study.instruments, study.instrument_paths):
        write_text_atomic(run.path / "instruments" / f"{instrument.id}.yaml", source.read_text(encoding="utf-8"))
    if study.situations_path is not None:   # a staged study's situation set (engine/administer/plan.py)
        write_text_atomic(run.path / SITUATIONS, study.situations_path.read_text(encoding="utf-8"))


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


def run_manifest(study: Study, backends: dict[str, HttpBackend], run: RunDir, run_id: str, trials: list[Trial],
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of a run about to start, before its times: what it is and what it plans to send
    (`extra`: the command line's overrides and the price table, recorded as given)."""
    manifest = {
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
        "trials_planned": len(trials),
        **({"prompt_perturbation": study.prompt_perturbation} if study.prompt_perturbation is not None else {}),
        # Only for a run that asks answer: ssr: its embedders and anchors, per condition where they differ (ssr_rating.py).
        **({"ssr": ssr} if (ssr := ssr_record(study, trials)) else {}),
        # Only for a study with `conditions:`: each condition's id, factor levels and changes (engine/design/conditions.py).
        **({"conditions": [c.to_json() for c in study.conditions]} if study.conditions else {}),
        # Only for a staged study, so that the manifests of all other runs stay as they were.
        **({"stages": [stage.model_dump() for stage in study.spec.stages],
            "situations": {"id": study.situations.id, "content_source": study.situations.content_source,
                           "source": study.situations.source, "count": len(study.situations.situations),
                           "per_respondent": study.spec.situations.model_dump()["per_respondent"]}}
           if study.spec.stages and study.situations is not None and study.spec.situations is not None else {}),
    }
    manifest.update(extra or {})
    manifest["trials_planned_by"] = planned_by(trials)   # per backend and instrument, for `psyq status`
    if study.conditions:
        manifest["trials_planned_by_condition"] = dict(Counter(t.condition for t in trials))
    return manifest


def planned_by(trials: list[Trial]) -> dict[str, dict[str, int]]:
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


def record_start(study: Study, run: RunDir, store: RunStore, manifest: dict[str, Any], trials: list[Trial],
                 notes: list[str]) -> tuple[set[str], int]:
    """Store the cohort's respondents and write the manifest with the run's start; return the ids of
    the trials already finished in the store and how many of `trials` they are (a resumed run)."""
    store.put_respondents((p.id, p.attributes, p.backstory, render_system_prompt(p, study.cohort.template))
                          for p in study.cohort.personas)
    finished = store.finished_trial_ids()
    already = sum(t.trial_id in finished for t in trials)
    manifest["started_at"] = _started_at(run, store, notes)
    manifest["resumed_at"] = utc_now() if already else None
    write_json_atomic(run.manifest, manifest)
    return finished, already


def record_end(run: RunDir, store: RunStore, manifest: dict[str, Any], backends: dict[str, HttpBackend],
               interrupted: bool, stopped_early: str | None) -> dict[str, int]:
    """Write the manifest with how the run ended (its counts, the backends' statistics, the tokens
    used and their cost); return the trials stored per status."""
    counts = store.status_counts()
    manifest.update({
        "finished_at": None if interrupted or stopped_early else utc_now(),
        "stopped_early": stopped_early,
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
    return counts


def _started_at(run: RunDir, store: RunStore, notes: list[str]) -> str:
    """When the run first started: from the manifest, or (damaged manifest) from the store."""
    if not run.manifest.exists():
        return utc_now()
    try:
        return read_manifest(run).get("started_at") or utc_now()
    except InputError:
        first = store.db.execute("SELECT MIN(started_at) FROM trials").fetchone()[0]
        notes.append(f"{run.manifest} was damaged; rebuilt from the study and {DATABASE} "
                     f"(started_at taken from the first stored trial)")
        return first or utc_now()


def answer_ids(trial: Trial) -> list[str]:
    """The answer rows a trial produces, as its item kind says (e.g. one per rating item)."""
    return get_kind(trial.item_kind).answer_ids(trial)


def trial_record(trial: Trial, backend: HttpBackend, status: str, started: str, texts: list[str],
                 response: dict | None, attempts: int, reasks: int, latency: float, tokens: list[int],
                 answers: dict[str, ParsedAnswer], extra: dict[str, dict], error: str | None,
                 ids: list[str] | None = None, sent: str | None = None) -> TrialRecord:
    """The record of a trial sent: its request (`sent`, the first request's body as sent, else built
    again), its replies joined, and one answer row per :func:`answer_ids` in `answers` (with the
    log-probability `extra` of an answer read from them)."""
    records = []
    for position, item_id in enumerate(answer_ids(trial) if ids is None else ids):
        parsed = answers[item_id]
        more = extra.get(item_id)
        if more is None:   # nearly every answer: one read from text
            records.append(AnswerRecord(item_id, position, parsed.value, parsed.status, parsed.reason,
                                        parsed.disclaimer, None, None, None, parsed.text))
            continue
        records.append(AnswerRecord(item_id, position, parsed.value, parsed.status, parsed.reason,
                                    parsed.disclaimer, more.get("distribution"), more.get("option_mass"),
                                    more.get("expected"), parsed.text))
    return TrialRecord(
        trial_id=trial.trial_id, backend_id=trial.backend_id, model=backend.identity().get("model"),
        respondent_id=trial.respondent_id, instrument_id=trial.instrument.id, item_ids=list(trial.item_ids),
        repeat=trial.repeat, option_order=trial.option_order, status=status,
        request=sent if sent is not None else request_body(backend, trial.request), response=response,
        raw_text=REPLY_SEPARATOR.join(texts) if texts else None, attempts=attempts, reasks=reasks,
        latency_s=latency, prompt_tokens=tokens[0] or None, completion_tokens=tokens[1] or None,
        started_at=started, finished_at=utc_now(), error=error, answers=records, condition=trial.condition)


def evoke_record(trial: Trial, backend: HttpBackend, status: str, started: str, text: str | None, response,
                 attempts: int, latency: float, prompt_tokens, completion_tokens, answer: AnswerRecord,
                 error: str | None) -> TrialRecord:
    """The record of an evoke stage's trial (engine/administer/plan.py): its one reply, kept as text."""
    return TrialRecord(
        trial_id=trial.trial_id, backend_id=trial.backend_id, model=backend.identity().get("model"),
        respondent_id=trial.respondent_id, instrument_id=EVOKE_ID, item_ids=list(trial.item_ids),
        repeat=trial.repeat, option_order=trial.option_order, status=status,
        request=request_body(backend, trial.request), response=response, raw_text=text, attempts=attempts,
        reasks=0, latency_s=latency,
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, started_at=started, finished_at=utc_now(),
        error=error, answers=[answer], condition=trial.condition)


ProgressCallback = Callable[[str, TrialRecord], None]


def store_trial(store: RunStore, record: TrialRecord, on_trial: ProgressCallback | None) -> None:
    """Commit `record` with the others of this loop turn (the store's group commit), then report it."""
    store.put_trial_soon(record)
    if on_trial:
        on_trial(record.backend_id, record)
