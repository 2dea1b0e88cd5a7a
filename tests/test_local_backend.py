"""The `local` backend end to end on the real models (llama.cpp on 127.0.0.1 with the catalogue's
default for each kind of answer: engine/backends/catalogue.py).

Slow: the first run on a machine builds llama-server (minutes) and fetches the model (seconds);
later runs reuse the cache.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from psyq.engine.backends.catalogue import CATALOGUE, INSTRUCT_DEFAULT, default_local_model
from psyq.engine.backends.local_build import ensure_llama_server, llama_server_path
from psyq.engine.administer.run import administer
from psyq.engine.design.study import load_study

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.local_model]


def _with_placeholder_texts(tmp: Path, instrument: str) -> Path:
    """The instrument file to administer: for one whose texts are user-supplied (the BES), a copy
    beside a texts file of placeholder statements written here (not the real, licensed items)."""
    source = ROOT / instrument
    data = yaml.safe_load(source.read_text())
    if "item_texts" not in data:
        return source
    data["item_texts"]["file"] = "texts.csv"                  # relative to the copy
    lines = ["item_id,text"] + [f'{i["id"]},"Placeholder statement {i["id"]} about how I react to others."'
                                for i in data["items"]]
    (tmp / "texts.csv").write_text("\n".join(lines) + "\n")
    copy = tmp / source.name
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    return copy


def _study(tmp: Path, instrument: str, answer: str, personas: list[dict]) -> Path:
    (tmp / "cohort.yaml").write_text(yaml.safe_dump(
        {"psyq": "cohort/1", "id": "c", "include_baseline": False, "personas": personas}))
    path = tmp / f"study_{answer}.yaml"
    path.write_text(yaml.safe_dump({
        "psyq": "study/1", "id": f"local_{answer}", "instruments": [str(_with_placeholder_texts(tmp, instrument))],
        "cohort": "cohort.yaml", "backends": [{"id": "local", "kind": "local", "concurrency": 2}],
        "protocol": {"answer": answer, "seed": 7, "reask_limit": 1}}))
    return path


@pytest.fixture(scope="module")
def built():
    return ensure_llama_server(print)


@pytest.mark.parametrize("instrument, answer", [("instruments/iri.yaml", "logprobs"),
                                                ("instruments/bes.yaml", "json")])
def test_local_model_answers_every_trial_or_says_why(built, tmp_path, instrument, answer):
    personas = [{"id": "p1", "attributes": {"age": 29, "gender": "female", "occupation": "nurse"}}]
    study = load_study(_study(tmp_path, instrument, answer, personas))
    result = asyncio.run(administer(study, tmp_path / "runs", log=print))
    n_items = len(study.instruments[0].items)
    # 1 persona (no baseline: each trial costs the machine about a second), one trial per item.
    assert result.planned == n_items
    assert sum(result.counts.values()) == result.planned and "failed" not in result.counts
    with sqlite3.connect(result.run_dir.database) as db:
        rows = db.execute("SELECT a.status, a.value, a.reason, t.raw_text, a.distribution "
                          "FROM answers a JOIN trials t USING (trial_id)").fetchall()
    scale = {o.value for o in study.instruments[0].scale}
    for status, value, reason, raw, dist in rows:
        assert raw is not None                                  # the model's text is always kept
        if status == "answered":
            assert value in scale
        else:
            assert value is None and reason                     # missing, with its reason
    answered = [r for r in rows if r[0] == "answered"]
    # The server constrains JSON to the scale and logprobs always carry the digits/letters
    # among 200 alternatives, so the real model answers most items in both modes.
    assert len(answered) >= 0.8 * len(rows)
    if answer == "logprobs":
        dists = [json.loads(r[4]) for r in answered]
        assert all(abs(sum(d.values()) - 1) < 1e-9 for d in dists)
    manifest = json.loads(result.run_dir.manifest.read_text())
    identity = manifest["backends"]["local"]["identity"]
    expected = default_local_model(answer, ["rating"])[0]
    assert identity["model"] == expected and identity["sha256"] == CATALOGUE[expected].sha256
    assert llama_server_path().exists()


def test_local_model_answers_leas_scenes_and_they_are_scored(built, tmp_path):
    from psyq.engine.kinds.scene import scene_levels
    from psyq import export_table
    from psyq.engine.results.run import open_run

    personas = [{"id": "p1", "attributes": {"age": 45, "gender": "male", "occupation": "teacher"}}]
    path = _study(tmp_path, "tests/data/mini_scenes.yaml", "json", personas)
    study = load_study(path)
    result = asyncio.run(administer(study, tmp_path / "runs", log=print))
    # 3 scenes × 1 persona = 3 trials, each with a self and an other answer.
    assert result.planned == 3 and "failed" not in result.counts
    manifest = json.loads(result.run_dir.manifest.read_text())
    assert manifest["backends"]["local"]["identity"]["model"] == INSTRUCT_DEFAULT   # free text: the instruct model
    table = export_table(result.run_dir.path)
    assert len(table) == 6
    answered = table[table["status"] == "answered"]
    assert answered["text"].str.len().gt(0).all()            # free text kept whole
    # The free-text fields are bounded to fit max_tokens: no reply is JSON cut off inside a string.
    assert not table["reason"].fillna("").str.contains("not a JSON object").any()
    assert len(answered) >= 0.8 * len(table)
    levels = scene_levels(table, open_run(result.run_dir.path).instruments)
    assert len(levels) == 3 and levels["total_level"].between(0, 5).all()
    # The judge option on the same run, with the local model as judge (level from the digit's
    # probabilities): every scene answer with text gets a level 0-4, stored beside the answers.
    from psyq.analysis.report import build_sections
    from psyq.engine.backends import BackendConfig
    from psyq.engine.judging.answer_judge import judge_run, load_rubric
    from psyq.engine.results.run import open_run

    rubric = load_rubric(ROOT / "instruments" / "rubrics" / "leas_level.yaml")
    judged = asyncio.run(judge_run(result.run_dir.path, BackendConfig(id="judge", kind="local", temperature=0.0),
                                   rubric, "logprobs", log=print))
    assert judged.tasks == len(answered) and "failed" not in judged.counts
    levels_judged = open_run(result.run_dir.path).judgements
    assert levels_judged["level"].dropna().between(0, 4).all() and len(levels_judged) == len(answered)
    _, sections = build_sections(result.run_dir.path)
    leas = next(s for s in sections if s.title.startswith("Emotional awareness"))
    assert any(t.startswith("Judge model against the lexicon") for t, _ in leas.tables)


def test_local_model_rates_vignettes_and_accuracy_is_reported(built, tmp_path):
    from psyq.analysis.report import build_sections
    from psyq import export_table

    personas = [{"id": "p1", "attributes": {"age": 38, "gender": "female", "occupation": "social worker"}}]
    study = load_study(_study(tmp_path, "tests/data/mini_vignettes.yaml", "logprobs", personas))
    result = asyncio.run(administer(study, tmp_path / "runs", log=print))
    # 3 stops × (4 emotions + 1 inference) × 1 persona = 15 trials.
    assert result.planned == 15 and "failed" not in result.counts
    table = export_table(result.run_dir.path)
    ratings = table[~table["item_id"].str.endswith(":thoughts")]
    assert ratings["value"].dropna().between(0, 4).all() and ratings["value"].notna().mean() >= 0.8
    _, sections = build_sections(result.run_dir.path)
    ea = next(s for s in sections if s.title.startswith("Empathic accuracy"))
    per_vignette = next(frame for title, frame in ea.tables if title == "Per vignette")
    # Every vignette has a row with an MAE on the 0-4 scale; r may be undefined (the small model
    # often rates every emotion alike, a flat profile), and then the section says so.
    assert sorted(per_vignette["vignette"]) == ["v1", "v2"] and per_vignette["mae"].between(0, 4).all()
    assert per_vignette["r"].dropna().between(-1, 1).all()
    if per_vignette["r"].isna().any():
        assert any("flat profile" in r for r in ea.readings)
