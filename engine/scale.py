"""Response scales: the options a respondent chooses from, and the checks every scale must pass.

Shared by every item kind that asks for a number (on the instrument's `scale`, or on a scale of
its own such as `emotion_scale`), so it lives apart from the instrument and the kinds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import Field

from .errors import Problem
from .fields import StrictModel, Text
from .yamlfile import YamlDocument

# Scale values are stored as SQLite integers (64-bit) and summed over items; no response scale
# needs values beyond this, and a bound here keeps `validate` from passing what a run cannot store.
MAX_SCALE_VALUE = 1_000_000


class Option(StrictModel):
    """One response option: the value scored, an optional code the respondent may give
    (e.g. the letter 'A'), and an optional label (required on the two end points)."""

    value: int = Field(ge=-MAX_SCALE_VALUE, le=MAX_SCALE_VALUE)
    code: Text | None = None
    label: Text | None = None


def duplicates(values: list[Any]) -> set[Any]:
    """Values that occur more than once.

    Example:
        >>> sorted(duplicates([1, 2, 2, 3, 3]))
        [2, 3]
    """
    return {v for v, count in Counter(values).items() if count > 1}


def check_scale(scale: list[Option], name: str, doc: YamlDocument) -> list[Problem]:
    """Consecutive integers (so that reverse keying, min + max - x, stays on the scale),
    unique codes and labels, labelled end points."""
    problems: list[Problem] = []

    def bad(path: tuple, message: str) -> None:
        problems.append(doc.problem(path, message))

    if not scale:
        return problems
    if len(scale) < 2:
        bad((name,), "needs at least 2 options")
        return problems
    inst_scale = scale
    values = [o.value for o in inst_scale]
    for i, option in enumerate(inst_scale):
        if i and option.value != inst_scale[i - 1].value + 1:
            bad((name, i, "value"),
                f"scale values must be consecutive whole numbers in ascending order; "
                f"{option.value} follows {inst_scale[i - 1].value}")
    for key in ("code", "label"):
        repeated = duplicates([getattr(o, key) for o in inst_scale if getattr(o, key) is not None])
        for i, option in enumerate(inst_scale):
            if getattr(option, key) in repeated:
                bad((name, i, key), f"{key} {getattr(option, key)!r} is used by more than one option")
    if len(set(values)) == len(values):
        for end in (0, len(inst_scale) - 1):
            if inst_scale[end].label is None:
                bad((name, end, "label"), "the end points of the scale need a label")
    return problems
