"""What `psyq plan` prints: what `psyq run` would send for a study, counted before anything is sent.

Built from the trials a run plans (:func:`~psyq.engine.administer.plan.plan_trials`, a staged
study's chains: engine/administer/plan.py), so the counts are what a run sends, repeats and
counterbalancing included; trials already finished in the run's store are left out, as the run
leaves them out. Not counted, and said so: corrective re-asks (a reply that cannot be read is asked
again, up to the protocol's `reask_limit`) and retries after transient failures; both may add
requests, tokens and cost.

- tokens: prompt tokens by the backend's own tokenizer where it offers one, else a stated
  approximation (engine/administer/tokenizer.py); completion tokens as their upper bound, the request's
  `max_tokens`;
- cost: from a price table (engine/design/prices.py); a model without a price is "not estimable";
- wall time: the slowest of three paces per backend, backends running at the same time:
  requests / concurrency × an assumed latency per request; requests / rpm; the rate limiter's
  own token count (characters/4 + max_tokens per request) / tpm;
- preview: the first requests of each backend, as its production code builds them (URL, headers
  without the key's value, JSON body).

Building a plan is pure apart from the token counters it is given; :func:`plan_lines` renders it.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from psyq.engine.backends.base import HttpBackend

from psyq.engine.files.errors import BackendError
from psyq.engine.backends.pacing import token_cost   # the tpm pacer's own count, so the estimate follows it
from psyq.engine.design.prices import Cost, PriceTable, cost_of
from psyq.engine.administer.tokenizer import ApproximateCounter, TokenCounter, TokenizerFailed, request_chars
from psyq.engine.trials.trial import Trial

DEFAULT_LATENCY_S = 1.0
DEFAULT_PREVIEW = 2
# Server tokenizers count at most this many requests per backend × instrument × stage; the rest
# are scaled by their characters (said in the method line). Bounds a plan of 100,000 requests.
COUNTED_PER_GROUP = 1000
COUNTING_THREADS = 8     # tokenizer calls in flight to a server (each waits on the network only)
LOCAL_START_S, LOCAL_BUILD_S = 3.0, 300.0


@dataclass(frozen=True)
class StageRow:
    """Requests and tokens of one backend × instrument × stage (the trial kind engine/administer/plan.py plans)."""

    backend: str
    instrument: str
    stage: str
    requests: int
    prompt_tokens: float
    completion_tokens_max: int
    condition: str = ""           # the study's condition ('' without `conditions:`)


@dataclass(frozen=True)
class ConditionPlan:
    """One condition's requests, tokens and cost, over the backends that ask it (a study with `conditions:`)."""

    condition: str
    requests: int
    prompt_tokens: float
    completion_tokens_max: int
    tokens_exact: bool
    cost: Cost


@dataclass(frozen=True)
class BackendPlan:
    """One backend's totals, cost and time."""

    backend: str
    kind: str
    model: str | None
    requests: int
    planned: int                  # before leaving out trials already finished
    prompt_tokens: float
    completion_tokens_max: int
    token_method: str
    tokens_exact: bool
    cost: Cost
    wall_s: float
    wall_how: str
    option_orders: dict[str, int]
    reasoning_max: int = 0        # part of completion_tokens_max allowed for reasoning (reasoning models)
    reasoning_how: str = ""       # how that allowance was sized


@dataclass(frozen=True)
class PreviewRequest:
    """One request exactly as the backend will POST it (the key's value never shown)."""

    backend: str
    instrument: str
    stage: str
    respondent: str
    url: str
    headers: dict[str, str]
    body: dict[str, Any]
    condition: str = ""           # the study's condition ('' without `conditions:`)


