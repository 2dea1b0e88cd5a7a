"""`psyq report RUN`: one self-contained HTML file and a Markdown summary of a run.

Sections: the study and its counts; missing answers and refusals; comparison with norms
(effect sizes with CIs, corrected p, equivalence); reliability; LLM-fidelity diagnostics;
model and persona effects; item response heatmaps; comparison with human data when given.
Every table comes with a one-line reading in plain words. Figures are embedded as data URIs,
so the HTML file can be mailed or archived on its own.
"""

from __future__ import annotations

import html
import math
import warnings
from pathlib import Path
from typing import Any, Callable, Collection, Mapping

import pandas as pd

from psyq.engine.results.export import export_table, run_instruments
from psyq.engine.results.human_answers import read_answers_csv
from psyq.engine.files.errors import InputError
from psyq.engine.design.instrument import Instrument
from psyq.engine.judging.answer_judge import read_judgements
from psyq.engine.kinds import instruments_with
from psyq.engine.store.run_dir import open_run_dir
from psyq.engine.results.imported_run import is_imported_run
from psyq.engine.files.yamlfile import load_yaml

from psyq.analysis.report import apa, methods, plots
from psyq.analysis.statistics import effects, fidelity, human_comparison as human, norms, reliability, validity
from psyq.analysis.report.sections import ReportInput, report_kinds
from psyq.analysis.scoring.scores import human_scores, persona_columns, score_all_kinds
from psyq.analysis.statistics.weighting import twin_weights
from psyq.analysis.report.readings import (WEIGHTED_CAPTION, matching_warnings, norm_readings, reading_notes,
                                           shares_text, value_mismatch_warnings, weighted_by, weighting_methods,
                                           weighting_text)
from psyq.analysis.report.sections.same_construct import construct_section
from psyq.analysis.report.sections.twins import twins_section
from psyq.analysis.report.section import Section


def _protocol_text(manifest: Mapping[str, Any]) -> str:
    """The protocol as recorded; a staged run's stages replace `presentation` (each measure stage
    asks its instrument whole, whatever `presentation` says)."""
    protocol = dict(manifest["protocol"])
    if manifest.get("stages"):
        protocol.pop("presentation", None)
        steps = [f"measure {s['measure']}" if "measure" in s else "evoke (situation)" for s in manifest["stages"]]
        protocol = {"stages": " → ".join(steps), **protocol}
    return ", ".join(f"{k}={v}" for k, v in protocol.items())


def _change_section(run_path: Path, human_change_csv: str | Path | None) -> Section:
    """The change section of a staged run (before/after the evoked situation), as a report Section.

    Only this section follows the study and missing-answer sections: norms, reliability and item
    analyses assume one measure per respondent and repeat, which a staged run does not have."""
    from psyq.analysis.statistics.change import read_human_change_csv
    from psyq.analysis.report.sections.change import change_section
    from psyq.analysis.scoring.stage_scores import load_stage_scores

    humans = read_human_change_csv(human_change_csv) if human_change_csv is not None else None
    section = change_section(load_stage_scores(run_path), humans)
    section.readings.append("Norm comparison, reliability and item analyses are not computed for a run with "
                            "stages: each respondent answers the measure once per stage and situation.")
    return section


def _imported_sections(run_path: Path, human_change_csv: str | Path | None) -> tuple[dict[str, Any], list[Section]]:
    """(facts, sections) of an imported run (engine/results/imported_run.py: scores psyq did not collect,
    e.g. ``psyq import emotionbench-results``): what was imported, then the change section."""
    from psyq.engine.results.imported_run import read_imported_run

    from psyq.analysis.statistics.change import read_human_change_csv
    from psyq.analysis.report.sections.change import change_section, emotionbench_part

    manifest, scores = read_imported_run(run_path)
    files = ", ".join(manifest.get("imported_from") or []) or "unknown file(s)"
    facts = {"study": f"imported from {files}", "run_id": Path(run_path).name}
    study = Section("Study")
    study.readings.append(
        f"Imported run: the scores were read from {files} by `{manifest.get('command', 'psyq import')}`; psyq made "
        f"no request (requests_made = {manifest.get('requests_made')}). {scores['backend_id'].nunique()} backend(s), "
        f"{scores['respondent_id'].nunique()} respondent id(s), {scores['situation_id'].nunique()} situation(s).")
    if manifest.get("pairing"):
        study.readings.append(str(manifest["pairing"]))
    study.readings.extend(str(n) for n in manifest.get("notes") or [])
    study.tables.append(("Imported run", pd.DataFrame({"": [files, manifest.get("command"), manifest.get("source"),
                                                            manifest.get("terms"), manifest.get("instrument")]},
                                                       index=["imported from", "command", "source", "terms",
                                                              "instrument"])))
    humans = read_human_change_csv(human_change_csv) if human_change_csv is not None else None
    change = change_section(scores, humans)
    own_readings, own_tables = emotionbench_part(manifest, scores)   # EmotionBench's own comparison, beside psyq's
    change.readings.extend(own_readings)
    change.tables.extend(own_tables)
    return facts, [study, change]


def _norm_choice(run_path: Path, norm_samples: list[str] | None) -> norms.SampleChoice:
    """The norm samples to compare: `--norms` if given, else the study's `norms`, else all."""
    if norm_samples:
        return norm_samples
    study_file = Path(run_path) / "study.yaml"
    if study_file.exists():
        # Through psyq's bounded YAML reader, like every other file psyq reads.
        spec = load_yaml(study_file).data
        if spec.get("norms"):
            return {str(k): [str(x) for x in v] for k, v in spec["norms"].items()}
    return None


