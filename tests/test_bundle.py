"""psyq bundle, verify, and report/scores/export/view of a bundle (engine/bundle/, cli/bundle.py).

A quick-start run is made over the stub server by a user whose home folder and API key are
planted (a fake home path, a key in the environment): the bundle must hold neither in any byte,
must verify, and must re-report to the same tables with the original files gone. Bundles built by
hand test the reader: a member outside the bundle, a symbolic link, a declared 17 GB, a zip
bomb, a later format; each refused with `FILE: what`, nothing written outside the temporary folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections import Counter
from pathlib import Path

import pytest
import yaml

from cli_helper import psyq_in_process
from stub_server import StubServer
from test_view import HOSTILE, _study, hostile_then_readable

PLANTED_KEY = "sk-planted-4f9a0c1e7b2d8e6f"
HOME_NAME = "alice-planted-home"


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(home), MY_PROVIDER_API_KEY=PLANTED_KEY)
    return env


def _psyq(*args, cwd: Path, env: dict[str, str] | None = None, code: int = 0):
    done = psyq_in_process(*args, cwd=cwd, env=env)
    assert done.returncode == code, f"psyq {' '.join(map(str, args))} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _temporary_bundles() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("psyq-bundle-*")}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A quick-start run by a user with a planted home and key, its report, and its bundle."""
    tmp = tmp_path_factory.mktemp("bundle")
    home = tmp / HOME_NAME
    study = home / "mystudy"
    study.mkdir(parents=True)
    env = _env(home)
    with StubServer() as stub:
        _psyq("run", "quickstart", "--base-url", stub.url, "--model", "stub-model", "--api-key-env",
              "MY_PROVIDER_API_KEY", cwd=study, env=env)
    [run] = (study / "runs" / "quickstart").iterdir()
    _psyq("report", run, cwd=study, env=env)
    _psyq("bundle", "runs/quickstart", "--out", "shared.zip", cwd=study, env=env)
    return {"tmp": tmp, "home": home, "study": study, "run": run, "zip": study / "shared.zip", "env": env}


def test_a_bundle_verifies_and_reports_the_same_tables_where_no_original_file_is(shared, tmp_path):
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    shutil.copy(shared["zip"], elsewhere / "shared.zip")
    away = shared["tmp"] / "moved-away"
    before = _temporary_bundles()
    shared["home"].rename(away)                       # none of the original files is where the run read them
    try:
        env = {**os.environ, "HOME": str(tmp_path)}
        verified = _psyq("verify", "shared.zip", cwd=elsewhere, env=env)
        assert verified.stdout.startswith("ok  shared.zip") and "scores computed again" in verified.stdout
        _psyq("report", "shared.zip", cwd=elsewhere, env=env)
        _psyq("scores", "shared.zip", cwd=elsewhere, env=env)
        _psyq("export", "shared.zip", cwd=elsewhere, env=env)
    finally:
        away.rename(shared["home"])
    original = shared["run"] / "report_tables"
    tables = sorted(p.name for p in original.glob("*.csv"))
    assert tables and sorted(p.name for p in (elsewhere / "shared" / "report_tables").glob("*.csv")) == tables
    for name in tables:
        assert (elsewhere / "shared" / "report_tables" / name).read_bytes() == (original / name).read_bytes(), name
    # Nothing unpacked into the user's folder: the bundle, and the folder named after it with what was asked.
    assert sorted(p.name for p in elsewhere.iterdir()) == ["shared", "shared.zip"]
    assert {"report.html", "report.md", "scores.csv", "answers.csv"} <= {p.name for p in (elsewhere / "shared").iterdir()}
    assert _temporary_bundles() <= before             # the temporary folders are gone


def test_no_secret_environment_value_or_home_path_in_any_byte(shared):
    data = shared["zip"].read_bytes()
    archive = zipfile.ZipFile(shared["zip"])
    members = {name: archive.read(name) for name in archive.namelist()}
    assert "run/run.sqlite" in members and "run/report.html" in members and "environment.json" in members
    for name, content in [("the zip", data), *members.items()]:
        for needle in (PLANTED_KEY, HOME_NAME, str(shared["tmp"]), str(Path.cwd())):
            assert needle.encode() not in content, f"{needle} in {name}"
    manifest = json.loads(members["run/manifest.json"])
    assert manifest["study_folder"] == "../inputs/study"
    assert manifest["backends"]["stub-model"]["config"]["api_key_env"] == "MY_PROVIDER_API_KEY"   # the name only
    environment = json.loads(members["environment.json"])
    assert environment["python"] == ".".join(map(str, sys.version_info[:3])) and "pandas" in environment["dependencies"]
    readme = members["README.md"].decode()
    assert "psyq report shared.zip" in readme and "What was left out" in readme


