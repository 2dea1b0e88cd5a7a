"""Importing into a run what people wrote and rated: human reference replies and human ratings.

Unlike the other importers (which turn a file into YAML), these write into a finished run's
store (:mod:`psyq.engine.store.ratings`), under the run's lock:

- ``psyq import replies FILE.csv --run RUN``: reference replies (e.g. written by clinicians) to
  the run's response items, each a rating target (``RatingTarget.reference``) that ``psyq judge``
  rates blind beside the persona replies. Columns: ``reply_id``, ``item_id``, ``text``, optional
  ``instrument`` (needed only when two response instruments share an item id), ``source`` and
  ``author`` (kept in the target's detail, never shown to a judge).
- ``psyq import ratings FILE --run RUN --rubric ID``: people's ratings of targets, long
  (columns ``rater_id``, ``response_id``, ``dimension``, ``score``) or as the filled-in rating
  sheet of ``psyq rating-sheet`` (``rater_id``, ``response_id`` and one column per dimension),
  in a CSV or in the sheet's own .xlsx (:func:`psyq.engine.judging.rating_sheet.read_rating_workbook`).
  Each score must be a level of its dimension; an empty score is stored as ``missing`` (level
  NULL), never guessed. Where the file has the sheet's ``reply`` column, each reply must still be
  the text psyq stored for its ``response_id`` (exactly in a workbook but for line ends; up to
  surrounding spaces in a CSV, whose cells are stripped): a rating belongs to the text that was
  rated. The ratings are stored by ``response_id``, so they join the stored text, never the sheet's.

Every problem of a file is reported as ``file:line:column: field: what`` (in a workbook the
cell's address: ``sheet.xlsx:ratings!C7: field: what``; exit 2) and then nothing at all is written.

Example:
    >>> ReferenceRepliesImporter().produces, HumanRatingsImporter().name
    ('run', 'ratings')
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from psyq.engine.files.csvfile import CsvTable, read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.design.instrument import Instrument
from psyq.engine.kinds.response import response_items
from psyq.engine.store.ratings import Rating, RatingTarget, put_ratings, put_targets, read_targets
from psyq.engine.kinds.response.rubrics import MultiRubric
from psyq.engine.importers.base import Importer
from psyq.engine.importers.draft import is_id
from psyq.engine.importers.emotionbench import Converted
from psyq.engine.judging.rating_sheet import SheetTable, read_rating_workbook

REPLY_COLUMNS = ("reply_id", "item_id", "text")
REPLY_OPTIONAL = ("instrument", "source", "author")
RATING_COLUMNS = ("rater_id", "response_id", "dimension", "score")
_LINE_END = re.compile(r"\r\n?")


def _where(table: CsvTable, row: int, column: str) -> tuple[str, int, int]:
    """(file, line, column number) of a cell, for a Problem."""
    return table.file, table.lines[row], table.header.index(column) + 1


def _cell_problem(table: CsvTable, row: int, column: str, message: str) -> Problem:
    if isinstance(table, SheetTable):
        return Problem(table.address(row, column), None, None, column, message)
    file, line, col = _where(table, row, column)
    return Problem(file, line, col, column, message)


def _header_problem(table: CsvTable, message: str) -> InputError:
    """An error of the header row: line 1 of a CSV, row 1 of a sheet."""
    if isinstance(table, SheetTable):
        return InputError.single(table.address(None), message)
    return InputError.single(table.file, message, line=1)


def read_ratings_table(path: str | Path, required: tuple[str, ...]) -> CsvTable:
    """A ratings file as a table: the rating sheet's .xlsx, else a CSV."""
    suffix = Path(path).suffix.lower()
    if suffix == ".xlsx":
        return read_rating_workbook(path, required)
    if suffix in (".xls", ".ods", ".xlsm", ".numbers"):
        raise InputError.single(path, f"psyq reads a ratings sheet as .xlsx or CSV, not {suffix}; save it as "
                                      "Excel workbook (.xlsx)")
    return read_csv_table(path, required=required)


