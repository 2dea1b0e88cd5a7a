"""A run's directory: ``runs/<study-id>/<run-id>/`` with ``manifest.json``, ``run.sqlite`` and copies
of the files the answers depend on; reading it back (the manifest, its input files).

Written by ``psyq run`` (engine/administer/run.py); read by every later step (results, judging,
the report). A manifest names its input files relative to the study file's folder, so a run
directory can be shared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from psyq.engine.files.errors import InputError

MANIFEST = "manifest.json"

DATABASE = "run.sqlite"

SITUATIONS = "situations.yaml"   # the copy of a staged study's situation set


@dataclass(frozen=True)
class RunDir:
    """Paths of one run."""

    path: Path

    @property
    def manifest(self) -> Path:
        return self.path / MANIFEST

    @property
    def database(self) -> Path:
        return self.path / DATABASE

    def read_manifest(self) -> dict[str, Any]:
        """The manifest (InputError naming the file and the way back if it is damaged)."""
        try:
            data = json.loads(self.manifest.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            raise InputError.single(self.manifest, f"the manifest is damaged or unreadable ({exc}); the answers "
                                    f"are safe in {DATABASE}: run the same study again (psyq run STUDY.yaml, same "
                                    f"backends) to rebuild it; nothing finished is sent again") from None
        if not isinstance(data, dict):
            raise InputError.single(self.manifest, "the manifest is not a JSON object; run the same study again "
                                    "to rebuild it")
        return data


def open_run_dir(path: str | Path) -> RunDir:
    """An existing run directory (InputError if `path` is not one)."""
    run = RunDir(Path(path))
    if not run.manifest.exists() or not run.database.exists():
        raise InputError.single(path, f"not a run directory (no {MANIFEST} and {DATABASE} in it)")
    return run


def manifest_file_paths(run: RunDir, manifest: Mapping[str, Any]) -> dict[Path, str]:
    """Where the input files a run's manifest records are now, with their recorded sha256.

    Paths are relative to the study file's folder, which the manifest gives relative to the run
    directory (``study_folder``); a manifest written before then holds the paths as they were
    loaded (absolute, or relative to where psyq ran), returned unchanged.

    Example:
        >>> run = RunDir(Path("runs/iri_adults/6034b46b26f1"))
        >>> manifest = {"study_folder": "../../../studies", "files": {"../personas/adults_small.yaml": "b644"}}
        >>> [p.as_posix() for p in manifest_file_paths(run, manifest)]
        ['runs/iri_adults/6034b46b26f1/../../../studies/../personas/adults_small.yaml']
    """
    files = manifest.get("files") or {}
    if "study_folder" not in manifest:
        return {Path(name): digest for name, digest in files.items()}
    folder = run.path / manifest["study_folder"]
    return {folder / name: digest for name, digest in files.items()}
