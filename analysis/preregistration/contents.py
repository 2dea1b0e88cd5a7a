"""What a study plans, gathered into the pre-registration's record (:mod:`.record`).

Every value is read, never retyped: the study, its instruments (name, version, where the items
come from, the citations) and its cohort (how it is drawn: a seeded sample's size, seed and
attributes, hand-written personas, a CSV, or people of a data file) from their files; the models
and every setting from the manifest ``psyq run`` would write (the command line builds it with the
run's own code and hands it over: this room does not import the administering code); the analysis
plan from the code that will apply it — the uses the verdict judges
(:data:`psyq.analysis.report.sections.verdict.USES`, the designs' :data:`DESIGN_USES`), each
criterion's region (:data:`CUTOFFS`, :data:`DESIGN_CUTOFFS`) and cut-off
(:func:`~.record.cutoff_values`), the report's defaults (the bound and correction ``psyq report``
takes unless told otherwise, handed over by the command line), the estimator
(:func:`default_estimator` with the study's ``report: estimator``), the seeds, and how missing
answers are read and kept (the statuses of :data:`psyq.engine.trials.parsing.Status`).

The planned size with what it can decide: with people's answers (``--human``), the verdict's
power at that size (``psyq.verdict_power``, computed by the command line as ``psyq plan --human``
does); against published norms only, how wide the level criterion's 90 % interval of g would be
(:func:`psyq.analysis.statistics.norms.summary.hedges_g` at g = 0, each norm sample's n); else a
sentence saying power was not computed.

The templates followed: the OSF Preregistration of the Center for Open Science (sections Study
information, Design plan, Sampling plan, Variables, Analysis plan, Other), and AsPredicted's nine
questions (data collection, hypothesis, dependent variable, conditions, analyses, outliers and
exclusions, sample size, other, study type), both read in the R package prereg's templates
(crsh/prereg: ``inst/rmarkdown/templates/cos_prereg`` and ``aspredicted_prereg``) and on
aspredicted.org.

Example:
    >>> from psyq.engine.design.study import load_study
    >>> [use for use, _ in study_uses(load_study("quickstart"))][:2]
    ["Estimating people's subscale means", "Reproducing people's spread, reliability and factor structure"]
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from psyq.engine.design.cohort_file import CohortFile, given_sources
from psyq.engine.design.persona import BASELINE
from psyq.engine.design.instrument import item_texts_path
from psyq.engine.design.study import Study
from psyq.engine.files.codebook import codebook_beside
from psyq.engine.files.hashing import file_sha256
from psyq.engine.files.shipped import shipped_name
from psyq.engine.files.validation import load_document
from psyq.engine.trials.parsing import Status

from psyq.analysis.preregistration.record import FORMAT, Preregistration, cutoff_values
from psyq.analysis.report.sections.verdict import USES
from psyq.analysis.scoring.human_data import HumanData
from psyq.analysis.statistics.invariance.against_people import default_estimator
from psyq.analysis.statistics.standin.design_verdict import DESIGN_CUTOFFS, DESIGN_USES
from psyq.analysis.statistics.standin.equivalence import CONFIDENCE
from psyq.analysis.statistics.standin.scorecard import CUTOFFS, scorecard
from psyq.analysis.statistics.standin.verdict_power import verdict_power

TEMPLATES = [
    "OSF Preregistration (Center for Open Science): Study information, Design plan, Sampling plan, Variables, "
    "Analysis plan, Other (as in the R package prereg's cos_prereg template)",
    "AsPredicted's nine questions (aspredicted.org): data collection, hypothesis, dependent variable, conditions, "
    "analyses, outliers and exclusions, sample size, other, study type",
]
"""The templates whose sections the pre-registration follows."""
MISSING_STATUSES = tuple(s for s in get_args(Status) if s not in ("answered", "unrated"))
"""Why an answer is missing, as the run stores it (engine/trials/parsing.py)."""
NEVER_REASKED = ("refusal",)
"""A refusal is kept as the model's answer, never asked again (engine/administer/send_trial.py)."""


