"""Empathic-accuracy vignettes: a story about a target told in segments; at each stop point the
perceiver rates the target's emotions and says what the target thinks and feels (engine.accuracy)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Literal

from pydantic import Field

from ..errors import Problem
from ..fields import Id, StrictModel, Text
from ..parsing import THOUGHTS, ParsedAnswer, parse_free_text, parse_stop
from ..prompts import (stop_emotion_messages, stop_json_schema, stop_messages, stop_reask_message,
                       stop_thoughts_messages)
from ..trial import Trial, TrialContext, make_trial
from ..scale import check_scale
from ..yamlfile import YamlDocument
from .base import ItemKind

if TYPE_CHECKING:
    from ..instrument import Instrument
    from ..scale import Option
    from ..study import Protocol


class TargetReport(StrictModel):
    """What the target of a vignette felt at a stop point: their own report, or (for stories we
    wrote) the profile we designed, which is not a self-report and is labelled as such."""

    source: Literal["design-intended", "self-report"]
    intensities: dict[Id, int] = Field(min_length=1)
    thoughts: Text | None = None


class Segment(StrictModel):
    """One part of a vignette's narrative, ending at a stop point where the perceiver rates."""

    text: Text
    target_report: TargetReport | None = None


class VignetteItem(StrictModel):
    """An empathic-accuracy vignette: a story about a target in segments, each ending at a stop."""

    id: Id
    kind: Literal["vignette"]
    target: Text
    segments: list[Segment] = Field(min_length=1)
    subscales: list[Id] = Field(default_factory=list)


class Vignette(ItemKind):
    """Vignettes: scored as profile accuracy (a correlation, so norms are not range-checked)."""

    name = "vignette"
    model = VignetteItem
    scores = ("ea_profile",)

    def check_instrument(self, inst: "Instrument", doc: YamlDocument) -> list[Problem]:
        problems: list[Problem] = []
        if not inst.emotions:
            problems.append(doc.problem(("emotions",), "vignettes need `emotions` (the emotions rated at each stop)"))
        if not inst.emotion_scale:
            problems.append(doc.problem(("emotion_scale",), "vignettes need `emotion_scale` (the intensity options)"))
        problems.extend(check_scale(inst.emotion_scale, "emotion_scale", doc))
        problems.extend(check_vignettes(inst, doc))
        return problems

    def plan_trials(self, ctx: TrialContext, instrument: "Instrument") -> Iterator[Trial]:
        """A vignette's trials: one per stop point; in answer mode `logprobs`, one per stop × emotion
        (read from the number's probabilities) plus one free-text request for the inference."""
        protocol, backend, system_prompt = ctx.study.protocol, ctx.backend, ctx.system_prompt
        for vignette in (i for i in instrument.items if isinstance(i, VignetteItem)):
            for stop in range(1, len(vignette.segments) + 1):
                stop_id = f"{vignette.id}:{stop}"
                if protocol.answer != "logprobs":
                    messages = stop_messages(instrument, vignette, stop, system_prompt=system_prompt,
                                             answer=protocol.answer)
                    schema = stop_json_schema(instrument) if protocol.answer == "json" else None
                    yield make_trial(ctx, instrument, (stop_id,), messages, backend.config.max_tokens or 300, None,
                                     schema, "stop", self.name)
                    continue
                for emotion in instrument.emotions:
                    messages = stop_emotion_messages(instrument, vignette, stop, emotion, system_prompt=system_prompt)
                    yield make_trial(ctx, instrument, (f"{stop_id}:{emotion}",), messages, 1, backend.top_logprobs,
                                     None, "stop_emotion", self.name)
                messages = stop_thoughts_messages(instrument, vignette, stop, system_prompt=system_prompt)
                yield make_trial(ctx, instrument, (f"{stop_id}:{THOUGHTS}",), messages,
                                 backend.config.max_tokens or 120, None, None, "stop_thoughts", self.name)

    # Trial kinds: stop (every emotion and the thoughts in one reply), stop_emotion (one emotion,
    # answer mode logprobs), stop_thoughts (the inference alone).

    def answer_ids(self, trial: Trial) -> list[str]:
        """One row per emotion and one for the thoughts at a stop (``v01:1:joy`` …, ``v01:1:thoughts``)."""
        if trial.kind == "stop":
            return [f"{trial.item_ids[0]}:{e}" for e in trial.instrument.emotions] + [f"{trial.item_ids[0]}:{THOUGHTS}"]
        return list(trial.item_ids)

    def answer_scale(self, trial: Trial) -> list["Option"]:
        return trial.instrument.emotion_scale

    def reads_logprobs(self, trial: Trial, protocol: "Protocol") -> bool:
        return protocol.answer == "logprobs" and trial.kind == "stop_emotion"

    def parse(self, trial: Trial, text: str, protocol: "Protocol") -> dict[str, ParsedAnswer]:
        if trial.kind == "stop_thoughts":
            return {trial.item_ids[0]: parse_free_text(text)}
        stop_id = trial.item_ids[0]
        parsed = parse_stop(text, trial.instrument.emotions, trial.instrument.emotion_scale,
                            as_json=protocol.answer == "json")
        return {f"{stop_id}:{key}": answer for key, answer in parsed.items()}

    def reask(self, trial: Trial, reason: str, unread: list[str]) -> str:
        return stop_reask_message(trial.instrument, reason, [i.rsplit(":", 1)[1] for i in unread])


def check_vignettes(inst: "Instrument", doc: YamlDocument) -> list[Problem]:
    """Every target report rates every emotion, on the emotion scale."""
    problems: list[Problem] = []
    allowed = {o.value for o in inst.emotion_scale}
    for i, item in enumerate(inst.items):
        if not isinstance(item, VignetteItem):
            continue
        for j, segment in enumerate(item.segments):
            report = segment.target_report
            if report is None:
                continue
            path = ("items", i, "segments", j, "target_report", "intensities")
            missing = [e for e in inst.emotions if e not in report.intensities]
            if missing:
                problems.append(doc.problem(path, f"no intensity for {', '.join(missing)}"))
            for emotion, value in report.intensities.items():
                if emotion not in inst.emotions:
                    problems.append(doc.problem(path + (emotion,), f"'{emotion}' is not one of `emotions` "
                                                f"({', '.join(inst.emotions)})", at_key=True))
                elif allowed and value not in allowed:
                    problems.append(doc.problem(path + (emotion,), f"{value} is not on the emotion scale "
                                                f"({min(allowed)} to {max(allowed)})"))
    return problems
