"""Checks of psyq bundle, psyq verify and the report a bundle carries that a planted one-line mistake
must fail (each test says which line it guards): a recorded member missing from a bundle, a zip of
more members than a bundle holds, a path that prefixes another, a machine path in a run's
report.md, and the shipped people's file named by its place inside the installation.

One quick-start run over the stub server (tests/stub_server.py), by a user whose home folder is a
temporary one, with its report written into the run's folder and its bundle, made once.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

import psyq
from cli_helper import psyq_in_process
from psyq.engine.bundle import read
from psyq.engine.bundle.scrub import Sensitive
from psyq.cli.common import EXIT_BAD_INPUT, EXIT_OK
from psyq.engine.files.codebook import codebook_beside
from psyq.engine.files.shipped import ROOT, locate
from stub_server import StubServer

SHIPPED_PEOPLE = "iri_briganti2018_keyed"


def _psyq(*args, cwd: Path, env: dict[str, str] | None = None, code: int = EXIT_OK):
    done = psyq_in_process(*args, cwd=cwd, env=env)
    assert done.returncode == code, f"psyq {' '.join(map(str, args))} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A quick-start run, its report (in the run's folder) and its bundle."""
    tmp = tmp_path_factory.mktemp("bundle_checks")
    home = tmp / "home"
    study = home / "study"
    study.mkdir(parents=True)
    env = {**os.environ, "HOME": str(home)}
    with StubServer() as stub:
        _psyq("run", "quickstart", "--base-url", stub.url, "--model", "stub-model", cwd=study, env=env)
    [run] = (study / "runs" / "quickstart").iterdir()
    _psyq("report", run, cwd=study, env=env)
    _psyq("bundle", run, "--out", "run.zip", cwd=study, env=env)
    return {"study": study, "run": run, "env": env, "zip": study / "run.zip"}


# --- 1. engine/bundle/verify.py: hashes checked over `present & recorded` --------------------------------

def test_verify_says_a_recorded_member_is_missing_and_fails(made, tmp_path):
    # Guards verify_members' loop over `present & set(recorded)`: over `present | set(recorded)` it
    # hashes a member that is not there (FileNotFoundError) instead of saying it is missing.
    assert _psyq("verify", made["zip"], cwd=tmp_path).stdout.startswith("ok")      # the bundle as written verifies
    members = _members(made["zip"])
    assert "README.md" in json.loads(members["bundle.json"])["members"]          # a recorded member ...
    del members["README.md"]                                                     # ... left out of the zip
    _write_zip(tmp_path / "missing.zip", members)
    done = _psyq("verify", "missing.zip", cwd=tmp_path, code=EXIT_BAD_INPUT)
    assert done.stderr.splitlines() == ["error: missing.zip: README.md: in the record, not in the bundle"], done.stderr
    assert not done.stdout.startswith("ok")


# --- 2. engine/bundle/read.py: the member-count limit ------------------------------------------------------

def test_a_zip_of_more_members_than_a_bundle_holds_is_refused(tmp_path):
    # Guards check_archive's `len(infos) > MAX_MEMBERS`: compared with MAX_TOTAL_BYTES instead, a zip of
    # MAX_MEMBERS + 1 one-byte members (their bytes far under the byte limit) would be unpacked.
    count = read.MAX_MEMBERS + 1
    path, data = tmp_path / "many.zip", io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_STORED) as archive:       # in memory: about 2 s
        archive.writestr("bundle.json", json.dumps({"format": "psyq-bundle/1", "members": {}}))
        for i in range(count - 1):
            archive.writestr(zipfile.ZipInfo(f"run/{i}"), b"x")
        infos = archive.infolist()
    path.write_bytes(data.getvalue())
    assert len(infos) == count and sum(i.file_size for i in infos) < read.MAX_TOTAL_BYTES
    done = _psyq("verify", path, cwd=tmp_path, code=EXIT_BAD_INPUT)
    assert done.stderr.startswith(f"error: {path}: {count} members, more than a bundle holds "
                                  f"({read.MAX_MEMBERS}); refused"), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.zip"]


