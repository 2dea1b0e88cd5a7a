"""Personas and cohorts: who answers the questionnaire.

A :class:`Persona` is an id, named attributes (age, gender, ...) and an optional backstory; it
becomes the model's system prompt through a template (`persona_prompt.py`). A :class:`Cohort` is
the list of personas a study administers an instrument to. Here: the two models, what an
attribute name and a persona id may be, and sampling personas reproducibly from attribute
distributions (a cohort file's `sample:`).

The cohort file (format `cohort/1`, documented with an annotated example in
``personas/README.md``) is read and checked by `cohort_file.py`; its personas are written by hand,
sampled here, read from a CSV file (`cohort_csv.py`), or taken from the rows of a human data file
(`from_data:`, `cohort_data.py`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field

from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.yamlfile import FieldPath

if TYPE_CHECKING:   # numpy is imported where personas are sampled: a hand-written or CSV cohort needs none
    import numpy as np

# Placeholders every template may use besides the attribute names; an attribute may not take
# one of these names, or `{id}` would be ambiguous.
FIXED_PLACEHOLDERS = ("id", "backstory", "attributes")
ATTRIBUTE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

# Range attributes are drawn as floor(u * n) from one 53-bit uniform u; far below 2**53 values
# the bias is nil, and no attribute a persona describes needs more.
MAX_RANGE_VALUES = 2**31
# Range ends are drawn as 64-bit integers; far beyond any age or income, and refused by
# `validate` rather than overflowing when the cohort is sampled.
MAX_RANGE_END = 2**53
# A sample is drawn whole in memory (a table of uniforms, then personas) before the run plans
# its trials; far more personas than any study administers, and refused before any allocation.
MAX_SAMPLE_SIZE = 100_000


def _scalar(value: Any) -> Any:
    # One plain message instead of pydantic's four (one per member of the union).
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number, not {value}")
    if isinstance(value, (str, int, float, bool)):
        return value
    shown = "empty" if value is None else ("a list" if isinstance(value, list) else
                                           "a mapping" if isinstance(value, dict) else repr(value))
    raise ValueError(f"must be text, a number or true/false, not {shown}")


AttributeValue = Annotated[str | int | float | bool, BeforeValidator(_scalar)]
StrictInt = Annotated[int, Field(strict=True)]  # strict: YAML `true` is not the number 1


class Persona(StrictModel):
    """One simulated respondent: an id, attributes in the order written, an optional backstory.

    Example:
        >>> Persona(id="p01", attributes={"age": 34, "gender": "female"}).attributes["age"]
        34
    """

    id: Id
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    backstory: Text | None = None


BASELINE = Persona(id="baseline")
"""The model answering as itself: no attributes and no system prompt (see `include_baseline`)."""


@dataclass(frozen=True)
class Cohort:
    """The personas of one cohort file, with the template that turns each into a system prompt."""

    id: str
    personas: tuple[Persona, ...]
    template: str
    source: str
    # A cohort drawn from a human data file (`from_data:`, engine/design/cohort_data.py): what was
    # drawn (rows, weights, mode, seed, the file's sha256, rows skipped and why), recorded in the
    # run's manifest as cohort.from_data; None for the other sources.
    provenance: dict[str, Any] | None = field(default=None, hash=False)
    # Files besides the cohort file its personas were read from (the data file and its codebook):
    # their content is part of the run id (Study.file_hashes).
    files: tuple[Path, ...] = ()


def check_attribute_name(name: str) -> str | None:
    """Why `name` cannot be an attribute name, or None if it can.

    Example:
        >>> check_attribute_name("first-name")
        "attribute name 'first-name' cannot be a template placeholder: use letters, digits and '_', starting with a letter"
    """
    if name in FIXED_PLACEHOLDERS:
        return f"'{name}' is reserved (it is the placeholder {{{name}}}); name the attribute otherwise"
    if not ATTRIBUTE_NAME.match(name):
        return (f"attribute name '{name}' cannot be a template placeholder: use letters, digits "
                "and '_', starting with a letter")
    return None


def check_persona_id(persona_id: str) -> str | None:
    """Why `persona_id` cannot be used by a persona of a cohort, or None if it can."""
    if persona_id == BASELINE.id:
        return "'baseline' is reserved for the model answering as itself (use include_baseline: true)"
    return None


# --- sampling --------------------------------------------------------------------------------


class AttributeSpec(StrictModel):
    """How one attribute is sampled: weighted `categories` or a whole-number `range` (one of them)."""

    categories: dict[AttributeValue, Annotated[float, Field(strict=True)]] | None = None
    range: list[StrictInt] | None = None


class SampleSpec(StrictModel):
    """A reproducible sample: `size` personas drawn with `seed`, ids `id_prefix` + number."""

    size: Annotated[int, Field(strict=True, ge=1, le=MAX_SAMPLE_SIZE)]
    seed: Annotated[int, Field(strict=True, ge=0)]
    id_prefix: Id
    attributes: dict[str, AttributeSpec] = Field(min_length=1)


def check_sample(spec: SampleSpec) -> list[tuple[FieldPath, str]]:
    """Meaning problems of a sample spec, each with its path below `sample`.

    Example:
        >>> check_sample(SampleSpec(size=3, seed=1, id_prefix="p", attributes={"age": {"range": [80, 18]}}))
        [(('attributes', 'age', 'range'), 'the range is [low, high] with low ≤ high, not [80, 18]')]
    """
    out: list[tuple[FieldPath, str]] = []
    for name, attr in spec.attributes.items():
        path: FieldPath = ("attributes", name)
        if message := check_attribute_name(name):
            out.append((path, message))
        if (attr.categories is None) == (attr.range is None):
            out.append((path, "give exactly one of `categories` (weighted values) or `range` ([low, high])"))
        if attr.categories is not None:
            if not attr.categories:
                out.append((path + ("categories",), "needs at least 1 category"))
            for value, weight in attr.categories.items():
                if not (math.isfinite(weight) and weight > 0):
                    # The key as text: the position index knows keys as written.
                    out.append((path + ("categories", str(value)),
                                f"the weight of {value!r} must be a number greater than 0, not {weight:g}"))
        if attr.range is not None:
            if len(attr.range) != 2:
                out.append((path + ("range",), f"the range is [low, high]: two whole numbers, "
                                               f"not {len(attr.range)}"))
            elif any(abs(end) > MAX_RANGE_END for end in attr.range):
                out.append((path + ("range",), f"the range ends must be whole numbers between "
                                               f"-{MAX_RANGE_END} and {MAX_RANGE_END}"))
            elif attr.range[0] > attr.range[1]:
                out.append((path + ("range",), f"the range is [low, high] with low ≤ high, not {attr.range}"))
            elif attr.range[1] - attr.range[0] >= MAX_RANGE_VALUES:
                out.append((path + ("range",), f"the range is too wide to sample evenly "
                                               f"(at most {MAX_RANGE_VALUES} values)"))
    return out


def _draw(attr: AttributeSpec, u: np.ndarray) -> list[Any]:
    """Turn uniforms in [0, 1) into values of one attribute (inverse of its distribution)."""
    import numpy as np

    if attr.categories is not None:
        values = list(attr.categories)
        cdf = np.cumsum(np.array(list(attr.categories.values()), dtype=float))
        cdf /= cdf[-1]
        cdf[-1] = 1.0  # rounding must not leave a sliver above the last category
        return [values[k] for k in np.searchsorted(cdf, u, side="right")]
    assert attr.range is not None
    low, high = attr.range
    drawn = low + np.floor(u * (high - low + 1)).astype(np.int64)
    return np.minimum(drawn, high).tolist()


def sample_personas(spec: SampleSpec, size: int, seed: int) -> list[Persona]:
    """Draw `size` personas from `spec`'s attribute distributions, reproducibly from `seed`.

    `size` and `seed` are arguments (a cohort file passes its own) so that the same spec can be
    drawn larger or again. One ``Generator(PCG64(seed))`` fills a table of uniforms persona by
    persona, one column per attribute in the order written; so the result depends only on the
    seed and the file, and persona *i* is the same whatever `size` (a larger sample extends a
    smaller one, though ids widen with the width of `size`).

    Example:
        >>> spec = SampleSpec(size=12, seed=7, id_prefix="adult", attributes={"age": {"range": [18, 80]}})
        >>> [p.id for p in sample_personas(spec, spec.size, spec.seed)][:2]
        ['adult01', 'adult02']
    """
    if size < 1 or seed < 0:
        raise ValueError(f"size must be at least 1 and seed at least 0, not {size} and {seed}")
    if problems := check_sample(spec):
        raise ValueError("; ".join(f"{'.'.join(map(str, path))}: {msg}" for path, msg in problems))
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(seed))
    uniforms = rng.random((size, len(spec.attributes)))
    columns = {name: _draw(attr, uniforms[:, j]) for j, (name, attr) in enumerate(spec.attributes.items())}
    width = len(str(size))
    return [Persona(id=f"{spec.id_prefix}{i + 1:0{width}d}",
                    attributes={name: values[i] for name, values in columns.items()})
            for i in range(size)]

