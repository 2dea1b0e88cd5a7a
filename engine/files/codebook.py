"""Codebooks: how a human data file names its columns and codes its values (format `codebook/1`).

A shared data set is rarely written the way psyq reads it: its item columns are ``davi1`` …
``davi28`` rather than ``1`` … ``28``, its respondent column is ``id``, gender is ``F``/``M``
where the cohort says ``female``/``male``, and it may be stored already keyed. A codebook says
so in a small YAML file, and the export is read as it is, without editing it::

    psyq: codebook/1
    instrument: iri              # optional: the instrument the file answers (checked)
    keyed: true                  # optional: reverse-keyed items are stored already reversed
    columns:
      respondent_id: id          # optional: the column holding the respondent ids
      items: "davi{id}"          # a pattern ({id} = the item id), or a map  item id: column
      attributes: {gender: sex}  # optional: attribute name: column
      weight: wt                 # optional: the column of survey weights (positive numbers)
    values:
      gender: {F: female, M: male}   # per attribute: value in the file: value psyq uses
    item_values: {"1": 0, "2": 1, "3": 2, "4": 3, "5": 4}   # optional: item codes -> scale values
    skip_rows: 2                 # optional: rows after the header that hold no answers
    option_orders: {column: option_order, orders: [as_written, reversed]}   # optional

It is given with ``--codebook FILE`` (``psyq score``; ``psyq report --codebook INSTRUMENT=FILE``),
``codebook=`` in Python, or found beside the CSV as ``<csv stem>.codebook.yaml`` (a notice says
it was used). Items a map leaves out keep their id as column name. Values a map leaves out are
kept as written (a notice lists them).

``item_values`` recodes the answers to the items, one map for every item of the instrument (they
share its scale): a survey tool's numeric codes (Qualtrics' 1–5 where the IRI is scored 0–4) or its
choice labels (a "label" or "choice text" export: ``"A = Does not describe me well": 0``) to the
scale's values. With it, every answer in the file must be one of its codes: a cell that is not is
an error at its line, never kept as written. Without it, item cells are the scale's values.
``skip_rows`` leaves out that many rows after the header (Qualtrics' CSV export has two: the
question texts and the import ids), each said in a notice. ``option_orders`` names the column that
records which order of the options each person saw and the orders the questionnaire showed (``psyq
questionnaire`` writes it for a page that counterbalances them): a row with any other order, or
none, is an error at its line, since its answers were given to a questionnaire other than this one.

A ``weight`` column holds survey weights: it is read as numbers, kept under the reserved name
``survey_weight`` (:data:`WEIGHT_COLUMN`, never an attribute) and the comparisons with the
cohort are weighted by it (:mod:`psyq.analysis.statistics.human_comparison`, :mod:`psyq.analysis.statistics.validity`).
A CSV read without a codebook may name its weight column ``survey_weight`` itself.

Every problem is reported as ``file:line:column: field: what``, at the codebook's line for a
column it names that the CSV does not have.

Example:
    >>> book = load_codebook("instruments/data/iri_briganti2018_keyed.codebook.yaml")
    >>> book.spec.columns.items, book.spec.keyed
    ('davi{id}', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Sequence

from pydantic import BeforeValidator, Field

from psyq.engine.files.csvfile import CsvTable, read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text, format_json_schema
from psyq.engine.files.notices import notify
from psyq.engine.files.shipped import locate
from psyq.engine.files.validation import load_document, raise_problems
from psyq.engine.files.yamlfile import YamlDocument

FORMAT = "codebook/1"
SUFFIX = ".codebook.yaml"
PLACEHOLDER = "{id}"
WEIGHT_COLUMN = "survey_weight"
"""The reserved name survey weights are kept under (``columns.weight`` of a codebook, or a CSV column
of that name): not an attribute, so never a group, a norm-matching key or a persona attribute."""


def _code_text(value: Any) -> Any:
    """A value code as text: YAML reads ``1: female`` with a number key; a CSV cell is text."""
    if isinstance(value, bool):
        raise ValueError("YAML reads an unquoted yes, no, on, off, true or false as true or false; put the "
                         "value in quotes (e.g. \"yes\")")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, (int, float)) else value


Code = Annotated[str, BeforeValidator(_code_text, json_schema_input_type=str | int | float)]


class Columns(StrictModel):
    """Which columns of the CSV hold what: ``respondent_id`` (default ``respondent_id``),
    ``items`` (a pattern with ``{id}``, or a map item id -> column; default: the item ids),
    ``attributes`` (attribute name -> column; default: other columns under their own names) and
    ``weight`` (the column of survey weights, optional; default: a column named ``survey_weight``)."""

    respondent_id: Text | None = None
    items: Text | dict[Id, Text] | None = None
    attributes: dict[Id, Text] = Field(default_factory=dict)
    weight: Text | None = None


class OptionOrders(StrictModel):
    """The column recording the order of the options each person saw, and the orders shown."""

    column: Text
    orders: list[Id] = Field(min_length=1)


class People(StrictModel):
    """Who the people of the data file are, for the sentences that compare personas with them: "1,973
    young adults in French-speaking Belgium, answering in French (Briganti et al., 2018)"."""

    who: Text                               # "young adults", "US undergraduates"
    where: Text | None = None               # "French-speaking Belgium"
    language: Text | None = None            # the language they answered in
    source: Text | None = None              # the study the data come from

    def said(self, n: int | None = None) -> str:
        """The people in a phrase.

        Example:
            >>> People(who="young adults", where="Belgium", language="French", source="Briganti et al., 2018").said(1973)
            '1,973 young adults in Belgium, answering in French (Briganti et al., 2018)'
        """
        count = f"{n:,} " if n is not None else ""
        place = f" in {self.where}" if self.where else ""
        language = f", answering in {self.language}" if self.language else ""
        source = f" ({self.source})" if self.source else ""
        return f"{count}{self.who}{place}{language}{source}"