def test_a_bundle_holding_an_environment_value_is_not_written(shared, tmp_path):
    # A reply that quotes the key (here: put there by hand) stops the bundle, naming the variable, not the value.
    run = tmp_path / "run"
    shutil.copytree(shared["run"], run, ignore=shutil.ignore_patterns("run.sqlite-*"))
    with sqlite3.connect(run / "run.sqlite") as db:
        db.execute("UPDATE trials SET raw_text = ? WHERE rowid = 1", (f"my key is {PLANTED_KEY}",))
    done = _psyq("bundle", run, "--out", "leak.zip", cwd=tmp_path, env=shared["env"], code=2)
    assert "environment variable MY_PROVIDER_API_KEY" in done.stderr and PLANTED_KEY not in done.stderr
    assert not (tmp_path / "leak.zip").exists()


def _rewritten(source: Path, target: Path, change: dict[str, bytes], record: bool) -> None:
    """A copy of the bundle `source` with members changed (and, with `record`, bundle.json updated)."""
    with zipfile.ZipFile(source) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members.update(change)
    if record:
        data = json.loads(members["bundle.json"])
        data["members"].update({n: hashlib.sha256(b).hexdigest() for n, b in change.items()})
        members["bundle.json"] = json.dumps(data).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)


def test_verify_says_what_differs(shared, tmp_path):
    with zipfile.ZipFile(shared["zip"]) as archive:
        instrument = archive.read("run/instruments/iri.yaml").decode()
    # An item's keying flipped in the instrument the run kept, the record made to agree: only the
    # scores computed again can tell.
    flipped = re.sub(r"(\{id: ?\"?1\"?,)", r"\1 reverse: true,", instrument, count=1)
    assert flipped != instrument
    _rewritten(shared["zip"], tmp_path / "rekeyed.zip", {"run/instruments/iri.yaml": flipped.encode()}, record=True)
    done = _psyq("verify", "rekeyed.zip", cwd=tmp_path, code=2)
    assert "scores.csv row" in done.stderr and "computed again" in done.stderr and "Traceback" not in done.stderr
    # A member changed behind the record's back.
    _rewritten(shared["zip"], tmp_path / "edited.zip", {"inputs/study/quickstart.yaml": b"psyq: study/1\n"}, record=False)
    done = _psyq("verify", "edited.zip", cwd=tmp_path, code=2)
    assert "inputs/study/quickstart.yaml: sha256 differs from the record's" in done.stderr


# --- hostile bundles ------------------------------------------------------------------------------------

def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bundle.json", json.dumps({"format": "psyq-bundle/1", "members": {}}))
        for name, content in members.items():
            archive.writestr(name, content)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (0o120777 << 16)       # a symbolic link, in the Unix mode bits
            archive.writestr(info, "/etc")
    return path


def _declared(path: Path, size: int) -> Path:
    """A small zip whose members' headers each declare `size` bytes (nothing that large is written)."""
    _zip(path, {f"run/part{i}.bin": b"x" * 100 for i in range(3)})
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = 0
        while (at := data.find(signature, at)) >= 0:
            data[at + offset:at + offset + 4] = size.to_bytes(4, "little")
            at += 4
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("make, expected", [
    (lambda d: _zip(d / "b.zip", {"../../x": b"escaped"}), "member '../../x': a path outside the bundle"),
    (lambda d: _zip(d / "b.zip", {"/abs/x": b"escaped"}), "member '/abs/x': a path outside the bundle"),
    (lambda d: _zip(d / "b.zip", {}, link="run/link"), "member 'run/link': a symbolic link"),
    (lambda d: _declared(d / "b.zip", 0xFFFFFFF0), "would unpack to 17,179,869,120 bytes"),
    (lambda d: _zip(d / "b.zip", {"run/zeros.bin": bytes(20 * 1024**2)}), "refused as a zip bomb"),
    (lambda d: (d / "b.zip").write_text("<script>not a zip</script>") and d / "b.zip", "not a zip file"),
])
def test_a_hostile_bundle_is_refused_with_a_clear_message_and_nothing_written(tmp_path, make, expected):
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    bundle = make(folder)
    before = _temporary_bundles()
    for command in ("verify", "report", "view"):
        done = _psyq(command, bundle, cwd=folder, code=2)
        assert expected in done.stderr and done.stderr.startswith(f"error: {bundle}:"), done.stderr
        assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "b.zip"]   # no ../../x, no report folder
    assert _temporary_bundles() <= before


def test_a_bundle_of_a_later_format_names_the_version_that_reads_it(tmp_path):
    path = tmp_path / "later.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("bundle.json", json.dumps({"format": "psyq-bundle/7", "psyq_version": "9.0.0"}))
    done = _psyq("report", path, cwd=tmp_path, code=2)
    assert "a bundle of format 'psyq-bundle/7' (made by psyq 9.0.0)" in done.stderr
    assert "install psyq 9.0.0 or later" in done.stderr


