"""The pre-registration as a document: the record's values as the report's :class:`Section` objects,
in the sections of the OSF Preregistration (Study information, Design plan, Sampling plan,
Variables, Analysis plan, Other), each answer of AsPredicted's nine questions named where it
stands; rendered by the report's own Markdown renderer, and written beside the JSON record.

:func:`preregistration_sections` builds the sections from a :class:`~.record.Preregistration`
(every sentence from its values: nothing here is computed again); :func:`write_preregistration`
writes ``preregistration.md``, ``preregistration.json`` and the tables as CSV into a folder.

Example (`plan`: a record, as ``psyq preregister`` builds it):
    >>> [s.title for s in preregistration_sections(plan)][:3]       # needs a record  # doctest: +SKIP
    ['Study information', 'Design plan', 'Sampling plan']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from psyq.analysis.preregistration.record import DOCX_NAME, FILE_NAME, MARKDOWN_NAME, Preregistration
from psyq.analysis.report.apa import say_num, say_pct
from psyq.analysis.report.render import TABLE_DIR, full_frame, render_markdown, table_files
from psyq.analysis.report.section import Section
from psyq.analysis.report.word import render_docx

DRAWN = {"sample": "drawn by psyq's seeded sampler", "personas": "written by hand in the cohort file",
         "csv": "read from the CSV file the cohort file names", "from_data": "taken from the people of a data file"}
"""How a cohort's personas come about, by the source its file gives."""


def _value(value: Any) -> str:
    """A setting's value as a table cell: text as it is, numbers as Python writes them, the rest as JSON."""
    if value is None:
        return "not set"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _settings(values: dict[str, Any], prefix: str = "") -> pd.DataFrame:
    """A key–value table of every setting (nested ones as ``a.b``)."""
    rows = []
    for key, value in values.items():
        if isinstance(value, dict) and value:
            rows.extend(_settings(value, f"{prefix}{key}.").itertuples(index=False, name=None))
        else:
            rows.append((f"{prefix}{key}", _value(value)))
    return pd.DataFrame(rows, columns=["setting", "value"])


def _study_information(plan: Preregistration) -> Section:
    a = plan.analysis
    alpha = f"{(1 - a.confidence) / 2:.2f}".lstrip("0")          # APA: no leading zero for α
    section = Section("Study information", readings=[
        f"Title: the psyq study {plan.study.id}" + (f" — {plan.study.description}" if plan.study.description else "")
        + f" (the run psyq would give the id {plan.study.run_id}).",
        f"Research question: {plan.question}",
        f"Hypotheses (AsPredicted 2): for each use below, the personas can stand in for people — every criterion "
        f"deciding the use meets, its {say_pct(a.confidence)} interval inside the criterion's region (two one-sided "
        f"tests at α = {alpha}); a criterion whose interval lies wholly outside its region falls short, and the use "
        "then cannot be served; otherwise it is inconclusive.",
        *[f"H{k}. {u.use}: decided by {', '.join(u.criteria)}." for k, u in enumerate(a.uses, 1)]])
    finished = plan.sample_size.trials_finished
    section.readings.append(
        "Data collection (AsPredicted 1): " + (
            f"no answers have been collected yet: the run this plan describes has no finished trial."
            if not finished else
            f"{finished:,} of the {plan.sample_size.trials:,} planned trials of this run were already finished "
            "when this plan was written."))
    return section


def _design_plan(plan: Preregistration) -> Section:
    p = plan.run.protocol
    conditions = plan.run.conditions
    section = Section("Design plan", readings=[
        "Study type (AsPredicted 9): a survey of simulated respondents — each persona, a model given a person's "
        "description, answers the instruments; observational, nobody is assigned to anything.",
        "Blinding: the model is shown its persona, the instructions and the items; nothing of the hypotheses.",
        f"Study design: items asked {str(p.get('presentation', '')).replace('_', ' ')}, in "
        f"{p.get('item_order')} order, options {str(p.get('option_order', '')).replace('_', ' ')}; "
        f"{p.get('repeats')} administration(s) per persona; "
        + (f"the answer read as {p.get('answer')}"
           + (f" ({str(p.get('logprob_answer')).replace('_', ' ')})" if p.get("answer") != "text" else "")
           if not _conditions_change(conditions, "answer") else
           "the answer read as each condition says (the table of conditions), else as " + str(p.get("answer")))
        + f"; every random choice seeded with {p.get('seed')} (randomization).",
        "Conditions (AsPredicted 4): " + (
            "none: the study is asked one way." if not conditions else
            f"{len(conditions)}, each asking every persona: " + "; ".join(c["id"] for c in conditions) + ".")])
    section.add_table("Protocol: every setting", _settings(p))
    if conditions:
        section.add_table("Conditions: what each changes", pd.DataFrame(
            [{"condition": c["id"], "factors": _value(c.get("factors")), "changes": _value(c.get("changes")),
              "backends": _value(c.get("backends")) if c.get("backends") else "all"} for c in conditions]))
    return section


