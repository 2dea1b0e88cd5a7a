"""The judge option: rubric files, judging a run's free-text answers over real HTTP (the stub on
127.0.0.1), judgements stored beside the answers with resume, and agreement with the lexicon.

Expected levels come from the stub's scripted replies or its fixed logprob distribution (written
out below), not from the code under test; agreement statistics are computed by hand.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from psyq.analysis.statistics.agreement import level_agreement
from psyq.analysis.statistics.lexicon_agreement import judge_lexicon_agreement, lexicon_answer_levels
from psyq.analysis.report import build_sections
from psyq.engine.backends import BackendConfig
from psyq.cli import main
from psyq.engine.files.errors import InputError
from psyq.engine.results.export import export_table
from psyq.engine.judging.answer_judge import judge_run, load_rubric
from psyq.engine.results.run import open_run
from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, load_lexicon
from stub_server import StubServer
from test_administer import chat_requests, run, write_study

ROOT = Path(__file__).resolve().parents[1]
LEAS_RUBRIC = ROOT / "instruments" / "rubrics" / "leas_level.yaml"
SCENES = ROOT / "tests" / "data" / "mini_scenes.yaml"
ANSWERS = {"birthday": "You: I'd feel hurt and a bit angry.\nOther: embarrassed when she remembers.",
           "credit": "You: furious.\nOther: smug, and a bit guilty.",
           "pregnant": "You: I'd think it was great, honestly.\nOther: tired."}


def scene_run(tmp_path: Path):
    """A finished run of the three mini scenes, one respondent, answers scripted above."""
    def answer(body):
        return next(v for k, v in ANSWERS.items() if k in body["messages"][-1]["content"])
    with StubServer(answer=answer) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}],
                                 instrument=SCENES), tmp_path / "runs")
    assert result.counts == {"answered": 3}
    return result.run_dir.path


def judge_config(url: str, **extra) -> BackendConfig:
    return BackendConfig(id="judge", kind="openai", base_url=url, model="stub-model", concurrency=2,
                         max_retries=0, backoff_s=0.01, timeout_s=2, **extra)


# Judge levels scripted per answer (what a careful judge would say under the rubric).
JUDGE_LEVELS = {"hurt and a bit angry": 4, "embarrassed when she remembers": 3, "furious": 3,
                "smug, and a bit guilty": 4, "think it was great": 0, "tired": 1}


def json_judge(body) -> str:
    prompt = body["messages"][-1]["content"]
    answer = prompt.split('Answer: "', 1)[1].split('"', 1)[0]
    level = next(v for k, v in JUDGE_LEVELS.items() if k in answer)
    return json.dumps({"level": level})


def test_rubrics_load_and_render_every_level():
    rubric = load_rubric(LEAS_RUBRIC)
    assert [o.value for o in rubric.scale] == [0, 1, 2, 3, 4]
    assert rubric.levels_text().count("\n") == 4
    assert [o.value for o in load_rubric(ROOT / "instruments" / "rubrics" / "ea_similarity.yaml").scale] == [0, 1, 2]


def test_a_bad_rubric_names_file_line_and_field(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text(LEAS_RUBRIC.read_text().replace("Answer: \"{answer}\"", "Answer: \"{reply}\"")
                   .replace("  2: \"Only an action", "  7: \"Only an action"))
    with pytest.raises(InputError) as err:
        load_rubric(bad)
    text = str(err.value)
    assert "unknown placeholder(s) {reply}" in text and "consecutive" in text
    assert f"{bad}:" in text
    assert main(["judge", str(tmp_path), "--rubric", str(bad)]) == 2


def test_judge_json_levels_are_stored_beside_the_answers_and_not_resent(tmp_path):
    run_path = scene_run(tmp_path)
    rubric = load_rubric(LEAS_RUBRIC)
    with StubServer(answer=json_judge) as stub:
        result = asyncio.run(judge_run(run_path, judge_config(stub.url), rubric, "json", log=lambda m: None))
        first = len(chat_requests(stub))
        again = asyncio.run(judge_run(run_path, judge_config(stub.url), rubric, "json", log=lambda m: None))
        second = len(chat_requests(stub)) - first
    # 3 scenes × (self, other) = 6 answers with text: 6 requests, then none on the rerun.
    assert (result.tasks, result.already, result.counts) == (6, 0, {"answered": 6})
    assert first == 6 and second == 0 and again.already == 6
    judged = open_run(run_path).judgements.set_index("item_id")["level"].to_dict()
    assert judged == {"s1:self": 4, "s1:other": 3, "s2:self": 3, "s2:other": 4, "s3:self": 0, "s3:other": 1}
    # The answers themselves are untouched.
    table = export_table(run_path).set_index("item_id")
    assert table.loc["s2:other", "text"] == "smug, and a bit guilty."


def test_judge_logprob_levels_and_failed_judgements_are_retried(tmp_path):
    run_path = scene_run(tmp_path)
    rubric = load_rubric(LEAS_RUBRIC)
    with StubServer(faults=["500"]) as stub:     # the first request fails (no retries allowed)
        result = asyncio.run(judge_run(run_path, judge_config(stub.url), rubric, "logprobs", log=lambda m: None))
    assert result.counts == {"answered": 5, "failed": 1}
    with StubServer() as stub:
        result = asyncio.run(judge_run(run_path, judge_config(stub.url), rubric, "logprobs", log=lambda m: None))
        assert len(chat_requests(stub)) == 1     # only the failed one is asked again
    assert result.counts == {"answered": 6}
    # The stub's first-token distribution: "3" .30, "4" .25, "2" .20, "1" .10, " The" .10, "I" .05.
    # Over the levels 0-4: 0 has no token; renormalised by .85 -> most likely level 3 everywhere.
    with sqlite3.connect(run_path / "run.sqlite") as db:
        rows = db.execute("SELECT level, distribution, request FROM judgements").fetchall()
    assert {r[0] for r in rows} == {3}
    dist = json.loads(rows[0][1])
    assert dist["3"] == pytest.approx(0.30 / 0.85) and dist["0"] == 0.0
    request = json.loads(rows[0][2])
    assert request["max_tokens"] == 1 and request["messages"][-1]["content"].endswith("Level:")


def test_level_agreement_by_hand():
    a, b = [0, 1, 2, 3, 4], [0, 2, 2, 3, 3]
    got = level_agreement(a, b)
    # exact: 3 of 5 equal; within one: all; mean difference (0+1+0+0-1)/5 = 0.
    assert (got["n"], got["exact"], got["within_one"], got["mean_difference"]) == (5, 0.6, 1.0, 0.0)
    # Pearson: deviations a (-2,-1,0,1,2), b (-2,0,0,1,1); Σab = 7, Σa² = 10, Σb² = 6 -> 7/√60.
    assert got["pearson_r"] == pytest.approx(7 / np.sqrt(60))
    # ICC(A,1) from the two-way ANOVA (Shrout & Fleiss / McGraw & Wong): row means 0, 1.5, 2, 3, 3.5
    # (grand mean 2): SSR = 2 × 7.5 = 15, MSR = 3.75; column means 2 and 2: MSC = 0; SST = 16,
    # SSE = 1, MSE = 1/4. ICC = (MSR − MSE) / (MSR + MSE + 2 (MSC − MSE) / 5) = 3.5 / 3.9.
    assert got["icc_a1"] == pytest.approx(3.5 / 3.9)
    flat = level_agreement([3, 3, 3], [3, 4, 3])
    assert np.isnan(flat["pearson_r"]) and np.isnan(flat["icc_a1"]) and flat["exact"] == pytest.approx(2 / 3)


def test_judge_against_lexicon_in_the_report(tmp_path):
    run_path = scene_run(tmp_path)
    with StubServer(answer=json_judge) as stub:
        asyncio.run(judge_run(run_path, judge_config(stub.url), load_rubric(LEAS_RUBRIC), "json", log=lambda m: None))
    table = export_table(run_path)
    lexicon = lexicon_answer_levels(table, load_lexicon(DEFAULT_LEXICON)).set_index("item_id")["lexicon_level"]
    # The shipped lexicon's entries for these words, by its rules: hurt + angry (two families) 4;
    # embarrassed 3; furious 3; smug (pride) + guilty (guilt) 4; "great" an undifferentiated state 2
    # ("think" is a cognitive word, 0); tired a bodily state 1.
    order = ["s1:self", "s1:other", "s2:self", "s2:other", "s3:self", "s3:other"]
    assert [lexicon[k] for k in order] == [4, 3, 3, 4, 2, 1]
    got = judge_lexicon_agreement(lexicon_answer_levels(table, load_lexicon(DEFAULT_LEXICON)),
                                  open_run(run_path).judgements).iloc[0]
    # The judge (scripted above) says 4, 3, 3, 4, 0, 1: one answer two levels apart.
    assert (got["n"], got["exact"], got["within_one"]) == (6, pytest.approx(5 / 6), pytest.approx(5 / 6))
    assert got["mean_difference"] == pytest.approx(-2 / 6)
    assert got["pearson_r"] == pytest.approx(np.corrcoef([4, 3, 3, 4, 2, 1], [4, 3, 3, 4, 0, 1])[0, 1])
    _, sections = build_sections(run_path)
    leas = next(s for s in sections if s.title.startswith("Emotional awareness"))
    assert any(title.startswith("Judge model against the lexicon") for title, _ in leas.tables)
    assert any("judge 'judge' (stub-model, rubric leas_level)" in r for r in leas.readings)


def test_a_judge_of_a_run_another_process_is_writing_refuses_and_sends_nothing(tmp_path):
    from psyq.engine.store.runlock import RunLock

    run_path = scene_run(tmp_path)
    with StubServer(answer=json_judge) as stub:
        # This test process holds the run's lock, as a `psyq run` (or judge) still writing would.
        with RunLock(run_path):
            code = main(["judge", str(run_path), "--rubric", str(LEAS_RUBRIC), "--base-url", stub.url,
                         "--model", "stub-model", "--answer", "json"])
            sent_while_locked = len(chat_requests(stub))
        # Released: the same command judges the 6 answers (3 scenes × self, other).
        assert main(["judge", str(run_path), "--rubric", str(LEAS_RUBRIC), "--base-url", stub.url,
                     "--model", "stub-model", "--answer", "json"]) == 0
        sent_after = len(chat_requests(stub))
    assert code == 5 and sent_while_locked == 0
    assert sent_after == 6
