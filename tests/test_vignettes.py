"""Administering empathic-accuracy vignettes over real HTTP (the stub on 127.0.0.1): one request
per stop point (ratings of every emotion and the inference), or in answer mode `logprobs` one per
stop × emotion plus one for the inference; answers stored per emotion, the inference kept whole.

Expected counts come from the toy instrument (tests/data/mini_vignettes.yaml: 2 vignettes,
3 stops, 4 emotions), expected values from the stub's scripted replies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from psyq.engine.results.export import export_table
from stub_server import StubServer
from test_administer import chat_requests, run, write_study

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_vignettes.yaml"
EMOTIONS = ["joy", "sadness", "anger", "fear"]
STOPS = ["v1:1", "v1:2", "v2:1"]


def json_reply(body) -> str:
    prompt = body["messages"][-1]["content"]
    if "bike" in prompt:
        return json.dumps({"joy": 0, "sadness": 1, "anger": 4, "fear": 0, "thoughts": "He is furious."})
    if "admitted" in prompt:      # the second stop sees both segments
        return json.dumps({"joy": 4, "sadness": 0, "anger": 0, "fear": 1, "thoughts": "Thrilled."})
    if body.get("response_format"):
        return json.dumps({"joy": 1, "sadness": 0, "anger": 0, "fear": 2, "thoughts": "nervous about the answer"})
    return "joy: 1\nsadness: 0\nanger: 0\nfear: 2\nThoughts: nervous about the answer"   # answer mode text


def test_each_stop_is_one_request_with_every_emotion_and_the_thoughts(tmp_path):
    with StubServer(answer=json_reply) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], instrument=MINI,
                                 protocol={"answer": "json"}), tmp_path / "runs")
        prompts = [r.body["messages"][-1]["content"] for r in chat_requests(stub)]
        schemas = [r.body.get("response_format") for r in chat_requests(stub)]
    assert result.planned == 3 and len(prompts) == 3 and result.counts == {"answered": 3}
    # Stop 2 of v1 shows the story so far (both segments); stop 1 only the first.
    second = next(p for p in prompts if "admitted" in p)
    assert "opens the letter" in second and "part 2 of 2" in second
    assert all(s is not None for s in schemas)    # the reply shape is constrained where supported
    table = export_table(result.run_dir.path).set_index("item_id")
    assert len(table) == 3 * (len(EMOTIONS) + 1)
    assert table.loc[[f"v2:1:{e}" for e in EMOTIONS], "value"].tolist() == [0, 1, 4, 0]
    assert table.loc[[f"v1:1:{e}" for e in EMOTIONS], "value"].tolist() == [1, 0, 0, 2]
    assert table.loc["v2:1:thoughts", "text"] == "He is furious."
    assert table.loc["v1:1:thoughts", "text"] == "nervous about the answer"


def test_text_replies_are_read_line_by_line(tmp_path):
    with StubServer(answer=lambda body: json_reply({"messages": [{"content": "letter"}]})) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], instrument=MINI,
                                 protocol={"answer": "text"}), tmp_path / "runs")
        asked = chat_requests(stub)[0].body["messages"][-1]["content"]
    assert 'a line starting "Thoughts:"' in asked and result.counts == {"answered": 3}
    table = export_table(result.run_dir.path).set_index("item_id")
    assert table.loc[[f"v2:1:{e}" for e in EMOTIONS], "value"].tolist() == [1, 0, 0, 2]
    assert table.loc["v2:1:thoughts", "text"] == "nervous about the answer"


def test_unreadable_ratings_are_reasked_for_the_missing_parts(tmp_path):
    replies = iter(['{"joy": 0, "sadness": 9, "anger": 4, "thoughts": "angry"}',   # 9 off the scale, fear absent
                    '{"sadness": 2, "fear": 1}'])

    def answer(body):
        return next(replies) if "bike" in json.dumps(body) else json_reply(body)

    with StubServer(answer=answer) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], instrument=MINI,
                                 protocol={"answer": "json", "reask_limit": 1}), tmp_path / "runs")
        reask = [r.body["messages"][-1]["content"] for r in chat_requests(stub) if len(r.body["messages"]) > 2]
    assert len(reask) == 1 and "sadness, fear" in reask[0]
    table = export_table(result.run_dir.path).set_index("item_id")
    # Answers read the first time are kept; the re-ask fills the missing ones.
    assert table.loc[[f"v2:1:{e}" for e in EMOTIONS], "value"].tolist() == [0, 2, 4, 1]
    assert table.loc["v2:1:thoughts", "text"] == "angry"


def test_logprob_mode_asks_each_emotion_and_the_thoughts_separately(tmp_path):
    with StubServer(answer=lambda body: "She is happy.") as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}, {"id": "p2"}], instrument=MINI,
                                 protocol={"answer": "logprobs", "logprob_answer": "most_likely"}),
                     tmp_path / "runs")
        sent = chat_requests(stub)
    # 2 respondents × 3 stops × (4 emotions + 1 inference) = 30 requests, all answered.
    assert result.planned == 30 and len(sent) == 30 and result.counts == {"answered": 30}
    rating_requests = [r for r in sent if r.body.get("logprobs")]
    assert len(rating_requests) == 24 and all(r.body["max_tokens"] == 1 for r in rating_requests)
    table = export_table(result.run_dir.path)
    ratings = table[~table["item_id"].str.endswith(":thoughts")]
    # The stub's first token: "3" .30, "4" .25, "2" .20, "1" .10 (+ 0.15 on non-digits): on the 0-4
    # emotion scale the most likely value is 3, the expected value (1×.1 + 2×.2 + 3×.3 + 4×.25)/.85.
    assert (ratings["value"] == 3).all()
    assert ratings["expected"].to_numpy() == pytest.approx(2.4 / 0.85)
    thoughts = table[table["item_id"].str.endswith(":thoughts")]
    assert len(thoughts) == 6 and (thoughts["text"] == "She is happy.").all()
