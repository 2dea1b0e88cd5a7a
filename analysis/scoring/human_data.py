"""People's data for one instrument, as the report compares personas with it: one record per
instrument, built and checked once where the command line (``psyq report --human --codebook
--retest``) or a notebook hands the files over.

A record holds the file of people's answers, whether it is stored already keyed (reverse items
reversed), its codebook (default: ``<csv name>.codebook.yaml`` beside it, as
:func:`psyq.analysis.scoring.human_answers.read_answers_csv` finds it) and a second administration of
the same people (retest) with its own keying. Survey weights and the groups the people fall in come
from the file through its codebook. People's before and after scores of a staged design
(``psyq report --human-change``) are read by :func:`read_human_change_csv`.

Example:
    >>> people = human_data({"iri": "iri_briganti2018_keyed:keyed"})     # a shipped file, by name
    >>> people["iri"].file.name, people["iri"].keyed, people["iri"].retest
    ('iri_briganti2018_keyed.csv', True, None)
    >>> human_data({"iri": "people.csv"}, codebooks={"bes": "bes.codebook.yaml"})
    Traceback (most recent call last):
    psyq.engine.files.errors.InputError: people.csv: --human: no such file
    bes.codebook.yaml: --codebook: no such file
    bes: --codebook INSTRUMENT=FILE describes the --human file of that instrument; no --human file is given for it (given: iri)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.files.codebook import codebook_beside, load_codebook
from psyq.engine.files.csvfile import read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.shipped import locate
from psyq.analysis.scoring.human_answers import read_answers_csv

KEYED_SUFFIX = ":keyed"
"""Written after a file (``iri=people.csv:keyed``): its reverse-keyed items are stored reversed already."""

HUMAN_CHANGE_COLUMNS = ["respondent_id", "emotion", "situation_id", "subscale", "before", "after"]
"""The columns of people's before and after scores (``psyq report --human-change``)."""

PEOPLE_OPTIONS = ("--human", "--retest")
"""The options whose files are people's answers, which may name the human data psyq ships."""


@dataclass(frozen=True)
class HumanData:
    """One instrument's data of people: where the answers are and how to read them.

    Example:
        >>> from psyq import load_instrument
        >>> data = HumanData("iri", locate("iri_briganti2018_keyed", "human data"), keyed=True)
        >>> data.answers(load_instrument("iri")).shape
        (1973, 29)
    """

    instrument: str
    file: Path
    keyed: bool = False
    codebook: Path | None = None
    retest: Path | None = None
    retest_keyed: bool = False

    # What was read, per file and instrument: `psyq report` checks the people's files before it
    # imports the report, and the report then reads them from here, not from disk again.
    _read: list = field(default_factory=list, init=False, repr=False, compare=False)

    def answers(self, instrument: Instrument) -> pd.DataFrame:
        """The people's item answers, respondent × item (keyed as declared, through the codebook)."""
        return self._once(self.file, instrument, self.keyed)

    def retest_answers(self, instrument: Instrument) -> pd.DataFrame | None:
        """The second administration's answers (same codebook), or None when there is none."""
        if self.retest is None:
            return None
        return self._once(self.retest, instrument, self.retest_keyed)

    def who(self, n: int | None = None) -> str:
        """Who the people are, in a phrase, from the codebook's ``people:`` (given or found beside
        the file); when it has none, their file's name and a request to say who they are.

        Example:
            >>> print(human_data({"iri": "iri_briganti2018_keyed"})["iri"].who(1973))
            1,973 young adults in Belgium, answering in French (Briganti et al., 2018)
        """
        path = self.codebook or codebook_beside(self.file)
        people = load_codebook(path).spec.people if path is not None else None
        if people is not None:
            return people.said(n)
        count = f"{n:,} " if n is not None else ""
        return (f"{count}people of {self.file.name} (who they are is not stated: add `people:` with who, where "
                f"and language to its codebook, docs/comparing.md#codebooks)")

    def _once(self, file: Path, instrument: Instrument, keyed: bool) -> pd.DataFrame:
        for read_file, read_instrument, frame in self._read:
            if read_file == file and read_instrument == instrument:
                return frame.copy()
        frame = read_answers_csv(file, instrument, keyed=True if keyed else None, codebook=self.codebook)
        self._read.append((file, instrument, frame))
        return frame.copy()


def input_file(path: str | Path, option: str) -> Path:
    """The file an option of the report names, checked before any analysis begins: it must exist
    and be a file (InputError `FILE: OPTION: what is wrong`, exit 2 on the command line). People's
    answers (:data:`PEOPLE_OPTIONS`) may name the human data psyq ships.

    Example:
        >>> input_file("iri_briganti2018_keyed", "--human").name    # a shipped human data file, by name
        'iri_briganti2018_keyed.csv'
        >>> input_file("people.csv", "--human")
        Traceback (most recent call last):
        psyq.engine.files.errors.InputError: people.csv: --human: no such file
    """
    try:
        file = locate(path, "human data") if option in PEOPLE_OPTIONS else Path(path)
    except InputError as exc:
        raise InputError([Problem(str(path), None, None, option, exc.problems[0].message)]) from None
    if not file.exists():
        raise InputError([Problem(str(path), None, None, option, "no such file")])
    if not file.is_file():
        raise InputError([Problem(str(path), None, None, option, "not a file (a folder or a device); give the CSV "
                                                                  "or YAML file itself")])
    return file


