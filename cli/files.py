"""Checking files: psyq validate, psyq schema, psyq score (human answers with an instrument)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from psyq.cli.common import EXIT_OK, prorated_summary
from psyq.engine.files.errors import InputError
from psyq.engine.files.shipped import locate
from psyq.engine.files.yamlfile import load_yaml


MAX_PROBLEMS_SHOWN = 50


def yaml_files_to_check(paths: list[str]) -> tuple[list[Path], int]:
    """The YAML files `psyq validate` checks under `paths`, and how many it skipped: in a folder,
    those inside `runs/` or any other run directory (a run's copies of its study and
    instruments, checked when written) and inside hidden folders (names starting with '.', e.g.
    .git, .venv). A file named explicitly is always checked; a shipped file may be named by its
    name (``iri``).

    Example:
        >>> files, skipped = yaml_files_to_check(["tests/fixtures/stages"])
        >>> [f.name for f in files], skipped
        (['cohort_two.yaml', 'situations_two.yaml', 'staged_study.yaml'], 0)
        >>> yaml_files_to_check([str(run_dir.parent)])   # a study's runs folder: its run's copies are skipped
        ([], 2)
    """
    from psyq.engine.results.runs import is_run_dir

    files: list[Path] = []
    skipped = 0
    for raw in paths:
        path = Path(raw) if Path(raw).exists() else locate(raw)   # or a shipped name: `psyq validate iri`
        if not path.is_dir():
            files.append(path)
            continue
        for found in sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")):
            inside = found.relative_to(path).parts[:-1]
            folders = [path.joinpath(*inside[:i + 1]) for i in range(len(inside))]
            if any(part == "runs" or part.startswith(".") for part in inside) or any(map(is_run_dir, folders)):
                skipped += 1
            else:
                files.append(found)
    return files, skipped


def load_any(path: Path) -> object:
    """Load a psyq YAML file of any format, chosen by its `psyq:` field."""
    from psyq.engine.design.anchors import load_anchors
    from psyq.engine.judging.answer_judge import load_rubric
    from psyq.engine.kinds import all_kinds
    from psyq.engine.design.perturbation_sets import load_perturbations
    from psyq.engine.design.cohort_file import load_cohort
    from psyq.engine.design.situations import load_situations
    from psyq.engine.design.study import load_study
    from psyq.engine.files.codebook import load_codebook
    from psyq.engine.design.instrument import load_instrument
    kind_formats = {name: load for kind in all_kinds() for name, load in kind.file_formats().items()}
    loaders = {"instrument/1": load_instrument, "cohort/1": load_cohort, "study/1": load_study,
               **kind_formats, "rubric/1": load_rubric,
               "situations/1": load_situations, "perturbations/1": load_perturbations, "anchors/1": load_anchors,
               "codebook/1": load_codebook}
    doc = load_yaml(path)
    kind = doc.data.get("psyq")
    if kind not in loaders:
        raise InputError([doc.problem(("psyq",), f"must be one of {', '.join(loaders)}, not {kind!r}")])
    return loaders[kind](path)


def _notice_missing_texts(loaded: object, file: Path) -> None:
    """A notice (not an error) on stderr for an instrument whose user-supplied texts are missing."""
    from psyq.engine.design.instrument import Instrument, missing_texts_message
    from psyq.engine.design.study import Study

    if isinstance(loaded, Instrument):
        pairs = [(loaded, file)]
    elif isinstance(loaded, Study):
        pairs = list(zip(loaded.instruments, loaded.instrument_paths))
    else:
        pairs = []
    for inst, path in pairs:
        message = missing_texts_message(inst, path)
        if message:
            print(f"notice: {file}: {message} `psyq run` refuses to administer it until then.", file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    files, skipped = yaml_files_to_check(args.paths)
    if skipped:
        print(f"note: skipped {skipped} YAML file{'s' if skipped != 1 else ''} inside runs/, run directories and hidden "
              "folders (names starting with '.'); name a file to check it", file=sys.stderr)
    if not files:
        raise InputError.single(" ".join(args.paths), "no YAML files found")
    problems = []
    for file in files:
        try:
            loaded = load_any(file)
            print(f"ok  {file}")
            _notice_missing_texts(loaded, file)
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    if args.format == "instrument":
        from psyq.engine.design.instrument import instrument_json_schema
        schema = instrument_json_schema()
    elif args.format == "cohort":
        from psyq.engine.design.cohort_file import cohort_json_schema
        schema = cohort_json_schema()
    elif args.format == "situations":
        from psyq.engine.design.situations import situations_json_schema
        schema = situations_json_schema()
    elif args.format == "codebook":
        from psyq.engine.files.codebook import codebook_json_schema
        schema = codebook_json_schema()
    elif args.format == "perturbations":
        from psyq.engine.design.perturbation_sets import perturbations_json_schema
        schema = perturbations_json_schema()
    else:
        from psyq.engine.files.fields import format_json_schema
        from psyq.engine.design.study import StudySpec
        schema = format_json_schema(StudySpec, "psyq study (format study/1)")
    print(json.dumps(schema, indent=2))
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from psyq.analysis.scoring.score_table import wide_scores, write_scores
    from psyq.analysis.scoring.scores import human_scores

    from psyq.analysis.scoring.human_answers import keying_check, keying_warning, read_answers_csv
    from psyq.engine.design.instrument import load_instrument

    instrument = load_instrument(args.instrument)
    answers = read_answers_csv(args.responses, instrument, keyed=True if args.keyed else None,
                               codebook=args.codebook)
    long = human_scores(answers, instrument)
    wide = wide_scores(long, prefix=False).drop(columns=["backend_id", "model", "repeat"])
    print(prorated_summary(long, args.responses), file=sys.stderr)
    if answers.attrs.get("keyed"):
        print(f"{args.responses}: declared keyed; reverse-keyed items were taken as already reversed",
              file=sys.stderr)
    if answers.attrs.get("weight"):
        print(f"{args.responses}: survey weights of column '{answers.attrs['weight']}' written as survey_weight beside "
              "the scores (the scores themselves are not weighted)", file=sys.stderr)
    # Data stored already keyed and read as raw (or the converse) would be reversed the wrong way: said loudly.
    if message := keying_warning(keying_check(instrument, answers), args.responses, bool(answers.attrs.get("keyed"))):
        print(f"WARNING: {message}", file=sys.stderr)
    if args.out:
        write_scores(wide, args.out, args.format, {instrument.id: instrument}, prefix=False)
        print(f"scored {len(wide)} respondents on {', '.join(s.id for s in instrument.rating_subscales)} "
              f"-> {args.out}")
    elif args.format != "csv":
        raise InputError.single(args.responses, f"--format {args.format} needs --out FILE")
    else:
        wide.to_csv(sys.stdout, index=False)
    return EXIT_OK


def _arguments_validate(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                                     help="YAML files or folders holding them")


def _arguments_schema(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", nargs="?", choices=["instrument", "cohort", "study", "situations", "perturbations",
                                                               "codebook"],
                                   default="instrument")


def _arguments_score(p: argparse.ArgumentParser) -> None:
    p.add_argument("instrument", help="instrument YAML file")
    p.add_argument("responses", help="CSV with respondent_id and one column per item id (or named by a codebook)")
    p.add_argument("--out", help="write scores to this file (default: CSV on standard output)")
    p.add_argument("--format", choices=["csv", "parquet", "sav"], default="csv",
                   help="file format for --out (sav: SPSS, with variable and value labels)")
    p.add_argument("--keyed", action="store_true",
                   help="the file's reverse-keyed items are already reversed (do not reverse them again)")
    p.add_argument("--codebook", metavar="FILE",
                   help="a codebook YAML (psyq: codebook/1) naming the file's columns and coding its values "
                        "(default: <csv name>.codebook.yaml beside the CSV, when there is one)")


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "validate": (cmd_validate, "check instrument, cohort and study YAML files (schema and meaning)", _arguments_validate),
    "schema": (cmd_schema, "print the JSON Schema of the instrument (default), cohort, study, situations, perturbations or codebook format", _arguments_schema),
    "score": (cmd_score, "score a CSV of item answers (human data) with an instrument", _arguments_score),
}