def score_range(instrument: Instrument, subscale_id: str) -> tuple[float, float] | None:
    """The lowest and highest score a subscale can take on its own metric (a sum of k items: k × the
    scale's ends; a mean: the scale's ends); None for a score of another kind.

    Example:
        >>> score_range(load_instrument("instruments/iri.yaml"), "PT")      # doctest: +SKIP
        (0, 28)
    """
    sub = next((s for s in instrument.rating_subscales if s.id == subscale_id), None)
    if sub is None or len(instrument.scale) < 2 or sub.score not in ("sum", "mean"):
        return None
    k = 1 if sub.score == "mean" else len(instrument.subscale_items(subscale_id))
    return k * instrument.scale_min, k * instrument.scale_max


def norm_section(scores: pd.DataFrame, instruments: Mapping[str, Instrument], choice: norms.SampleChoice,
                 *, bound: float = 0.3, correction: str = "holm",
                 warn: Callable[[str], None] | None = None) -> Section:
    """The comparison with human norms: every chosen sample, how respondents matched its groups
    (with a warning when some matched none), and every norm source with its verification status,
    saying which were not compared and why."""
    try:
        comp = norms.compare_with_norms(scores, instruments, bound=bound, correction=correction, samples=choice)
    except KeyError as exc:
        raise InputError.single("--norms", str(exc).strip("'\"")) from None
    section = Section("Comparison with human norms", comparison=comp)
    has_norms = any(inst.norms for inst in instruments.values())
    if not has_norms:
        section.readings.append("No instrument in this run carries published norms (content written by psyq "
                                "never does), so no norm comparison is made.")
        return section
    matching = norms.group_matching(scores, instruments, samples=choice)
    unmatched = norms.unmatched_respondents(scores, instruments, samples=choice)
    for message in matching_warnings(matching, unmatched_ids=unmatched):
        section.readings.append("Warning: " + message)
        if warn:
            warn(message)
    if comp.empty:
        section.readings.append("No comparison with norms was made: no respondent has a score on a normed subscale.")
    else:
        section.readings.extend(norm_readings(comp, bound=bound, correction=correction))
        section.tables.append(("Cohort against norms (Welch t, Hedges g with 95 % CI, "
                               f"{correction} correction over all rows of all norm samples, TOST within ±{bound} SD; "
                               "norm_verified: how the norm numbers were checked)", comp))
        for inst_id in comp["instrument"].unique():
            section.figures.append((f"Cohort means (95 % CI) against norm mean ± 1 SD: {inst_id}",
                                    plots.profile_plot(comp, inst_id)))
            for sub in comp.loc[comp["instrument"] == inst_id, "subscale"].unique():
                section.figures.append((f"Cohort scores over the norm distribution: {inst_id} {sub}",
                                        plots.distribution_plot(scores, comp, inst_id, sub,
                                                                score_range(instruments[inst_id], sub))))
    if not matching.empty:
        section.tables.append(("Norm group matching (respondents per group of each norm sample; those matching "
                               "no group are compared with the sample's whole-sample group, or 'pooled' when psyq "
                               "pools the groups)", matching))
    compared = set() if comp.empty else set(zip(comp["instrument"], comp["norm_sample"]))
    chosen = norms.chosen_samples(instruments, choice)
    notes = []
    for inst_id, inst in instruments.items():
        for sample in inst.norms:
            flag = norms.verification_flag(sample.verified)
            status = f"verified: {sample.verified}" + (f" — {flag.upper()}" if flag else "")
            if (inst_id, sample.id) in compared:
                used = ""
            elif sample not in chosen[inst_id]:
                used = " NOT COMPARED: left out by the choice of norm samples (--norms or the study's `norms`)."
            else:
                used = " NOT COMPARED: no respondent has a score on its subscales."
            notes.append(f"{inst_id} {sample.id} [{status}]: {inst.citations.get(sample.citation, sample.citation)} "
                         f"({sample.table}; {sample.population.strip()}; n = {sample.n}). "
                         f"Verification: {sample.verification.strip()}{used}")
    section.note = "Norm sources: " + "; ".join(notes)
    return section


NOT_ESTIMABLE = "not estimable"
"""What a sentence says where a table shows ``—`` (:data:`psyq.analysis.report.apa.DASH`)."""


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _fmt_p(p: float) -> str:
    """A p value in a sentence: as :func:`psyq.analysis.report.apa.fmt_p` prints it, or "not estimable"."""
    return NOT_ESTIMABLE if _missing(p) else apa.fmt_p(p)


def _pct(x: float) -> str:
    return NOT_ESTIMABLE if _missing(x) else f"{100 * x:.0f} %"


def items_by_instrument(table: pd.DataFrame, instruments: Mapping[str, Instrument]) -> dict[str, pd.DataFrame]:
    """Raw answers as respondent × item tables per instrument (first repeat, first backend only
    when there are several: reliability is a property of one set of respondents)."""
    out = {}
    for inst_id, rows in table.groupby("instrument"):
        first = rows[(rows["repeat"] == rows["repeat"].min()) & (rows["backend_id"] == rows["backend_id"].iloc[0])]
        wide = first.pivot_table(index="respondent_id", columns="item_id", values="value", aggfunc="first",
                                 dropna=False)
        out[inst_id] = wide.reindex(columns=[i.id for i in instruments[inst_id].rating_items])
    return out


