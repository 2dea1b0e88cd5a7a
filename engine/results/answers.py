"""A run's answers as one tidy long table, one row per item answer, built from its store:
what :meth:`psyq.engine.results.run.Run.answers` gives (and :func:`psyq.export_table`).

Columns: ``run_id, study, backend_id, model, respondent_id`` then one column per persona
attribute, then ``instrument, item_id, position, repeat, option_order, status, reason,
disclaimer, raw_text, value, keyed_value, expected, option_mass, distribution, trial_status,
attempts, reasks, text``. ``text`` holds free-text answers (a kind may store several rows per item, e.g.
``<item>:self`` and ``<item>:other``: :meth:`psyq.engine.kinds.ItemKind.answer_ids`). ``distribution`` is the JSON text ``{value: probability}`` (answer mode
`logprobs`, `verbalized`, `ssr`), else empty. ``value`` is the raw scale value (missing stays missing), ``keyed_value`` the value
after reverse keying with the instrument copy stored in the run.

A run of a study with `stages:` (engine/administer/plan.py) has two more columns at the end, ``stage`` (the
0-based index in `stages:`) and ``situation_id``, and holds the answers of its measure stages only:
an evoke stage asks no items (its reply is in the store's ``stage_trials`` table and the trial's
``raw_text``). Runs without stages have neither column.

A run of a study with `conditions:` (engine/design/conditions.py) has, after ``model``, a
``condition`` column (the condition's id, as each trial is stored with it) and one column per
factor, ``factor_<factor name>``, holding the condition's level of it (empty for a listed
condition that names no level of that factor). The prefix keeps a factor apart from a persona
attribute or a column of the table of the same name (a factor ``age`` beside the attribute
``age``); the answers are in the order of backend, condition (by its id), repeat and respondent.
Runs without conditions have none of these columns.
"""

from __future__ import annotations

import json
from contextlib import closing
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from psyq.engine.design.conditions import factor_names
from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import reverse_key
from psyq.engine.store.readonly import connect_readonly
from psyq.engine.store.run_store import RunStore, store_is_current

if TYPE_CHECKING:
    from psyq.engine.results.run import Run

# The trials that have answers (those the table holds; a staged run's evoke stages have none), and
# their respondents' attributes: read row by row (one row per trial and per respondent).
TRIALS = """
SELECT t.trial_id, t.backend_id, t.model{condition}, t.respondent_id, t.instrument_id AS instrument, t.repeat, t.option_order,
       {raw_text}t.status AS trial_status, t.attempts, t.reasks{staged_columns}
FROM trials t{staged_join}
WHERE EXISTS (SELECT 1 FROM answers a WHERE a.trial_id = t.trial_id){staged_where}
"""
STAGED = {"staged_columns": ", s.stage, s.situation_id", "staged_join": " LEFT JOIN stage_trials s USING (trial_id)",
          "staged_where": " AND t.instrument_id != 'evoke'"}
RESPONDENTS = "SELECT respondent_id, attributes FROM respondents"

# The answers, column by column, a window of rowids at a time (one scan of the table, no index):
# whole numbers and texts never NULL come as one text per column (joined in SQLite, split here:
# texts at the record separator, checked by their count), not as a Python tuple per answer (2.8 M
# answers of a 10⁵-persona run: 3 s instead of 14). A window keeps each joined text far below
# SQLite's limit on a string (10⁹ bytes: 28 M trial ids would reach it).
ANSWER_COLUMNS = """
SELECT count(*), group_concat(rowid), group_concat(position), group_concat(disclaimer),
       group_concat(CASE typeof(value) WHEN 'integer' THEN value ELSE 'nan' END),
       group_concat(trial_id, '{sep}'), group_concat(item_id, '{sep}'), group_concat(status, '{sep}'),
       count(reason) + count(distribution) + count(text) + count(expected) + count(option_mass)
       + total(typeof(value) = 'real')
FROM answers NOT INDEXED WHERE rowid >= ? AND rowid < ?
""".replace("{sep}", "\x1e")                   # the record separator written out (char(30) is a call per answer)
# A column of texts as JSON, when one of its texts holds the record separator.
ANSWER_TEXTS = "SELECT json_group_array({column}) FROM answers NOT INDEXED WHERE rowid >= ? AND rowid < ?"
ANSWER_WINDOW = 1_000_000      # rowids per window: joined trial ids of at most ~40 MB
# The values left out above, answer by answer: texts that may be NULL, real numbers (kept exact).
ANSWER_EXTRAS = """
SELECT rowid, reason, distribution, text, expected, option_mass, value FROM answers
WHERE reason IS NOT NULL OR distribution IS NOT NULL OR text IS NOT NULL OR expected IS NOT NULL
      OR option_mass IS NOT NULL OR typeof(value) = 'real'
"""


