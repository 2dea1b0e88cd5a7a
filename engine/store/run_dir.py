"""A run's directory: ``runs/<study-id>/<run-id>/`` with ``manifest.json``, ``run.sqlite`` and copies
of the files the answers depend on; where the input files its manifest records are now.

Written by ``psyq run`` (engine/administer/); opened by every later step through
:func:`psyq.engine.results.run.open_run`, the one place a run is opened from a path. A manifest
names its input files relative to the study file's folder, so a run directory can be shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

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