def build_sections(run_path: str | Path, *, human_csv: Mapping[str, str | Path] | None = None,
                   bound: float = 0.3, correction: str = "holm",
                   targets_csv: Mapping[str, str | Path] | None = None,
                   norm_samples: list[str] | None = None,
                   warn: Callable[[str], None] | None = None,
                   human_keyed: Collection[str] = (),
                   human_change_csv: str | Path | None = None,
                   human_codebooks: Mapping[str, str | Path] | None = None,
                   retest_csv: Mapping[str, str | Path] | None = None,
                   retest_keyed: Collection[str] = ()) -> tuple[dict[str, Any], list[Section]]:
    """Compute everything the report shows; returns (facts about the run, sections).

    `human_csv` maps an instrument id to human data: item answers for a questionnaire, or what a
    kind's report part reads (:attr:`psyq.analysis.report.sections.KindReport.human_data`, e.g. perceiver
    ratings); `human_keyed` names the instruments whose human item answers are stored already
    keyed (reverse items already reversed); `human_codebooks` maps an instrument id to the codebook
    of its human data file (:mod:`psyq.engine.files.codebook`; default: one found beside the CSV);
    `targets_csv` maps an instrument whose kind takes
    them (:attr:`~psyq.analysis.report.sections.KindReport.takes_targets`) to its targets' self-reports.
    `norm_samples` restricts the norm samples compared (default: the study's `norms`, else all);
    `warn` receives every warning the report also shows (e.g. respondents matching no norm group).
    A run with `stages:` (measure, evoke, measure in one conversation) is reported by its change
    scores (:mod:`psyq.analysis.report.sections.change`), compared with `human_change_csv` (humans' before and
    after, :func:`psyq.analysis.statistics.change.read_human_change_csv`) when given.
    `retest_csv` maps an instrument id to a second administration of the people of its `human_csv`
    file (same respondent ids; `retest_keyed`: stored already keyed; the instrument's codebook, if
    given, applies to it too): when the personas are twins of those people (persona id =
    respondent_id) the twin section (:mod:`psyq.analysis.report.sections.twins`) normalises by it.
    """
    if is_imported_run(run_path):   # scores psyq did not collect (engine/results/imported_run.py)
        return _imported_sections(Path(run_path), human_change_csv)
    run = open_run_dir(run_path)
    manifest = run.read_manifest()
    table = export_table(run.path)
    staged = "stage" in table.columns and table["stage"].notna().any()
    if human_change_csv is not None and not staged:
        raise InputError.single(str(human_change_csv), "--human-change applies to runs with stages "
                                "(measure, evoke, measure); this run has none")
    instruments = run_instruments(run)
    judgements = read_judgements(run.path)
    human_csv = dict(human_csv or {})
    if stray := sorted(set(retest_csv or {}) - set(human_csv)):
        raise InputError.single(", ".join(stray), "--retest INSTRUMENT=FILE is a second administration of the people "
                                "of that instrument's --human file; no --human file is given for it (given: "
                                f"{', '.join(sorted(human_csv)) or 'none'})")
    # Kinds whose report part reads the --human files of their instruments itself (e.g. perceiver
    # ratings) take those files out of the questionnaires' item answers.
    parts = report_kinds()
    data_ids = {p.name: instruments_with(p.name, instruments) for p in parts if p.human_data}
    kind_csv = {name: {i: human_csv.pop(i) for i in ids if i in human_csv} for name, ids in data_ids.items()}
    for part in (p for p in parts if p.human_data):
        if keyed_kind := sorted(set(human_keyed) & set(kind_csv[part.name])):
            raise InputError.single(", ".join(keyed_kind), "':keyed' applies to item answers of a questionnaire, "
                                    f"not to {part.human_data}")
    target_ids = {i for p in parts if p.takes_targets for i in instruments_with(p.name, instruments)}
    unknown = sorted(set(human_csv) - set(instruments)) + sorted(set(targets_csv or {}) - target_ids)
    if unknown:
        claimed = {i for ids in data_ids.values() for i in ids}
        takers = "".join(f"; {p.data_label}: {', '.join(data_ids[p.name]) or 'none'}" for p in parts if p.human_data)
        raise InputError.single(", ".join(unknown), "not an instrument of this run that takes this kind of data "
                                f"(questionnaires: {', '.join(sorted(set(instruments) - claimed)) or 'none'}"
                                f"{takers})")
    # Rating instruments get the item-level analyses; the other kinds have their own sections.
    rated = {i: inst for i, inst in instruments.items() if inst.rating_items}
    rated_table = table[table["instrument"].isin(rated)]
    # A staged run holds one measure per stage and situation: its scores are change scores.
    scores = pd.DataFrame() if staged else score_all_kinds(table, instruments)
    sections: list[Section] = []

    # 1. Study and counts
    study = Section("Study")
    n_resp = table["respondent_id"].nunique()
    answered = (table["status"] == "answered").mean()
    study.readings.append(
        f"{n_resp} respondents answered {len(instruments)} instrument(s) "
        f"({', '.join(sorted(instruments))}) on {table['backend_id'].nunique()} backend(s); "
        f"{_pct(answered)} of {len(table)} item answers were read.")
    facts = pd.DataFrame({"": [
        manifest["study"], manifest["run_id"], manifest.get("psyq_version"), manifest.get("git_commit") or "-",
        ", ".join(f"{b}: {v['identity'].get('model')}" for b, v in manifest["backends"].items()),
        f"{manifest['cohort']['id']} ({manifest['cohort']['respondents']} respondents)",
        _protocol_text(manifest),
        manifest.get("started_at"), manifest.get("finished_at") or "not finished",
    ]}, index=["study", "run", "psyq", "git commit", "backends", "cohort", "protocol", "started", "finished"])
    study.tables.append(("Run", facts))
    attributes = [c for c in persona_columns(table)]
    if attributes:
        people = table.drop_duplicates("respondent_id")[attributes]
        summary = []
        for col in attributes:
            values = people[col].dropna()
            if pd.api.types.is_numeric_dtype(values):
                summary.append((col, f"mean {values.mean():.1f}, range {values.min()}–{values.max()}"))
            else:
                counts = values.astype(str).value_counts()
                summary.append((col, ", ".join(f"{k} {v}" for k, v in counts.items())))
        study.tables.append(("Cohort", pd.DataFrame(summary, columns=["attribute", "distribution"])))
    sections.append(study)

    # 2. Missing answers and refusals
    miss = Section("Missing answers and refusals")
    missing = fidelity.missingness(table)
    miss.tables.append(("Answers by status", missing))
    refused = (table["status"] == "refusal").mean()
    unread = (table["status"] != "answered").mean()
    miss.readings.append(f"{_pct(unread)} of answers are missing ({_pct(refused)} refusals); missing answers "
                         "are never imputed — subscales follow each instrument's min_answered rule.")
    sections.append(miss)

    if staged:
        sections.append(_change_section(run.path, human_change_csv))
        return manifest, sections

    # 3. Norms
    choice = _norm_choice(run.path, norm_samples)
    sections.append(norm_section(scores, instruments, choice, bound=bound,
                                 correction=correction, warn=warn))
    comp = sections[-1].comparison

    # 3b. The sections of the item kinds (analysis/report/sections/), in their registration order
    for part in parts:
        sections.extend(part.sections(ReportInput(
            Path(run.path), table, instruments, scores, judgements, kind_csv.get(part.name, {}), targets_csv or {},
            Section, _num, _pct, _fmt_p)))

    # 4. Reliability
    # Sections on rating items (reliability, fidelity, item responses) are left out of a run
    # that has none, e.g. one of free-text items only.
    rel = Section("Reliability")
    items = items_by_instrument(rated_table, rated)
    rel_table = reliability.reliability_table(items, rated) if rated else pd.DataFrame()
    if rated:
        rel.tables.append(("Internal consistency (keyed items, first repeat)", rel_table))
    for row in rel_table.itertuples():
        if isinstance(row.alpha, float) and not math.isnan(row.alpha):
            omega = (f"ω = {apa.fmt_r(row.omega)}" if isinstance(row.omega, float) and not math.isnan(row.omega)
                     else f"ω not estimable{': ' + row.note.split(': ', 1)[-1] if row.note else ''}")
            remark = apa.alpha_remark(row.alpha)
            rel.readings.append(f"{row.instrument} {row.subscale}: Cronbach's α = {apa.fmt_r(row.alpha)} "
                                f"(95 % CI {apa.fmt_r(row.alpha_low)} to {apa.fmt_r(row.alpha_high)}), {omega}"
                                + (f"; {remark}." if remark else "."))
        else:
            rel.readings.append(f"{row.instrument} {row.subscale}: {row.note or 'α not estimable'}.")
    if table["repeat"].nunique() > 1 and not scores.empty:
        for (b, inst, sub), rows in scores.groupby(["backend_id", "instrument", "subscale"]):
            icc = reliability.test_retest_icc(rows[["respondent_id", "repeat", "score"]].dropna())
            icc.insert(0, "subscale", sub)
            icc.insert(0, "instrument", inst)
            rel.tables.append((f"Test–retest ICC, {b} {inst} {sub}", icc))
            if not icc["estimable"].all():
                rel.readings.append(f"Test–retest ICC, {b} {inst} {sub}: not estimable — {icc['note'].iloc[0]}.")
    if rel.tables:
        sections.append(rel)

    # 5. Fidelity diagnostics
    fid = Section("LLM-fidelity diagnostics")
    diag = fidelity.fidelity_summary(rated_table, rated, comp if not comp.empty else None) if rated else {}
    for name, frame in diag.items():
        if frame is not None and not frame.empty:
            fid.tables.append((FIDELITY_CAPTIONS.get(name, name.replace("_", " ").capitalize()), frame))
    fid.readings.extend(fidelity_readings(diag))
    if "sd_ratio" in diag and diag["sd_ratio"] is not None and not diag["sd_ratio"].empty:
        fid.figures.append(("SD of the cohort relative to the norm (1 = human-like spread)",
                            plots.sd_ratio_chart(diag["sd_ratio"])))
    if rated:
        sections.append(fid)

    # 6. Model and persona effects
    eff = Section("Model and persona effects")
    # A regression on a small cohort cannot carry every attribute: keep numeric ones and
    # categorical ones with at most 3 levels, and say which were left out.
    varying = [c for c in attributes if scores[c].notna().sum() > 2 and scores[c].nunique() > 1]
    predictors = [c for c in varying if pd.api.types.is_numeric_dtype(scores[c]) or scores[c].nunique() <= 3]
    if set(varying) - set(predictors):
        eff.readings.append("Left out of the model (more than 3 categories for this cohort size): "
                            + ", ".join(sorted(set(varying) - set(predictors))) + ".")
    if predictors or scores["backend_id"].nunique() > 1:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fx = effects.model_effects(scores, predictors)
        # Models that could not be fitted (too few respondents for the terms) are said, not hidden.
        eff.readings.extend(dict.fromkeys(str(w.message) for w in caught))
        eff.tables.append(("Regression of subscale score on backend and persona attributes", fx))
        eff.readings.append("Coefficients are differences in subscale points (categorical terms against "
                            "their reference level); with repeats the model has a random intercept per respondent.")
    else:
        eff.readings.append("No varying persona attributes or backends: no effects to estimate.")
    if not scores.empty:
        sections.append(eff)

    # 7. Item responses
    items_section = Section("Item responses")
    for inst_id, instrument in rated.items():
        items_section.figures.append((f"Share of answers per item and option: {inst_id}",
                                      plots.item_heatmap(table[table["instrument"] == inst_id], instrument)))
    if rated:
        sections.append(items_section)

    # 8. Human data
    if human_csv:
        hum = Section("Comparison with human data")
        human_items = {i: read_answers_csv(p, instruments[i], keyed=True if i in human_keyed else None,
                                           codebook=(human_codebooks or {}).get(i)) for i, p in human_csv.items()}
        for inst_id in sorted(human_items):   # codebook used, keying declared, keying that looks wrong
            said, warned = reading_notes(instruments[inst_id], human_items[inst_id], str(human_csv[inst_id]))
            hum.readings.extend(said + [f"Warning (human data): {w}." for w in warned])
            for message in warned:
                if warn:
                    warn("human data: " + message)
        # Survey weights: the human side when its file has them; the cohort side too when its personas are
        # respondents of that file (twins), never for a cohort drawn from it in proportion to the weights.
        cohort_weights = {i: twin_weights(items[i], human_items[i]) for i in human_items if i in items}
        weighting = {i: weighting_text(i, human_items[i], cohort_weights.get(i), items.get(i)) for i in human_items}
        hum.readings.extend(text for text in weighting.values() if text)
        cmp = pd.concat([human.compare_with_humans({i: items[i]}, {i: human_items[i]}, instruments,
                                                   cohort_weights=cohort_weights[i]) for i in cohort_weights]
                        or [pd.DataFrame(columns=human.COMPARISON_COLUMNS)], ignore_index=True)
        weighted_any = bool((cmp["weighted"] != "").any())
        hum.tables.append(("Cohort against human respondents" + (
            f" ({WEIGHTED_CAPTION})" if weighted_any else ""), cmp if weighted_any else cmp.drop(
                columns=human.WEIGHTED_ONLY)))
        for row in cmp.itertuples():
            hum.readings.append(
                f"{row.instrument} {row.subscale}: cohort mean {_num(row.mean_cohort)} vs human {_num(row.mean_human)} "
                f"(g = {_num(row.g)}, 95 % CI {_num(row.g_low)} to {_num(row.g_high)}; Welch p {_fmt_p(row.p)}); "
                f"variance ratio {_num(row.variance_ratio)}"
                + (f" (Brown–Forsythe p {_fmt_p(row.p_bf)})." if not row.weighted else
                   f"; {weighted_by(row, human_items[row.instrument])}.")
                + (f" {_sentence(row.note)}." if row.note else ""))
        if weighted_any:
            hum.methods = weighting_methods(human_items, cohort_weights)
        human_long = pd.concat([human_scores(human_items[i], instruments[i]) for i in human_items], ignore_index=True)
        human_norms = norms.compare_with_norms(human_long, instruments, bound=bound, correction=correction,
                                               samples=choice)
        human_matching = norms.group_matching(human_long, instruments, samples=choice)
        for message in matching_warnings(human_matching) + value_mismatch_warnings(
                norms.value_mismatches(human_long, instruments, samples=choice)):
            hum.readings.append("Warning (human data): " + message)
            if warn:
                warn("human data: " + message)
        if not human_norms.empty:
            hum.tables.append(("Human respondents against the same norms (scored and matched to norm groups "
                               "like the cohort" + ("; unweighted: each respondent counts once" if weighted_any else "")
                               + ")", human_norms))
            hum.readings.extend(f"Human data: {r}" for r in norm_readings(human_norms, bound=bound, correction=correction))
        sections.append(hum)
        # The cohort's raw answers of every rating instrument with human item data, for the sections below.
        cohort_answers = {i: cohort_items(rated_table, rated[i]) for i in human_items
                          if i in rated and i in set(rated_table["instrument"])}
        validity_section = construct_validity_section(rated_table, rated, human_items, cohort_weights=cohort_weights)
        if validity_section is not None:
            sections.append(validity_section)
            sections.append(construct_section({i: (rated[i], cohort_answers[i], human_items[i])
                                               for i in cohort_answers}))
        retests = {i: read_answers_csv(p, instruments[i], keyed=True if i in retest_keyed else None,
                                       codebook=(human_codebooks or {}).get(i)) for i, p in (retest_csv or {}).items()}
        twins = twins_section({i: (rated[i], cohort_answers[i], human_items[i], retests.get(i))
                               for i in cohort_answers}, always=bool(retests))
        if twins is not None:
            sections.append(twins)
    return manifest, sections


