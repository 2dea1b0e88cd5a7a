"""Replies to people who need help: the respondent reads a help-seeker's message and answers it
in free text, stored whole; raters (judge models, people) score the replies later.

An item of `kind: response` holds the help-seeker's `message` (and optional `context`, e.g. "a
message posted on a peer-support forum"). Each persona (or the model as itself) is asked, in one
request per item, to reply to that person as themselves; the reply is kept whole in
``answers.text``. The kind has no scores of its own: the replies become rating targets
(:func:`rating_targets`, table ``rating_targets`` of :mod:`psyq.engine.store.ratings`) which ``psyq judge``
rates on the dimensions of a multi-dimension rubric (`rubric/2`, :mod:`psyq.engine.kinds.response.rubrics`), beside
human reference replies and human ratings imported from CSV.

Answers are free text only: `answer: json` or `logprobs` in a study with response items is an
error of the study (:func:`answer_mode_problem`), since a reply has no option token and wrapping
a letter to a person in JSON changes what is written.

Example:
    >>> ResponseItem(id="m01", kind="response", message="I can't sleep.").context is None
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Mapping

from pydantic import Field

from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.trials.free_text import has_text, parse_free_text
from psyq.engine.trials.parsing import ParsedAnswer
from psyq.engine.trials.prompts import with_system
from psyq.engine.trials.trial import Trial, TrialContext, make_trial
from psyq.engine.kinds.base import ItemKind, JudgeTask

if TYPE_CHECKING:   # annotations only: loading an instrument never needs pandas
    import pandas as pd

    from psyq.engine.design.instrument import Instrument
    from psyq.engine.store.ratings import RatingTarget
    from psyq.engine.design.study import Protocol


class ResponseItem(StrictModel):
    """A help-seeker's message the respondent replies to in free text."""

    id: Id
    kind: Literal["response"]
    message: Text                   # what the person wrote, shown to the respondent verbatim
    context: Text | None = None     # where or how the message reaches the respondent (optional)
    subscales: list[Id] = Field(default_factory=list)


DEFAULT_MAX_TOKENS = 400   # a reply of a few short paragraphs


def response_messages(instrument: "Instrument", item: ResponseItem, *, system_prompt: str | None) -> list[dict[str, str]]:
    """The messages asking for one reply: the instrument's instructions, the context, the message.

    Example:
        >>> from types import SimpleNamespace
        >>> inst = SimpleNamespace(instructions="Reply to this person.")
        >>> msgs = response_messages(inst, ResponseItem(id="m", kind="response", message="Help."), system_prompt=None)
        >>> msgs[-1]["content"].splitlines()[2]
        'Their message:'
    """
    parts = [instrument.instructions.strip(), ""]
    if item.context:
        parts += [f"Context: {item.context.strip()}", ""]
    parts += ["Their message:", f'"""{item.message.strip()}"""', "",
              "Write your reply to this person, as yourself, in your own words. Reply with the text of your "
              "message only, with no title, notes or explanation around it."]
    return with_system(system_prompt, "\n".join(parts))


def answer_mode_problem(answer: str) -> str | None:
    """Why a study's `answer:` mode cannot ask response items, or None for `text`.

    Example:
        >>> answer_mode_problem("text") is None, answer_mode_problem("logprobs")[:30]
        (True, 'response items are answered in')
    """
    if answer == "text":
        return None
    why = ("there is no single answer token to read log probabilities of" if answer == "logprobs"
           else "a reply wrapped in JSON is not the reply a person would be sent")
    return (f"response items are answered in free text, so answer: {answer} is not meaningful for them ({why}); "
            "use answer: text, or put the response instrument in a study of its own")


def response_items(instrument: "Instrument") -> list[ResponseItem]:
    """The response items of an instrument, in order."""
    return [i for i in instrument.items if isinstance(i, ResponseItem)]


def rating_targets(answers: pd.DataFrame, instruments: Mapping[str, "Instrument"]) -> list["RatingTarget"]:
    """Every non-empty persona reply of a run as a rating target (answers columns ``trial_id,
    instrument, item_id, text``, as :data:`psyq.engine.judging.answer_judge.ANSWERS_QUERY` reads them).

    Example:
        >>> import pandas as pd
        >>> rating_targets(pd.DataFrame(columns=["trial_id", "instrument", "item_id", "text"]), {})
        []
    """
    from psyq.engine.store.ratings import RatingTarget

    targets = []
    for row in answers.itertuples(index=False):
        instrument = instruments.get(row.instrument)
        if instrument is None or not has_text(row.text):
            continue
        if not any(i.id == row.item_id for i in response_items(instrument)):
            continue
        targets.append(RatingTarget.persona(row.trial_id, row.item_id, instrument=row.instrument, text=row.text))
    return targets


class Response(ItemKind):
    """Free-text replies to a help-seeker's message; rated on rubric dimensions, not scored here."""

    name = "response"
    model = ResponseItem
    # An instrument needs a subscale; `rated` says the replies are scored by raters on a rubric's
    # dimensions (psyq judge, imported human ratings), so the kind forms no score itself.
    scores = ("rated",)
    plan_rank = 3
    # What a `rubric/1` rubric with `applies_to: response` may use (multi-dimension `rubric/2`
    # rubrics name their own placeholders: see psyq.engine.kinds.response.rubrics).
    judge_placeholders = ("message", "context", "reply", "levels")

    def answer_mode_problem(self, answer: str) -> str | None:
        return answer_mode_problem(answer)

    def plan_trials(self, ctx: TrialContext, instrument: "Instrument") -> Iterator[Trial]:
        """One trial per message; always free text (the study refuses json and logprobs)."""
        for item in response_items(instrument):
            messages = response_messages(instrument, item, system_prompt=ctx.system_prompt)
            yield make_trial(ctx, instrument, (item.id,), messages, ctx.backend.config.max_tokens or DEFAULT_MAX_TOKENS,
                             None, None, "response", self.name)

    def parse(self, trial: Trial, text: str, protocol: "Protocol") -> dict[str, ParsedAnswer]:
        """The whole reply, stripped of surrounding space (empty and refusals are said as such)."""
        return {trial.item_ids[0]: parse_free_text(text)}

    def reask(self, trial: Trial, reason: str, unread: list[str]) -> str:
        return f"Your reply could not be read ({reason}). Please write your reply to this person."

    def judge_tasks(self, answers: pd.DataFrame, instruments: Mapping[str, "Instrument"]) -> list[JudgeTask]:
        """A task per non-empty reply (for a one-dimension `rubric/1` rubric)."""
        tasks = []
        for target in rating_targets(answers, instruments):
            item = next(i for i in response_items(instruments[target.instrument]) if i.id == target.item_id)
            tasks.append(JudgeTask(target.trial_id or "", target.item_id,
                                   {"message": item.message, "context": item.context or "", "reply": target.text}))
        return tasks

    def file_formats(self) -> dict[str, Callable[[Any], Any]]:
        """Multi-dimension rubrics (format `rubric/2`), checked by ``psyq validate``."""
        from psyq.engine.kinds.response.rubrics import load_multi_rubric

        return {"rubric/2": load_multi_rubric}
