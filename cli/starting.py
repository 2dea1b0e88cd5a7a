"""Starting a study: psyq list (what psyq ships) and psyq init (a study folder of one's own)."""

from __future__ import annotations

import argparse
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable

from psyq.cli.common import EXIT_OK
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.notices import InputNotice
from psyq.engine.files.shipped import KINDS, ROOT, locate, shipped_name
from psyq.engine.files.yamlfile import load_yaml


def _texts(source: str, licensed: bool) -> str:
    if licensed:
        return "published; licensed texts not shipped (supply your own)"
    return {"published": "published; texts shipped", "psyq": "ours (psyq), never normed",
            "user": "the study authors'", "imported": "imported"}.get(source, source)


def _instrument(path: Path) -> dict[str, Any]:
    from psyq.engine.design.instrument import load_instrument

    inst = load_instrument(path)
    norms = [f"{n.id} ({n.verified})" for n in inst.norms]
    return {"title": inst.name, "size": f"{_count(len(inst.items), 'item')}, {_count(len(inst.subscales), 'subscale')}",
            "texts": _texts(inst.content_source, inst.item_texts is not None), "norms": norms}


def _cohort(path: Path) -> dict[str, Any]:
    from psyq.engine.design.cohort_file import load_cohort

    data = load_yaml(path).data
    cohort = load_cohort(path)
    how = {"sample": "sampled", "personas": "written by hand", "csv": "from a CSV", "from_data": "drawn from a human "
           f"data file, {(data.get('from_data') or {}).get('file')}"}
    source = next((how[key] for key in how if key in data), "")
    baseline = ", with the model as itself" if data.get("include_baseline") else ""
    return {"title": _first_sentence(data.get("description")), "size": f"{len(cohort.personas)} respondents "
            f"({source}{baseline})", "texts": "ours (psyq)"}


def _study(path: Path) -> dict[str, Any]:
    data = load_yaml(path).data
    backends = ", ".join(sorted({str(b.get("kind", "openai")) for b in data.get("backends") or []}))
    return {"title": _first_sentence(data.get("description")),
            "size": f"{', '.join(map(str, data.get('instruments') or []))} x {data.get('cohort')} on {backends}"}


def _rubric(path: Path) -> dict[str, Any]:
    data = load_yaml(path).data
    if data.get("dimensions"):
        size = f"{len(data['dimensions'])} dimensions"
    else:
        size = f"{len(data.get('levels') or {})} levels"
    return {"title": _first_sentence(data.get("description")), "size": f"{size}, rates {data.get('applies_to')}",
            "texts": _texts(str(data.get("content_source")), False)}


def _situations(path: Path) -> dict[str, Any]:
    from psyq.engine.design.situations import load_situations

    sset = load_situations(path)
    return {"title": _first_sentence(sset.description), "size": f"{len(sset.situations)} situations",
            "texts": _texts(sset.content_source, False)}


def _perturbations(path: Path) -> dict[str, Any]:
    from psyq.engine.design.perturbation_sets import load_perturbations

    pset = load_perturbations(path)
    return {"title": _first_sentence(pset.description), "size": f"{len(pset.perturbations)} perturbations",
            "texts": _texts(pset.content_source, False)}


def _lexicon(path: Path) -> dict[str, Any]:
    levels = (load_yaml(path).data.get("levels") or {}).values()
    terms = sum(len(phrases) for entries in levels
                for phrases in (entries.values() if isinstance(entries, dict) else [entries]))
    return {"title": "levelled emotion lexicon for scoring LEAS-format answers",
            "size": f"{terms} terms", "texts": "ours (psyq)"}


def _human_data(path: Path) -> dict[str, Any]:
    from psyq.engine.files.codebook import codebook_beside

    book = load_yaml(codebook_beside(path)).data
    with open(path, encoding="utf-8") as handle:
        rows = sum(1 for _ in handle) - 1
    readme = path.parent / "README.md"
    return {"title": str(book.get("describes", "")), "size": f"{rows:,} respondents of {book.get('instrument')}",
            "licence": f"see {readme.relative_to(ROOT).as_posix()}"}


def _anchors(path: Path) -> dict[str, Any]:
    from psyq.engine.design.anchors import load_anchors

    anchors = load_anchors(path)
    return {"title": _first_sentence(anchors.description),
            "size": f"{len(anchors.sets)} sets of {len(anchors.scale)} statements (answer: ssr)",
            "texts": _texts(anchors.content_source, False)}


