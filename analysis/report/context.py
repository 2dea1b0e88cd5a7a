"""What every section of a run's report is given: the run, the people's data and the options, each
quantity computed once, when a section first asks for it.

The sections (:mod:`psyq.analysis.report.sections`) read what they need from one
:class:`ReportContext`: the run's answers, instruments and scores; the norm comparison (which the
fidelity section reuses); the people's answers per instrument (:class:`HumanData`), read and
checked before the run's answers are exported (:mod:`psyq.analysis.report.build`), for the
comparison, construct-validity, same-construct, twins and verdict sections. Nothing is set on a
context after it is built; what sections share as they are built is added to its two collections,
:attr:`ReportContext.invariance_fits` and :attr:`ReportContext.design_cards` (read by the verdict).

A run with conditions (engine/design/conditions.py) is reported by its groups of answers, one per
backend and condition: in the context's `table` each group is a ``backend_id`` of its own, named
``"<backend> · <condition>"`` (:func:`as_condition_groups`), so every per-backend table, figure and
scorecard row is one per group, and :attr:`ReportContext.condition_groups` says which backend,
condition and factor levels each group is. The conditions compared head to head with people
(:attr:`ReportContext.condition_comparison`) are read by the "Conditions compared" section and the
verdict.

Example:
    >>> from psyq.engine.results.run import open_run
    >>> report = ReportContext.of_run(open_run(run_dir))
    >>> sorted(report.instruments), report.staged
    (['mini'], False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.design.persona import BASELINE
from psyq.engine.files.errors import InputError
from psyq.engine.files.yamlfile import load_yaml
from psyq.engine.kinds import instruments_with
from psyq.engine.results.run import Run

from psyq.analysis.scoring.human_data import HumanData
from psyq.analysis.scoring.scores import human_scores, persona_columns, score_all_kinds
from psyq.analysis.statistics import norms
from psyq.analysis.statistics.distances import distribution_distances
from psyq.analysis.statistics.standin.conditions import compare_conditions, rank_conditions
from psyq.analysis.statistics.weighting import twin_weights


def items_by_instrument(table: pd.DataFrame, instruments: Mapping[str, Instrument]) -> dict[str, pd.DataFrame]:
    """Raw answers as respondent × item tables per instrument (first repeat, first backend only
    when there are several: reliability is a property of one set of respondents)."""
    return {inst_id: _item_table(_first_set(rows), instruments[inst_id]) for inst_id, rows in table.groupby("instrument")}


def _first_set(rows: pd.DataFrame) -> pd.DataFrame:
    """The answers of the first repeat of the first backend among `rows`."""
    return rows[(rows["repeat"] == rows["repeat"].min()) & (rows["backend_id"] == rows["backend_id"].iloc[0])]


def _item_table(rows: pd.DataFrame, instrument: Instrument) -> pd.DataFrame:
    """`rows` of one instrument as respondent × item values, the instrument's rating items in order."""
    wide = rows.pivot_table(index="respondent_id", columns="item_id", values="value", aggfunc="first", dropna=False)
    return wide.reindex(columns=[i.id for i in instrument.rating_items])


def cohort_items(table: pd.DataFrame, instrument: Instrument) -> pd.DataFrame:
    """Raw answers of one instrument as respondent × item with the persona attributes (first
    repeat of the first backend, as :func:`items_by_instrument`)."""
    first = _first_set(table[table["instrument"] == instrument.id])
    wide = _item_table(first, instrument)
    attributes = persona_columns(table)
    people = first.drop_duplicates("respondent_id").set_index("respondent_id")[attributes]
    return wide.join(people)


