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
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag, create_model

from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text, format_json_schema, number_to_text
from psyq.engine.kinds import all_kinds, get_kind, item_kinds, score_kinds
from psyq.engine.kinds.rating import RATING_SCORES, Item
from psyq.engine.trials.scale import Option, check_scale, duplicates
from psyq.engine.files.notices import notify
from psyq.engine.files.validation import load_document, raise_problems
from psyq.engine.files.yamlfile import YamlDocument

FORMAT = "instrument/1"


def _item_kind(value: Any) -> str:
    if isinstance(value, dict):
        return value.get("kind", "rating")
    return getattr(value, "kind", "rating")


# An item is told apart by `kind`; files without `kind` hold rating items (the first kind). The union
# holds one model per registered kind (engine/kinds/), in registration order.
AnyItem = Annotated[
    Union[tuple(Annotated[kind.model, Tag(kind.name)] for kind in all_kinds())],   # type: ignore[misc]
    Discriminator(_item_kind),
]
ITEM_KINDS = item_kinds()
SCORE_KINDS = score_kinds()
ScoreRule = Literal[tuple(SCORE_KINDS)]   # type: ignore[valid-type]


class Subscale(StrictModel):
    """A score computed from the items that list this subscale.

    `score: sum` is prorated when items are missing (mean of answered items × number of items),
    `score: mean` is the mean of answered items; either way no score is given when fewer than
    `min_answered` items were answered (default: all of them). The other rules belong to other
    kinds of item (`leas_self`, `leas_other`, `leas_total`: sums of LEAS levels; `ea_profile`:
    profile accuracy); see ``instruments/README.md``.

    `composite: true` marks a score made of other subscales' items (a total such as TAS-20's or
    BES's): it is scored like any subscale but is not a factor of its own, so factor models use
    :attr:`Instrument.first_order_subscales` and intercorrelations flag it as part–whole. Left
    out, a rating subscale whose items are exactly those of two or more other subscales is taken
    as composite, with a notice (:func:`inferred_composites`); `composite: false` keeps it a
    first-order subscale.
    """

    id: Id
    name: Text
    score: ScoreRule = "sum"
    min_answered: int | None = Field(default=None, ge=1)
    composite: bool | None = None


class NormScore(StrictModel):
    """Published mean and standard deviation of one subscale in one group."""

    mean: float
    sd: float = Field(gt=0)


class Range(StrictModel):
    """A numeric range of an attribute, both ends included (e.g. ``{min: 18, max: 25}``);
    either end may be left out."""

    min: float | None = None
    max: float | None = None


Scalar = Union[str, int, float, bool]
Condition = Union[Scalar, list[Scalar], Range]
"""What a `where` item asks of one attribute: a value, any of a list of values, or a range."""


class NormGroup(StrictModel):
    """A group of a norm sample (e.g. women), matched to personas through `where`.

    Each `where` item names an attribute and a value (``gender: female``), a list of values of
    which any matches (``gender: [female, woman]``) or an inclusive numeric range
    (``age: {min: 18, max: 25}``).
    """

    id: Id
    where: dict[str, Condition] = Field(default_factory=dict)
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
    # How the numbers were checked: read in the cited table (source-table), recomputed from the
    # raw data (raw-data), read only in a secondary source (secondary-source), or not at all.
    verified: Literal["source-table", "raw-data", "secondary-source", "unverified"]
    verification: Text
    groups: list[NormGroup] = Field(min_length=1)

    @property
    def trusted(self) -> bool:
        """True when the numbers were read in the source table or recomputed from raw data."""
        return self.verified in TRUSTED


TRUSTED = ("source-table", "raw-data")
"""Values of `NormSample.verified` that need no flag in a report."""


class ItemTexts(StrictModel):
    """Where the texts of items shipped without `text` come from: a CSV the user writes
    (columns ``item_id,text``) at `file` (``~`` is the home folder; a relative path is relative
    to the instrument file), and how a licensed user obtains them (`how`)."""

    file: Text
    how: Text


