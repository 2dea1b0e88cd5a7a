"""Importing a user's copy of EmotionBench's files (Huang et al., NeurIPS 2024).

EmotionBench (github.com/CUHK-ARISE/EmotionBench, GPL-3.0) publishes emotion-evoking situations
and the before/after PANAS answers of its human crowd. psyq ships none of it; these importers
read the files a user downloaded and write psyq's own formats:

- ``psyq import emotionbench-situations FILE`` reads the situations, either ``situations.json``
  (``{"emotions": [{"name", "factors": [{"name", "scenarios": [text, ...]}]}]}``) or
  ``situations/situations.csv`` (header ``Anger-0, Anger-1, ...`` = emotion and 0-based factor,
  second row the factor names, then one situation per row in each column), and writes a situation
  set (``psyq: situations/1``, ``content_source: imported``).
- ``psyq import emotionbench-humans FILE`` reads the crowd workbook (``crowd.xlsx``, sheet
  ``Raw``; or that sheet saved as CSV): one column per respondent, the situation code in the first
  row (``Angry_F1S1``: emotion, 1-based factor and situation), a label in the second column, 20
  rows of "current feeling" answers (before) and 20 rows of answers after the situation, 1-5.
  It writes the human change CSV: ``respondent_id, emotion, situation_id, subscale, before, after``.

Situation ids are ``<emotion>_f<factor>_s<situation>`` with 1-based numbers in both importers,
so that crowd rows name the situations of the imported set. That the crowd's ``S1`` is the first
situation of a factor in the situations file is how we read the layout; EmotionBench does not
state it.

Example:
    >>> from psyq.engine.importers import get_importer
    >>> get_importer("emotionbench-situations").produces
    'situations'
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from psyq.engine.files import workbook
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.inputfile import decode_text, read_input_bytes
from psyq.engine.importers.base import Importer

CITATION = ("Huang, J., Lam, M. H., Li, E. J., Ren, S., Wang, W., Jiao, W., Tu, Z., & Lyu, M. R. (2024). "
            "Apathetic or empathetic? Evaluating LLMs' emotional alignments with humans. Advances in Neural "
            "Information Processing Systems 37 (NeurIPS 2024), 97053-97087. arXiv:2308.03656. "
            "Data: https://github.com/CUHK-ARISE/EmotionBench")
TERMS = ("EmotionBench's repository is licensed GPL-3.0. This file was converted from the user's own copy "
         "and is not part of psyq; keep it with its licence and cite Huang et al. (2024).")
# The crowd workbook names two emotions differently from the situations files.
EMOTION_ALIASES = {"angry": "anger", "jealous": "jealousy"}
# PANAS keys by position 1-20 in the published order (see instruments/panas.yaml); NA is the rest.
PA_POSITIONS = frozenset({1, 3, 5, 9, 10, 12, 14, 16, 17, 19})
CODE = re.compile(r"^([A-Za-z]+)_F(\d+)S(\d+)$")
ITEM_LABEL = re.compile(r"extent of your (current )?feeling.* - ", re.IGNORECASE)
# The workbook's own sums, used as an independent check of ours.
OWN_SUMS = {"positive affect(general)": ("PA", "before"), "negative affect(general)": ("NA", "before"),
            "positive affect(after scenario)": ("PA", "after"), "negative affect(after scenario)": ("NA", "after")}
CHANGE_COLUMNS = ["respondent_id", "emotion", "situation_id", "subscale", "before", "after"]


@dataclass
class Converted:
    """What a non-instrument importer made: the file's text, what to say, and notes to list."""

    text: str
    summary: str
    notes: list[str] = field(default_factory=list)
    suffix: str = ".yaml"


def emotion_id(name: str) -> str:
    """EmotionBench's emotion name as a psyq id (lower case, other characters as '_'; the
    workbook's aliases mapped).

    Example:
        >>> emotion_id("Angry"), emotion_id("Embarrassment"), emotion_id("Social Anxiety")
        ('anger', 'embarrassment', 'social_anxiety')
    """
    low = re.sub(r"[^a-z0-9_.-]+", "_", name.strip().lower()).strip("_")
    return EMOTION_ALIASES.get(low, low)


