"""Studies: which instruments, which respondents, which backends, under which protocol.

A study file (format `study/1`, documented in ``studies/README.md``) names instrument and cohort
files by path (relative to the study file), lists the backends, and fixes the protocol: how
items are presented, in which order, how answers are asked for, how often, and the seed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_serializer

from psyq.engine.backends.base import BackendConfig
from psyq.engine.files.hashing import file_sha256
from psyq.engine.backends.capabilities import design_problems
from psyq.engine.backends.endpoint import base_url_problem, key_env_problem, normalise_endpoint
from psyq.engine.backends.registry import backend_class, kinds_where, quoted_kinds
from psyq.engine.trials.answer_mode import ProtocolAnswer
from psyq.engine.design.asking import (SsrSettings, VerbalizedSettings, distribution_mode_problems, reading_key,
    study_anchors, without_unset_modes)
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.design.instrument import Instrument, item_texts_path, load_instrument, missing_texts_message
from psyq.engine.kinds import get_kind
from psyq.engine.design.cohort_file import load_cohort
from psyq.engine.design.conditions import (Condition, ConditionDocument, ConditionsSpec, expand_conditions,
    merge_condition_problems)
from psyq.engine.design.persona import Cohort
from psyq.engine.design.prices import ModelPrice
from psyq.engine.trials.prompts import answer_tokens
from psyq.engine.design.situations import SituationSet, load_situations
from psyq.engine.files.shipped import locate
from psyq.engine.files.validation import load_document, raise_problems
from psyq.engine.files.yamlfile import YamlDocument, load_yaml


MAX_REPEATS = 1000
MAX_REASKS = 100


class Protocol(StrictModel):
    """How instruments are administered; every field is recorded in the run's manifest."""

    presentation: Literal["per_item", "whole_instrument"] = "per_item"
    item_order: Literal["fixed", "shuffled"] = "fixed"
    option_order: Literal["as_written", "reversed", "counterbalanced"] = "as_written"
    # Upper bounds: a typo (repeats: 1000000000) must not plan a billion trials, and the values
    # are stored as 64-bit SQLite integers.
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    answer: ProtocolAnswer = "text"
    # The answer taken from a distribution (logprobs, verbalized, ssr): drawn with the seed, or the most likely.
    logprob_answer: Literal["sample", "most_likely"] = "sample"
    reask_limit: int = Field(default=2, ge=0, le=MAX_REASKS)
    seed: int = Field(default=0, ge=-(2**63) + 1, le=2**63 - 1)
    # How a distribution mode's answer is read (engine/design/asking.py); dumped only when given.
    verbalized: VerbalizedSettings | None = None
    ssr: SsrSettings | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        return without_unset_modes(handler(self))

    def reading_key(self) -> dict[str, Any]:
        """What decides how this protocol's distribution mode reads an answer, for a trial's id
        (engine/design/asking.py; empty for the other modes)."""
        return reading_key(self)


class MeasureStage(StrictModel):
    """A stage that asks one instrument of the study, whole, in one request."""

    measure: Id


class EvokeStage(StrictModel):
    """A stage that asks the respondent to imagine the chain's situation (`evoke: situations`)."""

    evoke: Literal["situations"]


class SampleSituations(StrictModel):
    """A seeded sample of N situations per respondent."""

    sample: int = Field(ge=1)
    seed: int = Field(default=0, ge=-(2**63) + 1, le=2**63 - 1)


class SituationsSpec(StrictModel):
    """Which situation set a staged study uses, and which of its situations each respondent gets."""

    file: Text
    per_respondent: Literal["all"] | SampleSituations = "all"


class ReportOptions(StrictModel):
    """How `psyq report` analyses the run (its command-line options override these)."""

    # The measurement-invariance estimator, as lavaan's; absent: WLSMV (items ordinal) for scales of
    # seven answer categories or fewer, else ML (continuous).
    estimator: Literal["ML", "MLR", "WLSMV"] | None = None