def study_uses(study: Study) -> list[tuple[str, tuple[str, ...]]]:
    """The uses the verdict will judge for `study`, each with the criteria deciding it: a staged
    study's change; a questionnaire's uses (:data:`USES`); for items of the other designs, those
    designs' uses (judged where the study's items are of that design). Standing in for particular
    people is judged only for twins of people (a cohort drawn ``from_data`` as twins).

    Example: see the module's.
    """
    if study.spec.stages:
        return [u for u in DESIGN_USES if "change" in u[1]]
    twins = (study.cohort.provenance or {}).get("mode") == "twins"     # personas made from people of a data file
    uses = [u for u in USES if twins or "individuals" not in u[1]] if any(i.rating_items for i in study.instruments) \
        else []
    if any(item.kind != "rating" for i in study.instruments for item in i.items):
        uses += [u for u in DESIGN_USES if "change" not in u[1]]
    return uses


def _criteria(uses: list[tuple[str, tuple[str, ...]]], bound: float) -> dict[str, str]:
    """Each criterion of the uses (with style, which the verdict reads beside level, and latent
    means beside structure) and its region in words, the bound filled in."""
    regions = {**CUTOFFS, **DESIGN_CUTOFFS}
    named = [c for _, criteria in uses for c in criteria]
    if "level" in named:
        named.append("style")
    if "structure" in named:
        named.append("latent_mean")
    if "individuals" in named:
        named.append("worth")
    return {c: regions[c].format(bound=bound) for c in dict.fromkeys(named) if c in regions}


def _personas(study: Study) -> list:
    return [p for p in study.cohort.personas if p.id != BASELINE.id]


