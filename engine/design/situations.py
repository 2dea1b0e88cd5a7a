"""Situation sets: the situations a multi-stage study asks respondents to imagine (`psyq: situations/1`).

A situation set is a YAML file listing situations, each with the emotion it is meant to evoke
and the text the respondent imagines. Where the texts come from is said twice: `content_source`
(``psyq``: written by the psyq authors, ``user``: the user's own, ``imported``: converted by an
importer from someone else's published set) and a free-text `source` citation; `terms` carries
the licence or terms of use when there are any.

Example:
    >>> sset = load_situations("tests/fixtures/stages/situations_two.yaml")
    >>> [s.id for s in sset.situations]
    ['anger_01', 'joy_01']
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import Id, StrictModel, Text, format_json_schema
from psyq.engine.files.validation import load_document
from psyq.engine.files.yamlfile import YamlDocument


class Situation(StrictModel):
    """One situation: what the respondent is asked to imagine, and the emotion it should evoke."""

    id: Id
    emotion: Id
    category: Text | None = None   # a finer grouping (EmotionBench's "factors")
    text: Text
    source: Text | None = None


class SituationSet(StrictModel):
    """A situation set file as written."""

    psyq: Literal["situations/1"]
    id: Id
    description: Text | None = None
    content_source: Literal["psyq", "user", "imported"]
    source: Text
    terms: Text | None = None
    situations: list[Situation] = Field(min_length=1)

    def situation(self, situation_id: str) -> Situation:
        """The situation called `situation_id` (KeyError if none)."""
        for s in self.situations:
            if s.id == situation_id:
                return s
        raise KeyError(situation_id)


def check_situations(sset: SituationSet, doc: YamlDocument) -> list[Problem]:
    """Meaning checks: situation ids are unique (stage trials and exports are keyed by them)."""
    seen = Counter(s.id for s in sset.situations)
    return [doc.problem(("situations", i, "id"), f"situation id '{s.id}' is used more than once")
            for i, s in enumerate(sset.situations) if seen[s.id] > 1]


def load_situations(path: str | Path) -> SituationSet:
    """Load and check a situation set file, given its path or the name of a shipped one
    (InputError with file:line:column on any problem).

    Example:
        >>> load_situations("tests/fixtures/stages/situations_two.yaml").content_source
        'psyq'
        >>> len(load_situations("psyq_everyday").situations) > 0
        True
    """
    return load_document(path, SituationSet, "situations", check_situations).spec


def situations_json_schema() -> dict[str, Any]:
    """The JSON Schema of the situation set format (what ``psyq schema situations`` prints).

    Example:
        >>> situations_json_schema()["title"]
        'psyq situation set (format situations/1)'
    """
    return format_json_schema(SituationSet, "psyq situation set (format situations/1)")