class _Head(StrictModel):
    """The instrument fields every kind of item shares, up to the response scale."""

    psyq: Literal["instrument/1"]
    id: Id
    name: Text
    version: Annotated[Text, BeforeValidator(number_to_text, json_schema_input_type=str | int)]
    # published: a published instrument; psyq: written by the psyq authors (never normed);
    # user: materials of the study's own authors (e.g. their targets' stories and self-reports)
    content_source: Literal["published", "psyq", "user"]
    citations: dict[Id, Text] = Field(min_length=1)
    terms: Text
    instructions: Text
    scale: list[Option] = Field(default_factory=list)      # required when there are rating items


# Instrument-level fields that belong to one kind of item (ItemKind.instrument_fields, e.g. the
# emotions rated at each stop of a story) come after the shared head and before `items`, where
# files have always had them; a kind's check_instrument says when they are required.
_WithKindFields = create_model("Instrument", __base__=_Head, **{  # type: ignore[call-overload]
    name: spec for kind in all_kinds() for name, spec in kind.instrument_fields.items()})


class Instrument(_WithKindFields):  # type: ignore[valid-type,misc]
    """A questionnaire: scale, items, subscales and norms (see ``instruments/README.md``)."""

    items: list[AnyItem] = Field(min_length=1)
    item_texts: ItemTexts | None = None                    # licensed texts supplied by the user
    subscales: list[Subscale] = Field(min_length=1)
    norms: list[NormSample] = Field(default_factory=list)

    def __str__(self) -> str:
        """One line for people (the full model stays in ``repr``).

        Example:
            >>> print(load_instrument("iri"))
            Interpersonal Reactivity Index (iri, version 1980): 28 items on 0–4, subscales PT, FS, EC, PD; \
norm samples briganti2018 (raw-data), davis1980 (unverified)
        """
        scale = f" on {self.scale_min}–{self.scale_max}" if self.scale else ""
        norms = ", ".join(f"{n.id} ({n.verified})" for n in self.norms) or "none"
        return (f"{self.name} ({self.id}, version {self.version}): {len(self.items)} items{scale}, subscales "
                f"{', '.join(s.id for s in self.subscales)}; norm samples {norms}")

    @property
    def items_without_text(self) -> list[str]:
        """Ids of rating items that have no text (their texts are user-supplied and not found)."""
        return [i.id for i in self.items if isinstance(i, Item) and i.text is None]

    @property
    def scale_min(self) -> int:
        return min(o.value for o in self.scale)

    @property
    def scale_max(self) -> int:
        return max(o.value for o in self.scale)

    @property
    def rating_items(self) -> list[Item]:
        """The items answered on `scale` (all items of a classic questionnaire)."""
        return [i for i in self.items if isinstance(i, Item)]

    @property
    def rating_subscales(self) -> list["Subscale"]:
        """Subscales scored as sums or means of rating items."""
        return [s for s in self.subscales if s.score in RATING_SCORES]

    @property
    def composite_subscale_ids(self) -> list[str]:
        """Ids of the composite subscales: marked `composite: true`, or rating subscales left
        unmarked whose items are exactly those of two or more other subscales
        (:func:`inferred_composites`)."""
        inferred = set(inferred_composites(self))
        return [s.id for s in self.subscales if s.composite or s.id in inferred]

    @property
    def first_order_subscales(self) -> list["Subscale"]:
        """Rating subscales that are not composite: the factors of a factor model.

        Example:
            >>> [s.id for s in load_instrument("bes").first_order_subscales]
            ['cognitive', 'affective']
        """
        composite = set(self.composite_subscale_ids)
        return [s for s in self.rating_subscales if s.id not in composite]

    def item(self, item_id: str) -> Item:
        """The item with id `item_id` (KeyError if none)."""
        for item in self.items:
            if item.id == item_id:
                return item
        raise KeyError(item_id)

    def subscale_items(self, subscale_id: str) -> list[Item]:
        """Items that belong to `subscale_id`, in instrument order.

        Example:
            >>> [i.id for i in load_instrument("iri").subscale_items("PT")]
            ['3', '8', '11', '15', '21', '25', '28']
        """
        return [item for item in self.items if subscale_id in item.subscales]

    def min_answered(self, subscale: Subscale) -> int:
        """Fewest answered items for `subscale` to get a score."""
        return subscale.min_answered or len(self.subscale_items(subscale.id))