class StudySpec(StrictModel):
    """The study file as written."""

    psyq: Literal["study/1"]
    id: Id
    description: Text | None = None
    instruments: list[Text] = Field(min_length=1)
    cohort: Text
    backends: list[BackendConfig] = Field(min_length=1)
    protocol: Protocol = Protocol()
    # instrument id -> the norm samples `psyq report` compares (default: every sample)
    norms: dict[Id, list[Id]] = Field(default_factory=dict)
    # how `psyq report` analyses the run; not part of the run id (it decides no answer)
    report: ReportOptions = ReportOptions()
    # model name -> USD per 1M input/output tokens, for `psyq plan` and a run's cost (engine/design/prices.py);
    # not part of the run id: a price decides no answer
    prices: dict[Text, ModelPrice] = Field(default_factory=dict)
    # Multi-stage protocol in one conversation per respondent x situation (engine/administer/plan.py);
    # absent: every trial is one independent request, as always.
    stages: list[MeasureStage | EvokeStage] | None = Field(default=None, min_length=1)
    situations: SituationsSpec | None = None
    # Named factors whose levels change part of the study, crossed or listed (engine/design/conditions.py);
    # absent: the study is asked one way, as always.
    conditions: ConditionsSpec | None = None


@dataclass(frozen=True)
class Study:
    """A loaded study: its spec, the instruments and cohort it names, and file hashes."""

    spec: StudySpec
    path: Path
    instruments: tuple[Instrument, ...]
    instrument_paths: tuple[Path, ...]
    cohort: Cohort
    cohort_path: Path
    situations: "SituationSet | None" = None        # the `situations:` set of a staged study
    situations_path: Path | None = None
    # `psyq run --perturb-prompts` (engine/design/perturbed_prompts.py): the rule the instruments' texts went
    # through; part of the run's identity, None for the study as written.
    prompt_perturbation: dict[str, Any] | None = None
    # What loading chose for the study that the file does not say (a local backend's model by the
    # kind of answer), one line each, for `psyq run` and `psyq plan` to print.
    notes: tuple[str, ...] = ()
    # The study's conditions (engine/design/conditions.py), in order; () for a study without `conditions:`.
    conditions: tuple[Condition, ...] = ()
    # The condition this study is asked under (a view made by condition_study); None for the study itself.
    condition: Condition | None = None

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def protocol(self) -> Protocol:
        return self.spec.protocol

    def file_hashes(self) -> dict[str, str]:
        """sha256 of the study, instrument and cohort files, of user-supplied item texts, and of
        the human data file (and its codebook) a cohort is drawn from (for the manifest and the
        run id: other texts or another data file are another run)."""
        texts = [t for i, p in zip(self.instruments, self.instrument_paths)
                 if (t := item_texts_path(i, p)) is not None and t.exists()]
        files = [self.path, *self.instrument_paths, *texts, self.cohort_path, *self.cohort.files]
        if self.situations_path is not None:    # another situation set is another run
            files.append(self.situations_path)
        # The anchor statements answer: ssr reads with (the study's, and those a condition's `ssr:` names):
        # others are another run.
        settings = [self.protocol.ssr] + [condition_spec(self.spec, c).protocol.ssr for c in self.conditions
                                          if "ssr" in c.protocol]
        for ssr in {json.dumps(s.model_dump(mode="json"), sort_keys=True): s for s in settings if s}.values():
            found, _ = study_anchors(ssr, list(self.instruments), self.path.parent)
            files.extend(a.path for a in found.values())
        return {str(p): file_sha256(p) for p in files}


def _pool_problems(doc: YamlDocument, i: int, backend: BackendConfig) -> list[Problem]:
    """What is wrong with a backend's `base_urls:` (replicas of one model, engine/backends/pool.py)."""
    if backend.base_urls is None:
        return []
    problems = []
    if backend.base_url is not None:
        problems.append(doc.problem(("backends", i, "base_urls"), "give `base_url` (one server) or `base_urls` "
                                    "(replicas of the same model), not both"))
    if backend_class(backend.kind).starts_server:
        problems.append(doc.problem(("backends", i, "base_urls"), f"a '{backend.kind}' backend starts its own "
                                    f"server; list replicas under a {quoted_kinds(kinds_where('needs_base_url'))} "
                                    "backend"))
    seen: dict[str, int] = {}
    for k, url in enumerate(backend.base_urls):
        if (why := base_url_problem(url)) is not None:
            problems.append(doc.problem(("backends", i, "base_urls", k), why))
        elif (first := seen.setdefault(normalise_endpoint(url), k)) != k:
            problems.append(doc.problem(("backends", i, "base_urls", k), f"the same endpoint as entry {first + 1} "
                                        "(each replica is listed once)"))
    return problems