def cohort_items(table: pd.DataFrame, instrument: Instrument) -> pd.DataFrame:
    """Raw answers of one instrument as respondent × item with the persona attributes (first
    repeat of the first backend, as :func:`items_by_instrument`)."""
    rows = table[table["instrument"] == instrument.id]
    first = rows[(rows["repeat"] == rows["repeat"].min()) & (rows["backend_id"] == rows["backend_id"].iloc[0])]
    wide = first.pivot_table(index="respondent_id", columns="item_id", values="value", aggfunc="first", dropna=False)
    wide = wide.reindex(columns=[i.id for i in instrument.rating_items])
    attributes = persona_columns(table)
    people = first.drop_duplicates("respondent_id").set_index("respondent_id")[attributes]
    return wide.join(people)


def construct_validity_section(table: pd.DataFrame, rated: Mapping[str, Instrument],
                               human_items: Mapping[str, pd.DataFrame], *,
                               cohort_weights: Mapping[str, pd.Series | None] | None = None) -> Section | None:
    """Item distributions, subscale intercorrelations and factor congruence against raw human
    answers (:mod:`psyq.analysis.statistics.validity`); None when no rating instrument has human item answers.
    Item distributions are weighted by the humans' survey weights and by `cohort_weights` (instrument
    id -> weights by respondent id, :func:`twin_weights`) where given."""
    shared = [i for i in human_items if i in rated and i in set(table["instrument"])]
    if not shared:
        return None
    section = Section("Construct validity against human data")
    section.readings.append(
        "Cohort: first repeat of the first backend. Distributions are compared per item (total variation; "
        "SimBench score 100 × (1 − TV / mean TV of uniform guessing): 0 = no better than random answers, "
        "100 = the human distribution; Wasserstein distance in scale points), overall and within each "
        "attribute both samples share.")
    distance_frames, correlation_frames, congruence_frames = [], [], []
    for inst_id in shared:
        instrument = rated[inst_id]
        cohort, humans = cohort_items(table, instrument), human_items[inst_id]
        weights_c = (cohort_weights or {}).get(inst_id)
        dist = validity.item_distributions(cohort, humans, instrument, cohort_weights=weights_c)
        if said := shares_text(inst_id, humans, weights_c, cohort):
            section.readings.append(said)
        corr = validity.subscale_correlations(cohort, humans, instrument)
        cong = validity.factor_congruence(cohort, humans, instrument)
        distance_frames.append(dist)
        correlation_frames.append(corr)
        congruence_frames.append(cong)
        summary = (dist[dist["estimable"]].groupby(["group_by", "group"], sort=False)
                   .agg(items=("item_id", "count"), tv=("tv", "mean"), simbench=("simbench", "mean"),
                        wasserstein=("wasserstein", "mean")).reset_index())
        overall = summary[summary["group_by"] == validity.ALL]
        if len(overall):
            o = overall.iloc[0]
            section.readings.append(
                f"{inst_id}: over {int(o['items'])} items the cohort's answer distributions are at a mean total "
                f"variation of {_num(o['tv'])} from the humans' (SimBench score {_num(o['simbench'])}; mean "
                f"Wasserstein {_num(o['wasserstein'])} scale points).")
        missing = dist[~dist["estimable"]]
        if len(missing):
            groups = sorted({f"{r.group_by} = {r.group}" for r in missing.itertuples()})
            section.readings.append(f"{inst_id}: item distributions not estimable in {len(missing)} item × group "
                                    f"cell(s) ({'; '.join(groups)}): {missing['note'].iloc[0]}.")
        section.tables.append((f"Item distributions per group: {inst_id} (means over items)", summary))
        section.tables.append((f"Item distributions, whole sample: {inst_id}",
                               dist[dist["group_by"] == validity.ALL].drop(columns=["group_by", "group"])))
        section.tables.append((f"Subscale intercorrelations, cohort and humans: {inst_id}", corr))
        for row in corr[~corr["estimable"]].itertuples():
            section.readings.append(f"{inst_id} r({row.subscale_a}, {row.subscale_b}) not estimable: {row.note}.")
        whole = corr[corr["part_whole"]]
        if len(whole):   # a composite (a total) and its parts: r high by construction, not evidence of anything
            section.readings.append(f"{inst_id}: " + ", ".join(f"r({r.subscale_a}, {r.subscale_b})" for r in whole.itertuples())
                                    + " are part–whole correlations (one subscale holds every item of the other): "
                                    "high by construction, and left out of the comparison below.")
        estimable = corr[corr["estimable"] & ~corr["part_whole"]]
        if len(estimable):
            worst = estimable.loc[estimable["difference"].abs().idxmax()]
            section.readings.append(
                f"{inst_id}: the largest intercorrelation difference is r({worst['subscale_a']}, {worst['subscale_b']}) "
                f"= {_num(worst['r_cohort'])} in the cohort vs {_num(worst['r_human'])} in humans.")
        if cong["estimable"].astype(bool).any():     # not a table of dashes: the reading below says why
            section.tables.append((f"Factor congruence: {inst_id} (EFA, one factor per subscale, Procrustes-rotated "
                                   "to the item key; Tucker's φ)", cong))
        if cong["estimable"].all():
            section.readings.append(f"{inst_id}: factor congruence φ " + ", ".join(
                f"{r.factor} {_num(r.phi)}" for r in cong.itertuples()) + " (≥ .95 equal factors, .85–.94 fair).")
        else:
            section.readings.append(f"{inst_id}: factor congruence not estimable: {cong['note'].iloc[0]}.")
        section.figures.append((f"Total variation per item, cohort against humans: {inst_id}",
                                plots.item_distance_chart(dist, inst_id)))
        section.figures.append((f"Subscale intercorrelations: {inst_id}", plots.correlation_heatmaps(corr, inst_id)))
    congruence = pd.concat(congruence_frames, ignore_index=True)
    if congruence["estimable"].astype(bool).any():   # an empty chart would only repeat the reading
        section.figures.append(("Factor congruence with human data", plots.congruence_chart(congruence)))
    return section


