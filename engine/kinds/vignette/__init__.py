"""Empathic-accuracy vignettes: a story about a target told in segments; at each stop point the
perceiver rates the target's emotions and says what the target thinks and feels.

Everything particular to vignettes is here: the item model and the instrument-level fields the
kind adds (`emotions`, `emotion_scale`), their checks, how a stop is asked and its reply read and
re-asked, and what a judge model is asked about each inference. Profile-accuracy scoring is in
:mod:`.accuracy`, the CSV files of targets' and perceivers' reports in :mod:`.accuracy_csv`; the
report section in
:mod:`psyq.analysis.report.sections.vignette`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

from pydantic import Field

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.trials.free_text import has_text, parse_free_text
from psyq.engine.trials.json_object import find_json_object, lookup
from psyq.engine.trials.parsing import ParsedAnswer, normalise, parse_ratings_block
from psyq.engine.trials.prompts import option_lines, with_system
from psyq.engine.trials.scale import Option, check_scale
from psyq.engine.trials.trial import Trial, TrialContext, make_trial
from psyq.engine.files.yamlfile import YamlDocument
from psyq.engine.kinds.base import ItemKind, JudgeTask

if TYPE_CHECKING:   # annotations only: loading an instrument never needs pandas
    import pandas as pd

    from psyq.engine.design.instrument import Instrument
    from psyq.engine.design.study import Protocol


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


# --- asking -----------------------------------------------------------------------------------

def story_so_far(item: VignetteItem, stop: int) -> str:
    """The vignette's segments up to and including stop `stop` (1-based), as the perceiver reads them."""
    return "\n\n".join(segment.text.strip() for segment in item.segments[:stop])


def _emotion_options(instrument: "Instrument") -> str:
    return option_lines(instrument.emotion_scale, use_codes=False)


def _story_intro(instrument: "Instrument", item: VignetteItem, stop: int) -> str:
    where = f"part {stop} of {len(item.segments)}" if len(item.segments) > 1 else "the whole story"
    return (f"{instrument.instructions.strip()}\n\nThe story so far ({where}):\n\n"
            f"{story_so_far(item, stop)}\n\n")


def stop_messages(instrument: "Instrument", item: VignetteItem, stop: int, *, system_prompt: str | None,
                  answer: str) -> list[dict[str, str]]:
    """Messages asking a vignette's stop point: a rating of every emotion and the perceiver's
    inference of what the target thinks and feels, in one reply.

    Example:
        >>> from psyq import load_instrument
        >>> ea = load_instrument("ea_vignettes_psyq")
        >>> msgs = stop_messages(ea, ea.item("v01"), 1, system_prompt=None, answer="json")
        >>> [m["role"] for m in msgs], msgs[-1]["content"].splitlines()[-1][:40]
        (['user'], 'Reply with JSON only, in the form {"inte')
    """
    emotions = instrument.emotions
    if answer == "json":
        fields = ", ".join(f'"{e}": <number>' for e in emotions)
        how = (f"Reply with JSON only, in the form {{{fields}, \"thoughts\": \"<what {item.target} is thinking "
               f"and feeling>\"}}.")
    else:
        how = (f"Reply with one line per emotion in the form \"emotion: number\" ({', '.join(emotions)}), then "
               f"a line starting \"Thoughts:\" saying what {item.target} is thinking and feeling.")
    user = (_story_intro(instrument, item, stop)
            + f"How strongly does {item.target} feel each of these emotions right now: {', '.join(emotions)}?\n\n"
            f"Options:\n{_emotion_options(instrument)}\n\n{how}")
    return with_system(system_prompt, user)


def stop_emotion_messages(instrument: "Instrument", item: VignetteItem, stop: int, emotion: str, *,
                          system_prompt: str | None) -> list[dict[str, str]]:
    """Messages asking one emotion at one stop, answered by one number (answer mode `logprobs`)."""
    user = (_story_intro(instrument, item, stop)
            + f"How strongly does {item.target} feel {emotion} right now?\n\n"
            f"Options:\n{_emotion_options(instrument)}\n\nAnswer with the number of one option only.")
    return with_system(system_prompt, user)


def stop_thoughts_messages(instrument: "Instrument", item: VignetteItem, stop: int, *,
                           system_prompt: str | None) -> list[dict[str, str]]:
    """Messages asking only the free-text inference at one stop (answer mode `logprobs`, where the
    ratings are read from token probabilities in separate requests)."""
    user = (_story_intro(instrument, item, stop)
            + f"In a sentence or two: what is {item.target} thinking and feeling right now?")
    return with_system(system_prompt, user)