def check_study(spec: StudySpec, doc: YamlDocument, instruments: list[Instrument]) -> list[Problem]:
    """Meaning checks: unique ids, and answer modes each backend and scale can serve."""
    problems: list[Problem] = []
    ids = Counter(b.id for b in spec.backends)   # counted once: a count per backend is quadratic
    for i, backend in enumerate(spec.backends):
        speaks = backend_class(backend.kind)   # what this kind of backend needs and offers
        if ids[backend.id] > 1:
            problems.append(doc.problem(("backends", i, "id"), f"backend id '{backend.id}' is used more than once"))
        if speaks.needs_model and not backend.model:
            problems.append(doc.problem(("backends", i), f"a '{backend.kind}' backend needs `model`"))
        problems.extend(_pool_problems(doc, i, backend))
        if speaks.needs_base_url and not backend.base_url and not backend.base_urls:
            problems.append(doc.problem(("backends", i), f"an '{backend.kind}' backend needs `base_url` "
                                        "(e.g. http://127.0.0.1:8080/v1)"))
        if backend.base_url is not None and (why := base_url_problem(backend.base_url)):
            problems.append(doc.problem(("backends", i, "base_url"), why))
        if backend.api_key_env is not None and (why := key_env_problem(backend.api_key_env)):
            problems.append(doc.problem(("backends", i, "api_key_env"), why))
        if backend.serving is not None and not speaks.starts_server:
            problems.append(doc.problem(("backends", i, "serving"), "`serving` says how psyq's own llama-server "
                                        f"serves requests: only a {quoted_kinds(kinds_where('starts_server'))} "
                                        "backend has one"))
        if backend.mode == "batch" and speaks.batch_client is None:
            problems.append(doc.problem(("backends", i, "mode"), "mode: batch needs a provider batch API "
                                        f"(kind: {' or '.join(kinds_where('batch_client'))}); the {backend.kind} "
                                        "server has none"))
        if backend.mode == "batch" and backend.base_urls:
            problems.append(doc.problem(("backends", i, "base_urls"), "mode: batch sends to one provider's batch "
                                        "API; replicas (`base_urls`) are for online requests: give one `base_url`"))
        if backend.mode == "batch" and spec.stages:
            problems.append(doc.problem(("backends", i, "mode"), "mode: batch is not available for a study with "
                                        "`stages:` (each stage waits for the last reply); use mode: online"))
        # What the backend's model cannot honour (engine/backends/capabilities.py): logprobs, a
        # temperature or top_p it refuses, a reasoning control it lacks.
        for where, why in design_problems(backend, spec.protocol.answer):
            path = where if where[0] == "protocol" else ("backends", i, *where)
            problems.append(doc.problem(path, why))
    if spec.protocol.answer == "logprobs":
        if spec.protocol.presentation != "per_item":
            problems.append(doc.problem(("protocol", "answer"),
                                        "answer: logprobs reads one answer token, so it needs presentation: per_item"))
        for i, inst in enumerate(instruments):
            tokens = answer_tokens(inst)
            if any(len(t) != 1 for t in tokens):
                problems.append(doc.problem(("instruments", i), f"answer: logprobs needs one-character answers, "
                                            f"but '{inst.id}' is answered with {', '.join(tokens)}"))
    problems.extend(distribution_mode_problems(spec, doc, instruments))   # answer: verbalized
    for kind_name in dict.fromkeys(i.kind for inst in instruments for i in inst.items):
        if why := get_kind(kind_name).answer_mode_problem(spec.protocol.answer):   # e.g. free-text replies
            problems.append(doc.problem(("protocol", "answer"), why))
    by_id = {inst.id: inst for inst in instruments}
    for inst_id, sample_ids in spec.norms.items():
        if inst_id not in by_id:
            problems.append(doc.problem(("norms", inst_id), f"'{inst_id}' is not an instrument of this study "
                                        f"({', '.join(by_id)})", at_key=True))
            continue
        have = [s.id for s in by_id[inst_id].norms]
        for j, sid in enumerate(sample_ids):
            if sid not in have:
                problems.append(doc.problem(("norms", inst_id, j), f"'{inst_id}' has no norm sample '{sid}' "
                                            f"(it has: {', '.join(have) or 'none'})"))
    seen = Counter(inst.id for inst in instruments)
    for i, inst in enumerate(instruments):
        if seen[inst.id] > 1:
            problems.append(doc.problem(("instruments", i), f"instrument '{inst.id}' is listed twice"))
    return problems


