"""The run store as a bundle holds it: a consistent copy, redacted, with no trace of what was removed.

The copy is made with SQLite's backup API from a read-only connection, never by copying the
file: a store in WAL mode keeps committed trials in ``run.sqlite-wal`` until a checkpoint, so a
file copy of a store being written (or of one whose writer was killed) misses them or is torn.
The copy is then brought to the current schema, redacted where the bundle must leave something
out (:func:`redact_texts`, :func:`replace_respondent_ids`, :func:`replace_paths`), and vacuumed
into a file of its own in rollback-journal mode: one file, no free page holding a removed text.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Mapping

from psyq.engine.store.readonly import connect_readonly
from psyq.engine.store.run_store import RunStore, store_is_current


def backup_store(source: Path, target: Path) -> None:
    """Copy the run store `source` to `target` (a new file) with SQLite's backup API.

    Example (`run_dir`: a finished run of 16 trials):
        >>> import tempfile
        >>> copy = Path(tempfile.mkdtemp()) / "copy.sqlite"
        >>> backup_store(run_dir / "run.sqlite", copy)
        >>> sqlite3.connect(copy).execute("SELECT COUNT(*) FROM trials").fetchone()
        (16,)
    """
    with closing(connect_readonly(source, timeout=30.0)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
    if not store_is_current(target):
        RunStore(target).close()   # a store written by an older psyq: the copy, never the run, is upgraded


def _text_columns(db: sqlite3.Connection) -> dict[str, list[str]]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT LIKE 'sqlite_%'")]
    out = {}
    for table in tables:
        columns = [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')
                   if (row[2] or "").upper() in ("TEXT", "")]
        if columns:
            out[table] = columns
    return out


def replace_paths(db: sqlite3.Connection, paths: tuple[tuple[str, str], ...]) -> int:
    """Replace every path of `paths` (path, placeholder) in every text column; return how many
    values changed.

    Example:
        >>> db = sqlite3.connect(":memory:")
        >>> _ = db.execute("CREATE TABLE t (a TEXT)"); _ = db.execute("INSERT INTO t VALUES ('at /home/ann/x')")
        >>> replace_paths(db, (("/home/ann", "~"),)), db.execute("SELECT a FROM t").fetchone()
        (1, ('at ~/x',))
    """
    changed = 0
    for table, columns in _text_columns(db).items():
        for column in columns:
            for path, placeholder in paths:
                changed += db.execute(f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                                      f'WHERE instr("{column}", ?) > 0', (path, placeholder, path)).rowcount
    return changed


def _placeholder(instrument: str, item: str) -> str:
    return f"[item text of {instrument} {item} left out: licensed, supplied by the user]"


def _blank_messages(request: str | None, instrument: str) -> str | None:
    """A stored request with every message's content replaced (when the item texts are unknown)."""
    if not request:
        return request
    try:
        body = json.loads(request)
    except ValueError:
        return json.dumps({"left_out": f"the request of an item of {instrument}: licensed item texts"})
    for message in body.get("messages") or []:
        if isinstance(message, dict) and "content" in message:
            message["content"] = f"[left out: a message holding licensed item texts of {instrument}]"
    if isinstance(body.get("system"), str):
        body["system"] = f"[left out: a message holding licensed item texts of {instrument}]"
    return json.dumps(body)


