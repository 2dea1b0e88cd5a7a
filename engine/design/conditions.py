"""Conditions: named factors whose levels change part of a study, crossed or listed.

A study's ``conditions:`` block (engine/design/study.py's ``StudySpec``) asks the same instruments
of the same cohort in several ways at once. Each *level* of a factor, and each listed condition,
says what it changes; everything it leaves out is the study's own:

- ``protocol:`` any field of the study's protocol (``answer``, ``presentation``, ``item_order``,
  ``option_order``, ``logprob_answer``, ``reask_limit`` …), checked as the protocol is; its ``ssr:``
  (engine/design/asking.py) is merged over the study's key by key (``anchors``, ``embeddings``,
  ``temperature``, ``epsilon``; an ``embeddings:`` given replaces the study's whole), so that
  ``ssr: {embeddings: {kind: local}}`` keeps the study's anchors, and two factors may change two
  of its keys;
- ``template:`` the persona template, as a cohort file's ``template:`` (engine/design/persona_prompt.py);
- ``temperature``, ``top_p``: every backend's sampling (a backend's own setting otherwise);
- ``backends:`` the ids of the backends that ask it (every backend otherwise).

``cross:`` gives factors, each a mapping of level names to their changes, and makes every
combination of the levels; ``list:`` gives named conditions, each its own changes and, for the
answer table, the factor levels it stands for (``factors:``). Both may be given: the crossed
conditions come first, then the listed ones. Backends stay a dimension of their own: every
backend asks every condition that does not name its backends, so 2 backends × 3 ways of asking
× 2 templates are 12 groups of trials.

A condition's id is part of every trial id (engine/trials/trial.py) and is stored with each
trial (``trials.condition`` in engine/store/run_store.py): for a crossed condition its levels in
the order the factors are written, ``factor=level,factor=level`` (``asking=stated,persona=backstory``);
for a listed one its ``name``. Two factors may not both change one field (a crossed condition
takes each field from one level).

Example (a study of the tests: two ways of asking crossed with two persona templates):
    >>> from psyq import load_study
    >>> study = load_study("tests/fixtures/conditions/conditions_study.yaml")
    >>> [c.id for c in study.conditions]
    ['asking=digits,persona=plain', 'asking=digits,persona=backstory', 'asking=reversed,persona=plain', 'asking=reversed,persona=backstory']
    >>> study.conditions[2].factors, study.conditions[2].protocol
    ({'asking': 'reversed', 'persona': 'plain'}, {'option_order': 'reversed'})
"""

from __future__ import annotations

import builtins
import difflib
import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from pydantic import BaseModel, Field, WithJsonSchema

from psyq.engine.backends.embedders import settings_problems
from psyq.engine.design.persona import Persona
from psyq.engine.design.persona_prompt import check_template, template_fields
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.validation import parse_document
from psyq.engine.files.yamlfile import FieldPath, YamlDocument

# A cross of many factors grows fast (five factors of four levels: 1,024 conditions); far more
# conditions than any comparison reads, refused before a plan is made.
MAX_CONDITIONS = 1000
# The backends' sampling settings a condition may change, as BackendConfig names them.
SAMPLING = ("temperature", "top_p")

# Fields of the study's protocol, checked against the Protocol model of engine/design/study.py
# (which imports this module, so it cannot be named here): any of its fields, by its rules.
ProtocolChanges = Annotated[dict[str, Any], WithJsonSchema({
    "type": "object", "additionalProperties": {},
    "description": "fields of the study's `protocol:` (any of them: answer, presentation, option_order …), "
                   "each as the protocol takes it"})]


class Changes(StrictModel):
    """What one level of a factor (or one listed condition) changes; a field left out is the study's own."""

    protocol: ProtocolChanges | None = None
    template: Text | None = None      # the persona template, as a cohort file's `template:`
    temperature: float | None = Field(default=None, ge=0)          # every backend's
    top_p: float | None = Field(default=None, gt=0, le=1)          # every backend's
    backends: list[Id] | None = Field(default=None, min_length=1)  # only these backends ask it


class ListedCondition(Changes):
    """A condition of `list:`: its name (its id) and, for the answer table, the levels it stands for."""

    name: Id
    factors: dict[Id, Id] = Field(default_factory=dict)