def inferred_composites(inst: Instrument) -> dict[str, list[str]]:
    """Rating subscales without `composite:` whose items are exactly the union of the items of
    two or more other rating subscales (each a proper part of it): subscale id -> those parts.

    Example:
        >>> mini = load_instrument("tests/data/mini_1to7.yaml")    # Z = the items of X and Y, marked composite
        >>> inferred_composites(mini), mini.composite_subscale_ids
        ({}, ['Z'])
        >>> unmarked = mini.model_copy(update={"subscales": [s.model_copy(update={"composite": None}) for s in mini.subscales]})
        >>> inferred_composites(unmarked), [s.id for s in unmarked.first_order_subscales]
        ({'Z': ['X', 'Y']}, ['X', 'Y'])
    """
    members = {s.id: {i.id for i in inst.items if s.id in i.subscales} for s in inst.rating_subscales}
    out = {}
    for sub in inst.rating_subscales:
        if sub.composite is not None or not members[sub.id]:
            continue
        parts = [t for t, items in members.items() if t != sub.id and items and items < members[sub.id]]
        if len(parts) >= 2 and set().union(*(members[t] for t in parts)) == members[sub.id]:
            out[sub.id] = parts
    return out


def composite_notices(inst: Instrument, doc: YamlDocument) -> list[Problem]:
    """What to tell the author about subscales taken as composite without `composite: true`."""
    index = {s.id: k for k, s in enumerate(inst.subscales)}
    return [doc.problem(("subscales", index[sid], "id"),
                        f"subscale '{sid}' holds exactly the items of {', '.join(parts)}: taken as a composite (a "
                        "total), so it is not fitted as a factor of its own and its correlations with its parts are "
                        "flagged part–whole; write `composite: true` on it to say so (or `composite: false` to keep "
                        "it a first-order subscale)")
            for sid, parts in inferred_composites(inst).items()]


def check_instrument(inst: Instrument, doc: YamlDocument) -> list[Problem]:
    """Meaning checks the schema cannot express; returns every problem found."""
    problems: list[Problem] = []

    def bad(path: tuple, message: str) -> None:
        problems.append(doc.problem(path, message))

    problems.extend(check_scale(inst.scale, "scale", doc))
    present = {item.kind for item in inst.items}
    for kind in all_kinds():          # each kind checks what is particular to it
        if kind.name in present:
            problems.extend(kind.check_instrument(inst, doc))
    problems.extend(_check_ids_and_members(inst, doc))
    problems.extend(_check_norms(inst, doc))
    return problems




def _check_ids_and_members(inst: Instrument, doc: YamlDocument) -> list[Problem]:
    problems: list[Problem] = []

    def bad(path: tuple, message: str) -> None:
        problems.append(doc.problem(path, message))

    # Ids are unique; memberships name defined subscales of the item's kind.
    # Sets and counts computed once: a check inside the loop would make 12,000 items quadratic.
    subscale_ids = [s.id for s in inst.subscales]
    repeated_items, repeated_subscales = duplicates([x.id for x in inst.items]), duplicates(subscale_ids)
    known_subscales = set(subscale_ids)
    for i in [i for i, item in enumerate(inst.items) if item.id in repeated_items]:
        bad(("items", i, "id"), f"item id '{inst.items[i].id}' is used by more than one item")
    for i, sub in enumerate(inst.subscales):
        if sub.id in repeated_subscales:
            bad(("subscales", i, "id"), f"subscale id '{sub.id}' is used by more than one subscale")
    defined = ", ".join(subscale_ids)
    for i, item in enumerate(inst.items):
        for j, sid in enumerate(item.subscales):
            if sid not in known_subscales:
                bad(("items", i, "subscales", j), f"subscale '{sid}' is not defined (defined: {defined})")
            elif item.subscales.index(sid) != j:
                bad(("items", i, "subscales", j), f"subscale '{sid}' is listed twice")
    for i, item in enumerate(inst.items):
        problems.extend(get_kind(item.kind).check_item(inst, doc, i, item))
    kind_of = {s.id: SCORE_KINDS[s.score] for s in inst.subscales}
    for i, item in enumerate(inst.items):
        for j, sid in enumerate(item.subscales):
            if sid in kind_of and kind_of[sid] != item.kind:
                bad(("items", i, "subscales", j), f"subscale '{sid}' scores {kind_of[sid]} items, "
                                                  f"but this is a {item.kind} item")
    members = _member_counts(inst)
    for i, sub in enumerate(inst.subscales):
        n_items = members[sub.id]
        if n_items == 0:
            bad(("subscales", i, "id"), f"subscale '{sub.id}' has no items (no item lists it)")
        elif sub.min_answered is not None and sub.min_answered > n_items:
            bad(("subscales", i, "min_answered"),
                f"min_answered is {sub.min_answered} but subscale '{sub.id}' has only {n_items} items")
    return problems