def situation_id(emotion: str, factor: int, number: int) -> str:
    """The id of situation `number` (1-based) of `factor` (1-based) of `emotion`.

    Example:
        >>> situation_id("anger", 1, 3)
        'anger_f1_s3'
    """
    return f"{emotion}_f{factor}_s{number}"


# ---------------------------------------------------------------- situations


def read_situations(path: str) -> list[dict[str, Any]]:
    """The situations of a ``situations.json`` or ``situations.csv`` file, as situation-set entries."""
    text = decode_text(path, read_input_bytes(path))
    if path.lower().endswith(".json"):
        return _json_situations(path, text)
    return _csv_situations(path, text)


def _json_situations(path: str, text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.single(path, f"not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    emotions = data.get("emotions") if isinstance(data, dict) else None
    if not isinstance(emotions, list) or not emotions:
        raise InputError.single(path, "expected an object with a non-empty list `emotions`", field="emotions")
    out, problems = [], []
    for e, emotion in enumerate(emotions):
        where = f"emotions[{e}]"
        if not isinstance(emotion, dict) or not isinstance(emotion.get("name"), str) or not emotion_id(emotion["name"]):
            problems.append(Problem(path, None, None, f"{where}.name", "each emotion needs a name"))
            continue
        factors = emotion.get("factors")
        if not isinstance(factors, list) or not factors:
            problems.append(Problem(path, None, None, f"{where}.factors", "expected a non-empty list"))
            continue
        for f, factor in enumerate(factors, start=1):
            fwhere = f"{where}.factors[{f - 1}]"
            scenarios = factor.get("scenarios") if isinstance(factor, dict) else None
            if not isinstance(scenarios, list) or not scenarios:
                problems.append(Problem(path, None, None, f"{fwhere}.scenarios", "expected a non-empty list of texts"))
                continue
            for s, scenario in enumerate(scenarios, start=1):
                if not isinstance(scenario, str) or not scenario.strip():
                    problems.append(Problem(path, None, None, f"{fwhere}.scenarios[{s - 1}]", "expected a non-empty text"))
                    continue
                out.append(_entry(emotion["name"], f, s, str(factor.get("name") or ""), scenario,
                                  f"{Path(path).name}: {fwhere}.scenarios[{s - 1}]"))
    if problems:
        raise InputError(problems)
    return out


def _csv_rows(path: str, text: str) -> list[tuple[int, list[str]]]:
    """(line where the record starts, stripped cells) of each CSV record."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            rows.append((start, [c.strip() for c in cells]))
    except csv.Error as exc:
        raise InputError.single(path, f"not a readable CSV file: {exc}", line=reader.line_num) from None
    return rows


def _csv_situations(path: str, text: str) -> list[dict[str, Any]]:
    rows = _csv_rows(path, text)
    if len(rows) < 3:
        raise InputError.single(path, "expected a header (Emotion-0, ...), a row of factor names and at least "
                                      "one row of situations", line=1)
    (_, header), (name_line, names) = rows[0], rows[1]
    problems, columns = [], []
    for c, cell in enumerate(header, start=1):
        m = re.fullmatch(r"([A-Za-z]+)-(\d+)", cell)
        if not m:
            problems.append(Problem(path, 1, c, "header", f"{cell!r} is not Emotion-N (e.g. Anger-0)"))
        else:
            columns.append((c, m.group(1), int(m.group(2)) + 1))
    for line, cells in rows[1:]:
        if len(cells) != len(header):
            problems.append(Problem(path, line, None, "", f"the row has {len(cells)} cells but the header has {len(header)}"))
    if problems:
        raise InputError(problems)
    out = []
    for c, emotion, factor in columns:
        if not names[c - 1]:
            problems.append(Problem(path, name_line, c, "factor", f"column {header[c - 1]} has no factor name"))
            continue
        texts = [(line, cells[c - 1]) for line, cells in rows[2:] if cells[c - 1]]
        if not texts:
            problems.append(Problem(path, 3, c, "situation", f"column {header[c - 1]} has no situation"))
        for s, (line, situation) in enumerate(texts, start=1):
            out.append(_entry(emotion, factor, s, names[c - 1], situation, f"{Path(path).name}:{line}:{c}"))
    if problems:
        raise InputError(problems)
    return out


def _entry(emotion: str, factor: int, number: int, category: str, text: str, source: str) -> dict[str, Any]:
    eid = emotion_id(emotion)
    entry: dict[str, Any] = {"id": situation_id(eid, factor, number), "emotion": eid}
    if category.strip():
        entry["category"] = category.strip()
    entry.update({"text": " ".join(text.split()), "source": source})
    return entry


def situation_set_yaml(path: str, entries: list[dict[str, Any]], set_id: str) -> str:
    """A situation set (``psyq: situations/1``) holding `entries`, as YAML text.

    Example:
        >>> text = situation_set_yaml("s.json", [{"id": "anger_f1_s1", "emotion": "anger", "text": "x"}], "eb")
        >>> yaml.safe_load(text)["content_source"]
        'imported'
    """
    emotions = sorted({e["emotion"] for e in entries})
    document = {
        "psyq": "situations/1",
        "id": set_id,
        "description": (f"EmotionBench's situations ({len(entries)}; emotions: {', '.join(emotions)}), "
                        f"converted from {Path(path).name} by `psyq import emotionbench-situations`."),
        "content_source": "imported",
        "source": CITATION,
        "terms": TERMS,
        "situations": entries,
    }
    head = (f"# Imported by `psyq import emotionbench-situations` from {Path(path).name}: the user's copy of\n"
            "# EmotionBench's situations (GPL-3.0). Not part of psyq; do not commit it to psyq itself.\n")
    return head + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


class EmotionBenchSituationsImporter(Importer):
    name = "emotionbench-situations"
    produces = "situations"
    help = "EmotionBench's situations (situations.json or situations/situations.csv) -> a psyq situation set"
    file_help = "your copy of EmotionBench's situations.json or situations/situations.csv"
    out_help = "write the situation set YAML here (default: standard output)"
    id_help = "the situation set's id (default: emotionbench)"

    def convert(self, path: str, options: dict[str, Any]) -> Converted:
        """The situation set YAML of the file at `path`.

        Example:
            >>> c = EmotionBenchSituationsImporter().convert("tests/fixtures/import/eb_situations.csv", {})
            >>> c.summary.split(":")[0]
            "imported situation set 'emotionbench'"
        """
        entries = read_situations(path)
        set_id = options.get("id") or "emotionbench"
        per = {}
        for e in entries:
            per[e["emotion"]] = per.get(e["emotion"], 0) + 1
        counts = ", ".join(f"{k} {v}" for k, v in per.items())
        return Converted(situation_set_yaml(path, entries, set_id),
                         f"imported situation set '{set_id}': {len(entries)} situations ({counts})")


# ---------------------------------------------------------------- crowd workbook


# EmotionBench's crowd.xlsx is 2.1 MB unzipped and its sheet Raw spans A1:AVT54 (68,472 cells):
# the workbook limits of psyq.engine.files.workbook leave room for a re-saved copy with more sheets.
MAX_SHEET_CELLS = workbook.MAX_SHEET_CELLS
ABOUT_SIZE = "EmotionBench's crowd.xlsx is about 2 MB"
ABOUT_CELLS = "EmotionBench's sheet Raw has 68,472"


def _sheet_rows(path: str) -> list[list[Any]]:
    """The cells of the crowd sheet (``Raw``, else the first) or of its CSV export; row k is line k."""
    if path.lower().endswith((".xlsx", ".xlsm")):
        return workbook.read_sheet_rows(path, "Raw", max_cells=MAX_SHEET_CELLS, about_size=ABOUT_SIZE,
                                        about_cells=ABOUT_CELLS)[1]
    text = decode_text(path, read_input_bytes(path, max_bytes=50 * 1024 * 1024))
    return [cells for _, cells in _csv_rows(path, text)]


def _as_answer(value: Any) -> int | None:
    """A 1-5 answer from a cell (a number, or its text in a CSV export); None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)) and float(value).is_integer() and 1 <= value <= 5:
        return int(value)
    if isinstance(value, str) and value.strip() in {"1", "2", "3", "4", "5"}:
        return int(value.strip())
    return None


