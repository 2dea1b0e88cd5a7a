"""Every difference between a run (and the report about to be made of it) and its pre-registration.

:func:`deviations` compares the record ``psyq preregister`` wrote (:mod:`.record`) with what the
run recorded and what the report is asked to do, and returns one row per difference: ``kind,
field, planned, run`` — no report text (the report's section "Deviations from the
pre-registration" says each row in a sentence). The kinds, in the order they are checked:

* ``file`` — a file of the run's identity whose SHA-256 differs (``files[NAME]``; a file only one
  side has: ``None`` on the other). The study file itself is listed only when none of its settings
  differs (a comment or the layout changed): a changed setting is listed as itself;
* ``study`` — a field of the study file other than its backends, protocol and conditions, as the
  run's copy of it reads (``study.norms``, ``study.report.estimator``, …);
* ``backend`` — every setting of a backend, as the run's manifest records it: identity, settings
  and what psyq read its model accepts (``backends[ID].temperature``); a backend planned and not
  run, or run and not planned (``backends[ID]``, its model or ``None``);
* ``protocol`` — a field of the protocol (``protocol.repeats``);
* ``conditions`` — a condition added, removed or changed (``conditions[ID]``);
* ``design`` — the rest of what decides what is asked: the cohort's size or data, the trials
  planned, perturbed prompts, answer: ssr's settings, stages and situations;
* ``served model`` — a backend whose replies named another model than the one it asked for
  (:func:`psyq.engine.results.served.served_models`; ``backends[ID].served_model``); a local
  model pinned by its weights' SHA-256 is checked by that hash instead (a ``backend`` row);
* ``personas`` — fewer personas answered than planned, per backend (and condition):
  ``personas[ID]``, planned and answered counts;
* ``analysis`` — the report's bound, correction, invariance estimator or norm samples other than
  planned (``bound``, ``estimator[iri]``), or a cut-off of the verdict's code that changed since
  (``cutoffs.sd_ratio``);
* ``people`` — people's answers other than those planned (``people[iri]``: the SHA-256 of the
  file, ``None`` where not given);
* ``software`` — another psyq version ran the study than wrote the plan (``psyq_version``).

Checked in tests/test_deviations.py: the quick start run as planned gives no row; its temperature
edited gives one (the backend's temperature, both values); a server naming another model gives
one; a cohort file edited gives one naming it.

Example (`run_dir`, `plan`: a run and its pre-registration):
    >>> deviations(open_run(run_dir), plan)[["kind", "field"]].to_dict("records")   # needs a plan  # doctest: +SKIP
    [{'kind': 'backend', 'field': 'backends[local].temperature'}]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from psyq.engine.design.study import StudySpec
from psyq.engine.files.errors import InputError
from psyq.engine.files.hashing import file_sha256
from psyq.engine.files.validation import parse_document
from psyq.engine.files.yamlfile import load_yaml
from psyq.engine.results.run import Run
from psyq.engine.results.served import served_models

from psyq.analysis.preregistration.record import Preregistration, cutoff_values
from psyq.analysis.scoring.human_data import HumanData
from psyq.analysis.statistics.invariance.against_people import default_estimator

COLUMNS = ["kind", "field", "planned", "run"]
COMPARED_ELSEWHERE = ("backends", "protocol", "conditions")
"""The study file's fields compared as the run resolved them (its manifest), not as written."""
DESIGN = ("cohort", "trials_planned", "prompt_perturbation", "ssr", "stages", "situations")
"""The planned manifest's other entries that decide what is asked."""
SETTING_KINDS = ("study", "backend", "protocol", "conditions", "design")
"""Rows that say how the study file changed, when it did."""
_BASELINE = "baseline"       # the respondent id of the model answering as itself (engine/design/persona.py)