def _member_counts(inst: Instrument) -> Counter:
    """Number of items listing each subscale (each item once), in one pass over the items."""
    return Counter(sid for item in inst.items for sid in set(item.subscales))


def _check_norms(inst: Instrument, doc: YamlDocument) -> list[Problem]:
    problems: list[Problem] = []
    subscale_ids = [s.id for s in inst.subscales]
    defined = ", ".join(subscale_ids)
    known_subscales, repeated_samples = set(subscale_ids), duplicates([s.id for s in inst.norms])
    members, score_of = _member_counts(inst), {s.id: s.score for s in inst.subscales}

    def bad(path: tuple, message: str) -> None:
        problems.append(doc.problem(path, message))

    # Norms: real samples of published materials, on values the scale can produce.
    if inst.norms and inst.content_source == "psyq":
        bad(("norms",), "norms cannot be attached to content written by psyq: human norms were "
                        "collected on the published materials, not on ours")
    for i, sample in enumerate(inst.norms):
        if sample.id in repeated_samples:
            bad(("norms", i, "id"), f"norm sample id '{sample.id}' is used more than once")
        if sample.citation not in inst.citations:
            bad(("norms", i, "citation"),
                f"citation '{sample.citation}' is not a key of citations ({', '.join(inst.citations)})")
        repeated_groups = duplicates([g.id for g in sample.groups])
        for j, group in enumerate(sample.groups):
            path = ("norms", i, "groups", j)
            if group.id in repeated_groups:
                bad(path + ("id",), f"group id '{group.id}' is used more than once in this sample")
            if group.n > sample.n:
                bad(path + ("n",), f"group n ({group.n}) is larger than the sample's n ({sample.n})")
            for key, condition in group.where.items():
                where = path + ("where", key)
                if isinstance(condition, list) and not condition:
                    bad(where, "an empty list matches nobody; give at least one value")
                if isinstance(condition, Range):
                    if condition.min is None and condition.max is None:
                        bad(where, "a range needs `min`, `max` or both")
                    elif condition.min is not None and condition.max is not None and condition.min > condition.max:
                        bad(where, f"min ({condition.min:g}) is larger than max ({condition.max:g})")
            for sid, stats in group.scores.items():
                if sid not in known_subscales:
                    problems.append(doc.problem(path + ("scores", sid), f"subscale '{sid}' is not defined "
                                                f"(defined: {defined})", at_key=True))
                    continue
                problems.extend(_check_norm_range(inst, doc, path + ("scores", sid), sid, sample.metric, stats,
                                                  members[sid], score_of[sid]))
    return problems


def _check_norm_range(inst: Instrument, doc: YamlDocument, path: tuple, sid: str,
                      metric: str, stats: NormScore, n_items: int, score: str) -> list[Problem]:
    """A mean outside the possible range, or an SD above half of it, betrays a wrong metric.
    `n_items` is the number of items of subscale `sid`, `score` its scoring rule."""
    k = n_items if metric == "sum" else 1
    item_range = get_kind(SCORE_KINDS[score]).score_range(inst, score)
    if item_range is None:
        return []  # e.g. an accuracy correlation, or a broken scale (reported already)
    item_low, item_high = item_range
    low, high = k * item_low, k * item_high
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


