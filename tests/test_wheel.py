"""psyq installed from its wheel, used from a folder outside the clone.

The wheel is built (``python -m build``: sdist, then the wheel from the sdist) from a copy of the
files git tracks, checked with ``twine check``, installed (not editable) into a throwaway venv,
and used as a new user would from an empty folder: --version, list, init, validate, plan, run
against an OpenAI-compatible server (the stub), report with the shipped human data by name,
the run bundled and read by a reviewer in another empty folder (verify, report: the same
tables), and the Python API by name. The throwaway venv borrows the test venv's dependencies through a
.pth line, so nothing is downloaded but the build backend.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from stub_server import StubServer

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, text=True, check=True)
    return [name for name in out.stdout.split("\0") if name and (REPO / name).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the tracked files (what a clean clone holds)."""
    tree = tmp_path_factory.mktemp("clean") / "psyq"
    for name in _tracked_files():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tree / name)
    dist = tree / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(tree)], tree)
    _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())], tree)
    [built] = dist.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict[str, str]:
    """A throwaway venv with the wheel installed (not editable); returns its environment."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], venv.parent)
    python = venv / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        venv).stdout.strip())
    # The dependencies of the test venv, as a plain path: its .pth files (the editable psyq's
    # finder among them) are not processed, so `import psyq` can only find the wheel's copy.
    (purelib / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "--quiet",
          str(wheel)], venv)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def test_the_wheel_holds_every_tracked_instrument_cohort_and_study_file(wheel):
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    shipped = [name for name in _tracked_files() if name.split("/")[0] in ("instruments", "personas", "studies")
               and name.endswith((".yaml", ".csv", ".json"))]
    # Nothing tracked there is withheld for its licence: licensed texts (BES, PANAS) are never
    # committed, each instrument's `item_texts` says how a licensed user supplies them.
    missing = sorted(name for name in shipped if f"psyq/{name}" not in in_wheel)
    assert shipped and not missing, missing
    assert not [n for n in in_wheel if n.startswith(("psyq/tests/", "psyq/bench/", "psyq/notebooks/", "tests/"))]


def test_psyq_installed_from_the_wheel_works_outside_the_clone(installed, tmp_path):
    where = tmp_path / "elsewhere"
    where.mkdir()
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert _run(["psyq", "--version"], where, installed).stdout.strip() == f"psyq {version}"
    python = _run(["python", "-c", "import psyq; print(psyq.__file__); print(psyq.load_instrument('iri'))"],
                  where, installed).stdout
    assert str(REPO) not in python.splitlines()[0]    # the installed copy, not the clone
    assert python.splitlines()[1].startswith("Interpersonal Reactivity Index (iri, version 1980): 28 items")
    listing = _run(["psyq", "list"], where, installed).stdout
    assert "quickstart" in listing and "iri_briganti2018_keyed" in listing

    _run(["psyq", "init", "mystudy"], where, installed)
    study = where / "mystudy"
    _run(["psyq", "validate", "."], study, installed)
    assert "364 requests to send" in _run(["psyq", "plan", "quickstart.yaml"], study, installed).stdout
    with StubServer() as stub:
        run = _run(["psyq", "run", "quickstart.yaml", "--base-url", stub.url, "--model", "stub-model"], study, installed)
    assert "now answered 364" in run.stdout
    [run_dir] = (study / "runs" / study.name).iterdir()
    report = _run(["psyq", "report", str(run_dir), "--human", "iri=iri_briganti2018_keyed"], study, installed)
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "Cohort against human respondents" in html and "Is it the same construct?" in html, report.stderr
    manifest = (run_dir / "manifest.json").read_text()
    assert "instrument iri (shipped with psyq" in manifest

    # The run shared as a bundle, read in an empty folder: it verifies and re-reports to the same tables.
    _run(["psyq", "bundle", str(run_dir), "--out", "shared.zip"], study, installed)
    reader = tmp_path / "reviewer"
    reader.mkdir()
    shutil.copy(study / "shared.zip", reader / "shared.zip")
    assert _run(["psyq", "verify", "shared.zip"], reader, installed).stdout.startswith("ok")
    _run(["psyq", "report", "shared.zip", "--human", "iri=iri_briganti2018_keyed"], reader, installed)
    tables = sorted((run_dir / "report_tables").glob("*.csv"))
    assert tables and all((reader / "shared" / "report_tables" / t.name).read_bytes() == t.read_bytes() for t in tables)