def stop_json_schema(instrument: "Instrument") -> dict[str, Any]:
    """JSON Schema for a stop's reply: every emotion on the emotion scale, and the thoughts."""
    allowed = [o.value for o in instrument.emotion_scale]
    properties: dict[str, Any] = {e: {"enum": allowed} for e in instrument.emotions}
    properties["thoughts"] = {"type": "string"}
    return {"type": "object", "properties": properties, "required": list(properties)}


def stop_reask_message(instrument: "Instrument", reason: str, missing: Sequence[str]) -> str:
    """The corrective follow-up after a stop reply with unreadable ratings or no thoughts."""
    return (f"Your reply could not be read completely ({reason}). Give every missing part again, in the same "
            f"form: {', '.join(missing)}.")


# --- reading replies --------------------------------------------------------------------------

THOUGHTS = "thoughts"
_THOUGHTS_LINE = re.compile(r"^[\s>*_#-]*thoughts?[*_]*\s*[:\-–]\s*(?P<rest>.*)", re.IGNORECASE | re.MULTILINE | re.DOTALL)


def parse_stop(text: str, emotions: Sequence[str], scale: Sequence[Option],
               as_json: bool) -> dict[str, ParsedAnswer]:
    """A perceiver's reply at a vignette stop: one rating per emotion and the free-text inference.

    JSON replies are objects ``{"joy": 3, ..., "thoughts": "..."}``; text replies have one
    ``emotion: number`` line per emotion and a line starting ``Thoughts:`` (the rest of the reply
    is the inference). Returns a ParsedAnswer per emotion and one under ``"thoughts"`` (its text).

    Example:
        >>> scale = [Option(value=v) for v in range(5)]
        >>> got = parse_stop("joy: 3\\nfear: 0\\nThoughts: relieved it is over.", ["joy", "fear"], scale, False)
        >>> got["joy"].value, got["thoughts"].text
        (3, 'relieved it is over.')
    """
    ratings = parse_ratings_block(text, list(emotions), scale, as_json=as_json)
    if as_json:
        obj = find_json_object(normalise(text or "")) or {}
        found, value = lookup(obj, THOUGHTS)
        return {**ratings, THOUGHTS: parse_free_text(value if found else None)}
    match = _THOUGHTS_LINE.search(text or "")
    return {**ratings, THOUGHTS: parse_free_text(match.group("rest").strip() if match else None)}


class Vignette(ItemKind):
    """Vignettes: scored as profile accuracy (a correlation, so norms are not range-checked)."""

    name = "vignette"
    model = VignetteItem
    scores = ("ea_profile",)
    instrument_fields = {
        "emotions": (list[Id], Field(default_factory=list)),         # the emotions rated at each stop
        "emotion_scale": (list[Option], Field(default_factory=list)),
    }
    judge_placeholders = ("target", "reference", "answer", "levels", "story")

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

    def answer_scale(self, trial: Trial) -> list[Option]:
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

    def judge_tasks(self, answers: pd.DataFrame, instruments: Mapping[str, "Instrument"]) -> list[JudgeTask]:
        """A task per non-empty inference (``<vignette>:<stop>:thoughts``) whose stop has the target's
        own words (`thoughts`) to compare with; stops without them cannot be judged."""
        tasks = []
        for row in answers.itertuples(index=False):
            parts = str(row.item_id).split(":")
            if len(parts) != 3 or parts[2] != "thoughts" or not has_text(row.text):
                continue
            item = _item(instruments.get(row.instrument), parts[0])
            stop = int(parts[1]) if parts[1].isdigit() else 0
            if item is None or not 1 <= stop <= len(item.segments):
                continue
            report = item.segments[stop - 1].target_report
            if report is None or not report.thoughts:
                continue
            story = "\n\n".join(s.text for s in item.segments[:stop])
            tasks.append(JudgeTask(row.trial_id, row.item_id, {"target": item.target, "reference": report.thoughts,
                                                                 "answer": row.text, "story": story}))
        return tasks


def _item(instrument: "Instrument | None", item_id: str) -> VignetteItem | None:
    if instrument is None:
        return None
    return next((i for i in instrument.items if i.id == item_id and isinstance(i, VignetteItem)), None)


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