# --- 3. engine/bundle/scrub.py: longest path first ---------------------------------------------------------

def test_a_path_that_prefixes_another_is_not_replaced_inside_it():
    # Guards Sensitive.of's order (longest path first): shortest first, /tmp/x/run would be replaced
    # inside /tmp/x/run_data, leaving '<run folder>_data/people.csv'.
    sensitive = Sensitive.of({}, {"/tmp/x/run": "<run folder>", "/tmp/x/run_data": "<data folder>"})
    text = "read /tmp/x/run_data/people.csv, wrote /tmp/x/run/report.md"
    assert sensitive.scrub(text) == "read <data folder>/people.csv, wrote <run folder>/report.md"
    assert sensitive.leaks(sensitive.scrub(text).encode()) == []


# --- 4. engine/bundle/write.py: the report's bytes scrubbed ------------------------------------------------

def test_the_run_folders_path_in_report_md_is_replaced_in_the_bundle(made, tmp_path):
    # Guards write_bundle's `_scrubbed_bytes(...)` on the report files: written unscrubbed, the run's
    # folder stays in run/report.md (and the bundle is refused as holding a path of this machine).
    run = made["run"]
    report = run / "report.md"
    original = report.read_bytes()
    folder = str(run.resolve())
    report.write_bytes(original + f"\nWritten in {folder}/report_tables.\n".encode())
    try:
        _psyq("bundle", run, "--out", tmp_path / "report.zip", cwd=made["study"], env=made["env"])
    finally:
        report.write_bytes(original)
    members = _members(tmp_path / "report.zip")
    for name, data in members.items():      # every member, text or not
        for needle in {folder, str(run)}:
            assert needle.encode() not in data, f"{needle} in {name}"
    assert "\nWritten in <run folder>/report_tables.\n" in members["run/report.md"].decode()


# --- 5. the report's human-data paragraph (analysis/report/readings.py) -----------------------------------

def test_a_report_names_the_shipped_peoples_file_not_its_place_in_the_installation(made, tmp_path):
    # Guards reading_notes: the shipped file said by its name and psyq's version, never by its path
    # inside this machine's installation (…/site-packages/psyq/instruments/data/…csv).
    html, md = psyq.write_report(made["run"], out_dir=tmp_path / "r",
                                 people=psyq.human_data({"iri": SHIPPED_PEOPLE}))
    csv = locate(SHIPPED_PEOPLE, "human data")
    book = codebook_beside(csv)
    for written in (md, html):
        text = written.read_text()
        for needle in {str(csv), str(csv.resolve()), str(book), str(book.resolve()), str(ROOT.resolve())}:
            assert needle not in text, f"{needle} in {written.name}"
    assert (f"iri: the human data {SHIPPED_PEOPLE} (shipped with psyq {psyq.__version__}) were read with the "
            "codebook shipped with it (item columns davi{id};") in md.read_text()


def test_a_report_names_the_users_own_peoples_file_as_given(made, tmp_path):
    # The other side of the same sentence: a user's own file (and its codebook) stay the relative path given.
    csv = locate(SHIPPED_PEOPLE, "human data")
    (tmp_path / "mine").mkdir()
    lines = csv.read_text().splitlines(keepends=True)
    (tmp_path / "mine" / "people.csv").write_text("".join(lines[:301]))       # 300 people: a quicker report
    shutil.copy(codebook_beside(csv), tmp_path / "mine" / "people.codebook.yaml")
    _psyq("report", made["run"], "--out", "r", "--human", "iri=mine/people.csv", cwd=tmp_path, env=made["env"])
    md = (tmp_path / "r" / "report.md").read_text()
    assert ("iri: the human data mine/people.csv were read with the codebook mine/people.codebook.yaml "
            "(item columns davi{id};") in md
    assert str(tmp_path.resolve() / "mine") not in md and "shipped with psyq" not in md
