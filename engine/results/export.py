"""Export a run's answers for scripts and notebooks: one tidy long table of every item answer
(:func:`export_table`; its columns: :mod:`psyq.engine.results.answers`), and one instrument's as
respondent × item (:func:`wide_answers`).

Example (`run_dir`: 4 personas × the 4 items of tests/data/mini_1to7.yaml, one answer refused):
    >>> table = export_table(run_dir)
    >>> table.groupby("status").size().to_dict()
    {'answered': 15, 'refusal': 1}
    >>> wide_answers(table, "mini").shape
    (4, 4)
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from psyq.engine.results.run import Run, as_run


def export_table(run: Run | str | Path, *, raw_text: bool = True) -> pd.DataFrame:
    """The run's answers as a tidy long DataFrame: `run` opened by :func:`psyq.open_run`, or its
    path (a run's folder or a bundle), opened once here. The table is the run's own
    (:meth:`~psyq.engine.results.run.Run.answers`): copy it before changing it. `raw_text` False
    leaves the replies' text out.

    Example (`run_dir`: 4 personas × the 4 items of tests/data/mini_1to7.yaml, one answer refused):
        >>> "raw_text" in export_table(run_dir, raw_text=False).columns
        False
    """
    return as_run(run).answers(raw_text=raw_text)


def wide_answers(table: pd.DataFrame, instrument_id: str) -> pd.DataFrame:
    """Raw values of one instrument as respondent(+backend, repeat) × item, ready for scoring."""
    rows = table[table["instrument"] == instrument_id]
    return rows.pivot_table(index=["backend_id", "respondent_id", "repeat"], columns="item_id",
                            values="value", aggfunc="first", dropna=False)
