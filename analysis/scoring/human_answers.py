"""Reading human item responses from CSV, checked cell by cell against an instrument.

The CSV has a ``respondent_id`` column and one column per item id holding scale values; other
columns (age, gender …) are kept as respondent attributes for grouping and norm matching (a
column whose every non-empty cell is a number becomes numeric; empty cells are missing). Empty
item cells are missing answers. Every bad cell is reported with its line and column: a value
silently dropped would bias a comparison.

Data published *already keyed* (reverse-keyed items stored after reversal, as in many shared
data sets) must be declared with ``keyed=True``: those items are then turned back into raw
answers (min + max − x), so that scoring reverses them exactly once.

Survey weights (a codebook's ``columns.weight``, or a column named ``survey_weight``) are kept as
floats under the reserved name :data:`WEIGHT_COLUMN`; every weight must be a positive finite
number, and an empty, zero, negative or non-numeric one is an error at its line (no respondent is
dropped: which of them to leave out, or what weight to give them, is the researcher's decision).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from psyq.engine.files.csvfile import read_csv_table, without_repeated
from psyq.engine.files.codebook import WEIGHT_COLUMN
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.notices import notify
from psyq.engine.files.shipped import is_name, locate
from psyq.engine.design.instrument import Instrument
from psyq.engine.trials.scoring import keyed_answers

if TYPE_CHECKING:
    from psyq.engine.files.codebook import Codebook

ID_COLUMN = "respondent_id"


def read_answers_csv(path: str | Path, instrument: Instrument, keyed: bool | None = None,
                     codebook: "str | Path | Codebook | None" = None, discover: bool = True) -> pd.DataFrame:
    """Read a wide CSV of item answers; return it indexed by ``respondent_id``.

    Item columns become floats (NaN = missing) holding *raw* answers: with ``keyed=True`` the
    file's reverse-keyed items are taken as already reversed and are un-reversed here (see
    :func:`raw_from_keyed`). Other columns are attributes: numeric when every non-empty cell
    is a number, else text; empty cells are missing.

    A `codebook` (:mod:`psyq.engine.files.codebook`: a file or a loaded one) says how the file
    names its columns and codes its attribute values, and may declare it keyed; without one, a
    ``<csv stem>.codebook.yaml`` beside the CSV is used when `discover` is true, with a notice.
    `keyed` None takes the codebook's word (else False); a caller and a codebook that disagree
    are an error. The result's ``attrs`` say what was done: ``codebook`` (its path or None),
    ``codebook_summary``, ``keyed`` and ``weight`` (the file's column of survey weights, or None).

    Survey weights (the codebook's ``columns.weight``, else a column named ``survey_weight``) are
    the float column :data:`WEIGHT_COLUMN`; a weight that is empty, not a number, not finite, zero
    or negative is an error at its line (``file:line: column 'wt': ...``).

    Example:
        >>> import warnings
        >>> from psyq.engine.design.instrument import load_instrument
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")      # the notice that the codebook beside it was used
        ...     answers = read_answers_csv("iri_briganti2018_keyed", load_instrument("iri"))
        >>> answers.attrs["keyed"], answers["gender"].unique().tolist()
        (True, ['female', 'male'])
    """
    from psyq.engine.files.codebook import (Codebook, codebook_beside, codebook_hint, load_codebook,
                                              plan_columns, recoded_answers, resolve_keyed)

    named = is_name(path)      # a shipped file's name, not a path
    path = locate(path, "human data")
    file = str(path)
    book = codebook if isinstance(codebook, Codebook) or codebook is None else load_codebook(codebook)
    if book is None and discover and (found := codebook_beside(path)) is not None:
        book = load_codebook(found)
        # A shipped file is shown as the user named it, not by its place in the installation.
        shown = (f"{path.name} (shipped)", found.name) if named else (file, found)
        notify(Problem(shown[0], None, None, "", f"read with the codebook {shown[1]} found beside it: {book.describe()}"))
    keyed = resolve_keyed(book, keyed)
    item_ids = [item.id for item in instrument.rating_items]
    # Shape checked before any value is read (psyq.engine.files.csvfile): no row is shifted into other columns.
    try:
        csv_table = read_csv_table(path, required=() if book else (ID_COLUMN, *item_ids),
                                   repeated_names=book is not None)
    except InputError as exc:
        raise InputError([Problem(p.file, p.line, p.column, p.field, p.message + codebook_hint())
                          if p.message.startswith("missing column(s)") else p for p in exc.problems]) from None
    plan = plan_columns(book, csv_table.header, item_ids, instrument.id, file)
    if book is not None:    # a platform's bookkeeping columns may repeat (REDCap's "Complete?" per form)
        orders = [book.spec.option_orders.column] if book.spec.option_orders else []
        csv_table = without_repeated(csv_table, [plan.id_column, *plan.items.values(), *plan.attributes.values(),
                                                 *([plan.weight] if plan.weight else []), *orders,
                                                 *book.spec.values], f"the codebook {book.file}")
    csv_table = recoded_answers(book, csv_table, plan, sorted(o.value for o in instrument.scale))   # item_values, skip_rows
    rename = {column: item_id for item_id, column in plan.items.items()}
    rename.update({column: attribute for attribute, column in plan.attributes.items()})
    rename[plan.id_column] = ID_COLUMN
    if plan.weight is not None:
        rename[plan.weight] = WEIGHT_COLUMN
    shown = {name: column for column, name in rename.items()}     # psyq name -> the file's column, for errors
    header = [rename.get(c, c) for c in csv_table.header]
    table = pd.DataFrame(csv_table.rows, columns=header, dtype=str)
    line_of = csv_table.lines   # data row r starts on line line_of[r] (blank rows are skipped)
    missing = [c for c in (ID_COLUMN, *item_ids) if c not in table.columns]
    if missing:
        raise InputError.single(file, "missing column(s): " + ", ".join(missing) + codebook_hint(), line=1)
    if dup := sorted({c for c in table.columns if list(table.columns).count(c) > 1}):
        raise InputError.single(file, "duplicated column(s): " + ", ".join(dup)
                                + (" (after the codebook's renaming: a column of the file has the name the codebook "
                                   "gives another)" if book else ""), line=1)

    problems: list[Problem] = []
    ids = table[ID_COLUMN].str.strip()
    id_field = f"column '{shown.get(ID_COLUMN, ID_COLUMN)}'"
    for r in np.flatnonzero((ids == "").to_numpy()):
        problems.append(Problem(file, line_of[r], None, id_field, "respondent_id is empty"))
    for r in np.flatnonzero(ids.duplicated().to_numpy() & (ids != "").to_numpy()):
        problems.append(Problem(file, line_of[r], None, id_field,
                                f"respondent_id {ids.iloc[r]!r} appears more than once"))

    allowed = {o.value for o in instrument.scale}
    values = {}
    for item_id in item_ids:
        cells = table[item_id].str.strip()
        numbers = pd.to_numeric(cells.replace("", None), errors="coerce")
        not_number = (cells != "") & numbers.isna()
        off_scale = numbers.notna() & ~numbers.isin(allowed)
        where = f"column '{shown.get(item_id, item_id)}'" + (f" (item {item_id})" if shown.get(item_id, item_id) != item_id else "")
        for r in np.flatnonzero(not_number.to_numpy()):
            problems.append(Problem(file, line_of[r], None, where, f"{cells.iloc[r]!r} is not a number"))
        for r in np.flatnonzero(off_scale.to_numpy()):
            problems.append(Problem(file, line_of[r], None, where,
                                    f"{cells.iloc[r]} is not on the scale "
                                    f"({', '.join(str(v) for v in sorted(allowed))})"))
        values[item_id] = numbers.astype(float)
    if plan.weight is not None:
        weights, bad = _weights(table[WEIGHT_COLUMN], file, line_of, f"column '{plan.weight}'")
        problems.extend(bad)
        values[WEIGHT_COLUMN] = weights
    if book is not None:
        problems.extend(_value_problems(book, table, item_ids))
    if problems:
        problems.sort(key=lambda p: (p.file != file, p.line or 0, p.field))
        raise InputError(problems)
    if book is not None:
        table = _mapped_values(book, table, file)

    out = table.drop(columns=item_ids).assign(**values)
    out[ID_COLUMN] = ids
    out = typed_attributes(out.set_index(ID_COLUMN), item_ids)
    out = raw_from_keyed(instrument, out) if keyed else out
    out.attrs.update(codebook=book.file if book else None, codebook_summary=book.describe() if book else None,
                     keyed=keyed, weight=plan.weight)
    return out


def _weights(cells: pd.Series, file: str, line_of: list[int], where: str) -> tuple[pd.Series, list[Problem]]:
    """Survey weights as floats, and a problem at the line of every weight that is not a positive
    finite number.

    Example:
        >>> w, bad = _weights(pd.Series(["1.5", "", "0", "-2", "x", "inf"]), "f.csv", [2, 3, 4, 5, 6, 7], "column 'wt'")
        >>> w.tolist()[0], [str(p) for p in bad][:2]
        (1.5, ["f.csv:3: column 'wt': the weight is empty; every respondent needs a positive weight", "f.csv:4: column 'wt': weight 0 is not positive; a survey weight must be a positive finite number"])
        >>> len(bad)
        5
    """
    text = cells.str.strip()
    numbers = pd.to_numeric(text.replace("", None), errors="coerce").astype(float)
    problems = []
    for r in range(len(text)):
        cell, value = text.iloc[r], numbers.iloc[r]
        if cell == "":
            why = "the weight is empty; every respondent needs a positive weight"
        elif np.isnan(value):
            why = f"{cell!r} is not a number; a survey weight must be a positive finite number"
        elif not np.isfinite(value) or value <= 0:
            why = f"weight {cell} is not {'finite' if not np.isfinite(value) else 'positive'}; a survey weight must be a positive finite number"
        else:
            continue
        problems.append(Problem(file, line_of[r], None, where, why))
    return numbers, problems


def _value_problems(book: "Codebook", table: pd.DataFrame, item_ids: list[str]) -> list[Problem]:
    """A `values:` entry for an attribute the file does not have (or for an item) is a problem."""
    out = []
    for attribute in book.spec.values:
        if attribute in item_ids or attribute in (ID_COLUMN, WEIGHT_COLUMN):
            out.append(book.problem(("values", attribute), f"'{attribute}' is an item, the respondent id or the weights; `values:` "
                                                           "maps the codes of attributes (gender, group …)", at_key=True))
        elif attribute not in table.columns:
            others = [c for c in table.columns if c not in item_ids and c != ID_COLUMN]
            out.append(book.problem(("values", attribute), f"the data have no attribute '{attribute}' (their "
                                    f"attributes: {', '.join(others) or 'none'}; name its column under "
                                    "columns.attributes)", at_key=True))
    return out


def _mapped_values(book: "Codebook", table: pd.DataFrame, file: str) -> pd.DataFrame:
    """Attribute codes replaced by the codebook's values; codes it leaves out are kept and listed."""
    out = table.copy()
    for attribute, codes in book.spec.values.items():
        cells = out[attribute].str.strip()
        kept = sorted({c for c in cells if c and c not in codes and c not in codes.values()})
        if kept:
            line, column = book.doc.where(("values", attribute))
            notify(Problem(book.file, line, column, f"values.{attribute}",
                           f"value(s) {', '.join(repr(k) for k in kept[:10])} of {file} are not in the map and were "
                           "kept as written"))
        out[attribute] = cells.map(lambda c: codes.get(c, c))
    return out


def typed_attributes(answers: pd.DataFrame, item_ids: list[str]) -> pd.DataFrame:
    """Attribute (non-item) text columns with empty cells as missing, numeric when every
    non-empty cell is a number (so an ``age`` column can match a norm group's age range).

    Example:
        >>> typed_attributes(pd.DataFrame({"age": ["21", ""], "g": ["F", "M"]}), []).dtypes.tolist()
        [dtype('float64'), dtype('O')]
    """
    out = answers.copy()
    for column in out.columns:
        if column in item_ids:
            continue
        cells = out[column].astype(str).str.strip()
        present = cells != ""
        numbers = pd.to_numeric(cells.where(present), errors="coerce")
        if present.any() and numbers[present].notna().all():
            out[column] = numbers.astype(float)
        else:
            out[column] = cells.where(present, None).astype(object)
    return out


def raw_from_keyed(instrument: Instrument, answers: pd.DataFrame) -> pd.DataFrame:
    """Answers stored already keyed, turned back into raw answers: reverse-keyed items become
    min + max − x (its own inverse), other columns are unchanged.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> mini = load_instrument("tests/data/mini_1to7.yaml")   # items a and c are reversed
        >>> raw_from_keyed(mini, pd.DataFrame({"a": [7.0], "b": [7.0], "c": [2.0]})).iloc[0].tolist()
        [1.0, 7.0, 6.0]
    """
    out = answers.copy()
    for item in instrument.rating_items:
        if item.reverse and item.id in out.columns:
            out[item.id] = instrument.scale_min + instrument.scale_max - out[item.id].astype(float)
    return out


KEYING_COLUMNS = ["instrument", "subscale", "item_id", "n", "r_scored", "p_negative", "looks_wrong"]
MIN_KEYING_N = 10        # fewer respondents with both values: the item is not checked
KEYING_ALPHA = 0.05      # one-sided: r below 0 by more than chance


def keying_check(instrument: Instrument, answers: pd.DataFrame) -> pd.DataFrame:
    """Does each reverse-keyed item, keyed as psyq will score it, go with its subscale?

    For every reverse-keyed item of every first-order rating subscale that also has forward
    items: the Pearson r between the item as psyq scores it (reversed) and the sum of the
    subscale's *forward* items (complete rows only), over the respondents with both. Keyed the
    right way it is positive. Negative beyond chance (one-sided p < .05, from
    t = r·√((n − 2)/(1 − r²))) means the item was reversed once too often (data stored already
    keyed, read as raw) or once too few (raw data declared keyed): ``looks_wrong``.

    Why the forward items and not the whole rest of the subscale: the forward items read the same
    whichever way the file was keyed, so they are a fixed reference; a rest score that includes
    the other reverse items flips with them, and when a subscale has as many reverse items as
    forward ones (TAS-20 EOT) its sign says nothing. A subscale without forward items, or fewer
    than :data:`MIN_KEYING_N` respondents, or a constant item, gives ``r_scored`` NaN.

    `answers` are what :func:`read_answers_csv` returns (raw answers; a file declared keyed
    already turned back). Reversing an item flips the sign of its r, so r as stored in the file is
    ``-r_scored`` for data read as raw and ``r_scored`` for data declared keyed.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> iri = load_instrument("iri")
        >>> stored = pd.read_csv("instruments/data/iri_briganti2018_keyed.csv", index_col="respondent_id")
        >>> as_raw = stored.rename(columns=lambda c: c.removeprefix("davi"))    # keyed data read as raw
        >>> check = keying_check(iri, as_raw)
        >>> int(check["looks_wrong"].sum()), len(check)
        (9, 9)
        >>> bool(keying_check(iri, raw_from_keyed(iri, as_raw))["looks_wrong"].any())   # read as keyed: fine
        False
    """
    from scipy import stats

    keyed = keyed_answers(instrument, answers.reindex(columns=[i.id for i in instrument.rating_items]))
    rows = []
    for subscale in instrument.first_order_subscales:
        items = instrument.subscale_items(subscale.id)
        forward = [i.id for i in items if not i.reverse]
        if not forward:
            continue
        reference = keyed[forward].sum(axis=1, min_count=len(forward))
        for item in (i for i in items if i.reverse):
            both = pd.concat([keyed[item.id], reference], axis=1).dropna()
            n, r, p = len(both), np.nan, np.nan
            x, y = both.iloc[:, 0].to_numpy(dtype=float), both.iloc[:, 1].to_numpy(dtype=float)
            if n >= MIN_KEYING_N and np.ptp(x) > 0 and np.ptp(y) > 0:
                r = float(np.corrcoef(x, y)[0, 1])
                t = r * np.sqrt((n - 2) / max(1 - r * r, 1e-12))
                p = float(stats.t.cdf(t, n - 2))
            rows.append({"instrument": instrument.id, "subscale": subscale.id, "item_id": item.id, "n": n,
                         "r_scored": r, "p_negative": p, "looks_wrong": bool(r < 0 and p < KEYING_ALPHA)})
    return pd.DataFrame(rows, columns=KEYING_COLUMNS)


def keying_warning(check: pd.DataFrame, file: str, keyed: bool) -> str | None:
    """What to tell the user when the reverse items of `check` (:func:`keying_check`) look keyed
    the wrong way; None when they do not.

    Keying is a property of the whole file (one export), so the warning is given when most checked
    reverse items look wrong (more than half of those whose r could be computed); when only some
    do, a shorter message names them (a bad item, or a file keyed in part).
    """
    checked = check[check["r_scored"].notna()]
    wrong = checked[checked["looks_wrong"]]
    if wrong.empty:
        return None
    inst = str(check["instrument"].iloc[0])
    listed = "; ".join(
        f"{sub}: " + ", ".join(f"{r.item_id} (r = {_r(r.r_scored)})" for r in rows.itertuples())
        for sub, rows in wrong.groupby("subscale", sort=False))
    if 2 * len(wrong) <= len(checked):
        return (f"{file}: {len(wrong)} of {len(checked)} reverse-keyed items of {inst} correlate negatively with the "
                f"forward items of their subscale as psyq scores them ({listed}); check how those items are stored")
    if keyed:
        return (f"{file}: the data were declared already keyed, but they look RAW: {len(wrong)} of {len(checked)} "
                f"reverse-keyed items of {inst}, taken as stored already reversed, correlate negatively with the "
                f"forward items of their subscale ({listed}); reversed once they would correlate positively. If the "
                "file holds raw answers, remove --keyed / ':keyed' / `keyed: true` (codebook) / keyed=True, or "
                "psyq scores them the wrong way round")
    return (f"{file}: the data look ALREADY KEYED but were read as raw answers: {len(wrong)} of {len(checked)} "
            f"reverse-keyed items of {inst} correlate negatively with the forward items of their subscale once psyq "
            f"reverses them ({listed}); as stored they correlate positively, so the file seems to hold them reversed "
            "already and scoring reverses them a second time. If so, add --keyed (psyq score), ':keyed' (psyq report "
            "--human ID=FILE.csv:keyed), `keyed: true` in a codebook, or keyed=True in Python")


def _r(r: float) -> str:
    return f"{r:+.2f}".replace("0.", ".").replace("-", "\u2212")
