"""`psyq report RUN`: the sections of a run's report, and the report written as one self-contained
HTML file, a Markdown summary, the methods paragraph and every table as CSV.

The sections are built in the order :mod:`psyq.analysis.report.sections` registers them, each from
one :class:`~psyq.analysis.report.context.ReportContext`; this module checks what the user handed
over (people's data, targets, people's change scores) against the run, then asks each section.

Example:
    >>> facts, sections = build_sections(run_dir)
    >>> [s.title for s in sections][:4]      # the verdict first, though built last
    ['Can the personas stand in for people?', 'Study', 'Missing answers and refusals', 'Comparison with human norms']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
from threadpoolctl import threadpool_limits

from psyq.engine.design.instrument import Instrument
from psyq.engine.files.errors import InputError
from psyq.engine.kinds import instruments_with
from psyq.engine.results.imported_run import is_imported_run
from psyq.engine.results.run import Run, as_run

from psyq.analysis.preregistration.deviations import deviations
from psyq.analysis.preregistration.record import LoadedPreregistration, check_study, read_preregistration
from psyq.analysis.report import methods
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.render import (TABLE_DIR, FigureImages, full_frame, markdown_text, render_html, render_markdown,
                                         table_files)
from psyq.analysis.report.section import Section
from psyq.analysis.report.sections import report_section, report_sections
from psyq.analysis.report.sections.change import add_change_card, change_section, emotionbench_part
from psyq.analysis.scoring.human_data import HumanData


DOCX_NAME = "report.docx"
"""The Word report's file name, beside report.html (``write_report(..., docx=True)``)."""


def _imported_sections(run_path: Path, human_change: str | Path | None, *, bound: float = 0.3,
                       warn: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[Section]]:
    """(facts, sections) of an imported run (engine/results/imported_run.py: scores psyq did not collect,
    e.g. ``psyq import emotionbench-results``): what was imported, then the change section; the verdict
    section, when it applies, is given the change card (in a context of the imported run,
    :meth:`ReportContext.of_imported_run`) and shown first."""
    from psyq.engine.results.imported_run import read_imported_run

    from psyq.analysis.scoring.human_data import read_human_change_csv

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
    study.add_table("Imported run", pd.DataFrame({"": [files, manifest.get("command"), manifest.get("source"),
                                                       manifest.get("terms"), manifest.get("instrument")]},
                                                  index=["imported from", "command", "source", "terms", "instrument"]))
    humans = read_human_change_csv(human_change) if human_change is not None else None
    change = change_section(scores, humans)
    own_readings, own_tables = emotionbench_part(manifest, scores)   # EmotionBench's own comparison, beside psyq's
    change.readings.extend(own_readings)
    change.tables.extend(own_tables)
    report = ReportContext.of_imported_run(run_path, manifest, scores, bound=bound, warn=warn,
                                           human_change=Path(human_change) if human_change is not None else None)
    add_change_card(report, scores, humans)
    verdict = report_section("verdict")
    lead = verdict.sections(report) if verdict.applies(report) else []
    return facts, [*lead, study, change]


def _context(run: Run, people: Mapping[str, HumanData], targets: Mapping[str, str | Path],
             human_change: str | Path | None, *, norm_samples: list[str] | None, bound: float, correction: str,
             estimator: str | None, warn: Callable[[str], None] | None) -> ReportContext:
    """The run's report context. Before the run's answers are exported (the long part of opening a large
    run), the people's files are routed and read: a kind's section that reads the ``--human`` files of its
    instruments itself (e.g. perceiver ratings) takes them out of the questionnaires' people's data, and
    every questionnaire's people's answers and retests are read and checked, every problem said at once."""
    instruments = run.instruments
    people = dict(people)
    parts = [p for p in report_sections() if p.kind is not None]
    data_ids = {p.kind: instruments_with(p.kind, instruments) for p in parts if p.human_data}
    kind_people = {kind: {i: people.pop(i) for i in ids if i in people} for kind, ids in data_ids.items()}
    for part in (p for p in parts if p.human_data):
        if keyed_kind := sorted(i for i, data in kind_people[part.kind].items() if data.keyed):
            raise InputError.single(", ".join(keyed_kind), "':keyed' applies to item answers of a questionnaire, "
                                    f"not to {part.human_data}")
    target_ids = {i for p in parts if p.takes_targets for i in instruments_with(p.kind, instruments)}
    unknown = sorted(set(people) - set(instruments)) + sorted(set(targets) - target_ids)
    if unknown:
        claimed = {i for ids in data_ids.values() for i in ids}
        takers = "".join(f"; {p.data_label}: {', '.join(data_ids[p.kind]) or 'none'}" for p in parts if p.human_data)
        raise InputError.single(", ".join(unknown), "not an instrument of this run that takes this kind of data "
                                f"(questionnaires: {', '.join(sorted(set(instruments) - claimed)) or 'none'}"
                                f"{takers})")
    human_items, retests = _read_people(people, instruments)
    report = ReportContext.of_run(run, instruments, people=people, human_items=human_items, retests=retests,
                                  kind_people=kind_people, targets={i: Path(p) for i, p in targets.items()},
                                  human_change=Path(human_change) if human_change is not None else None,
                                  norm_samples=norm_samples, bound=bound, correction=correction, estimator=estimator,
                                  warn=warn)
    if human_change is not None and not report.staged:
        raise InputError.single(str(human_change), "--human-change applies to runs with stages "
                                "(measure, evoke, measure); this run has none")
    return report