def read_reference_replies(path: str | Path, instruments: Mapping[str, Instrument],
                           stored: Mapping[str, str] | None = None) -> list[RatingTarget]:
    """The reference replies of a CSV as rating targets, checked against the run's response items
    (`instruments`) and the reference replies `stored` already (reply_id -> text): a reply id
    imported before must come with the same text (a text once rated is never changed).

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> inst = load_instrument("help_messages_psyq")
        >>> [t.reply_id for t in read_reference_replies("tests/fixtures/response/reference_replies.csv",
        ...                                               {"help_messages_psyq": inst})][:1]
        ['clin_01']
    """
    table = read_csv_table(path, required=REPLY_COLUMNS)
    items: dict[str, list[str]] = {}
    for inst_id, inst in instruments.items():
        for item in response_items(inst):
            items.setdefault(item.id, []).append(inst_id)
    if not items:
        raise InputError.single(path, "the run has no response items (kind: response) to reply to")
    stored = stored or {}
    has = {c: c in table.header for c in REPLY_OPTIONAL}
    problems: list[Problem] = []
    targets: list[RatingTarget] = []
    seen: dict[str, int] = {}
    for k, row in enumerate(table.rows):
        cell = dict(zip(table.header, row))
        reply_id, item_id, text = cell["reply_id"], cell["item_id"], cell["text"]
        bad = len(problems)
        if not is_id(reply_id):
            problems.append(_cell_problem(table, k, "reply_id", f"{reply_id!r} is not an id (letters, digits, "
                                                                "'_', '.', '-')" if reply_id else "is empty"))
        elif reply_id in seen:
            problems.append(_cell_problem(table, k, "reply_id", f"'{reply_id}' is given twice (first on line "
                                                                f"{seen[reply_id]})"))
        else:
            seen[reply_id] = table.lines[k]
        if not text.strip():
            problems.append(_cell_problem(table, k, "text", "is empty; a reference reply needs its text"))
        elif reply_id in stored and stored[reply_id] != text:
            problems.append(_cell_problem(table, k, "text", f"reply '{reply_id}' was imported before with another "
                                                            "text; a text once rated is kept: give the new text "
                                                            "a new reply_id"))
        owners = items.get(item_id, [])
        instrument = cell.get("instrument", "") if has["instrument"] else ""
        if instrument:
            if instrument not in owners:
                problems.append(_cell_problem(table, k, "instrument", f"'{instrument}' has no response item "
                                                                      f"'{item_id}' in this run"))
        elif not owners:
            problems.append(_cell_problem(table, k, "item_id", f"'{item_id}' is not a response item of this run "
                                                               f"(items: {', '.join(sorted(items))})"))
        elif len(owners) > 1:
            problems.append(_cell_problem(table, k, "item_id", f"'{item_id}' is an item of {', '.join(owners)}; "
                                                               "add an `instrument` column to say which"))
        else:
            instrument = owners[0]
        if len(problems) == bad:
            detail = {c: cell[c] for c in ("source", "author") if has[c] and cell[c]}
            targets.append(RatingTarget.reference(reply_id, item_id=item_id, instrument=instrument, text=text,
                                                  detail=detail))
    if problems:
        raise InputError(problems)
    return targets


def _levels_message(levels: list[int]) -> str:
    return f"must be one of the levels {', '.join(map(str, levels))}"


