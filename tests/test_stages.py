"""Multi-stage studies (engine/administer/plan.py, send.py): measure, imagine a situation, measure again, in one
conversation; stored stage by stage, resumed after SIGKILL with the history rebuilt from the store.

Real HTTP over loopback (tests/stub_server.py, in this process), `psyq run` in a subprocess that
is killed with SIGKILL, real SQLite. The stub's replies are chosen by the test (see `reply`), so
every expected score below is worked out by hand from them, not by the code under test.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from psyq.analysis.scoring.stage_scores import STAGE_SCORE_COLUMNS, load_stage_scores
from psyq.engine.files.errors import InputError
from psyq.engine.results.export import export_table
from psyq.engine.administer.run import administer
from psyq.engine.design.situations import load_situations
from psyq.engine.administer.plan import PLACEHOLDER, evoke_text, plan_chains, preview_trials
from psyq.engine.design.study import load_study
from stub_server import StubServer
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "stages"
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"   # items a-d, scale 1-7, a and c reverse-keyed

BEFORE = {"a": 1, "b": 2, "c": 3, "d": 4}
AFTER = {"a": 5, "b": 6, "c": 7, "d": 1}


def reply(body: dict) -> str:
    """The stub's answer: an evoke question gets a sentence; the measure before the situation
    (no "Situation:" anywhere in the conversation) BEFORE's values, the one after AFTER's."""
    messages = body["messages"]
    last = messages[-1]["content"]
    if last.startswith("Imagine that you are"):
        return f"I feel it strongly ({len(messages)} messages so far)."
    seen_situation = any("Situation:" in m["content"] for m in messages[:-1])
    values = AFTER if seen_situation else BEFORE
    return "\n".join(f"{k}: {v}" for k, v in values.items())


def write_study(tmp: Path, url: str, backend: dict | None = None, **changes) -> Path:
    for name in ("cohort_two.yaml", "situations_two.yaml"):
        shutil.copy(FIXTURES / name, tmp / name)
    study = yaml.safe_load((FIXTURES / "staged_study.yaml").read_text())
    study["instruments"] = [str(MINI)]
    study["backends"][0].update({"base_url": url, "concurrency": 1, "max_retries": 2, "backoff_s": 0.01,
                                 "timeout_s": 10, **(backend or {})})
    study.update(changes)
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def stage_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT s.trial_id, s.chain_id, s.stage, s.messages, s.reply, t.status, "
                         "json_extract(t.request, '$.seed') "
                         "FROM stage_trials s JOIN trials t USING (trial_id) ORDER BY s.chain_id, s.stage").fetchall()


def test_sigkill_between_stages_resumes_at_the_next_stage_with_the_stored_history(tmp_path):
    # 2 respondents x 2 situations = 4 conversations of 3 stages = 12 stage trials; one request at a
    # time, 0.3 s each, so the kill lands while one stage is in flight and the others are stored.
    with StubServer(answer=reply, latency_s=0.3) as stub:
        study = write_study(tmp_path, stub.url)
        cmd = [sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(tmp_path / "runs")]
        runner = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:   # wait until stages 0 and 1 of the first conversation are stored
            db = next((tmp_path / "runs").rglob("run.sqlite"), None) if (tmp_path / "runs").exists() else None
            if db is not None and _count(db) >= 2:
                break
            time.sleep(0.01)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        before = {r[0]: r for r in stage_rows(db)}
        assert 2 <= len(before) < 12
        sent_before = sum(r.path.endswith("/chat/completions") for r in stub.requests)
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        requests = [(r.body["messages"], r.body["seed"]) for r in stub.requests if r.path.endswith("/chat/completions")]
    rows = stage_rows(db)
    assert len(rows) == 12 and all(r[5] == "answered" for r in rows)
    # Each request -> its stored trial, by messages and seed (stage 0 asks the same question in the
    # conversations of both situations of a respondent; the seed, from the trial id, tells them apart).
    by_request = {(json.dumps(json.loads(r[3])), r[6]): r[0] for r in rows}
    assert len(by_request) == 12
    sent_ids = [by_request[(json.dumps(m), seed)] for m, seed in requests]   # KeyError: a request nobody stored
    second = sent_ids[sent_before:]
    assert not set(second) & set(before)                 # no stage stored before the kill was asked again
    assert len(second) == len(set(second))               # nor any stage twice in the rerun
    assert len(second) == 12 - len(before)               # every other stage once (the one in flight again)
    # History: stage k sent exactly stage k-1's messages, its stored reply, then stage k's own question.
    study_obj = load_study(study)
    own = {s.trial.trial_id: s.trial.request.messages[-1] for c in plan_chains(study_obj, {"stub": _backend(study_obj)})
           for s in c.steps}
    chains: dict[str, list] = {}
    for r in rows:
        chains.setdefault(r[1], []).append(r)
    assert len(chains) == 4
    for stages in chains.values():
        assert [r[2] for r in stages] == [0, 1, 2]
        for prev, cur in zip(stages, stages[1:]):
            expected = json.loads(prev[3]) + [{"role": "assistant", "content": prev[4]}] + [own[cur[0]]]
            assert json.loads(cur[3]) == expected
        # The evoke stage's question is the situation's text in the evoke prompt (engine/administer/plan.py).
        assert json.loads(stages[1][3])[-1]["content"].startswith("Imagine that you are")


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM stage_trials").fetchone()[0]
    except sqlite3.Error:
        return 0


def _backend(study):
    from psyq.engine.backends import make_backend
    return make_backend(study.spec.backends[0], log=lambda m: None)


def test_stage_scores_before_and_after_by_hand(tmp_path):
    with StubServer(answer=reply) as stub:
        study = load_study(write_study(tmp_path, stub.url, protocol={"answer": "text", "seed": 3,
                                                                     "option_order": "counterbalanced"}))
        result = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None))
    assert result.counts == {"answered": 12}
    table = export_table(result.run_dir.path)
    assert {"stage", "situation_id"} <= set(table.columns) and set(table["stage"]) == {0, 2}
    frame = load_stage_scores(result.run_dir.path)
    assert list(frame.columns) == STAGE_SCORE_COLUMNS
    # By hand, scale 1-7 (reverse: 8 - x), a and c reversed:
    #   before a=1,b=2,c=3,d=4 -> keyed 7,2,5,4: X=a+b=9, Y=mean(b,c,d)=11/3, Z=sum=18
    #   after  a=5,b=6,c=7,d=1 -> keyed 3,6,1,1: X=9,     Y=8/3,             Z=11
    expected = {("before", "X"): 9, ("before", "Y"): 11 / 3, ("before", "Z"): 18,
                ("after", "X"): 9, ("after", "Y"): 8 / 3, ("after", "Z"): 11}
    assert len(frame) == 2 * 2 * 2 * 3   # respondents x situations x measure stages x subscales
    for (phase, subscale), rows in frame.groupby(["phase", "subscale"]):
        assert rows["score"].tolist() == pytest.approx([expected[(phase, subscale)]] * 4)
    assert set(frame.loc[frame["phase"] == "before", "stage"]) == {0}
    assert dict(zip(frame["situation_id"], frame["emotion"])) == {"anger_01": "anger", "joy_01": "joy"}


def test_a_failed_stage_stops_its_conversation_and_the_rerun_sends_it_with_the_same_history(tmp_path):
    # The first 8 requests fail (500; 1 try + 1 retry per stage): with one request at a time each
    # of the 4 conversations stops at stage 0, so no later stage is sent in the first run.
    with StubServer(answer=reply, faults=["500"] * 8) as stub:
        study = load_study(write_study(tmp_path, stub.url, backend={"max_retries": 1}))
        first = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None))
        assert len(stub.requests) == 4 * 2
        assert first.counts == {"failed": 4}
        assert any("stopped at a stage that failed" in n for n in first.notes)
        second = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None))
        # The rerun: the 4 failed stage-0 trials again, then stages 1 and 2 of each: 12 requests.
        assert len(stub.requests) == 8 + 12
    assert second.run_dir == first.run_dir and second.counts == {"answered": 12}


def test_plan_preview_shows_history_with_placeholders(tmp_path):
    study = load_study(write_study(tmp_path, "http://127.0.0.1:9/v1"))
    chains = plan_chains(study, {"stub": _backend(study)})
    shown = preview_trials(chains[:1])
    situation = chains[0].steps[1].situation
    last = shown[2].request.messages
    # system, measure, <reply 0>, evoke, <reply 1>, measure
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[2]["content"] == PLACEHOLDER.format(k=0) and last[4]["content"] == PLACEHOLDER.format(k=1)
    assert last[3]["content"] == evoke_text(situation)
    out = psyq_in_process("plan", tmp_path / "study.yaml", "--tokenizer", "approximate", "--runs-dir", tmp_path / "runs")
    assert out.returncode == 0, out.stderr
    assert "<reply of stage 1>" in out.stdout and "placeholders" in out.stdout


def test_trial_ids_are_distinct_per_stage_and_situation(tmp_path):
    study = load_study(write_study(tmp_path, "http://127.0.0.1:9/v1"))
    ids = [s.trial.trial_id for c in plan_chains(study, {"stub": _backend(study)}) for s in c.steps]
    # Stages 0 and 2 ask the same question of the same respondent: only the stage index and the
    # situation tell them apart, so 12 distinct ids show both are in the id.
    assert len(ids) == 12 and len(set(ids)) == 12


def _problems(tmp_path: Path, **changes) -> list[str]:
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", **changes)
    with pytest.raises(InputError) as err:
        load_study(path)
    return [f"{p.line}:{p.column}: {p.message}" for p in err.value.problems]


STAGES = [{"measure": "mini"}, {"evoke": "situations"}, {"measure": "mini"}]


def test_stage_checks_name_the_line(tmp_path):
    out = _problems(tmp_path, stages=[{"measure": "nope"}, {"evoke": "situations"}, {"measure": "mini"}])
    assert any("'nope' is not an instrument of this study" in p for p in out)
    out = _problems(tmp_path, stages=[{"measure": "mini"}, {"measure": "mini"}])
    assert any("no `evoke: situations` stage" in p for p in out)
    out = _problems(tmp_path, stages=[{"evoke": "situations"}, {"measure": "mini"}])
    assert any("needs a `measure:` stage before it and one after it" in p for p in out)
    out = _problems(tmp_path, stages=STAGES, situations={"file": "absent.yaml"})
    assert any("situation set file not found" in p for p in out)
    out = _problems(tmp_path, stages=STAGES, situations={"file": "situations_two.yaml",
                                                         "per_respondent": {"sample": 3, "seed": 1}})
    assert any("a sample of 3 situations per respondent, but the set has only 2" in p for p in out)
    # The study file's own lines: the stages block starts on a known line of the written YAML.
    text = (tmp_path / "study.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if t.startswith("stages:"))
    out = _problems(tmp_path, stages=[{"measure": "nope"}, {"evoke": "situations"}, {"measure": "mini"}])
    assert any(p.startswith(f"{line + 1}:") for p in out), (line, out)


def test_cli_validate_exit_2_with_file_line_column(tmp_path):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", stages=[{"measure": "mini"}, {"measure": "mini"}])
    out = psyq_in_process("validate", path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{path}:" in out.stderr and "evoke" in out.stderr


def test_seeded_sample_of_situations_per_respondent(tmp_path):
    from psyq.engine.administer.plan import situations_for
    study = load_study(write_study(tmp_path, "http://127.0.0.1:9/v1",
                                   situations={"file": "situations_two.yaml", "per_respondent": {"sample": 1, "seed": 5}}))
    picked = [[s.id for s in situations_for(study, p)] for p in study.cohort.personas]
    assert all(len(p) == 1 for p in picked)
    again = load_study(tmp_path / "study.yaml")
    assert picked == [[s.id for s in situations_for(again, p)] for p in again.cohort.personas]   # seeded


def test_situation_set_loader_and_errors(tmp_path):
    sset = load_situations(FIXTURES / "situations_two.yaml")
    assert [s.emotion for s in sset.situations] == ["anger", "joy"] and sset.content_source == "psyq"
    bad = tmp_path / "bad.yaml"
    bad.write_text("psyq: situations/1\nid: x\ncontent_source: psyq\nsource: us\nsituations:\n"
                   "  - {id: a, emotion: joy, text: One}\n  - {id: a, emotion: joy, text: Two}\n"
                   "  - {id: b, emotion: joy}\n")
    with pytest.raises(InputError) as err:
        load_situations(bad)
    found = {(p.line, p.message.split(" (")[0]) for p in err.value.problems}
    # Line 8 (the third situation) lacks text; the duplicate id is found only once the file parses.
    assert any(line == 8 for line, _ in found), found
    out = psyq_in_process("schema", "situations")
    assert out.returncode == 0 and json.loads(out.stdout)["title"] == "psyq situation set (format situations/1)"
    bad.write_text("psyq: situations/1\nid: x\ncontent_source: psyq\nsource: us\nsituations:\n"
                   "  - {id: a, emotion: joy, text: One}\n  - {id: a, emotion: joy, text: Two}\n")
    out = psyq_in_process("validate", bad)
    assert out.returncode == 2 and f"{bad}:7:" in out.stderr and "used more than once" in out.stderr


def test_json_answers_in_stages_schema_only_on_measure_stages(tmp_path):
    def json_reply(body: dict) -> str:
        # A measure stage (JSON schema sent) gets BEFORE's values as JSON; an evoke stage text.
        if body.get("response_format"):
            return json.dumps(BEFORE)
        return "I would be upset."
    with StubServer(answer=json_reply) as stub:
        study = load_study(write_study(tmp_path, stub.url, protocol={"answer": "json", "seed": 3}))
        result = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None))
        bodies = [r.body for r in stub.requests if r.path.endswith("/chat/completions")]
    assert result.counts == {"answered": 12}
    evokes = [b for b in bodies if b["messages"][-1]["content"].startswith("Imagine")]
    assert len(evokes) == 4 and not any("response_format" in b for b in evokes)
    assert sum("response_format" in b for b in bodies) == 8
    table = export_table(result.run_dir.path)
    # Every measure answer is BEFORE's value for its item (4 items x 2 measures x 4 conversations).
    assert len(table) == 32 and (table["value"] == table["item_id"].map(BEFORE)).all()


def test_report_of_a_staged_run_shows_change_and_compares_it_with_humans(tmp_path):
    # The stub's replies make every conversation change the same way (see `reply` and the hand
    # computation in test_stage_scores_before_and_after_by_hand): X 9 -> 9, Y 11/3 -> 8/3, Z 18 -> 11,
    # so Z changes by -7 for each of 2 respondents in each emotion (anger, joy).
    from psyq.analysis.report import build_sections, write_report
    from psyq.analysis.report.sections.change import TITLE

    with StubServer(answer=reply) as stub:
        study = load_study(write_study(tmp_path, stub.url))
        run_dir = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None)).run_dir.path
    # Humans (made up for the test): anger, Z changes by -2, -3, -4: mean -3, SD 1, n 3.
    humans = tmp_path / "humans.csv"
    humans.write_text("respondent_id,emotion,situation_id,subscale,before,after\n"
                      "h1,anger,,Z,20,18\nh2,anger,,Z,20,17\nh3,anger,,Z,20,16\n")
    _, sections = build_sections(run_dir, human_change=humans)
    # The verdict leads: the change of each emotion, personas against people, with its mark.
    from psyq.analysis.report.sections.verdict import TITLE as VERDICT
    assert [s.title for s in sections] == [VERDICT, "Study", "Missing answers and refusals", TITLE, "Materials"]
    (_, card), = sections[0].tables
    assert set(card["criterion"]) == {"change"} and card["mark"].notna().all()
    assert any(r.startswith("Reproducing people's change") for r in sections[0].readings), sections[0].readings
    tables = dict(sections[3].tables)
    paired = next(frame for caption, frame in tables.items() if caption.startswith("Paired change"))
    z_anger = paired[(paired["subscale"] == "Z") & (paired["emotion"] == "anger")].iloc[0]
    assert z_anger["n"] == 2 and z_anger["mean_change"] == pytest.approx(-7)
    assert z_anger["t"] != z_anger["t"]   # NaN: every change is -7, no variance, so no t (said in `note`)
    compared = tables["Change of the cohort against humans' change"]
    row = compared[(compared["subscale"] == "Z") & (compared["emotion"] == "anger")].iloc[0]
    # Welch by hand: the cohort's changes have no variance, so SE = sqrt(1/3) = 0.5774 and df = 3 - 1
    # = 2; t_.975(2) = 4.3027; difference -7 - (-3) = -4, CI -4 -/+ 2.4841 = [-6.484, -1.516]:
    # it excludes 0 and the cohort changed more than humans in the same direction.
    assert row["diff"] == pytest.approx(-4)
    assert (row["diff_low"], row["diff_high"]) == pytest.approx((-6.4841, -1.5159), abs=1e-3)
    assert row["flag"] == "over-reacting"
    html, _ = write_report(run_dir, human_change=humans)
    assert TITLE in html.read_text(encoding="utf-8")
    # The methods paragraph and the run table describe the stages, not the per-item default of
    # `presentation` (which a measure stage does not follow: it asks the instrument whole).
    methods = (run_dir / "methods.md").read_text(encoding="utf-8")
    assert "one conversation per situation in which they rated mini, then imagined being in a situation, " \
           "then rated mini" in methods
    assert "the set test_two (2 situations" in methods and "in a request of its own" not in methods
    assert "stages=measure mini → evoke (situation) → measure mini" in html.read_text(encoding="utf-8")


def test_human_change_csv_is_refused_for_a_run_without_stages(tmp_path):
    from psyq.analysis.report import build_sections

    study_path = write_study(tmp_path, "http://127.0.0.1:9/v1")
    spec = yaml.safe_load(study_path.read_text())
    del spec["stages"], spec["situations"]          # the same study, asked the plain way
    with StubServer(answer=lambda body: "a: 1\nb: 2\nc: 3\nd: 4") as stub:
        spec["backends"][0]["base_url"] = stub.url
        study_path.write_text(yaml.safe_dump(spec, sort_keys=False))
        run_dir = asyncio.run(administer(load_study(study_path), tmp_path / "runs", log=lambda m: None)).run_dir.path
    humans = tmp_path / "humans.csv"
    humans.write_text("respondent_id,emotion,situation_id,subscale,before,after\nh1,anger,,Z,20,18\n")
    build_sections(run_dir)                          # the run itself reports fine
    with pytest.raises(InputError, match="applies to runs with stages"):
        build_sections(run_dir, human_change=humans)


def test_psyq_scores_of_a_staged_run_writes_the_scores_per_stage(tmp_path):
    # The stub's replies give the hand-computed scores of test_stage_scores_before_and_after_by_hand:
    # before X 9, Y 11/3, Z 18; after X 9, Y 8/3, Z 11; 2 respondents x 2 situations each.
    import csv

    with StubServer(answer=reply) as stub:
        study = load_study(write_study(tmp_path, stub.url))
        run_dir = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None)).run_dir.path
    out = tmp_path / "stage_scores.csv"
    done = psyq_in_process("scores", run_dir, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "one row per backend x respondent x repeat x situation x stage x subscale" in done.stderr
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == STAGE_SCORE_COLUMNS and len(rows) == 2 * 2 * 2 * 3
    expected = {("before", "X"): 9, ("before", "Y"): 11 / 3, ("before", "Z"): 18,
                ("after", "X"): 9, ("after", "Y"): 8 / 3, ("after", "Z"): 11}
    for row in rows:
        assert float(row["score"]) == pytest.approx(expected[(row["phase"], row["subscale"])])


def test_logprobs_stages_ask_the_measure_item_by_item_in_the_conversation(tmp_path):
    # answer: logprobs reads one token per request, so each measure stage is asked item by item
    # (4 items of mini) inside the conversation: 4 + 1 + 4 = 9 steps per conversation, 2
    # respondents x 2 situations = 36 requests. The stub answers every logprobs request "3" with
    # the same distribution (top option "3"), so with most_likely every item is 3. By hand (scale
    # 1-7, a and c reversed: 8 - 3 = 5): X = a + b = 5 + 3 = 8, Y = mean(b, c, d) = 11/3,
    # Z = sum = 16, before and after.
    with StubServer(answer=reply) as stub:
        study = load_study(write_study(tmp_path, stub.url, protocol={"answer": "logprobs", "seed": 3,
                                                                     "logprob_answer": "most_likely"}))
        result = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None))
        bodies = [r.body for r in stub.requests if r.path.endswith("/chat/completions")]
    assert result.counts == {"answered": 36} and len(bodies) == 36
    evokes = [b for b in bodies if b["messages"][-1]["content"].startswith("Imagine that you are")]
    assert len(evokes) == 4 and not any(b.get("logprobs") for b in evokes)   # the evoke reply is free text
    assert all(b.get("logprobs") and b["max_tokens"] == 1 for b in bodies if b not in evokes)
    rows = stage_rows(result.run_dir.path / "run.sqlite")
    chains: dict[str, list] = {}
    for r in rows:
        chains.setdefault(r[1], []).append(r)
    assert len(chains) == 4
    for steps in chains.values():
        steps.sort(key=lambda r: len(json.loads(r[3])))          # each step's history is one turn longer
        assert [r[2] for r in steps] == [0] * 4 + [1] + [2] * 4
        for prev, cur in zip(steps, steps[1:]):
            # the earlier messages, the model's own reply token, then this step's own question
            assert json.loads(cur[3])[:-1] == json.loads(prev[3]) + [{"role": "assistant", "content": prev[4]}]
        assert [r[4] for r in steps[:4] + steps[5:]] == ["3"] * 8      # the reply token carried as history
        assert json.loads(steps[4][3])[-1]["content"].startswith("Imagine that you are")
    frame = load_stage_scores(result.run_dir.path)
    expected = {"X": 8, "Y": 11 / 3, "Z": 16}
    assert len(frame) == 2 * 2 * 2 * 3
    for row in frame.itertuples():
        assert row.score == pytest.approx(expected[row.subscale])