class CodebookSpec(StrictModel):
    """A codebook file (format ``codebook/1``)."""

    psyq: Literal["codebook/1"]
    instrument: Id | None = None
    describes: Text | None = None          # the data file it describes, for the reader
    people: People | None = None            # who answered: named in every verdict sentence
    keyed: bool | None = None
    columns: Columns = Field(default_factory=Columns)
    values: dict[Id, dict[Code, Code]] = Field(default_factory=dict)
    # One map for every item (they share the instrument's scale): code in the file -> scale value.
    item_values: dict[Code, int] | None = None
    skip_rows: int = Field(default=0, ge=0, le=100)
    option_orders: OptionOrders | None = None


@dataclass(frozen=True)
class Codebook:
    """A loaded codebook: the file's fields and its document (for the line of each field)."""

    file: str
    spec: CodebookSpec
    doc: YamlDocument

    def problem(self, path: tuple, message: str, at_key: bool = False) -> Problem:
        return self.doc.problem(path, message, at_key=at_key)

    def describe(self) -> str:
        """What the codebook changes, in a few words (for notices and the report).

        Example:
            >>> load_codebook("instruments/data/iri_briganti2018_keyed.codebook.yaml").describe()
            'item columns davi{id}; values of gender mapped (F -> female, M -> male); declared keyed'
        """
        c, parts = self.spec.columns, []
        if c.respondent_id:
            parts.append(f"respondent ids in {c.respondent_id}")
        if isinstance(c.items, str):
            parts.append(f"item columns {c.items}")
        elif c.items:
            parts.append(f"{len(c.items)} item column(s) named")
        if c.attributes:
            parts.append("attribute columns " + ", ".join(f"{a} <- {col}" for a, col in c.attributes.items()))
        if c.weight:
            parts.append(f"survey weights in {c.weight}")
        for attribute, codes in self.spec.values.items():
            parts.append(f"values of {attribute} mapped (" + ", ".join(f"{k} -> {v}" for k, v in codes.items()) + ")")
        if self.spec.item_values:
            shown = list(self.spec.item_values.items())
            parts.append(f"item answers recoded ({', '.join(f'{k} -> {v}' for k, v in shown[:5])}"
                         f"{', …' if len(shown) > 5 else ''})")
        if self.spec.skip_rows:
            parts.append(f"{self.spec.skip_rows} row(s) after the header skipped")
        if self.spec.keyed is not None:
            parts.append("declared keyed" if self.spec.keyed else "declared not keyed (raw answers)")
        return "; ".join(parts) or "nothing to change"


