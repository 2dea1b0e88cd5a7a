"""Rating items: statements answered on the instrument's response `scale` (a classic questionnaire)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping

from pydantic import Field

from psyq.engine.files.errors import Problem, PsyqError
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.trials.parsing import ParsedAnswer, parse_json_rating, parse_rating, parse_ratings_block
from psyq.engine.trials.prompts import (answer_json_schema, instrument_messages, item_messages, reask_message,
    verbalized_json_schema)
from psyq.engine.trials.trial import Trial, TrialContext, make_trial, max_tokens_for, stable_int
from psyq.engine.files.yamlfile import YamlDocument
from psyq.engine.kinds.base import SCORE_COLUMNS, ItemKind
from psyq.engine.trials.answer_mode import DISTRIBUTION_MODES
from psyq.engine.trials.free_text import parse_free_text
from psyq.engine.trials.logprobs import chosen_value
from psyq.engine.trials.stated_distribution import DEFAULT_TOLERANCE, read_stated_distribution

if TYPE_CHECKING:   # pandas is imported where answers are scored: loading an instrument never needs it
    import pandas as pd

    from psyq.engine.design.instrument import Instrument
    from psyq.engine.design.study import Protocol

RATING_SCORES = ("sum", "mean")
# Reply length allowed for a free-text answer to a rating item (`answer: ssr`): a sentence or two.
FREE_TEXT_TOKENS = 96
# Rating scores are kept per model too (the key of psyq.analysis.scoring.scores.score_answers, as always).
RATING_KEYS = ["backend_id", "model", "respondent_id", "repeat"]


class Item(StrictModel):
    """A rating item answered on the instrument's scale.

    `text` may be left out only when the instrument declares `item_texts` (licensed texts the
    user supplies). `unscored: true` marks a filler item that belongs to no subscale on purpose;
    any other rating item outside every subscale is an error.
    """

    id: Id
    text: Text | None = None
    reverse: bool = False
    subscales: list[Id] = Field(default_factory=list)
    unscored: bool = False
    kind: Literal["rating"] = "rating"


class Rating(ItemKind):
    """Rating items: scored as prorated sums or means of their subscale's items."""

    name = "rating"
    model = Item
    scores = RATING_SCORES
    score_metrics = {"sum": "sum", "mean": "mean"}
    plan_rank = 1     # after the instrument's items of rank 0, before those of the response kind (3)

    def check_instrument(self, inst: "Instrument", doc: YamlDocument) -> list[Problem]:
        if not inst.scale:
            return [doc.problem(("items",), "rating items need a `scale` (the response options)")]
        return []

    def check_item(self, inst: "Instrument", doc: YamlDocument, index: int, item: Any) -> list[Problem]:
        problems = []
        if item.text is None and inst.item_texts is None:
            problems.append(doc.problem(("items", index, "text"), f"required field is missing (item '{item.id}'); "
                                        "an item may go without `text` only when the instrument declares "
                                        "`item_texts` (user-supplied)"))
        if item.unscored and item.subscales:
            problems.append(doc.problem(("items", index, "unscored"), f"item '{item.id}' is marked unscored but "
                                        f"lists subscales ({', '.join(item.subscales)})"))
        elif not item.subscales and not item.unscored:
            problems.append(doc.problem(("items", index), f"item '{item.id}' belongs to no subscale, so no score "
                                        "would use it; list its subscales, or mark a filler item `unscored: true`"))
        return problems

    def score_range(self, inst: "Instrument", score: str) -> tuple[float, float] | None:
        if len(inst.scale) < 2:
            return None   # a broken scale, reported already
        return inst.scale_min, inst.scale_max

    def plan_trials(self, ctx: TrialContext, instrument: "Instrument") -> Iterator[Trial]:
        """One trial per item (`presentation: per_item`) or one for all, in the protocol's item order."""
        protocol = ctx.study.protocol
        items = list(instrument.rating_items)
        if not items:
            return
        if protocol.item_order == "shuffled":
            import numpy as np   # only a shuffled order draws; a plan in written order never imports numpy

            rng = np.random.default_rng(stable_int(protocol.seed, ctx.persona.id, instrument.id, ctx.repeat))
            items = [items[i] for i in rng.permutation(len(items))]
        groups = [[item] for item in items] if protocol.presentation == "per_item" else [items]
        for group in groups:
            yield self._trial(ctx, instrument, group)

    def _trial(self, ctx: TrialContext, instrument: "Instrument", items: list) -> Trial:
        protocol, backend = ctx.study.protocol, ctx.backend
        ask = dict(system_prompt=ctx.system_prompt, option_order=ctx.option_order, answer=protocol.answer)
        if protocol.answer in DISTRIBUTION_MODES:   # one item per request (the study's checks say so)
            return self._distribution_trial(ctx, instrument, items[0])
        if len(items) == 1 and protocol.presentation == "per_item":
            messages = item_messages(instrument, items[0], **ask)
            schema = answer_json_schema(instrument) if protocol.answer == "json" else None
        else:
            messages = instrument_messages(instrument, items, **ask)
            schema = answer_json_schema(instrument, [i.id for i in items]) if protocol.answer == "json" else None
        top_logprobs = backend.top_logprobs if protocol.answer == "logprobs" else None
        return make_trial(ctx, instrument, tuple(i.id for i in items), messages,
                          max_tokens_for(protocol, len(items), backend), top_logprobs, schema, "rating", self.name,
                          ctx.option_order)

    def _distribution_trial(self, ctx: TrialContext, instrument: "Instrument", item: Item) -> Trial:
        """A trial asking for a distribution over the options (`answer: verbalized`, a stated one;
        `answer: ssr`, free text mapped onto them): its kind is the mode, so that it is read and
        re-asked in that mode."""
        answer = ctx.study.protocol.answer
        messages = item_messages(instrument, item, system_prompt=ctx.system_prompt, option_order=ctx.option_order,
                                 answer=answer)
        schema = verbalized_json_schema(instrument) if answer == "verbalized" else None
        # A stated distribution is an object of one number per option; a free-text answer a sentence or two.
        max_tokens = ctx.backend.config.max_tokens or (16 + 12 * len(instrument.scale) if answer == "verbalized"
                                                       else FREE_TEXT_TOKENS)
        return make_trial(ctx, instrument, (item.id,), messages, max_tokens, None, schema, answer, self.name,
                          ctx.option_order)

    def reads_logprobs(self, trial: Trial, protocol: "Protocol") -> bool:
        return protocol.answer == "logprobs"

    def parse(self, trial: Trial, text: str, protocol: "Protocol") -> dict[str, ParsedAnswer]:
        scale = trial.instrument.scale
        if trial.kind == "verbalized":
            settings = protocol.verbalized
            stated = read_stated_distribution(text, scale, settings.tolerance if settings else DEFAULT_TOLERANCE)
            if stated.distribution is not None:   # the answer: drawn from it, or its most likely option
                stated = replace(stated, value=chosen_value(stated.distribution, protocol.logprob_answer,
                                                            trial.request.seed))
            return {trial.item_ids[0]: stated}
        if trial.kind == "ssr":   # the text kept whole; mapped onto the options after the run's replies
            return {trial.item_ids[0]: parse_free_text(text)}
        if len(trial.item_ids) == 1 and protocol.presentation == "per_item":
            parse = parse_json_rating if protocol.answer == "json" else parse_rating
            return {trial.item_ids[0]: parse(text, scale)}
        return parse_ratings_block(text, list(trial.item_ids), scale, as_json=protocol.answer == "json")

    def reask(self, trial: Trial, reason: str, unread: list[str]) -> str:
        return reask_message(trial.instrument, reason, unread if len(trial.item_ids) > 1 else None,
                             answer=trial.kind if trial.kind in DISTRIBUTION_MODES else "text")

    def score(self, table: pd.DataFrame, instruments: Mapping[str, "Instrument"]) -> pd.DataFrame:
        """Prorated sums or means of the raw answers on each instrument's scale
        (:func:`psyq.engine.trials.scoring.score`: reverse keying, prorating, `min_answered`), per backend ×
        model × respondent × repeat; instruments without rating subscales are left out.

        The export of a run with `stages:` holds several measures per respondent (one per stage and
        situation): scored here they would be collapsed into one, so such a table is refused unless
        it holds one stage of one situation (analysis/scoring/stage_scores.py scores them stage by stage)."""
        import pandas as pd

        from psyq.engine.trials.scoring import score

        if "stage" in table.columns and len(table[["situation_id", "stage"]].drop_duplicates()) > 1:
            raise PsyqError("this run has stages (measure, evoke, measure in one conversation): its scores are "
                            "per stage and situation, which the per-respondent scores and report sections do not "
                            "hold; use psyq.analysis.scoring.stage_scores.load_stage_scores(run_dir)")
        frames = []
        for inst_id, rows in table.groupby("instrument", sort=True):
            instrument = instruments[inst_id]
            if not instrument.rating_subscales:
                continue  # free-text kinds have their own scorers
            wide = rows.pivot_table(index=RATING_KEYS, columns="item_id", values="value",
                                    aggfunc="first", dropna=False)
            wide = wide.reindex(columns=[i.id for i in instrument.rating_items])
            tidy = score(instrument, wide.reset_index(drop=True).set_index(pd.RangeIndex(len(wide))))
            keys = wide.index.to_frame(index=False)
            tidy = pd.concat([keys.iloc[tidy["respondent_id"].to_numpy()].reset_index(drop=True),
                              tidy.drop(columns="respondent_id")], axis=1)
            tidy.insert(len(RATING_KEYS), "instrument", inst_id)
            frames.append(tidy)
        if not frames:
            return pd.DataFrame(columns=RATING_KEYS + SCORE_COLUMNS[3:])
        return pd.concat(frames, ignore_index=True)
