"""Scenes in the LEAS format: the respondent says in free text how they and one other person
would feel; the answers are scored into levels 0-5 (:mod:`.leas`, Lane et al. 1990).

Everything particular to scenes is here: the item model, how a scene is asked and its reply
split into its two answers (``<scene>:self``, ``<scene>:other``), re-asking, the lexicon scoring
of the answers into `leas_self`, `leas_other` and `leas_total` sums (:mod:`.leas`, read clause by
clause: :mod:`.leas_clauses`, :mod:`.leas_people`, :mod:`.leas_spelling`), the LEAS details of
each answer (:func:`scene_answer_levels`: the rules that fired, and a flag where a fragile one
decided the level), what a judge model or a person is asked about each answer, and the lexicon
file formats (`lexicon/1`, its companion `real_words/1`). Its report section is
:mod:`psyq.analysis.report.sections.scene`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Mapping

from pydantic import Field

from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.trials.free_text import ParsedText, has_text, text_part
from psyq.engine.trials.json_object import find_json_object, lookup
from psyq.engine.trials.parsing import ParsedAnswer, is_refusal
from psyq.engine.trials.prompts import with_system
from psyq.engine.trials.trial import Trial, TrialContext, make_trial
from psyq.engine.kinds.base import SCORE_COLUMNS, ItemKind, JudgeTask

if TYPE_CHECKING:   # pandas is imported where scenes are scored: loading an instrument never needs it
    import pandas as pd

    from psyq.engine.design.instrument import Instrument
    from psyq.engine.design.study import Protocol
    from psyq.engine.kinds.scene.leas import Lexicon

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


# --- asking -----------------------------------------------------------------------------------

def scene_messages(instrument: "Instrument", item: SceneItem, *, system_prompt: str | None,
                   answer: str) -> list[dict[str, str]]:
    """Messages asking one free-text scene: how would you feel, how would the other person feel."""
    if answer == "json":
        how = ('Reply with JSON only, in the form {"you": "...", "other": "..."}: under "you", how you would '
               f'feel; under "other", how {item.other} would feel.')
    else:
        how = 'Answer both questions, starting the first answer with "You:" and the second with "Other:".'
    user = (f"{instrument.instructions.strip()}\n\nScene: {item.text}\n\n"
            f"How would you feel? How would {item.other} feel?\n\n{how}")
    return with_system(system_prompt, user)


def scene_reask_message(reason: str) -> str:
    """The corrective follow-up after a scene answer that could not be split into its two parts."""
    return (f"Your answer could not be read ({reason}). Please answer both questions: how you would feel, "
            'starting with "You:", and how the other person would feel, starting with "Other:".')


SCENE_JSON_SCHEMA = {"type": "object", "properties": {"you": {"type": "string"}, "other": {"type": "string"}},
                     "required": ["you", "other"]}


# --- reading replies --------------------------------------------------------------------------

SCENE_ROLES = ("self", "other")
_ROLE_LINE = re.compile(r"^\s*[*_#>\-\s]*(you|yourself|me|i|self|other|they|the other person)\s*[*_]*\s*[:\-–]\s*",
                        re.IGNORECASE | re.MULTILINE)


def parse_scene(text: str, other: str, as_json: bool) -> dict[str, ParsedText]:
    """Split a scene answer into the respondent's own feelings ('self') and the other person's.

    JSON answers are objects ``{"you": ..., "other": ...}``; text answers have two parts
    introduced by ``You:`` and ``Other:`` (or the other person's name, as the question gave it).

    Example:
        >>> parse_scene("You: I'd be furious.\\nYour neighbour: embarrassed.", "your neighbour", False)["other"].text
        'embarrassed.'
    """
    if as_json:
        obj = find_json_object(text or "")
        if obj is None:
            return {r: ParsedText(None, "unparseable", "the reply is not a JSON object") for r in SCENE_ROLES}
        found_self, you = lookup(obj, "you")
        found_other, them = lookup(obj, "other")
        return {"self": text_part(you if found_self else None), "other": text_part(them if found_other else None)}
    if not (text or "").strip():
        return {r: ParsedText(None, "empty", "the answer is empty") for r in SCENE_ROLES}
    other_re = re.compile(rf"^\s*[*_#>\-\s]*{re.escape(other)}\s*[*_]*\s*[:\-–]\s*", re.IGNORECASE | re.MULTILINE)
    marks = sorted([(m.start(), m.end(), "self" if m.group(1).lower() in ("you", "yourself", "me", "i", "self")
                     else "other") for m in _ROLE_LINE.finditer(text)]
                   + [(m.start(), m.end(), "other") for m in other_re.finditer(text)])
    parts: dict[str, str] = {}
    for k, (start, end, role) in enumerate(marks):
        stop = marks[k + 1][0] if k + 1 < len(marks) else len(text)
        if role not in parts:
            parts[role] = text[end:stop].strip()
    if not parts:
        if is_refusal(text):
            return {r: ParsedText(text.strip(), "refusal", "the answer declines to describe feelings")
                    for r in SCENE_ROLES}
        return {r: ParsedText(None, "unparseable", "no 'You:' / 'Other:' parts found") for r in SCENE_ROLES}
    return {r: text_part(parts.get(r)) for r in SCENE_ROLES}


# --- scoring ----------------------------------------------------------------------------------

def scene_instruments(instruments: Mapping[str, "Instrument"]) -> list[str]:
    """Ids of the instruments with scene items."""
    return [i for i, inst in instruments.items() if any(isinstance(x, SceneItem) for x in inst.items)]


def scene_others(instruments: Mapping[str, "Instrument"]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(instrument, scene) -> the words naming the scene's other person (:func:`.leas.other_words`),
    which the scorer reads to tell whose feeling a word names."""
    from psyq.engine.kinds.scene.leas import other_words

    return {(inst_id, item.id): other_words(item.other) for inst_id, inst in instruments.items()
            for item in inst.items if isinstance(item, SceneItem)}


def scene_levels(table: pd.DataFrame, instruments: Mapping[str, "Instrument"],
                 lexicon: "Lexicon | None" = None) -> pd.DataFrame:
    """LEAS levels per scene (self, other, total) for every instrument with scene items, with the
    rules that fired on each answer and the fragile ones that decided its level
    (:func:`.leas.score_scenes`; default lexicon :data:`.leas.DEFAULT_LEXICON`)."""
    import pandas as pd

    from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, SCENE_LEVEL_COLUMNS, load_lexicon, score_scenes

    ids = scene_instruments(instruments)
    if not ids:   # nothing to score, so no lexicon to read
        return pd.DataFrame(columns=SCENE_LEVEL_COLUMNS)
    return score_scenes(table[table["instrument"].isin(ids)], lexicon or load_lexicon(DEFAULT_LEXICON),
                        scene_others(instruments))


def scene_answer_levels(table: pd.DataFrame, instruments: Mapping[str, "Instrument"],
                        lexicon: "Lexicon | None" = None) -> pd.DataFrame:
    """Every scene answer with text, one row each, with the LEAS details the scorer gives it:
    the columns of `table` and ``leas_level`` (0-4), ``leas_rules`` (the rules that fired, e.g.
    ``negation(angry); whose(furious)``), ``leas_flags`` (the fragile rules that decided the level)
    and ``leas_flagged`` (whether any did: an answer for people to score).

    Example:
        >>> import pandas as pd
        >>> from psyq.engine.design.instrument import load_instrument
        >>> table = pd.DataFrame({"backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "leas_psyq",
        ...                       "item_id": ["s01:self", "s01:other"], "text": ["Fine. She'd be livid.", "Grateful."]})
        >>> scene_answer_levels(table, {"leas_psyq": load_instrument("leas_psyq")})[["leas_level", "leas_flagged"]].values.tolist()
        [[2, True], [3, False]]
    """
    import pandas as pd

    from psyq.engine.kinds.scene.leas import ANSWER_COLUMNS, DEFAULT_LEXICON, load_lexicon, score_scene_rows

    ids = scene_instruments(instruments)
    rows = table[table["instrument"].isin(ids) & table["text"].map(has_text)]
    if rows.empty:
        return pd.DataFrame(columns=list(table.columns) + ANSWER_COLUMNS)
    return score_scene_rows(rows, lexicon or load_lexicon(DEFAULT_LEXICON), scene_others(instruments))[0]


def score_scene_answers(table: pd.DataFrame, instruments: Mapping[str, "Instrument"],
                        lexicon: "Lexicon | None" = None) -> pd.DataFrame:
    """LEAS self/other/total sums per respondent and repeat (columns ``SCORE_COLUMNS``), so that
    norm comparison works for an official LEAS form that carries norms."""
    import pandas as pd

    from psyq.engine.kinds.scene.leas import leas_scores

    levels = scene_levels(table, instruments, lexicon)
    if levels.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    sums = leas_scores(levels)
    n_scenes = levels.groupby(["backend_id", "respondent_id", "repeat", "instrument"]).size().rename("n_items")
    sums = sums.merge(n_scenes.reset_index(), on=["backend_id", "respondent_id", "repeat", "instrument"])
    sums["n_answered"] = sums["n_items"]
    sums["prorated"] = False   # a scene sum is over the scenes answered; nothing is prorated
    return sums


class Scene(ItemKind):
    """LEAS-format scenes: scored as sums of scene levels, for self, other, or in total."""

    name = "scene"
    model = SceneItem
    scores = tuple(LEAS_RANGES)
    score_metrics = dict.fromkeys(LEAS_RANGES, "sum")     # sums of the scenes' levels
    judge_placeholders = ("scene", "question", "answer", "levels")

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

    def score(self, table: pd.DataFrame, instruments: Mapping[str, "Instrument"]) -> pd.DataFrame:
        """LEAS sums scored with psyq's lexicon (:func:`score_scene_answers`)."""
        return score_scene_answers(table, instruments)

    def judge_tasks(self, answers: pd.DataFrame, instruments: Mapping[str, "Instrument"]) -> list[JudgeTask]:
        """A task per non-empty scene answer (``<scene>:self`` / ``<scene>:other``)."""
        tasks = []
        for row, item, role in _scene_answers(answers, instruments):
            question = "How would you feel?" if role == "self" else f"How would {item.other} feel?"
            tasks.append(JudgeTask(row.trial_id, row.item_id, {"scene": item.text, "question": question,
                                                                 "answer": row.text}))
        return tasks

    def answer_flags(self, answers: pd.DataFrame, instruments: Mapping[str, "Instrument"]
                     ) -> dict[tuple[str, str], tuple[str, ...]]:
        """The scene answers whose lexicon level a fragile rule decided (:attr:`.leas.AnswerScore.flags`)."""
        from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, load_lexicon, other_words, score_answer

        found = list(_scene_answers(answers, instruments))
        lexicon = load_lexicon(DEFAULT_LEXICON) if found else None
        flags = {}
        for row, item, role in found:
            decided = score_answer(row.text, lexicon, role, other_words(item.other)).flags
            if decided:
                flags[(row.trial_id, row.item_id)] = decided
        return flags

    def file_formats(self) -> dict[str, Callable[[Any], Any]]:
        """Lexicon files (format `lexicon/1`) and their companion files of real words
        (`real_words/1`), checked by ``psyq validate``."""
        from psyq.engine.kinds.scene.leas import load_lexicon
        from psyq.engine.kinds.scene.leas_spelling import load_real_words

        return {"lexicon/1": load_lexicon, "real_words/1": load_real_words}


def _scene_answers(answers: pd.DataFrame, instruments: Mapping[str, "Instrument"]) -> Iterator[tuple[Any, SceneItem, str]]:
    """(row, scene, role) of each non-empty scene answer among `answers`."""
    for row in answers.itertuples(index=False):
        scene_id, _, role = str(row.item_id).partition(":")
        item = _item(instruments.get(row.instrument), scene_id)
        if item is not None and role in ("self", "other") and has_text(row.text):
            yield row, item, role


def _item(instrument: "Instrument | None", item_id: str) -> SceneItem | None:
    if instrument is None:
        return None
    return next((i for i in instrument.items if i.id == item_id and isinstance(i, SceneItem)), None)