def item_texts_path(inst: Instrument, instrument_path: str | Path) -> Path | None:
    """The user's file of item texts that `inst` declares in `item_texts` (None if none).

    Example (the BES declares ``file: ~/psyq/bes_texts.csv``; the IRI ships its texts):
        >>> from psyq.engine.files.shipped import locate
        >>> path = item_texts_path(load_instrument("bes"), locate("bes", "instrument"))
        >>> path == Path("~/psyq/bes_texts.csv").expanduser()
        True
        >>> item_texts_path(load_instrument("iri"), locate("iri", "instrument")) is None
        True
    """
    if inst.item_texts is None:
        return None
    file = Path(inst.item_texts.file).expanduser()
    return file if file.is_absolute() else Path(instrument_path).resolve().parent / file


def _read_item_texts(inst: Instrument, file: Path) -> dict[str, str]:
    """Item texts from the user's CSV (columns item_id, text); every bad row is a problem."""
    import csv

    name = str(file)
    try:
        with file.open(newline="", encoding="utf-8-sig") as handle:   # -sig: a BOM from spreadsheets
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError.single(name, f"cannot read the item texts: {exc}") from None
    if not rows or [c.strip() for c in rows[0][:2]] != ["item_id", "text"]:
        raise InputError.single(name, "the first line must be the header `item_id,text`", line=1)
    ids = {i.id for i in inst.items if isinstance(i, Item)}
    without = set(inst.items_without_text)
    texts: dict[str, str] = {}
    problems: list[Problem] = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        item_id, text = (row + ["", ""])[0].strip(), (row + ["", ""])[1].strip()
        if item_id not in ids:
            problems.append(Problem(name, line, 1, "item_id", f"'{item_id}' is not a rating item of '{inst.id}'"))
        elif item_id not in without:
            problems.append(Problem(name, line, 1, "item_id", f"item '{item_id}' already has its text in the instrument"))
        elif item_id in texts:
            problems.append(Problem(name, line, 1, "item_id", f"item '{item_id}' is given twice"))
        elif not text:
            problems.append(Problem(name, line, None, "text", f"the text of item '{item_id}' is empty"))
        else:
            texts[item_id] = text
    raise_problems(problems)
    return texts


def with_user_texts(inst: Instrument, instrument_path: str | Path) -> Instrument:
    """`inst` with the item texts of the user's `item_texts` file filled in, when the file exists.

    Items whose text is still missing afterwards are listed by
    :attr:`Instrument.items_without_text`; such an instrument can be scored but not administered.
    """
    file = item_texts_path(inst, instrument_path)
    if file is None or not file.exists():
        return inst
    texts = _read_item_texts(inst, file)
    items = [i.model_copy(update={"text": texts[i.id]}) if i.id in texts else i for i in inst.items]
    return inst.model_copy(update={"items": items})


def missing_texts_message(inst: Instrument, instrument_path: str | Path) -> str | None:
    """What to tell a user about items of `inst` that have no text (None when all have one)."""
    missing = inst.items_without_text
    if not missing:
        return None
    file = item_texts_path(inst, instrument_path)
    how = inst.item_texts.how.strip() if inst.item_texts else ""
    return (f"instrument '{inst.id}' has no text for {len(missing)} item(s) ({', '.join(missing)}): its item "
            f"texts are supplied by the user and were not found in {file}. Write that file as a CSV with the "
            f"header item_id,text and one row per item. {how}").strip()


def load_instrument(path: str | Path) -> Instrument:
    """Load and validate an instrument file, given its path or the name of a shipped one.

    Item texts the instrument declares user-supplied (`item_texts`) are read from the user's
    file when it exists; otherwise those items stay without text (see
    :func:`missing_texts_message`): scoring works, administering does not.

    Raises :class:`~psyq.engine.files.errors.InputError` naming file, line, column and field of every problem.

    Example:
        >>> iri = load_instrument("iri")
        >>> iri.scale_min, iri.scale_max, len(iri.items)
        (0, 4, 28)
    """
    inst, doc, path = load_document(path, Instrument, "instrument", check_instrument)
    for notice in composite_notices(inst, doc):
        notify(notice)
    return with_user_texts(inst, path)


def instrument_json_schema() -> dict[str, Any]:
    """The JSON Schema of the instrument format (what ``psyq schema`` prints)."""
    return format_json_schema(Instrument, "psyq instrument (format instrument/1)")