class ConditionsSpec(StrictModel):
    """The `conditions:` block as written: factors crossed, conditions listed, or both."""

    cross: dict[Id, dict[Id, Changes | None]] | None = Field(default=None, min_length=1)
    # `list` is the YAML key; the builtin is spelt out where the class body would see the field.
    list: builtins.list[ListedCondition] | None = Field(default=None, min_length=1)


@dataclass(frozen=True)
class Condition:
    """One condition: its id, the factor levels it stands for, and what it changes in the study."""

    id: str
    factors: dict[str, str] = field(hash=False)
    protocol: dict[str, Any] = field(default_factory=dict, hash=False)   # protocol fields changed (checked)
    template: str | None = None
    sampling: dict[str, float] = field(default_factory=dict, hash=False)  # temperature / top_p of every backend
    backends: tuple[str, ...] | None = None      # the backends that ask it (None: every one)
    # Where each change was written ("protocol.answer", "template", "temperature", "backends"),
    # and the condition itself ("") — where a problem of the condition is pointed at.
    at: dict[str, FieldPath] = field(default_factory=dict, hash=False, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The condition as the manifest and the run id record it.

        Example:
            >>> Condition("asking=stated", {"asking": "stated"}, {"answer": "json"}).to_json()
            {'id': 'asking=stated', 'factors': {'asking': 'stated'}, 'changes': {'protocol': {'answer': 'json'}}, 'backends': None}
        """
        changes: dict[str, Any] = {}
        if self.protocol:
            changes["protocol"] = dict(self.protocol)
        if self.template is not None:
            changes["template"] = self.template
        changes.update(self.sampling)
        return {"id": self.id, "factors": dict(self.factors), "changes": changes,
                "backends": list(self.backends) if self.backends is not None else None}


def factor_names(conditions: Sequence[Condition] | Sequence[dict[str, Any]]) -> list[str]:
    """The factors of `conditions` (Condition objects or their manifest records), in order of first use.

    Example:
        >>> factor_names([{"factors": {"asking": "a", "persona": "p"}}, {"factors": {"extra": "x"}}])
        ['asking', 'persona', 'extra']
    """
    names: dict[str, None] = {}
    for condition in conditions:
        levels = condition["factors"] if isinstance(condition, dict) else condition.factors
        names.update(dict.fromkeys(levels))
    return list(names)


def written_changes(spec: ConditionsSpec) -> list[tuple[FieldPath, Changes]]:
    """Every set of changes written, with where: each level of each factor, then each listed condition."""
    out: list[tuple[FieldPath, Changes]] = []
    for factor, levels in (spec.cross or {}).items():
        out.extend((("conditions", "cross", factor, level), changes or Changes()) for level, changes in levels.items())
    out.extend((("conditions", "list", i), listed) for i, listed in enumerate(spec.list or []))
    return out


def _with_value(doc: YamlDocument, path: FieldPath, value: Any) -> YamlDocument:
    """`doc` with the value at `path` replaced (the containers on the way copied), its positions kept."""
    def put(node: Any, rest: FieldPath) -> Any:
        if not rest:
            return value
        copy = list(node) if isinstance(node, list) else dict(node)
        copy[rest[0]] = put(node[rest[0]], rest[1:])   # type: ignore[index]
        return copy
    return replace(doc, data=put(doc.data, path))


def _checked_protocols(spec: ConditionsSpec, doc: YamlDocument, protocol_model: type[BaseModel],
                       problems: list[Problem]) -> dict[FieldPath, dict[str, Any]]:
    """Each written `protocol:` checked as `protocol_model` checks the study's protocol (an unknown
    field with a did-you-mean, a value out of its range), as the fields written, by where; a written
    `ssr:` is checked merged over the study's (its keys written: only those are kept)."""
    out: dict[FieldPath, dict[str, Any]] = {}
    study_ssr = (doc.data.get("protocol") or {}).get("ssr") if isinstance(doc.data, dict) else None
    for at, changes in written_changes(spec):
        if changes.protocol is None:
            continue
        ssr = changes.protocol.get("ssr")
        seen = doc
        if isinstance(ssr, dict) and isinstance(study_ssr, dict):   # the level's keys over the study's
            seen = _with_value(doc, at + ("protocol", "ssr"), {**study_ssr, **ssr})
        try:
            checked = parse_document(seen, protocol_model, at + ("protocol",))
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if isinstance(ssr, dict) and "embeddings" in ssr and getattr(checked, "ssr", None) is not None:
            # As the study's are checked (engine/backends/embedders.py), here: the dump below keeps no
            # server's setting of the local model to be seen later.
            found = settings_problems(checked.ssr.embeddings)   # type: ignore[attr-defined]
            problems.extend(doc.problem(at + ("protocol", "ssr", "embeddings", *where), why) for where, why in found)
            if found:
                continue
        out[at] = checked.model_dump(include=checked.model_fields_set)
        if isinstance(ssr, dict) and isinstance(out[at].get("ssr"), dict):
            out[at]["ssr"] = {k: v for k, v in out[at]["ssr"].items() if k in ssr}
    return out