def check_codebook(spec: CodebookSpec, doc: YamlDocument) -> list[Problem]:
    """Meaning checks: a pattern holds ``{id}`` once; no column is named twice; no attribute takes the
    reserved name of the weights (:data:`WEIGHT_COLUMN`)."""
    problems = []
    items = spec.columns.items
    if isinstance(items, str):
        rest = items.replace(PLACEHOLDER, "", 1)
        if PLACEHOLDER not in items or "{" in rest or "}" in rest:
            problems.append(doc.problem(("columns", "items"), f"a pattern must hold {PLACEHOLDER} exactly once, where "
                                        "the item id goes (e.g. \"davi{id}\"), and no other braces; or write a map "
                                        "item id: column"))
    named: dict[str, tuple] = {}
    entries = [(("columns", "respondent_id"), spec.columns.respondent_id)]
    if isinstance(items, dict):
        entries += [(("columns", "items", k), v) for k, v in items.items()]
    entries += [(("columns", "attributes", k), v) for k, v in spec.columns.attributes.items()]
    entries.append((("columns", "weight"), spec.columns.weight))
    for name in spec.columns.attributes:
        if name == WEIGHT_COLUMN:
            problems.append(doc.problem(("columns", "attributes", name), f"'{WEIGHT_COLUMN}' is the name psyq keeps "
                                        "survey weights under; name the weight column with columns.weight instead",
                                        at_key=True))
    for path, column in entries:
        if column is None:
            continue
        if column in named:
            problems.append(doc.problem(path, f"column '{column}' is already named at {_where(doc, named[column])}"))
        else:
            named[column] = path
    return problems


def _where(doc: YamlDocument, path: tuple) -> str:
    line, _ = doc.where(path)
    return f"line {line}" if line else ".".join(map(str, path))


def load_codebook(path: str | Path) -> Codebook:
    """Load and check a codebook file; problems raise :class:`InputError` with file:line:column."""
    spec, doc, _ = load_document(path, CodebookSpec, check=check_codebook)
    return Codebook(str(path), spec, doc)


def codebook_beside(csv_path: str | Path) -> Path | None:
    """The codebook found beside a CSV (``<stem>.codebook.yaml``), or None.

    Example:
        >>> codebook_beside("instruments/data/iri_briganti2018_keyed.csv").name
        'iri_briganti2018_keyed.codebook.yaml'
    """
    candidate = Path(csv_path).with_name(Path(csv_path).stem + SUFFIX)
    return candidate if candidate.is_file() else None


def codebook_json_schema() -> dict[str, Any]:
    """The JSON Schema of the codebook format."""
    return format_json_schema(CodebookSpec, "psyq codebook (format codebook/1)")


@dataclass
class ColumnPlan:
    """How a codebook maps one CSV's columns: CSV column -> psyq name, per kind."""

    id_column: str
    items: dict[str, str]          # item id -> CSV column
    attributes: dict[str, str]     # attribute name -> CSV column
    weight: str | None = None      # the CSV column of survey weights (kept as WEIGHT_COLUMN), or None