def read_crowd(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Human change rows (one per respondent and subscale) from the crowd sheet, and notes.

    Each respondent's PA and NA are the sums of the items at the PANAS positions (1-20 in the
    published order) in the before block and in the after block; where the sheet holds its own
    sums, every disagreement with ours is listed in the notes.
    """
    rows = _sheet_rows(path)
    if len(rows) < 2 or len(rows[0]) < 3:
        raise InputError.single(path, "expected the crowd sheet: situation codes in row 1 from column C, "
                                      "labels in column B", line=1)
    label = [str(r[1]).strip() if len(r) > 1 and r[1] is not None else "" for r in rows]
    before = [k for k, text in enumerate(label) if (m := ITEM_LABEL.search(text)) and m.group(1)]
    after = [k for k, text in enumerate(label) if (m := ITEM_LABEL.search(text)) and not m.group(1)]
    if len(before) != 20 or len(after) != 20:
        raise InputError.single(path, f"expected 20 'current feeling' rows (before) and 20 'feeling' rows "
                                      f"(after) in column B; found {len(before)} and {len(after)}",
                                line=(before or after or [0])[0] + 1, column=2, field="labels")
    own = {key: k for k, text in enumerate(label) if (key := text.lower().replace(" (", "(")) in OWN_SUMS}
    header = rows[0]
    out, problems, mismatches = [], [], []
    for c in range(2, len(header)):
        code = header[c]
        if code is None or str(code).strip() == "":
            if any(len(r) > c and r[c] not in (None, "") for r in rows[1:]):
                problems.append(Problem(path, 1, c + 1, "situation", "a respondent column without a situation code"))
            continue
        m = CODE.match(str(code).strip())
        if not m:
            problems.append(Problem(path, 1, c + 1, "situation", f"{code!r} is not a code like Angry_F1S1"))
            continue
        sums: dict[tuple[str, str], int] = {}
        bad = False
        for phase, block in (("before", before), ("after", after)):
            for position, k in enumerate(block, start=1):
                cell = rows[k][c] if c < len(rows[k]) else None
                answer = _as_answer(cell)
                if answer is None:
                    problems.append(Problem(path, k + 1, c + 1, "answer", f"{cell!r} is not an answer 1-5"))
                    bad = True
                    continue
                key = ("PA" if position in PA_POSITIONS else "NA", phase)
                sums[key] = sums.get(key, 0) + answer
        if bad:
            continue
        for key, k in own.items():
            cell = rows[k][c] if c < len(rows[k]) else None
            own_sum = _as_number(cell)
            if own_sum is not None and own_sum != sums[OWN_SUMS[key]]:
                mismatches.append(f"{Path(path).name}:{k + 1}:{c + 1}: the sheet's {label[k]} is {cell}, "
                                  f"the sum of its items is {sums[OWN_SUMS[key]]}")
        emotion = emotion_id(m.group(1))
        sid = situation_id(emotion, int(m.group(2)), int(m.group(3)))
        respondent = f"crowd_{_column_name(c + 1)}"
        for subscale in ("PA", "NA"):
            out.append({"respondent_id": respondent, "emotion": emotion, "situation_id": sid, "subscale": subscale,
                        "before": sums[(subscale, "before")], "after": sums[(subscale, "after")]})
    if problems:
        raise InputError(problems)
    if not out:
        raise InputError.single(path, "no respondent column (situation codes in row 1 from column C)", line=1)
    notes = []
    if mismatches:
        notes.append(f"{len(mismatches)} of the sheet's own PA/NA sums differ from the sums of its items; "
                     "the item sums are written:")
        notes.extend(mismatches[:20])
        if len(mismatches) > 20:
            notes.append(f"... and {len(mismatches) - 20} more")
    elif not own:
        notes.append("the sheet has no PA/NA sum rows of its own, so the item sums could not be cross-checked")
    return out, notes


def _as_number(value: Any) -> float | None:
    """A number from a cell (a number, or its text in a CSV export); None when it holds none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _column_name(number: int) -> str:
    """A spreadsheet column's letters (1 -> A, 27 -> AA)."""
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def change_csv(rows: list[dict[str, Any]]) -> str:
    """The human change CSV (columns of :data:`CHANGE_COLUMNS`) as text.

    Example:
        >>> change_csv([{"respondent_id": "r", "emotion": "anger", "situation_id": "anger_f1_s1",
        ...              "subscale": "PA", "before": 30, "after": 25}]).splitlines()[1]
        'r,anger,anger_f1_s1,PA,30,25'
    """
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CHANGE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


