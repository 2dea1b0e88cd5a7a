"""What an item kind provides to the shared machinery (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, Mapping

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import StrictModel
from psyq.engine.files.yamlfile import YamlDocument

if TYPE_CHECKING:   # only for annotations: the instrument imports the kinds, not the reverse
    import pandas as pd

    from psyq.engine.design.instrument import Instrument
    from psyq.engine.trials.parsing import ParsedAnswer
    from psyq.engine.trials.scale import Option
    from psyq.engine.design.study import Protocol
    from psyq.engine.trials.trial import Trial, TrialContext

SCORE_COLUMNS = ["backend_id", "respondent_id", "repeat", "instrument", "subscale", "score", "n_answered",
                 "n_items", "prorated"]
"""The columns of :meth:`ItemKind.score` (a kind may add ``model`` after ``backend_id``)."""


@dataclass(frozen=True)
class JudgeTask:
    """One free-text answer to judge and the values the rubric's prompt is filled with."""

    trial_id: str
    item_id: str
    fields: dict[str, str]


class ItemKind:
    """One kind of item: its format model, its scoring rules and its meaning checks.

    Subclass it in one module, fill in the class attributes, override the checks the kind needs,
    and :func:`psyq.engine.kinds.register` an instance. Every method has a harmless default, so the
    smallest kind is a model, a name and the score rules it owns.
    """

    name: ClassVar[str]
    """The `kind:` of the item in an instrument file (rating items may leave `kind` out)."""
    model: ClassVar[type[StrictModel]]
    """The pydantic model of one item of this kind, with `kind: Literal[<name>]`."""
    scores: ClassVar[tuple[str, ...]] = ()
    """The subscale `score:` rules that score items of this kind."""
    score_metrics: ClassVar[dict[str, str]] = {}
    """The metric of each of :attr:`scores` as a norm sample's `metric` names it: ``sum`` (a sum over
    the subscale's items) or ``mean`` (their mean), so that a norm on the other metric is converted; a
    rule left out is neither (e.g. a correlation), and its norms are compared as they are."""
    plan_rank: ClassVar[int] = 0
    """Where this kind's trials come among an instrument's trials (lower first)."""
    instrument_fields: ClassVar[dict[str, tuple[Any, Any]]] = {}
    """Instrument-level fields the kind adds to the instrument format, as ``name: (type,
    pydantic Field)``; e.g. the emotions rated in a story and their scale. Every instrument has
    them (with their defaults); the kind's :meth:`check_instrument` says when they are needed."""
    judge_placeholders: ClassVar[tuple[str, ...]] = ()
    """The placeholders a judge rubric for this kind may use in its prompt (`applies_to:` the
    kind's name); none: no rubric can apply to the kind."""

    def check_instrument(self, inst: "Instrument", doc: YamlDocument) -> list[Problem]:
        """Checks on the whole instrument, run once when it holds items of this kind."""
        return []

    def check_item(self, inst: "Instrument", doc: YamlDocument, index: int, item: Any) -> list[Problem]:
        """Checks on one item of this kind (`index`: its place in `items`)."""
        return []

    def answer_mode_problem(self, answer: str) -> str | None:
        """Why a study's `answer:` mode (text, json, logprobs) cannot ask this kind's items, or
        None when it can (the default: the kind reads the answer in whatever way fits)."""
        return None

    def score_range(self, inst: "Instrument", score: str) -> tuple[float, float] | None:
        """Lowest and highest score of one item under rule `score`, for checking norm values;
        None when a norm's mean and SD cannot be checked that way (e.g. a correlation)."""
        return None

    # Administering: the runner plans, sends and reads trials through these, never by kind name.

    def plan_trials(self, ctx: "TrialContext", instrument: "Instrument") -> Iterator["Trial"]:
        """The trials that ask one respondent (`ctx`) this kind's items of `instrument`, in order."""
        return iter(())

    def answer_ids(self, trial: "Trial") -> list[str]:
        """The answer rows a trial of this kind produces (one per item by default)."""
        return list(trial.item_ids)

    def answer_scale(self, trial: "Trial") -> list["Option"]:
        """The options a numeric answer of the trial is read on."""
        return trial.instrument.scale

    def reads_logprobs(self, trial: "Trial", protocol: "Protocol") -> bool:
        """True when the trial's answer is read from first-token log probabilities, not from text."""
        return False

    def parse(self, trial: "Trial", text: str, protocol: "Protocol") -> dict[str, "ParsedAnswer"]:
        """Every answer of the trial read from one reply text (keys: :meth:`answer_ids`)."""
        raise NotImplementedError(f"item kind '{self.name}' does not read replies")

    def reask(self, trial: "Trial", reason: str, unread: list[str]) -> str:
        """The corrective follow-up asking again for the answers `unread` (with why: `reason`)."""
        return f"Your answer could not be read ({reason}). Please answer again."

    # Scoring, judging and checking files: the shared code iterates over the kinds and asks.

    def score(self, table: "pd.DataFrame", instruments: Mapping[str, "Instrument"]) -> "pd.DataFrame | None":
        """The subscale scores of this kind's items in an exported answers `table` (columns
        :data:`SCORE_COLUMNS`, one row per backend × respondent × repeat × instrument × subscale);
        None when the kind has no per-respondent scores of that shape (its report section scores it)."""
        return None

    def judge_tasks(self, answers: "pd.DataFrame", instruments: Mapping[str, "Instrument"]) -> list[JudgeTask]:
        """The answers a judge rubric with `applies_to: <name>` scores, among a run's answers
        (columns ``trial_id, instrument, item_id, text``); each task fills the rubric's
        :attr:`judge_placeholders` except ``levels``."""
        return []

    def answer_flags(self, answers: "pd.DataFrame", instruments: Mapping[str, "Instrument"]
                     ) -> dict[tuple[str, str], tuple[str, ...]]:
        """The answers among `answers` (columns as :meth:`judge_tasks` takes them) whose automatic
        score a rule known to be fragile decided, by ``(trial_id, item_id)``, with those rules: the
        answers ``psyq rating-sheet --flagged`` gives people to score. None by default."""
        return {}

    def file_formats(self) -> dict[str, Callable[[Any], Any]]:
        """Loaders of the YAML file formats the kind brings (`psyq:` value -> load(path)), which
        ``psyq validate`` checks like instruments and studies."""
        return {}
