"""Rated replies: response items answered over real HTTP (the stub on 127.0.0.1), replies judged
blind on every dimension of a rubric/2 rubric with resume, reference replies and human ratings
imported from CSV (bad files: exit 2, nothing written), and the blind rating sheet.

Expected levels come from the stub judge's scripted rule (:func:`scripted_level`, applied by the
test to the stored target texts), never from the code under test.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from psyq.engine.backends import BackendConfig
from psyq.cli import main
from psyq.engine.files.errors import InputError
from psyq.engine.store.ratings import RatingTarget, put_targets, read_ratings, read_targets, response_id_of
from psyq.engine.kinds.response.rubrics import combine_levels, load_multi_rubric
from psyq.engine.store.runlock import RunLock
from psyq.engine.store.run_store import RunStore
from psyq.engine.design.study import load_study
from psyq.engine.judging.reply_judge import judge_targets
from stub_server import StubServer
from test_administer import chat_requests, run, write_study

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = ROOT / "instruments" / "help_messages_psyq.yaml"
FIXTURES = ROOT / "tests" / "fixtures" / "response"
REFERENCE_CSV = FIXTURES / "reference_replies.csv"
RATINGS_CSV = FIXTURES / "human_ratings.csv"
DIMENSIONS = ["cognitive", "emotional", "behavioural"]
N_MESSAGES = 8   # items of help_messages_psyq.yaml
PERSONAS = [{"id": "ottoline", "attributes": {"age": 44, "occupation": "beekeeper"}},
            {"id": "barnaby", "attributes": {"age": 71, "occupation": "lighthouse keeper"}}]


def persona_reply(body) -> str:
    """The stub respondent's reply: neutral words, the message's first words and the length of the
    persona's system prompt (so every persona x message reply differs, without naming the persona)."""
    prompt = body["messages"][-1]["content"]
    message = prompt.split('"""', 2)[1].split()[:4]
    return ("That sounds really hard. Thank you for telling me about " + " ".join(message).lower()
            + f". Take care ({len(body['messages'][0]['content'])}).")


def replies_run(tmp_path: Path) -> Path:
    """A finished run: two personas x eight messages, every reply answered."""
    with StubServer(answer=persona_reply) as stub:
        result = run(write_study(tmp_path, stub.url, personas=PERSONAS, instrument=MESSAGES,
                                 protocol={"answer": "text"}), tmp_path / "runs")
    assert result.counts == {"answered": len(PERSONAS) * N_MESSAGES}
    return result.run_dir.path


def scripted_level(reply: str, dimension: str) -> int:
    """The stub judge's rule: 1 + (characters of the reply + dimension's position) mod 3."""
    return 1 + (len(reply) + DIMENSIONS.index(dimension)) % 3


def judge_answer(body) -> str:
    prompt = body["messages"][-1]["content"]
    reply = prompt.split('Someone replied:\n"', 1)[1].split('"\n\nRate the reply', 1)[0]
    dimension = next(d for d in DIMENSIONS if f"Rate the reply's {d} empathy" in prompt)
    return json.dumps({"level": scripted_level(reply, dimension)})


def judge_config(url: str, judge_id: str = "j1", **extra) -> BackendConfig:
    return BackendConfig(id=judge_id, kind="openai", base_url=url, model="stub-judge", concurrency=1,
                         max_retries=0, backoff_s=0.01, timeout_s=2, **extra)


def judge(run_dir: Path, url: str, judge_id: str = "j1", seed: int = 0):
    rubric = load_multi_rubric("empathy_ceb")
    return asyncio.run(judge_targets(run_dir, judge_config(url, judge_id), rubric, "json", order_seed=seed,
                                     log=lambda m: None))


def count(run_dir: Path, table: str) -> int:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        has = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] if has else 0


# ---------------------------------------------------------------- the kind and the study


def test_replies_are_stored_whole_and_the_prompt_asks_for_a_reply(tmp_path):
    with StubServer(answer=persona_reply) as stub:
        result = run(write_study(tmp_path, stub.url, personas=PERSONAS[:1], instrument=MESSAGES,
                                 protocol={"answer": "text"}), tmp_path / "runs")
    first = chat_requests(stub)[0].body["messages"]
    # The persona is the system prompt; the user turn carries the message verbatim and asks for a reply.
    assert first[0]["role"] == "system" and "beekeeper" in first[0]["content"]
    assert "Write your reply to this person, as yourself" in first[-1]["content"]
    with sqlite3.connect(result.run_dir.database) as db:
        texts = [t for (t,) in db.execute("SELECT text FROM answers ORDER BY item_id")]
    assert len(texts) == N_MESSAGES and texts[0].startswith("That sounds really hard. Thank you for telling me")