def _differences(planned: Any, run: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """(field, planned, run) for every leaf that differs; an absent key reads as None."""
    if isinstance(planned, Mapping) and isinstance(run, Mapping):
        for key in dict.fromkeys([*planned, *run]):
            yield from _differences(planned.get(key), run.get(key), f"{path}.{key}" if path else str(key))
    elif planned != run:
        yield path, planned, run


def _rows(kind: str, found: Iterator[tuple[str, Any, Any]]) -> list[dict[str, Any]]:
    return [{"kind": kind, "field": field, "planned": planned, "run": run} for field, planned, run in found]


def _matched(planned: Mapping[str, str], run: Mapping[str, str]) -> Iterator[tuple[str, str | None, str | None]]:
    """(name, planned sha, run sha) per file, matched by the name the manifests give (relative to the
    study's folder), else by the file's own name (a study moved to another folder)."""
    unmatched = {name: digest for name, digest in run.items() if name not in planned}
    by_base = {PurePosixPath(name).name: name for name in unmatched}
    for name, digest in planned.items():
        other = name if name in run else by_base.get(PurePosixPath(name).name)
        if other is not None:
            unmatched.pop(other, None)
        yield name, digest, run.get(other) if other is not None else None
    for name, digest in unmatched.items():
        yield name, None, digest


def _run_study(run: Run) -> dict[str, Any] | None:
    """The run's copy of its study file, every field (None when the run has none or it does not read)."""
    path = Path(run.path) / "study.yaml"
    if not path.is_file():
        return None
    try:
        return parse_document(load_yaml(path), StudySpec).model_dump(mode="json")
    except InputError:
        return None


def _settings(plan: Preregistration, run: Run) -> list[dict[str, Any]]:
    """The study, backend, protocol, conditions and design rows."""
    manifest = run.manifest
    rows = []
    ran_study = _run_study(run)
    if ran_study is not None:
        planned = {k: v for k, v in plan.study.spec.items() if k not in COMPARED_ELSEWHERE}
        rows += _rows("study", _differences(planned, {k: v for k, v in ran_study.items() if k not in COMPARED_ELSEWHERE},
                                            "study"))
    ran = manifest.get("backends") or {}
    for backend_id, backend in plan.run.backends.items():
        if backend_id not in ran:
            rows.append({"kind": "backend", "field": f"backends[{backend_id}]",
                         "planned": backend.identity.get("model") or backend_id, "run": None})
            continue
        mine = ran[backend_id]
        config = backend.config
        rows += _rows("backend", _differences(config, mine.get("config") or {}, f"backends[{backend_id}]"))
        # What the identity adds to the settings (a local model's SHA-256, its server); the same names once.
        identity = {k: v for k, v in backend.identity.items() if k not in config}
        theirs = {k: v for k, v in (mine.get("identity") or {}).items() if k not in (mine.get("config") or {})}
        rows += _rows("backend", _differences(identity, theirs, f"backends[{backend_id}]"))
        rows += _rows("backend", _differences(backend.capabilities, mine.get("capabilities") or {},
                                              f"backends[{backend_id}].capabilities"))
    for backend_id, backend in ran.items():
        if backend_id not in plan.run.backends:
            rows.append({"kind": "backend", "field": f"backends[{backend_id}]", "planned": None,
                         "run": (backend.get("identity") or {}).get("model") or backend_id})
    rows += _rows("protocol", _differences(plan.run.protocol, manifest.get("protocol") or {}, "protocol"))
    planned_conditions = {c["id"]: c for c in plan.run.conditions}
    ran_conditions = {c["id"]: c for c in manifest.get("conditions") or []}
    for cid in dict.fromkeys([*planned_conditions, *ran_conditions]):
        mine, theirs = planned_conditions.get(cid), ran_conditions.get(cid)
        if mine is None or theirs is None or mine != theirs:
            rows.append({"kind": "conditions", "field": f"conditions[{cid}]",
                         "planned": mine and mine.get("changes"), "run": theirs and theirs.get("changes")})
    extra = plan.run.model_extra or {}
    for key in DESIGN:
        planned_value = plan.run.cohort if key == "cohort" else plan.run.trials_planned if key == "trials_planned" \
            else extra.get(key)
        rows += _rows("design", _differences(planned_value, manifest.get(key), key))
    return rows


def _files(plan: Preregistration, run: Run, settings_changed: bool) -> list[dict[str, Any]]:
    rows = []
    for name, planned, ran in _matched(plan.run.files, run.manifest.get("files") or {}):
        if planned == ran or (name == plan.study.file and planned and ran and settings_changed):
            continue
        rows.append({"kind": "file", "field": f"files[{name}]", "planned": planned, "run": ran})
    return rows


def _served(plan: Preregistration, run: Run) -> list[dict[str, Any]]:
    rows = []
    for r in served_models(run).itertuples():
        backend = plan.run.backends.get(r.backend_id)
        if backend is None or r.served_model is None or "sha256" in backend.identity:
            continue        # not planned (a backend row), not said, or pinned by its weights' hash
        if r.served_model != r.requested_model:
            rows.append({"kind": "served model", "field": f"backends[{r.backend_id}].served_model",
                         "planned": backend.identity.get("model"), "run": r.served_model})
    return rows


def _personas(plan: Preregistration, run: Run) -> list[dict[str, Any]]:
    """Per backend (and condition) of the plan, the personas with at least one answer, when fewer
    than planned."""
    planned = plan.sample_size.personas
    table = run.answers(raw_text=False)
    answered = table[(table["status"] == "answered") & (table["respondent_id"].astype(str) != _BASELINE)]
    by = ["backend_id", "condition"] if "condition" in answered.columns and plan.run.conditions else ["backend_id"]
    counts = answered.groupby(by)["respondent_id"].nunique().to_dict() if len(answered) else {}
    groups = [(b,) for b in plan.run.backends] if by == ["backend_id"] else \
        [(b, c["id"]) for c in plan.run.conditions for b in plan.run.backends if not c.get("backends") or b in c["backends"]]
    rows = []
    for group in groups:
        n = int(counts.get(group[0] if len(group) == 1 else group, 0))
        if n < planned:
            rows.append({"kind": "personas", "field": f"personas[{' · '.join(group)}]", "planned": planned, "run": n})
    return rows


def _analysis(plan: Preregistration, run: Run, bound: float, correction: str, estimator: str | None,
              norm_samples: list[str] | None, study: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    a = plan.analysis
    rows = []
    if bound != a.bound:
        rows.append({"kind": "analysis", "field": "bound", "planned": a.bound, "run": bound})
    if correction != a.correction:
        rows.append({"kind": "analysis", "field": "correction", "planned": a.correction, "run": correction})
    chosen = estimator or ((study or {}).get("report") or {}).get("estimator")
    for inst_id, planned in a.estimator.items():
        instrument = run.instruments.get(inst_id)
        used = default_estimator(instrument, chosen) if instrument is not None else None
        if used != planned:
            rows.append({"kind": "analysis", "field": f"estimator[{inst_id}]", "planned": planned, "run": used})
    if norm_samples is not None:
        for inst_id, planned in a.norm_samples.items():
            if planned == "all" or sorted(planned) != sorted(norm_samples):
                rows.append({"kind": "analysis", "field": f"norm_samples[{inst_id}]", "planned": planned,
                             "run": list(norm_samples)})
    rows += _rows("analysis", _differences(a.cutoffs, cutoff_values(), "cutoffs"))
    return rows


def _people(plan: Preregistration, people: Mapping[str, HumanData]) -> list[dict[str, Any]]:
    rows = []
    for inst_id in dict.fromkeys([*plan.people, *people]):
        planned = plan.people[inst_id].sha256 if inst_id in plan.people else None
        given = file_sha256(people[inst_id].file) if inst_id in people else None
        if planned != given:
            rows.append({"kind": "people", "field": f"people[{inst_id}]", "planned": planned, "run": given})
    return rows


def deviations(run: Run, plan: Preregistration, *, bound: float | None = None, correction: str | None = None,
               estimator: str | None = None, norm_samples: list[str] | None = None,
               people: Mapping[str, HumanData] | None = None) -> pd.DataFrame:
    """Every difference between `run` and `plan` (and the report's options: `bound`, `correction`,
    `estimator`, `norm_samples` and `people` as ``psyq report`` was given them; None: as planned),
    one row each: ``kind, field, planned, run`` (the kinds in the module docstring). Empty when the
    run followed the plan.

    Example: see the module's.
    """
    settings = _settings(plan, run)
    settings_changed = any(r["kind"] in SETTING_KINDS for r in settings)
    rows = [*_files(plan, run, settings_changed), *settings, *_served(plan, run), *_personas(plan, run),
            *_analysis(plan, run, plan.analysis.bound if bound is None else bound,
                       plan.analysis.correction if correction is None else correction, estimator, norm_samples,
                       _run_study(run)),
            *(_people(plan, people) if people is not None else [])]
    if run.manifest.get("psyq_version") != plan.psyq_version:
        rows.append({"kind": "software", "field": "psyq_version", "planned": plan.psyq_version,
                     "run": run.manifest.get("psyq_version")})
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["COLUMNS", "deviations"]