_CHUNK = 100_000
# The table's own columns: an attribute of the same name is renamed persona_<name>.
_TABLE_COLUMNS = {"run_id", "study", "backend_id", "model", "respondent_id", "instrument", "item_id", "position",
                  "repeat", "option_order", "status", "reason", "disclaimer", "raw_text", "value", "expected",
                  "option_mass", "distribution", "text", "trial_status", "attempts", "reasks", "keyed_value"}


def answer_table(run: Run, *, raw_text: bool = True) -> pd.DataFrame:
    """The answers of `run` as a tidy long DataFrame (see the module docstring for columns).

    Each trial's columns (its reply text among them) and each respondent's attributes are read once
    and copied to the trial's answers, and the answers are read in chunks: a run of 10⁵ personas
    answering 28 items in one request each is 2.8 M rows from 10⁵ replies. `raw_text` False leaves
    the replies' text out (the report reads none; each whole-instrument reply would otherwise be
    held once per answer).

    Example (`run_dir`: 4 personas × the 4 items of tests/data/mini_1to7.yaml, one answer refused):
        >>> from psyq.engine.results.run import open_run
        >>> table = answer_table(open_run(run_dir))
        >>> table.groupby("instrument")["value"].count().to_dict(), table.groupby("status").size().to_dict()
        ({'mini': 15}, {'answered': 15, 'refusal': 1})
        >>> "raw_text" in answer_table(open_run(run_dir), raw_text=False).columns
        False
    """
    manifest = run.manifest
    if not store_is_current(run.database):
        RunStore(run.database).close()   # brings a run stored by an older psyq up to the current schema
    staged = run.staged
    parts = STAGED if staged else dict.fromkeys(STAGED, "")
    conditions = run.conditions
    factors = factor_names(conditions)
    parts = {**parts, "condition": ", t.condition" if conditions else ""}
    with closing(connect_readonly(run.database)) as db:
        trials = pd.read_sql_query(TRIALS.format(raw_text="t.raw_text, " if raw_text else "", **parts), db)
        answers, at = _read_answers(db, trials)
        people = dict(db.execute(RESPONDENTS).fetchall())
    trials = trials.drop(columns="trial_id")
    own = {c: trials[c].take(at).reset_index(drop=True) for c in trials.columns}
    attributes = _attributes(own["respondent_id"], people)
    clash = [c for c in attributes.columns if c in _TABLE_COLUMNS or (staged and c in ("stage", "situation_id"))
             or (conditions and (c == "condition" or c.startswith("factor_")))]
    attributes = attributes.rename(columns={c: f"persona_{c}" for c in clash})
    index = pd.RangeIndex(len(at))
    columns = {"run_id": pd.Series(manifest["run_id"], index=index), "study": pd.Series(manifest["study"], index=index)}
    columns.update({c: own[c] for c in ("backend_id", "model")})
    if conditions:   # the condition and its level of each factor
        columns["condition"] = own["condition"]
        levels = {c["id"]: c.get("factors") or {} for c in conditions}
        for factor in factors:
            columns[f"factor_{factor}"] = own["condition"].map({cid: f.get(factor) for cid, f in levels.items()})
    columns["respondent_id"] = own["respondent_id"]
    columns.update({c: attributes[c] for c in attributes.columns})
    columns.update({"instrument": own["instrument"], "item_id": answers["item_id"], "position": answers["position"],
                    "repeat": own["repeat"], "option_order": own["option_order"], "status": answers["status"],
                    "reason": answers["reason"], "disclaimer": answers["disclaimer"].astype(bool)})
    if raw_text:
        columns["raw_text"] = own["raw_text"]
    columns.update({c: answers[c] for c in ("value", "expected", "option_mass", "distribution", "text")})
    columns.update({c: own[c] for c in ("trial_status", "attempts", "reasks")})
    table = pd.DataFrame(columns)
    table["keyed_value"] = _keyed(table, run.instruments)
    if staged:
        # Measure stages only (the evoke stages' replies are in the store's stage_trials table);
        # stage is the 0-based index in the study's `stages:`.
        table["stage"] = own["stage"].astype("Int64")
        table["situation_id"] = own["situation_id"]
    return table