@pytest.mark.parametrize("mode", ["json", "logprobs"])
def test_a_study_asking_replies_as_json_or_logprobs_is_refused(tmp_path, mode):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", personas=PERSONAS, instrument=MESSAGES,
                       protocol={"answer": mode})
    with pytest.raises(InputError) as err:
        load_study(path)
    assert f"response items are answered in free text, so answer: {mode} is not meaningful" in str(err.value)
    assert "study.yaml:" in str(err.value)


def test_the_shipped_study_and_files_validate():
    assert main(["validate", str(ROOT / "studies" / "rated_replies.yaml"), str(MESSAGES),
                 str(ROOT / "instruments" / "rubrics" / "empathy_ceb.yaml"),
                 str(ROOT / "instruments" / "rubrics" / "epitome.yaml")]) == 0


# ---------------------------------------------------------------- rubric/2


def test_a_bad_multi_dimension_rubric_names_file_line_and_field(tmp_path):
    text = (ROOT / "instruments" / "rubrics" / "empathy_ceb.yaml").read_text()
    bad = tmp_path / "r.yaml"
    bad.write_text(text.replace("overall: {mean: [cognitive, emotional, behavioural]}",
                                "overall: {mean: [cognitive, affective]}")
                   .replace('      2: "Some warmth', '      5: "Some warmth'))
    with pytest.raises(InputError) as err:
        load_multi_rubric(bad)
    lines = str(err.value).splitlines()
    assert any(line.startswith(f"{bad}:") and "combine.overall.mean" in line and "affective" in line for line in lines)
    assert any("dimensions[1].levels" in line and "consecutive" in line for line in lines)


def test_overall_is_the_mean_of_all_three_or_nothing():
    rubric = load_multi_rubric("empathy_ceb")
    rows = pd.DataFrame({"response_id": ["a", "a", "a", "b", "b"], "rater_kind": "human",
                         "rater_id": "h1", "dimension": DIMENSIONS + DIMENSIONS[:2],
                         "level": [3.0, 2.0, 2.0, 1.0, float("nan")]})
    overall = combine_levels(rubric, rows).set_index("response_id")
    # a: (3 + 2 + 2) / 3 by hand; b: emotional missing and behavioural absent -> no overall.
    assert overall.loc["a", "level"] == pytest.approx(7 / 3)
    assert pd.isna(overall.loc["b", "level"]) and overall.loc["b", "status"] == "incomplete"
    assert "emotional, behavioural" in overall.loc["b", "reason"]


# ---------------------------------------------------------------- judging


def test_every_target_is_rated_on_every_dimension_blind_and_shuffled(tmp_path):
    run_dir = replies_run(tmp_path)
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0
    with StubServer(answer=judge_answer) as stub:
        result = judge(run_dir, stub.url)
    n_targets = len(PERSONAS) * N_MESSAGES + 3
    assert (result.targets, result.requests, result.already) == (n_targets, n_targets * 3, 0)
    assert result.counts == {"answered": n_targets * 3}
    requests = chat_requests(stub)
    assert len(requests) == n_targets * 3
    with RunStore(run_dir / "run.sqlite") as store:
        ratings, targets = read_ratings(store, "empathy_ceb"), read_targets(store)
    # Every target x dimension once, with the level the scripted judge gives its stored text.
    text = dict(zip(targets["response_id"], targets["text"]))
    assert len(ratings) == n_targets * 3
    assert set(zip(ratings["response_id"], ratings["dimension"])) == {(r, d) for r in text for d in DIMENSIONS}
    for row in ratings.itertuples():
        assert row.level == scripted_level(text[row.response_id], row.dimension)
    assert set(ratings["rater_kind"]) == {"judge"} and set(ratings["rater_id"]) == {"j1"}
    # Blind: no request names a persona, an author, a source or the run's words for them; the
    # system message is the rubric's, not a persona's.
    for request in requests:
        blob = json.dumps(request.body["messages"]).lower()
        for word in ("ottoline", "barnaby", "beekeeper", "clinician", "made up for psyq", "reference", "persona",
                     "source", "author", "clin_0"):
            assert word not in blob, word
        assert request.body["messages"][0]["content"].startswith("You rate replies written to people")
    # Not grouped: the reference replies' requests are spread among the persona replies', and
    # dimensions alternate rather than coming in blocks.
    reference_texts = set(targets.loc[targets["source"] == "reference", "text"])
    positions = [k for k, r in enumerate(requests)
                 if any(t in r.body["messages"][-1]["content"] for t in reference_texts)]
    assert len(positions) == 9 and positions[-1] - positions[0] > 9
    dims = [next(d for d in DIMENSIONS if f"{d} empathy" in r.body["messages"][-1]["content"]) for r in requests]
    assert dims[:n_targets] != sorted(dims[:n_targets])
    # Rerun: nothing more is sent; a second judge rates everything under its own id.
    with StubServer(answer=judge_answer) as again:
        second = judge(run_dir, again.url)
        other = judge(run_dir, again.url, judge_id="j2")
    assert second.already == n_targets * 3
    assert len(chat_requests(again)) == n_targets * 3   # all of them j2's
    assert other.counts == {"answered": n_targets * 3}


