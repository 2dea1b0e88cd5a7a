"""The phase after sending in a run that asks `answer: ssr`: every free-text answer mapped onto
the options by the similarity of its embedding to the anchor statements (engine/trials/ssr.py).

Sending stores each free-text answer at once, as ``unrated`` (its trial ``missing`` until then:
finished, never sent again); :func:`rate_unrated` then embeds the anchor statements of every
instrument's scale and the answers' texts in batches (by an embeddings server,
engine/backends/embeddings.py, or by psyq's local model, engine/backends/local_embeddings.py), keeps every
embedding as it arrives (engine/store/embeddings.py: a text is embedded once per run, whatever is
interrupted), and writes each answer's distribution, its expectation and the value taken from it
(drawn with the trial's seed, or the most likely: the protocol's ``logprob_answer``), its status
``answered`` and its trial's. A run stopped before or during this phase finishes it when run again,
asking only for the embeddings it does not have. Each answer is read under its own trial's
``ssr:`` settings (a condition may give its own anchors and embeddings, engine/design/conditions.py):
the answers are taken by settings, each group embedded by its embedder with its anchors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from psyq.engine.backends.embedders import embedder_name, embedder_record, make_embedder
from psyq.engine.design.anchors import FoundAnchors
from psyq.engine.design.asking import SsrSettings, study_anchors
from psyq.engine.design.prices import Cost, PriceTable, cost_of
from psyq.engine.design.study import Study
from psyq.engine.files.errors import BackendError, ProviderRefused
from psyq.engine.files.hashing import file_sha256
from psyq.engine.store.embeddings import EmbeddingStore
from psyq.engine.store.run_store import RunStore
from psyq.engine.trials.logprobs import chosen_value, expected_value
from psyq.engine.trials.ssr import UNRATED, similarity_rating
from psyq.engine.trials.trial import Trial


@dataclass
class RatingOutcome:
    """What the phase did: answers mapped, embedding requests sent, texts embedded, and those
    read from the run's store instead."""

    rated: int = 0
    unreadable: int = 0
    waiting: int = 0              # still unrated: their embeddings did not arrive
    requests: int = 0
    embedded: int = 0
    reused: int = 0
    failed: str | None = None     # why the embeddings server (or the local model) gave no answer, when it did not
    # The error that stops the run (fatal, or a refusal in the provider's words): raised once what
    # arrived before it is mapped and the waiting answers carry the reason.
    stopped: BackendError | None = None

    def notes(self) -> list[str]:
        """The phase in words, for the run's notes (none when it had nothing to do)."""
        out = []
        if self.rated or self.unreadable:
            out.append(f"answer: ssr: {self.rated:,} free-text answer(s) mapped onto the options ({self.embedded:,} "
                       f"text(s) embedded; {self.reused:,} embedding(s) already in the run's store)")
        if self.unreadable:
            out.append(f"answer: ssr: {self.unreadable:,} answer(s) could not be mapped (their reason is stored)")
        if self.waiting:
            out.append(f"answer: ssr: {self.waiting:,} free-text answer(s) still wait to be mapped (their embeddings "
                       f"did not come: {self.failed}); run the study again to finish them (no reply is sent "
                       "again, no embedding asked twice)")
        return out


def trial_ssr(trial: Trial, study: Study) -> SsrSettings | None:
    """The ``ssr:`` settings `trial` is read under: its condition's protocol's, else the study's.

    Example:
        >>> trial_ssr(trial, study) == (trial.protocol or study.protocol).ssr  # a planned trial  # doctest: +SKIP
        True
    """
    return (trial.protocol or study.protocol).ssr


def by_settings(study: Study, trials: list[Trial]) -> list[tuple[SsrSettings, list[Trial]]]:
    """`trials` taken by the ``ssr:`` settings they are read under (:func:`trial_ssr`), in order of
    first use; one group for a study whose conditions change no ``ssr:``.

    Example:
        >>> [len(ts) for _, ts in by_settings(study, trials)]   # two conditions, two anchor sets  # doctest: +SKIP
        [4, 4]
    """
    groups: dict[str, tuple[SsrSettings, list[Trial]]] = {}
    for trial in trials:
        if (settings := trial_ssr(trial, study)) is not None:
            key = json.dumps(settings.model_dump(mode="json"), sort_keys=True)
            groups.setdefault(key, (settings, []))[1].append(trial)
    return list(groups.values())