def _sentence(text: str) -> str:
    """`text` begun with a capital; a symbol (φ, α) keeps its case, as capitalising would change it
    into another symbol (Φ)."""
    return text[0].upper() + text[1:] if text[:1].isascii() else text


def _num(x: float) -> str:
    """A number in a sentence: two decimals with a true minus (:func:`psyq.analysis.report.apa.fmt_num`), or
    "not estimable"."""
    return NOT_ESTIMABLE if _missing(x) else apa.fmt_num(x)


FIDELITY_CAPTIONS = {"sd_ratio": "SD of the cohort relative to the norm", "straightlining": "Straight-lining",
                     "acquiescence": "Acquiescence", "response_styles": "Response styles",
                     "missingness": "Missing answers", "option_order_effect": "Option order effect",
                     "item_order_effect": "Item order effect", "answer_entropy": "Answer entropy"}
"""The caption of each table of :func:`psyq.analysis.statistics.fidelity.fidelity_summary`, by its key."""


def fidelity_readings(diag: Mapping[str, pd.DataFrame]) -> list[str]:
    """One plain sentence per diagnostic that has something to say."""
    out = []
    frame = diag.get("sd_ratio")
    if frame is not None and not frame.empty:
        collapsed = frame[frame["collapsed"]]
        out.append(f"Variance: {len(collapsed)} of {len(frame)} subscale × group comparisons show a collapsed "
                   "spread (cohort SD less than half the norm's, CI excluded 0.5)." if len(collapsed) else
                   "Variance: no subscale's spread is collapsed below half the norm's SD.")
    frame = diag.get("straightlining")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            out.append(f"Straight-lining ({row.backend_id}, {row.instrument}): {_pct(row.share)} of respondent "
                       f"sets gave the same answer to every item.")
    frame = diag.get("acquiescence")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            out.append(f"Acquiescence ({row.backend_id}, {row.instrument}): with forward and reversed items "
                       f"weighted equally, raw answers sit {apa.fmt_signed(row.balanced)} scale points from the "
                       f"midpoint (95 % CI {apa.fmt_signed(row.balanced_ci_low)} to "
                       f"{apa.fmt_signed(row.balanced_ci_high)}); positive = agreeing regardless of content, "
                       "negative = disagreeing.")
    frame = diag.get("response_styles")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            mid = "" if pd.isna(row.midpoint) else f", {_pct(row.midpoint)} at the midpoint"
            out.append(f"Response style ({row.backend_id}, {row.instrument}): {_pct(row.extreme)} of answers at "
                       f"an end point of the scale{mid}.")
    frame = diag.get("option_order_effect")
    if frame is not None and not frame.empty:
        for row in frame[frame["answer"] == "keyed"].itertuples():
            out.append(f"Option order ({row.backend_id}, {row.instrument}): keyed answers differ by "
                       f"{apa.fmt_signed(row.difference)} points between options as written and reversed "
                       f"(95 % CI {apa.fmt_signed(row.ci_low)} to {apa.fmt_signed(row.ci_high)}); a CI excluding 0 "
                       "means the answers depend on where an option stands, not only on what it says.")
    frame = diag.get("answer_entropy")
    if frame is not None and not frame.empty:
        for row in frame.itertuples():
            out.append(f"Answer certainty ({row.backend_id}, {row.instrument}): mean option entropy "
                       f"{row.entropy_bits:.2f} bits; the model put {_pct(row.option_mass)} of its probability on "
                       f"valid options before renormalising.")
    return out