class EmotionBenchHumansImporter(Importer):
    name = "emotionbench-humans"
    produces = "human-change"
    help = "EmotionBench's crowd workbook (crowd.xlsx, sheet Raw, or it saved as CSV) -> the human change CSV"
    file_help = "your copy of EmotionBench's results/PANAS Test/crowd.xlsx (or its sheet Raw as CSV)"
    out_help = ("write the human change CSV here (respondent_id, emotion, situation_id, subscale, before, after; "
                "default: standard output)")

    def convert(self, path: str, options: dict[str, Any]) -> Converted:
        """The human change CSV of the crowd sheet at `path`."""
        rows, notes = read_crowd(path)
        people = len({r["respondent_id"] for r in rows})
        return Converted(change_csv(rows), f"imported {people} respondents' PANAS before/after (PA, NA) "
                                           f"as {len(rows)} rows", notes, suffix=".csv")


# ---------------------------------------------------------------- model result files

RESULT_COLUMN = re.compile(r"^(?:(General)|([A-Za-z]+)-(\d+)_scenario-(\d+))_test-(\d+)_order-(\d+)$")
RESULT_SUFFIX = "-PANAS-testing"
PAIRING_NOTE = ("EmotionBench measures a model's default PANAS without any situation (columns General_test-K) "
                "and the PANAS after each situation in separate requests (columns <Emotion>-F_scenario-S_test-K); "
                "the two are not one conversation. psyq pairs them by test number: respondent test-K's before "
                "score is General_test-K for every situation, its after score the situation's test-K. The "
                "model's paired t is therefore on that pairing, not on repeated measures of one conversation "
                "(EmotionBench itself compares the two sets of means with a two-sample t: the report shows that "
                "comparison beside psyq's, as EmotionBench's own).")