def check_stages(spec: StudySpec, doc: YamlDocument, instruments: list[Instrument]) -> list[Problem]:
    """Meaning checks of `stages:` and `situations:` (see engine/administer/plan.py for what they do).

    A measure must name an instrument of the study with rating items only (it is asked whole, in
    one request); exactly one evoke stage, with a measure before and after it; `situations:` and
    `stages:` come together; every instrument listed is measured by some stage; answers are read
    from text or JSON (a whole instrument has no single first token to read log probabilities of).
    """
    problems: list[Problem] = []
    if spec.stages is None:
        if spec.situations is not None:
            problems.append(doc.problem(("situations",), "`situations:` is used only by `stages:` "
                                        "(an `evoke: situations` stage), and this study has none", at_key=True))
        return problems
    by_id = {inst.id: inst for inst in instruments}
    measured = set()
    for k, stage in enumerate(spec.stages):
        if isinstance(stage, MeasureStage):
            inst = by_id.get(stage.measure)
            if inst is None:
                problems.append(doc.problem(("stages", k, "measure"), f"'{stage.measure}' is not an instrument of "
                                            f"this study (instruments: {', '.join(by_id) or 'none'})"))
                continue
            measured.add(inst.id)
            other = sorted({i.kind for i in inst.items if i.kind != "rating"})
            if other:
                problems.append(doc.problem(("stages", k, "measure"), f"'{inst.id}' has {', '.join(other)} items; a "
                                            "measure stage asks rating items only (the whole instrument in one request)"))
    evokes = [k for k, s in enumerate(spec.stages) if isinstance(s, EvokeStage)]
    if not evokes:
        problems.append(doc.problem(("stages",), "the stages have no `evoke: situations` stage; a staged study "
                                    "measures, evokes a situation, and measures again (exactly one evoke stage)"))
    elif len(evokes) > 1:
        problems.append(doc.problem(("stages", evokes[1]), f"exactly one `evoke:` stage is allowed, found "
                                    f"{len(evokes)} (stages {', '.join(map(str, evokes))})"))
    else:
        e = evokes[0]
        if not any(isinstance(s, MeasureStage) for s in spec.stages[:e]) or \
                not any(isinstance(s, MeasureStage) for s in spec.stages[e + 1:]):
            problems.append(doc.problem(("stages", e), "the evoke stage needs a `measure:` stage before it and one "
                                        "after it (the change is after minus before)"))
    if spec.situations is None:
        problems.append(doc.problem(("stages",), "`stages:` with an evoke stage need `situations:` "
                                    "(file: the situation set, per_respondent: all or {sample: N, seed: S})",
                                    at_key=True))
    for i, inst in enumerate(instruments):
        if inst.id == "evoke":   # the evoke stages' trials are stored under that instrument id
            problems.append(doc.problem(("instruments", i), "an instrument called 'evoke' cannot be used with "
                                        "`stages:` (the evoke stages are stored under that name); rename its id"))
        if inst.id not in measured:
            problems.append(doc.problem(("instruments", i), f"instrument '{inst.id}' is listed but no stage measures "
                                        "it; in a staged study instruments are asked only by `measure:` stages"))
    if ("presentation" in spec.protocol.model_fields_set and spec.protocol.presentation == "per_item"
            and spec.protocol.answer != "logprobs"):   # with logprobs a measure stage asks item by item
        problems.append(doc.problem(("protocol", "presentation"), "a measure stage asks the whole instrument in "
                                    "one request; with `stages:` leave `presentation` out or write whole_instrument"))
    return problems