def test_a_stopped_judge_resumes_and_never_asks_twice(tmp_path):
    run_dir = replies_run(tmp_path)
    n = len(PERSONAS) * N_MESSAGES * 3
    # The first five requests fail (HTTP 500, no retries): stored as failed, asked again on the rerun.
    with StubServer(answer=judge_answer, faults=["500"] * 5) as stub:
        first = judge(run_dir, stub.url)
    assert first.counts == {"answered": n - 5, "failed": 5}
    failed_prompts = [r.body["messages"][-1]["content"] for r in chat_requests(stub)[:5]]
    with StubServer(answer=judge_answer) as stub2:
        second = judge(run_dir, stub2.url)
    resent = [r.body["messages"][-1]["content"] for r in chat_requests(stub2)]
    assert sorted(resent) == sorted(failed_prompts)
    assert second.counts == {"answered": n} and second.already == n - 5


def test_a_second_judge_process_is_refused_while_the_run_is_locked(tmp_path, capsys):
    run_dir = replies_run(tmp_path)
    with StubServer(answer=judge_answer) as stub, RunLock(run_dir):
        code = main(["judge", str(run_dir), "--rubric", "empathy_ceb", "--base-url", stub.url,
                     "--model", "stub-judge", "--answer", "json"])
        assert code == 5 and chat_requests(stub) == []
    assert "in progress" in capsys.readouterr().err


def test_the_judge_command_line_rates_and_old_rubrics_still_judge_scenes(tmp_path, capsys):
    run_dir = replies_run(tmp_path)
    with StubServer(answer=judge_answer) as stub:
        assert main(["judge", str(run_dir), "--rubric", "empathy_ceb", "--base-url", stub.url, "--model",
                     "stub-judge", "--answer", "json", "--judge-id", "cli_judge"]) == 0
    out = capsys.readouterr().out
    assert "16 targets (16 persona replies added now) x 3 dimensions = 48 ratings, 0 rated before; now answered 48" \
        in out
    assert count(run_dir, "judgements") == 0   # rubric/2 ratings never go to the rubric/1 table


# ---------------------------------------------------------------- imports and the rating sheet


def test_reference_replies_and_human_ratings_import(tmp_path, capsys):
    run_dir = replies_run(tmp_path)
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0   # again: nothing new
    assert "3 reference replies read, 0 new (3 imported before)" in capsys.readouterr().err
    assert main(["import", "ratings", str(RATINGS_CSV), "--run", str(run_dir), "--rubric", "empathy_ceb"]) == 0
    with RunStore(run_dir / "run.sqlite") as store:
        targets, ratings = read_targets(store), read_ratings(store)
    ref = targets[targets["source"] == "reference"].set_index("reply_id")
    assert ref.loc["clin_02", "response_id"] == response_id_of("reference/clin_02")
    assert ref.loc["clin_01", "detail"] == {"source": "made up for psyq tests", "author": "clinician A"}
    # 15 rows in the file (h1: 9, h2: 6), one left empty -> stored as missing with no level.
    assert len(ratings) == 15 and set(ratings["rater_kind"]) == {"human"}
    empty = ratings[ratings["status"] == "missing"]
    assert len(empty) == 1 and pd.isna(empty["level"].iloc[0]) and empty["dimension"].iloc[0] == "emotional"
    h1 = ratings[(ratings["rater_id"] == "h1") & (ratings["reply_id"] == "clin_03")].set_index("dimension")
    assert h1["level"].to_dict() == {"behavioural": 3.0, "cognitive": 2.0, "emotional": 2.0}   # lines 8-10