def _keyed(spec: str | Path) -> tuple[str, bool]:
    text = str(spec)
    return (text.removesuffix(KEYED_SUFFIX), True) if text.endswith(KEYED_SUFFIX) else (text, False)


def human_data(human: Mapping[str, str | Path], *, codebooks: Mapping[str, str | Path] | None = None,
               retests: Mapping[str, str | Path] | None = None) -> dict[str, HumanData]:
    """One :class:`HumanData` per instrument of `human` (instrument id -> ``FILE`` or
    ``FILE:keyed``), with its codebook and retest file (``FILE[:keyed]``) where given.

    Everything is checked here, and every problem is said at once (one :class:`InputError`): each
    file exists (:func:`input_file`), and a codebook or retest belongs to an instrument that has a
    people's file.

    Example:
        >>> people = human_data({"iri": "iri_briganti2018_keyed:keyed"}, retests={"iri": "iri_briganti2018_keyed:keyed"})
        >>> people["iri"].keyed, people["iri"].retest.name, people["iri"].retest_keyed
        (True, 'iri_briganti2018_keyed.csv', True)
    """
    problems: list[Problem] = []

    def checked(path: str | Path, option: str) -> Path | None:
        try:
            return input_file(path, option)
        except InputError as exc:
            problems.extend(exc.problems)
            return None

    files = {i: (checked(path, "--human"), keyed) for i, (path, keyed) in
             ((i, _keyed(spec)) for i, spec in human.items())}
    books = {i: checked(path, "--codebook") for i, path in (codebooks or {}).items()}
    again = {i: (checked(path, "--retest"), keyed) for i, (path, keyed) in
             ((i, _keyed(spec)) for i, spec in (retests or {}).items())}
    given = ", ".join(sorted(human)) or "none"
    if stray := sorted(set(books) - set(human)):
        problems.append(Problem(", ".join(stray), None, None, "", "--codebook INSTRUMENT=FILE describes the --human "
                                f"file of that instrument; no --human file is given for it (given: {given})"))
    if stray := sorted(set(again) - set(human)):
        problems.append(Problem(", ".join(stray), None, None, "", "--retest INSTRUMENT=FILE is a second "
                                "administration of the people of that instrument's --human file; no --human file "
                                f"is given for it (given: {given})"))
    if problems:
        raise InputError(problems)
    return {i: HumanData(i, file, keyed, books.get(i), again.get(i, (None, False))[0], again.get(i, (None, False))[1])
            for i, (file, keyed) in files.items()}


def read_human_change_csv(path: str | Path) -> pd.DataFrame:
    """Humans' before and after scores: a CSV with columns ``respondent_id, emotion, situation_id
    (may be empty), subscale, before, after``, one row per person × situation × subscale.

    Every problem is reported as ``file:line:column: field: what is wrong`` in one
    :class:`~psyq.engine.files.errors.InputError` (the command line exits with code 2). Returns the columns
    above with ``before``, ``after`` as floats and ``change = after − before``.

    Example
    -------
    >>> humans = read_human_change_csv("tests/data/human_change.csv")
    >>> humans[["respondent_id", "subscale", "change"]].head(2).to_dict("records")
    [{'respondent_id': 'h1', 'subscale': 'PA', 'change': -3.0}, {'respondent_id': 'h1', 'subscale': 'NA', 'change': 5.0}]
    """
    table = read_csv_table(path, required=HUMAN_CHANGE_COLUMNS)
    where = {name: table.header.index(name) for name in HUMAN_CHANGE_COLUMNS}
    problems, records = [], []
    for line, cells in zip(table.lines, table.rows):
        record: dict = {}
        for name in HUMAN_CHANGE_COLUMNS:
            text = cells[where[name]]
            column = where[name] + 1
            if name in ("before", "after"):
                try:
                    value = float(text)
                    if not math.isfinite(value):
                        raise ValueError
                except ValueError:
                    problems.append(Problem(table.file, line, column, name,
                                            f"must be a number, not {text!r}" if text else "is empty; a number is needed"))
                    value = math.nan
                record[name] = value
            else:
                if not text and name != "situation_id":
                    problems.append(Problem(table.file, line, column, name, "is empty"))
                record[name] = text
        records.append(record)
    if problems:
        raise InputError(problems)
    if not records:
        raise InputError.single(table.file, "no data rows (only the header)", line=1)
    frame = pd.DataFrame(records, columns=HUMAN_CHANGE_COLUMNS)
    frame["change"] = frame["after"] - frame["before"]
    return frame