def read_human_ratings(path: str | Path, rubric: MultiRubric, known: set[str] | Mapping[str, str]) -> list[Rating]:
    """People's ratings in a CSV or the sheet's .xlsx (long, or the filled-in rating sheet: see the
    module doc) as ``ratings`` rows, every score checked against its dimension's levels and every
    response_id against the run's targets (`known`: their ids, or id -> stored text, which a
    ``reply`` column is then checked against).

    Example (two made-up raters' scores of three reference replies, tests/fixtures/response):
        >>> from psyq.engine.kinds.response.rubrics import load_multi_rubric
        >>> from psyq.engine.store.ratings import response_id_of
        >>> r = load_multi_rubric("empathy_ceb")
        >>> ids = {response_id_of(f"reference/clin_0{k}") for k in (1, 2, 3)}
        >>> ratings = read_human_ratings("tests/fixtures/response/human_ratings.csv", r, ids)
        >>> len(ratings), ratings[0].rater_kind, ratings[0].rater_id, ratings[0].dimension, ratings[0].level
        (15, 'human', 'h1', 'cognitive', 3.0)
    """
    dims = rubric.dimension_ids
    table = read_ratings_table(path, required=("rater_id", "response_id"))
    long = "dimension" in table.header or "score" in table.header
    if long:
        missing = [c for c in RATING_COLUMNS if c not in table.header]
        if missing:
            raise _header_problem(table, f"missing column(s) {', '.join(missing)}; a ratings file has columns "
                                         f"{', '.join(RATING_COLUMNS)} (or rater_id, response_id and one column per "
                                         f"dimension: {', '.join(dims)})")
    else:
        absent = [d for d in dims if d not in table.header]
        if absent:
            raise _header_problem(table, f"no column dimension/score, and no column for dimension(s) "
                                         f"{', '.join(absent)}; give columns {', '.join(RATING_COLUMNS)} or rater_id, "
                                         f"response_id, {', '.join(dims)}")
    texts = known if isinstance(known, Mapping) and "reply" in table.header else {}
    exact = isinstance(table, SheetTable)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    problems: list[Problem] = []
    out: list[Rating] = []
    seen: dict[tuple[str, str, str], int] = {}
    for k, row in enumerate(table.rows):
        cell = dict(zip(table.header, row))
        rater, rid = cell["rater_id"], cell["response_id"]
        if not is_id(rater):
            problems.append(_cell_problem(table, k, "rater_id", "is empty" if not rater else
                                          f"{rater!r} is not an id (letters, digits, '_', '.', '-')"))
        if rid not in known:
            problems.append(_cell_problem(table, k, "response_id", f"'{rid}' is not a rating target of this run "
                                                                   "(ids as in psyq rating-sheet)" if rid else "is empty"))
        elif rid in texts and not _same_text(cell["reply"], texts[rid], exact):
            problems.append(_cell_problem(table, k, "reply", f"is not the text psyq wrote for '{rid}': a rating "
                                                             "belongs to the text that was rated; put the reply back "
                                                             "as it was, or rate it again on a new sheet"))
        cells = [(cell["dimension"], cell["score"], "score")] if long else [(d, cell[d], d) for d in dims]
        for dim, score, column in cells:
            if dim not in dims:
                why = (f"'{dim}' is combined from other dimensions, not rated" if dim in rubric.spec.combine
                       else f"'{dim}' is not a dimension of {rubric.spec.id}")
                problems.append(_cell_problem(table, k, "dimension", f"{why} (dimensions: {', '.join(dims)})"))
                continue
            levels = sorted(rubric.dimension(dim).levels)
            key = (rater, rid, dim)
            if key in seen:
                problems.append(_cell_problem(table, k, column, f"{rater} rated {rid} on {dim} before, on line "
                                                                f"{seen[key]}"))
                continue
            seen[key] = table.lines[k]
            if not score.strip():
                level, status, reason = None, "missing", "left empty in the ratings file"
            else:
                try:
                    value = float(score)
                except ValueError:
                    problems.append(_cell_problem(table, k, column, f"{score!r} is not a number; "
                                                                    + _levels_message(levels)))
                    continue
                if not value.is_integer() or int(value) not in levels:
                    problems.append(_cell_problem(table, k, column, f"{score} " + _levels_message(levels)
                                                  + f" of {dim}"))
                    continue
                level, status, reason = float(value), "answered", None
            out.append(Rating(response_id=rid, rubric_id=rubric.spec.id, dimension=dim, rater_kind="human",
                              rater_id=rater, level=level, status=status, reason=reason, rated_at=now))
    if problems:
        raise InputError(problems)
    return out


def _same_text(cell: str, stored: str, exact: bool) -> bool:
    """Whether a sheet's reply is the stored text: exactly in a workbook, up to surrounding spaces
    in a CSV (whose cells are read stripped); in both up to line ends (CR LF, CR or LF), which
    are not what a rater edits: psyq writes a CR so that it survives, but a program that saves
    the workbook again may write it raw, and XML then reads it back as LF (openpyxl does so).

    Example:
        >>> _same_text("a\\nb", "a\\r\\nb", exact=True), _same_text(" a ", "a", exact=True)
        (True, False)
    """
    cell, stored = _LINE_END.sub("\n", cell), _LINE_END.sub("\n", stored)
    return cell == stored if exact else cell.strip() == stored.strip()


