"""From a run's tidy answers to subscale scores per respondent: the table every analysis reads.

Example (`run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml, 4 personas):
    >>> from psyq import export_table, open_run
    >>> table = export_table(run_dir)
    >>> scores = score_answers(table, open_run(run_dir).instruments)
    >>> scores.loc[scores["respondent_id"] == "p03", ["subscale", "score", "n_answered", "prorated"]]
       subscale      score  n_answered  prorated
    9         X   8.000000           2     False
    10        Y   4.500000           2      True
    11        Z  18.666667           3      True
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from psyq.analysis.scoring.human_answers import read_answers_csv
from psyq.engine.design.instrument import Instrument
from psyq.engine.kinds import all_kinds, get_kind
from psyq.engine.results.run import Run

RESPONDENT_KEYS = ["backend_id", "model", "respondent_id", "repeat"]
SCORE_VALUES = ["instrument", "subscale", "score", "n_answered", "n_items", "prorated"]
HUMAN_BACKEND = "human"
ANSWER_COLUMNS = {"run_id", "study", "backend_id", "model", "respondent_id", "instrument", "item_id",
                  "position", "repeat", "option_order", "status", "reason", "disclaimer", "raw_text",
                  "value", "keyed_value", "expected", "option_mass", "distribution", "text", "trial_status",
                  "attempts", "reasks", "stage", "situation_id"}   # the last two: runs with stages (engine/administer/plan.py)


def persona_columns(table: pd.DataFrame) -> list[str]:
    """The persona attribute columns of an exported answers table."""
    return [c for c in table.columns if c not in ANSWER_COLUMNS]


def score_answers(table: pd.DataFrame, instruments: dict[str, Instrument]) -> pd.DataFrame:
    """Subscale scores, one row per backend × respondent × repeat × instrument × subscale.

    Columns: ``backend_id, model, respondent_id, repeat``, the persona attributes,
    ``instrument, subscale, score, n_answered, n_items, prorated`` (see
    :func:`psyq.engine.trials.scoring.score`). Scores follow each instrument's own
    rules (reverse keying, prorating, `min_answered`); missing answers stay missing. Only items
    answered on the instrument's scale are scored here; :func:`score_all_kinds` scores every kind.
    """
    return with_people(get_kind("rating").score(table, instruments), table)


def score_all_kinds(table: pd.DataFrame, instruments: Mapping[str, Instrument]) -> pd.DataFrame:
    """Every subscale score of an exported answers table, in the format of :func:`score_answers`:
    each registered item kind scores its own items (:meth:`psyq.engine.kinds.ItemKind.score`), in
    registration order.

    Example (`run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml, rating items only):
        >>> from psyq.engine.results.export import export_table
        >>> from psyq.engine.results.run import open_run
        >>> table = export_table(run_dir)
        >>> instruments = open_run(run_dir).instruments
        >>> score_all_kinds(table, instruments).equals(score_answers(table, instruments))
        True
    """
    frames = [with_people(scores, table) for kind in all_kinds()
              if (scores := kind.score(table, instruments)) is not None]
    return pd.concat([f for f in frames if not f.empty] or frames[:1], ignore_index=True)


def with_people(scores: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """A kind's scores (:data:`psyq.engine.kinds.base.SCORE_COLUMNS`, ``model`` optional) with ``model``
    and the persona attributes of each respondent from `table`, in the columns of :func:`score_answers`."""
    attributes = persona_columns(table)
    columns = RESPONDENT_KEYS + attributes + SCORE_VALUES
    if scores.empty:
        return pd.DataFrame(columns=columns)
    people = table[RESPONDENT_KEYS + attributes].drop_duplicates(RESPONDENT_KEYS)
    keys = [k for k in RESPONDENT_KEYS if k in scores.columns]
    return scores.merge(people, on=keys, how="left")[columns]


def load_run_scores(run: Run | str | Path) -> pd.DataFrame:
    """Every subscale score of a run (every kind of item that has scores), long format: `run`
    opened by :func:`psyq.open_run`, or its path, opened once here.

    The columns are those of :func:`score_answers`; one row per backend × respondent × repeat ×
    instrument × subscale.

    Example (`run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml, 4 personas):
        >>> scores = load_run_scores(run_dir)
        >>> scores.groupby("subscale")["n_items"].first().to_dict()
        {'X': 2, 'Y': 3, 'Z': 4}
    """
    from psyq.engine.results.run import as_run

    run = as_run(run)
    return score_all_kinds(run.answers(), run.instruments)


def human_scores(answers: pd.DataFrame, instrument: Instrument) -> pd.DataFrame:
    """Human respondents' subscale scores in the long format of :func:`score_answers`.

    `answers` holds raw answers indexed by respondent id, one column per item id; every other
    column is an attribute (as :func:`psyq.analysis.scoring.human_answers.read_answers_csv` returns them).
    ``backend_id`` is ``"human"``, ``model`` is empty and ``repeat`` is 0 (runs count repeats
    from 0), so the result goes through :func:`psyq.analysis.statistics.norms.compare_with_norms` (group matching included) like a cohort.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> mini = load_instrument("tests/data/mini_1to7.yaml")
        >>> answers = pd.DataFrame({"a": [2.0], "b": [5.0], "c": [7.0], "d": [4.0], "gender": ["female"]},
        ...                        index=pd.Index(["r1"], name="respondent_id"))
        >>> human_scores(answers, mini)[["respondent_id", "gender", "subscale", "score", "prorated"]]
          respondent_id  gender subscale      score  prorated
        0            r1  female        X  11.000000     False
        1            r1  female        Y   3.333333     False
        2            r1  female        Z  16.000000     False
    """
    from psyq.engine.trials.scoring import score as score_long

    item_ids = {i.id for i in instrument.items}
    attributes = [c for c in answers.columns if c not in item_ids]
    ids = pd.Index(answers.index.astype(str), name="respondent_id")
    tidy = score_long(instrument, answers.set_axis(ids))
    people = answers[attributes].set_axis(ids).reset_index()
    tidy = tidy.merge(people, on="respondent_id", how="left")
    tidy["backend_id"], tidy["model"], tidy["repeat"], tidy["instrument"] = HUMAN_BACKEND, "", 0, instrument.id
    return tidy[RESPONDENT_KEYS + attributes + SCORE_VALUES]


def score_humans(csv: str | Path, instrument: Instrument, keyed: bool | None = None,
                 codebook: str | Path | None = None) -> pd.DataFrame:
    """Read human answers from a CSV and score them (:func:`human_scores`).

    `keyed=True` declares that the file's reverse-keyed items are already reversed, `codebook`
    names a codebook of the file (else one beside it is used; see
    :func:`psyq.analysis.scoring.human_answers.read_answers_csv`). Bad cells raise
    :class:`psyq.engine.files.errors.InputError` with file, line and column.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> scores = score_humans("tests/data/mini_answers.csv", load_instrument("tests/data/mini_1to7.yaml"))
        >>> scores.loc[scores["subscale"] == "Z", ["respondent_id", "score", "n_answered", "prorated"]]
          respondent_id      score  n_answered  prorated
        2            r1  16.000000           4     False
        5            r2        NaN           2     False
        8            r4  18.666667           3      True
    """
    return human_scores(read_answers_csv(csv, instrument, keyed=keyed, codebook=codebook), instrument)
