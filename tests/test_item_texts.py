"""Licensed item texts supplied by the user (the BES ships without them), and unscored items.

The BES texts used here are placeholders written for the test ("Placeholder statement N"),
not the real items.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from psyq import load_instrument
from psyq.engine.files.errors import InputError
from psyq.engine.trials.scoring import score
from cli_helper import psyq_in_process
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
BES = ROOT / "instruments" / "bes.yaml"
IDS = [str(i) for i in range(1, 21)]


def write_texts(home: Path, rows: list[tuple[str, str]] | None = None) -> Path:
    file = home / "psyq" / "bes_texts.csv"
    file.parent.mkdir(parents=True, exist_ok=True)
    rows = rows if rows is not None else [(i, f"Placeholder statement {i}.") for i in IDS]
    pd.DataFrame(rows, columns=["item_id", "text"]).to_csv(file, index=False)
    return file


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`psyq ARGS` with HOME at `home`, run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args, env={**os.environ, "HOME": str(home)})


def test_bes_ships_without_texts(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    bes = load_instrument(BES)
    assert bes.items_without_text == IDS
    assert "text:" not in BES.read_text().split("\nitems:", 1)[1].split("\nsubscales:", 1)[0]
    # Scoring needs no text: all-3 answers give cognitive 9 × 3 = 27 (reverse 6 − 3 = 3 too).
    answers = pd.DataFrame([[3] * 20], columns=IDS, index=["r1"])
    assert score(bes, answers).set_index("subscale").loc["cognitive", "score"] == 27


def test_texts_are_read_from_the_users_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    write_texts(tmp_path)
    bes = load_instrument(BES)
    assert bes.items_without_text == []
    assert bes.item("7").text == "Placeholder statement 7."


def test_bad_texts_file_is_reported_by_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    file = write_texts(tmp_path, [("1", "One."), ("21", "Twenty-one."), ("1", "Again."), ("2", "")])
    with pytest.raises(InputError) as err:
        load_instrument(BES)
    # Line 1 is the header: "21" is on line 3, the repeated "1" on line 4, the empty text on 5.
    assert [str(p) for p in err.value.problems] == [
        f"{file}:3:1: item_id: '21' is not a rating item of 'bes'",
        f"{file}:4:1: item_id: item '1' is given twice",
        f"{file}:5: text: the text of item '2' is empty"]


def test_validate_gives_a_notice_not_an_error(tmp_path):
    out = cli("validate", str(BES), home=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"ok  {BES}"
    assert out.stderr.startswith(f"notice: {BES}: instrument 'bes' has no text for 20 item(s) (1, 2, 3,")
    assert str(tmp_path / "psyq" / "bes_texts.csv") in out.stderr and "item_id,text" in out.stderr
    write_texts(tmp_path)
    out = cli("validate", str(BES), home=tmp_path)
    assert out.returncode == 0 and out.stderr == ""


def bes_study(tmp: Path, url: str) -> Path:
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": [{"id": "p1"}]}))
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "bes_test", "instruments": [str(BES)], "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model", "max_retries": 1,
                      "timeout_s": 5}],
        "protocol": {"answer": "json", "seed": 1}}, sort_keys=False))
    return path


def test_run_refuses_items_without_text_and_runs_with_them(tmp_path):
    with StubServer() as stub:
        study = bes_study(tmp_path, stub.url)
        refused = cli("run", str(study), "--runs-dir", str(tmp_path / "runs"), home=tmp_path)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert f"{study}:" in refused.stderr and "cannot administer: instrument 'bes'" in refused.stderr
        assert "(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)" in refused.stderr
        assert "Darrick Jolliffe" in refused.stderr          # how to obtain them
        assert not stub.requests and not (tmp_path / "runs").exists()
        write_texts(tmp_path)
        ran = cli("run", str(study), "--runs-dir", str(tmp_path / "runs"), home=tmp_path)
        assert ran.returncode == 0, ran.stderr
        sent = [json.dumps(r.body) for r in stub.requests if r.path.endswith("/chat/completions")]
    # One persona, 20 items, one item per request (re-asks repeat the same item): every
    # placeholder text was asked.
    assert all(any(f"Placeholder statement {i}." in s for s in sent) for i in IDS)


def test_item_texts_are_checked_once_by_administer_for_a_script_and_for_psyq_run(tmp_path, monkeypatch):
    # administer() checks first, before any backend, run directory or request; `psyq run` leaves
    # the check to it rather than reading the study's instruments for it twice.
    import asyncio

    from psyq import administer, load_study
    from psyq.engine.administer import run as run_module
    from psyq.engine.design import study as study_module

    checked, check = [], study_module.require_item_texts
    def counted(study):
        checked.append(study.id)
        check(study)
    monkeypatch.setattr(study_module, "require_item_texts", counted)
    monkeypatch.setattr(run_module, "require_item_texts", counted)
    monkeypatch.setenv("HOME", str(tmp_path))
    with StubServer() as stub:
        study = bes_study(tmp_path, stub.url)
        with pytest.raises(InputError, match="cannot administer: instrument 'bes'"):
            asyncio.run(administer(load_study(study), tmp_path / "runs"))
        assert checked == ["bes_test"] and not stub.requests and not (tmp_path / "runs").exists()
        write_texts(tmp_path)
        ran = cli("run", str(study), "--runs-dir", str(tmp_path / "runs"), home=tmp_path)
        assert ran.returncode == 0, ran.stderr
    assert checked == ["bes_test", "bes_test"]     # once by the script's administer(), once by psyq run


UNSCORED = """psyq: instrument/1
id: toy
name: Toy
version: "1"
content_source: published
citations: {smith: "Smith (2020)."}
terms: test
instructions: Rate.
scale: [{value: 1, label: low}, {value: 2}, {value: 3, label: high}]
items:
  - {id: a, text: A., subscales: [X]}
  - {id: filler, text: A filler item., unscored: true}
  - {id: b, text: B., reverse: true, subscales: [X]}
subscales: [{id: X, name: X}]
"""


def test_unscored_filler_item_is_accepted_and_left_out_of_scores(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(UNSCORED)
    toy = load_instrument(path)
    answers = pd.DataFrame([[3, 1, 1]], columns=["a", "filler", "b"], index=["r"])
    # X = a + (1 + 3 − b) = 3 + 3 = 6; the filler's answer counts nowhere.
    got = score(toy, answers)
    assert got["score"].tolist() == [6.0] and got["n_items"].tolist() == [2]
    path.write_text(UNSCORED.replace(", unscored: true", ""))
    with pytest.raises(InputError, match="item 'filler' belongs to no subscale"):
        load_instrument(path)
