"""Scenes in the LEAS format: the respondent says in free text how they and one other person
would feel; the answers are scored into levels 0-5 (engine.leas, Lane et al. 1990)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Literal

from pydantic import Field

from ..fields import Id, StrictModel, Text
from ..parsing import SCENE_ROLES, ParsedAnswer, parse_scene
from ..prompts import SCENE_JSON_SCHEMA, scene_messages, scene_reask_message
from ..trial import Trial, TrialContext, make_trial
from .base import ItemKind

if TYPE_CHECKING:
    from ..instrument import Instrument
    from ..study import Protocol

# LEAS: a scene scores 0-4 for self and for other, 0-5 in total (Lane et al. 1990).
LEAS_RANGES = {"leas_self": (0, 4), "leas_other": (0, 4), "leas_total": (0, 5)}


class SceneItem(StrictModel):
    """A free-text scene (LEAS format): the respondent says how they and one other person feel."""

    id: Id
    kind: Literal["scene"]
    text: Text
    other: Text                     # how the other person is named in "How would <other> feel?"
    emotion: Literal["anger", "fear", "happiness", "sadness"] | None = None   # what the scene was written to evoke
    intensity: Literal["mild", "moderate", "strong"] | None = None
    subscales: list[Id] = Field(default_factory=list)


class Scene(ItemKind):
    """LEAS-format scenes: scored as sums of scene levels, for self, other, or in total."""

    name = "scene"
    model = SceneItem
    scores = tuple(LEAS_RANGES)

    def score_range(self, inst: "Instrument", score: str) -> tuple[float, float] | None:
        return LEAS_RANGES[score]

    def plan_trials(self, ctx: TrialContext, instrument: "Instrument") -> Iterator[Trial]:
        """One trial per scene, asking both questions in one request; free text, never logprobs."""
        answer = "json" if ctx.study.protocol.answer == "json" else "text"
        for scene in (i for i in instrument.items if isinstance(i, SceneItem)):
            messages = scene_messages(instrument, scene, system_prompt=ctx.system_prompt, answer=answer)
            yield make_trial(ctx, instrument, (scene.id,), messages, ctx.backend.config.max_tokens or 300, None,
                             SCENE_JSON_SCHEMA if answer == "json" else None, "scene", self.name)

    def answer_ids(self, trial: Trial) -> list[str]:
        """Two rows per scene: ``s01:self`` and ``s01:other``."""
        return [f"{trial.item_ids[0]}:{role}" for role in SCENE_ROLES]

    def parse(self, trial: Trial, text: str, protocol: "Protocol") -> dict[str, ParsedAnswer]:
        scene = trial.instrument.item(trial.item_ids[0])
        parts = parse_scene(text, scene.other, as_json=protocol.answer == "json")
        return {f"{scene.id}:{role}": ParsedAnswer(None, p.status, p.reason, text=p.text)
                for role, p in parts.items()}

    def reask(self, trial: Trial, reason: str, unread: list[str]) -> str:
        return scene_reask_message(reason)