def _read_people(people: Mapping[str, HumanData], instruments: Mapping[str, Instrument]
                 ) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Every questionnaire's people's answers and retest answers, read and checked (one InputError with
    every file's problems)."""
    problems, answers, retests = [], {}, {}
    for inst_id, data in people.items():
        for read, into in ((data.answers, answers), (data.retest_answers, retests)):
            try:
                frame = read(instruments[inst_id])
            except InputError as exc:
                problems.extend(exc.problems)
                continue
            if frame is not None:
                into[inst_id] = frame
    if problems:
        raise InputError(problems)
    return answers, retests


class Built(NamedTuple):
    """What :func:`_build` computed: the facts about the run, the sections, and what the methods
    paragraph reads too rather than compute again: the run and its answer table (None for imported
    scores) and its scores when they are the rating items' only (else None)."""

    manifest: dict[str, Any]
    sections: list[Section]
    run: Run | None
    table: pd.DataFrame | None
    scores: pd.DataFrame | None


def build_sections(run: Run | str | Path, *, people: Mapping[str, HumanData] | None = None,
                   targets: Mapping[str, str | Path] | None = None, human_change: str | Path | None = None,
                   norm_samples: list[str] | None = None, bound: float = 0.3, correction: str = "holm",
                   estimator: str | None = None, warn: Callable[[str], None] | None = None,
                   preregistration: LoadedPreregistration | str | Path | None = None
                   ) -> tuple[dict[str, Any], list[Section]]:
    """Compute everything the report shows; returns (facts about the run, sections). `run` is opened
    by :func:`psyq.open_run`, or its path (a run's folder, a bundle, or an imported run's folder).

    `people` maps an instrument id to the people's data for it
    (:func:`psyq.analysis.scoring.human_data.human_data` builds and checks them): item answers of a
    questionnaire, or what a kind's section reads (e.g. perceiver ratings); `targets`
    maps an instrument whose kind takes them to its targets' self-reports. `norm_samples` restricts
    the norm samples compared (default: the study's `norms`, else all); `bound` is the equivalence
    margin in norm SDs and `correction` the multiplicity correction; `estimator` the measurement
    invariance estimator ("ML", "MLR", "WLSMV"; default: WLSMV for items of ≤ 7 answer categories,
    else ML); `warn` receives every warning
    the report also shows (e.g. respondents matching no norm group). A run with `stages:` is
    reported by its change scores, compared with `human_change` (people's before and after,
    :func:`psyq.analysis.scoring.human_data.read_human_change_csv`) when given. With `preregistration`
    (the folder ``psyq preregister`` wrote, or its record read by
    :func:`~psyq.analysis.preregistration.record.read_preregistration`), the report opens with every
    deviation of the run from it (:mod:`psyq.analysis.report.sections.deviations`).
    """
    built = _build(run, people=people, targets=targets, human_change=human_change, norm_samples=norm_samples,
                   bound=bound, correction=correction, estimator=estimator, warn=warn, preregistration=preregistration)
    return built.manifest, built.sections


def _build(run: Run | str | Path, *, people: Mapping[str, HumanData] | None = None,
           targets: Mapping[str, str | Path] | None = None, human_change: str | Path | None = None,
           norm_samples: list[str] | None = None, bound: float = 0.3, correction: str = "holm",
           estimator: str | None = None, warn: Callable[[str], None] | None = None,
           built: Callable[[Section], None] | None = None,
           preregistration: LoadedPreregistration | str | Path | None = None) -> Built:
    """:func:`build_sections`, with what the methods paragraph reads too rather than compute it again
    (:class:`Built`). `built` is handed each section as soon as it is built (the report starts
    drawing its figures)."""
    if not isinstance(run, Run) and is_imported_run(run):   # scores psyq did not collect (engine/results/imported_run.py)
        if preregistration is not None:
            raise InputError.single(str(run), "--preregistration checks a run psyq administered; this run's scores "
                                    "were imported")
        facts, sections = _imported_sections(Path(run), human_change, bound=bound, warn=warn)
        return Built(facts, sections, None, None, None)
    # The report's matrices are small: BLAS threads only wait for each other (up to ten times slower on a
    # busy two-core machine: statsmodels' factor analyses, the invariance fits' robust statistics).
    with threadpool_limits(limits=1, user_api="blas"):
        return _build_run(as_run(run), people=people, targets=targets, human_change=human_change,
                          norm_samples=norm_samples, bound=bound, correction=correction, estimator=estimator, warn=warn,
                          built=built, preregistration=preregistration)


def _build_run(run: Run, *, people: Mapping[str, HumanData] | None, targets: Mapping[str, str | Path] | None,
               human_change: str | Path | None, norm_samples: list[str] | None, bound: float, correction: str,
               estimator: str | None, warn: Callable[[str], None] | None,
               built: Callable[[Section], None] | None = None,
               preregistration: LoadedPreregistration | str | Path | None = None) -> Built:
    """:func:`_build` of a run psyq collected."""
    planned = None
    if preregistration is not None:       # read and checked before the run's answers are exported
        planned = preregistration if isinstance(preregistration, LoadedPreregistration) else \
            read_preregistration(preregistration)
        check_study(planned, str(run.manifest.get("study")))
    report = _context(run, people or {}, targets or {}, human_change, norm_samples=norm_samples, bound=bound,
                      correction=correction, estimator=estimator, warn=warn)
    if planned is not None:
        report.preregistration = planned
        report.deviations = deviations(run, planned.plan, bound=bound, correction=correction, estimator=estimator,
                                       norm_samples=norm_samples, people=people or {})
    sections = report.sections          # the Materials appendix, built last, reads the others
    for part in report_sections():
        if part.applies(report):
            for section in part.sections(report):
                sections.append(section)
                if built is not None:
                    built(section)
    # A lead section (the verdict) is built last, from what the others computed, and shown first.
    sections = [s for s in sections if s.lead] + [s for s in sections if not s.lead]
    # Every item a rating item: every kind's scores are the rating items' (methods.run_facts's score_answers).
    rating_only = not report.staged and all(item.kind == "rating" for inst in report.instruments.values()
                                            for item in inst.items)
    return Built(report.manifest, sections, run, report.table, report.scores if rating_only else None)


def write_report(run: Run | str | Path, out_dir: str | Path | None = None, *,
                 people: Mapping[str, HumanData] | None = None, targets: Mapping[str, str | Path] | None = None,
                 human_change: str | Path | None = None, norm_samples: list[str] | None = None, bound: float = 0.3,
                 correction: str = "holm", estimator: str | None = None,
                 preregistration: LoadedPreregistration | str | Path | None = None,
                 warn: Callable[[str], None] | None = None, docx: bool = False) -> tuple[Path, Path]:
    """Write report.html, report.md, methods.md and every table as CSV (into the run directory
    unless `out_dir`), and report.docx when `docx` (the report for Word, APA 7 tables:
    :func:`psyq.analysis.report.word.render_docx`); return the paths of the first two. `run` is
    opened by :func:`psyq.open_run`, or its path, opened once here. The options are those of
    :func:`build_sections` (`preregistration`: the deviations from it first); a people's file is read and
    checked before the run's answers are.

    Example:
        >>> html_path, md_path = write_report(run_dir)
        >>> html_path.name, (html_path.parent / "methods.md").exists()
        ('report.html', True)
    """
    # The figures are drawn in a second process as their sections are built, while this one goes on.
    with FigureImages() as images:
        built = _build(run, people=people, targets=targets, human_change=human_change,
                       norm_samples=norm_samples, bound=bound, correction=correction, estimator=estimator, warn=warn,
                       built=lambda s: images.add(s.figures), preregistration=preregistration)
        return _write(run, out_dir, built, images, docx=docx)


def _write(run: Run | str | Path, out_dir: str | Path | None, built: Built, images: FigureImages, *,
           docx: bool = False) -> tuple[Path, Path]:
    """:func:`write_report`'s files, from the built sections."""
    manifest, sections = built.manifest, built.sections
    out = Path(out_dir or (built.run.path if built.run is not None else run))
    out.mkdir(parents=True, exist_ok=True)
    text = " ".join([methods.methods_text(built.run or run, built.table, built.scores), *(s.methods for s in sections if s.methods)])
    (out / TABLE_DIR).mkdir(exist_ok=True)
    for name, (_, frame) in zip(table_files(sections), (t for s in sections for t in s.tables)):
        full_frame(frame).to_csv(out / name, index=False)
    html_path, md_path = out / "report.html", out / "report.md"
    html_path.write_text(render_html(manifest, sections, methods=text, images=images), encoding="utf-8")
    md_path.write_text(render_markdown(manifest, sections, methods=text), encoding="utf-8")
    (out / "methods.md").write_text(markdown_text(text) + "\n", encoding="utf-8")   # shown as text, as in report.md
    if docx:
        from psyq.analysis.report.word import render_docx    # python-docx: only for the Word report

        (out / DOCX_NAME).write_bytes(render_docx(manifest, sections, methods=text, images=images))
    return html_path, md_path

