"""Shipped files by name (engine/files/shipped.py), `psyq list` and `psyq init`, from folders
outside the clone: a name means the shipped file, a file where the name is read wins (said
once), an unknown or ambiguous name lists the candidates."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml

from psyq.cli import main
from psyq.engine.design.study import load_study
from psyq.engine.files import shipped
from psyq.engine.files.errors import InputError
from psyq.engine.files.notices import InputNotice
from psyq.engine.files.shipped import KINDS, ROOT, locate

REPO = Path(__file__).resolve().parents[1]


def tracked(folder: str, suffix: str) -> list[Path]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", folder], capture_output=True, text=True, check=True)
    return [REPO / line for line in out.stdout.split() if line.endswith(suffix)]


def test_every_tracked_file_of_each_kind_has_a_name():
    # The catalogue comes from the folders, so a file added later is found by name without a list
    # to update: compared here with what git tracks (an independent listing of the same folders).
    expected = {
        "instrument": {p.stem for p in tracked("instruments", ".yaml") if p.parent.name == "instruments"},
        "cohort": {p.stem for p in tracked("personas", ".yaml")},
        "study": {p.stem for p in tracked("studies", ".yaml")},
        "rubric": {p.stem for p in tracked("instruments/rubrics", ".yaml")},
        "human data": {p.stem for p in tracked("instruments/data", ".csv")
                       if p.with_name(f"{p.stem}.codebook.yaml").exists()},
    }
    for kind, names in expected.items():
        assert set(KINDS[kind].files()) == names, kind
    assert "panas_texts_template" not in KINDS["human data"].files()   # a template of texts, not data


def test_a_study_outside_the_clone_names_shipped_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "mine", "instruments": ["iri"], "cohort": "hand_written",
        "backends": [{"id": "b", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]}))
    study = load_study("mine.yaml")
    assert study.instrument_paths == ((ROOT / "instruments" / "iri.yaml").resolve(),)
    assert study.cohort_path == (ROOT / "personas" / "hand_written.yaml").resolve()
    from psyq.engine.administer.record import manifest_files, shipped_record
    record = shipped_record(study)
    assert sorted(v.split(" (")[0] for v in record.values()) == ["cohort hand_written", "instrument iri"]
    assert set(record) <= set(manifest_files(study))   # the same relative paths as `files`, with their hashes


def test_a_file_where_the_name_is_read_wins_and_a_notice_says_so(tmp_path):
    own = tmp_path / "iri.yaml"
    own.write_bytes((ROOT / "instruments" / "iri.yaml").read_bytes())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert locate("iri", "instrument", tmp_path) == own
    notes = [str(w.message) for w in seen if issubclass(w.category, InputNotice)]
    assert len(notes) == 1 and "iri.yaml is used; psyq also ships an instrument of this name" in notes[0]
    # A path (not a bare name) is taken as written: no shipped file is looked for, no notice.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert locate("iri.yaml", "instrument", tmp_path) == own
        assert locate("nothere.yaml", "instrument", tmp_path) == tmp_path / "nothere.yaml"
    assert not seen


def test_the_cli_says_the_local_file_wins_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "iri.yaml").write_bytes((ROOT / "instruments" / "iri.yaml").read_bytes())
    study = {"psyq": "study/1", "id": "twice", "instruments": ["iri", "iri"], "cohort": "hand_written",
             "backends": [{"id": "b", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study))
    main(["validate", "s.yaml", "iri"])
    err = capsys.readouterr().err
    assert err.count("psyq also ships an instrument of this name") == 1, err


def test_an_unknown_name_lists_the_shipped_names_at_the_study_line(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text("psyq: study/1\nid: s\ninstruments:\n  - iri2\ncohort: hand_written\n"
                                     "backends:\n  - {id: b, kind: openai, base_url: 'http://127.0.0.1:9/v1', model: m}\n")
    assert main(["validate", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 's.yaml'}:4:5: instruments[0]: no such file here, and psyq ships no instrument" in err
    assert "affect_psyq, bes, ea_vignettes_psyq, help_messages_psyq, iri, leas_psyq, panas" in err
    assert "Traceback" not in err


def test_a_name_shipped_as_two_kinds_is_an_error_naming_both(tmp_path, monkeypatch):
    for folder in ("instruments", "studies"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "same.yaml").write_text("psyq: x\n")
    monkeypatch.setattr(shipped, "ROOT", tmp_path)
    with pytest.raises(InputError) as caught:
        locate("same", folder=tmp_path / "elsewhere")
    message = str(caught.value)
    assert "the instrument instruments/same.yaml, the study studies/same.yaml" in message
    # With the kind known (a study's `instruments:`), the name is not ambiguous.
    assert locate("same", "instrument", tmp_path / "elsewhere") == tmp_path / "instruments" / "same.yaml"


def test_names_work_for_every_reader(tmp_path, monkeypatch):
    import psyq
    from psyq.engine.design.perturbation_sets import load_perturbations
    from psyq.engine.design.situations import load_situations
    from psyq.engine.judging.answer_judge import load_rubric
    from psyq.engine.kinds.response.rubrics import load_multi_rubric
    from psyq.engine.kinds.scene.leas import load_lexicon

    monkeypatch.chdir(tmp_path)
    assert psyq.load_instrument("iri").id == "iri"
    assert psyq.load_cohort("adults_small").id == "adults_small"
    assert psyq.load_study("quickstart").id == "quickstart"
    assert load_rubric("leas_level").spec.id == "leas_level"
    assert load_multi_rubric("empathy_ceb").spec.id == "empathy_ceb"
    assert load_situations("psyq_everyday").id == "psyq_everyday"
    assert load_perturbations("haleas7").id == "haleas7"
    assert len(load_lexicon("leas_psyq_lexicon").terms) > 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputNotice)
        answers = psyq.read_answers_csv("iri_briganti2018_keyed", psyq.load_instrument("iri"))
    assert len(answers) == 1973


def test_psyq_list_shows_every_shipped_file(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["kind"], r["name"]) for r in rows} == {(k, n) for k in KINDS for n in KINDS[k].files()}
    iri = next(r for r in rows if r["name"] == "iri")
    assert (iri["size"], iri["norms"]) == ("28 items, 4 subscales", ["briganti2018 (raw-data)", "davis1980 (unverified)"])
    bes = next(r for r in rows if r["name"] == "bes")
    assert bes["texts"] == "published; licensed texts not shipped (supply your own)"
    twins = next(r for r in rows if r["name"] == "briganti_twins")
    assert twins["size"] == "200 respondents (drawn from a human data file, iri_briganti2018_keyed)"
    people = next(r for r in rows if r["kind"] == "human data")
    assert people["size"] == "1,973 respondents of iri"
    assert main(["list", "rubrics"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rubrics (4)\n") and "empathy_ceb" in out and "iri " not in out


def test_psyq_list_says_a_kind_has_no_shipped_file(capsys, monkeypatch):
    # A kind psyq ships no file of (a new kind, before its first file) is listed as such, not a crash.
    from psyq.cli import starting

    monkeypatch.setattr(starting, "shipped_catalogue", lambda kinds: [])
    assert main(["list", "lexicons"]) == 0
    assert capsys.readouterr().out.startswith("lexicons (0)\n  none shipped with this psyq\n")


def test_init_makes_a_study_folder_that_validates_and_plans(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "mystudy"]) == 0
    folder = tmp_path / "mystudy"
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", "README.md", "adults_small.yaml",
                                                         "quickstart.yaml"]
    study = yaml.safe_load((folder / "quickstart.yaml").read_text())
    assert (study["instruments"], study["cohort"]) == (["iri"], "adults_small.yaml")
    # The study is the user's: its id, which names the runs' folder, is the folder's name
    # (it kept `quickstart`, so the user's runs landed in runs/quickstart beside the shipped study's).
    assert study["id"] == "mystudy" and "psyq report runs/mystudy" in (folder / "README.md").read_text()
    assert (folder / ".gitignore").read_text() == "runs/\n"
    assert "psyq plan quickstart.yaml" in (folder / "README.md").read_text()
    monkeypatch.chdir(folder)
    capsys.readouterr()
    assert main(["validate", "."]) == 0
    assert main(["plan", "quickstart.yaml"]) == 0
    out = capsys.readouterr().out
    assert "364 requests to send" in out
    loaded = load_study("quickstart.yaml")
    assert loaded.cohort_path == (folder / "adults_small.yaml").resolve()   # the copy, which the user edits
    assert loaded.instrument_paths == ((ROOT / "instruments" / "iri.yaml").resolve(),)


def test_init_from_a_study_drawn_from_human_data_keeps_the_data_by_name(tmp_path, capsys):
    assert main(["init", str(tmp_path / "twins"), "--from", "iri_twins"]) == 0
    cohort = yaml.safe_load((tmp_path / "twins" / "briganti_twins.yaml").read_text())
    assert cohort["from_data"]["file"] == "iri_briganti2018_keyed"
    assert len(load_study(tmp_path / "twins" / "iri_twins.yaml").cohort.personas) == 200


def test_init_refuses_to_overwrite_and_changes_nothing(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "README.md").write_text("my notes\n")
    assert main(["init", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'README.md'}: exists already; psyq init changed nothing" in err
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"]
    assert (folder / "README.md").read_text() == "my notes\n"
    (tmp_path / "afile").write_text("x")
    assert main(["init", str(tmp_path / "afile")]) == 2
    assert "this is a file, not a folder" in capsys.readouterr().err



def test_init_writes_nothing_through_a_dangling_symlink_named_like_one_of_its_files(tmp_path, capsys):
    """mine/README.md is a symlink to a file that does not exist yet, outside the folder. Path.exists()
    follows the link and says False, but writing README.md would create the file at the far end: init
    refuses, names the link, and nothing is created on either side of it."""
    folder, outside = tmp_path / "mine", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "README.md").symlink_to(outside / "planted.md")
    assert not (folder / "README.md").exists()   # dangling
    assert main(["init", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'README.md'}: exists already; psyq init changed nothing" in err and "Traceback" not in err
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"] and (folder / "README.md").is_symlink()


def test_report_takes_the_shipped_human_data_by_name_and_lists_names_for_an_unknown_one(tmp_path, monkeypatch):
    from psyq.analysis.scoring.human_data import input_file

    monkeypatch.chdir(tmp_path)
    assert input_file("iri_briganti2018_keyed", "--retest") == ROOT / "instruments" / "data" / \
        "iri_briganti2018_keyed.csv"
    with pytest.raises(InputError) as caught:
        input_file("briganti", "--human")
    assert str(caught.value) == ("briganti: --human: no such file here, and psyq ships no human data of this name; "
                                 "its human-data: iri_briganti2018_keyed (psyq list human-data)")
    with pytest.raises(InputError):   # --targets are the user's own targets' reports: never a shipped name
        input_file("iri_briganti2018_keyed", "--targets")



def test_a_retest_file_is_keyed_by_its_own_flag_not_by_the_human_files(tmp_path):
    """`--human iri=FILE:keyed --retest iri=FILE`: the retest's answers are read as stored (raw), the
    people's as keyed; and the other way round. tests/data/mini_1to7.yaml reverses items a and c on 1–7,
    so a keyed file's answer x is the raw answer 8 − x (written out here, not taken from psyq)."""
    from psyq.analysis.scoring.human_data import human_data
    from psyq.engine.design.instrument import load_instrument

    mini = load_instrument(REPO / "tests" / "data" / "mini_1to7.yaml")
    stored = pd.DataFrame({"respondent_id": ["h1", "h2"], "a": [2, 7], "b": [3, 5], "c": [1, 6], "d": [4, 4]})
    stored.to_csv(tmp_path / "first.csv", index=False)
    stored.to_csv(tmp_path / "second.csv", index=False)
    as_written = stored.set_index("respondent_id").astype(float)
    unkeyed = as_written.assign(a=8 - as_written["a"], c=8 - as_written["c"])

    people = human_data({"mini": f"{tmp_path / 'first.csv'}:keyed"}, retests={"mini": tmp_path / "second.csv"})["mini"]
    assert (people.keyed, people.retest_keyed) == (True, False)
    assert people.answers(mini)[["a", "b", "c", "d"]].equals(unkeyed)
    assert people.retest_answers(mini)[["a", "b", "c", "d"]].equals(as_written)

    people = human_data({"mini": tmp_path / "first.csv"}, retests={"mini": f"{tmp_path / 'second.csv'}:keyed"})["mini"]
    assert (people.keyed, people.retest_keyed) == (False, True)
    assert people.answers(mini)[["a", "b", "c", "d"]].equals(as_written)
    assert people.retest_answers(mini)[["a", "b", "c", "d"]].equals(unkeyed)


def test_a_folder_named_like_a_shipped_study_does_not_hide_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quickstart").mkdir()        # e.g. made by `psyq init quickstart`
    assert locate("quickstart", "study") == ROOT / "studies" / "quickstart.yaml"
    assert main(["validate", "quickstart"]) == 2    # validate takes folders: this one holds no YAML file
