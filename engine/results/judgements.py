"""A run's judgements: the levels a judge model gave to its free-text answers (stored by
:mod:`psyq.engine.judging.answer_judge`), read without the judging machinery (no backend, no HTTP
client: the report reads them).

Example (`run_dir`: a run no judge has read):
    >>> list(read_judgements(run_dir).columns)[:4], len(read_judgements(run_dir))
    (['backend_id', 'respondent_id', 'repeat', 'instrument'], 0)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd

from psyq.engine.store.run_dir import open_run_dir

JUDGEMENTS_QUERY = """
SELECT t.backend_id, t.respondent_id, t.repeat, t.instrument_id AS instrument, j.item_id, j.rubric_id,
       j.rubric_version, j.judge_id, j.model AS judge_model, j.answer_mode, j.level, j.status
FROM judgements j JOIN trials t USING (trial_id)
ORDER BY t.backend_id, t.repeat, t.respondent_id, j.item_id
"""


def read_judgements(run_path: str | Path) -> pd.DataFrame:
    """A run's judgements, one row per judged answer (empty when the run was never judged).

    Columns: ``backend_id, respondent_id, repeat, instrument, item_id, rubric_id, rubric_version,
    judge_id, judge_model, answer_mode, level, status``.
    """
    run = open_run_dir(run_path)
    with sqlite3.connect(f"file:{run.database}?mode=ro", uri=True) as db:
        has = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'judgements'").fetchone()
        if not has:
            return pd.DataFrame(columns=["backend_id", "respondent_id", "repeat", "instrument", "item_id",
                                         "rubric_id", "rubric_version", "judge_id", "judge_model",
                                         "answer_mode", "level", "status"])
        return pd.read_sql_query(JUDGEMENTS_QUERY, db)