@dataclass(frozen=True)
class Plan:
    """Everything `psyq plan` reports."""

    study: str
    run_dir: str
    latency_s: float
    rows: list[StageRow]
    backends: list[BackendPlan]
    preview: list[PreviewRequest]
    prices: str | None
    notes: list[str] = field(default_factory=list)
    conditions: list[ConditionPlan] = field(default_factory=list)   # empty without `conditions:`

    @property
    def requests(self) -> int:
        return sum(b.requests for b in self.backends)

    @property
    def wall_s(self) -> float:
        return max((b.wall_s for b in self.backends), default=0.0)

    def total_cost(self) -> Cost:
        """The sum of the backends' costs, or not estimable naming each reason."""
        return _sum_costs([b.cost for b in self.backends if b.requests])

    def to_json(self) -> dict[str, Any]:
        """The plan as plain data (`psyq plan --json`)."""
        out = asdict(self)
        if not self.conditions:   # a study without conditions: the plan as it always was
            del out["conditions"]
            for row in out["rows"] + out["preview"]:
                del row["condition"]
        for c in out.get("conditions", []):
            c["cost_usd"], c["cost_not_estimable"] = c["cost"]["usd"], c["cost"]["why_not"]
            del c["cost"]
        out["requests"], out["wall_s"] = self.requests, self.wall_s
        cost = self.total_cost()
        out["cost_usd"], out["cost_not_estimable"] = cost.usd, cost.why_not
        for b in out["backends"]:
            b["cost_usd"], b["cost_not_estimable"] = b["cost"]["usd"], b["cost"]["why_not"]
            del b["cost"]
        return out


def estimate_prompt_tokens(trials: list[Trial], counter: TokenCounter,
                           limit: int = COUNTED_PER_GROUP) -> tuple[float, int]:
    """Prompt tokens of `trials` (one group) and how many were counted one by one.

    Up to `limit` requests, evenly spread over the group, are counted; when that is not all of
    them, the total is scaled by characters (counted tokens / counted characters × all characters).

    Example (the shipped study quickstart planned for an OpenAI-compatible backend; nothing is sent):
        >>> from psyq import load_study
        >>> from psyq.engine.administer.plan import plan_trials
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> trials = list(plan_trials(load_study("quickstart"), {"b": backend}))   # IRI: 28 items × 13 respondents
        >>> estimate_prompt_tokens(trials, ApproximateCounter("no tokenizer asked"))
        (84220.75, 364)
    """
    if not trials:
        return 0.0, 0
    if counter.exact is False:
        return float(sum(counter.count(t.request) for t in trials)), len(trials)
    step = len(trials) / limit
    sample = trials if len(trials) <= limit else [trials[int(i * step)] for i in range(limit)]
    with ThreadPoolExecutor(COUNTING_THREADS) as pool:
        tokens = sum(pool.map(counter.count, [t.request for t in sample]))
    if len(sample) == len(trials):
        return float(tokens), len(trials)
    chars = sum(request_chars(t.request) for t in sample)
    every = sum(request_chars(t.request) for t in trials)
    return (tokens / chars * every if chars else tokens / limit * len(trials)), limit


def _reasoning_how(backend: HttpBackend) -> str:
    """How a backend's reasoning allowance was sized, for the plan ('' when it has none).

    Example:
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> _reasoning_how(make_backend(BackendConfig(id="o", kind="openai", model="o3", base_url="http://x/v1")))
        'reasoning_effort medium (the provider default): 8,192 tokens per request on top of the answer'
    """
    from psyq.engine.backends.capabilities import reasoning_allowance

    allowance = reasoning_allowance(backend.config, backend.capabilities)
    if not allowance:
        return ""
    c = backend.config
    if c.reasoning_budget is not None:
        why = "reasoning_budget"
    else:
        why = (f"reasoning_effort {c.reasoning_effort}" if c.reasoning_effort
               else f"reasoning_effort {backend.capabilities.default_effort} (the provider default)")
    return f"{why}: {allowance:,} tokens per request on top of the answer"


def wall_time(trials: list[Trial], backend: HttpBackend, latency_s: float) -> tuple[float, str]:
    """Seconds to send `trials` on `backend` and which pace decides it (retries and re-asks not counted).

    Example (the shipped study quickstart planned for an OpenAI-compatible backend; nothing is sent):
        >>> from psyq import load_study
        >>> from psyq.engine.administer.plan import plan_trials
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> trials = list(plan_trials(load_study("quickstart"), {"b": backend}))   # IRI: 28 items × 13 respondents
        >>> wall_time(trials, backend, 1.0)
        (91.0, '364 requests at concurrency 4 × 1 s per request (assumed, --latency)')
    """
    n, config = len(trials), backend.config
    slots = backend.served_at_once   # an endpoint pool: concurrency per endpoint; a queueing server: its slots
    queued = "" if slots >= backend.capacity else f" (the server computes {slots} at a time; the rest wait in its queue)"
    paces = [(math.ceil(n / slots) * latency_s,
              f"{n:,} requests at concurrency {slots} × {latency_s:g} s per request (assumed, --latency){queued}")]
    if config.requests_per_minute:
        paces.append((60.0 * n / config.requests_per_minute, f"{n:,} requests at {config.requests_per_minute:g} rpm"))
    if config.tokens_per_minute:
        budget = sum(token_cost(t.request) for t in trials)
        paces.append((60.0 * budget / config.tokens_per_minute,
                      f"~{budget:,.0f} tokens at {config.tokens_per_minute:g} tpm (the pacer counts characters/4 "
                      f"+ max_tokens per request)"))
    seconds, how = max(paces, key=lambda p: p[0])
    others = [f"{h} would take ~{_duration(s)}" for s, h in paces if h != how]
    return seconds, how + "".join(f"; {o}" for o in others)