def _changed_fields(changes: Changes, protocol: dict[str, Any]) -> list[str]:
    """The fields a set of changes sets, as `at` keys ("protocol.answer", "protocol.ssr.anchors",
    "template", "temperature")."""
    names: list[str] = []
    for name, value in protocol.items():   # ssr: each of its keys, which two factors may share out
        names += [f"protocol.ssr.{key}" for key in value] if name == "ssr" and isinstance(value, dict) \
            else [f"protocol.{name}"]
    names += [name for name in ("template", *SAMPLING) if getattr(changes, name) is not None]
    return names


def _condition(cid: str, factors: dict[str, str], parts: list[tuple[FieldPath, Changes]],
               protocols: dict[FieldPath, dict[str, Any]], own: FieldPath) -> Condition:
    """The condition made of `parts` (one per factor level, or one listed condition)."""
    protocol: dict[str, Any] = {}
    template, sampling, backends = None, {}, None
    at: dict[str, FieldPath] = {"": own}
    for path, changes in parts:
        for name, value in protocols.get(path, {}).items():
            if name == "ssr" and isinstance(value, dict):   # merged key by key (the module docstring)
                protocol["ssr"] = {**(protocol.get("ssr") or {}), **value}
                at.update({f"protocol.ssr.{key}": path + ("protocol", "ssr", key) for key in value})
                continue
            protocol[name] = value
            at[f"protocol.{name}"] = path + ("protocol", name)
        if changes.template is not None:
            template, at["template"] = changes.template, path + ("template",)
        for name in SAMPLING:
            if (value := getattr(changes, name)) is not None:
                sampling[name], at[name] = value, path + (name,)
        if changes.backends is not None:
            mine = tuple(changes.backends)
            backends = mine if backends is None else tuple(b for b in backends if b in mine)
            at["backends"] = path + ("backends",)
    return Condition(cid, factors, protocol, template, sampling, backends, at)


