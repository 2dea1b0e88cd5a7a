"""``psyq import FORMAT FILE``: the command-line side of the importers (arguments, files, messages).

Each imported instrument is written as YAML (to ``--out FILE``, into ``--out-dir DIR`` when a
file holds several, else to standard output) after checking that it loads as an instrument;
what could not be mapped goes to standard error, one line each, and into the YAML as comments.
Other formats take only the options they use: a converted file goes to ``--out FILE`` (else
standard output), an imported run into ``--out DIR``, and replies or ratings into ``--run RUN``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from psyq.engine.files.errors import InputError, PsyqError
from psyq.engine.importers.registry import get_importer, importer_names
from psyq.engine.importers.draft import TO_FINISH, Draft, is_id
from psyq.engine.importers.writer import render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One sub-command per registered format, each with its own options.

    Example:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["qsf", "s.qsf", "--out", "s.yaml"]).out
        's.yaml'
        >>> "id" in vars(p.parse_args(["emotionbench-results", "gpt-4-PANAS-testing.csv", "--out", "runs/eb"]))
        False
    """
    formats = parser.add_subparsers(dest="import_format", required=True, metavar="FORMAT")
    for name in importer_names():
        importer = get_importer(name)
        sub = formats.add_parser(name, help=importer.help, description=importer.help)
        sub.add_argument("file", help=importer.file_help)
        if importer.produces == "instrument":
            sub.add_argument("--out", metavar="FILE", help="write the instrument YAML here (default: standard output)")
            sub.add_argument("--out-dir", metavar="DIR",
                             help="write one YAML file per instrument here (needed when the file holds several)")
            sub.add_argument("--id", help="the instrument's id (default: from the form, survey or file name)")
        elif importer.produces == "imported-run":
            sub.add_argument("--out", metavar="DIR", required=True, help=importer.out_help)
        elif importer.produces != "run":   # "run" importers write into a run's store: they take --run instead
            sub.add_argument("--out", metavar="FILE", help=importer.out_help)
            if importer.id_help:
                sub.add_argument("--id", help=importer.id_help)
        importer.add_arguments(sub)


def header_lines(draft: Draft) -> list[str]:
    """The comment block at the top of an imported file."""
    return [f"Imported by `{draft.command}` from {Path(draft.file).name}"
            + (f" ({draft.scope})" if draft.scope else "") + ".",
            f"Comments starting with '{TO_FINISH}' say what psyq could not map or had to fill in;",
            "finish them, then check the file with `psyq validate`."]


def import_instruments(format_name: str, file: str, options: dict[str, Any]) -> list[tuple[Draft, str]]:
    """(draft, YAML text) of every instrument in `file`, each checked to load as an instrument.

    Example:
        >>> [(d.id, text[:1]) for d, text in import_instruments("psych-keys", "tests/fixtures/import/keys.R",
        ...                                                      {"scale": "1-5"})]
        [('keys', '#')]
    """
    drafts = get_importer(format_name).read(file, options)
    out = []
    for draft in drafts:
        if options.get("id"):
            draft.id = options["id"]
        document = draft.document()
        text = render(draft, document, header_lines(draft))
        _check_loads(draft, text)
        out.append((draft, text))
    return out


def _check_loads(draft: Draft, text: str) -> None:
    """The YAML must load as an instrument; if it does not, the importer is at fault (exit 1)."""
    from psyq.engine.design.instrument import load_instrument

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{draft.id}.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_instrument(path)
        except InputError as exc:
            raise PsyqError(f"the instrument imported from {draft.file} does not validate (a bug of psyq "
                            f"import; please report it):\n{exc}") from None


def run(args: argparse.Namespace, say: Callable[[str], None] | None = None) -> int:
    """Import, write, and list on stderr what is left to finish; returns the exit code (0)."""
    say = say or (lambda line: print(line, file=sys.stderr))
    options = vars(args)
    if get_importer(args.import_format).produces == "run":
        done = get_importer(args.import_format).into_run(args.file, options)
        say(f"{done.summary} -> {args.run}")
        for note in done.notes:
            say(f"  {note}")
        return 0
    if get_importer(args.import_format).produces == "imported-run":
        return _run_imported_run(args, say)
    if get_importer(args.import_format).produces != "instrument":
        return _run_conversion(args, options, say)
    if args.id is not None and not is_id(args.id):
        raise InputError.single("--id", f"{args.id!r} is not an id (letters, digits, '_', '.', '-')")
    results = import_instruments(args.import_format, args.file, options)
    if len(results) > 1 and not args.out_dir:
        names = ", ".join(d.scope or d.id for d, _ in results)
        raise InputError.single(args.file, f"the file holds {len(results)} instruments ({names}); give --out-dir DIR "
                                           "to write them all, or pick one (redcap: --form NAME)")
    if args.out and args.out_dir:
        raise InputError.single(args.file, "give --out or --out-dir, not both")
    if args.id and len(results) > 1:
        raise InputError.single(args.file, "--id names one instrument; pick one form with --form")
    for draft, text in results:
        target = Path(args.out_dir) / f"{draft.id}.yaml" if args.out_dir else Path(args.out) if args.out else None
        if target is not None and target.exists() and target.resolve() == Path(args.file).resolve():
            raise InputError.single(str(target), "this is the file being imported; write the instrument elsewhere")
        if target is None:
            sys.stdout.write(text)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        where = str(target) if target else "standard output"
        say(f"imported '{draft.id}': {_count(len(draft.items), 'item')}, {_count(len(draft.subscales), 'subscale')}, "
            f"scale {draft.scale[0]['value']}-{draft.scale[-1]['value']} -> {where}")
        if draft.notes:
            say(f"to finish ({len(draft.notes)}; also written as comments in the YAML):")
            for note in draft.notes:
                say(f"  {note}")
    return 0



def _run_conversion(args: argparse.Namespace, options: dict[str, Any], say: Callable[[str], None]) -> int:
    """Write what a non-instrument importer made (to --out, else standard output); returns 0."""
    chosen_id = getattr(args, "id", None)   # only the formats with an `id_help` take --id
    if chosen_id is not None and not is_id(chosen_id):
        raise InputError.single("--id", f"{chosen_id!r} is not an id (letters, digits, '_', '.', '-')")
    converted = get_importer(args.import_format).convert(args.file, options)
    target = Path(args.out) if args.out else None
    if target is not None and target.exists() and target.resolve() == Path(args.file).resolve():
        raise InputError.single(str(target), "this is the file being imported; write the result elsewhere")
    if target is None:
        sys.stdout.write(converted.text)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(converted.text, encoding="utf-8")
    say(f"{converted.summary} -> {target if target else 'standard output'}")
    for note in converted.notes:
        say(f"  {note}")
    return 0


def _run_imported_run(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Write an imported run directory (--out DIR) from the result file(s); returns 0."""
    if not args.out:   # argparse requires --out; this is for a caller that builds `args` itself
        raise InputError.single(args.file, "this format writes an imported run directory: give --out DIR")
    files = [args.file, *getattr(args, "more_files", [])]
    target = Path(args.out)
    if any(target.resolve() == Path(f).resolve() for f in files):
        raise InputError.single(str(target), "this is a file being imported; write the imported run elsewhere")
    summary, notes = get_importer(args.import_format).import_run(files, str(target))
    say(f"{summary} -> {target} (read it with `psyq report {target}`)")
    for note in notes:
        say(f"  {note}")
    return 0


def _count(n: int, noun: str) -> str:
    """ "1 subscale", "2 subscales". """
    return f"{n} {noun}{'' if n == 1 else 's'}"