def _headers(backend: HttpBackend) -> tuple[dict[str, str], str | None]:
    """The request headers as the backend builds them, with the key's value replaced by its variable's name."""
    name = backend.config.api_key_env
    try:
        headers = {"Content-Type": "application/json", **backend.headers()}
    except BackendError as exc:   # the key's variable is not set: `psyq run` would stop at once
        return {"Content-Type": "application/json"}, str(exc)
    key = os.environ.get(name) if name else None
    if key:
        hidden = f"<value of ${name}, not shown>"
        headers = {h: (v.replace(key, hidden) if len(key) >= 8 else hidden) if key in v else v
                   for h, v in headers.items()}
    return headers, None


def build_plan(study_id: str, run_dir: str, backends: Mapping[str, HttpBackend], trials: Iterable[Trial],
               finished: set[str], counters: Mapping[str, TokenCounter], prices: PriceTable | None,
               latency_s: float = DEFAULT_LATENCY_S, preview: int = DEFAULT_PREVIEW,
               start_s: Mapping[str, tuple[float, str]] | None = None,
               shown_first: Iterable[Trial] | None = None) -> Plan:
    """The plan of `trials` (as engine/administer/plan.py plans them), leaving out those in `finished`.

    `counters`: a token counter per backend id; `start_s`: seconds a backend needs before its
    first request and why (the local server's start), added to its time; `shown_first`: the
    requests to preview in place of the first ones sent (e.g. one whole conversation of a staged
    study, engine/administer/plan.py), those already finished left out.

    Example (the shipped study quickstart planned for an OpenAI-compatible backend; nothing is sent):
        >>> from psyq import load_study
        >>> from psyq.engine.administer.plan import plan_trials
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> trials = list(plan_trials(load_study("quickstart"), {"b": backend}))   # IRI: 28 items × 13 respondents
        >>> plan = build_plan("quickstart", "runs/quickstart/ab12", {"b": backend}, trials,
        ...                   set(), {"b": ApproximateCounter("no tokenizer asked")}, None)
        >>> plan.requests, plan.backends[0].option_orders
        (364, {'as_written': 196, 'reversed': 168})
    """
    planned: dict[str, int] = Counter()
    groups: dict[tuple[str, str, str, str], list[Trial]] = defaultdict(list)
    for trial in trials:
        planned[trial.backend_id] += 1
        if trial.trial_id not in finished:
            groups[(trial.backend_id, trial.instrument.id, trial.kind, trial.condition)].append(trial)
    rows, notes, plans, shown = [], [], [], []
    per_condition: dict[str, list[tuple[int, float, int, bool, Cost]]] = defaultdict(list)   # one entry per backend
    for backend_id, backend in backends.items():
        mine = {key: group for key, group in groups.items() if key[0] == backend_id}
        counter = counters[backend_id]
        try:
            estimates = {key: estimate_prompt_tokens(group, counter) for key, group in mine.items()}
        except TokenizerFailed as exc:   # the server stopped tokenizing: the whole backend is approximate
            counter = ApproximateCounter(f"the server's tokenizer failed during the plan ({exc})")
            estimates = {key: estimate_prompt_tokens(group, counter) for key, group in mine.items()}
        for key, group in mine.items():
            rows.append(StageRow(backend_id, key[1], key[2], len(group), estimates[key][0],
                                 sum(backend.token_limit(t.request) for t in group), key[3]))
        sent = [t for group in mine.values() for t in group]
        prompt_tokens = sum(e[0] for e in estimates.values())
        done = sum(e[1] for e in estimates.values())
        method, exact = counter.method, counter.exact and done == len(sent)
        if counter.exact and done < len(sent):
            method += f"; {done:,} of {len(sent):,} requests counted, the rest scaled by their characters"
        # The whole token limit of each request: the answer budget plus a reasoning model's allowance.
        completion = sum(backend.token_limit(t.request) for t in sent)
        reasoning = completion - sum(t.request.max_tokens for t in sent)
        model = backend.identity().get("model")
        for condition in dict.fromkeys(key[3] for key in mine):   # each condition's share of this backend
            keys = [key for key in mine if key[3] == condition]
            tokens = sum(estimates[key][0] for key in keys)
            limit = sum(backend.token_limit(t.request) for key in keys for t in mine[key])
            per_condition[condition].append((sum(len(mine[key]) for key in keys), tokens, limit, exact,
                                             cost_of(model, tokens, limit, prices)))
        seconds, how = wall_time(sent, backend, latency_s) if sent else (0.0, "nothing to send")
        if sent and start_s and backend_id in start_s:
            seconds += start_s[backend_id][0]
            how += f"; + {start_s[backend_id][1]}"
        plans.append(BackendPlan(backend_id, backend.config.kind, model, len(sent), planned[backend_id],
                                 prompt_tokens, completion, method, exact,
                                 cost_of(model, prompt_tokens, completion, prices), seconds, how,
                                 dict(Counter(t.option_order for t in sent)), reasoning, _reasoning_how(backend)))
        headers, problem = _headers(backend)
        if problem and sent:
            notes.append(f"backend '{backend_id}': {problem}; `psyq run` would stop at its first request")
        chosen = sent if shown_first is None else \
            [t for t in shown_first if t.backend_id == backend_id and t.trial_id not in finished]
        for trial in chosen[:preview]:
            shown.append(PreviewRequest(backend_id, trial.instrument.id, trial.kind, trial.respondent_id,
                                        backend.shown_endpoint(), headers, backend.payload(trial.request),
                                        trial.condition))
    conditions = [ConditionPlan(c, sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts),
                                all(p[3] for p in parts), _sum_costs([p[4] for p in parts]))
                  for c, parts in per_condition.items()] if any(per_condition) else []
    return Plan(study_id, run_dir, latency_s, rows, plans, shown, prices.origin if prices else None, notes,
                conditions)


