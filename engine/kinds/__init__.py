"""Item kinds as plug-ins: one module (or small package) per kind of item, and the registry.

An instrument's items are told apart by `kind:` (`rating` when left out). What is particular to
one kind lives in that kind's module: the fields of its items (and any instrument-level fields
the kind needs) with their meaning checks, the subscale scoring rules it owns and the range of
their scores, how its trials are planned and asked, how its replies are read and re-asked, how its
answers are scored, what a judge model is asked about them, and the file formats it brings. The
shared machinery asks the registry (:mod:`.registry`) instead of branching on the kind's name:

- :mod:`psyq.engine.design.instrument` builds its item union, its `score:` rules, the instrument fields the
  kinds add (:attr:`ItemKind.instrument_fields`) and its checks from the registered kinds;
- :mod:`psyq.engine.files.validation` strips the kinds' tags from error locations;
- :mod:`psyq.engine.administer.plan` has each kind plan its trials; :mod:`psyq.engine.administer.send_trial`
  sends them and hands every reply back
  to the trial's kind to read (:meth:`ItemKind.parse`) and, when needed, re-ask
  (:meth:`ItemKind.reask`); the export holds the rows of :meth:`ItemKind.answer_ids`;
- :mod:`psyq.analysis.scoring.scores` has each kind score its items (:meth:`ItemKind.score`);
- :mod:`psyq.engine.judging.answer_judge` takes a rubric's `applies_to:` as a kind's name and asks that kind what to
  judge (:meth:`ItemKind.judge_tasks`, :attr:`ItemKind.judge_placeholders`);
- ``psyq validate`` checks the file formats the kinds bring (:meth:`ItemKind.file_formats`);
- :mod:`psyq.analysis.report` adds the section each kind registers in :mod:`psyq.analysis.report.sections` (a
  report section uses the report's tables and figures, so it lives in analysis, registered under
  the kind's name).

Built in: :mod:`~psyq.engine.kinds.rating` (answered on the instrument's scale),
:mod:`~psyq.engine.kinds.scene` (free-text LEAS-format scenes; lexicon scoring in
:mod:`psyq.engine.kinds.scene.leas`), :mod:`~psyq.engine.kinds.vignette` (empathic-accuracy stories with
stop points; accuracy scores in :mod:`psyq.engine.kinds.vignette.accuracy`, the CSV readers in
:mod:`psyq.engine.kinds.vignette.accuracy_csv`),
:mod:`~psyq.engine.kinds.response` (free-text replies to a help-seeker's message, rated later on a
rubric's dimensions). The
shared prompt and parsing helpers they call are in :mod:`psyq.engine.trials.prompts` and :mod:`psyq.engine.trials.parsing`.

How to add a kind
-----------------
Write one module in this package and register an instance of its :class:`ItemKind` at the end
of this file; nothing else needs to change for the kind's items to validate, be administered and
be stored. The smallest kind is a one-question free-text item; in full, as a worked example
(``engine/kinds/note.py``)::

    from typing import Literal
    from pydantic import Field
    from psyq.engine.files.fields import Id, StrictModel, Text
    from psyq.engine.trials.free_text import parse_free_text
    from psyq.engine.trials.trial import make_trial
    from psyq.engine.kinds.base import ItemKind

    class NoteItem(StrictModel):
        id: Id
        kind: Literal["note"]                  # the tag that picks this model in an instrument file
        text: Text
        subscales: list[Id] = Field(default_factory=list)

    class Note(ItemKind):
        name = "note"
        model = NoteItem
        scores = ()                            # `score:` rules it owns (none: stored, not scored)

        def plan_trials(self, ctx, instrument):             # one request per item
            for item in (i for i in instrument.items if isinstance(i, NoteItem)):
                messages = [{"role": "user", "content": item.text}]
                yield make_trial(ctx, instrument, (item.id,), messages,
                                 ctx.backend.config.max_tokens or 200, None, None, "note", self.name)

        def parse(self, trial, text, protocol):             # keys: answer_ids(trial)
            return {trial.item_ids[0]: parse_free_text(text)}

    # at the end of engine/kinds/__init__.py:
    from . import note
    register(note.Note())

Defaults cover the rest (:meth:`ItemKind.answer_ids`: one row per item; no re-ask beyond a
generic one; answers never read from log probabilities; no scores, nothing to judge, no
instrument fields, no file formats). Override :meth:`ItemKind.check_instrument` /
:meth:`ItemKind.check_item` for meaning checks, :meth:`ItemKind.score_range` when norms of the
kind's scores can be range-checked, :meth:`ItemKind.score` when its answers have subscale scores
(columns :data:`~psyq.engine.kinds.base.SCORE_COLUMNS`), :meth:`ItemKind.judge_tasks` with
:attr:`ItemKind.judge_placeholders` when a judge model may score them. A kind that grows beyond
one module becomes a package (as :mod:`~psyq.engine.kinds.scene` and :mod:`~psyq.engine.kinds.vignette`).

Optionally, the kind's own report section goes in ``analysis/kinds/note.py``, registered under the
same name at the end of ``analysis/report/sections/`` (worked example in that package's
docstring). Without one, the kind's scores still appear in the report's shared sections.

The built-in :mod:`~psyq.engine.kinds.scene` is the smallest real kind to read next.

Example:
    >>> get_kind("scene").scores
    ('leas_self', 'leas_other', 'leas_total')
    >>> item_kinds()
    ('rating', 'scene', 'vignette', 'response')

May import: files, backends, store, trials (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""

from __future__ import annotations

from psyq.engine.kinds.base import ItemKind, JudgeTask
from psyq.engine.kinds.registry import (all_kinds, get_kind, instruments_with, item_kinds, register,
    score_kinds)

from psyq.engine.kinds import rating, response, scene, vignette  # noqa: E402  (the built-in kinds, registered in this order)

register(rating.Rating())
register(scene.Scene())
register(vignette.Vignette())
register(response.Response())

__all__ = ["ItemKind", "JudgeTask", "register", "get_kind", "item_kinds", "all_kinds", "score_kinds",
           "instruments_with"]
