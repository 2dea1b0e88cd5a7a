"""Response scales: the options a respondent chooses from, and the checks every scale must pass.

Shared by every item kind that asks for a number (on the instrument's `scale`, or on a scale of
its own such as `emotion_scale`), so it lives apart from the instrument and the kinds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import Field

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import StrictModel, Text
from psyq.engine.files.yamlfile import YamlDocument

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


def _listed(values: list[int]) -> str:
    shown = ", ".join(str(v) for v in values[:12])
    return shown + (", ..." if len(values) > 12 else "")


def order_problem(values: list[int]) -> tuple[int, str] | None:
    """Where (the index of the first option out of place) and why `values` is not a scale of
    consecutive whole numbers in ascending order; None when it is. One message for the whole
    list, whatever the number of options out of place.

    Example:
        >>> order_problem([5, 4, 3, 2, 1])[1][:59]
        'the options are listed from the highest value to the lowest'
        >>> order_problem([1, 2, 3]) is None
        True
    """
    first = next((i for i in range(1, len(values)) if values[i] != values[i - 1] + 1), None)
    if first is None:
        return None
    ascending = sorted(values)
    consecutive = ascending == list(range(ascending[0], ascending[0] + len(values)))
    rule = "psyq needs the options in ascending order, lowest value first, in steps of 1"
    if values == ascending[::-1] and consecutive:
        return 0, (f"the options are listed from the highest value to the lowest ({_listed(values)}); {rule}: "
                   f"list them from {ascending[0]} to {ascending[-1]} (to show them to respondents the other "
                   "way round, set option_order: reversed in the study's protocol)")
    if consecutive:
        return first, (f"the values are not in order ({_listed(values)}); {rule}: list the options as "
                       f"{_listed(ascending)}")
    repeated = sorted(duplicates(values))
    if repeated:
        return values.index(repeated[0], values.index(repeated[0]) + 1), (
            f"the value {repeated[0]} is given to more than one option ({_listed(values)}); {rule}, "
            "each value once")
    return first, (f"the values are not consecutive whole numbers in ascending order ({_listed(values)}; "
                   f"{values[first]} follows {values[first - 1]}); {rule}, e.g. "
                   f"{_listed(list(range(ascending[0], ascending[0] + len(values))))}")


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
    order = order_problem(values)
    if order is not None:   # one message for the whole scale, at the first option out of place
        bad((name, order[0], "value"), order[1])
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