def _read_answers(db, trials: pd.DataFrame) -> tuple[dict[str, pd.Series], np.ndarray]:
    """The answers' own columns, in the table's order, and each answer's row in `trials` (answers of
    trials not among them — a staged run's evoke stages — left out). Columns as pandas' SQL reader
    types them: text as ``str`` with NaN for NULL (object None when every value is NULL), numbers as
    float. The order is that of ``ORDER BY backend_id, [condition,] repeat, respondent_id, [situation_id, stage,]
    instrument, position`` (NULL first, text by code point as SQLite's binary collation orders UTF-8),
    answers that tie in it in the order they were stored."""
    count, rowid, columns, joined, extras = _answer_columns(db)
    if not count:
        empty = {name: pd.Series([], dtype=object) for name in ("item_id", "status", "reason", "distribution", "text",
                                                                "expected", "option_mass")}
        empty.update(position=pd.Series([], dtype=np.int64), disclaimer=pd.Series([], dtype=np.int64),
                     value=pd.Series([], dtype=float))
        return empty, np.array([], dtype=np.intp)
    where = {t: k for k, t in enumerate(trials["trial_id"].tolist())}
    # A trial's answers are stored one after another: look each run of equal trial ids up once.
    owners = np.array(joined["trial_id"], dtype=object)
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    heads = np.array([where.get(t, -1) for t in owners[starts]], dtype=np.intp)
    at = np.repeat(heads, np.diff(np.r_[starts, count]))
    texts = {"item_id": _codes(joined["item_id"]), "status": _codes(joined["status"])}
    sparse = {name: np.full(count, None, dtype=object) for name in ("reason", "distribution", "text")}
    numbers = {name: np.full(count, np.nan) for name in ("expected", "option_mass")}
    if extras:
        order = np.argsort(rowid, kind="stable")
        cursor = db.execute(ANSWER_EXTRAS)
        while chunk := cursor.fetchmany(_CHUNK):
            found = list(zip(*chunk))
            place = order[np.searchsorted(rowid[order], np.array(found[0], dtype=np.int64))]
            for name, column in zip(("reason", "distribution", "text"), found[1:4]):
                sparse[name][place] = column
            for name, column in zip(("expected", "option_mass"), found[4:6]):
                numbers[name][place] = np.array(column, dtype=float)
            real = np.array([isinstance(v, float) for v in found[6]])
            columns["value"][place[real]] = np.array(found[6], dtype=object)[real].astype(float)
    keep = at >= 0
    at, rowid = at[keep], rowid[keep]
    # The table's order: the trials' sort keys ranked (ties share a rank), then position and storage.
    keys = [trials[c] for c in ("backend_id",) + (("condition",) if "condition" in trials.columns else ()) + (
        "repeat", "respondent_id") + (
        ("situation_id", "stage") if "stage" in trials.columns else ()) + ("instrument",)]
    rank = _dense_rank(keys)
    order = np.lexsort((rowid, columns["position"][keep], rank[at]))
    out = {name: pd.Series(values[keep][order]) for name, values in columns.items()}
    out.update({name: uniques.take(codes[keep][order]).reset_index(drop=True) for name, (codes, uniques) in texts.items()})
    nulls = np.full(len(order), None, dtype=object)           # a column of NULLs only (most runs: reasons …)
    out.update({name: _as_read(values[keep][order]) if extras else pd.Series(nulls) for name, values in sparse.items()})
    for name, values in numbers.items():
        kept = values[keep][order] if extras else values[:0]
        # SQLite stores NaN as NULL: all NaN is all NULL, which pandas' reader leaves as None
        out[name] = (pd.Series(kept) if len(kept) and not np.isnan(kept).all() else pd.Series(nulls))
    return out, at[order]


