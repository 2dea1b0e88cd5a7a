"""Perturbing a run's rating targets: every original reply under every perturbation of a set.

`psyq perturb RUN --set haleas7` takes each original target of table ``rating_targets`` (persona
replies and imported reference replies; never a perturbed one), applies each perturbation of the
set and stores the result as a new target (:meth:`psyq.engine.store.ratings.RatingTarget.perturbed`), so the
judges rate it like any other and :mod:`psyq.analysis.statistics.robustness` pairs it with its original.

Rules run here, in the process. Rewrites go through a backend (:func:`psyq.engine.backends.make_backend`,
as judging does), under the run's lock, one request per (original, perturbation). What happened
to each pair is one row of table ``perturbation_log``: ``perturbed``, ``unchanged`` (the rule found
nothing to change; the target is stored all the same, its text equal to the original),
``unusable`` (a rewrite reply that is empty, a refusal or too long: no target, the reason and the
reply kept) or ``failed`` (the backend did not answer; asked again on the next run). A pair with
a row other than ``failed`` is never sent again, so a rerun pays for nothing twice.

Example:
    >>> from psyq.engine.design.perturbation_sets import load_perturbations
    >>> pset = load_perturbations("haleas7")
    >>> [p.id for p in pset.perturbations][:3]
    ['punctuation_repeat', 'greek_letters', 'typos_truncated']
    >>> asyncio.run(perturb_run("runs/rated_replies/ab12", pset, config))  # sends rewrites  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from psyq.engine.backends import BackendConfig, BackendError, ChatRequest, HttpBackend, make_backend
from psyq.engine.files.errors import InputError
from psyq.engine.trials.parsing import is_refusal, too_long
from psyq.engine.design.perturbation_sets import Perturbation, PerturbationSet, RewriteParams, apply_rule
from psyq.engine.store.clock import utc_now
from psyq.engine.store.ratings import RatingTarget, open_ratings, put_targets
from psyq.engine.results.run import open_run
from psyq.engine.store.runlock import RunLock
from psyq.engine.store.run_store import RunStore
from psyq.engine.judging.reply_judge import sync_persona_targets

LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS perturbation_log (
    original_id TEXT NOT NULL,         -- response_id of the original target
    perturbation TEXT NOT NULL,        -- the perturbation's id
    set_id TEXT NOT NULL,
    spec TEXT NOT NULL,                -- JSON: method, seed and params as applied (a changed spec is refused)
    status TEXT NOT NULL,              -- perturbed | unchanged | unusable | failed
    reason TEXT,
    response_id TEXT,                  -- the perturbed target (NULL when unusable or failed)
    request TEXT,                      -- rewrites: JSON payload sent (no headers, so no secrets)
    raw_text TEXT,                     -- rewrites: the backend's reply as received
    attempts INTEGER NOT NULL DEFAULT 0,
    logged_at TEXT NOT NULL,
    PRIMARY KEY (original_id, perturbation)
);
"""

FINISHED = ("perturbed", "unchanged", "unusable")


def spec_of(p: Perturbation) -> dict[str, Any]:
    """What decides a perturbation's result (its params with the method's defaults filled in)."""
    return {"method": p.method, "seed": p.seed, "params": p.checked_params().model_dump()}


# --- the log --------------------------------------------------------------------------------------

def open_log(store: RunStore) -> None:
    """Create table ``perturbation_log`` (and the ratings tables) if missing."""
    open_ratings(store)
    store.db.executescript(LOG_SCHEMA)


def read_log(store: RunStore) -> pd.DataFrame:
    """Every logged (original, perturbation) pair, ``spec`` decoded."""
    open_log(store)
    frame = pd.read_sql_query("SELECT original_id, perturbation, set_id, spec, status, reason, response_id, "
                              "attempts, logged_at FROM perturbation_log ORDER BY perturbation, original_id", store.db)
    frame["spec"] = frame["spec"].map(json.loads)
    return frame


@dataclass(frozen=True)
class Outcome:
    """What happened to one original under one perturbation."""

    original: RatingTarget
    perturbation: Perturbation
    status: str
    text: str | None = None
    reason: str | None = None
    request: dict[str, Any] | None = None
    raw_text: str | None = None
    attempts: int = 0
    model: str | None = None


