"""Writing a bundle: a run, the files it read, its environment and a README, in one zip.

What goes in, and where (engine/bundle/layout.py): the run's folder (its manifest, a checkpointed
and redacted copy of its store, the copies of its study, instruments and situation set, the report
when there is one), every input file the manifest records with the sha256 it recorded, the rubrics
the store's ratings name, the environment record, the README and whatever the command line hands
in (the scores). The manifest in the bundle names its files inside the bundle
(``study_folder``: ``../inputs/study``), so every reader of a run finds the bundle's copies.

What stays out unless asked for, and is said in ``bundle.json`` and the README: people's data
(the human data file and codebook a cohort is drawn from; twins' ids, which are the people's
own ids, are replaced) without ``--with-human``; the item texts of licensed instruments that the
user supplied (their file, and every stored prompt, reply and conversation holding them) without
``--with-texts``; the run's lock, server logs and exported tables (not part of a bundle).
Never: a secret, an environment variable's value, an absolute path of this machine
(engine/bundle/scrub.py); a bundle holding one is not written.
"""

from __future__ import annotations

import hashlib
import shutil
import json
import os
import platform
import re
import sys
import tempfile
import zipfile
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from psyq.engine import __version__
from psyq.engine.bundle.layout import (ENVIRONMENT, FORMAT, INPUTS, README, RECORD, RUN, SITE, STUDY_FOLDER,
                                       member_path)
from psyq.engine.bundle.scrub import Sensitive, is_absolute_path
from psyq.engine.bundle.store_copy import (backup_store, finish_copy, open_for_redaction, redact_texts,
                                           replace_paths, replace_respondent_ids, row_counts)
from psyq.engine.files.atomic import atomic_file
from psyq.engine.files.errors import InputError
from psyq.engine.files.shipped import ROOT, locate, shipped_name
from psyq.engine.store.readonly import connect_readonly
from psyq.engine.store.run_dir import DATABASE, MANIFEST, SITUATIONS

if TYPE_CHECKING:
    from psyq.engine.results.run import Run

REPORT_FILES = ("report.html", "report.md", "methods.md")
REPORT_FOLDERS = ("report_tables",)
_STAMP = (1980, 1, 1, 0, 0, 0)     # every member's date: the bundle's bytes say nothing of when files were touched


@dataclass
class InputFile:
    """One file the run read: where it is, what the manifest calls it, where the bundle puts it."""

    key: str                 # the manifest's name for it (relative to the study's folder)
    path: Path               # where it is on this machine
    sha256: str              # as the manifest recorded it
    member: str = ""         # where it lies in the bundle
    role: str = "input"      # study, instrument, cohort, item texts, human data, ...


@dataclass
class Bundled:
    """What :func:`write_bundle` wrote: the zip, its members, and what it left out or changed."""

    path: Path
    members: list[str]
    left_out: list[dict[str, str]] = field(default_factory=list)
    changed: list[dict[str, str]] = field(default_factory=list)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _yaml_format(path: Path) -> str | None:
    """The `psyq:` format a YAML file declares (e.g. 'cohort/1'), read from its text."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(r"^psyq:\s*['\"]?([A-Za-z_-]+/\d+)", text, re.MULTILINE)
    return found.group(1) if found else None


def _roles(run: Run, manifest: Mapping[str, Any], files: list[InputFile]) -> None:
    """Say what each input file is: the study, an instrument, a cohort, item texts, people's data."""
    from psyq.engine.design.instrument import item_texts_path, load_instrument

    folder = run.path / manifest["study_folder"] if "study_folder" in manifest else Path()
    people = {(folder / v).resolve() for k, v in (manifest.get("cohort", {}).get("from_data") or {}).items()
              if k in ("file", "codebook") and isinstance(v, str)}
    texts = set()
    for copy in sorted((run.path / "instruments").glob("*.yaml")):
        try:
            instrument = load_instrument(copy)
        except InputError:
            continue
        originals = [f.path for f in files if f.path.name == copy.name] or [copy]
        for original in originals:
            path = item_texts_path(instrument, original)
            if path is not None:
                texts.add(path.resolve())
    for file in files:
        resolved = file.path.resolve()
        if resolved in people:
            file.role = "human data"
        elif resolved in texts:
            file.role = "item texts"
        else:
            kind = {"study/1": "study", "instrument/1": "instrument", "cohort/1": "cohort",
                    "situations/1": "situations"}.get(_yaml_format(file.path) or "")
            file.role = kind or "input"