def condition_spec(spec: StudySpec, condition: Condition) -> StudySpec:
    """The study file as `condition` asks it: its protocol with the condition's fields, only the
    backends that ask it, each with the condition's temperature and top_p.

    Example (the shipped quickstart under a condition that reads answers from text, at temperature 0):
        >>> from psyq.engine.design.conditions import Condition
        >>> spec = load_study("quickstart").spec
        >>> asked = condition_spec(spec, Condition("text", {}, {"answer": "text"}, sampling={"temperature": 0.0}))
        >>> (spec.protocol.answer, asked.protocol.answer), asked.backends[0].temperature
        (('logprobs', 'text'), 0.0)
    """
    changes = dict(condition.protocol)
    if isinstance(changes.get("ssr"), dict) and spec.protocol.ssr is not None:   # merged over the study's, key by key
        changes["ssr"] = {**spec.protocol.ssr.model_dump(exclude_unset=True), **changes["ssr"]}
    protocol = Protocol.model_validate({**spec.protocol.model_dump(exclude_unset=True), **changes})
    backends = [b.model_copy(update=condition.sampling) for b in spec.backends
                if condition.backends is None or b.id in condition.backends]
    return spec.model_copy(update={"protocol": protocol, "backends": backends})


def condition_study(study: Study, condition: Condition) -> Study:
    """The study as `condition` asks it (:func:`condition_spec`, and the persona template it
    gives): what planning makes the condition's trials from (engine/administer/plan.py), so that
    nothing after planning needs to know about conditions.

    Example (the shipped quickstart under a condition with a persona template of its own):
        >>> from psyq.engine.design.conditions import Condition
        >>> study = load_study("quickstart")
        >>> asked = condition_study(study, Condition("short", {}, template="You are {id}."))
        >>> asked.condition.id, asked.cohort.template, asked.protocol == study.protocol
        ('short', 'You are {id}.', True)
    """
    cohort = replace(study.cohort, template=condition.template) if condition.template is not None else study.cohort
    return replace(study, spec=condition_spec(study.spec, condition), cohort=cohort, condition=condition)


def check_conditions(spec: StudySpec, doc: YamlDocument, instruments: list[Instrument],
                     conditions: tuple[Condition, ...]) -> list[Problem]:
    """The meaning checks of a study (:func:`check_study`, :func:`check_stages`) on the study as
    each condition asks it: a problem with a field a condition changes is pointed at the change
    and names the condition (and how many more have it); one every condition has is the study's."""
    found: list[tuple[Condition, Problem]] = []
    for condition in conditions:
        asked = condition_spec(spec, condition)
        places = [i for i, b in enumerate(spec.backends) if condition.backends is None or b.id in condition.backends]
        seen = ConditionDocument(doc, condition, places)
        found += [(condition, p) for p in check_study(asked, seen, instruments)]   # type: ignore[arg-type]
        found += [(condition, p) for p in check_stages(asked, seen, instruments)]   # type: ignore[arg-type]
    return merge_condition_problems(found, conditions)


def require_item_texts(study: Study) -> None:
    """Raise :class:`InputError` (at the study's line naming the instrument) for every instrument
    with items that have no text: such items cannot be administered.

    Example:
        >>> require_item_texts(load_study("quickstart"))   # the IRI ships its texts: nothing raised
    """
    doc = load_yaml(study.path)
    problems = []
    for i, (inst, path) in enumerate(zip(study.instruments, study.instrument_paths)):
        message = missing_texts_message(inst, path)
        if message:
            problems.append(doc.problem(("instruments", i), f"cannot administer: {message}"))
    raise_problems(problems)


def _named_file(doc: YamlDocument, at: tuple, reference: str, kind: str, folder: Path,
                problems: list[Problem]) -> Path | None:
    """The file a study names at `at` (a path relative to the study file, or a shipped name), or
    None with the problem added at the study's line: not found, not a file, an unknown name."""
    try:
        file = locate(reference, kind, folder).resolve()
    except InputError as exc:   # a bare name psyq does not ship: the message lists those it does
        problems.append(doc.problem(at, exc.problems[0].message))
        return None
    if not file.is_file():   # a directory or a device is refused here, at the study's line
        what = "is not a file (a directory or a device)" if file.exists() else "not found"
        word = {"situations": "situation set"}.get(kind, kind)
        problems.append(doc.problem(at, f"{word} file {what}: {file}"))
        return None
    return file