@pytest.mark.parametrize("rows, problem", [
    ("clin_09,m99,Some text.", ":2:2: item_id: 'm99' is not a response item of this run"),
    ("clin_01,m01_stress,", ":2:3: text: is empty"),
    ("clin_01,m01_stress,One.\nclin_01,m02_grief,Two.", ":3:1: reply_id: 'clin_01' is given twice (first on line 2)"),
    ("bad id,m01_stress,One.", ":2:1: reply_id: 'bad id' is not an id"),
])
def test_a_bad_reference_reply_file_exits_2_and_writes_nothing(tmp_path, capsys, rows, problem):
    run_dir = replies_run(tmp_path)
    bad = tmp_path / "replies.csv"
    bad.write_text("reply_id,item_id,text\n" + rows + "\n")
    assert main(["import", "replies", str(bad), "--run", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}{problem}" in err and "Traceback" not in err
    assert count(run_dir, "rating_targets") == 0


def test_a_changed_reference_text_under_an_old_id_is_refused(tmp_path, capsys):
    run_dir = replies_run(tmp_path)
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0
    changed = tmp_path / "changed.csv"
    changed.write_text("reply_id,item_id,text\nclin_01,m01_stress,A new text.\n")
    assert main(["import", "replies", str(changed), "--run", str(run_dir)]) == 2
    assert "changed.csv:2:3: text: reply 'clin_01' was imported before with another text" in capsys.readouterr().err
    assert count(run_dir, "rating_targets") == 3


@pytest.mark.parametrize("row, problem", [
    ("h1,r000000000000,cognitive,2", ":2:2: response_id: 'r000000000000' is not a rating target of this run"),
    ("h1,r2fc341b3908c,kindness,2", ":2:3: dimension: 'kindness' is not a dimension of empathy_ceb"),
    ("h1,r2fc341b3908c,overall,2", ":2:3: dimension: 'overall' is combined from other dimensions, not rated"),
    ("h1,r2fc341b3908c,cognitive,4", ":2:4: score: 4 must be one of the levels 1, 2, 3 of cognitive"),
    ("h1,r2fc341b3908c,cognitive,2.5", ":2:4: score: 2.5 must be one of the levels 1, 2, 3"),
    ("h1,r2fc341b3908c,cognitive,high", ":2:4: score: 'high' is not a number"),
    (",r2fc341b3908c,cognitive,2", ":2:1: rater_id: is empty"),
])
def test_a_bad_ratings_file_exits_2_and_writes_nothing(tmp_path, capsys, row, problem):
    run_dir = replies_run(tmp_path)
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0
    bad = tmp_path / "ratings.csv"
    # A good row after the bad one: it must not be written either.
    bad.write_text("rater_id,response_id,dimension,score\n" + row + "\nh1,ra7fc23fb459f,emotional,2\n")
    assert main(["import", "ratings", str(bad), "--run", str(run_dir), "--rubric", "empathy_ceb"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}{problem}" in err and "Traceback" not in err
    assert count(run_dir, "ratings") == 0


def test_the_rating_sheet_is_blind_shuffled_and_imports_back_filled_in(tmp_path, capsys):
    run_dir = replies_run(tmp_path)
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0
    sheet = tmp_path / "sheet.xlsx"
    assert main(["rating-sheet", str(run_dir), str(sheet), "--rubric", "empathy_ceb", "--seed", "3"]) == 0
    rows = sheet_dicts(sheet)
    assert list(rows[0]) == ["rater_id", "response_id", "message", "reply"] + DIMENSIONS
    assert len(rows) == 19 and all(r["cognitive"] == "" and r["rater_id"] == "" for r in rows)
    text = " ".join(v for r in rows for v in r.values()).lower()
    assert "clinician" not in text and "ottoline" not in text and "reference" not in text
    with RunStore(run_dir / "run.sqlite") as store:
        targets = read_targets(store)
    source = dict(zip(targets["response_id"], targets["source"]))
    ref_rows = [k for k, r in enumerate(rows) if source[r["response_id"]] == "reference"]
    assert ref_rows != [0, 1, 2] and ref_rows != [16, 17, 18]   # not grouped at either end
    # Filled in by a made-up rater (levels by a rule of ours, typed as numbers), it imports as it is.
    book = openpyxl.load_workbook(sheet)
    for k, row in enumerate(book["ratings"].iter_rows(min_row=2)):
        row[0].value, row[4].value, row[5].value, row[6].value = "h9", 1 + k % 3, 2, 3
    book.save(sheet)
    assert main(["import", "ratings", str(sheet), "--run", str(run_dir), "--rubric", "empathy_ceb"]) == 0
    with RunStore(run_dir / "run.sqlite") as store:
        ratings = read_ratings(store, "empathy_ceb")
    assert len(ratings) == 19 * 3
    got = ratings[ratings["dimension"] == "cognitive"].set_index("response_id")["level"]
    assert all(got[r["response_id"]] == 1 + k % 3 for k, r in enumerate(rows))


def sheet_dicts(sheet: Path) -> list[dict[str, str]]:
    """The rows of a rating sheet (.xlsx) as dicts of text, empty cells as ''."""
    ws = openpyxl.load_workbook(sheet)["ratings"]
    header, *rows = [[c.value for c in row] for row in ws.iter_rows()]
    return [{h: "" if v is None else v for h, v in zip(header, row)} for row in rows]


def test_sigkill_mid_judge_then_rerun_never_asks_a_stored_rating_again(tmp_path):
    """Kill `psyq judge` with SIGKILL while requests are in flight, rerun, and check by the stub's
    own record that no target x dimension stored before the kill was asked again."""
    run_dir = replies_run(tmp_path)
    total = len(PERSONAS) * N_MESSAGES * 3
    record = tmp_path / "record.jsonl"
    stub = subprocess.Popen([sys.executable, str(ROOT / "tests" / "stub_server.py"), "--port", "0",
                             "--latency", "0.05", "--record", str(record)], stdout=subprocess.PIPE, text=True)
    db = run_dir / "run.sqlite"
    try:
        url = stub.stdout.readline().split()[1]
        # The stub answers a digit 1-4: a 4 is off the 1-3 scale and stored as unparseable, which
        # is still a finished rating (only `failed` ones are asked again).
        cmd = [sys.executable, "-m", "psyq.cli", "judge", str(run_dir), "--rubric", "empathy_ceb",
               "--base-url", url, "--model", "stub-model", "--answer", "text"]
        judge_process = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _stored(db) < 10:   # some, not all, ratings stored
            time.sleep(0.02)
        judge_process.send_signal(signal.SIGKILL)
        judge_process.wait()
        before = _stored_requests(db)
        assert 10 <= len(before) < total
        sent_before = len(_lines(record))
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    finally:
        stub.terminate()
        stub.wait()
    after = _stored_requests(db)
    assert len(after) == total and before <= after
    second = [json.dumps(r["messages"], sort_keys=True) for r in _lines(record)[sent_before:]
              if r["path"].endswith("completions")]
    assert not set(second) & before and len(second) == len(set(second))
    assert len(second) == total - len(before)   # each missing rating once (in-flight ones are asked again)


def _stored(db: Path) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
    except sqlite3.Error:   # the table is not there yet
        return 0


def _stored_requests(db: Path) -> set[str]:
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT request FROM ratings WHERE status != 'failed'").fetchall()
    return {json.dumps(json.loads(r)["messages"], sort_keys=True) for (r,) in rows}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_perturbed_copy_of_a_reference_reply_does_not_block_its_reimport(tmp_path):
    run_dir = replies_run(tmp_path)
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0
    from psyq.engine.store.ratings import RatingTarget, put_targets
    with RunStore(run_dir / "run.sqlite") as store:
        original = RatingTarget.reference("clin_01", item_id="m01_stress", instrument="help_messages_psyq",
                                          text="unused: the stored text is kept")
        assert put_targets(store, [original.perturbed("shouting", "THAT IS A LOT!!!")]) == 1
    # The same file again: the reply's own text is unchanged, so nothing is refused or added.
    assert main(["import", "replies", str(REFERENCE_CSV), "--run", str(run_dir)]) == 0
    assert count(run_dir, "rating_targets") == 4


def test_the_rating_sheet_leaves_perturbed_texts_out_unless_asked(tmp_path, capsys):
    # 16 persona replies; one perturbed copy of the first added by hand: 16 rows by default, 17 with the flag.
    run_dir = replies_run(tmp_path)
    sheet = tmp_path / "sheet.xlsx"
    assert main(["rating-sheet", str(run_dir), str(sheet), "--rubric", "empathy_ceb"]) == 0
    with RunStore(run_dir / "run.sqlite") as store:
        first = read_targets(store).iloc[0]
        original = RatingTarget.persona(first["trial_id"], first["item_id"], instrument=first["instrument"],
                                        text=first["text"])
        put_targets(store, [original.perturbed("shout", first["text"].upper())])
    assert main(["rating-sheet", str(run_dir), str(sheet), "--rubric", "empathy_ceb"]) == 0
    assert len(sheet_dicts(sheet)) == len(PERSONAS) * N_MESSAGES
    assert main(["rating-sheet", str(run_dir), str(sheet), "--rubric", "empathy_ceb", "--with-perturbed"]) == 0
    rows = sheet_dicts(sheet)
    assert len(rows) == len(PERSONAS) * N_MESSAGES + 1 and first["text"].upper() in {r["reply"] for r in rows}
