"""Instruments: questionnaires defined in YAML (format `instrument/1`).

An :class:`Instrument` is the response scale, the items with their keying and subscale
membership, the subscales with their scoring rule, and the norm samples published for it. The
format is documented with an annotated example in ``instruments/README.md``; ``psyq schema``
prints it as a JSON Schema.

Shape is checked by pydantic; meaning (ids that must exist, norm values that must be possible on
the scale, honesty rules) by :func:`check_instrument`. Both report every problem with its file,
line and field.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from .errors import Problem
from .fields import Id, StrictModel, Text, number_to_text
from .validation import parse_document, raise_problems
from .yamlfile import YamlDocument, load_yaml

FORMAT = "instrument/1"


class Option(StrictModel):
    """One response option: the value scored, an optional code the respondent may give
    (e.g. the letter 'A'), and an optional label (required on the two end points)."""

    value: int
    code: Text | None = None
    label: Text | None = None


class Item(StrictModel):
    """A rating item answered on the instrument's scale."""

    id: Id
    text: Text
    reverse: bool = False
    subscales: list[Id] = Field(default_factory=list)
    kind: Literal["rating"] = "rating"


class Subscale(StrictModel):
    """A score computed from the items that list this subscale.

    `score: sum` is prorated when items are missing (mean of answered items × number of items),
    `score: mean` is the mean of answered items; either way no score is given when fewer than
    `min_answered` items were answered (default: all of them).
    """

    id: Id
    name: Text
    score: Literal["sum", "mean"] = "sum"
    min_answered: int | None = Field(default=None, ge=1)


class NormScore(StrictModel):
    """Published mean and standard deviation of one subscale in one group."""

    mean: float
    sd: float = Field(gt=0)


class NormGroup(StrictModel):
    """A group of a norm sample (e.g. women), matched to personas through `where`."""

    id: Id
    where: dict[str, str | int | float | bool] = Field(default_factory=dict)
    n: int = Field(gt=1)
    scores: dict[Id, NormScore] = Field(min_length=1)


class NormSample(StrictModel):
    """A published human sample: its source, population and per-group subscale statistics."""

    id: Id
    citation: Id
    table: Text
    population: Text
    n: int = Field(gt=1)
    metric: Literal["sum", "mean"]
    verification: Text
    groups: list[NormGroup] = Field(min_length=1)


class Instrument(StrictModel):
    """A questionnaire: scale, items, subscales and norms (see ``instruments/README.md``)."""

    psyq: Literal["instrument/1"]
    id: Id
    name: Text
    version: Annotated[Text, BeforeValidator(number_to_text, json_schema_input_type=str | int)]
    content_source: Literal["published", "psyq"]
    citations: dict[Id, Text] = Field(min_length=1)
    terms: Text
    instructions: Text
    scale: list[Option] = Field(min_length=2)
    items: list[Item] = Field(min_length=1)
    subscales: list[Subscale] = Field(min_length=1)
    norms: list[NormSample] = Field(default_factory=list)

    @property
    def scale_min(self) -> int:
        return min(o.value for o in self.scale)

    @property
    def scale_max(self) -> int:
        return max(o.value for o in self.scale)

    def item(self, item_id: str) -> Item:
        """The item with id `item_id` (KeyError if none)."""
        for item in self.items:
            if item.id == item_id:
                return item
        raise KeyError(item_id)

    def subscale_items(self, subscale_id: str) -> list[Item]:
        """Items that belong to `subscale_id`, in instrument order.

        Example:
            >>> [i.id for i in load_instrument("instruments/iri.yaml").subscale_items("PT")]  # doctest: +SKIP
            ['3', '8', '11', '15', '21', '25', '28']
        """
        return [item for item in self.items if subscale_id in item.subscales]

    def min_answered(self, subscale: Subscale) -> int:
        """Fewest answered items for `subscale` to get a score."""
        return subscale.min_answered or len(self.subscale_items(subscale.id))


def _duplicates(values: list[Any]) -> set[Any]:
    return {v for v, count in Counter(values).items() if count > 1}