def load_study(path: str | Path) -> Study:
    """Load a study file (its path, or the name of a shipped study) and everything it names,
    checking all of it.

    Problems in a named instrument or cohort file are reported with *that* file's name and line.

    Example:
        >>> study = load_study("quickstart")
        >>> [i.id for i in study.instruments], study.cohort.id
        (['iri'], 'adults_small')
    """
    spec, doc, path = load_document(path, StudySpec, "study")
    problems: list[Problem] = []
    instruments, instrument_paths = [], []
    for i, name in enumerate(spec.instruments):
        file = _named_file(doc, ("instruments", i), name, "instrument", path.parent, problems)
        if file is None:
            continue
        try:
            instruments.append(load_instrument(file))
            instrument_paths.append(file)
        except InputError as exc:
            problems.extend(exc.problems)
    cohort = None
    cohort_path = _named_file(doc, ("cohort",), spec.cohort, "cohort", path.parent, problems)
    if cohort_path is not None:
        try:
            cohort = load_cohort(cohort_path)
        except InputError as exc:
            problems.extend(exc.problems)
    situations, situations_path = None, None
    if spec.situations is not None:
        situations_path = _named_file(doc, ("situations", "file"), spec.situations.file, "situations", path.parent,
                                      problems)
        if situations_path is not None:
            try:
                situations = load_situations(situations_path)
                per = spec.situations.per_respondent
                if not isinstance(per, str) and per.sample > len(situations.situations):
                    problems.append(doc.problem(("situations", "per_respondent", "sample"), f"a sample of "
                                                f"{per.sample} situations per respondent, but the set has only "
                                                f"{len(situations.situations)}"))
            except InputError as exc:
                problems.extend(exc.problems)
    raise_problems(problems)
    conditions: tuple[Condition, ...] = ()
    if spec.conditions is None:
        raise_problems(check_study(spec, doc, instruments))
        raise_problems(check_stages(spec, doc, instruments))
    else:   # the study is checked as each condition asks it (the study's own protocol may be asked by none)
        conditions = tuple(expand_conditions(spec.conditions, doc, Protocol, [b.id for b in spec.backends],
                                             cohort.personas if cohort is not None else None))
        raise_problems(check_conditions(spec, doc, instruments, conditions))
    spec, notes = local_models(spec, doc, instruments, path.parent)
    return Study(spec, path.resolve(), tuple(instruments), tuple(instrument_paths), cohort, cohort_path,
                 situations, situations_path, notes=notes, conditions=conditions)


def local_models(spec: StudySpec, doc: YamlDocument, instruments: list[Instrument],
                 folder: Path) -> tuple[StudySpec, tuple[str, ...]]:
    """The study with every `local` backend's model settled, and a note for each default chosen.

    A backend without `model:` gets the catalogue's default for the study's kind of answer
    (`psyq.engine.backends.catalogue.default_local_model`: rating items read from probabilities, or
    anything written in words); a catalogue name stays; any other value is a GGUF file, looked
    for beside the study file first, then from the working folder (an absolute path is kept; the
    backend records only its name and SHA-256). A file found nowhere is an input error.

    Example:
        >>> study = load_study("leas_repeated")
        >>> study.spec.backends[0].model, study.notes[0][:40]
        ('smollm2-135m-instruct-q4_1', "local backend 'local': model smollm2-135")
    """
    from psyq.engine.backends.catalogue import CATALOGUE, default_local_model

    backends, notes, problems = [], [], []
    kinds = {item.kind for inst in instruments for item in inst.items}
    for i, backend in enumerate(spec.backends):
        if not backend_class(backend.kind).starts_server:   # a model psyq does not serve is the server's
            backends.append(backend)
            continue
        if backend.model is None:
            name, why = default_local_model(spec.protocol.answer, kinds, staged=spec.stages is not None)
            notes.append(f"local backend '{backend.id}': model {name} (the default for {why}; "
                         "write `model:` to choose another, docs/local-models.md)")
            backends.append(backend.model_copy(update={"model": name}))
        elif backend.model in CATALOGUE:
            backends.append(backend)
        else:
            beside = (folder / backend.model).expanduser()
            given = Path(backend.model).expanduser()
            found = beside if beside.is_file() else given if given.is_file() else None
            if found is None:
                problems.append(doc.problem(("backends", i, "model"), f"'{backend.model}' is neither a local model of "
                                            f"the catalogue ({', '.join(CATALOGUE)}) nor a GGUF file (looked for "
                                            f"beside the study and from the working folder)"))
                backends.append(backend)
            else:
                backends.append(backend.model_copy(update={"model": str(found.resolve())}))
    raise_problems(problems)
    return spec.model_copy(update={"backends": backends}), tuple(notes)