def _conditions_change(conditions: list[dict], field: str) -> bool:
    """Does any condition change the protocol's `field`?"""
    return any(field in ((c.get("changes") or {}).get("protocol") or {}) for c in conditions)


def _sampling_plan(plan: Preregistration) -> Section:
    cohort, size = plan.cohort, plan.sample_size
    how = DRAWN.get(cohort["drawn"], cohort["drawn"])
    sample = cohort.get("sample")
    ids = cohort.get("persona_ids") or []
    if sample:
        how += f" with seed {sample['seed']}" + (f" (ids {ids[0]} to {ids[-1]})" if ids else "")
    if data := cohort.get("from_data"):
        how += (f" ({data.get('mode')}: {len(ids)} of the {data.get('rows_usable')} usable rows of {data.get('file')}, "
                f"seed {data.get('seed')})")
    backends = len(plan.run.backends)
    section = Section("Sampling plan", readings=[
        f"Cohort {cohort['id']} ({cohort['file']}): {size.personas} personas {how}"
        + (", and the model answering as itself (no persona)" if size.baseline else "") + ".",
        f"Sample size (AsPredicted 7): {size.personas} personas answering each of {backends} model(s)"
        + (f" ({size.respondents} respondents with the model as itself)" if size.baseline else "")
        + (f" in each of {len(plan.run.conditions)} conditions" if plan.run.conditions else "")
        + f"; {size.trials:,} trials planned.",
        "Stopping rule: every planned trial is asked; an answer that cannot be read is asked again as the analysis "
        "plan says; a trial the server fails is retried by running the same command again; nothing is stopped or "
        "added on seeing results."])
    if sample:
        section.add_table(f"Cohort {cohort['id']}: how each attribute is drawn", pd.DataFrame(
            [{"attribute": name, "drawn from": _value({k: v for k, v in spec.items() if v is not None})}
             for name, spec in sample["attributes"].items()]))
    if cohort.get("listed"):
        section.add_table(f"Cohort {cohort['id']}: the personas", pd.DataFrame(
            [{"persona": p["id"], "attributes": _value(p["attributes"])} for p in cohort["listed"]]))
    if size.power:
        for inst_id, power in size.power.items():
            needed = {r["criterion"]: r for r in power["needed"]}
            section.readings.append(
                f"Sample size rationale ({inst_id}): how often {power['personas']} personas that truly stood in for "
                f"{power['people']} would be marked, per criterion (the people resampled, {power['reps']} draws; "
                "psyq.verdict_power; structure not simulated).")
            section.add_table(f"Verdict power at {power['personas']} personas: {inst_id}", pd.DataFrame(
                [{"criterion": r["criterion"], "meets": say_pct(r["meets"]), "falls short": say_pct(r["falls_short"]),
                  "inconclusive": say_pct(r["inconclusive"]), "not estimable": say_pct(r["not_estimable"]),
                  "personas for 80 % meets": _needed(needed.get(r["criterion"], {}))}
                 for r in power["at_study_size"]]))
    if size.ci_widths:
        section.readings.append(
            f"Sample size rationale: power was not computed (no people's answers given); against the published "
            f"norms, the level criterion's {say_pct(plan.analysis.confidence)} interval of g would reach about "
            "± the half-width below at these sizes even were the personas' mean the norm's, so it can meet only "
            f"where that is under the bound ±{say_num(plan.analysis.bound)}.")
        section.add_table(f"Interval widths at {size.personas} personas: level against published norms", pd.DataFrame(
            [{"instrument": r["instrument"], "norm sample": r["norm_sample"], "people": f"{r['n_people']:,}",
              "personas": r["n_personas"], "half-width of g's interval": say_num(r["half_width"]),
              "can meet ±" + say_num(r["bound"]): "yes" if r["can_meet"] else "no"} for r in size.ci_widths]))
    if size.note and not size.ci_widths:
        section.readings.append(f"Sample size rationale: {size.note}")
    return section


