"""A rating sheet of free-text answers for people to score on a one-level rubric (`rubric/1`, e.g.
``leas_level``), and the filled-in sheet read back as judgements.

``psyq rating-sheet RUN OUT.xlsx --rubric leas_level [--flagged] [--seed N]`` writes one row per
answer the rubric applies to (:meth:`~psyq.engine.kinds.ItemKind.judge_tasks`), or with
``--flagged`` only the answers whose automatic score a fragile rule decided
(:meth:`~psyq.engine.kinds.ItemKind.answer_flags`: for LEAS answers, the lexicon's negation, irony,
other-sense, whose-feeling, taken-back, near-synonym and misspelling rules), in an order shuffled
with the seed. Its columns are ``rater_id`` (to fill in), ``response_id`` (an opaque id of the
answer), ``message`` (what the answer answers, as the rubric's prompt gives it: for a LEAS answer
the situation and the question), ``reply`` (the answer) and ``level`` (to fill in: one of the
rubric's levels). Nothing says where an answer came from, what the lexicon gave it or which rule
flagged it. It is the same workbook of text cells as the sheet of rated replies
(:mod:`.rating_sheet`: why a workbook and not a CSV).

The filled-in sheet (or the same columns in a CSV) is read back by ``psyq import ratings SHEET --run
RUN --rubric leas_level`` (:func:`read_answer_levels`, :func:`store_answer_levels`): each level is a
row of table ``judgements``, beside the judge models' levels, with judge id ``people:<rater_id>``
and answer mode ``people``; a level left empty is stored as ``missing``. The report's agreement of
judges with the lexicon then shows each rater's agreement.

Example:
    >>> from psyq.engine.kinds import JudgeTask
    >>> task = JudgeTask("t1", "s01:self", {"situation": "A friend forgets you.", "question": "How would you feel?",
    ...                                      "answer": "Hurt."})
    >>> row = answer_sheet_rows([task], 0)[0]
    >>> row["message"], row["reply"], row["response_id"] == answer_response_id("t1", "s01:self")
    ('Situation: A friend forgets you.\\nQuestion: How would you feel?', 'Hurt.', True)
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Sequence

import pandas as pd

from psyq.engine.files.atomic import write_bytes_atomic
from psyq.engine.files.csvfile import read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.kinds import JudgeTask
from psyq.engine.store.ratings import response_id_of
from psyq.engine.judging.answer_judge import (ANSWERS_QUERY, Judgement, Rubric, judge_tasks, open_judgements,
                                              put_judgement)
from psyq.engine.judging.rating_sheet import (MAX_CELL_CHARS, SheetTable, cell_text, check_sheet_path,
                                              read_rating_workbook, workbook_bytes)

COLUMNS = ["rater_id", "response_id", "message", "reply", "level"]
PEOPLE = "people"        # the answer mode of a person's level; judge ids are "people:<rater_id>"
_LINE_END = re.compile(r"\r\n?")


def answer_response_id(trial_id: str, item_id: str) -> str:
    """The opaque id a rater sees for the answer (trial_id, item_id).

    Example:
        >>> answer_response_id("t1", "s01:self")[0], len(answer_response_id("t1", "s01:self"))
        ('r', 13)
    """
    return response_id_of(f"answer/{trial_id}/{item_id}")


def answer_sheet_rows(tasks: Sequence[JudgeTask], seed: int) -> list[dict[str, str]]:
    """The sheet's rows of `tasks`, shuffled with `seed` (sorted by response_id first)."""
    rows = [{"rater_id": "", "response_id": answer_response_id(t.trial_id, t.item_id),
             "message": "\n".join(f"{key.capitalize()}: {value}" for key, value in t.fields.items() if key != "answer"),
             "reply": t.fields["answer"], "level": ""} for t in tasks]
    rows.sort(key=lambda r: r["response_id"])
    random.Random(seed).shuffle(rows)
    return rows


def run_tasks(run, rubric: Rubric, flagged: bool) -> list[JudgeTask]:
    """The answers of `run` (a :class:`~psyq.engine.results.run.Run`) the rubric applies to; with
    `flagged`, only those whose automatic score a fragile rule decided."""
    from psyq.engine.kinds import get_kind
    from psyq.engine.store.readonly import connect_readonly

    db = connect_readonly(run.database)
    try:
        answers = pd.read_sql_query(ANSWERS_QUERY, db)
    finally:
        db.close()
    tasks = judge_tasks(rubric, answers, run.instruments)
    if flagged:
        flags = get_kind(rubric.spec.applies_to).answer_flags(answers, run.instruments)
        tasks = [t for t in tasks if (t.trial_id, t.item_id) in flags]
    return tasks