def put_outcome(store: RunStore, set_id: str, o: Outcome) -> None:
    """Store the perturbed target (when there is one) and the log row, in one transaction."""
    spec = spec_of(o.perturbation)
    target = None
    if o.text is not None:
        detail: dict[str, Any] = {"set": set_id, **spec}
        if o.request is not None:
            detail.update(request=o.request, raw_text=o.raw_text, model=o.model)
        target = o.original.perturbed(o.perturbation.id, o.text, detail)
        put_targets(store, [target])
    row = (o.original.response_id, o.perturbation.id, set_id, json.dumps(spec, sort_keys=True), o.status, o.reason,
           target.response_id if target else None, None if o.request is None else json.dumps(o.request, sort_keys=True),
           o.raw_text, o.attempts, utc_now())
    with store.db:
        store.db.execute("BEGIN")
        store.db.execute(f"INSERT OR REPLACE INTO perturbation_log VALUES ({', '.join('?' * len(row))})", row)


# --- what to perturb ------------------------------------------------------------------------------

def original_targets(store: RunStore) -> list[RatingTarget]:
    """The run's unperturbed targets (persona and reference replies), as stored (under their
    stored key, so a perturbed target's key is the original's + ``~<perturbation>`` whoever
    stored the original)."""
    open_ratings(store)
    rows = store.db.execute("SELECT key, source, instrument, item_id, text, trial_id, reply_id, detail "
                            "FROM rating_targets WHERE original_id IS NULL ORDER BY key").fetchall()
    return [RatingTarget(key, source, instrument, item_id, text, trial_id=trial_id, reply_id=reply_id,
                         detail=json.loads(detail))
            for key, source, instrument, item_id, text, trial_id, reply_id, detail in rows]





def check_specs(log: pd.DataFrame, set_id: str, perturbations: list[Perturbation]) -> None:
    """Refuse a perturbation whose id was applied before with other settings: its targets would
    keep the old texts under the new definition (a target once stored is never changed)."""
    for p in perturbations:
        rows = log[(log["perturbation"] == p.id) & (log["status"] != "failed")]
        if rows.empty:
            continue
        before = rows["spec"].iloc[0]
        if before != json.loads(json.dumps(spec_of(p))):
            raise InputError.single(p.id, f"perturbation '{p.id}' was applied to this run before with other "
                                    f"settings ({json.dumps(before, sort_keys=True)}, set "
                                    f"'{rows['set_id'].iloc[0]}'); give the changed one a new id")


# --- applying -------------------------------------------------------------------------------------

def rule_outcome(original: RatingTarget, p: Perturbation) -> Outcome:
    """A rule applied to one original (``unchanged`` when the rule found nothing to change)."""
    text = apply_rule(p.method, original.text, p.params, p.seed)
    if text == original.text:
        return Outcome(original, p, "unchanged", text, "the rule found nothing to change in this text")
    return Outcome(original, p, "perturbed", text)


def rewrite_request(p: Perturbation, text: str) -> ChatRequest:
    """The rewrite request: the instruction as the system message, the text as the user's."""
    params = p.checked_params()
    assert isinstance(params, RewriteParams)
    return ChatRequest(messages=({"role": "system", "content": params.instruction}, {"role": "user", "content": text}),
                       max_tokens=params.max_tokens, temperature=0.0, seed=p.seed)


def unusable_reason(original: str, reply: str, params: RewriteParams) -> str | None:
    """Why a rewrite reply cannot stand for the original (None when it can).

    Example:
        >>> unusable_reason("I hear you.", "", RewriteParams(instruction="x"))
        'the reply is empty'
    """
    if not reply.strip():
        return "the reply is empty"
    if is_refusal(reply) and not is_refusal(original):
        return "the reply declines or speaks as an AI (refusal language the original does not have)"
    long = too_long(reply)
    if long is not None:
        return long.reason
    if len(reply.strip()) > params.max_ratio * len(original.strip()):
        return (f"the reply has {len(reply.strip())} characters, more than {params.max_ratio:g} times the "
                f"original's {len(original.strip())} (max_ratio)")
    return None