def in_study_order(table: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """`table` with its backends in the order the study lists them (the manifest's ``backends``), not
    by id as the export sorts them: the first backend is the study's first, and every per-backend
    table lists the models as the study does. Backends the manifest does not name come last."""
    listed = [b for b in (manifest.get("backends") or {}) if isinstance(b, str)]
    present = table["backend_id"].unique()
    if len(present) <= 1:
        return table                  # one backend: nothing to order, and no copy of a large table
    rank = {b: k for k, b in enumerate(dict.fromkeys([*listed, *sorted(present, key=str)]))}
    codes, uniques = pd.factorize(table["backend_id"])
    order = np.array([rank[b] for b in uniques])[codes].argsort(kind="stable")
    if np.array_equal(order, np.arange(len(order))):
        return table                  # already in the study's order (one backend, say): no copy of a large table
    return table.iloc[order].reset_index(drop=True)


def backend_items(table: pd.DataFrame, instrument: Instrument) -> pd.DataFrame:
    """Raw answers of one instrument as respondent × item with the persona attributes and
    ``backend_id``: the first repeat of every backend (one administration per persona, as each person
    answered once), a row per backend and persona (index: respondent_id), the backends in the
    table's order (:func:`in_study_order`): what :func:`psyq.scorecard` takes as the cohort's answers.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> mini = load_instrument("tests/data/mini_1to7.yaml")
        >>> table = pd.DataFrame({"backend_id": ["m", "m", "n"], "respondent_id": "p1", "repeat": 0,
        ...                       "instrument": "mini", "item_id": ["a", "b", "a"], "value": [3.0, 5.0, 4.0]})
        >>> backend_items(table, mini)[["backend_id", "a", "b"]]
                     backend_id    a    b
        respondent_id
        p1                    m  3.0  5.0
        p1                    n  4.0  NaN
    """
    rows = table[table["instrument"] == instrument.id]
    first = rows[rows["repeat"] == rows.groupby("backend_id")["repeat"].transform("min")]
    wide = first.pivot_table(index=["backend_id", "respondent_id"], columns="item_id", values="value",
                             aggfunc="first", dropna=False)
    wide = wide.reindex(columns=[i.id for i in instrument.rating_items]).reset_index(level="backend_id")
    attributes = persona_columns(table)
    people = first.drop_duplicates("respondent_id").set_index("respondent_id")[attributes]
    order = list(rows["backend_id"].unique())                 # in order of appearance
    wide = wide.join(people).assign(_order=lambda w: w["backend_id"].map({b: k for k, b in enumerate(order)}))
    return wide.sort_values("_order", kind="stable").drop(columns="_order")


GROUP_JOIN = " · "
"""Between a group's backend and condition in its name (``"local · asking=logprobs,persona=plain"``)."""


@dataclass(frozen=True)
class ConditionGroup:
    """One group of answers of a run with conditions: its name in the report, its backend, its
    condition's id and the condition's level of each factor (empty for a listed condition naming none)."""

    label: str
    backend: str
    condition: str
    factors: Mapping[str, str]


def condition_groups(table: pd.DataFrame, conditions: list[Mapping[str, Any]]) -> dict[str, ConditionGroup]:
    """The (backend, condition) groups of an answer table with a ``condition`` column, by name, in
    the order of the table's backends (:func:`in_study_order`), then of the study's conditions (the
    manifest's); empty for a table without conditions.

    Example:
        >>> table = pd.DataFrame({"backend_id": ["b", "b", "a"], "condition": ["y", "x", "x"]})
        >>> list(condition_groups(table, [{"id": "x", "factors": {"f": "1"}}, {"id": "y", "factors": {"f": "2"}}]))
        ['b · x', 'b · y', 'a · x']
    """
    if "condition" not in table.columns or not len(table):
        return {}
    rank = {str(c["id"]): k for k, c in enumerate(conditions)}
    factors = {str(c["id"]): dict(c.get("factors") or {}) for c in conditions}
    backends = {b: k for k, b in enumerate(pd.unique(table["backend_id"]))}
    pairs = table[["backend_id", "condition"]].drop_duplicates()
    pairs = sorted(((str(b), str(c)) for b, c in pairs.itertuples(index=False)),
                   key=lambda pair: (backends[pair[0]], rank.get(pair[1], len(rank)), pair[1]))
    return {f"{b}{GROUP_JOIN}{c}": ConditionGroup(f"{b}{GROUP_JOIN}{c}", b, c, factors.get(c, {})) for b, c in pairs}


def as_condition_groups(table: pd.DataFrame, groups: Mapping[str, ConditionGroup]) -> pd.DataFrame:
    """An answer table of a run with conditions as the report reads it: each (backend, condition)
    group a ``backend_id`` of its own (its name in `groups`), the rows in the order of `groups`, the
    ``condition`` and ``factor_<name>`` columns left out (they are the group's, not the personas'
    attributes: :attr:`ReportContext.condition_groups` keeps them).

    Example:
        >>> table = pd.DataFrame({"backend_id": ["a", "a"], "condition": ["y", "x"], "factor_f": ["2", "1"],
        ...                       "respondent_id": "p1"})
        >>> groups = condition_groups(table, [{"id": "x", "factors": {"f": "1"}}, {"id": "y", "factors": {"f": "2"}}])
        >>> as_condition_groups(table, groups).to_dict("list")
        {'backend_id': ['a · x', 'a · y'], 'respondent_id': ['p1', 'p1']}
    """
    if not groups:
        return table
    labels = table["backend_id"].astype(str) + GROUP_JOIN + table["condition"].astype(str)
    rank = {label: k for k, label in enumerate(groups)}
    order = labels.map(rank).to_numpy().argsort(kind="stable")
    out = table.drop(columns=["condition", *(c for c in table.columns if c.startswith("factor_"))])
    out = out.assign(backend_id=labels)
    return out.iloc[order].reset_index(drop=True)


def norm_choice(run_path: Path, norm_samples: list[str] | None) -> norms.SampleChoice:
    """The norm samples to compare: `norm_samples` (``--norms``) if given, else the study's `norms`,
    else all."""
    if norm_samples:
        return norm_samples
    study_file = Path(run_path) / "study.yaml"
    if study_file.exists():
        # Through psyq's bounded YAML reader, like every other file psyq reads.
        spec = load_yaml(study_file).data
        if spec.get("norms"):
            return {str(k): [str(x) for x in v] for k, v in spec["norms"].items()}
    return None


def estimator_choice(run_path: Path, estimator: str | None) -> str | None:
    """The invariance estimator: `estimator` (``--estimator``) if given, else the study's
    ``report: estimator``, else None (chosen by the items)."""
    if estimator:
        return estimator
    study_file = Path(run_path) / "study.yaml"
    if study_file.exists():
        spec = load_yaml(study_file).data
        chosen = (spec.get("report") or {}).get("estimator")
        return str(chosen) if chosen else None
    return None


@dataclass
class ReportContext:
    """One run's report in the making: what the user handed over, and what the sections compute
    from it, each once (cached)."""

    run_path: Path
    manifest: dict[str, Any]
    table: pd.DataFrame                                  # the run's answers (Run.answers, in_study_order);
                                                         # an imported run's stage scores (of_imported_run)
    instruments: Mapping[str, Instrument]
    judgements: pd.DataFrame                             # Run.judgements
    run: Run | None = None                               # the run itself (None: imported scores): what it sent
    # The sections built so far, in the order built (build.py adds each): the Materials appendix, built last,
    # looks for the places of the GUIDE-LLM checklist among them (analysis/report/guide_llm.py).
    sections: list[Any] = field(default_factory=list)
    people: Mapping[str, HumanData] = field(default_factory=dict)   # questionnaires' people's data
    # The people's item answers and retest answers per questionnaire, read (and checked) before the
    # run's answers are exported, so that a bad people's file stops the report first (build.py).
    human_items: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    retests: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    kind_people: Mapping[str, Mapping[str, HumanData]] = field(default_factory=dict)   # kind -> its --human files
    targets: Mapping[str, Path] = field(default_factory=dict)      # --targets: targets' own reports
    human_change: Path | None = None                     # --human-change: people's before/after scores
    norm_samples: list[str] | None = None
    bound: float = 0.3
    correction: str = "holm"
    # The invariance estimator: None chooses by the items (ordinal WLSMV for ≤ 7 answer categories).
    estimator: str | None = None
    warn: Callable[[str], None] | None = None
    # Invariance fits shared by the sections that need them: (instrument id, backend id) -> the frame of
    # measurement_invariance (the same-construct section fits the first backend; the verdict reuses it).
    invariance_fits: dict[tuple[str, str], pd.DataFrame] = field(default_factory=dict)
    # The scorecards of the designs other than questionnaires (psyq.analysis.statistics.standin.design_verdict), one
    # frame each, appended by the section of the design as it is built (change, LEAS levels, empathic
    # accuracy, rated replies); the verdict, built last, reads them.
    design_cards: list[pd.DataFrame] = field(default_factory=list)
    # A run with conditions: its (backend, condition) groups by name, in order (each a backend_id of `table`).
    condition_groups: Mapping[str, ConditionGroup] = field(default_factory=dict)
    # `psyq report --preregistration DIR`: the pre-registration read (analysis/preregistration/record.py) and every
    # difference of the run from it (deviations.py), computed once in build.py; None without one.
    preregistration: Any = None
    deviations: pd.DataFrame | None = None

    @classmethod
    def of_run(cls, run: Run, instruments: Mapping[str, Instrument] | None = None, *,
               people: Mapping[str, HumanData] | None = None, human_items: Mapping[str, pd.DataFrame] | None = None,
               retests: Mapping[str, pd.DataFrame] | None = None,
               kind_people: Mapping[str, Mapping[str, HumanData]] | None = None,
               targets: Mapping[str, Path] | None = None, human_change: Path | None = None,
               norm_samples: list[str] | None = None, bound: float = 0.3, correction: str = "holm",
               estimator: str | None = None, warn: Callable[[str], None] | None = None) -> ReportContext:
        """The context of `run` (its `instruments` when read already), its answers exported in the
        study's order of backends; the people's data as :mod:`psyq.analysis.report.build` read them."""
        manifest = run.manifest
        instruments = run.instruments if instruments is None else instruments
        people, kind_people, targets = people or {}, kind_people or {}, targets or {}
        human_items, retests = human_items or {}, retests or {}
        table = in_study_order(run.answers(raw_text=False), manifest)
        groups = condition_groups(table, run.conditions) if run.conditions else {}
        return cls(Path(run.path), manifest, as_condition_groups(table, groups), instruments,
                   run.judgements, run=run, people=people, human_items=human_items, retests=retests,
                   kind_people=kind_people, targets=targets, human_change=human_change, norm_samples=norm_samples,
                   bound=bound, correction=correction, estimator=estimator, warn=warn, condition_groups=groups)

    @classmethod
    def of_imported_run(cls, run_path: str | Path, manifest: dict[str, Any], scores: pd.DataFrame, *,
                        human_change: Path | None = None, bound: float = 0.3,
                        warn: Callable[[str], None] | None = None) -> ReportContext:
        """The context of an imported run (:mod:`psyq.engine.results.imported_run`: scores psyq did not
        collect): no answers, no instruments, no judgements; its `table` is the imported stage scores, so
        the context is :attr:`staged`. It carries what the change section computed (``design_cards``) to
        the verdict."""
        return cls(Path(run_path), manifest, scores, {}, pd.DataFrame(), human_change=human_change, bound=bound,
                   warn=warn)

    def say(self, message: str) -> None:
        """Pass a warning the report shows to the caller's `warn` as well (e.g. stderr)."""
        if self.warn:
            self.warn(message)

    @cached_property
    def staged(self) -> bool:
        """Whether the run has stages (measure, evoke, measure): its scores are change scores."""
        return "stage" in self.table.columns and bool(self.table["stage"].notna().any())

    @cached_property
    def rated(self) -> dict[str, Instrument]:
        """The instruments with rating items (the item-level analyses are theirs)."""
        return {i: inst for i, inst in self.instruments.items() if inst.rating_items}

    @cached_property
    def rated_table(self) -> pd.DataFrame:
        return self.table[self.table["instrument"].isin(self.rated)]

    @cached_property
    def scores(self) -> pd.DataFrame:
        """Every kind's subscale scores, long format (none for a staged run)."""
        return pd.DataFrame() if self.staged else score_all_kinds(self.table, self.instruments)

    @cached_property
    def attributes(self) -> list[str]:
        """The persona attribute columns of the answers."""
        return persona_columns(self.table)

    @cached_property
    def items(self) -> dict[str, pd.DataFrame]:
        """Rating instruments' answers, respondent × item (first repeat, first backend)."""
        return items_by_instrument(self.rated_table, self.rated)

    @cached_property
    def choice(self) -> norms.SampleChoice:
        return norm_choice(self.run_path, self.norm_samples)

    @cached_property
    def norm_comparison(self) -> pd.DataFrame:
        """The cohort against the chosen norm samples (:func:`norms.compare_with_norms`); no rows for a
        run without scores (a staged or imported run: its scores are change scores)."""
        if self.scores.empty:
            return pd.DataFrame(columns=norms.COLUMNS)
        try:
            return norms.compare_with_norms(self.scores, self.instruments, bound=self.bound,
                                            correction=self.correction, samples=self.choice)
        except KeyError as exc:
            raise InputError.single("--norms", str(exc).strip("'\"")) from None

    @cached_property
    def human_long(self) -> pd.DataFrame:
        """The people's subscale scores, long format, as the cohort's."""
        return pd.concat([human_scores(self.human_items[i], self.instruments[i]) for i in self.human_items],
                         ignore_index=True)

    @cached_property
    def cohort_weights(self) -> dict[str, pd.Series | None]:
        """Survey weights of the cohort side per instrument with people's data: the people's when the
        personas are their twins, else None (:func:`twin_weights`)."""
        return {i: twin_weights(self.items[i], self.human_items[i]) for i in self.human_items if i in self.items}

    @cached_property
    def cohort_answers(self) -> dict[str, pd.DataFrame]:
        """The cohort's answers with persona attributes, per rating instrument with people's data."""
        present = set(self.rated_table["instrument"].unique())
        return {i: cohort_items(self.rated_table, self.rated[i]) for i in self.human_items
                if i in self.rated and i in present}

    @cached_property
    def backend_answers(self) -> dict[str, pd.DataFrame]:
        """Every backend's answers (first repeat) with persona attributes and ``backend_id``, per rating
        instrument with people's data (:func:`backend_items`): each model compared with people."""
        present = set(self.rated_table["instrument"].unique())
        return {i: backend_items(self.rated_table, self.rated[i]) for i in self.human_items
                if i in self.rated and i in present}

    def condition_answers(self, instrument: str) -> dict[str, pd.DataFrame]:
        """A run with conditions: each group's answers to `instrument` (first repeat, persona attributes)
        by the group's name, in the order of :attr:`condition_groups`, the model answering as itself left
        out; what :func:`psyq.compare_conditions` takes. Empty without conditions or people's data."""
        answers = self.backend_answers.get(instrument) if self.condition_groups else None
        if answers is None:
            return {}
        answers = answers[answers.index.astype(str) != BASELINE.id]
        parts = {str(label): part.drop(columns="backend_id") for label, part in answers.groupby("backend_id", sort=False)}
        return {label: parts[label] for label in self.condition_groups if label in parts}

    @cached_property
    def condition_comparison(self) -> dict[str, pd.DataFrame]:
        """A run with conditions, per rating instrument with people's data: every pair of groups on every
        criterion (:func:`psyq.compare_conditions`, Holm over pairs × criteria; its ``attrs["distances"]``
        each group's distance from people). Computed once, for the "Conditions compared" section and the
        verdict."""
        out = {}
        for inst_id in self.backend_answers if self.condition_groups else ():
            frames = self.condition_answers(inst_id)
            if len(frames) > 1:
                out[inst_id] = compare_conditions(frames, self.human_items[inst_id], self.rated[inst_id])
        return out

    @cached_property
    def condition_ranks(self) -> dict[str, pd.DataFrame]:
        """The groups ranked per criterion (:func:`psyq.rank_conditions`), per instrument of
        :attr:`condition_comparison`."""
        return {inst_id: rank_conditions(frame) for inst_id, frame in self.condition_comparison.items()}

    @cached_property
    def condition_distances(self) -> dict[str, pd.DataFrame]:
        """Per instrument of :attr:`condition_comparison`, every group's answer distribution against the
        people's, item by item (:func:`psyq.distribution_distances`: TVD, Wasserstein-1, the people's
        split-half ceiling, SimBench's score)."""
        return {inst_id: distribution_distances(self.condition_answers(inst_id), self.human_items[inst_id],
                                                self.rated[inst_id])
                for inst_id in self.condition_comparison}

    @cached_property
    def first_backend(self) -> str:
        """The backend the single-sample sections (reliability, same construct, twins) report: the
        study's first (:func:`in_study_order`)."""
        return str(self.table["backend_id"].iloc[0]) if len(self.table) else ""

    def kind_instruments(self, kind: str) -> list[str]:
        """The run's instruments with items of `kind`."""
        return instruments_with(kind, self.instruments)
