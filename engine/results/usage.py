"""Tokens a run actually used, read from its store without writing to it.

The sums are of the per-trial ``prompt_tokens`` / ``completion_tokens`` the servers reported
(re-asks included; a failed attempt that was retried later counts once, as the trial row is
replaced); trials whose server reported no usage are counted apart, never as 0. Cached prompt
tokens (``cached_tokens``: the part of the prompt tokens the server read from its prompt cache)
are summed over the trials that reported them; none reported is "not reported", not 0.
Per endpoint (engine/backends/pool.py): trials and tokens by the server that answered.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from psyq.engine.design.prices import Cost, PriceTable, cost_of
from psyq.engine.store.readonly import connect_readonly


@dataclass(frozen=True)
class Usage:
    """Tokens used by one backend of a run."""

    backend_id: str
    model: str | None
    trials: int
    with_usage: int            # trials whose server reported token counts
    prompt_tokens: int
    completion_tokens: int
    with_cached: int = 0       # trials whose server reported cached prompt tokens (0 among them counts)
    cached_tokens: int = 0     # their sum: part of prompt_tokens
    with_reasoning: int = 0    # trials whose server reported reasoning tokens
    reasoning_tokens: int = 0  # their sum: part of completion_tokens (billed as output)
    budget_reasks: int = 0     # trials sent again with a doubled token limit

    def cost(self, table: PriceTable | None) -> Cost:
        """Cost of the reported tokens (not estimable without a price, or when no trial reported usage)."""
        if self.with_usage == 0:
            return Cost(None, "the server reported no token usage")
        return cost_of(self.model, self.prompt_tokens, self.completion_tokens, table, cached_tokens=self.cached_tokens)

    def cached_text(self) -> str:
        """The cached prompt tokens as `psyq status` shows them.

        Example:
            >>> Usage("b", "m", 2, 2, 100, 4, 2, 60).cached_text()
            'cached 60 of the prompt tokens (60.0 %; reported for 2 of 2 trials)'
        """
        if self.with_cached == 0:
            return "cached prompt tokens not reported by the server"
        share = f"{100 * self.cached_tokens / self.prompt_tokens:.1f} %; " if self.prompt_tokens else ""
        return (f"cached {self.cached_tokens:,} of the prompt tokens ({share}reported for {self.with_cached} "
                f"of {self.trials} trials)")

    def reasoning_text(self) -> str:
        """The reasoning tokens as `psyq status` shows them ('' for a model that reported none).

        Example:
            >>> Usage("b", "m", 2, 2, 100, 400, with_reasoning=2, reasoning_tokens=380, budget_reasks=1).reasoning_text()
            '; reasoning 380 of the completion tokens (reported for 2 of 2 trials); 1 trials sent again with a doubled token limit'
        """
        text = (f"; reasoning {self.reasoning_tokens:,} of the completion tokens (reported for {self.with_reasoning} "
                f"of {self.trials} trials)" if self.with_reasoning else "")
        if self.budget_reasks:
            text += f"; {self.budget_reasks} trials sent again with a doubled token limit"
        return text

    def to_json(self, table: PriceTable | None) -> dict:
        cost = self.cost(table)
        return {"model": self.model, "trials": self.trials, "trials_with_usage": self.with_usage,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens if self.with_cached else None,
                "trials_with_cached_tokens": self.with_cached,
                "reasoning_tokens": self.reasoning_tokens if self.with_reasoning else None,
                "trials_with_reasoning_tokens": self.with_reasoning,
                "trials_sent_again_with_larger_budget": self.budget_reasks,
                "cost_usd": cost.usd, "cost_not_estimable": cost.why_not, "cost_note": cost.note}


@dataclass(frozen=True)
class EndpointUsage:
    """Trials one endpoint of a backend answered (the last reply of each), and their tokens."""

    backend_id: str
    endpoint: str | None       # None: trials stored before endpoints were recorded, or never answered
    trials: int
    answered: int              # trials with status answered
    prompt_tokens: int
    cached_tokens: int | None  # None: not reported
    completion_tokens: int


def _connect_readonly(path: Path) -> sqlite3.Connection:
    return connect_readonly(path)


def token_usage(db: sqlite3.Connection) -> list[Usage]:
    """Per backend: trials, trials with reported usage, and the sums of their tokens.

    Example (`run_dir`: 16 trials sent to a stub server, which reports usage):
        >>> [usage] = token_usage(connect_readonly(run_dir / "run.sqlite"))
        >>> usage.backend_id, usage.model, usage.trials, usage.with_usage, usage.prompt_tokens, usage.completion_tokens
        ('stub', 'stub-model', 16, 16, 1496, 23)
    """
    # Runs from before a column was added read it as NULL (not reported).
    cached, reasoning, reasks = (c if _has_column(db, c) else "NULL"
                                 for c in ("cached_tokens", "reasoning_tokens", "budget_reasks"))
    rows = db.execute(f"SELECT backend_id, MAX(model), COUNT(*), COUNT(prompt_tokens), "
                      f"COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), "
                      f"COUNT({cached}), COALESCE(SUM({cached}), 0), COUNT({reasoning}), COALESCE(SUM({reasoning}), 0), "
                      f"COALESCE(SUM({reasks} > 0), 0) "
                      f"FROM trials GROUP BY backend_id ORDER BY backend_id").fetchall()
    return [Usage(b, m, n, k, int(p), int(c), int(kc), int(sc), int(kr), int(sr), int(br))
            for b, m, n, k, p, c, kc, sc, kr, sr, br in rows]


def _has_column(db: sqlite3.Connection, column: str) -> bool:
    return column in {row[1] for row in db.execute("PRAGMA table_info(trials)")}


def endpoint_usage(db: sqlite3.Connection) -> list[EndpointUsage]:
    """Per backend and endpoint that answered: trials, answered trials and tokens.

    Example (`run_dir`: 16 trials sent to one stub server, one answer refused):
        >>> [(u.backend_id, u.trials, u.answered) for u in endpoint_usage(connect_readonly(run_dir / "run.sqlite"))]
        [('stub', 16, 15)]
    """
    if not _has_column(db, "endpoint"):
        return []
    rows = db.execute("SELECT backend_id, endpoint, COUNT(*), SUM(status = 'answered'), "
                      "COALESCE(SUM(prompt_tokens), 0), COUNT(cached_tokens), COALESCE(SUM(cached_tokens), 0), "
                      "COALESCE(SUM(completion_tokens), 0) FROM trials GROUP BY backend_id, endpoint "
                      "ORDER BY backend_id, endpoint").fetchall()
    return [EndpointUsage(b, e, n, int(a), int(p), int(sc) if kc else None, int(c))
            for b, e, n, a, p, kc, sc, c in rows]


def endpoint_lines(rows: list[EndpointUsage]) -> list[str]:
    """The per-endpoint block of `psyq status`; shown for backends answered by several endpoints.

    Example:
        >>> endpoint_lines([EndpointUsage("b", "http://a/v1", 3, 3, 30, None, 3),
        ...                 EndpointUsage("b", "http://c/v1", 1, 1, 10, 5, 1)])[0]
        'endpoint   b http://a/v1: 3 trials (3 answered); prompt 30, cached not reported, completion 3'
    """
    per_backend: dict[str, int] = {}
    for r in rows:
        per_backend[r.backend_id] = per_backend.get(r.backend_id, 0) + 1
    lines = []
    for r in rows:
        if per_backend[r.backend_id] < 2:
            continue
        cached = "not reported" if r.cached_tokens is None else f"{r.cached_tokens:,}"
        lines.append(f"endpoint   {r.backend_id} {r.endpoint or '(not recorded)'}: {r.trials:,} trials "
                     f"({r.answered:,} answered); prompt {r.prompt_tokens:,}, cached {cached}, "
                     f"completion {r.completion_tokens:,}")
    return lines


def read_endpoint_usage(path: str | Path) -> list[EndpointUsage]:
    """:func:`endpoint_usage` of the run store at `path`, opened read-only."""
    db = _connect_readonly(Path(path))
    try:
        return endpoint_usage(db)
    finally:
        db.close()


def read_token_usage(path: str | Path) -> list[Usage]:
    """:func:`token_usage` of the run store at `path`, opened read-only."""
    db = _connect_readonly(Path(path))
    try:
        return token_usage(db)
    finally:
        db.close()


def read_finished_trials(path: str | Path) -> tuple[set[str], str | None]:
    """Trial ids a rerun would not send again, read-only; and why they could not be read (None: read).

    Example:
        >>> read_finished_trials("no/such/run.sqlite")
        (set(), None)
    """
    path = Path(path)
    if not path.exists():
        return set(), None
    try:
        db = _connect_readonly(path)
        try:
            rows = db.execute("SELECT trial_id FROM trials WHERE status IN ('answered', 'missing')").fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        return set(), f"could not read {path} ({exc}); the plan counts every trial as still to send"
    return {r[0] for r in rows}, None


def usage_lines(usage: list[Usage], table: PriceTable | None) -> list[str]:
    """The tokens-and-cost block of `psyq status` (one line per backend, then the total).

    Example:
        >>> usage_lines([Usage("b", "m", 2, 2, 100, 4)], None)[0]
        'tokens     b (m): prompt 100, completion 4 (reported for 2 of 2 trials); cached prompt tokens not reported by the server; cost not estimable (no price table: add `prices:` to the study or give --prices FILE)'
    """
    lines = []
    for u in usage:
        lines.append(f"tokens     {u.backend_id} ({u.model}): prompt {u.prompt_tokens:,}, completion "
                     f"{u.completion_tokens:,} (reported for {u.with_usage} of {u.trials} trials); "
                     f"{u.cached_text()}{u.reasoning_text()}; cost {u.cost(table)}")
    costs = [u.cost(table) for u in usage]
    if len(usage) > 1:
        total = (f"${sum(c.usd for c in costs):,.4f}" if all(c.usd is not None for c in costs)
                 else "not estimable (" + "; ".join(c.why_not for c in costs if c.why_not) + ")")
        lines.append(f"tokens     all backends: prompt {sum(u.prompt_tokens for u in usage):,}, cached "
                     f"{sum(u.cached_tokens for u in usage):,}, completion "
                     f"{sum(u.completion_tokens for u in usage):,}; cost {total}")
    if table is not None:
        lines.append(f"prices     {table.origin} (USD per 1M tokens)")
    return lines