async def _embed(settings: SsrSettings, texts: list[str], kept: EmbeddingStore, outcome: RatingOutcome,
                 log: Callable[[str], None]) -> dict[str, list[float]]:
    """The vectors of `texts` under `settings`' embedder: those in the run's store, the others
    asked for (each batch kept as it arrives); a text whose vector did not come is left out."""
    name = embedder_name(settings.embeddings)
    have = kept.get(name, texts)
    outcome.reused += len(have)
    need = [t for t in texts if t not in have]
    if not need or outcome.stopped is not None:   # stopped: another embedder failed for good, ask nothing more
        return have
    config = settings.embeddings
    client = make_embedder(config, log)

    def keep(batch: list[str], vectors: list[list[float]]) -> None:
        kept.put(name, batch, vectors)   # committed at once: paid for (or computed)
        have.update(zip(batch, vectors))

    batches = -(-len(need) // config.batch_size)
    log(f"answer: ssr: embedding {len(need):,} text(s) with {config.model} " +
        (f"on {client.where()}" if client.computes_here else f"({batches:,} request(s) to {client.where()})"))
    try:
        await client.start()   # the local model: fetched once (said on the log), loaded
        outcome.requests += await client.embed_all(need, config.batch_size, keep)
    except BackendError as exc:
        # What arrived is kept and mapped; the rest waits for the next run, the reason stored with
        # each answer. A fatal error or a refusal then stops the run, saying why (engine/administer/run.py).
        outcome.failed = str(exc)
        if exc.fatal or isinstance(exc, ProviderRefused):
            outcome.stopped = exc
    finally:
        await client.close()
    outcome.embedded += sum(t in have for t in need)
    return have


async def rate_unrated(study: Study, trials: list[Trial], store: RunStore,
                       log: Callable[[str], None] = print) -> RatingOutcome:
    """Map every ``unrated`` free-text answer of `trials` in `store` onto its options, each under
    its trial's ``ssr:`` settings (see the module docstring); nothing to do (no such answer, or no
    ``ssr:``) sends nothing.

    Example:
        >>> outcome = asyncio.run(rate_unrated(study, plan_run(study, backends).trials, store))  # embeds  # doctest: +SKIP
    """
    outcome = RatingOutcome()
    by_id = {t.trial_id: t for t in trials if t.kind == "ssr" and trial_ssr(t, study) is not None}
    if not by_id:
        return outcome
    store.flush()   # every trial handed to the writer is committed before its answers are updated
    unrated = [row for row in store.db.execute("SELECT trial_id, item_id, text FROM answers WHERE status = ?",
                                               (UNRATED,)) if row[0] in by_id]
    if not unrated:
        return outcome
    kept = EmbeddingStore(store.db)
    updates: list[tuple] = []
    unreadable: list[tuple] = []
    waiting: list[tuple] = []
    texts_of: dict[str, list[tuple[str, str, str]]] = {}
    for trial_id, item_id, text in unrated:
        texts_of.setdefault(trial_id, []).append((trial_id, item_id, text))
    for settings, group in by_settings(study, [by_id[t] for t in dict.fromkeys(r[0] for r in unrated)]):
        rows = [row for trial in group for row in texts_of[trial.trial_id]]
        found, _ = study_anchors(settings, list(study.instruments), study.path.parent)
        anchor_texts = [text for a in found.values() for text in a.anchors.statement_texts()]
        have = await _embed(settings, list(dict.fromkeys(anchor_texts + [text for _, _, text in rows])), kept,
                            outcome, log)
        _rate(settings, found, rows, by_id, have, study, outcome, updates, unreadable, waiting)
    with store.db:
        store.db.execute("BEGIN")
        store.db.executemany("UPDATE answers SET value = ?, status = 'answered', reason = NULL, distribution = ?, "
                             "expected = ? WHERE trial_id = ? AND item_id = ?", updates)
        store.db.executemany("UPDATE answers SET status = 'unparseable', reason = ? WHERE trial_id = ? AND item_id = ?",
                             unreadable)
        store.db.executemany("UPDATE answers SET reason = ? WHERE trial_id = ? AND item_id = ?", waiting)
        done = sorted({row[3] for row in updates})
        store.db.executemany("UPDATE trials SET status = 'answered' WHERE trial_id = ? AND NOT EXISTS (SELECT 1 FROM "
                             "answers a WHERE a.trial_id = trials.trial_id AND a.status != 'answered')",
                             [(t,) for t in done])
    outcome.rated, outcome.unreadable = len(updates), len(unreadable)
    if outcome.stopped is not None:
        raise outcome.stopped
    return outcome


def _rate(settings: SsrSettings, found: dict[str, FoundAnchors], rows: list[tuple[str, str, str]],
          by_id: dict[str, Trial], have: dict[str, list[float]], study: Study, outcome: RatingOutcome,
          updates: list[tuple], unreadable: list[tuple], waiting: list[tuple]) -> None:
    """Each answer of `rows` mapped onto its options with `settings` and its instrument's anchors
    (`found`), as an update of the store (or unreadable, with why; or still waiting for its vectors,
    with why they did not come)."""
    for trial_id, item_id, text in rows:
        trial = by_id[trial_id]
        anchors = found[trial.instrument.id].anchors
        if text not in have or any(t not in have for t in anchors.statement_texts()):
            outcome.waiting += 1   # its embeddings did not arrive: still unrated
            if outcome.failed:
                waiting.append((f"the free-text answer waits to be mapped onto the options (answer: ssr): its "
                                f"embedding did not come ({outcome.failed}); run the study again to finish it",
                                trial_id, item_id))
            continue
        sets = [[have[s.statements[o.value]] for o in anchors.scale] for s in anchors.sets]
        try:
            rating = similarity_rating(have[text], sets, settings.epsilon, settings.temperature)
        except ValueError as exc:   # a degenerate answer (equally like every statement): missing, with why
            unreadable.append((f"the answer could not be mapped onto the options: {exc}", trial_id, item_id))
            continue
        distribution = {o.value: p for o, p in zip(trial.instrument.scale, rating.distribution)}
        protocol = getattr(trial, "protocol", None) or study.protocol   # a condition's protocol where it has one
        value = chosen_value(distribution, protocol.logprob_answer, trial.request.seed)
        updates.append((value, json.dumps(distribution), expected_value(distribution), trial_id, item_id))


def ssr_record(study: Study, trials: list[Trial]) -> list[dict]:
    """What the run's manifest records of how its `answer: ssr` trials are read, for the methods
    paragraph: per way of reading (one, unless conditions give their own ``ssr:``), the embedder
    (engine/backends/embedders.py's `embedder_record`), the anchors files with the instruments
    each reads, where they come from and their SHA-256, and the conditions it is for (a study with
    conditions). Empty when no trial asks `answer: ssr`.

    Example:
        >>> [r["anchors"][0]["id"] for r in ssr_record(study, trials)]  # two conditions' anchors  # doctest: +SKIP
        ['tiny_anchors', 'tiny_reversed']
    """
    out = []
    for settings, group in by_settings(study, [t for t in trials if t.kind == "ssr"]):
        found, _ = study_anchors(settings, list(study.instruments), study.path.parent)
        files: dict[Path, list[str]] = {}
        for inst_id, match in found.items():
            files.setdefault(match.path, []).append(inst_id)
        anchors = {a.path: a.anchors for a in found.values()}
        record = {"embeddings": embedder_record(settings.embeddings),
                  "anchors": [{"id": anchors[path].id, "instruments": ids, "content_source": anchors[path].content_source,
                               "source": anchors[path].source, "sha256": file_sha256(path)}
                              for path, ids in files.items()]}
        if study.conditions:
            record["conditions"] = list(dict.fromkeys(t.condition for t in group))
        out.append(record)
    return out


@dataclass(frozen=True)
class EmbeddingPlan:
    """What `psyq plan` counts of the phase: embedding requests (an upper bound: an answer that is
    empty or a refusal is not embedded, and a resumed run reuses what it has), the texts in them,
    their tokens (characters / 4, a free-text answer at its token limit) and their cost. The local
    model sends no request and costs nothing but time (`seconds`: at the rate measured in
    docs/local-models.md)."""

    endpoint: str
    model: str
    requests: int
    anchor_statements: int
    answers: int
    batch_size: int
    tokens: float
    cost: Cost
    local: bool = False
    rate: tuple[float, str] | None = None    # the local model's texts a second, and where they were measured
    conditions: tuple[str, ...] = ()         # the conditions it is for, when conditions embed differently

    @property
    def seconds(self) -> float | None:
        """How long the local model takes for the texts, at its measured rate (None: a server's)."""
        return None if self.rate is None else (self.anchor_statements + self.answers) / self.rate[0]

    def lines(self) -> list[str]:
        """The plan's lines about the embeddings."""
        texts = f"{self.anchor_statements:,} anchor statements and up to {self.answers:,} free-text answers"
        head = "embeddings (answer: ssr)" + (f" of condition{'s' * (len(self.conditions) > 1)} "
                                             f"{', '.join(self.conditions)}" if self.conditions else "")
        if self.local:
            return [f"{head}: computed on {self.endpoint}, no request sent: {texts}; cost nothing "
                    f"but time, {_duration(self.seconds)} (at {self.rate[0]:,.0f} texts a second, measured on "
                    f"{self.rate[1]}; the first run also fetches the model once); a text already embedded in "
                    "the run's store is not computed again"]
        return [f"{head}: at most {self.requests:,} requests to {self.endpoint} (model {self.model}): "
                f"{texts}, {self.batch_size:,} texts per request; ~{self.tokens:,.0f} tokens (characters / 4, each "
                f"answer at its token limit); cost {self.cost}; a text already embedded in the run's store is not "
                "asked again"]

    def to_json(self) -> dict:
        """The plan's embeddings as plain data (`psyq plan --json`)."""
        return {"endpoint": self.endpoint, "model": self.model, "requests": self.requests,
                "anchor_statements": self.anchor_statements, "answers": self.answers, "batch_size": self.batch_size,
                "tokens": self.tokens, "cost_usd": self.cost.usd, "cost_not_estimable": self.cost.why_not,
                **({"local": True, "seconds": self.seconds} if self.local else {}),
                **({"conditions": list(self.conditions)} if self.conditions else {})}


@dataclass(frozen=True)
class EmbeddingPlans:
    """The phase's plan when conditions embed differently (their own anchors or embeddings): one
    :class:`EmbeddingPlan` per way, each naming its conditions, and their sums."""

    plans: tuple[EmbeddingPlan, ...]

    def lines(self) -> list[str]:
        """Each way's lines, in order of the conditions."""
        return [line for plan in self.plans for line in plan.lines()]

    def to_json(self) -> dict:
        """The sums (requests, texts, cost: none when a part's is not estimable) and each way's plan."""
        usd = [plan.cost.usd for plan in self.plans]
        return {"requests": sum(p.requests for p in self.plans), "answers": sum(p.answers for p in self.plans),
                "cost_usd": None if None in usd else sum(u for u in usd if u is not None),
                "by_settings": [plan.to_json() for plan in self.plans]}


def _duration(seconds: float | None) -> str:
    """A time estimate in words: under a second, seconds, or minutes."""
    if seconds is None or seconds < 1:
        return "under a second"
    return f"about {seconds:,.0f} s" if seconds < 120 else f"about {seconds / 60:,.0f} minutes"


def embedding_plan(study: Study, trials: list[Trial], finished: set[str],
                   prices: PriceTable | None = None) -> EmbeddingPlan | EmbeddingPlans | None:
    """The embedding requests a run of `study` would send for its `answer: ssr` trials not in
    `finished` (None when it asks no free text to map); :class:`EmbeddingPlans` when its
    conditions read them under different ``ssr:`` settings.

    Example (the shipped quickstart asked with answer: ssr; nothing is sent):
        >>> from dataclasses import replace
        >>> from psyq import load_study
        >>> from psyq.engine.administer.plan import plan_trials
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig, Protocol
        >>> study = load_study("quickstart")
        >>> ssr = Protocol(answer="ssr", ssr={"embeddings": {"base_url": "http://127.0.0.1:9/v1", "model": "e"}})
        >>> study = replace(study, spec=study.spec.model_copy(update={"protocol": ssr}))
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> plan = embedding_plan(study, list(plan_trials(study, {"b": backend})), set())
        >>> plan.answers, plan.anchor_statements, plan.requests   # 13 respondents × 28 items; 3 sets of 5; 64 a request
        (364, 15, 6)
    """
    groups = by_settings(study, [t for t in trials if t.kind == "ssr" and t.trial_id not in finished])
    if not groups:
        return None
    if len(groups) == 1:
        return _plan(study, *groups[0], prices)
    return EmbeddingPlans(tuple(replace(_plan(study, settings, asked, prices),
                                        conditions=tuple(dict.fromkeys(t.condition for t in asked)))
                                for settings, asked in groups))


def _plan(study: Study, settings: SsrSettings, asked: list[Trial], prices: PriceTable | None) -> EmbeddingPlan:
    """The embedding plan of the trials `asked`, read under `settings`."""
    found, _ = study_anchors(settings, list(study.instruments), study.path.parent)
    statements = list(dict.fromkeys(text for a in found.values() for text in a.anchors.statement_texts()))
    config = settings.embeddings
    texts = len(statements) + len(asked)
    tokens = sum(len(s) / 4 for s in statements) + sum(t.request.max_tokens for t in asked)
    client = make_embedder(config)   # not started: asked where it computes
    if client.computes_here:
        return EmbeddingPlan(client.where(), str(config.model), 0, len(statements), len(asked), config.batch_size,
                             tokens, Cost(0.0, note="computed on this machine"), local=True,
                             rate=(client.entry.texts_per_second, client.entry.measured))
    return EmbeddingPlan(client.where(), str(config.model), -(-texts // config.batch_size), len(statements),
                         len(asked), config.batch_size, tokens, cost_of(config.model, tokens, 0, prices))