def _place(files: list[InputFile], study_key: str | None) -> None:
    """Give each input file its place under inputs/: the study's folder keeps its own layout; psyq's
    shipped files keep theirs; any other file goes to inputs/other/ by its name alone (its folders
    would name the user's machine)."""
    taken: set[str] = set()
    for file in files:
        parts = PurePosixPath(file.key).parts
        if file.key == study_key or (".." not in parts and not PurePosixPath(file.key).is_absolute()):
            member = member_path(STUDY_FOLDER, *parts) if file.key != study_key else member_path(STUDY_FOLDER, file.path.name)
        else:
            try:
                inside = file.path.resolve().relative_to(ROOT.resolve())
                member = member_path(INPUTS, *inside.parts)
            except ValueError:
                member = member_path(INPUTS, "other", file.path.name)
        stem, n = member, 1
        while member in taken:
            n += 1
            member = f"{PurePosixPath(stem).with_suffix('')}_{n}{PurePosixPath(stem).suffix}"
        taken.add(member)
        file.member = member


def _relative_key(member: str) -> str:
    """The manifest's name of a bundle member: its path relative to the bundle's study folder."""
    return Path(os.path.relpath(member, STUDY_FOLDER)).as_posix()


def _twin_ids(database: Path, manifest: Mapping[str, Any]) -> dict[str, str]:
    """People's own respondent ids (twins' persona ids) -> the ids the bundle gives them instead."""
    from_data = manifest.get("cohort", {}).get("from_data") or {}
    if from_data.get("mode") != "twins":
        return {}
    with closing(connect_readonly(database)) as db:
        ids = [r[0] for r in db.execute("SELECT respondent_id FROM respondents ORDER BY respondent_id")]
    people = [i for i in ids if i != "baseline"]
    return {old: f"twin_{n:04d}" for n, old in enumerate(people, start=1)}