async def rewrite_one(original: RatingTarget, p: Perturbation, backend: HttpBackend) -> Outcome:
    """Ask the backend for one rewrite; a transient failure is ``failed`` (asked again next time)."""
    request = rewrite_request(p, original.text)
    payload = backend.payload(request)
    model = backend.identity().get("model")
    try:
        result = await backend.complete(request)
    except BackendError as exc:
        if exc.fatal:
            raise
        return Outcome(original, p, "failed", reason=str(exc), request=payload, attempts=exc.attempts, model=model)
    params = p.checked_params()
    assert isinstance(params, RewriteParams)
    reason = result.problem_reason or result.problem if result.problem else \
        unusable_reason(original.text, result.text, params)
    if reason:
        return Outcome(original, p, "unusable", reason=reason, request=payload, raw_text=result.text,
                       attempts=result.attempts, model=model)
    return Outcome(original, p, "perturbed", result.text.strip(), request=payload, raw_text=result.text,
                   attempts=result.attempts, model=model)


@dataclass
class PerturbResult:
    """What a `psyq perturb` run did: pairs to do, pairs done before, and the log's counts per
    perturbation and status after it; `unusable` lists (perturbation, response_id, reason)."""

    pairs: int
    already: int
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    unusable: list[tuple[str, str, str]] = field(default_factory=list)
    added_persona_replies: int = 0


async def perturb_run(run_path: str | Path, pset: PerturbationSet, config: BackendConfig | None, *,
                      only: list[str] | None = None, on_outcome: Callable[[Outcome], None] | None = None,
                      log: Callable[[str], None] = print) -> PerturbResult:
    """Apply the set's perturbations (or those in `only`) to every original target of a run.

    `config` is the backend of the rewrites (None is refused when a rewrite has something to do).

    Not run: needs a run with rating targets (replies to rate; `run_dir` has none), and writes into it.

    Example:
        >>> asyncio.run(perturb_run("runs/rated/ab12", load_perturbations("my.yaml"), None))   # doctest: +SKIP
    """
    run = open_run(run_path, write=True)
    try:
        chosen = pset.select(only)
    except KeyError as exc:
        raise InputError.single(pset.id, f"--only names perturbations not in set '{pset.id}': {exc.args[0]} "
                                f"(it has {', '.join(p.id for p in pset.perturbations)})") from None
    instruments = run.instruments
    with RunLock(run.path), RunStore(run.database) as store:
        open_log(store)
        added = sync_persona_targets(store, instruments)   # as psyq judge does: perturb may come first
        check_specs(read_log(store), pset.id, chosen)
        originals = original_targets(store)
        done = {(r.original_id, r.perturbation) for r in read_log(store).itertuples() if r.status in FINISHED}
        pending = [(o, p) for p in chosen for o in originals if (o.response_id, p.id) not in done]
        for o, p in pending:
            if p.method != "rewrite":
                outcome = rule_outcome(o, p)
                put_outcome(store, pset.id, outcome)
                if on_outcome:
                    on_outcome(outcome)
        rewrites = [(o, p) for o, p in pending if p.method == "rewrite"]
        if rewrites:
            if config is None:
                raise InputError.single(pset.id, "the set has rewrites to do and no backend was given")
            backend = make_backend(config, log=log)
            await backend.start()
            try:
                await _rewrite_all(rewrites, backend, store, pset.id, on_outcome)
            finally:
                await backend.close()
        final = read_log(store)
    final = final[final["perturbation"].isin([p.id for p in chosen])]
    counts = {p: dict(rows["status"].value_counts().sort_index()) for p, rows in final.groupby("perturbation")}
    unusable = [(r.perturbation, r.original_id, r.reason) for r in final.itertuples() if r.status == "unusable"]
    return PerturbResult(len(originals) * len(chosen), len(originals) * len(chosen) - len(pending),
                         {p: {k: int(v) for k, v in c.items()} for p, c in counts.items()}, unusable, added)


async def _rewrite_all(pairs: list[tuple[RatingTarget, Perturbation]], backend: HttpBackend, store: RunStore,
                       set_id: str, on_outcome: Callable[[Outcome], None] | None) -> None:
    queue: asyncio.Queue[tuple[RatingTarget, Perturbation]] = asyncio.Queue()
    for pair in pairs:
        queue.put_nowait(pair)

    async def worker() -> None:
        while not queue.empty():
            original, p = queue.get_nowait()
            outcome = await rewrite_one(original, p, backend)
            put_outcome(store, set_id, outcome)   # committed one by one: a killed run keeps what it paid for
            if on_outcome:
                on_outcome(outcome)

    async with asyncio.TaskGroup() as group:
        for _ in range(backend.config.concurrency):
            group.create_task(worker())
