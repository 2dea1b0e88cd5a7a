"""What the personas were shown, as people are to be shown it: the part every format shares.

:func:`questionnaire_from` reads a study (or one instrument) and says, once, what a person is
asked: each instrument's instructions and item texts as the study sends them, the options as the
prompt lists them (``A = Does not describe me well``, ``B`` … — :func:`~psyq.engine.trials.prompts.option_lines`,
the very lines a persona reads) in the order the protocol presents them (as written, reversed, or
both when the study counterbalances: each person then sees one order, recorded in the data), one
item per screen (``presentation: per_item``) or all on one page (``whole_instrument``: a matrix,
each statement numbered by its id as in the prompt), in the item order of the protocol (fixed, or
shuffled per person and recorded), and the cohort's attributes as demographic questions with the
same categories (a sampled cohort's categories as its file lists them, else the values its
personas have), so that ``relations`` and matching by group work on people's data.

What a format cannot do as the study does is said, never done otherwise in silence: every
choice made for people is a note (:attr:`Questionnaire.notes`), which the command prints.

An instrument whose licensed item texts are not shipped (BES, PANAS) is refused, as ``psyq run``
refuses it, until the user supplies the texts (its ``item_texts`` file).

Each item's answers go to one column, ``<instrument>_<item>`` in lower case with every character
other than a letter, digit or ``_`` as ``_`` (:func:`answer_column`): REDCap allows only such
field names, and one rule for every format keeps one codebook shape.

Example:
    >>> asked = questionnaire_from("quickstart")
    >>> part = asked.parts[0]
    >>> part.instrument.id, len(part.items), part.option_orders, part.matrix
    ('iri', 28, ('as_written', 'reversed'), False)
    >>> [c.label for c in part.choices_in("reversed")][:2]
    ['E = Describes me very well', 'D']
    >>> [(d.name, d.categories[:2] if d.categories else d.whole_numbers) for d in asked.demographics][:2]
    [('gender', ('female', 'male')), ('age', (18, 80))]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psyq.engine.design.instrument import Instrument, load_instrument, missing_texts_message
from psyq.engine.design.cohort_file import CohortFile
from psyq.engine.design.persona import Cohort
from psyq.engine.design.study import Study, load_study, require_item_texts
from psyq.engine.files.errors import InputError
from psyq.engine.files.shipped import locate
from psyq.engine.files.validation import parse_document
from psyq.engine.files.yamlfile import load_yaml
from psyq.engine.trials.prompts import option_lines, ordered_options, uses_codes

ORDERS = ("as_written", "reversed")
"""The two orders of the options (:func:`psyq.engine.trials.prompts.ordered_options`)."""

RESPONDENT_COLUMN = "respondent_id"
ORDER_COLUMN = "option_order"
"""The data column saying which order of the options a person saw (``as_written`` or ``reversed``)."""


@dataclass(frozen=True)
class Choice:
    """One option as shown: its value on the scale and the line the prompt gives it."""

    value: int
    label: str


@dataclass(frozen=True)
class AskedItem:
    """One rating item as asked: its id, its text, its data column and its keying."""

    id: str
    text: str
    column: str
    reverse: bool


@dataclass(frozen=True)
class Part:
    """One instrument as people are asked it."""

    instrument: Instrument
    instructions: str
    items: tuple[AskedItem, ...]
    choices: tuple[Choice, ...]          # as written: ascending values
    option_orders: tuple[str, ...]       # one order, or both when the study counterbalances
    item_order: str                      # fixed | shuffled (per person, recorded)
    matrix: bool                         # all items on one page (presentation: whole_instrument)

    def choices_in(self, order: str) -> tuple[Choice, ...]:
        """The options in `order` (``as_written`` or ``reversed``)."""
        return self.choices[::-1] if order == "reversed" else self.choices

    @property
    def item_order_column(self) -> str:
        """The data column holding the order of the items a person saw (when shuffled)."""
        return f"{self.instrument.id.lower()}_item_order"

    def prompt(self, item: AskedItem) -> str:
        """The statement as shown: its text; on a matrix numbered by its id, as the prompt of a
        whole instrument numbers it (:func:`psyq.engine.trials.prompts.instrument_messages`)."""
        return f"{item.id}. {item.text}" if self.matrix else item.text


@dataclass(frozen=True)
class Demographic:
    """A cohort attribute asked of people: its categories, or whole numbers within a range."""

    name: str
    categories: tuple[str, ...] | None = None
    whole_numbers: tuple[int, int] | None = None     # (low, high) of a numeric attribute
    source: str = ""                                  # where the categories come from, for notes

    @property
    def question(self) -> str:
        """The question's wording: the attribute's name in words (``year_of_birth`` -> "Year of birth")."""
        words = self.name.replace("_", " ").strip()
        return words[:1].upper() + words[1:]


@dataclass(frozen=True)
class Questionnaire:
    """What people are asked: the instruments as the study asks them, then the demographics."""

    id: str
    source: Path
    parts: tuple[Part, ...]
    demographics: tuple[Demographic, ...]
    option_orders: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def counterbalanced(self) -> bool:
        return len(self.option_orders) > 1


def answer_column(instrument_id: str, item_id: str) -> str:
    """The data column of an item's answers, the same in every format (REDCap's rule for field
    names: lower-case letters, digits and ``_``, starting with a letter).

    Example:
        >>> answer_column("iri", "1"), answer_column("My-Scale", "Q1.a")
        ('iri_1', 'my_scale_q1_a')
    """
    name = re.sub(r"[^a-z0-9_]", "_", f"{instrument_id}_{item_id}".lower())
    return name if name[:1].isalpha() else f"q_{name}"


def questionnaire_from(source: str | Path) -> Questionnaire:
    """What people are asked, read from a study or an instrument (a file, or a shipped name).

    An instrument alone is asked as a study of default protocol asks it: one item per screen,
    options as written, items in their order, no demographics.

    Raises :class:`InputError` for a file that is neither, an instrument without its item texts,
    items that are not ratings on a scale, and a study with stages.
    """
    path = locate(source)
    doc = load_yaml(path)
    kind = doc.data.get("psyq") if isinstance(doc.data, dict) else None
    if kind == "study/1":
        return _from_study(load_study(path))
    if kind == "instrument/1":
        instrument = load_instrument(path)
        if message := missing_texts_message(instrument, path):
            raise InputError.single(str(path), f"cannot ask people: {message}")
        _check_kinds(instrument, str(path))
        part = _part(instrument, "per_item", "fixed", ("as_written",))
        return Questionnaire(instrument.id, path, (part,), (), ("as_written",))
    raise InputError.single(str(path), f"not a study (psyq: study/1) or an instrument (psyq: instrument/1): "
                                       f"its `psyq:` is {kind!r}", line=1)


def _check_kinds(instrument: Instrument, file: str) -> None:
    other = sorted({i.kind for i in instrument.items if i.kind != "rating"})
    if other or not instrument.rating_items:
        raise InputError.single(file, f"instrument '{instrument.id}' has {', '.join(other) or 'no rating'} items; "
                                      "psyq questionnaire asks rating items on a scale (free-text kinds are not "
                                      "written for survey platforms yet)")


def _from_study(study: Study) -> Questionnaire:
    require_item_texts(study)      # the licensed texts, as `psyq run` requires them
    if study.spec.stages is not None:
        raise InputError.single(str(study.path), "a study with `stages:` (measure, imagine a situation, measure "
                                                 "again) cannot be written as one questionnaire yet; write the "
                                                 "instrument alone (psyq questionnaire INSTRUMENT)")
    protocol = study.protocol
    for instrument in study.instruments:
        _check_kinds(instrument, str(study.path))
    orders = ORDERS if protocol.option_order == "counterbalanced" else (protocol.option_order,)
    parts = tuple(_part(i, protocol.presentation, protocol.item_order, orders) for i in study.instruments)
    demographics, notes = _demographics(study.cohort, study.cohort_path)
    if protocol.repeats > 1:
        notes.append(f"the study asks each persona {protocol.repeats} times (repeats); people are asked once")
    columns = [item.column for part in parts for item in part.items]
    clash = sorted({c for c in columns if columns.count(c) > 1} | {d.name for d in demographics if d.name in columns})
    if clash:
        raise InputError.single(str(study.path), "two questions would save to the same data column(s): "
                                                 + ", ".join(clash))
    return Questionnaire(study.id, study.path, parts, tuple(demographics), orders, tuple(notes))


def _part(instrument: Instrument, presentation: str, item_order: str, orders: tuple[str, ...]) -> Part:
    codes = uses_codes(instrument)
    choices = tuple(Choice(o.value, option_lines([o], codes)) for o in ordered_options(instrument, "as_written"))
    items = tuple(AskedItem(i.id, i.text or "", answer_column(instrument.id, i.id), i.reverse)
                  for i in instrument.rating_items)
    return Part(instrument, instrument.instructions.strip(), items, choices, orders, item_order,
                presentation == "whole_instrument")


def _demographics(cohort: Cohort, cohort_path: Path) -> tuple[list[Demographic], list[str]]:
    """The cohort's attributes as questions: a sampled cohort's categories and ranges as its file
    says them; otherwise the values the personas have (all whole numbers: a number within their
    range; else their categories, in order of first appearance), with a note saying so."""
    notes: list[str] = []
    sampled: dict[str, Any] = {}
    spec = parse_document(load_yaml(cohort_path), CohortFile)
    if spec.sample is not None:
        sampled = dict(spec.sample.attributes)
    names = list(dict.fromkeys(name for p in cohort.personas for name in p.attributes))
    out = []
    for name in names:
        values = [p.attributes[name] for p in cohort.personas if name in p.attributes]
        if name in sampled and sampled[name].categories is not None:
            out.append(Demographic(name, tuple(str(c) for c in sampled[name].categories), source="the cohort's sample"))
        elif name in sampled and sampled[name].range is not None:
            low, high = sampled[name].range
            out.append(Demographic(name, whole_numbers=(low, high), source="the cohort's sample"))
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            out.append(Demographic(name, whole_numbers=(min(values), max(values)), source="the personas' values"))
            notes.append(f"demographic '{name}': a whole number; the range {min(values)}-{max(values)} is the "
                         "personas' (the cohort file gives none)")
        else:
            categories = tuple(dict.fromkeys(str(v) for v in values))
            out.append(Demographic(name, categories, source="the personas' values"))
            notes.append(f"demographic '{name}': the categories are the {len(categories)} values the personas have "
                         f"({', '.join(categories[:6])}{', …' if len(categories) > 6 else ''}); add any people may "
                         "need")
    return out, notes