def _scrub_paths_in_json(value: Any, changed: list[str], where: str = "") -> Any:
    """`value` with every string that is an absolute path replaced by its last part."""
    if isinstance(value, dict):
        return {k: _scrub_paths_in_json(v, changed, f"{where}.{k}" if where else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_paths_in_json(v, changed, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and is_absolute_path(value) and "://" not in value:
        changed.append(where)
        return f"<path left out>/{PurePosixPath(value.replace(chr(92), '/')).name}"
    return value


def bundle_manifest(manifest: Mapping[str, Any], files: list[InputFile], twin_ids: Mapping[str, str],
                    with_human: bool) -> tuple[dict[str, Any], list[str]]:
    """The manifest as the bundle holds it: its files named where they lie in the bundle (same
    sha256), twins' ids replaced unless `with_human`, absolute paths left out; and what changed.

    Example:
        >>> files = [InputFile("s.yaml", Path("/w/s.yaml"), "ab", "inputs/study/s.yaml"),
        ...          InputFile("../instruments/iri.yaml", Path("/p/instruments/iri.yaml"), "cd", "inputs/instruments/iri.yaml")]
        >>> new, changed = bundle_manifest({"study_folder": "../../../w", "files": {"s.yaml": "ab",
        ...     "../instruments/iri.yaml": "cd"}, "shipped": {}}, files, {}, False)
        >>> new["study_folder"], new["files"]
        ('../inputs/study', {'s.yaml': 'ab', '../instruments/iri.yaml': 'cd'})
    """
    out = json.loads(json.dumps(manifest))
    keys = {f.key: _relative_key(f.member) for f in files}
    changes = ["study_folder: the study's folder inside the bundle (../inputs/study)"]
    out["study_folder"] = Path(os.path.relpath(STUDY_FOLDER, RUN)).as_posix()
    out["files"] = {keys.get(k, k): v for k, v in (manifest.get("files") or {}).items()}
    out["shipped"] = {keys.get(k, k): v for k, v in (manifest.get("shipped") or {}).items()}
    from_data = (out.get("cohort") or {}).get("from_data")
    if isinstance(from_data, dict):
        for name in ("file", "codebook"):
            if isinstance(from_data.get(name), str):
                from_data[name] = keys.get(from_data[name], from_data[name])
        if not with_human and isinstance(from_data.get("personas"), list):
            people = {}
            for persona in from_data["personas"]:
                if isinstance(persona, dict) and "respondent_id" in persona:
                    old = str(persona["respondent_id"])
                    persona["respondent_id"] = people.setdefault(old, f"person_{len(people) + 1:04d}")
                    if "id" in persona and str(persona["id"]) in twin_ids:
                        persona["id"] = twin_ids[str(persona["id"])]
            changes.append("cohort.from_data.personas: the people's respondent ids replaced (--with-human keeps them)")
    if "files" in manifest and keys:
        changes.append("files, shipped: each file named where it lies in the bundle (sha256 as recorded)")
    scrubbed: list[str] = []
    out = _scrub_paths_in_json(out, scrubbed)
    changes.extend(f"{where}: an absolute path of the bundling machine, left out" for where in scrubbed)
    return out, changes


def _dependencies() -> dict[str, str]:
    """The installed version of each of psyq's dependencies (extras left out)."""
    out = {}
    for requirement in metadata.requires("psyq") or []:
        if "extra ==" in requirement:
            continue
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return dict(sorted(out.items()))


def environment_record(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The environment the bundle was made in: psyq, Python, psyq's dependencies, and the local
    model (name and sha256) of each local backend of the run.

    Example:
        >>> record = environment_record({"backends": {"local": {"identity": {"kind": "local",
        ...     "model": "smollm2-135m-instruct-q4_1", "sha256": "ab12", "server": "llama.cpp"}}}})
        >>> record["local_models"], "pandas" in record["dependencies"]
        ([{'backend': 'local', 'model': 'smollm2-135m-instruct-q4_1', 'sha256': 'ab12', 'server': 'llama.cpp'}], True)
    """
    models = []
    for backend, entry in (manifest.get("backends") or {}).items():
        identity = (entry or {}).get("identity") or {}
        if identity.get("kind") == "local":
            models.append({"backend": backend, "model": identity.get("model"), "sha256": identity.get("sha256"),
                           "server": identity.get("server")})
    return {"psyq": __version__, "python": platform.python_version(),
            "python_implementation": platform.python_implementation(),
            "system": f"{platform.system()} {platform.machine()}",
            "run_made_with_psyq": manifest.get("psyq_version"),
            "dependencies": _dependencies(), "local_models": models}


def _readme(manifest: Mapping[str, Any], name: str, files: list[InputFile], left_out: list[dict[str, str]],
            changed: list[dict[str, str]], members: set[str], notes: Iterable[str] = ()) -> str:
    lines = [f"# A psyq run: {manifest.get('study')} (run {manifest.get('run_id')})", "",
             f"Made with psyq {__version__} ({FORMAT}). Read it with psyq {__version__} or later "
             "(`pip install psyq`); nothing needs to be unpacked:", "",
             "```bash",
             f"psyq verify {name}          # hashes, the store's integrity and counts, the scores re-computed",
             f"psyq report {name}          # the report, into the folder {Path(name).stem}/ beside the bundle",
             f"psyq scores {name}          # subscale scores;  psyq export {name}: every answer, long",
             f"psyq view {name}            # every trial and conversation in the browser",
             "```", "", "## What is inside", "",
             "- `run/`: the run as psyq wrote it: `manifest.json` (its file paths point into this bundle), "
             "`run.sqlite` (every trial, request, reply and answer; a checkpointed copy), the copies of the "
             "study and instruments the run kept" + (", the report" if any(m.startswith("run/report") for m in members)
                                                     else "; no report had been written"),
             "- `inputs/`: the files the run read, each with the sha256 the manifest recorded:"]
    lines += [f"  - `{f.member}` ({f.role})" for f in files if f.member in members]
    lines += ["- `scores.csv`: the subscale scores as psyq computed them when bundling (`psyq verify` "
              "computes them again)" if "scores.csv" in members else "- no `scores.csv`: the bundle was written without scoring",
              "- `environment.json`: psyq, Python and the versions of psyq's dependencies; the local model's "
              "name and sha256 when the run used one",
              "- `bundle.json`: every member's sha256, the store's row counts, and the lists below"]
    if f"{SITE}/index.html" in members:
        lines += [f"- `{SITE}/`: the viewer's pages as a static site: open `{SITE}/index.html` in a browser (from disk, "
                  "or put the folder on any static host); the run, its trials (one filter at a time), each trial's "
                  "transcript and each respondent, with no server and no psyq"]
    notes = list(notes)
    if notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in notes]
    lines += ["", "## What was left out, and why", ""]
    lines += [f"- {x['what']}: {x['why']}" for x in left_out] or ["- nothing"]
    lines += ["", "## What the bundle changed", ""]
    lines += [f"- {x['what']}: {x['why']}" for x in changed] or ["- nothing"]
    lines += ["", "No secret, environment variable value or absolute path of the machine that made the bundle is "
              "in it: psyq looked for them in every byte before writing.", ""]
    return "\n".join(lines)


def write_bundle(run: Run, out: str | Path, *, with_human: bool = False, with_texts: bool = False,
                 derived: Callable[[Path], Iterable[tuple[str, bytes]]] | None = None, notes: Iterable[str] = (),
                 environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Bundled:
    """Write the bundle of `run` (opened by :func:`psyq.open_run`) to `out` (a zip, written atomically).

    `derived`: further members (the scores, the static site) as (name, bytes) pairs, made from the
    bundle's own run (the run's folder as the bundle holds it, redactions made, unpacked in a
    temporary folder), so that they show what the bundle holds; each is checked and set aside on
    disk as it comes, so a generator of 10^5 pages is never held in memory. `notes`: lines for the
    README. `environ` and `cwd` (default: this process's): what must not leave the machine
    (engine/bundle/scrub.py).

    Raises :class:`InputError` (exit 2) when a member would hold a secret or an environment value.

    Example (`run_dir`: a finished stub run):
        >>> import tempfile, zipfile
        >>> from psyq.engine.results.run import open_run
        >>> bundled = write_bundle(open_run(run_dir), Path(tempfile.mkdtemp()) / "run.zip")
        >>> names = zipfile.ZipFile(bundled.path).namelist()
        >>> [n in names for n in ("run/manifest.json", "run/run.sqlite", "run/instruments/mini.yaml", "bundle.json")]
        [True, True, True, True]
    """
    manifest = run.manifest
    out = Path(out)
    environ = dict(os.environ if environ is None else environ)
    left_out: list[dict[str, str]] = []
    changed: list[dict[str, str]] = []

    recorded = manifest.get("files") or {}
    paths = list(run.input_files)
    files = [InputFile(key, path, digest) for (key, digest), path in zip(recorded.items(), paths)]
    _roles(run, manifest, files)
    study_key = next((f.key for f in files if f.role == "study"), None)
    _place(files, study_key)

    study_dir = (run.path / manifest["study_folder"]).resolve() if "study_folder" in manifest else None
    home = Path(environ.get("HOME") or Path.home())
    places = {str(home): "~", str(Path(cwd or Path.cwd())): "<working folder>", str(run.path.resolve()): "<run folder>",
              str(run.path.parent.resolve()): "<runs folder>", str(ROOT): "<psyq>", sys.prefix: "<python environment>",
              sys.base_prefix: "<python>", tempfile.gettempdir() + "/": "<temporary folder>/"}
    if study_dir is not None:
        places[str(study_dir)] = "<study folder>"
    places.update({str(f.path.resolve().parent): "<input folder>" for f in files})
    keys = [entry.get("config", {}).get("api_key_env") for entry in (manifest.get("backends") or {}).values()]
    sensitive = Sensitive.of(environ, {p: h for p, h in places.items() if p not in ("/", "")},
                             [k for k in keys if isinstance(k, str)])

    members: dict[str, bytes] = {}
    inputs: dict[str, dict[str, str]] = {}
    for file in files:
        if file.role == "human data" and not with_human:
            left_out.append({"what": f"{file.key.rsplit('/', 1)[-1]} (people's data the cohort was drawn from)",
                             "why": "people's data may not be shareable; `psyq bundle --with-human` adds it"})
            continue
        if file.role == "item texts" and not with_texts:
            left_out.append({"what": f"{file.key.rsplit('/', 1)[-1]} (item texts you supplied for a licensed instrument)",
                             "why": "licensed texts; `psyq bundle --with-texts` adds them, if the licence allows"})
            continue
        try:
            data = file.path.read_bytes()
        except OSError:
            left_out.append({"what": file.key.rsplit('/', 1)[-1], "why": "no longer where the run read it; the run's "
                             "own copies (run/instruments, run/study.yaml) are in the bundle"})
            continue
        if _sha256(data) != file.sha256:
            left_out.append({"what": file.key.rsplit('/', 1)[-1], "why": "changed since the run read it (its sha256 "
                             "differs from the manifest's); the run's own copies are in the bundle"})
            continue
        text = _as_text(data)
        if text is not None and sensitive.scrub(text) != text:
            data = sensitive.scrub(text).encode("utf-8")
            changed.append({"what": file.member, "why": "absolute paths of the bundling machine replaced, so its "
                            "sha256 differs from the one the manifest recorded"})
        members[file.member] = data
        inputs[file.member] = {"as": _relative_key(file.member), "role": file.role, "recorded_sha256": file.sha256}

    twin_ids = {} if with_human else _twin_ids(run.database, manifest)
    new_manifest, manifest_changes = bundle_manifest(manifest, files, twin_ids, with_human)
    changed.extend({"what": "run/manifest.json", "why": c} for c in manifest_changes)

    licensed = _licensed_texts(run, files) if not with_texts else {}
    with tempfile.TemporaryDirectory(prefix="psyq-bundle-") as work:
        copy, final = Path(work) / "copy.sqlite", Path(work) / "final.sqlite"
        backup_store(run.database, copy)
        with closing(open_for_redaction(copy)) as db:
            if licensed:
                n = redact_texts(db, licensed)
                changed.append({"what": "run/run.sqlite", "why": f"the licensed item texts of {', '.join(sorted(licensed))} "
                                f"left out of {n} stored prompts, replies and conversations (`--with-texts` keeps them)"})
            if twin_ids:
                replace_respondent_ids(db, twin_ids)
                changed.append({"what": "run/run.sqlite", "why": f"{len(twin_ids)} twins' respondent ids (the people's "
                                "own ids) replaced by twin_0001 ... (`--with-human` keeps them)"})
            if replace_paths(db, sensitive.paths):
                changed.append({"what": "run/run.sqlite", "why": "absolute paths of the bundling machine replaced"})
            db.execute("COMMIT")
        finish_copy(copy, final)
        members[member_path(RUN, DATABASE)] = final.read_bytes()
        counts = row_counts(final)

    members[member_path(RUN, MANIFEST)] = json.dumps(new_manifest, indent=2).encode("utf-8")
    for name in ("study.yaml", SITUATIONS):
        if (run.path / name).is_file():
            members[member_path(RUN, name)] = sensitive.scrub((run.path / name).read_text(encoding="utf-8")).encode()
    for copy_file in sorted((run.path / "instruments").glob("*.yaml")):
        members[member_path(RUN, "instruments", copy_file.name)] = copy_file.read_bytes()
    for name in REPORT_FILES:
        if (run.path / name).is_file():
            members[member_path(RUN, name)] = _scrubbed_bytes((run.path / name).read_bytes(), sensitive)
    for folder in REPORT_FOLDERS:
        for table in sorted((run.path / folder).glob("*")) if (run.path / folder).is_dir() else []:
            if table.is_file():
                members[member_path(RUN, folder, table.name)] = _scrubbed_bytes(table.read_bytes(), sensitive)
    kept = {DATABASE, MANIFEST, "study.yaml", SITUATIONS, "instruments", *REPORT_FILES, *REPORT_FOLDERS,
            "run.lock", f"{DATABASE}-wal", f"{DATABASE}-shm"}
    for other in sorted(p.name for p in run.path.iterdir() if p.name not in kept):
        left_out.append({"what": f"run/{other}", "why": "not part of a bundle (server logs, exported tables: "
                         "`psyq export` and `psyq scores` make the tables again from the bundle)"})
    for rubric, data in _rubrics(run.database, left_out).items():
        members[rubric] = data
        inputs[rubric] = {"as": "", "role": "rubric", "recorded_sha256": _sha256(data)}
    if twin_ids and not with_human:
        left_out.append({"what": "the twins' respondent ids", "why": "they are the people's own ids; replaced by "
                         "twin_0001 ... (`--with-human` keeps them)"})
    with tempfile.TemporaryDirectory(prefix="psyq-bundle-") as spool:
        # Derived members wait on disk (name -> (file, sha256)), each checked for leaks as it comes.
        spooled: dict[str, tuple[Path, str]] = {}
        problems: list[str] = []
        if derived is not None:
            with tempfile.TemporaryDirectory(prefix="psyq-bundle-") as work:
                for name, data in members.items():
                    (Path(work) / name).parent.mkdir(parents=True, exist_ok=True)
                    (Path(work) / name).write_bytes(data)
                for name, data in derived(Path(work) / RUN):
                    data = _scrubbed_bytes(data, sensitive)
                    problems.extend(f"{name}: holds {what}" for what in sensitive.leaks(data))
                    kept_at = Path(spool) / str(len(spooled))
                    kept_at.write_bytes(data)
                    spooled[name] = (kept_at, _sha256(data))

        members[ENVIRONMENT] = json.dumps(environment_record(new_manifest), indent=2).encode("utf-8")
        names = {*members, *spooled, README, RECORD}
        members[README] = _readme(manifest, out.name, files, left_out, changed, names, notes).encode("utf-8")
        hashes = {name: _sha256(data) for name, data in members.items()} | {n: h for n, (_, h) in spooled.items()}
        record = {"format": FORMAT, "psyq_version": __version__,
                  "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "study": manifest.get("study"), "run_id": manifest.get("run_id"),
                  "with_human": with_human, "with_texts": with_texts,
                  "members": dict(sorted(hashes.items())),
                  "inputs": inputs, "store_rows": counts, "left_out": left_out, "changed": changed}
        members[RECORD] = json.dumps(record, indent=2).encode("utf-8")

        problems += [f"{name}: holds {what}" for name, data in members.items() for what in sensitive.leaks(data)]
        if problems:
            shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
            raise InputError.single(run.path, "not bundled, since the bundle would hold what must not leave this "
                                    "machine: " + "; ".join(shown) + " (psyq never stores a key: look at what the "
                                    "replies or the files hold)")
        order = [RECORD, README, *sorted(n for n in names if n not in (RECORD, README))]
        _write_zip_atomic(out, order, members, {n: path for n, (path, _) in spooled.items()})
    return Bundled(out, sorted(names), left_out, changed)


def _write_zip_atomic(out: Path, order: list[str], members: Mapping[str, bytes], files: Mapping[str, Path]) -> None:
    """The zip of `members` (in memory) and `files` (on disk, copied in pieces), in `order`, written
    to a temporary file beside `out` that then replaces it (:func:`~psyq.engine.files.atomic.atomic_file`,
    the folder fsync'd too): a reader never sees half a bundle."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out) as handle:
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for name in order:
                info = zipfile.ZipInfo(name, date_time=_STAMP)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                if name in members:
                    archive.writestr(info, members[name])
                else:
                    with files[name].open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                        shutil.copyfileobj(source, target, 1024 * 1024)


def _as_text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _scrubbed_bytes(data: bytes, sensitive: Sensitive) -> bytes:
    text = _as_text(data)
    return data if text is None else sensitive.scrub(text).encode("utf-8")


def _licensed_texts(run: Run, files: list[InputFile]) -> dict[str, dict[str, str] | None]:
    """Instrument id -> its user-supplied item texts (None when they cannot be read now), for every
    instrument of the run whose texts the user supplied."""
    import csv

    from psyq.engine.design.instrument import item_texts_path, load_instrument

    out: dict[str, dict[str, str] | None] = {}
    for copy in sorted((run.path / "instruments").glob("*.yaml")):
        original = next((f.path for f in files if f.role == "instrument" and f.path.name == copy.name), copy)
        try:
            instrument = load_instrument(original if original.is_file() else copy)   # texts filled in when found
        except InputError:
            continue
        path = item_texts_path(instrument, original)
        if instrument.item_texts is None or path is None:
            continue
        try:
            with path.open(newline="", encoding="utf-8-sig") as handle:
                supplied = {row[0].strip() for row in list(csv.reader(handle))[1:] if row}
        except (OSError, UnicodeDecodeError, csv.Error):
            supplied = set()
        texts = {i.id: i.text for i in instrument.items if i.id in supplied and getattr(i, "text", None)}
        out[instrument.id] = texts or None
    return out


def _rubrics(database: Path, left_out: list[dict[str, str]]) -> dict[str, bytes]:
    """The shipped rubrics the store's ratings name, by their place in the bundle (a rubric is not
    recorded with its hash: the bundle holds this psyq's file of that name, and says so)."""
    with closing(connect_readonly(database)) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'ratings'").fetchone():
            return {}
        ids = [r[0] for r in db.execute("SELECT DISTINCT rubric_id FROM ratings ORDER BY rubric_id")]
    out = {}
    for rubric in ids:
        try:
            path = locate(rubric, "rubric")
        except InputError:
            path = None
        if path is None or not path.is_file() or shipped_name(path) is None:
            left_out.append({"what": f"rubric {rubric}", "why": "not a rubric psyq ships, and the run records its id "
                             "only: add your rubric file to the deposit yourself"})
            continue
        out[member_path(INPUTS, *path.resolve().relative_to(ROOT.resolve()).parts)] = path.read_bytes()
        left_out.append({"what": f"rubric {rubric}: the run recorded its id, not its sha256",
                         "why": f"the bundle holds the file of that name shipped with psyq {__version__}"})
    return out