def plan_columns(book: Codebook | None, header: list[str], item_ids: list[str], instrument_id: str,
                 csv_file: str) -> ColumnPlan:
    """The columns of a CSV with `header` under `book`; every column the codebook names that the
    CSV lacks, and every item id it names that the instrument lacks, is a problem at the
    codebook's line."""
    if book is None:
        return ColumnPlan("respondent_id", {i: i for i in item_ids}, {},
                          WEIGHT_COLUMN if WEIGHT_COLUMN in header else None)
    spec, problems = book.spec, []
    if spec.instrument is not None and spec.instrument != instrument_id:
        problems.append(book.problem(("instrument",), f"the codebook is for instrument '{spec.instrument}', "
                                                      f"but the data are read with '{instrument_id}'"))
    present = set(header)
    shown = ", ".join(header[:12]) + (", …" if len(header) > 12 else "")
    id_column = spec.columns.respondent_id or "respondent_id"
    if spec.columns.respondent_id and id_column not in present:
        problems.append(book.problem(("columns", "respondent_id"), f"column '{id_column}' is not in {csv_file} "
                                                                   f"(its columns: {shown})"))
    items = spec.columns.items
    if isinstance(items, str):
        columns = {i: items.replace(PLACEHOLDER, i) for i in item_ids}
        missing = [c for c in columns.values() if c not in present]
        if missing:
            problems.append(book.problem(("columns", "items"), f"the pattern '{items}' names column(s) not in "
                                         f"{csv_file}: {', '.join(missing[:10])}{', …' if len(missing) > 10 else ''} "
                                         f"(its columns: {shown})"))
    else:
        given = dict(items or {})
        for item_id, column in given.items():
            if item_id not in item_ids:
                problems.append(book.problem(("columns", "items", item_id), f"'{item_id}' is not a rating item of "
                                             f"'{instrument_id}' (its items: {', '.join(item_ids[:12])}"
                                             f"{', …' if len(item_ids) > 12 else ''})", at_key=True))
            elif column not in present:
                problems.append(book.problem(("columns", "items", item_id), f"column '{column}' is not in {csv_file} "
                                                                            f"(its columns: {shown})"))
        columns = {i: given.get(i, i) for i in item_ids}
    for attribute, column in spec.columns.attributes.items():
        if column not in present:
            problems.append(book.problem(("columns", "attributes", attribute), f"column '{column}' is not in "
                                                                               f"{csv_file} (its columns: {shown})"))
    weight = spec.columns.weight
    if weight is not None and weight not in present:
        problems.append(book.problem(("columns", "weight"), f"column '{weight}' is not in {csv_file} "
                                                            f"(its columns: {shown})"))
    if weight is None and WEIGHT_COLUMN in present:
        weight = WEIGHT_COLUMN
    raise_problems(problems)
    return ColumnPlan(id_column, columns, dict(spec.columns.attributes), weight)


def without_skipped_rows(book: Codebook, table: CsvTable) -> CsvTable:
    """`table` without the codebook's ``skip_rows`` rows after the header (a notice names their lines)."""
    skip = book.spec.skip_rows
    if not skip:
        return table
    if len(table.rows) < skip:
        raise InputError.single(table.file, f"the codebook says {skip} row(s) after the header hold no answers "
                                            f"(skip_rows), but the file has only {len(table.rows)}", line=1)
    skipped = table.lines[:skip]
    notify(Problem(table.file, skipped[0], None, "", f"line(s) {', '.join(map(str, skipped))} left out: the "
                                                     f"codebook {book.file} says skip_rows: {skip}"))
    return CsvTable(table.file, list(table.header), [list(r) for r in table.rows[skip:]], list(table.lines[skip:]),
                    table.delimiter, list(table.notices))