def expand_conditions(spec: ConditionsSpec, doc: YamlDocument, protocol_model: type[BaseModel],
                      backend_ids: Collection[str], personas: Sequence[Persona] | None) -> list[Condition]:
    """The conditions of a `conditions:` block, in order (the crossed ones, then the listed ones).

    Checks what needs no other part of the study but its backends' ids and the cohort's personas
    (None: the cohort could not be read): each `protocol:` against `protocol_model` (the study's
    Protocol), names, factors and levels, two factors changing one field, backends that exist
    and that a crossed condition keeps some of, placeholders every persona can fill. Raises
    :class:`InputError` naming the file, line and column of every problem. What each condition's
    changes mean for the rest of the study (a backend that cannot give log probabilities, a
    kind of item that cannot be answered so) is checked by engine/design/study.py on the
    study as each condition asks it.

    Example (a listed condition whose protocol misspells a field):
        >>> from psyq.engine.design.study import Protocol
        >>> from psyq.engine.files.yamlfile import load_yaml
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.yaml"
        >>> _ = path.write_text("conditions:\\n  list:\\n    - name: stated\\n      protocol: {anwser: json}\\n")
        >>> doc = load_yaml(path)
        >>> spec = ConditionsSpec.model_validate(doc.data["conditions"])
        >>> try:
        ...     expand_conditions(spec, doc, Protocol, ["b"], None)
        ... except InputError as exc:
        ...     print(exc.problems[0].line, exc.problems[0].column, exc.problems[0].message)
        4 18 unknown field 'anwser' (did you mean 'answer'?)
    """
    problems: list[Problem] = []
    if spec.cross is None and spec.list is None:
        problems.append(doc.problem(("conditions",), "give `cross:` (factors whose levels are crossed) or `list:` "
                                    "(named conditions), or both", at_key=True))
    protocols = _checked_protocols(spec, doc, protocol_model, problems)
    problems.extend(_structure_problems(spec, doc, protocols, backend_ids))
    if personas is not None:
        problems.extend(_template_problems(spec, doc, personas))
    size = 1
    for levels in (spec.cross or {}).values():
        size *= max(len(levels), 1)
    total = (size if spec.cross else 0) + len(spec.list or [])
    if total > MAX_CONDITIONS:
        problems.append(doc.problem(("conditions",), f"{total:,} conditions (the factors crossed, and those listed); "
                                    f"at most {MAX_CONDITIONS:,}", at_key=True))
    if problems:
        raise InputError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    conditions: list[Condition] = []
    if spec.cross:
        factors = list(spec.cross)
        for levels in itertools.product(*(list(spec.cross[f].items()) for f in factors)):
            cid = ",".join(f"{f}={name}" for f, (name, _) in zip(factors, levels))
            parts = [(("conditions", "cross", f, name), changes or Changes()) for f, (name, changes) in
                     zip(factors, levels)]
            conditions.append(_condition(cid, {f: name for f, (name, _) in zip(factors, levels)}, parts, protocols,
                                         ("conditions", "cross")))
    for i, listed in enumerate(spec.list or []):
        at = ("conditions", "list", i)
        conditions.append(_condition(listed.name, dict(listed.factors), [(at, listed)], protocols, at))
    problems = [doc.problem(c.at.get("backends", c.at[""]), f"condition '{c.id}' is asked by no backend: its levels' "
                            "`backends:` have none in common") for c in conditions if c.backends == ()]
    if problems:
        raise InputError(problems)
    return conditions