def write_answer_sheet(run_path: str | Path, out: str | Path, rubric: Rubric, seed: int = 0,
                       flagged: bool = False) -> int:
    """Write the blind sheet of a run's answers (only the flagged ones with `flagged`) as an .xlsx
    of text cells; returns its rows."""
    from psyq.engine.results.run import open_run

    check_sheet_path(out)
    rows = answer_sheet_rows(run_tasks(open_run(run_path), rubric, flagged), seed)
    too_long = [r["response_id"] for r in rows if len(cell_text(r["reply"])) > MAX_CELL_CHARS]
    if too_long:
        raise InputError.single(out, f"{len(too_long)} answer(s) longer than a spreadsheet cell holds "
                                     f"({MAX_CELL_CHARS:,} characters): {', '.join(too_long[:5])}")
    write_bytes_atomic(out, workbook_bytes(COLUMNS, [[r[c] for c in COLUMNS] for r in rows]))
    return len(rows)


def read_answer_levels(path: str | Path, rubric: Rubric, tasks: Sequence[JudgeTask]) -> list[tuple[str, Judgement]]:
    """People's levels in a filled-in answer sheet (.xlsx) or a CSV of its columns, as (rater_id,
    judgement) pairs:
    every ``response_id`` one of `tasks` (the run's answers the rubric applies to), every level one
    of the rubric's, each ``reply`` still the stored answer (up to line ends; in a CSV up to
    surrounding spaces), no rater scoring an answer twice. Every problem is listed, then nothing is
    read (``file:line:column`` or the cell's address)."""
    table = read_rating_workbook(path, ("rater_id", "response_id", "level")) if str(path).lower().endswith(".xlsx") \
        else read_csv_table(path, required=("rater_id", "response_id", "level"))
    by_id = {answer_response_id(t.trial_id, t.item_id): t for t in tasks}
    levels = sorted(rubric.spec.levels)
    exact = isinstance(table, SheetTable)
    problems: list[Problem] = []
    out: list[tuple[str, Judgement]] = []
    seen: dict[tuple[str, str], int] = {}
    for k, values in enumerate(table.rows):
        cell = dict(zip(table.header, values))
        rater, rid, level = cell["rater_id"], cell["response_id"], cell["level"].strip()

        def problem(column: str, message: str) -> None:
            if exact:
                problems.append(Problem(table.address(k, column), None, None, column, message))
            else:
                problems.append(Problem(table.file, table.lines[k], table.header.index(column) + 1, column, message))
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", rater):
            problem("rater_id", "is empty" if not rater else f"{rater!r} is not an id (letters, digits, '_', '.', '-')")
        task = by_id.get(rid)
        if task is None:
            problem("response_id", f"'{rid}' is not an answer of this run that {rubric.spec.id} scores" if rid
                    else "is empty")
            continue
        if "reply" in cell and not _same_text(cell["reply"], task.fields["answer"], exact):
            problem("reply", f"is not the answer psyq stored for '{rid}': a level belongs to the text that was "
                             "scored; put the answer back as it was, or score it again on a new sheet")
        if (rater, rid) in seen:
            problem("level", f"{rater} scored {rid} before, on line {seen[(rater, rid)]}")
            continue
        seen[(rater, rid)] = table.lines[k]
        if not level:
            out.append((rater, Judgement(task, None, "missing", "left empty in the sheet", None, {}, None, 0)))
        elif not re.fullmatch(r"-?\d+(?:\.0+)?", level) or int(float(level)) not in levels:
            problem("level", f"{level} must be one of the levels {', '.join(map(str, levels))} of {rubric.spec.id}")
        else:
            out.append((rater, Judgement(task, int(float(level)), "answered", None, None, {}, level, 0)))
    if problems:
        raise InputError(problems)
    return out


def _same_text(cell: str, stored: str, exact: bool) -> bool:
    cell, stored = _LINE_END.sub("\n", cell), _LINE_END.sub("\n", stored)
    return cell == stored if exact else cell.strip() == stored.strip()


def store_answer_levels(run_path: str | Path, path: str | Path, rubric: Rubric) -> tuple[int, list[str], int]:
    """Read a filled-in answer sheet against the run's answers and store each level as a judgement
    (judge id ``people:<rater_id>``); returns (levels stored, raters, left empty)."""
    from psyq.engine.results.run import open_run
    from psyq.engine.store.runlock import RunLock
    from psyq.engine.store.run_store import RunStore

    run = open_run(run_path, write=True)
    levels = read_answer_levels(path, rubric, run_tasks(run, rubric, flagged=False))
    with RunLock(run.path), RunStore(run.database) as store:
        open_judgements(store)
        for rater, judgement in levels:
            put_judgement(store, rubric, f"{PEOPLE}:{rater}", None, PEOPLE, judgement)
    return len(levels), sorted({rater for rater, _ in levels}), sum(j.level is None for _, j in levels)
