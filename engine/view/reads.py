"""What the viewer reads from one run's store: short read-only queries, filtered and paginated in
SQL (``WHERE`` and ``LIMIT``), never a whole table in memory.

Every function takes an open read-only connection (engine/store/readonly.py) and returns plain
values for the templates; nothing here renders HTML.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields
from typing import Any, Mapping

from psyq.engine.store.run_store import REPLY_SEPARATOR

PAGE_SIZE = 50
# Answer statuses other than `answered` (engine/store/run_store.py's answers table): the reasons an answer is missing.
REASONS = ("refusal", "out_of_range", "unparseable", "empty", "no_option_tokens", "too_long", "unreadable_response",
           "parse_error", "token_budget_exhausted", "failed")
QUANTILES = (0.0, 0.1, 0.5, 0.9, 0.99, 1.0)


@dataclass
class TrialFilter:
    """The trials page's filters, as given in its query string ('' = any)."""

    status: str = ""       # trial status: answered | missing | failed
    reason: str = ""       # an answer's status (refusal, unparseable ...)
    instrument: str = ""
    item: str = ""
    backend: str = ""
    condition: str = ""    # a condition's id (studies with `conditions:`)
    attribute: str = ""    # a persona attribute, KEY=VALUE
    stage: str = ""        # a stage's 0-based index (studies with stages)
    q: str = ""            # text in the replies
    page: int = 0

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> "TrialFilter":
        """The filter of a query string (unknown keys ignored; a bad page number is page 0).

        Example:
            >>> TrialFilter.from_query({"status": "missing", "page": "x"})
            TrialFilter(status='missing', reason='', instrument='', item='', backend='', condition='', attribute='', stage='', q='', page=0)
        """
        values = {f.name: str(params.get(f.name, "")).strip()[:500] for f in fields(cls) if f.name != "page"}
        try:
            page = max(int(params.get("page", 0)), 0)
        except ValueError:
            page = 0
        return cls(**values, page=page)

    def query(self, **changes: Any) -> dict[str, str]:
        """The non-empty filters as query parameters (with `changes`), for links to other pages."""
        values = {f.name: getattr(self, f.name) for f in fields(self)} | changes
        return {k: str(v) for k, v in values.items() if v not in ("", 0, None)}

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition on `trials t` and its parameters.

        Example:
            >>> TrialFilter(status="missing", q="50%").where()
            ("t.status = ? AND t.raw_text LIKE ? ESCAPE '\\\\'", ['missing', '%50\\\\%%'])
        """
        terms: list[str] = []
        args: list[Any] = []
        for column, value in (("t.status", self.status), ("t.instrument_id", self.instrument),
                              ("t.backend_id", self.backend), ("t.condition", self.condition)):
            if value:
                terms.append(f"{column} = ?")
                args.append(value)
        if self.reason or self.item:
            sub = ["a.trial_id = t.trial_id"]
            if self.reason:
                sub.append("a.status = ?")
                args.append(self.reason)
            if self.item:
                sub.append("a.item_id = ?")
                args.append(self.item)
            terms.append(f"EXISTS (SELECT 1 FROM answers a WHERE {' AND '.join(sub)})")
        if self.attribute:
            key, _, value = self.attribute.partition("=")
            terms.append("t.respondent_id IN (SELECT respondent_id FROM respondents "
                         "WHERE CAST(json_extract(attributes, ?) AS TEXT) = ?)")
            args.extend(['$."' + key.strip().replace('"', "") + '"', value.strip()])
        if self.stage:
            terms.append("t.trial_id IN (SELECT trial_id FROM stage_trials WHERE stage = ?)")
            args.append(int(self.stage) if self.stage.isdigit() else -1)
        if self.q:
            terms.append("t.raw_text LIKE ? ESCAPE '\\'")
            args.append("%" + self.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
        return (" AND ".join(terms) or "1"), args


def trials_page(db: sqlite3.Connection, chosen: TrialFilter, conditions: bool = False) -> dict[str, Any]:
    """One page of trials matching `chosen`, newest stored first, and how many match in all (with
    `conditions`, a run of a study with `conditions:`, each trial's condition too)."""
    where, args = chosen.where()
    rows = db.execute(
        "SELECT t.trial_id, t.started_at, t.instrument_id, t.item_ids, t.backend_id, t.respondent_id, t.status, "
        "t.reasks, t.attempts, t.latency_s, substr(t.raw_text, 1, 200), t.error, "
        + ("t.condition, " if conditions else "'', ") +
        "(SELECT group_concat(a.item_id || '=' || COALESCE(a.value, a.status), ', ') FROM answers a "
        " WHERE a.trial_id = t.trial_id) "
        f"FROM trials t WHERE {where} ORDER BY t.rowid DESC LIMIT ? OFFSET ?",
        [*args, PAGE_SIZE, chosen.page * PAGE_SIZE]).fetchall()
    total = db.execute(f"SELECT COUNT(*) FROM trials t WHERE {where}", args).fetchone()[0]
    keys = ("trial_id", "started_at", "instrument", "items", "backend", "respondent", "status", "reasks", "attempts",
            "latency_s", "reply", "error", "condition", "answers")
    trials = [dict(zip(keys, row)) for row in rows]
    for trial in trials:
        trial["items"] = ", ".join(_json(trial["items"], []))
        trial["reply"] = (trial["reply"] or "").replace(REPLY_SEPARATOR.strip(), " | ")
    return {"trials": trials, "total": total, "pages": max((total + PAGE_SIZE - 1) // PAGE_SIZE, 1)}


def trial_filter_choices(db: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    """Per filter of the trials page that takes one of a few values (status, reason, instrument,
    backend, item; condition, for a run of a study with `conditions:`): each value the run's trials
    take, with how many trials it selects.

    Example:
        >>> db = sqlite3.connect(":memory:")
        >>> _ = db.execute("CREATE TABLE trials (trial_id, status, instrument_id, backend_id)")
        >>> _ = db.execute("CREATE TABLE answers (trial_id, item_id, status)")
        >>> _ = db.execute("INSERT INTO trials VALUES ('t1', 'missing', 'mini', 'stub')")
        >>> _ = db.executemany("INSERT INTO answers VALUES ('t1', ?, ?)", [("a", "refusal"), ("b", "answered")])
        >>> choices = trial_filter_choices(db)
        >>> choices["status"], [c["value"] for c in choices["item"]], choices["reason"]
        ([{'value': 'missing', 'count': 1}], ['a', 'b'], [{'value': 'refusal', 'count': 1}])
    """
    queries = {
        "status": "SELECT status, COUNT(*) FROM trials GROUP BY status",
        "reason": "SELECT status, COUNT(DISTINCT trial_id) FROM answers WHERE status != 'answered' GROUP BY status",
        "instrument": "SELECT instrument_id, COUNT(*) FROM trials GROUP BY instrument_id",
        "backend": "SELECT backend_id, COUNT(*) FROM trials GROUP BY backend_id",
        "item": "SELECT item_id, COUNT(DISTINCT trial_id) FROM answers GROUP BY item_id",
    }
    # Trials stored by a psyq before conditions have no such column; a run without conditions stores ''.
    if "condition" in {row[1] for row in db.execute("PRAGMA table_info(trials)")}:
        queries["condition"] = "SELECT condition, COUNT(*) FROM trials WHERE condition != '' GROUP BY condition"
    out = {}
    for key, sql in queries.items():
        rows = [(str(value), count) for value, count in db.execute(sql) if value is not None]
        out[key] = [{"value": value, "count": count} for value, count in sorted(rows, key=lambda r: _order(r[0]))]
    return out


def _json(text: str | None, default: Any) -> Any:
    try:
        return json.loads(text) if text else default
    except ValueError:
        return default


def _row(db: sqlite3.Connection, sql: str, key: str) -> dict[str, Any] | None:
    """The one row `sql` selects for `key`, by column name (None: none); later reads get named rows too."""
    db.row_factory = sqlite3.Row
    row = db.execute(sql, (key,)).fetchone()
    return dict(row) if row is not None else None


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def messages_of(request: Any) -> list[dict[str, str]]:
    """The messages of a stored request as (role, text) pairs: OpenAI's `messages`, Anthropic's
    `system` + `messages`; a content of parts is shown part by part, anything else as JSON.

    Example:
        >>> messages_of({"system": "S", "messages": [{"role": "user", "content": [{"type": "text", "text": "Q"}]}]})
        [{'role': 'system', 'text': 'S'}, {'role': 'user', 'text': 'Q'}]
    """
    if not isinstance(request, dict):
        return []
    out = []
    if request.get("system"):
        out.append({"role": "system", "text": _text(request["system"])})
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            out.append({"role": str(message.get("role", "?")), "text": _text(message.get("content"))})
        else:
            out.append({"role": "?", "text": _text(message)})
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in content):
        return "\n".join(p["text"] for p in content)
    return json.dumps(content, indent=1, ensure_ascii=False)


def replies_of(raw_text: str | None) -> list[dict[str, Any]]:
    """Every reply text of a trial in order; each after the first answered a re-ask.

    Example:
        >>> [r["reask"] for r in replies_of("banana" + REPLY_SEPARATOR + "5")]
        [0, 1]
    """
    if raw_text is None:
        return []
    return [{"reask": i, "text": text} for i, text in enumerate(raw_text.split(REPLY_SEPARATOR))]


def trial_detail(db: sqlite3.Connection, trial_id: str) -> dict[str, Any] | None:
    """Everything stored about one trial: the row, its answers, respondent, stage chain and ratings."""
    trial = _row(db, "SELECT * FROM trials WHERE trial_id = ?", trial_id)
    if trial is None:
        return None
    request = _json(trial["request"], None)
    trial["messages"] = messages_of(request)
    trial["request_options"] = {k: v for k, v in (request or {}).items() if k not in ("messages", "system")}
    trial["replies"] = replies_of(trial["raw_text"])
    trial["item_ids"] = _json(trial["item_ids"], [])
    answers = [dict(a) for a in db.execute("SELECT * FROM answers WHERE trial_id = ? ORDER BY position",
                                           (trial_id,))]
    for answer in answers:
        distribution = _json(answer["distribution"], None)
        answer["bars"] = sorted(((str(k), float(v)) for k, v in distribution.items()), key=lambda kv: _order(kv[0])) \
            if isinstance(distribution, dict) else []
    respondent = respondent_row(db, trial["respondent_id"])
    stage = db.execute("SELECT * FROM stage_trials WHERE trial_id = ?", (trial_id,)).fetchone()
    chain = []
    if stage is not None:
        stage = dict(stage)
        stage["messages"] = [{"role": m.get("role", "?"), "text": _text(m.get("content"))}
                             for m in _json(stage["messages"], []) if isinstance(m, dict)]
        chain = [dict(r) for r in db.execute(
            "SELECT s.trial_id, s.stage, s.emotion, t.status FROM stage_trials s JOIN trials t USING (trial_id) "
            "WHERE s.chain_id = ? ORDER BY s.stage", (stage["chain_id"],))]
    return {"trial": trial, "answers": answers, "respondent": respondent, "stage": stage, "chain": chain,
            "ratings": ratings_of(db, trial_id)}


def _order(key: str) -> tuple[int, float | str]:
    try:
        return (0, float(key))
    except ValueError:
        return (1, key)


def ratings_of(db: sqlite3.Connection, trial_id: str) -> list[dict[str, Any]]:
    """The ratings of a trial's replies (engine/store/ratings.py): the text rated, and per rater the
    prompt it was sent, its reply and its rating."""
    if not (_has_table(db, "rating_targets") and _has_table(db, "ratings")):
        return []
    db.row_factory = sqlite3.Row
    rows = db.execute(
        "SELECT g.response_id, g.item_id, g.perturbation, g.text AS target_text, r.rubric_id, r.dimension, "
        "r.rater_kind, r.rater_id, r.level, r.status, r.reason, r.model, r.request, r.raw_text "
        "FROM rating_targets g JOIN ratings r USING (response_id) WHERE g.trial_id = ? "
        "ORDER BY g.item_id, g.perturbation, r.rubric_id, r.dimension, r.rater_kind, r.rater_id", (trial_id,)).fetchall()
    out = []
    for row in rows:
        rating = dict(row)
        rating["messages"] = messages_of(_json(rating.pop("request"), None))
        out.append(rating)
    return out


def respondent_row(db: sqlite3.Connection, respondent_id: str) -> dict[str, Any] | None:
    """One respondent: attributes (a dict), backstory and system prompt."""
    respondent = _row(db, "SELECT * FROM respondents WHERE respondent_id = ?", respondent_id)
    if respondent is None:
        return None
    attributes = _json(respondent["attributes"], {})
    respondent["attributes"] = attributes if isinstance(attributes, dict) else {"attributes": attributes}
    return respondent


def respondent_trials(db: sqlite3.Connection, respondent_id: str, limit: int = 500) -> list[dict[str, Any]]:
    """A respondent's trials (at most `limit`), in the order they were stored."""
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute(
        "SELECT trial_id, instrument_id, item_ids, backend_id, repeat, status, reasks, substr(raw_text, 1, 200) AS reply "
        "FROM trials WHERE respondent_id = ? ORDER BY rowid LIMIT ?", (respondent_id, limit))]


def latency_quantiles(db: sqlite3.Connection) -> list[dict[str, Any]]:
    """Per backend: how many trials reported a latency, and its quantiles (seconds).

    Example:
        >>> db = sqlite3.connect(":memory:")
        >>> _ = db.execute("CREATE TABLE trials (backend_id TEXT, latency_s REAL)")
        >>> _ = db.executemany("INSERT INTO trials VALUES ('b', ?)", [(x,) for x in (1.0, 2.0, 3.0)])
        >>> latency_quantiles(db)[0]["quantiles"]
        [1.0, 1.2, 2.0, 2.8, 2.98, 3.0]
    """
    import numpy as np

    out = []
    backends = [r[0] for r in db.execute("SELECT DISTINCT backend_id FROM trials ORDER BY backend_id")]
    for backend in backends:
        values = np.fromiter((r[0] for r in db.execute(
            "SELECT latency_s FROM trials WHERE backend_id = ? AND latency_s IS NOT NULL", (backend,))), dtype=float)
        if len(values):
            out.append({"backend": backend, "n": len(values),
                        "quantiles": [round(float(q), 4) for q in np.quantile(values, QUANTILES)]})
    return out