def redact_texts(db: sqlite3.Connection, texts: Mapping[str, Mapping[str, str] | None]) -> int:
    """Leave the licensed item texts out of every stored prompt, reply and conversation of the
    instruments of `texts` (instrument -> item id -> text; None when the texts could not be read,
    then every message of those trials is left out); return the number of trials changed.

    Example:
        >>> db = sqlite3.connect(":memory:")
        >>> _ = db.executescript("CREATE TABLE trials (trial_id TEXT, instrument_id TEXT, request TEXT, "
        ...                      "response TEXT, raw_text TEXT); CREATE TABLE answers (trial_id TEXT, item_id TEXT, text TEXT);"
        ...                      "INSERT INTO trials VALUES ('t', 'bes', '{\\"messages\\": [{\\"content\\": "
        ...                      "\\"I feel sad\\"}]}', NULL, '3')")
        >>> redact_texts(db, {"bes": {"b01": "I feel sad"}})
        1
        >>> db.execute("SELECT request FROM trials").fetchone()[0]
        '{"messages": [{"content": "[item text of bes b01 left out: licensed, supplied by the user]"}]}'
    """
    has_stages = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'stage_trials'").fetchone() is not None
    changed = 0
    for instrument, items in texts.items():
        rows = db.execute("SELECT trial_id, request, response, raw_text FROM trials WHERE instrument_id = ?",
                          (instrument,)).fetchall()
        pairs = sorted(((t, _placeholder(instrument, i)) for i, t in (items or {}).items() if t),
                       key=lambda p: -len(p[0]))
        for trial_id, request, response, raw_text in rows:
            def redacted(value: str | None, json_text: bool = False) -> str | None:
                if value is None:
                    return None
                for text, placeholder in pairs:
                    # a JSON column holds the text as JSON spells it (quotes, non-ASCII escaped)
                    value = value.replace(json.dumps(text)[1:-1] if json_text else text,
                                          json.dumps(placeholder)[1:-1] if json_text else placeholder)
                    value = value.replace(text, placeholder)
                return value

            if items is None:
                new = (_blank_messages(request, instrument), None, raw_text)
            else:
                new = (redacted(request, True), redacted(response, True), redacted(raw_text))
            db.execute("UPDATE trials SET request = ?, response = ?, raw_text = ? WHERE trial_id = ?", (*new, trial_id))
            for (answer_text, item_id) in db.execute("SELECT text, item_id FROM answers WHERE trial_id = ? AND "
                                                     "text IS NOT NULL", (trial_id,)).fetchall() if items else []:
                db.execute("UPDATE answers SET text = ? WHERE trial_id = ? AND item_id = ?",
                           (redacted(answer_text), trial_id, item_id))
            if has_stages:
                for messages, reply in db.execute("SELECT messages, reply FROM stage_trials WHERE trial_id = ?",
                                                  (trial_id,)).fetchall():
                    db.execute("UPDATE stage_trials SET messages = ?, reply = ? WHERE trial_id = ?",
                               (_blank_messages(json.dumps({"messages": json.loads(messages)}), instrument)
                                if items is None else redacted(messages, True),
                                None if items is None else redacted(reply), trial_id))
            changed += 1
    return changed


def replace_respondent_ids(db: sqlite3.Connection, ids: Mapping[str, str]) -> int:
    """Replace respondent ids by `ids` (old -> new) in every `respondent_id` column; return how
    many rows changed.

    Example:
        >>> db = sqlite3.connect(":memory:")
        >>> _ = db.execute("CREATE TABLE respondents (respondent_id TEXT)")
        >>> _ = db.execute("INSERT INTO respondents VALUES ('P0042')")
        >>> replace_respondent_ids(db, {"P0042": "twin_001"}), db.execute("SELECT * FROM respondents").fetchone()
        (1, ('twin_001',))
    """
    changed = 0
    for table, columns in _text_columns(db).items():
        if "respondent_id" not in columns:
            continue
        for old, new in ids.items():
            changed += db.execute(f'UPDATE "{table}" SET respondent_id = ? WHERE respondent_id = ?',
                                  (new, old)).rowcount
    return changed


def finish_copy(copy: Path, target: Path) -> None:
    """Vacuum `copy` into `target` in rollback-journal mode: one file, free pages (and whatever a
    redaction removed from them) gone."""
    with closing(sqlite3.connect(copy)) as db:
        db.execute("VACUUM INTO ?", (str(target),))
    with closing(sqlite3.connect(target)) as db:
        db.execute("PRAGMA journal_mode = DELETE")


def row_counts(database: Path) -> dict[str, int]:
    """Rows per table of the store at `database`, read-only.

    Example (`run_dir`: 16 trials, 4 items each):
        >>> row_counts(run_dir / "run.sqlite")["trials"]
        16
    """
    with closing(connect_readonly(database)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                           "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}


def open_for_redaction(path: Path) -> sqlite3.Connection:
    """A connection to a bundle's working copy of the store (never the run's own)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    return db


def store_facts(database: Path) -> dict[str, Any]:
    """Counts of trials and answers by status, as a manifest records them.

    Example (`run_dir`: 16 trials, one refusal among 16 answers):
        >>> store_facts(run_dir / "run.sqlite")["answer_counts"]
        {'answered': 15, 'refusal': 1}
    """
    with closing(connect_readonly(database)) as db:
        trials = dict(db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status ORDER BY status").fetchall())
        answers = dict(db.execute("SELECT status, COUNT(*) FROM answers GROUP BY status ORDER BY status").fetchall())
    return {"trial_counts": trials, "answer_counts": answers}