def _sum_costs(costs: list[Cost]) -> Cost:
    """The sum of `costs`, or not estimable naming each reason."""
    if all(c.usd is not None for c in costs):
        return Cost(sum(c.usd for c in costs))
    return Cost(None, "; ".join(dict.fromkeys(c.why_not for c in costs if c.why_not)))


def _duration(seconds: float) -> str:
    """A duration in words a person reads at a glance.

    Example:
        >>> _duration(3725), _duration(91), _duration(0.4)
        ('1 h 2 min', '1 min 31 s', '0.4 s')
    """
    if seconds < 10:
        return f"{seconds:.1f} s"
    seconds = round(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h} h {m} min"
    return f"{m} min {s} s" if m else f"{s} s"


def _aligned(table: list[tuple[str, ...]], numbers: range) -> list[str]:
    """The rows of `table` in columns, indented by two spaces: the columns of `numbers` to the right, the rest to the left."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  " + "  ".join(c.rjust(w) if i in numbers else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
            for row in table]


def _tokens(value: float, exact: bool) -> str:
    return f"{value:,.0f}" if exact else f"~{value:,.0f}"


def plan_lines(plan: Plan, reask_limit: int, reads_logprobs: bool, finished: int = 0,
               finished_note: str | None = None) -> list[str]:
    """The plan as text for a terminal (`psyq plan`, `psyq run --dry-run`).

    Example (the shipped study quickstart planned for an OpenAI-compatible backend; nothing is sent):
        >>> from psyq import load_study
        >>> from psyq.engine.administer.plan import plan_trials
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> trials = list(plan_trials(load_study("quickstart"), {"b": backend}))   # IRI: 28 items × 13 respondents
        >>> plan = build_plan("quickstart", "runs/quickstart/ab12", {"b": backend}, trials,
        ...                   set(), {"b": ApproximateCounter("no tokenizer asked")}, None, preview=0)
        >>> print("\\n".join(plan_lines(plan, 2, True)[:6]))
        plan for study quickstart: nothing is sent and nothing is written (run directory: runs/quickstart/ab12)
        364 requests to send
        not counted: re-asks (answers read from log probabilities are never re-asked) and retries after transient failures; both may add requests, tokens and cost
        <BLANKLINE>
          backend  instrument  stage   requests  prompt tokens  completion tokens (max)
          b        iri         rating       364        ~84,221                      364
    """
    exact = {b.backend: b.tokens_exact for b in plan.backends}
    out = [f"plan for study {plan.study}: nothing is sent and nothing is written (run directory: {plan.run_dir})"]
    planned = sum(b.planned for b in plan.backends)
    out.append(f"{plan.requests:,} requests to send" + (f" ({planned:,} planned; {finished:,} already finished in "
                                                         f"the run directory are not sent again)" if finished else ""))
    if finished_note:
        out.append(f"note: {finished_note}")
    reasks = ("answers read from log probabilities are never re-asked" if reads_logprobs else
              f"a reply that cannot be read is re-asked up to {reask_limit} times")
    out.append(f"not counted: re-asks ({reasks}) and retries after transient failures; both may add requests, "
               f"tokens and cost")
    out.append("")
    # A study with conditions: each row is one condition's (after its backend), and a table per condition follows.
    named = ("condition",) if plan.conditions else ()
    header = ("backend", *named, "instrument", "stage", "requests", "prompt tokens", "completion tokens (max)")
    out.extend(_aligned([header] + [(r.backend, *((r.condition,) if named else ()), r.instrument, r.stage,
                                     f"{r.requests:,}", _tokens(r.prompt_tokens, exact[r.backend]),
                                     f"{r.completion_tokens_max:,}") for r in plan.rows], range(3 + len(named), 6 + len(named))))
    if plan.conditions:
        out.append("")
        out.append(f"per condition ({len(plan.conditions)}; each over the backends that ask it):")
        out.extend(_aligned([("condition", "requests", "prompt tokens", "completion tokens (max)", "cost")] + [
            (c.condition, f"{c.requests:,}", _tokens(c.prompt_tokens, c.tokens_exact), f"{c.completion_tokens_max:,}",
             str(c.cost)) for c in plan.conditions], range(1, 4)))
    for b in plan.backends:
        out.append("")
        out.append(f"backend {b.backend} ({b.kind}, model {b.model}): {b.requests:,} requests"
                   + (f"; option order: " + ", ".join(f"{k} {v:,}" for k, v in sorted(b.option_orders.items()))
                      if b.option_orders else ""))
        out.append(f"  prompt tokens      {_tokens(b.prompt_tokens, b.tokens_exact)}  ({b.token_method})")
        out.append(f"  completion tokens  at most {b.completion_tokens_max:,}  (the sum of the token limits: an upper bound)")
        if b.reasoning_max:
            out.append(f"    of which reasoning at most {b.reasoning_max:,}  ({b.reasoning_how}; only the reasoning "
                       f"tokens used are billed, as output, so the cost is an upper bound too)")
        out.append(f"  cost               {b.cost}")
        out.append(f"  wall time          ~{_duration(b.wall_s)}  ({b.wall_how})")
    cost = plan.total_cost()
    out.append("")
    out.append(f"total: {plan.requests:,} requests; cost {cost}; wall time ~{_duration(plan.wall_s)}"
               + (" (backends run at the same time)" if len(plan.backends) > 1 else ""))
    if plan.prices:
        out.append(f"prices: {plan.prices} (USD per 1M tokens)")
    for note in plan.notes:
        out.append(f"note: {note}")
    if plan.preview:
        out.append("")
        out.append("preview: the first requests of each backend exactly as they will be sent "
                   "(JSON indented here for reading; sent compact, UTF-8)")
        for i, p in enumerate(plan.preview, 1):
            out.append(f"--- request {i}: backend {p.backend}, " + (f"condition {p.condition}, " if p.condition else "")
                       + f"instrument {p.instrument}, stage {p.stage}, respondent {p.respondent}")
            out.append(f"POST {p.url}")
            out.extend(f"{h}: {v}" for h, v in p.headers.items())
            out.append(json.dumps(p.body, indent=2, ensure_ascii=False))
    return out