class ReferenceRepliesImporter(Importer):
    """``psyq import replies FILE.csv --run RUN``."""

    name = "replies"
    help = "human reference replies (CSV: reply_id, item_id, text[, instrument, source, author]) into a run"
    file_help = "CSV of reference replies to the run's response items"
    produces = "run"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--run", required=True, help="the run's own folder (runs/STUDY/RUN_ID): the imported rows are written into it")

    def into_run(self, path: str, options: dict[str, Any]) -> Converted:
        """Check the file, then add its replies to the run's rating targets (under the run's lock)."""
        from psyq.engine.results.run import open_run
        from psyq.engine.store.runlock import RunLock
        from psyq.engine.store.run_store import RunStore

        run = open_run(options["run"], write=True)
        instruments = run.instruments
        with RunLock(run.path), RunStore(run.database) as store:
            targets = read_targets(store)
            # The unperturbed reference replies (a perturbed copy keeps its original's reply_id).
            refs = targets[(targets["source"] == "reference") & targets["perturbation"].isna()]
            replies = read_reference_replies(path, instruments, dict(zip(refs["reply_id"], refs["text"])))
            new = put_targets(store, replies)
        return Converted("", f"{len(replies)} reference replies read, {new} new "
                             f"({len(replies) - new} imported before)", [], "")


class HumanRatingsImporter(Importer):
    """``psyq import ratings FILE.xlsx|FILE.csv --run RUN --rubric ID``."""

    name = "ratings"
    help = "people's ratings of a run's replies (the filled-in psyq rating-sheet .xlsx, or CSV) into a run"
    file_help = "the filled-in .xlsx of psyq rating-sheet, or a CSV of ratings (long: rater_id, response_id, " \
                "dimension, score)"
    produces = "run"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--run", required=True, help="the run's own folder (runs/STUDY/RUN_ID): the imported rows are written into it")
        parser.add_argument("--rubric", required=True, help="the rubric file or shipped name the ratings are on "
                                                            "(rubric/2, e.g. empathy_ceb; or rubric/1, e.g. "
                                                            "leas_level: a sheet of answers)")

    def into_run(self, path: str, options: dict[str, Any]) -> Converted:
        """Check the file against the rubric and the run's targets, then store every rating. A
        `rubric/1` rubric (``leas_level``) scores answers, not replies: its sheet
        (:mod:`psyq.engine.judging.answer_sheet`) is stored as judgements."""
        from psyq.engine.files.shipped import locate
        from psyq.engine.files.yamlfile import load_yaml
        from psyq.engine.kinds.response.rubrics import load_multi_rubric
        from psyq.engine.results.run import open_run
        from psyq.engine.store.runlock import RunLock
        from psyq.engine.store.run_store import RunStore

        rubric_path = locate(options["rubric"], "rubric")
        if rubric_path.exists() and load_yaml(rubric_path).data.get("psyq") == "rubric/1":
            from psyq.engine.judging.answer_judge import load_rubric
            from psyq.engine.judging.answer_sheet import store_answer_levels

            rubric1 = load_rubric(rubric_path)
            n, raters, empty = store_answer_levels(options["run"], path, rubric1)
            notes = [f"{empty} levels left empty: stored as missing (no level)"] if empty else []
            return Converted("", f"{n} levels on {rubric1.spec.id} by {len(raters)} rater(s) ({', '.join(raters)}) "
                                 "stored as judgements (judge ids people:<rater_id>)", notes, "")
        rubric = load_multi_rubric(options["rubric"])
        run = open_run(options["run"], write=True)
        with RunLock(run.path), RunStore(run.database) as store:
            targets = read_targets(store)
            known = dict(zip(targets["response_id"], targets["text"]))
            ratings = read_human_ratings(path, rubric, known)
            put_ratings(store, ratings)
        raters = sorted({r.rater_id for r in ratings})
        missing = sum(r.level is None for r in ratings)
        notes = [f"{missing} ratings left empty: stored as missing (no level)"] if missing else []
        return Converted("", f"{len(ratings)} ratings on {rubric.spec.id} by {len(raters)} rater(s) "
                             f"({', '.join(raters)}) stored", notes, "")