def recoded_answers(book: Codebook | None, table: CsvTable, plan: ColumnPlan, scale: Sequence[int]) -> CsvTable:
    """`table` as its answers are read: the codebook's ``skip_rows`` left out (a notice says which
    lines) and every item cell recoded by its ``item_values`` to a value of `scale`.

    With ``item_values`` a non-empty item cell must be one of its codes: one that is not is a problem
    at the CSV's line, naming the codes (a survey coded otherwise is never read as something else);
    a code mapped to a value off `scale` is a problem at the codebook's line. Without a codebook, or
    with neither field, `table` is returned as it is.

    Example:
        >>> import io, tempfile, warnings
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "b.codebook.yaml").write_text('psyq: codebook/1\\nitem_values: {"1": 0, "2": 1}\\nskip_rows: 1\\n')
        >>> _ = (folder / "b.csv").write_text("respondent_id,q\\nthe question,Q text\\np1,2\\np2,\\n")
        >>> book, table = load_codebook(folder / "b.codebook.yaml"), read_csv_table(folder / "b.csv")
        >>> plan = plan_columns(book, table.header, ["q"], "mini", str(folder / "b.csv"))
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")      # the notice that line 2 was skipped
        ...     recoded = recoded_answers(book, table, plan, [0, 1])
        >>> recoded.rows, recoded.lines
        ([['p1', '1'], ['p2', '']], [3, 4])
    """
    if book is None or (not book.spec.skip_rows and book.spec.item_values is None and book.spec.option_orders is None):
        return table
    table = without_skipped_rows(book, table)
    rows, lines = [list(r) for r in table.rows], list(table.lines)
    raise_problems(other_orders(book, table))
    codes = book.spec.item_values
    if codes is not None:
        problems = [book.problem(("item_values", code), f"{code!r} is mapped to {value}, which is not on the "
                                                         f"instrument's scale ({', '.join(map(str, scale))})")
                    for code, value in codes.items() if value not in scale]
        listed = ", ".join(repr(c) for c in list(codes)[:8]) + (", …" if len(codes) > 8 else "")
        for item_id, column in plan.items.items():
            k = table.header.index(column)
            for row, line in zip(rows, lines):
                cell = row[k].strip()
                if not cell:
                    continue
                if cell in codes:
                    row[k] = str(codes[cell])
                else:
                    problems.append(Problem(table.file, line, k + 1, f"column '{column}'", f"{cell!r} is not one of "
                                            f"the codes the codebook's item_values map ({listed}; {book.file})"))
        raise_problems(problems)
    return CsvTable(table.file, list(table.header), rows, lines, table.delimiter, list(table.notices))


def other_orders(book: Codebook, table: CsvTable) -> list[Problem]:
    """A problem for every row whose order of the options is not one the codebook's
    ``option_orders`` lists (or whose column is missing): such a person answered another
    questionnaire than the one the codebook describes."""
    spec = book.spec.option_orders
    if spec is None:
        return []
    if spec.column not in table.header:
        return [book.problem(("option_orders", "column"), f"column '{spec.column}' is not in {table.file}")]
    k, shown = table.header.index(spec.column), ", ".join(spec.orders)
    return [Problem(table.file, line, k + 1, f"column '{spec.column}'",
                    f"{row[k].strip()!r} is not an order of the options this questionnaire showed ({shown}; "
                    f"{book.file}): this person answered another questionnaire")
            for row, line in zip(table.rows, table.lines) if row[k].strip() not in spec.orders]


def codebook_hint() -> str:
    """The advice added to a 'missing column(s)' error of a human data file."""
    return (f"; if the file names its columns otherwise, describe them in a codebook (--codebook FILE, or "
            f"<csv name>{SUFFIX} beside the CSV; see docs/comparing.md#codebooks)")


def resolve_keyed(book: Codebook | None, keyed: bool | None) -> bool:
    """Whether the data are keyed: the caller's word, else the codebook's, else not; a caller and a
    codebook that disagree are an error at the codebook's `keyed:` line."""
    declared = book.spec.keyed if book is not None else None
    if keyed is None:
        return bool(declared)
    if declared is not None and declared != keyed:
        said = "keyed (--keyed, :keyed or keyed=True)" if keyed else "not keyed (keyed=False)"
        raise InputError([book.problem(("keyed",), f"the codebook says keyed: {str(declared).lower()}, but the data "
                                                   f"are read as {said}; say it in one place")])
    return keyed