# --- rendering -----------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:.3em 0 .4em}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;overflow-wrap:break-word}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}.reading{background:#f6f8fa;border-left:4px solid #4a7ab5;padding:.4em .8em;margin:.3em 0}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}img{max-width:100%;height:auto}.note{font-size:.8em;color:#555}
nav a{margin-right:1em}
.apa-table{margin:1.4em 0}
.table-number{font-weight:bold;margin:0}.table-title{font-style:italic;margin:.1em 0 .3em}
table.apa{border:none;border-top:2px solid #222;border-bottom:2px solid #222;max-width:100%}
table.apa th{background:none;border:none;border-bottom:1px solid #222;vertical-align:bottom}
table.apa td{border:none;vertical-align:top;text-align:left;overflow-wrap:break-word}table.apa th{text-align:left}
.methods h2{margin-top:.2em}
.table-note{font-size:.85em;margin:.2em 0}
details.full{font-size:.85em;margin:.2em 0 1em}details.full summary{cursor:pointer;color:#4a7ab5}
details.full .wide{overflow-x:auto;max-width:100%}details.full table{font-size:.85em}
.methods{border:1px solid #4a7ab5;background:#fbfcfe;padding:.6em 1em;margin:1em 0}
.methods textarea{width:100%;box-sizing:border-box;min-height:14em;font:inherit;font-size:.95em;line-height:1.4;border:1px solid #ccc;padding:.5em}
.methods .methods-print{display:none}
@page{size:A4;margin:16mm 14mm}
@media print{
 body{max-width:none;margin:0;padding:0;font-size:10pt}
 nav,.no-print,.methods textarea,.methods button{display:none}
 details.full summary{list-style:none;color:#555}
 .methods .methods-print{display:block;white-space:pre-wrap}
 h2{break-before:page;page-break-before:always}
 h2.first{break-before:avoid;page-break-before:avoid}
 h2,h3,.table-number,.table-title{break-after:avoid;page-break-after:avoid}
 table{font-size:8.5pt;width:auto;max-width:100%}
 thead{display:table-header-group}tr,img,figure{break-inside:avoid;page-break-inside:avoid}
 img{max-width:100%;max-height:24cm;object-fit:contain}
 details.full .wide{overflow:visible}details.full table{font-size:6.5pt}
 .reading{background:none;border-left:2px solid #888}
 a{color:inherit;text-decoration:none}
}
"""


def _round(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].map(lambda x: "" if pd.isna(x) else (
                f"{x:.3g}" if abs(x) < 1e-3 and x != 0 else f"{x:.3f}".rstrip("0").rstrip(".")).replace("-", apa.MINUS))
    return out


TABLE_DIR = "report_tables"
"""Folder (next to report.html) of the full tables as CSV files, one per numbered table."""


def table_files(sections: list[Section]) -> list[str]:
    """The CSV file of every table, in the order the tables are numbered (Table 1, 2, ...),
    relative to the report: ``report_tables/table01_run.csv`` and so on.

    Example:
        >>> table_files([Section("Study", tables=[("Run", pd.DataFrame())])])
        ['report_tables/table01_run.csv']
    """
    names = []
    for caption, _ in (t for s in sections for t in s.tables):
        slug = "".join(c if c.isalnum() else "_" for c in caption.lower().split("(")[0].strip())[:40].strip("_")
        names.append(f"{TABLE_DIR}/table{len(names) + 1:02d}_{slug or 'table'}.csv")
    return names


def _full_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with every column, its index a column when it carries labels (as written to CSV)."""
    return frame.reset_index() if not isinstance(frame.index, pd.RangeIndex) else frame


def _html_table(number: int, caption: str, frame: pd.DataFrame, csv_name: str) -> str:
    """One numbered table: number and title above, the APA view, notes below, and the full table
    behind a collapsible section with a link to its CSV file."""
    view = apa.apa_table(frame)
    full = _full_frame(frame)
    body = view.frame.to_html(index=False, border=0, na_rep="", classes="apa", escape=True)
    note = ("<p class='table-note'><i>Note.</i> " + html.escape(" ".join(view.notes)) + "</p>") if view.notes else ""
    wide = _round(full).to_html(index=False, border=0, na_rep="")
    return (f"<div class='apa-table'><p class='table-number'>Table {number}</p>"
            f"<p class='table-title'>{html.escape(caption)}</p>{body}{note}"
            f"<details class='full'><summary>Full table: {len(full)} rows × {len(full.columns)} columns "
            f"(<a class='csv' href='{html.escape(csv_name)}'>{html.escape(csv_name)}</a>)</summary>"
            f"<div class='wide'>{wide}</div></details></div>")


def _methods_html(methods: str) -> str:
    """The generated methods paragraph in a box the researcher can copy and edit."""
    text = html.escape(methods)
    return ("<section class='methods' id='methods'><h2 class='first'>Methods (generated: paste and edit)</h2>"
            "<p class='note no-print'>Written from the run's manifest, study, instruments and answers; "
            "[fill in] marks what the run does not record. Also saved as methods.md.</p>"
            f"<textarea id='methods-text' readonly aria-label='Methods paragraph'>{text}</textarea>"
            f"<div class='methods-print'>{text}</div>"
            "<button type='button' class='no-print' onclick=\"navigator.clipboard.writeText("
            "document.getElementById('methods-text').value)\">Copy</button></section>")


def render_html(manifest: Mapping[str, Any], sections: list[Section], *, methods: str | None = None) -> str:
    """The whole report as one HTML document (figures inline): the methods paragraph (when given)
    first, then every section; tables numbered, in APA style, with the full table behind a
    collapsible section linking to its CSV file (see :func:`table_files`)."""
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>psyq report: "
             f"{html.escape(manifest['study'])}</title><style>{CSS}</style></head><body>",
             f"<h1>psyq report: {html.escape(manifest['study'])} <small>(run {html.escape(manifest['run_id'])})</small></h1>",
             "<nav>" + ("<a href='#methods'>Methods</a>" if methods else "")
             + "".join(f"<a href='#s{i}'>{html.escape(s.title)}</a>" for i, s in enumerate(sections)) + "</nav>"]
    if methods:
        parts.append(_methods_html(methods))
    files = iter(table_files(sections))
    number = 0
    for i, section in enumerate(sections):
        first = " class='first'" if i == 0 and not methods else ""
        parts.append(f"<h2 id='s{i}'{first}>{html.escape(section.title)}</h2>")
        parts.extend(f"<p class='reading'>{html.escape(r)}</p>" for r in section.readings)
        for caption, frame in section.tables:
            number += 1
            parts.append(_html_table(number, caption, frame, next(files)))
        for caption, fig in section.figures:
            parts.append(f"<figure><img alt='{html.escape(caption)}' src='{plots.figure_to_data_uri(fig)}'>"
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        if section.note:
            parts.append(f"<p class='note'>{html.escape(section.note)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _md_table(frame: pd.DataFrame) -> str:
    frame = _round(frame.reset_index() if not isinstance(frame.index, pd.RangeIndex) else frame)
    cells = [[str(c) for c in frame.columns]] + [["" if pd.isna(v) else str(v) for v in row] for row in frame.to_numpy()]
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
    lines.insert(1, "|" + "---|" * len(frame.columns))
    return "\n".join(lines)


def render_markdown(manifest: Mapping[str, Any], sections: list[Section], *, methods: str | None = None) -> str:
    """A Markdown summary: the methods paragraph (when given), the readings and the numbered
    tables in APA style with their notes and the CSV file of the full table (no figures)."""
    out = [f"# psyq report: {manifest['study']} (run {manifest['run_id']})", ""]
    if methods:
        out += ["## Methods (generated: paste and edit)", "", methods, ""]
    files = iter(table_files(sections))
    number = 0
    for section in sections:
        out += [f"## {section.title}", ""]
        out += [f"- {r}" for r in section.readings] + [""]
        for caption, frame in section.tables:
            number += 1
            view = apa.apa_table(frame)
            out += [f"**Table {number}**", "", f"*{caption}*", "", _md_table(view.frame), ""]
            if view.notes:
                out += ["*Note.* " + " ".join(view.notes), ""]
            out += [f"Full table: [{(name := next(files))}]({name})", ""]
        if section.note:
            out += [f"_{section.note}_", ""]
    return "\n".join(out)


def write_report(run_path: str | Path, out_dir: str | Path | None = None, *,
                 human_csv: Mapping[str, str | Path] | None = None, bound: float = 0.3,
                 correction: str = "holm", targets_csv: Mapping[str, str | Path] | None = None,
                 norm_samples: list[str] | None = None,
                 warn: Callable[[str], None] | None = None,
                 human_keyed: Collection[str] = (),
                 human_change_csv: str | Path | None = None,
                 human_codebooks: Mapping[str, str | Path] | None = None,
                 retest_csv: Mapping[str, str | Path] | None = None,
                 retest_keyed: Collection[str] = ()) -> tuple[Path, Path]:
    """Write report.html and report.md (into the run directory unless `out_dir`); return both paths.

    Example:
        >>> write_report("runs/quickstart/b6d972dd3d0f")  # doctest: +SKIP
    """
    manifest, sections = build_sections(run_path, human_csv=human_csv, bound=bound, correction=correction,
                                        targets_csv=targets_csv, norm_samples=norm_samples, warn=warn,
                                        human_keyed=human_keyed, human_change_csv=human_change_csv,
                                        human_codebooks=human_codebooks, retest_csv=retest_csv,
                                        retest_keyed=retest_keyed)
    out = Path(out_dir or run_path)
    out.mkdir(parents=True, exist_ok=True)
    text = " ".join([methods_text(run_path), *(s.methods for s in sections if s.methods)])
    (out / TABLE_DIR).mkdir(exist_ok=True)
    for name, (_, frame) in zip(table_files(sections), (t for s in sections for t in s.tables)):
        _full_frame(frame).to_csv(out / name, index=False)
    html_path, md_path = out / "report.html", out / "report.md"
    html_path.write_text(render_html(manifest, sections, methods=text), encoding="utf-8")
    md_path.write_text(render_markdown(manifest, sections, methods=text), encoding="utf-8")
    (out / "methods.md").write_text(text + "\n", encoding="utf-8")
    return html_path, md_path


def methods_text(run_path: str | Path) -> str:
    """The methods paragraph of a run (:func:`psyq.analysis.report.methods.methods_paragraph`), from its
    manifest, copied study and instruments, cohort file (when it is still where the run read it,
    unchanged) and answers."""
    if is_imported_run(run_path):
        return ("The scores were imported, not collected by psyq (no request was made); see the Study section for "
                "the file(s) they were read from and how.")
    run = open_run_dir(run_path)
    return methods.methods_paragraph(methods.run_facts(run))