def check_instrument(inst: Instrument, doc: YamlDocument) -> list[Problem]:
    """Meaning checks the schema cannot express; returns every problem found."""
    problems: list[Problem] = []

    def bad(path: tuple, message: str) -> None:
        problems.append(doc.problem(path, message))

    # The scale: consecutive integers, so that reverse keying (min + max - x) stays on it.
    values = [o.value for o in inst.scale]
    for i, option in enumerate(inst.scale):
        if i and option.value != inst.scale[i - 1].value + 1:
            bad(("scale", i, "value"),
                f"scale values must be consecutive whole numbers in ascending order; "
                f"{option.value} follows {inst.scale[i - 1].value}")
    for key in ("code", "label"):
        seen = [getattr(o, key) for o in inst.scale if getattr(o, key) is not None]
        for i, option in enumerate(inst.scale):
            if getattr(option, key) in _duplicates(seen):
                bad(("scale", i, key), f"{key} {getattr(option, key)!r} is used by more than one option")
    if len(set(values)) == len(values):
        for end in (0, len(inst.scale) - 1):
            if inst.scale[end].label is None:
                bad(("scale", end, "label"), "the end points of the scale need a label")

    # Ids are unique; memberships name defined subscales.
    subscale_ids = [s.id for s in inst.subscales]
    for i in [i for i, item in enumerate(inst.items) if item.id in _duplicates([x.id for x in inst.items])]:
        bad(("items", i, "id"), f"item id '{inst.items[i].id}' is used by more than one item")
    for i, sub in enumerate(inst.subscales):
        if sub.id in _duplicates(subscale_ids):
            bad(("subscales", i, "id"), f"subscale id '{sub.id}' is used by more than one subscale")
    defined = ", ".join(subscale_ids)
    for i, item in enumerate(inst.items):
        for j, sid in enumerate(item.subscales):
            if sid not in subscale_ids:
                bad(("items", i, "subscales", j), f"subscale '{sid}' is not defined (defined: {defined})")
            elif item.subscales.index(sid) != j:
                bad(("items", i, "subscales", j), f"subscale '{sid}' is listed twice")
    for i, sub in enumerate(inst.subscales):
        n_items = len(inst.subscale_items(sub.id))
        if n_items == 0:
            bad(("subscales", i, "id"), f"subscale '{sub.id}' has no items (no item lists it)")
        elif sub.min_answered is not None and sub.min_answered > n_items:
            bad(("subscales", i, "min_answered"),
                f"min_answered is {sub.min_answered} but subscale '{sub.id}' has only {n_items} items")

    # Norms: real samples of published materials, on values the scale can produce.
    if inst.norms and inst.content_source == "psyq":
        bad(("norms",), "norms cannot be attached to content written by psyq: human norms were "
                        "collected on the published materials, not on ours")
    for i, sample in enumerate(inst.norms):
        if sample.id in _duplicates([s.id for s in inst.norms]):
            bad(("norms", i, "id"), f"norm sample id '{sample.id}' is used more than once")
        if sample.citation not in inst.citations:
            bad(("norms", i, "citation"),
                f"citation '{sample.citation}' is not a key of citations ({', '.join(inst.citations)})")
        group_ids = [g.id for g in sample.groups]
        for j, group in enumerate(sample.groups):
            path = ("norms", i, "groups", j)
            if group.id in _duplicates(group_ids):
                bad(path + ("id",), f"group id '{group.id}' is used more than once in this sample")
            if group.n > sample.n:
                bad(path + ("n",), f"group n ({group.n}) is larger than the sample's n ({sample.n})")
            for sid, stats in group.scores.items():
                if sid not in subscale_ids:
                    problems.append(doc.problem(path + ("scores", sid), f"subscale '{sid}' is not defined "
                                                f"(defined: {defined})", at_key=True))
                    continue
                problems.extend(_check_norm_range(inst, doc, path + ("scores", sid), sid, sample.metric, stats))
    return problems


def _check_norm_range(inst: Instrument, doc: YamlDocument, path: tuple, sid: str,
                      metric: str, stats: NormScore) -> list[Problem]:
    """A mean outside the possible range, or an SD above half of it, betrays a wrong metric."""
    k = len(inst.subscale_items(sid)) if metric == "sum" else 1
    low, high = k * inst.scale_min, k * inst.scale_max
    problems = []
    if not low <= stats.mean <= high:
        problems.append(doc.problem(path + ("mean",),
                        f"mean {stats.mean} is impossible on the {metric} metric of '{sid}' "
                        f"({low} to {high}); check `metric` and the scale"))
    if stats.sd > (high - low) / 2:
        problems.append(doc.problem(path + ("sd",),
                        f"sd {stats.sd} is larger than half the range of '{sid}' ({low} to {high}), "
                        f"which no sample can have"))
    return problems


def load_instrument(path: str | Path) -> Instrument:
    """Load and validate an instrument file.

    Raises :class:`~engine.errors.InputError` naming file, line, column and field of every problem.

    Example:
        >>> iri = load_instrument("instruments/iri.yaml")  # doctest: +SKIP
        >>> iri.scale_min, iri.scale_max, len(iri.items)  # doctest: +SKIP
        (0, 4, 28)
    """
    doc = load_yaml(path)
    inst = parse_document(doc, Instrument)
    raise_problems(check_instrument(inst, doc))
    return inst


def instrument_json_schema() -> dict[str, Any]:
    """The JSON Schema of the instrument format (what ``psyq schema`` prints)."""
    schema = Instrument.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "psyq instrument (format instrument/1)"
    return schema