def _needed(row: dict[str, Any]) -> str:
    n = row.get("n_needed")
    return f"{int(n):,}" if isinstance(n, (int, float)) and n == n else str(row.get("note", ""))


def _variables(plan: Preregistration) -> Section:
    conditions = plan.run.conditions
    factors = sorted({f for c in conditions for f in (c.get("factors") or {})})
    section = Section("Variables", readings=[
        "Manipulated variables: " + (", ".join(factors) + " (the conditions' factors)." if factors else "none."),
        "Measured variables (AsPredicted 3, the dependent variables): each persona's answers to the items of "
        + ", ".join(f"{i['name']} ({i['id']}, version {i['version']})" for i in plan.instruments)
        + ", and the subscale scores below (indices)."])
    section.add_table("Instruments and their sources", pd.DataFrame(
        [{"instrument": i["id"], "name": i["name"], "version": i["version"], "items": i["items"],
          "items written by": i["content_source"], "citations": " ".join(i["citations"].values()),
          "norm samples": ", ".join(n["id"] for n in i["norms"]) or "none", "file": i["file"]}
         for i in plan.instruments]))
    section.add_table("Subscale scores (indices)", pd.DataFrame(
        [{"instrument": i["id"], "subscale": s["id"], "name": s["name"], "score": s["score"],
          "fewest items answered": s["min_answered"] if s["min_answered"] is not None else ""}
         for i in plan.instruments for s in i["subscales"]]))
    return section


def _models(plan: Preregistration) -> Section:
    overrides = plan.run.model_extra.get("overrides") or [] if plan.run.model_extra else []
    section = Section("Models and every setting (data collection procedures)", readings=[
        f"{len(plan.run.backends)} model(s), each with every setting as psyq run resolves it (the study's backends"
        + (", changed on the command line: " + "; ".join(
            f"{o.get('field')} of {o.get('backend')} {_value(o.get('old'))} → {_value(o.get('new'))} ({o.get('flag')})"
            for o in overrides) if overrides else "") + ")."])
    for backend_id, backend in plan.run.backends.items():
        frame = pd.concat([_settings(backend.identity, "identity."), _settings(backend.config),
                           _settings(backend.capabilities, "capabilities.")], ignore_index=True)
        section.add_table(f"Backend {backend_id}: every setting", frame)
    return section


def _analysis_plan(plan: Preregistration) -> Section:
    a = plan.analysis
    by_use: dict[str, list[str]] = {}
    for u in a.uses:
        for c in u.criteria:
            by_use.setdefault(c, []).append(u.use)
    missing = a.missing
    seeds = "; ".join(f"{name.replace('_', ' ')} {value}" for name, value in a.seeds.items() if value is not None)
    section = Section("Analysis plan", readings=[
        "Statistical models (AsPredicted 5): psyq report's verdict, per model against people: each criterion below "
        f"marked by its {say_pct(a.confidence)} confidence interval against the criterion's region — meets inside "
        "it, falls short wholly outside it (read at the Bonferroni level where a criterion has several rows), "
        "inconclusive otherwise; a use is met only when all its criteria meet.",
        f"Inference criteria: equivalence bound ±{say_num(a.bound)} SD (psyq report --bound); norm comparisons "
        f"corrected for multiplicity by {a.correction.replace('holm', 'Holm')} (psyq report --correction)"
        + ("; conditions compared head to head with Holm's correction over pairs × criteria" if plan.run.conditions
           else "") + ".",
        "Measurement invariance estimator: " + ", ".join(f"{e} for {i}" for i, e in a.estimator.items())
        + f" (chosen by {a.estimator_chosen_by})." if a.estimator else "No measurement invariance is fitted.",
        *([("Norm samples compared: " + "; ".join(f"{i}: {', '.join(s) if isinstance(s, list) else s}"
                                                 for i, s in a.norm_samples.items()) + ".")] if a.norm_samples else []),
        f"Seeds: {seeds}.",
        f"Outliers and exclusions (AsPredicted 6): no answer is excluded for its value; {missing['baseline']}.",
        f"Missing data: an answer that cannot be read ({', '.join(missing['reasked'])}) is asked again with the item "
        f"kind's corrective follow-up, up to {missing['reask_limit']} time(s); a refusal is kept as the model's answer "
        f"and a reply that cannot be used ({', '.join(s for s in missing['not_reasked'] if s != 'refusal')}) is not "
        "asked again. What is still unread is stored as a missing answer with its reason "
        f"({', '.join(missing['statuses'])}); no answer is imputed; subscale scores: {missing['scores']}. The "
        "report counts missing answers and refusals per reason."])
    section.add_table("Criteria and their regions", pd.DataFrame(
        [{"criterion": c, "region": region, "decides": "; ".join(by_use.get(c, [])) or "read beside the others"}
         for c, region in a.criteria.items()]))
    section.add_table("Cut-offs as the code holds them", pd.DataFrame(
        [{"cut-off": name.replace("_", " "), "value": _value(value)} for name, value in a.cutoffs.items()]))
    return section


