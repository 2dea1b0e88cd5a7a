"""Reading runs: psyq runs, status, export, scores, sensitivity and report."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from psyq.cli.common import EXIT_OK, RUN_HELP, chosen_run, id_paths, opened_run, prorated_summary
from psyq.engine.files.errors import InputError

if TYPE_CHECKING:
    from psyq.analysis.scoring.human_data import HumanData
    from psyq.cli.common import ChosenRun


def _usage_lines(run, manifest: dict, prices_file: str | None) -> list[str]:
    """Tokens the run used (from its store) and their cost, for `psyq status`."""
    from psyq.engine.design.prices import PriceTable, load_prices
    from psyq.engine.results.usage import read_token_usage, usage_lines

    if prices_file:
        table = load_prices(prices_file)
    else:
        table = PriceTable.from_json(manifest["prices"]) if manifest.get("prices") else None
    from psyq.engine.results.usage import endpoint_lines, read_endpoint_usage
    # Then trials and tokens per endpoint, for backends answered by several (endpoint pools).
    return usage_lines(read_token_usage(run.database), table) + endpoint_lines(read_endpoint_usage(run.database))


def cmd_runs(args: argparse.Namespace) -> int:
    from psyq.engine.results.runs import format_runs, list_runs

    print(format_runs(list_runs(args.dir)))
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from psyq.engine.results.run import open_run
    from psyq.engine.results.runs import format_breakdown, run_breakdown, status_target
    from psyq.engine.store.run_store import RunStore

    path, listing = status_target(args.run)   # a study's runs folder: its runs, then the latest one
    if listing:
        print(listing + "\n")
    run = open_run(path)
    manifest = run.manifest
    with RunStore(run.database) as store:
        trials, answers = store.status_counts(), store.answer_status_counts()
        batches = _batch_lines(store)
    done = trials.get("answered", 0) + trials.get("missing", 0)
    print(f"study      {manifest['study']}  (run {manifest['run_id']})")
    print(f"backends   " + ", ".join(f"{b}: {v['identity'].get('model')}" for b, v in manifest["backends"].items()))
    print(f"trials     {done} of {manifest['trials_planned']} finished; "
          + ", ".join(f"{k} {v}" for k, v in sorted(trials.items())))
    print(f"answers    " + ", ".join(f"{k} {v}" for k, v in sorted(answers.items())))
    print(f"started    {manifest.get('started_at')}   finished {manifest.get('finished_at') or '-'}")
    if manifest.get("stopped_early"):
        print(f"stopped    early: {manifest['stopped_early']}")
    with RunStore(run.database) as store:
        for message, n in store.frequent_errors():   # why trials failed, in the server's words
            print(f"error      {n} failed trials: {message}")
    for line in batches:   # batch mode: what is pending in which provider batch
        print(line)
    print("\n" + format_breakdown(*run_breakdown(run.path)))
    for line in _usage_lines(run, manifest, getattr(args, "prices", None)):   # tokens used and cost
        print(line)
    return EXIT_OK


def _batch_lines(store) -> list[str]:
    # Only a run in batch mode has a batches table: the batch module (it imports every backend) is
    # loaded for those runs only, so that `psyq status` stays quick.
    if not store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'batches'").fetchone():
        return []
    from psyq.engine.administer.send_batch import batch_status_lines

    return batch_status_lines(store)


def cmd_export(args: argparse.Namespace) -> int:
    from psyq.engine.results.export import export_table

    with opened_run(args.run) as chosen:
        table = export_table(chosen.run())
        out = Path(args.out) if args.out else chosen.output(f"answers.{args.format}")
    if args.format == "csv":
        table.to_csv(out, index=False)
    else:
        table.to_parquet(out, index=False)
    print(f"{len(table)} answers -> {out}")
    return EXIT_OK


def cmd_scores(args: argparse.Namespace) -> int:
    from psyq.analysis.scoring.score_table import wide_scores, write_scores
    from psyq.analysis.scoring.scores import load_run_scores
    from psyq.engine.results.imported_run import is_imported_run

    with opened_run(args.run) as chosen:
        if is_imported_run(chosen.path):
            return _write_stage_scores(args, chosen, imported=True)
        run = chosen.run()
        if run.stages:
            return _write_stage_scores(args, chosen, imported=False)
        long = load_run_scores(run)
        wide = wide_scores(long)
        out = Path(args.out) if args.out else chosen.output(f"scores.{args.format}")
        names = write_scores(wide, out, args.format, run.instruments)
        print(prorated_summary(long, str(chosen.bundle or run.path)), file=sys.stderr)
    renamed = {a: b for a, b in names.items() if a != b}
    if renamed:
        print("renamed for SPSS: " + ", ".join(f"{a} -> {b}" for a, b in renamed.items()), file=sys.stderr)
    print(f"{len(wide)} respondent rows x {len(wide.columns)} columns -> {out}")
    return EXIT_OK


def _write_stage_scores(args: argparse.Namespace, chosen: ChosenRun, imported: bool) -> int:
    """`psyq scores` on a run with stages (or an imported run): the scores per measure stage and
    situation, long (one row per backend x respondent x repeat x situation x stage x subscale),
    since one row per respondent cannot hold a before and an after per situation."""
    run_path = chosen.path
    if imported:
        from psyq.engine.results.imported_run import read_imported_run

        frame = read_imported_run(run_path)[1]
    else:
        from psyq.analysis.scoring.stage_scores import load_stage_scores

        frame = load_stage_scores(chosen.run())
    out = Path(args.out) if args.out else chosen.output(f"scores_by_stage.{args.format}")
    if args.format == "csv":
        frame.to_csv(out, index=False)
    elif args.format == "parquet":
        frame.to_parquet(out, index=False)
    else:
        import pyreadstat

        pyreadstat.write_sav(frame.assign(prorated=frame["prorated"].astype(float)), str(out))
    if imported:
        print(f"{run_path}: {len(frame)} imported subscale scores; {int(frame['score'].isna().sum())} empty "
              "(a missing answer in the imported file; never prorated)", file=sys.stderr)
    else:
        print(prorated_summary(frame, str(run_path)), file=sys.stderr)
    print("a run with stages: one row per backend x respondent x repeat x situation x stage x subscale "
          "(phase before/after), not one per respondent", file=sys.stderr)
    print(f"{len(frame)} stage score rows x {len(frame.columns)} columns -> {out}")
    return EXIT_OK


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from psyq.analysis.report.readings import sensitivity_text
    from psyq.analysis.statistics.prompt_sensitivity import sensitivity_of_runs

    # Runs with perturbed prompts share their study's folder with the run as written: a folder given
    # stands for its latest run of the kind its place asks for.
    original = chosen_run(args.original, prompts="as written")
    perturbed = [chosen_run(path, prompts="perturbed") for path in args.perturbed]
    table, notes = sensitivity_of_runs(original, perturbed)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(sensitivity_text(table))
    if args.out:
        table.to_csv(args.out, index=False)
        print(f"{len(table)} rows -> {args.out}", file=sys.stderr)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from psyq.analysis.preregistration.record import read_preregistration
    from psyq.analysis.scoring.human_data import human_data, input_file
    from psyq.engine.results.imported_run import is_imported_run

    norm_samples = [s.strip() for s in args.norms.split(",") if s.strip()] if args.norms else None
    # Every input is checked before the analysis starts, and every problem said at once: a missing
    # file is said at once, not after minutes of scoring and warnings about the rest.
    problems: list = []

    def checked(step):
        try:
            return step()
        except InputError as exc:
            problems.extend(exc.problems)
            return None

    people = checked(lambda: human_data(id_paths(args.human, "--human"),
                                        codebooks=id_paths(args.codebook, "--codebook"),
                                        retests=id_paths(args.retest, "--retest")))
    targets = {i: checked(lambda path=path: input_file(path, "--targets"))
               for i, path in id_paths(args.targets, "--targets").items()}
    human_change = checked(lambda: input_file(args.human_change, "--human-change")) if args.human_change else None
    planned = checked(lambda: read_preregistration(args.preregistration)) if args.preregistration else None
    with contextlib.ExitStack() as stack:
        chosen = None
        try:
            chosen = stack.enter_context(opened_run(args.run))   # a bundle: unpacked until the report is written
        except InputError as exc:
            problems[:0] = exc.problems
        if not problems and people:
            problems.extend(_questionnaire_problems(chosen, people))
        if problems:
            raise InputError(problems)
        from psyq.analysis.report import write_report      # the statistics stack: seconds, so after the checks
        from psyq.analysis.report.build import DOCX_NAME

        # A bundle's report goes beside it, in a folder named after it (never into the temporary folder).
        out = args.out or (chosen.out if chosen.bundle is not None else None)
        run = chosen.path if is_imported_run(chosen.path) else chosen.run()
        html_path, md_path = write_report(run, out, people=people, targets=targets, human_change=human_change,
                                          norm_samples=norm_samples, bound=args.bound, correction=args.correction,
                                          estimator=args.estimator, preregistration=planned, docx=args.format == "docx",
                                          warn=lambda m: print(f"warning: {m}", file=sys.stderr))
    print(f"report -> {html_path}\nsummary -> {md_path}")
    if args.format == "docx":
        print(f"word -> {html_path.parent / DOCX_NAME}")
    return EXIT_OK


def _questionnaire_problems(chosen: ChosenRun, people: Mapping[str, HumanData]) -> list:
    """What is wrong in the people's answers to the run's questionnaires, read before the report's
    statistics are imported (which takes seconds): a bad file is said at once. The report reuses what
    was read (HumanData keeps it). A file for an instrument with items of other kinds (e.g. perceiver
    ratings) is left to the report, whose sections route it by kind."""
    from psyq.engine.results.imported_run import is_imported_run

    if is_imported_run(chosen.path):
        return []           # not a run psyq administered (imported scores): the report says so
    try:
        instruments = chosen.run().instruments
    except InputError:
        return []           # not a run at all: the report says so
    problems = []
    for inst_id, data in people.items():
        instrument = instruments.get(inst_id)
        if instrument is None or not instrument.items or any(i.kind != "rating" for i in instrument.items):
            continue
        for read in (data.answers, data.retest_answers):
            try:
                read(instrument)
            except InputError as exc:
                problems.extend(exc.problems)
    return problems


def _arguments_status(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prices", metavar="FILE", help="price table YAML for the cost (default: the "
                                                                    "one recorded in the run's manifest)")
    p.add_argument("run", help="a run's folder (runs/STUDY/RUN_ID), or a folder of runs "
                                   "(runs/<study>: lists them and shows the latest with answers)")


def _arguments_runs(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default="runs", metavar="DIR",
                                 help="folder holding runs: runs/ (default) or runs/<study>")


def _arguments_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--format", choices=["csv", "parquet"], default="csv")
    p.add_argument("--out", help="output file (default: answers.<format> in the run directory; for a bundle, in a "
                                 "folder named after it beside it)")


def _arguments_scores(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--format", choices=["csv", "parquet", "sav"], default="csv",
                   help="sav: SPSS, with variable labels, value labels and SPSS-valid names")
    p.add_argument("--out", help="output file (default: scores.<format> in the run directory; for a bundle, in a "
                                 "folder named after it beside it)")


def _arguments_sensitivity(p: argparse.ArgumentParser) -> None:
    p.add_argument("original", help="run directory of the study as written (or its study's runs folder: the latest "
                                    "run made without --perturb-prompts)")
    p.add_argument("perturbed", nargs="+", help="run directories of the same study with --perturb-prompts (or its "
                                                "study's runs folder: the latest run made with it)")
    p.add_argument("--out", help="also write the table as CSV to this file")


def _arguments_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--human", action="append", metavar="INSTRUMENT=CSV",
                   help="human data to compare with (repeatable): item answers, e.g. iri=humans.csv "
                        "(iri=humans.csv:keyed when reverse-keyed items are stored already reversed), or "
                        "perceiver ratings for an empathic-accuracy instrument, e.g. ea=perceivers.csv")
    p.add_argument("--codebook", action="append", metavar="INSTRUMENT=FILE",
                   help="a codebook YAML for that instrument's --human file: how it names its columns, codes its "
                        "values and whether it is keyed (default: <csv name>.codebook.yaml beside the CSV)")
    p.add_argument("--retest", action="append", metavar="INSTRUMENT=CSV",
                   help="a second administration of the people of that instrument's --human file (same "
                        "respondent_id; ':keyed' as for --human): when the personas are their twins (persona id = "
                        "respondent_id), twin agreement is normalised by each person's retest agreement")
    p.add_argument("--targets", action="append", metavar="INSTRUMENT=CSV",
                   help="targets' own reports for an empathic-accuracy instrument, replacing its design-intended "
                        "profiles")
    p.add_argument("--human-change", metavar="CSV",
                   help="humans' before/after scores (respondent_id, emotion, situation_id, subscale, before, "
                        "after) to compare a staged run's change with (e.g. from `psyq import emotionbench-humans`)")
    p.add_argument("--norms", metavar="SAMPLE_ID,...",
                   help="compare only these norm samples (default: the study's `norms`, else every sample)")
    p.add_argument("--bound", type=float, default=0.3, help="equivalence bound in norm SD units (default 0.3)")
    p.add_argument("--correction", choices=["holm", "fdr_bh"], default="holm",
                   help="multiple-comparison correction across the family (default holm)")
    p.add_argument("--estimator", choices=["ML", "MLR", "WLSMV"], default=None,
                   help="measurement invariance estimator, as lavaan's (default: WLSMV, items ordinal, when "
                        "every item has 7 answer categories or fewer; else ML, items continuous)")
    p.add_argument("--format", choices=["html", "docx"], default="html",
                   help="html (default): report.html, report.md, methods.md and every table as CSV; docx: also "
                        "report.docx for Word (APA 7 tables and figures, the same cells as the HTML's)")
    p.add_argument("--preregistration", metavar="DIR", help="the folder `psyq preregister` wrote (or its "
                   "preregistration.json): the report opens with every difference between the run and that plan")
    p.add_argument("--out", help="output folder (default: the run directory; for a bundle, a folder named after it "
                                 "beside it)")


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "status": (cmd_status, "summarise a run, per instrument x backend (or the latest run of a study's runs folder)", _arguments_status),
    "runs": (cmd_runs, "list the runs in a folder (default runs/), newest first", _arguments_runs),
    "export": (cmd_export, "write a run's answers as a tidy long table", _arguments_export),
    "scores": (cmd_scores, "write a run's subscale scores, one row per respondent x repeat x backend "
                           "(a run with stages, or an imported one: one row per stage and situation)", _arguments_scores),
    "sensitivity": (cmd_sensitivity, "prompt sensitivity: pair a run's scores with those of the same study run with "
                                     "--perturb-prompts, respondent by respondent", _arguments_sensitivity),
    "report": (cmd_report, "write an HTML report and a Markdown summary of a run (and a Word document: "
                          "--format docx)", _arguments_report),
}