def _structure_problems(spec: ConditionsSpec, doc: YamlDocument, protocols: dict[FieldPath, dict[str, Any]],
                        backend_ids: Collection[str]) -> list[Problem]:
    """Empty factors, names used twice, two factors changing one field, backends that do not exist."""
    problems: list[Problem] = []
    for factor, levels in (spec.cross or {}).items():
        if not levels:
            problems.append(doc.problem(("conditions", "cross", factor), f"factor '{factor}' has no levels: give each "
                                        "level a name and what it changes (e.g. `stated: {protocol: {answer: json}}`; "
                                        "`{}` changes nothing)", at_key=True))
    # Two factors that change the same field: a crossed condition would take it from both.
    setters: dict[str, tuple[str, FieldPath]] = {}
    for factor, levels in (spec.cross or {}).items():
        mine: dict[str, FieldPath] = {}
        for level, changes in levels.items():
            path = ("conditions", "cross", factor, level)
            for name in _changed_fields(changes or Changes(), protocols.get(path, {})):
                mine.setdefault(name, path + tuple(name.split(".")))
        for name, where in mine.items():
            if name in setters and setters[name][0] != factor:
                problems.append(doc.problem(where, f"factors '{setters[name][0]}' and '{factor}' both change {name}; "
                                            "a crossed condition takes each field from one factor: change it in one "
                                            "factor only, or list the conditions (`list:`)", at_key=True))
            setters.setdefault(name, (factor, where))
    seen: dict[str, int] = {}
    for i, listed in enumerate(spec.list or []):
        if (first := seen.setdefault(listed.name, i)) != i:
            problems.append(doc.problem(("conditions", "list", i, "name"), f"condition name '{listed.name}' is used "
                                        f"more than once (first by list[{first}])"))
    for at, changes in written_changes(spec):
        for k, backend in enumerate(changes.backends or []):
            if backend not in backend_ids:
                close = difflib.get_close_matches(backend, list(backend_ids), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (its backends: {', '.join(backend_ids)})"
                problems.append(doc.problem(at + ("backends", k), f"no backend '{backend}' in this study{hint}"))
    return problems


def _template_problems(spec: ConditionsSpec, doc: YamlDocument, personas: Sequence[Persona]) -> list[Problem]:
    """Placeholders of a condition's template that some persona cannot fill, as the cohort's own are checked."""
    problems: list[Problem] = []
    known = {name for p in personas for name in p.attributes}
    for at, changes in written_changes(spec):
        if changes.template is None:
            continue
        messages = check_template(changes.template, known)
        if not messages:
            used = [n for n in template_fields(changes.template) if n in known]
            lacking = [(p.id, n) for p in personas if p.id != "baseline" for n in used if n not in p.attributes]
            if lacking:
                pid, name = lacking[0]
                more = f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else ""
                messages = [f"persona '{pid}' has no attribute '{name}', but the template uses {{{name}}}{more}"]
        problems.extend(doc.problem(at + ("template",), m) for m in messages)
    return problems


class ConditionDocument:
    """The study file as the checks of one condition see it: a problem with a field the condition
    changes is pointed at the change (a protocol field, a backend's temperature or top_p), any
    other at the study's own field; engine/design/study.py says which conditions it concerns."""

    def __init__(self, doc: YamlDocument, condition: Condition, backend_places: Sequence[int]):
        # backend_places: where in the file's `backends:` each backend the condition keeps is written
        self.doc, self.condition, self.file, self.places = doc, condition, doc.file, backend_places

    def _moved(self, path: FieldPath) -> FieldPath:
        at = self.condition.at
        if len(path) >= 2 and path[0] == "backends" and isinstance(path[1], int):
            path = ("backends", self.places[path[1]], *path[2:])
        if len(path) >= 3 and path[:2] == ("protocol", "ssr") and f"protocol.ssr.{path[2]}" in at:
            return at[f"protocol.ssr.{path[2]}"] + tuple(path[3:])
        if len(path) >= 2 and path[0] == "protocol" and f"protocol.{path[1]}" in at:
            return at[f"protocol.{path[1]}"] + tuple(path[2:])
        if path[:1] == ("protocol",) and len(path) == 1:
            changed = [k for k in at if k.startswith("protocol.")]
            return at[changed[0]] if changed else path
        if len(path) >= 3 and path[0] == "backends" and path[2] in SAMPLING and path[2] in at:
            return at[path[2]]
        return path

    def where(self, path: FieldPath) -> tuple[int | None, int | None]:
        return self.doc.where(self._moved(path))

    def problem(self, path: FieldPath, message: str, at_key: bool = False) -> Problem:
        return self.doc.problem(self._moved(path), message, at_key=at_key)


def merge_condition_problems(found: list[tuple[Condition, Problem]], conditions: Sequence[Condition]) -> list[Problem]:
    """The problems the conditions' checks found, each once: as found when every condition has it
    (it is the study's, not a condition's), else naming the first condition that has it and how
    many more do.

    Example:
        >>> a, b = Condition("a", {}), Condition("b", {})
        >>> p = Problem("s.yaml", 3, 5, "protocol.answer", "needs presentation: per_item")
        >>> [str(x) for x in merge_condition_problems([(a, p)], [a, b])]
        ["s.yaml:3:5: protocol.answer: under condition 'a': needs presentation: per_item"]
        >>> [str(x) for x in merge_condition_problems([(a, p), (b, p)], [a, b])]
        ['s.yaml:3:5: protocol.answer: needs presentation: per_item']
    """
    by_problem: dict[Problem, list[str]] = {}
    for condition, problem in found:
        ids = by_problem.setdefault(problem, [])
        if condition.id not in ids:
            ids.append(condition.id)
    out = []
    for problem, ids in by_problem.items():
        if len(ids) == len(conditions):
            out.append(problem)
            continue
        more = f" (and {len(ids) - 1} more)" if len(ids) > 1 else ""
        out.append(Problem(problem.file, problem.line, problem.column, problem.field,
                           f"under condition '{ids[0]}'{more}: {problem.message}"))
    return out


__all__ = ["Changes", "ListedCondition", "ConditionsSpec", "Condition", "ConditionDocument", "expand_conditions",
           "factor_names", "merge_condition_problems", "written_changes", "MAX_CONDITIONS", "SAMPLING"]