def backend_of(path: str) -> str:
    """The model name of a result file: its name without ``-PANAS-testing.csv``.

    Example:
        >>> backend_of("results/PANAS Test/gpt-4-PANAS-testing.csv")
        'gpt-4'
    """
    return Path(path).name.removesuffix(".csv").removesuffix(RESULT_SUFFIX)


def read_model_results(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Stage-score rows of one EmotionBench PANAS result file, and notes (see :func:`read_model_file`)."""
    rows, notes, _ = read_model_file(path)
    return rows, notes


def read_model_file(path: str) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """Stage-score rows of one EmotionBench PANAS result file, notes, and the default scores.

    The file (``results/PANAS Test/<model>-PANAS-testing.csv``): a header row
    (``question-0, order-0, General_test-0_order-0, ..., Anger-0_scenario-0_test-0_order-0, ...``),
    a prompt row, then 20 rows, one per presented item: column ``order-O`` gives the item's
    number (1-20, published PANAS order) for the answer columns ending ``_order-O``; answers 1-5,
    an empty cell is a missing answer. Each test column gives one PA and one NA sum; a sum with a
    missing item is left empty (never prorated) and counted in the notes. Rows are written as
    before (stage 0) and after (stage 2) scores, paired by test number (:data:`PAIRING_NOTE`).

    The default scores are every General column's PA and NA sums (``backend_id, column, PA,
    NA``; None for a sum with an empty answer), those without a situation test of their number
    included: EmotionBench's own comparison takes its Default from all of them (kept in the
    imported run's manifest as ``default_scores``).
    """
    text = decode_text(path, read_input_bytes(path, max_bytes=50 * 1024 * 1024))
    rows = _csv_rows(path, text)
    if len(rows) < 3:
        raise InputError.single(path, "expected a header row, a prompt row and 20 item rows", line=1)
    header_line, header = rows[0]
    items = [(line, cells) for line, cells in rows[1:] if len(cells) > 1 and cells[1].isdigit()]
    problems: list[Problem] = []
    if len(items) != 20:
        problems.append(Problem(path, rows[1][0], 2, "order", f"expected 20 item rows (a number 1-20 in column "
                                                              f"order-0), found {len(items)}"))
    orders = {}
    for c, name in enumerate(header):
        if re.fullmatch(r"order-\d+", name):
            numbers = [int(cells[c]) if c < len(cells) and cells[c].isdigit() else 0 for _, cells in items]
            if sorted(numbers) != list(range(1, 21)):
                problems.append(Problem(path, header_line, c + 1, name, "the item numbers in this column are not "
                                                                         "1-20, each once"))
            orders[name.split("-")[1]] = numbers
    columns = []
    for c, name in enumerate(header):
        if name.startswith(("question", "order")) or not name:
            continue
        m = RESULT_COLUMN.match(name)
        if not m:
            problems.append(Problem(path, header_line, c + 1, "header",
                                    f"{name!r} is neither General_test-K_order-O nor Emotion-F_scenario-S_test-K_order-O"))
        elif m.group(6) not in orders:
            problems.append(Problem(path, header_line, c + 1, "header", f"no column order-{m.group(6)} for {name!r}"))
        else:
            columns.append((c, m))
    if problems:
        raise InputError(problems)
    backend = backend_of(path)
    general: dict[str, tuple[dict[str, float | None], dict[str, int]]] = {}
    after: list[tuple[str, str, str, dict[str, float | None], dict[str, int]]] = []
    defaults: list[dict[str, Any]] = []
    incomplete = 0
    for c, m in columns:
        sums: dict[str, float] = {"PA": 0.0, "NA": 0.0}
        answered = {"PA": 0, "NA": 0}
        for (line, cells), number in zip(items, orders[m.group(6)]):
            cell = cells[c] if c < len(cells) else ""
            if cell == "":
                continue
            answer = _as_answer(cell)
            if answer is None:
                problems.append(Problem(path, line, c + 1, "answer", f"{cell!r} is not an answer 1-5"))
                continue
            key = "PA" if number in PA_POSITIONS else "NA"
            sums[key] += answer
            answered[key] += 1
        score = {k: sums[k] if answered[k] == 10 else None for k in sums}
        incomplete += sum(1 for k in score if score[k] is None)
        test = f"test-{m.group(5)}"
        if m.group(1):
            general[test] = (score, answered)
            defaults.append({"backend_id": backend_of(path), "column": header[c], **score})
        else:
            emotion = emotion_id(m.group(2))
            sid = situation_id(emotion, int(m.group(3)) + 1, int(m.group(4)) + 1)
            after.append((test, emotion, sid, score, answered))
    if problems:
        raise InputError(problems)
    if not general:
        raise InputError.single(path, "no General_test-K column: the before measure is missing", line=header_line)
    out = []
    for test, emotion, sid, score, answered in after:
        before = general.get(test, ({"PA": None, "NA": None}, {"PA": 0, "NA": 0}))
        for phase, stage, (values, counts) in (("before", 0, before), ("after", 2, (score, answered))):
            for subscale in ("PA", "NA"):
                out.append({"backend_id": backend, "respondent_id": test, "repeat": 0, "situation_id": sid,
                            "emotion": emotion, "stage": stage, "phase": phase, "instrument": "panas",
                            "subscale": subscale, "score": values[subscale], "n_answered": counts[subscale],
                            "n_items": 10, "prorated": False})
    notes = [f"{backend}: {len(general)} default (General) tests and {len(after)} situation tests "
             f"({len({a[2] for a in after})} situations)"]
    if incomplete:
        notes.append(f"{backend}: {incomplete} PA/NA sums have an empty answer and are left empty "
                     "(never prorated); `psyq report` lists the change scores this leaves out")
    unused = sorted(set(general) - {a[0] for a in after}, key=lambda t: int(t.split("-")[1]))
    if unused:
        notes.append(f"{backend}: {len(unused)} General tests have no situation test with their number "
                     f"({unused[0]} ... {unused[-1]}) and are not used")
    missing_before = sorted({a[0] for a in after} - set(general))
    if missing_before:
        notes.append(f"{backend}: no General column for {', '.join(missing_before)}: those tests have no before score")
    return out, notes, defaults


class EmotionBenchResultsImporter(Importer):
    name = "emotionbench-results"
    produces = "imported-run"
    help = ("EmotionBench's published model results (results/PANAS Test/<model>-PANAS-testing.csv) -> an "
            "imported run directory that `psyq report` reads")
    file_help = "your copy of one of EmotionBench's results/PANAS Test/<model>-PANAS-testing.csv"
    out_help = ("the imported run directory to write (created if missing): imported.json and stage_scores.csv, "
                "which `psyq report DIR` and `psyq scores DIR` read")

    def add_arguments(self, parser: Any) -> None:
        """More result files (one backend each) after the first."""
        parser.add_argument("more_files", nargs="*", metavar="FILE", help="more result files (one model each)")

    def convert(self, path: str, options: dict[str, Any]) -> Converted:
        """Not used: this importer writes a directory (:meth:`import_run`)."""
        raise NotImplementedError

    def import_run(self, paths: list[str], out_dir: str) -> tuple[str, list[str]]:
        """Write the imported run of the result files `paths` into `out_dir`; (summary, notes).

        Not run: reads a copy of EmotionBench's published results, which psyq does not ship.

        Example:
            >>> summary, notes = EmotionBenchResultsImporter().import_run(
            ...     ["EmotionBench/results/PANAS Test/gpt-4-PANAS-testing.csv"], "runs/eb_gpt4")  # doctest: +SKIP
            >>> summary.split(":")[0]                                                         # doctest: +SKIP
            'imported 1 model (gpt-4)'
        """
        import pandas as pd

        from psyq.engine.results.imported_run import COLUMNS, write_imported_run

        rows, notes, defaults = [], [], []
        backends = [backend_of(p) for p in paths]
        if len(set(backends)) != len(backends):
            raise InputError.single(", ".join(paths), "two files have the same model name: import them separately")
        for path in paths:
            file_rows, file_notes, file_defaults = read_model_file(path)
            rows.extend(file_rows)
            notes.extend(file_notes)
            defaults.extend(file_defaults)
        frame = pd.DataFrame(rows, columns=COLUMNS)
        manifest = {
            "imported_from": [Path(p).name for p in paths],
            "command": "psyq import emotionbench-results",
            "source": CITATION,
            "terms": TERMS,
            "instrument": "panas (PA: items 1, 3, 5, 9, 10, 12, 14, 16, 17, 19; NA: the others; sums 10-50)",
            "stages": [{"measure": "panas"}, {"evoke": "situations"}, {"measure": "panas"}],
            "pairing": PAIRING_NOTE,
            "notes": notes,
            # Every General test's sums: EmotionBench's own comparison (psyq.analysis.statistics.change.emotionbench_comparison)
            # takes its Default from all of them, not only those paired with a situation test.
            "default_scores": defaults,
        }
        write_imported_run(out_dir, frame, manifest)
        summary = (f"imported {len(paths)} model{'s' if len(paths) != 1 else ''} ({', '.join(backends)}): "
                   f"{len(frame)} PANAS stage scores, no request made")
        return summary, [PAIRING_NOTE, *notes]
