"""Tokens a run actually used, read from its store without writing to it.

The sums are of the per-trial ``prompt_tokens`` / ``completion_tokens`` the servers reported
(re-asks included; a failed attempt that was retried later counts once, as the trial row is
replaced); trials whose server reported no usage are counted apart, never as 0.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .prices import Cost, PriceTable, cost_of


@dataclass(frozen=True)
class Usage:
    """Tokens used by one backend of a run."""

    backend_id: str
    model: str | None
    trials: int
    with_usage: int            # trials whose server reported token counts
    prompt_tokens: int
    completion_tokens: int

    def cost(self, table: PriceTable | None) -> Cost:
        """Cost of the reported tokens (not estimable without a price, or when no trial reported usage)."""
        if self.with_usage == 0:
            return Cost(None, "the server reported no token usage")
        return cost_of(self.model, self.prompt_tokens, self.completion_tokens, table)

    def to_json(self, table: PriceTable | None) -> dict:
        cost = self.cost(table)
        return {"model": self.model, "trials": self.trials, "trials_with_usage": self.with_usage,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cost_usd": cost.usd, "cost_not_estimable": cost.why_not}


def _connect_readonly(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def token_usage(db: sqlite3.Connection) -> list[Usage]:
    """Per backend: trials, trials with reported usage, and the sums of their tokens.

    Example:
        >>> token_usage(sqlite3.connect("runs/quickstart/ab12cd34ef56/run.sqlite"))   # doctest: +SKIP
        [Usage(backend_id='local', model='gemma-3-270m-q4_k_m', trials=364, with_usage=364, ...)]
    """
    rows = db.execute("SELECT backend_id, MAX(model), COUNT(*), COUNT(prompt_tokens), "
                      "COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0) "
                      "FROM trials GROUP BY backend_id ORDER BY backend_id").fetchall()
    return [Usage(b, m, n, k, int(p), int(c)) for b, m, n, k, p, c in rows]


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
        'tokens     b (m): prompt 100, completion 4 (reported for 2 of 2 trials); cost not estimable (no price table: add `prices:` to the study or give --prices FILE)'
    """
    lines = []
    for u in usage:
        lines.append(f"tokens     {u.backend_id} ({u.model}): prompt {u.prompt_tokens:,}, completion "
                     f"{u.completion_tokens:,} (reported for {u.with_usage} of {u.trials} trials); "
                     f"cost {u.cost(table)}")
    costs = [u.cost(table) for u in usage]
    if len(usage) > 1:
        total = (f"${sum(c.usd for c in costs):,.4f}" if all(c.usd is not None for c in costs)
                 else "not estimable (" + "; ".join(c.why_not for c in costs if c.why_not) + ")")
        lines.append(f"tokens     all backends: prompt {sum(u.prompt_tokens for u in usage):,}, completion "
                     f"{sum(u.completion_tokens for u in usage):,}; cost {total}")
    if table is not None:
        lines.append(f"prices     {table.origin} (USD per 1M tokens)")
    return lines