DESCRIBE: dict[str, Callable[[Path], dict[str, Any]]] = {
    "instrument": _instrument, "cohort": _cohort, "study": _study, "rubric": _rubric, "situations": _situations,
    "perturbations": _perturbations, "lexicon": _lexicon, "anchors": _anchors, "human data": _human_data}


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _first_sentence(text: Any) -> str:
    if not text:
        return ""
    text = " ".join(str(text).split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def shipped_catalogue(kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """One record per file psyq ships: kind, name, what it is, its size, the licence of its texts,
    norm samples (instruments), and its path inside the installed package.

    Example:
        >>> row = next(r for r in shipped_catalogue(["instrument"]) if r["name"] == "iri")
        >>> row["size"], row["norms"]
        ('28 items, 4 subscales', ['briganti2018 (raw-data)', 'davis1980 (unverified)'])
    """
    rows = []
    with warnings.catch_warnings():   # how psyq reads its own files (a codebook found beside) is no news here
        warnings.simplefilter("ignore", InputNotice)
        for kind in kinds or list(KINDS):
            for name, path in KINDS[kind].files().items():
                rows.append({"kind": kind, "name": name, **DESCRIBE[kind](path),
                             "path": path.relative_to(ROOT).as_posix()})
    return rows


def cmd_list(args: argparse.Namespace) -> int:
    from psyq.engine import __version__

    by_plural = {k.plural: k.name for k in KINDS.values()}
    kinds = [by_plural[args.kind]] if args.kind else None
    rows = shipped_catalogue(kinds)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    for kind in kinds or list(KINDS):
        group = [r for r in rows if r["kind"] == kind]
        print(f"{KINDS[kind].plural} ({len(group)})")
        if not group:
            print("  none shipped with this psyq\n")
            continue
        width = max(len(r["name"]) for r in group)
        for r in group:
            extra = [r["size"]] + [f"{key}: {r[key]}" for key in ("texts", "licence") if r.get(key)] + (
                [f"norms: {', '.join(r['norms'])}"] if r.get("norms") else [])
            print(f"  {r['name']:<{width}}  {r['title']}".rstrip())
            print(f"  {'':<{width}}  " + "; ".join(extra))
        print()
    print(f"psyq {__version__}; its shipped files are in {ROOT}.")
    print("Use a name wherever psyq reads such a file: `psyq run quickstart`, `instruments: [iri]` in a study, "
          "`psyq report RUN --human iri=iri_briganti2018_keyed`, `psyq.load_instrument('iri')`.")
    return EXIT_OK


# --- psyq init ---------------------------------------------------------------------------------

INIT_README = """# {folder}

A psyq study folder made by `psyq init` from the shipped study `{study}`
(psyq {version}). The study names psyq's shipped instruments by name (`psyq list` shows them);
the cohort is a copy you can edit: `{cohort_file}`.

The next three commands, from this folder:

```bash
psyq validate .                      # check the study and the cohort
psyq plan {study_file}          # what a run would send and cost; nothing is sent
psyq run {study_file}           # administer it; then psyq report runs/{study_id}
```

To run it on an OpenAI-compatible server instead of the local model:
`psyq run {study_file} --base-url http://127.0.0.1:8000/v1 --model NAME`.
Runs are written to `runs/` (kept out of git by `.gitignore`).
"""


def _rewrite_scalar(text: str, doc, at: tuple, old: str, new: str) -> str:
    """`text` with the YAML scalar `old` at field `at` replaced by `new` (comments and layout kept)."""
    line, column = doc.where(at)
    lines = text.splitlines(keepends=True)
    row = lines[line - 1]
    start = column - 1
    for written in (old, f'"{old}"', f"'{old}'"):
        if row.startswith(written, start):
            lines[line - 1] = row[:start] + new + row[start + len(written):]
            return "".join(lines)
    raise InputError.single(doc.file, f"cannot rewrite {old!r} here; copy the study by hand", line, column)


def _without_schema_line(text: str, fmt: str) -> str:
    """`text` without the editor's `$schema=` modeline, which points at a schema beside the shipped
    file (not copied): it says where the format is described instead."""
    first, _, rest = text.partition("\n")
    if first.startswith("# yaml-language-server: $schema="):
        return f"# The format: `psyq schema {fmt}` prints it as JSON Schema.\n{rest}"
    return text


def _reference(path: Path, folder: Path) -> str:
    """How the new study refers to `path`: a shipped file by its name, any other by its path."""
    named = shipped_name(path)
    return named[1] if named else os.path.relpath(path, folder.resolve())


def init_study_folder(folder: str | Path, study: str = "quickstart") -> list[Path]:
    """Make `folder` a study folder of one's own: a copy of `study` (a shipped name or a path)
    naming shipped instruments by name, its id the folder's name (so its runs go to
    ``runs/<folder>``, not to the shipped study's), a copy of its cohort, a README of the next
    commands and a .gitignore for runs/. Refuses (InputError, nothing written) when any of these
    files exists.

    Example:
        >>> import tempfile
        >>> [p.name for p in init_study_folder(tempfile.mkdtemp() + "/mine")]
        ['quickstart.yaml', 'adults_small.yaml', 'README.md', '.gitignore']
    """
    from psyq.engine import __version__
    from psyq.engine.design.study import load_study

    folder = Path(folder)
    source = locate(study, "study")
    loaded = load_study(source)
    doc = load_yaml(source)
    text = source.read_text(encoding="utf-8")
    cohort_file = folder / loaded.cohort_path.name
    # The study is the user's now: its id (which names its runs' folder) is the folder's name, made an id.
    study_id = re.sub(r"[^A-Za-z0-9_.-]+", "_", folder.resolve().name).strip("_.-") or loaded.id
    text = _rewrite_scalar(text, doc, ("id",), str(doc.data["id"]), study_id)
    text = _rewrite_scalar(text, doc, ("cohort",), doc.data["cohort"], cohort_file.name)
    for i, (written, path) in enumerate(zip(doc.data["instruments"], loaded.instrument_paths)):
        text = _rewrite_scalar(text, doc, ("instruments", i), written, _reference(path, folder))
    if loaded.situations_path is not None:
        text = _rewrite_scalar(text, doc, ("situations", "file"), doc.data["situations"]["file"],
                               _reference(loaded.situations_path, folder))
    cohort_text = loaded.cohort_path.read_text(encoding="utf-8")
    cohort_doc = load_yaml(loaded.cohort_path)
    data_file = (cohort_doc.data.get("from_data") or {}).get("file")
    if data_file is not None and loaded.cohort.provenance is not None:
        cohort_text = _rewrite_scalar(cohort_text, cohort_doc, ("from_data", "file"), data_file,
                                      _reference(Path(loaded.cohort.provenance["file"]), folder))
    files = {folder / source.name: _without_schema_line(text, "study"),
             cohort_file: _without_schema_line(cohort_text, "cohort"),
             folder / "README.md": INIT_README.format(folder=folder.name, study=source.stem, version=__version__,
                                                      cohort_file=cohort_file.name, study_file=source.name,
                                                      study_id=study_id),
             folder / ".gitignore": "runs/\n"}
    if len(files) < 4:
        raise InputError.single(str(cohort_file), "the study and its cohort have the same file name; copy them by hand")
    if folder.exists() and not folder.is_dir():
        raise InputError.single(str(folder), "this is a file, not a folder; psyq init changed nothing")
    from psyq.engine.files.validation import raise_problems   # pydantic: not for `psyq --version`

    existing = [p for p in files if p.exists() or p.is_symlink()]
    raise_problems([Problem(str(p), None, None, "", "exists already; psyq init changed nothing (choose another "
                                                     "folder, or move the file)") for p in existing])
    folder.mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        path.write_text(content, encoding="utf-8")
    return list(files)


def cmd_init(args: argparse.Namespace) -> int:
    written = init_study_folder(args.dir, args.from_study)
    for path in written:
        print(f"wrote {path}")
    study = written[0]
    print(f"\nnext:\n  cd {args.dir}\n  psyq validate .\n  psyq plan {study.name}\n  psyq run {study.name}")
    return EXIT_OK


def _arguments_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", nargs="?", choices=[k.plural for k in KINDS.values()],
                   help="list only this kind of file (default: every kind)")
    p.add_argument("--json", action="store_true", help="one JSON record per file, for scripts")


def _arguments_init(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="the folder to make (or an existing one; no file in it is overwritten)")
    p.add_argument("--from", dest="from_study", default="quickstart", metavar="STUDY",
                   help="the study to start from: a shipped name (psyq list studies) or a study file "
                        "(default: quickstart)")


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "list": (cmd_list, "list the instruments, cohorts, studies, rubrics, situation and perturbation sets, "
                       "lexicons and human data psyq ships, by name", _arguments_list),
    "init": (cmd_init, "make a study folder of one's own from a shipped study (its cohort copied, "
                       "instruments by name)", _arguments_init),
}
