"""A section of the report: a title, readings (plain sentences), tables and figures.

Every part of the report (:mod:`psyq.analysis.report` and the section builders beside it, such as
:mod:`psyq.analysis.report.sections.same_construct`) returns one, so the renderers print them all the same way.

Example:
    >>> section = Section("Reliability", readings=["IRI PT: α = .79."])
    >>> section.title, section.tables
    ('Reliability', [])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class Section:
    """A titled part of the report: readings (sentences), tables and figures."""

    title: str
    readings: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    figures: list[tuple[str, Any]] = field(default_factory=list)   # (caption, matplotlib Figure)
    note: str | None = None
    comparison: pd.DataFrame | None = None     # the norm table, for sections that reuse it
    methods: str | None = None    # a sentence the methods paragraph adds (estimator, software)
