"""Multi-dimension rubrics (format `rubric/2`): several dimensions, each with its own levels and
anchors, and how they combine into an overall score.

A `rubric/1` rubric (:mod:`psyq.engine.judging.answer_judge`) scores one free-text answer on one set of levels and
stores judgements in table ``judgements``; it loads and works unchanged. A `rubric/2` rubric
rates *rating targets* (:mod:`psyq.engine.store.ratings`: persona replies, imported reference replies,
perturbed texts) on each of its `dimensions`, one judge request per target × dimension
(:mod:`psyq.engine.judging.reply_judge`), and people rate the same dimensions in a rating sheet; every score
is a row of table ``ratings``. `combine:` names the scores formed from the dimensions; the one
rule implemented is the mean (`overall: {mean: [cognitive, emotional, behavioural]}`), formed
only when every named dimension has a level (:func:`combine_levels`), never from part of them.

The judge's prompt may use ``{message}``, ``{context}`` (the help-seeker's message and its
context), ``{reply}`` (the text rated), ``{dimension}`` (the dimension's name),
``{definition}`` (its description) and ``{levels}`` (its anchors, one per line). Nothing about
who wrote the reply is available to it: rating is blind by construction.

Example:
    >>> rubric = load_multi_rubric("empathy_ceb")
    >>> [d.id for d in rubric.spec.dimensions], rubric.spec.combine["overall"].mean
    (['cognitive', 'emotional', 'behavioural'], ['cognitive', 'emotional', 'behavioural'])
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import Field

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.validation import load_document, raise_problems

PLACEHOLDERS = ("message", "context", "reply", "dimension", "definition", "levels")
"""What a `rubric/2` prompt may use (see the module docstring)."""
MAX_LEVEL = 1_000_000


class Dimension(StrictModel):
    """One dimension of a rubric: what it means and its levels, each with an anchor text."""

    id: Id
    name: Text
    description: Text
    levels: dict[int, Text]


class CombineRule(StrictModel):
    """How one combined score is formed; `mean`: the mean of the named dimensions' levels."""

    mean: list[Id] = Field(min_length=1)


class MultiRubricFile(StrictModel):
    """A multi-dimension rubric as written (format `rubric/2`)."""

    psyq: Literal["rubric/2"]
    id: Id
    version: Text
    content_source: Literal["psyq", "published"]
    citations: dict[Id, Text] = Field(default_factory=dict)
    applies_to: Literal["response"]
    description: Text
    dimensions: list[Dimension] = Field(min_length=1)
    combine: dict[Id, CombineRule] = Field(default_factory=dict)
    system: Text
    prompt: Text


@dataclass(frozen=True)
class MultiRubric:
    """A loaded `rubric/2` rubric."""

    spec: MultiRubricFile
    path: Path

    def dimension(self, dimension_id: str) -> Dimension:
        """The dimension called `dimension_id` (KeyError if none)."""
        for d in self.spec.dimensions:
            if d.id == dimension_id:
                return d
        raise KeyError(dimension_id)

    @property
    def dimension_ids(self) -> list[str]:
        return [d.id for d in self.spec.dimensions]


def levels_text(dimension: Dimension) -> str:
    """The anchors of a dimension, one ``level = anchor`` line each, lowest first."""
    return "\n".join(f"{v} = {text}" for v, text in sorted(dimension.levels.items()))


def load_multi_rubric(path: str | Path) -> MultiRubric:
    """Load and check a `rubric/2` file, given its path or the name of a shipped one: unique dimension ids, consecutive whole-number levels per
    dimension, `combine:` naming existing dimensions, known placeholders only.

    Example:
        >>> load_multi_rubric("empathy_ceb").dimension("emotional").levels[1][:12]
        'No sign that'
    """
    spec, doc, path = load_document(path, MultiRubricFile, "rubric")
    problems: list[Problem] = []
    seen: set[str] = set()
    for k, dim in enumerate(spec.dimensions):
        if dim.id in seen:
            problems.append(doc.problem(("dimensions", k, "id"), f"dimension '{dim.id}' is given twice"))
        seen.add(dim.id)
        values = sorted(dim.levels)
        if len(values) < 2 or values != list(range(values[0], values[0] + len(values))):
            problems.append(doc.problem(("dimensions", k, "levels"), "levels must be two or more consecutive whole "
                                                                     f"numbers, not {values}"))
        if any(abs(v) > MAX_LEVEL for v in values):
            problems.append(doc.problem(("dimensions", k, "levels"), f"levels must be whole numbers between "
                                                                     f"-{MAX_LEVEL} and {MAX_LEVEL}"))
    for name, rule in spec.combine.items():
        if name in seen:
            problems.append(doc.problem(("combine", name), f"'{name}' is a dimension; a combined score needs "
                                                           "a name of its own"))
        unknown = [d for d in rule.mean if d not in seen]
        if unknown:
            problems.append(doc.problem(("combine", name, "mean"), f"unknown dimension(s) {', '.join(unknown)}; "
                                                                   f"the dimensions are {', '.join(seen)}"))
    used = {field for _, field, _, _ in string.Formatter().parse(spec.prompt) if field}
    if unknown_fields := sorted(used - set(PLACEHOLDERS)):
        problems.append(doc.problem(("prompt",), f"unknown placeholder(s) "
                                                 f"{', '.join('{' + u + '}' for u in unknown_fields)}; a rubric/2 "
                                                 f"prompt may use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"))
    for needed in ("reply", "levels"):
        if needed not in used:
            problems.append(doc.problem(("prompt",), f"the prompt must show {{{needed}}}"))
    raise_problems(problems)
    return MultiRubric(spec, Path(path))


def combine_levels(rubric: MultiRubric, ratings: pd.DataFrame) -> pd.DataFrame:
    """The combined scores (`combine:`) of every target × rater in `ratings` (the tidy frame of
    :func:`psyq.engine.store.ratings.read_ratings` for this rubric), as rows shaped like it with
    ``dimension`` = the combined score's name. A combined score is formed only when every dimension
    it names has a level from that rater; otherwise its level is NaN with status ``incomplete``
    and the reason names what is missing (never a mean of part of the dimensions).

    Example:
        >>> r = load_multi_rubric("empathy_ceb")
        >>> rows = pd.DataFrame({"response_id": ["a"] * 3, "rater_kind": "judge", "rater_id": "j",
        ...                      "dimension": ["cognitive", "emotional", "behavioural"], "level": [3, 2, 2]})
        >>> round(float(combine_levels(r, rows)["level"].iloc[0]), 4)
        2.3333
    """
    keys = ["response_id", "rater_kind", "rater_id"]
    out = []
    for name, rule in rubric.spec.combine.items():
        for key, group in ratings.groupby(keys, sort=True):
            levels = dict(zip(group["dimension"], group["level"]))
            missing = [d for d in rule.mean if d not in levels or levels[d] is None
                       or (isinstance(levels[d], float) and math.isnan(levels[d]))]
            first = group.iloc[0].to_dict()
            row = {**first, "dimension": name, "rubric_id": rubric.spec.id}
            if missing:
                row.update(level=math.nan, status="incomplete", reason=f"no level for {', '.join(missing)}")
            else:
                row.update(level=sum(float(levels[d]) for d in rule.mean) / len(rule.mean), status="combined",
                           reason=f"mean of {', '.join(rule.mean)}")
            out.append(row)
    return pd.DataFrame(out, columns=list(ratings.columns) + [c for c in ("rubric_id", "status", "reason")
                                                               if c not in ratings.columns])