def _files(plan: Preregistration) -> Section:
    section = Section("Files this plan rests on", readings=[
        "A file whose SHA-256 differs from the one below is not the file planned: psyq report RUN "
        "--preregistration DIR names it."])
    section.add_table("Files and their SHA-256", pd.DataFrame([f.model_dump() for f in plan.files]))
    return section


def _other(plan: Preregistration) -> Section:
    return Section("Other", readings=[
        f"Written by psyq {plan.psyq_version} on {plan.date} ({plan.created_at}), in the sections of "
        + " and of ".join(t.split(" (")[0].split(":")[0] for t in plan.templates) + ".",
        f"Machine-readable: {FILE_NAME} beside this file holds every value above (format {plan.psyq}).",
        "After the run, psyq report RUN --preregistration DIR lists every difference between the run and this "
        "plan, first in the report."])


def preregistration_sections(plan: Preregistration) -> list[Section]:
    """The pre-registration's sections, in the OSF template's order (models and files added).

    Example: see the module's.
    """
    return [_study_information(plan), _design_plan(plan), _sampling_plan(plan), _variables(plan), _models(plan),
            _analysis_plan(plan), _files(plan), _other(plan)]


def preregistration_markdown(plan: Preregistration, sections: list[Section] | None = None) -> str:
    """The pre-registration as Markdown, by the report's renderer (tables numbered, APA style)."""
    sections = sections if sections is not None else preregistration_sections(plan)
    return render_markdown({"study": plan.study.id, "run_id": plan.study.run_id}, sections, title=_title(plan))


def preregistration_docx(plan: Preregistration, sections: list[Section] | None = None) -> bytes:
    """The pre-registration as a Word document, by the report's renderer (APA 7 tables)."""
    sections = sections if sections is not None else preregistration_sections(plan)
    return render_docx({"study": plan.study.id, "run_id": plan.study.run_id}, sections, title=_title(plan))


def _title(plan: Preregistration) -> str:
    return f"Pre-registration: {plan.study.id} (psyq {plan.psyq_version}, {plan.date})"


def write_preregistration(plan: Preregistration, out_dir: str | Path) -> dict[str, Path]:
    """Write ``preregistration.md``, ``preregistration.docx``, ``preregistration.json`` and every
    table as CSV (``report_tables/``) into `out_dir`; return the paths written by kind (``md``,
    ``docx``, ``json``).

    Example (`plan`: a record, as ``psyq preregister`` builds it):
        >>> sorted(write_preregistration(plan, tmp_path))        # needs a record  # doctest: +SKIP
        ['docx', 'json', 'md']
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sections = preregistration_sections(plan)
    (out / TABLE_DIR).mkdir(exist_ok=True)
    for name, table in zip(table_files(sections), (t for s in sections for t in s.tables)):
        full_frame(table.frame).to_csv(out / name, index=False)
    paths = {"md": out / MARKDOWN_NAME, "docx": out / DOCX_NAME, "json": out / FILE_NAME}
    paths["md"].write_text(preregistration_markdown(plan, sections), encoding="utf-8")
    paths["docx"].write_bytes(preregistration_docx(plan, sections))
    paths["json"].write_text(json.dumps(plan.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    return paths


__all__ = ["preregistration_docx", "preregistration_markdown", "preregistration_sections", "write_preregistration"]
