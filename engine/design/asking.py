"""How a study asks for a distribution over the options: the protocol's settings of
`answer: verbalized` (a distribution the respondent states) and `answer: ssr` (free text mapped
onto the options by the similarity of its embedding to anchor statements), and their checks.

The settings are optional blocks of `protocol:`; a protocol that leaves them out is dumped (into
the run id and the manifest) exactly as before they existed (:func:`without_unset_modes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_serializer, model_validator

from psyq.engine.backends.embedders import default_embedding_model, dumped_settings, settings_problems
from psyq.engine.design.anchors import FoundAnchors, anchors_for
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import StrictModel, Text
from psyq.engine.files.yamlfile import YamlDocument
from psyq.engine.trials.answer_mode import DISTRIBUTION_MODES
from psyq.engine.trials.stated_distribution import DEFAULT_TOLERANCE

if TYPE_CHECKING:
    from psyq.engine.design.instrument import Instrument

MODE_SETTINGS = ("verbalized", "ssr")
"""The protocol's blocks of settings of one answer mode each (left out of a dump when unset)."""


class VerbalizedSettings(StrictModel):
    """`protocol: verbalized:` — how a stated distribution is read (engine/trials/stated_distribution.py)."""

    # How far the stated probabilities may sum from 1 (after percentages are read) and still be
    # read, renormalised; further is unreadable and re-asked.
    tolerance: float = Field(default=DEFAULT_TOLERANCE, ge=0, le=0.5)


class EmbeddingsConfig(StrictModel):
    """`protocol: ssr: embeddings:` — what embeds the answers and the anchor statements: an
    OpenAI-compatible server (`kind: openai`, the default: ``POST {base_url}/embeddings``,
    engine/backends/embeddings.py) or psyq's local model (`kind: local`: a catalogue model computed
    in psyq's own process, fetched once, engine/backends/local_embeddings.py). One for the whole
    study, whichever backend answered, so that every answer is measured with the same ruler."""

    kind: Literal["openai", "local"] = "openai"
    base_url: Text | None = None            # kind openai (required): e.g. https://api.openai.com/v1
    model: Text | None = None               # openai (required): e.g. text-embedding-3-small; local: a catalogue name
    api_key_env: str | None = None          # the NAME of an environment variable, never the key
    # texts per request (OpenAI takes up to 2,048); local: texts computed between two saves
    batch_size: int = Field(default=64, ge=1, le=2048)
    concurrency: int = Field(default=2, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=5, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _default_model(cls, data: Any) -> Any:
        """`kind: local` without `model:` names the catalogue's default, so that the dump (the
        trials' ids, the manifest) says which model it was."""
        if isinstance(data, dict) and data.get("model") is None and (
                model := default_embedding_model(str(data.get("kind", "openai")))) is not None:
            return {**data, "model": model}
        return data

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        """A server's settings dump as before `kind` existed (their trials keep their ids); the
        local model's without the fields only a server has (engine/backends/embedders.py)."""
        return dumped_settings(self.kind, handler(self))


class SsrSettings(StrictModel):
    """`protocol: ssr:` — how a free-text answer is mapped onto the options (engine/trials/ssr.py,
    Maier et al. 2025): with which anchor statements, embedded by which server, with which ε and T."""

    # Anchors files (names of shipped ones, or paths from the study file); absent: every shipped
    # anchors file. Each instrument is read with the first whose scale is its own.
    anchors: list[Text] | None = Field(default=None, min_length=1)
    embeddings: EmbeddingsConfig
    temperature: float = Field(default=1.0, gt=0)   # p ∝ p^(1/T) after the sets are averaged
    epsilon: float = Field(default=0.0, ge=0)       # added to the least similar option (eq. 8)


def reading_key(protocol: Any) -> dict[str, Any]:
    """What decides how a distribution mode's answer is read, for a trial's id (empty for the other
    modes, so that their ids stay those of every run before).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> reading_key(NS(answer="json")), reading_key(NS(answer="verbalized", logprob_answer="sample", verbalized=None))
        ({}, {'reading': {'value': 'sample', 'verbalized': None}})
    """
    if protocol.answer not in DISTRIBUTION_MODES:
        return {}
    settings = getattr(protocol, protocol.answer)
    return {"reading": {"value": protocol.logprob_answer,
                        protocol.answer: settings.model_dump(mode="json") if settings is not None else None}}


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
    if answer == "ssr":
        problems.extend(ssr_problems(protocol.ssr, doc, instruments))
    return problems


def ssr_problems(settings: SsrSettings | None, doc: YamlDocument, instruments: list["Instrument"]) -> list[Problem]:
    """What keeps `answer: ssr` from mapping the study's answers: no `ssr:` settings, an
    embeddings server psyq cannot reach as written, an instrument whose scale no anchors file
    fits (named, with its scale), an anchors file that does not load (engine/backends/embedders.py's
    `settings_problems` says what is wrong with the embeddings)."""
    if settings is None:
        return [doc.problem(("protocol", "answer"), "answer: ssr needs `ssr:` in the protocol, with `embeddings:` "
                            "(base_url and model: the server that embeds the answers and the anchor statements; "
                            "or kind: local, psyq's own local model)")]
    problems = [doc.problem(("protocol", "ssr", "embeddings", *at), why)
                for at, why in settings_problems(settings.embeddings)]
    try:
        _, missing = study_anchors(settings, instruments, Path(doc.file).parent)
    except InputError as exc:   # a named anchors file not found, or not a good one: its own file:line:column
        at = ("protocol", "ssr", "anchors")
        return problems + [p if p.line is not None else doc.problem(at, f"{p.file}: {p.message}") for p in exc.problems]
    where = ("protocol", "ssr", "anchors") if settings.anchors else ("protocol", "answer")
    return problems + [doc.problem(where, why) for why in missing]


def study_anchors(settings: SsrSettings, instruments: list["Instrument"],
                  folder: Path) -> tuple[dict[str, FoundAnchors], list[str]]:
    """The anchors each rating instrument of a study is read with under `settings`, and why an
    instrument has none (engine/design/anchors.py); `folder`: the study file's.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> settings = SsrSettings(embeddings={"base_url": "http://127.0.0.1:9/v1", "model": "e"})
        >>> found, missing = study_anchors(settings, [load_instrument("iri"), load_instrument("bes")], Path("."))
        >>> {i: a.anchors.id for i, a in found.items()}, missing
        ({'iri': 'iri_describes_me', 'bes': 'bes_agreement'}, [])
    """
    scales = {inst.id: inst.scale for inst in instruments if inst.rating_items}
    return anchors_for(scales, settings.anchors, folder)