# --- what is left out -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def licensed(tmp_path_factory):
    """A run of the BES (licensed texts, supplied by the user) to three twins of shipped people."""
    tmp = tmp_path_factory.mktemp("licensed")
    home = tmp / "home"
    (home / "psyq").mkdir(parents=True)
    texts = {str(i): f"Planted licensed sentence number {i} of the scale." for i in range(1, 21)}
    (home / "psyq" / "bes_texts.csv").write_text("item_id,text\n" + "".join(f"{k},{v}\n" for k, v in texts.items()))
    study = tmp / "study"
    study.mkdir()
    (study / "twins.yaml").write_text(yaml.safe_dump({
        "psyq": "cohort/1", "id": "few_twins", "include_baseline": False,
        "from_data": {"file": "iri_briganti2018_keyed", "attributes": ["gender"], "twins": {"rows": 3, "seed": 1}}}))
    env = {**os.environ, "HOME": str(home)}
    with StubServer() as stub:
        (study / "s.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "bes_twins", "instruments": ["bes"], "cohort": "twins.yaml",
            "backends": [{"id": "stub", "kind": "openai", "base_url": stub.url, "model": "stub-model"}],
            "protocol": {"answer": "text", "repeats": 1, "seed": 1}}))
        _psyq("run", "s.yaml", cwd=study, env=env)
    [run] = (study / "runs" / "bes_twins").iterdir()
    with sqlite3.connect(run / "run.sqlite") as db:
        people = [r[0] for r in db.execute("SELECT respondent_id FROM respondents")]
    return {"study": study, "run": run, "env": env, "texts": texts, "people": people}


def _all_bytes(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {n: archive.read(n) for n in archive.namelist()}


def test_licensed_texts_and_peoples_ids_stay_out_unless_asked_for(licensed):
    study, env = licensed["study"], licensed["env"]
    done = _psyq("bundle", licensed["run"], "--out", "plain.zip", cwd=study, env=env)
    assert "left out: bes_texts.csv" in done.stderr and "left out: iri_briganti2018_keyed.csv" in done.stderr
    members = _all_bytes(study / "plain.zip")
    assert not any(n.endswith(("bes_texts.csv", "iri_briganti2018_keyed.csv")) for n in members)
    text = licensed["texts"]["7"].encode()
    assert not any(text in b for b in members.values())           # not in the store's prompts either
    store = study / "plain.sqlite"
    store.write_bytes(members["run/run.sqlite"])
    with sqlite3.connect(store) as db:
        ids = sorted(r[0] for r in db.execute("SELECT respondent_id FROM respondents"))
        request = db.execute("SELECT request FROM trials WHERE item_ids = '[\"7\"]'").fetchone()[0]
    assert ids == ["twin_0001", "twin_0002", "twin_0003"]
    assert "[item text of bes 7 left out: licensed, supplied by the user]" in request
    assert "bes_texts.csv" in members["README.md"].decode() and "--with-texts" in members["README.md"].decode()
    manifest = members["run/manifest.json"].decode()
    assert not any(f'"{person}"' in manifest for person in licensed["people"])
    assert _psyq("verify", "plain.zip", cwd=study).stdout.startswith("ok")

    _psyq("bundle", licensed["run"], "--out", "full.zip", "--with-texts", "--with-human", cwd=study, env=env)
    members = _all_bytes(study / "full.zip")
    assert any(n.endswith("bes_texts.csv") for n in members) and any(n.endswith("keyed.csv") for n in members)
    assert text in members["run/run.sqlite"]
    assert _psyq("verify", "full.zip", cwd=study).stdout.startswith("ok")


# --- the viewer on a bundle -------------------------------------------------------------------------------

def test_psyq_view_serves_a_bundles_trials_with_a_hostile_reply_as_text(tmp_path):
    with StubServer(answer=hostile_then_readable(Counter())) as stub:
        study = _study(tmp_path, stub.url, 2)
        _psyq("run", study, "--runs-dir", tmp_path / "runs", cwd=tmp_path)
    _psyq("bundle", tmp_path / "runs" / "view_run", "--out", "v.zip", cwd=tmp_path)
    before = _temporary_bundles()
    process = subprocess.Popen([sys.executable, "-m", "psyq.cli", "view", "v.zip"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"(http://\S+)", process.stdout.readline()).group(1)
        runs = urllib.request.urlopen(url).read().decode()
        run = re.search(r'href="/run/([^"]+)/"', runs).group(1)
        trials = urllib.request.urlopen(f"{url}run/{run}/trials").read().decode()
        trial_ids = re.findall(r"/trial/([0-9a-f]+)", trials)
        assert trial_ids
        pages = [urllib.request.urlopen(f"{url}run/{run}/trial/{t}").read().decode() for t in trial_ids]
        hostile = [p for p in pages if "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in p]
        assert hostile and not any("<script>window.__pwned" in p for p in pages)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert _temporary_bundles() <= before