def cohort_record(study: Study, names: Mapping[str, str], manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The cohort and how it is drawn: its source (a seeded ``sample`` with its size, seed and
    attributes; hand-written ``personas`` or a ``csv``, listed; people of a data file,
    ``from_data``), whether the model answering as itself is asked too, its system-prompt template."""
    spec = load_document(study.cohort_path, CohortFile).spec
    source = given_sources(spec)[0]
    personas = _personas(study)
    record: dict[str, Any] = {
        "id": spec.id, "description": spec.description, "file": names.get(str(study.cohort_path), study.cohort_path.name),
        "drawn": source, "personas": len(personas), "baseline": len(personas) < len(study.cohort.personas),
        "respondents": len(study.cohort.personas), "persona_ids": [p.id for p in personas],
        "template": study.cohort.template,
        "sample": spec.sample.model_dump(mode="json") if spec.sample is not None else None,
        # A data file's people as the run's manifest records them (its paths relative to the study's folder).
        "csv": spec.csv, "from_data": (manifest.get("cohort") or {}).get("from_data")}
    if source in ("personas", "csv"):      # written by hand: the personas themselves are the plan
        record["listed"] = [{"id": p.id, "attributes": dict(p.attributes)} for p in personas]
    return json.loads(json.dumps(record, default=str))


def instrument_records(study: Study, names: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each instrument with its source: name, version, where its items come from
    (``content_source``), its citations and terms, items, scale, subscales and norm samples."""
    out = []
    for inst, path in zip(study.instruments, study.instrument_paths):
        out.append({"id": inst.id, "name": inst.name, "version": inst.version, "content_source": inst.content_source,
                    "citations": dict(inst.citations), "terms": inst.terms, "items": len(inst.items),
                    "scale": [{"value": o.value, "label": o.label} for o in inst.scale],
                    "subscales": [{"id": s.id, "name": s.name, "score": s.score,
                                   "min_answered": inst.min_answered(s) if inst.rating_items else None}
                                  for s in inst.subscales],
                    "norms": [{"id": n.id, "citation": n.citation, "population": n.population, "n": n.n,
                               "verified": n.verified} for n in inst.norms],
                    "file": names.get(str(path), Path(path).name), "sha256": file_sha256(path)})
    return out


def shown_path(path: str | Path) -> str:
    """A file of the user's as a pre-registration names it: a file psyq ships by its kind and name, any
    other relative to the working folder (where the command was given), so that no folder of this
    machine is written where it need not be.

    Example:
        >>> from psyq.engine.files.shipped import locate
        >>> shown_path(locate("iri_briganti2018_keyed", "human data"))
        "psyq's human data iri_briganti2018_keyed"
    """
    if (named := shipped_name(path)) is not None:
        return f"psyq's {named[0]} {named[1]}"
    try:
        return Path(os.path.relpath(Path(path).resolve())).as_posix()
    except ValueError:           # another drive (Windows): no relative path
        return Path(path).as_posix()


def file_records(study: Study, names: Mapping[str, str], people: Mapping[str, HumanData]) -> list[dict[str, str]]:
    """Every file the plan rests on, with its role and SHA-256: the files of the run's identity
    (:meth:`Study.file_hashes`: study, instruments, item texts, cohort and its data, situations,
    anchor statements), named as the run's manifest names them, then the people's data files."""
    roles = {str(study.path): "study", str(study.cohort_path): "cohort",
             **{str(p): "instrument" for p in study.instrument_paths},
             **{str(p): "data" for p in study.cohort.files}}
    roles.update({str(t): "item texts" for i, p in zip(study.instruments, study.instrument_paths)
                  if (t := item_texts_path(i, p)) is not None})
    if study.situations_path is not None:
        roles[str(study.situations_path)] = "situations"
    out = []
    for path, digest in study.file_hashes().items():
        role = roles.get(path, "anchors")      # the rest of a run's identity: answer: ssr's anchor statements
        out.append({"name": names.get(path, path), "role": role, "sha256": digest})
    for data in people.values():
        out.append({"name": shown_path(data.file), "role": "people", "sha256": file_sha256(data.file)})
        book = data.codebook or codebook_beside(data.file)
        if book is not None:
            out.append({"name": shown_path(book), "role": "codebook", "sha256": file_sha256(book)})
    return out


def people_records(study: Study, people: Mapping[str, HumanData]) -> dict[str, dict[str, Any]]:
    """The people each instrument is to be compared with: file, SHA-256, codebook, who they are."""
    instruments = {i.id: i for i in study.instruments}
    out = {}
    for inst_id, data in people.items():
        book = data.codebook or codebook_beside(data.file)
        n = len(data.answers(instruments[inst_id])) if instruments[inst_id].rating_items else None
        out[inst_id] = {"file": shown_path(data.file), "sha256": file_sha256(data.file), "keyed": data.keyed,
                        "codebook": shown_path(book) if book is not None else None,
                        "codebook_sha256": file_sha256(book) if book is not None else None, "who": data.who(n)}
    return out


def interval_widths(study: Study, people: Mapping[str, HumanData], bound: float) -> list[dict[str, Any]]:
    """Without people's answers: for each instrument's published norm samples, half the width of the
    90 % interval of Hedges' g the level criterion marks at the planned number of personas (at g = 0,
    the narrowest it gets), and whether it fits inside ±`bound` at all.

    Example:
        >>> from psyq.engine.design.study import load_study
        >>> [(r["norm_sample"], r["n_personas"], round(r["half_width"], 2)) for r in
        ...  interval_widths(load_study("quickstart"), {}, 0.3)]
        [('briganti2018', 12, 0.48), ('davis1980', 12, 0.48)]
    """
    from psyq.analysis.statistics.norms.summary import hedges_g    # scipy: only when a width is asked for

    n = len(_personas(study))
    rows = []
    for inst in study.instruments:
        if inst.id in people or n < 2:
            continue
        for sample in inst.norms:
            _, _, high = hedges_g(0.0, 1.0, n, 0.0, 1.0, sample.n, confidence=CONFIDENCE)
            rows.append({"instrument": inst.id, "norm_sample": sample.id, "n_people": sample.n, "n_personas": n,
                         "half_width": high, "bound": bound, "can_meet": bool(high < bound)})
    return rows


def _seeds(study: Study) -> dict[str, int | None]:
    sample = load_document(study.cohort_path, CohortFile).spec.sample
    provenance = study.cohort.provenance or {}
    per = study.spec.situations.per_respondent if study.spec.situations is not None else None
    return {"protocol": study.protocol.seed, "cohort_sample": sample.seed if sample is not None else None,
            "cohort_from_data": provenance.get("seed"),
            "situations": getattr(per, "seed", None),
            "scorecard": inspect.signature(scorecard).parameters["seed"].default,
            "verdict_power": inspect.signature(verdict_power).parameters["seed"].default}


def _missing(study: Study, not_reasked: tuple[str, ...]) -> dict[str, Any]:
    """How missing answers are read, re-asked and kept."""
    return {"statuses": list(MISSING_STATUSES), "reask_limit": study.protocol.reask_limit,
            "reasked": [s for s in MISSING_STATUSES if s not in (*not_reasked, *NEVER_REASKED)],
            "not_reasked": [*NEVER_REASKED, *not_reasked], "imputed": False,
            "scores": "sums prorated over the answered items when at least min_answered of a subscale's items are "
                      "answered, else missing",
            "baseline": ("the model answering as itself is one respondent, not a cohort: left out of the verdict"
                         if len(_personas(study)) < len(study.cohort.personas) else
                         "the cohort has no respondent answering as the model itself")}


def preregistration_record(study: Study, *, manifest: Mapping[str, Any], run_id: str, created_at: str,
                           psyq_version: str, report_defaults: Mapping[str, Any],
                           people: Mapping[str, HumanData] | None = None, power: Mapping[str, Any] | None = None,
                           not_reasked: tuple[str, ...] = (), trials_finished: int = 0) -> Preregistration:
    """The pre-registration of `study`, checked against its format.

    `manifest` is the manifest ``psyq run`` would write (its backends resolved with the command
    line's overrides), `run_id` the id it would give the run; `report_defaults` the bound and
    correction ``psyq report`` applies unless told otherwise; `people` the ``--human`` data and
    `power` the verdict's power computed from them (``psyq plan --human``'s); `not_reasked` the
    statuses the runner never asks again; `trials_finished` the trials of that run already done.

    Example (`manifest`, `run_id`: as the command line builds them):
        >>> plan = preregistration_record(study, manifest=manifest, run_id=run_id, created_at="2026-05-01T09:00:00Z",
        ...     psyq_version="1.0", report_defaults={"bound": 0.3, "correction": "holm"})  # needs the manifest  # doctest: +SKIP
        >>> plan.analysis.bound  # needs the plan above  # doctest: +SKIP
        0.3
    """
    people = people or {}
    manifest = json.loads(json.dumps(manifest, default=str))
    names = dict(zip(study.file_hashes(), manifest["files"]))    # the same files, in the same order
    bound = float(report_defaults["bound"])
    uses = study_uses(study)
    personas = _personas(study)
    models = ", ".join(dict.fromkeys(str(b["identity"].get("model") or b["config"].get("model") or backend_id)
                                     for backend_id, b in manifest["backends"].items()))
    instruments = instrument_records(study, names)
    chosen = study.spec.report.estimator
    widths = [] if power else interval_widths(study, people, bound)
    note = ("" if power else
            "Power was not computed: no people's answers were given (psyq preregister --human INSTRUMENT=FILE). "
            + ("The widths of the level criterion's intervals against the published norms are given instead."
               if widths else "The instruments have no published norms to give the intervals' widths against."))
    record = {
        "psyq": FORMAT, "psyq_version": psyq_version, "date": created_at[:10], "created_at": created_at,
        "templates": TEMPLATES,
        "study": {"id": study.id, "file": names.get(str(study.path), study.path.name),
                  "description": study.spec.description, "run_id": run_id,
                  "spec": study.spec.model_dump(mode="json")},
        "question": (f"Can the {len(personas)} personas of cohort {study.cohort.id}, answering as {models}, stand in "
                     f"for people on {', '.join(i['name'] for i in instruments)}?"),
        "instruments": instruments, "cohort": cohort_record(study, names, manifest), "run": manifest,
        "analysis": {
            "uses": [{"use": use, "criteria": list(criteria)} for use, criteria in uses],
            "criteria": _criteria(uses, bound), "cutoffs": cutoff_values(), "bound": bound,
            "confidence": CONFIDENCE, "correction": str(report_defaults["correction"]),
            "estimator": {i.id: default_estimator(i, chosen) for i in study.instruments if i.rating_items},
            "estimator_chosen_by": "the study's report: estimator" if chosen else
                                   "the items: WLSMV (ordinal) for 7 answer categories or fewer, else ML",
            "norm_samples": {i.id: list(study.spec.norms.get(i.id, [])) or "all" for i in study.instruments
                             if i.norms},
            "seeds": _seeds(study), "missing": _missing(study, not_reasked)},
        "people": people_records(study, people),
        "sample_size": {"personas": len(personas), "respondents": len(study.cohort.personas),
                        "baseline": len(personas) < len(study.cohort.personas),
                        "trials": int(manifest["trials_planned"]), "trials_finished": trials_finished,
                        "power": dict(power) if power else None, "ci_widths": widths or None, "note": note},
        "files": file_records(study, names, people),
    }
    return Preregistration.model_validate(json.loads(json.dumps(record, default=str)))


__all__ = ["MISSING_STATUSES", "TEMPLATES", "cohort_record", "file_records", "instrument_records", "interval_widths",
           "people_records", "preregistration_record", "shown_path", "study_uses"]