def _answer_columns(db) -> tuple[int, np.ndarray, dict[str, np.ndarray], dict[str, list[str]], int]:
    """The answers' count, rowids, whole-number columns (position, disclaimer, value: NaN where not
    a whole number), text columns never NULL (trial_id, item_id, status) and how many values are
    left for :data:`ANSWER_EXTRAS`, in rowid order, read by :data:`ANSWER_COLUMNS` a window at a time."""
    low, high = db.execute("SELECT min(rowid), max(rowid) FROM answers").fetchone()
    parts: list[tuple] = []
    for start in range(low or 0, (high or -1) + 1, ANSWER_WINDOW):
        window = (start, start + ANSWER_WINDOW)
        count, rowids, positions, disclaimers, values, trial_ids, items, statuses, extras = \
            db.execute(ANSWER_COLUMNS, window).fetchone()
        if count:
            parts.append((count, np.fromstring(rowids, sep=",", dtype=np.int64),
                          np.fromstring(positions, sep=",", dtype=np.int64),
                          np.fromstring(disclaimers, sep=",", dtype=np.int64),
                          np.fromstring(values, sep=",", dtype=float),
                          *(_texts(db, column, text, count, window) for column, text in
                            (("trial_id", trial_ids), ("item_id", items), ("status", statuses))), extras))
    if not parts:
        return 0, np.array([], dtype=np.int64), {}, {}, 0
    columns = {name: np.concatenate([part[k] for part in parts])
               for k, name in ((2, "position"), (3, "disclaimer"), (4, "value"))}
    joined = {name: [text for part in parts for text in part[k]]
              for k, name in ((5, "trial_id"), (6, "item_id"), (7, "status"))}
    return (sum(part[0] for part in parts), np.concatenate([part[1] for part in parts]), columns, joined,
            int(sum(part[8] for part in parts)))


def _texts(db, column: str, joined: str, count: int, window: tuple[int, int]) -> list[str]:
    """The `count` texts of a column never NULL in a window of rowids, from their `joined` (record
    separator between them), or read again as JSON when a text holds the separator itself."""
    texts = joined.split("\x1e")
    if len(texts) != count:
        texts = json.loads(db.execute(ANSWER_TEXTS.format(column=column), window).fetchone()[0])
    return texts


def _codes(texts: list[str]) -> tuple[np.ndarray, pd.Series]:
    """Each text's code and the distinct texts (as pandas reads texts: ``str``)."""
    codes, uniques = pd.factorize(np.array(texts, dtype=object))        # in order of first appearance
    return codes, pd.Series(list(uniques))


def _dense_rank(keys: list[pd.Series]) -> np.ndarray:
    """Each row's rank under the lexicographic order of `keys` (NULL first), equal rows equal ranks."""
    codes = []
    for key in keys:
        code, _ = pd.factorize(key, sort=True, use_na_sentinel=True)    # NULL: −1, before every value
        codes.append(code)
    if not codes or not len(codes[0]):
        return np.zeros(len(codes[0]) if codes else 0, dtype=np.intp)
    order = np.lexsort(codes[::-1])
    stacked = np.column_stack(codes)[order]
    new = np.r_[True, np.any(stacked[1:] != stacked[:-1], axis=1)]
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.cumsum(new) - 1
    return rank


def _as_read(values: np.ndarray) -> pd.Series:
    """An object column as pandas' SQL reader types it: numbers (a stage) as numbers, text as ``str``
    with NaN for NULL, and a column of NULLs only as object (None)."""
    present = next((v for v in values if v is not None), None)
    if present is None:
        return pd.Series(values, dtype=object)
    if isinstance(present, (int, float)):
        return pd.Series(np.array([np.nan if v is None else v for v in values], dtype=float))
    return pd.Series(values)


def _attributes(respondents: pd.Series, people: dict[str, str | None]) -> pd.DataFrame:
    """The persona attributes of each row's respondent (their JSON read once per respondent), typed by
    ``convert_dtypes`` as one column per attribute; columns in the order the attributes first appear."""
    codes, uniques = pd.factorize(respondents)         # numbered in order of first appearance
    records = [json.loads(people[str(r)]) if people.get(str(r)) else {} for r in uniques]
    per_respondent = pd.DataFrame(records).convert_dtypes()  # ages stay whole numbers though the baseline has none
    if per_respondent.columns.empty:
        return pd.DataFrame(index=range(len(codes)))
    return per_respondent.take(codes).reset_index(drop=True)


def _keyed(table: pd.DataFrame, instruments: dict[str, Instrument]) -> np.ndarray:
    keyed = table["value"].to_numpy(dtype=float).copy()
    for inst_id, instrument in instruments.items():
        reversed_items = {i.id for i in instrument.rating_items if i.reverse}
        rows = (table["instrument"] == inst_id) & table["item_id"].isin(reversed_items)
        if not reversed_items:
            continue
        keyed[rows.to_numpy()] = reverse_key(keyed[rows.to_numpy()], instrument.scale_min, instrument.scale_max)
    return keyed
