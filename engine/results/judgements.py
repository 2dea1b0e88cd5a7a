"""A run's judgements: the levels a judge model gave to its free-text answers (stored by
:mod:`psyq.engine.judging.answer_judge`), read without the judging machinery (no backend, no HTTP
client: the report reads them).

Example (`run_dir`: a run no judge has read):
    >>> from psyq.engine.results.run import open_run
    >>> table = open_run(run_dir).judgements
    >>> list(table.columns)[:4], len(table)
    (['backend_id', 'respondent_id', 'repeat', 'instrument'], 0)
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pandas as pd

from psyq.engine.store.readonly import connect_readonly

JUDGEMENT_COLUMNS = ["backend_id", "respondent_id", "repeat", "instrument", "item_id", "rubric_id", "rubric_version",
                     "judge_id", "judge_model", "answer_mode", "level", "status"]

JUDGEMENTS_QUERY = """
SELECT t.backend_id, t.respondent_id, t.repeat, t.instrument_id AS instrument, j.item_id, j.rubric_id,
       j.rubric_version, j.judge_id, j.model AS judge_model, j.answer_mode, j.level, j.status
FROM judgements j JOIN trials t USING (trial_id)
ORDER BY t.backend_id, t.repeat, t.respondent_id, j.item_id
"""


def judgement_table(database: Path) -> pd.DataFrame:
    """The judgements in a run's store, one row per judged answer (empty when the run was never
    judged): what :attr:`psyq.engine.results.run.Run.judgements` gives.

    Columns: ``backend_id, respondent_id, repeat, instrument, item_id, rubric_id, rubric_version,
    judge_id, judge_model, answer_mode, level, status``.
    """
    with closing(connect_readonly(database)) as db:
        has = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'judgements'").fetchone()
        if not has:
            return pd.DataFrame(columns=JUDGEMENT_COLUMNS)
        return pd.read_sql_query(JUDGEMENTS_QUERY, db)
