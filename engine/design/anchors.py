"""Anchor statements (`psyq: anchors/1`): for one answer scale, a statement per option that a
free-text answer is compared with (`answer: ssr`, engine/trials/ssr.py), in one or more sets.

An anchors file names the scale it is for (the options' values and labels, as the instruments
write them) and gives each set's statements keyed by option value. A study asking `answer: ssr`
finds, for each instrument, the first anchors file whose scale is the instrument's
(:func:`anchors_for`): the files `protocol.ssr.anchors` names, else every shipped one
(``instruments/anchors/``, found by name like every shipped file). Where the statements come from
is said twice, as for situation sets: `content_source` (``psyq``: written by the psyq authors;
``user``; ``imported``) and a free-text `source`; the shipped ones are psyq's own, written for
psyq and not validated against people's ratings of the statements.

Example:
    >>> anchors = load_anchors("iri_describes_me")
    >>> anchors.source, len(anchors.sets), anchors.sets[0].statements[4]
    ('written for psyq; not validated', 3, 'This describes me very well.')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.shipped import locate, shipped_files
from psyq.engine.files.validation import load_document
from psyq.engine.files.yamlfile import YamlDocument
from psyq.engine.trials.scale import Option


# An option's value as a statement's key: strictly a whole number (YAML reads `true:` as true, which
# a lax number would take for the option 1, and `yes:` likewise).
OptionValue = Annotated[int, Field(strict=True)]


class AnchorSet(StrictModel):
    """One set of statements: one per option of the scale, keyed by the option's value."""

    id: Id
    statements: dict[OptionValue, Text]


class Anchors(StrictModel):
    """An anchors file as written."""

    psyq: Literal["anchors/1"]
    id: Id
    description: Text | None = None
    content_source: Literal["psyq", "user", "imported"]
    source: Text
    scale: list[Option] = Field(min_length=2)
    sets: list[AnchorSet] = Field(min_length=1)

    def statement_texts(self) -> list[str]:
        """Every statement of every set, in order (what is embedded once per run)."""
        return [s.statements[o.value] for s in self.sets for o in self.scale]


def _label(text: str | None) -> str | None:
    return " ".join(text.lower().split()) if text else None


def same_scale(anchors: Sequence[Option], scale: Sequence[Option]) -> bool:
    """Whether anchors written for `anchors` fit an instrument's `scale`: the same values in the
    same order, each with the same label or none on both (case and spaces aside; codes aside).

    Example:
        >>> same_scale([Option(value=0, label="No"), Option(value=1)], [Option(value=0, code="A", label="no"),
        ...                                                             Option(value=1, code="B")])
        True
    """
    return ([(o.value, _label(o.label)) for o in anchors] == [(o.value, _label(o.label)) for o in scale])


def scale_text(scale: Sequence[Option]) -> str:
    """A scale as messages name it: its values, with the labels of those that have one.

    Example:
        >>> scale_text([Option(value=1, label="Never"), Option(value=2), Option(value=3, label="Always")])
        '1 = Never, 2, 3 = Always'
    """
    return ", ".join(f"{o.value} = {o.label}" if o.label else str(o.value) for o in scale)


def check_anchors(anchors: Anchors, doc: YamlDocument) -> list[Problem]:
    """Meaning checks: the scale's values unique; every set has exactly one statement per option,
    none of them blank, different statements for different options; set ids unique."""
    problems = []
    values = [o.value for o in anchors.scale]
    for value, n in Counter(values).items():
        if n > 1:
            second = [i for i, v in enumerate(values) if v == value][1]
            problems.append(doc.problem(("scale", second, "value"), f"the value {value} is given to more than one "
                                        "option"))
    for set_id, n in Counter(s.id for s in anchors.sets).items():
        if n > 1:
            second = [i for i, s in enumerate(anchors.sets) if s.id == set_id][1]
            problems.append(doc.problem(("sets", second, "id"), f"the set id '{set_id}' is used more than once"))
    for i, anchor_set in enumerate(anchors.sets):
        missing = [str(v) for v in values if v not in anchor_set.statements]
        if missing:
            problems.append(doc.problem(("sets", i, "statements"), f"set '{anchor_set.id}' has no statement for "
                                        f"option{'s' if len(missing) > 1 else ''} {', '.join(missing)} (one statement "
                                        f"per option of the scale: {', '.join(map(str, values))})"))
        for value, text in anchor_set.statements.items():
            if value not in values:
                problems.append(doc.problem(("sets", i, "statements", value), f"{value} is not a value of the "
                                            f"scale ({', '.join(map(str, values))})", at_key=True))
            elif not text.strip():
                problems.append(doc.problem(("sets", i, "statements", value), "must not be empty (it is only "
                                            "spaces): write the statement for this option"))
        texts = Counter(" ".join(t.lower().split()) for t in anchor_set.statements.values())
        for text, n in texts.items():
            if n > 1:
                problems.append(doc.problem(("sets", i, "statements"), f"set '{anchor_set.id}' gives {n} options the "
                                            f"same statement ('{text}'): they could never be told apart"))
    return problems


def load_anchors(path: str | Path) -> Anchors:
    """Load and check an anchors file (its path, or the name of a shipped one).

    Example:
        >>> load_anchors("iri_describes_me").scale[0].label
        'Does not describe me well'
    """
    return load_document(path, Anchors, "anchors", check_anchors).spec


@dataclass(frozen=True)
class FoundAnchors:
    """The anchors an instrument's scale is read with: the file and what it holds."""

    path: Path
    anchors: Anchors


def anchors_for(scales: dict[str, Sequence[Option]], names: Sequence[str] | None,
                folder: Path) -> tuple[dict[str, FoundAnchors], list[str]]:
    """For each instrument (id -> scale), the first anchors file whose scale is its scale: among
    `names` (files or shipped names, read from `folder`), else among every shipped anchors file;
    and, for an instrument none fits, why (naming the scale).

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> found, missing = anchors_for({"iri": load_instrument("iri").scale}, None, Path("."))
        >>> found["iri"].anchors.id, missing
        ('iri_describes_me', [])
    """
    candidates = list(names) if names else list(shipped_files("anchors"))
    loaded: list[FoundAnchors] = []
    for name in candidates:
        path = locate(name, "anchors", folder)
        loaded.append(FoundAnchors(path.resolve(), load_anchors(path)))
    found, missing = {}, []
    for inst_id, scale in scales.items():
        match = next((a for a in loaded if same_scale(a.anchors.scale, scale)), None)
        if match is not None:
            found[inst_id] = match
            continue
        where = (f"the anchors files named ({', '.join(candidates)})" if names
                 else f"psyq's anchors ({', '.join(candidates) or 'none'})")
        missing.append(f"answer: ssr needs anchor statements for the scale of '{inst_id}' ({scale_text(scale)}), "
                       f"and none of {where} is written for it: write an anchors file for that scale "
                       f"(psyq: anchors/1, docs/designing-a-study.md) and name it in protocol.ssr.anchors")
    return found, missing


def load_named_anchors(names: Sequence[str] | None, folder: Path) -> list[Problem]:
    """The problems of the anchors files `names` (each loaded and checked), for a study's checks."""
    problems: list[Problem] = []
    for name in names or []:
        try:
            load_anchors(locate(name, "anchors", folder))
        except InputError as exc:
            problems.extend(exc.problems)
    return problems
