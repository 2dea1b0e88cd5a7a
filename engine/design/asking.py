"""How a study asks for a distribution over the options: the protocol's settings of
`answer: verbalized` (a distribution the respondent states) and their checks.

The settings are optional blocks of `protocol:`; a protocol that leaves them out is dumped (into
the run id and the manifest) exactly as before they existed (:func:`without_unset_modes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import StrictModel
from psyq.engine.files.yamlfile import YamlDocument
from psyq.engine.trials.answer_mode import DISTRIBUTION_MODES
from psyq.engine.trials.stated_distribution import DEFAULT_TOLERANCE

if TYPE_CHECKING:
    from psyq.engine.design.instrument import Instrument

MODE_SETTINGS = ("verbalized",)
"""The protocol's blocks of settings of one answer mode each (left out of a dump when unset)."""


class VerbalizedSettings(StrictModel):
    """`protocol: verbalized:` — how a stated distribution is read (engine/trials/stated_distribution.py)."""

    # How far the stated probabilities may sum from 1 (after percentages are read) and still be
    # read, renormalised; further is unreadable and re-asked.
    tolerance: float = Field(default=DEFAULT_TOLERANCE, ge=0, le=0.5)


def without_unset_modes(dumped: dict[str, Any]) -> dict[str, Any]:
    """A protocol's dump without the mode settings it leaves unset, so that the run ids and
    manifests of studies that do not use them stay those of every run before.

    Example:
        >>> without_unset_modes({"answer": "text", "verbalized": None})
        {'answer': 'text'}
    """
    return {k: v for k, v in dumped.items() if not (k in MODE_SETTINGS and v is None)}


def distribution_mode_problems(spec: Any, doc: YamlDocument, instruments: list["Instrument"]) -> list[Problem]:
    """What keeps the study's instruments from being asked in its distribution mode (none for the
    other modes): one item per request, rating items only, no stages. (A mode's settings given
    while the protocol asks another mode are no problem: a study's conditions may ask it.)

    Example:
        >>> from psyq.engine.design.study import load_study
        >>> study = load_study("quickstart")
        >>> spec = study.spec.model_copy(update={"protocol": study.protocol.model_copy(update={"answer": "verbalized"})})
        >>> distribution_mode_problems(spec, None, list(study.instruments))
        []
    """
    protocol = spec.protocol
    problems: list[Problem] = []
    answer = protocol.answer
    if answer not in DISTRIBUTION_MODES:
        return problems
    if protocol.presentation != "per_item":
        problems.append(doc.problem(("protocol", "presentation"), f"answer: {answer} asks for one distribution "
                                    "per item, so it needs presentation: per_item"))
    if spec.stages:
        problems.append(doc.problem(("protocol", "answer"), f"answer: {answer} is not available for a study with "
                                    "`stages:` (a measure stage asks the whole instrument in one request)"))
    for i, inst in enumerate(instruments):
        other = sorted({item.kind for item in inst.items if item.kind != "rating"})
        if other:
            problems.append(doc.problem(("instruments", i), f"answer: {answer} asks rating items only, but "
                                        f"'{inst.id}' has {', '.join(other)} items"))
    return problems