def read_table_through_codebook(csv_path: str | Path, codebook: str | Path | None = None,
                                discover: bool = True) -> tuple[CsvTable, str | None]:
    """A human data CSV as a plain table under psyq's names, for uses without an instrument (a
    cohort drawn from the file, ``from_data:`` in docs/cohorts.md): the codebook's
    ``columns.respondent_id`` becomes ``respondent_id``, its ``columns.attributes`` take their
    attribute names, and the ``values:`` of each attribute are relabelled (codes the map leaves out
    are kept, with a notice, as :func:`~psyq.analysis.scoring.human_answers.read_answers_csv` does).
    Item columns keep their names (no instrument says which they are) and ``instrument:`` and
    ``keyed:`` are not used.

    `codebook` None: ``<stem>.codebook.yaml`` beside the CSV when `discover` is true (a notice
    says it was used). Returns the table (header and cells renamed and relabelled, each row with
    the CSV line it starts on) and the codebook's path (None without one). A column the codebook
    names that the CSV lacks, or a `values:` entry for a column the table does not have, is a
    problem at the codebook's line.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")      # the notice that the codebook beside it was used
        ...     table, book = read_table_through_codebook("iri_briganti2018_keyed")
        >>> table.header[0], table.header[-1], table.column("gender")[:3], table.lines[0], book.endswith(SUFFIX)
        ('respondent_id', 'gender', ['female', 'female', 'female'], 2, True)
    """
    csv_path = locate(csv_path, "human data")
    file = str(csv_path)
    if codebook is not None:
        book: Codebook | None = load_codebook(codebook)
    elif discover and (found := codebook_beside(csv_path)) is not None:
        book = load_codebook(found)
        notify(Problem(file, None, None, "", f"read with the codebook {found} found beside it: {book.describe()}"))
    else:
        book = None
    table = read_csv_table(csv_path)
    if book is None:
        return table, None
    table = without_skipped_rows(book, table)
    header, problems = list(table.header), []
    shown = ", ".join(header[:12]) + (", …" if len(header) > 12 else "")
    renames = [(("columns", "respondent_id"), book.spec.columns.respondent_id, "respondent_id")]
    renames += [(("columns", "attributes", a), column, a) for a, column in book.spec.columns.attributes.items()]
    for path, column, name in renames:
        if column is None:
            continue
        if column not in table.header:
            problems.append(book.problem(path, f"column '{column}' is not in {file} (its columns: {shown})"))
        else:
            header[table.header.index(column)] = name
    raise_problems(problems)
    if dup := sorted({c for c in header if header.count(c) > 1}):
        raise InputError.single(file, "duplicated column(s) after the codebook's renaming: " + ", ".join(dup)
                                + " (a column of the file has the name the codebook gives another)", line=1)
    rows = [list(cells) for cells in table.rows]
    for attribute, codes in book.spec.values.items():
        if attribute not in header:
            problems.append(book.problem(("values", attribute), f"the data have no column '{attribute}' (their "
                                         f"columns, after the codebook: {', '.join(header[:12])}"
                                         f"{', …' if len(header) > 12 else ''})", at_key=True))
            continue
        k = header.index(attribute)
        kept = sorted({row[k] for row in rows if row[k] and row[k] not in codes and row[k] not in codes.values()})
        if kept:
            line, column = book.doc.where(("values", attribute))
            notify(Problem(book.file, line, column, f"values.{attribute}",
                           f"value(s) {', '.join(repr(c) for c in kept[:10])} of {file} are not in the map and were "
                           "kept as written"))
        for row in rows:
            row[k] = codes.get(row[k], row[k])
    raise_problems(problems)
    return CsvTable(file, header, rows, list(table.lines), table.delimiter, list(table.notices)), book.file
