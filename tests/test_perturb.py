"""Perturbation sets and `psyq perturb`: the rules on short strings checked by hand, seeding,
rewrites over real HTTP (the stub on 127.0.0.1) stored with their request, resume without
sending again, unusable rewrites kept with a reason, and bad files located to line and column.

Expected texts are worked out by hand from each rule's definition (written next to each
assertion), never taken from the code under test.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path

import pytest

from psyq.engine.backends import BackendConfig
from psyq.cli import main
from psyq.engine.files.errors import InputError
from psyq.engine.judging.perturbed_replies import perturb_run, read_log
from psyq.engine.design.perturbation_sets import apply_rule, load_perturbations
from psyq.engine.store.ratings import RatingTarget, put_targets, read_targets
from psyq.engine.store.run_store import RunStore
from stub_server import StubServer
from test_administer import chat_requests, run, write_study

ROOT = Path(__file__).resolve().parents[1]
HALEAS = ROOT / "instruments" / "perturbations" / "haleas7.yaml"
REPLY = "I am so sorry you are going through this. It sounds exhausting! What would help most right now?"


# --- the rules -----------------------------------------------------------------------------------

def test_substitute_replaces_every_mapped_character_at_rate_one():
    # By hand: l e e t -> l 3 3 7; 'x' is not in the map and stays.
    assert apply_rule("substitute", "leet x", {"map": {"e": "3", "t": "7"}}, seed=1) == "l337 x"


def test_leetspeak_of_the_shipped_set_by_hand():
    leet = next(p for p in load_perturbations(HALEAS).perturbations if p.id == "leetspeak")
    # a->4 e->3 i->1 o->0 s->5 t->7 (rate 1): "It is so" -> "17 15 50"; "help" -> "h3lp".
    assert apply_rule(leet.method, "It is so, help", leet.params, leet.seed) == "17 15 50, h3lp"


def test_greek_letters_are_greek_and_the_rest_unchanged():
    greek = next(p for p in load_perturbations(HALEAS).perturbations if p.id == "greek_letters")
    out = apply_rule(greek.method, REPLY, greek.params, greek.seed)
    assert len(out) == len(REPLY) and out != REPLY
    for before, after in zip(REPLY, out):
        # Each character either stays or becomes the Greek look-alike the map gives it.
        assert after == before or greek.params["map"][before] == after
    assert any("\u0370" <= c <= "\u03ff" for c in out)


def test_repeat_writes_punctuation_n_times_and_stretches_one_letter():
    # letter_rate 0: only punctuation; '.' and '?' each written 4 times.
    assert apply_rule("repeat", "Oh no. Why?", {"punctuation": 4, "letter_rate": 0}, seed=5) == "Oh no.... Why????"
    # letter_rate 1, letter_times 3: every word of 3+ letters has exactly one letter written three times,
    # so it grows by 2 characters; "Oh" and "no" are shorter than 3 letters and stay.
    out = apply_rule("repeat", "Oh no, this hurts", {"punctuation": 1, "letter_rate": 1, "letter_times": 3}, seed=5)
    words = out.split()
    assert words[:2] == ["Oh", "no,"] and len(words[2]) == len("this") + 2 and len(words[3]) == len("hurts") + 2
    assert re.search(r"(.)\1\1", words[2]) and re.search(r"(.)\1\1", words[3])


def test_typos_change_each_word_by_one_edit_and_keep_truncates():
    # rate 1: every word of 3+ letters gets exactly one edit (swap, drop or double), so its length
    # changes by -1, 0 (swap) or +1 and it is not the same word, unless a swap of equal letters
    # (which the rule turns into a drop).
    words = "gentle steady morning".split()
    out = apply_rule("typos", " ".join(words), {"rate": 1}, seed=9).split()
    assert len(out) == 3
    for before, after in zip(words, out):
        assert after != before and abs(len(after) - len(before)) <= 1
    # keep 0.5 of 6 words -> the first 3 words (rate 0: no typos).
    assert apply_rule("typos", "a b c d e f", {"rate": 0, "keep": 0.5}, seed=9) == "a b c"


def test_rules_are_deterministic_for_a_seed_and_differ_for_another():
    params = {"rate": 0.5, "keep": 1}
    first = apply_rule("typos", REPLY, params, seed=1)
    assert first == apply_rule("typos", REPLY, params, seed=1)
    assert first != apply_rule("typos", REPLY, params, seed=2)
    greek = {"map": {"a": "α", "o": "ο", "e": "ε"}, "rate": 0.5}
    assert apply_rule("substitute", REPLY, greek, 3) == apply_rule("substitute", REPLY, greek, 3)
    assert apply_rule("substitute", REPLY, greek, 3) != apply_rule("substitute", REPLY, greek, 4)


def test_the_shipped_set_has_haleas_seven():
    pset = load_perturbations(HALEAS)
    assert [(p.id, p.method) for p in pset.perturbations] == [
        ("punctuation_repeat", "repeat"), ("greek_letters", "substitute"), ("typos_truncated", "typos"),
        ("leetspeak", "substitute"), ("shortened", "rewrite"), ("elevated", "rewrite"), ("casual", "rewrite")]


# --- bad files -----------------------------------------------------------------------------------

def test_a_bad_perturbation_file_is_exit_2_with_file_line_column(tmp_path, capsys):
    bad = tmp_path / "p.yaml"
    bad.write_text("psyq: perturbations/1\nid: mine\ncontent_source: user\nsource: me\nperturbations:\n"
                   "  - id: caps\n    method: substitute\n    seed: 1\n    params:\n      rate: 2\n      map: {a: A}\n"
                   "  - id: shouty\n    method: typos\n    seed: 2\n    params: {rate: 0.1, loud: true}\n")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    # Counted by hand in the text above: 'rate: 2' is line 10, its value at column 13; the unknown
    # parameter 'loud' is on line 15: 4 spaces, 'params: ' (8), '{' (col 13), 'rate: 0.1, ' (11) -> col 25.
    assert f"{bad}:10:13: perturbations[0].params.rate:" in err
    assert f"{bad}:15:25: perturbations[1].params.loud: unknown field 'loud' (a typos can have: rate, keep)" in err
    with pytest.raises(InputError):
        load_perturbations(bad)
    # An unknown method is a shape error of the file itself (line 7, value at column 13).
    bad.write_text(bad.read_text().replace("method: substitute", "method: shout"))
    assert main(["validate", str(bad)]) == 2
    assert f"{bad}:7:13: perturbations[0].method: must be one of" in capsys.readouterr().err


def test_missing_rewrite_instruction_and_duplicate_id_are_located(tmp_path, capsys):
    bad = tmp_path / "p.yaml"
    bad.write_text("psyq: perturbations/1\nid: mine\ncontent_source: user\nsource: me\nperturbations:\n"
                   "  - id: para\n    method: rewrite\n    seed: 2\n"
                   "  - id: para\n    method: typos\n    seed: 3\n")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:7:13: perturbations[0].method: method 'rewrite' needs params: instruction" in err
    assert f"{bad}:9:9: perturbations[1].id: perturbation id 'para' is used more than once" in err


# --- applying to a run ---------------------------------------------------------------------------

def small_run(tmp_path: Path) -> Path:
    """A finished stub run (its answers are not replies; the targets are put in directly)."""
    with StubServer() as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}]), tmp_path / "runs")
    path = result.run_dir.path
    with RunStore(path / "run.sqlite") as store:
        put_targets(store, [
            RatingTarget.persona("t1", "m01", instrument="help", text=REPLY),
            RatingTarget.reference("clin_01", item_id="m01", instrument="help",
                                   text="That sounds really hard. Do you want to tell me more?"),
        ])
    return path


def rewriter(url: str) -> BackendConfig:
    return BackendConfig(id="rewriter", kind="openai", base_url=url, model="stub-model", concurrency=2,
                         max_retries=0, backoff_s=0.01, timeout_s=5, temperature=0.0)


def casual_reply(body) -> str:
    return "hey, that sounds rough. what would help?"


def test_perturb_stores_rules_and_rewrites_then_rerun_sends_nothing(tmp_path):
    path = small_run(tmp_path)
    pset = load_perturbations(HALEAS)
    with StubServer(answer=casual_reply) as stub:
        result = asyncio.run(perturb_run(path, pset, rewriter(stub.url), only=["leetspeak", "casual"],
                                         log=lambda m: None))
        sent = chat_requests(stub)
    # 2 originals x 2 perturbations; one rewrite request per original.
    assert result.pairs == 4 and result.already == 0 and len(sent) == 2
    assert result.counts == {"casual": {"perturbed": 2}, "leetspeak": {"perturbed": 2}}
    with RunStore(path / "run.sqlite") as store:
        targets = read_targets(store)
    perturbed = targets[targets["perturbation"].notna()]
    assert len(perturbed) == 4 and perturbed["original_id"].isin(targets["response_id"]).all()
    casual = perturbed[perturbed["perturbation"] == "casual"]
    assert set(casual["text"]) == {casual_reply(None)}
    detail = casual["detail"].iloc[0]
    # The request stored is the one sent: the instruction as system message, the original as the user's.
    assert detail["method"] == "rewrite" and detail["seed"] == 107
    messages = detail["request"]["messages"]
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith("You edit text. Rewrite")
    assert messages[1]["content"] in {REPLY, "That sounds really hard. Do you want to tell me more?"}
    assert detail["raw_text"] == casual_reply(None)
    assert "authorization" not in json.dumps(detail).lower()
    leet = perturbed[(perturbed["perturbation"] == "leetspeak") & (perturbed["source"] == "persona")]
    assert leet["text"].iloc[0].startswith("1 4m 50 50rry")   # I->1 a->4 s->5 o->0, by hand
    # What the stub received is what was stored (same system text, same seed).
    assert {r.body["messages"][0]["content"] for r in sent} == {messages[0]["content"]}
    assert {r.body.get("seed") for r in sent} == {107}

    # Rerun: nothing is sent and nothing changes.
    with StubServer(answer=casual_reply) as stub:
        again = asyncio.run(perturb_run(path, pset, rewriter(stub.url), only=["leetspeak", "casual"],
                                        log=lambda m: None))
        assert chat_requests(stub) == []
    assert again.already == 4 and again.counts == result.counts


def test_an_unusable_rewrite_is_logged_with_its_reason_and_said(tmp_path, capsys):
    path = small_run(tmp_path)
    with StubServer(answer=lambda body: "As an AI language model, I cannot rewrite this.") as stub:
        code = main(["perturb", str(path), "--set", "haleas7", "--only", "elevated",
                     "--base-url", stub.url, "--model", "stub-model"])
        assert len(chat_requests(stub)) == 2
    assert code == 0
    out = capsys.readouterr()
    assert out.err.count("not perturbed, the rewrite is unusable: the reply declines") == 2
    assert "elevated unusable 2" in out.out
    with RunStore(path / "run.sqlite") as store:
        log = read_log(store)
        assert read_targets(store)["perturbation"].isna().all()     # no perturbed target was stored
    assert list(log["status"]) == ["unusable", "unusable"] and log["response_id"].isna().all()
    with sqlite3.connect(path / "run.sqlite") as db:
        raw = db.execute("SELECT raw_text, request FROM perturbation_log").fetchall()
    assert raw[0][0].startswith("As an AI") and json.loads(raw[0][1])["messages"][0]["role"] == "system"
    # A rerun does not pay for the same unusable rewrite again.
    with StubServer(answer=lambda body: "fine") as stub:
        assert main(["perturb", str(path), "--set", "haleas7", "--only", "elevated",
                     "--base-url", stub.url, "--model", "stub-model"]) == 0
        assert chat_requests(stub) == []


def test_too_long_rewrite_is_unusable(tmp_path):
    path = small_run(tmp_path)
    pset = load_perturbations(HALEAS)
    # 'shortened' allows 1.5 x the original; 400 characters is more than 1.5 x either original (<= 95).
    with StubServer(answer=lambda body: "word " * 80) as stub:
        result = asyncio.run(perturb_run(path, pset, rewriter(stub.url), only=["shortened"], log=lambda m: None))
    assert result.counts == {"shortened": {"unusable": 2}}
    assert all("max_ratio" in reason for _, _, reason in result.unusable)


def test_a_changed_perturbation_under_the_same_id_is_refused(tmp_path):
    path = small_run(tmp_path)
    first = tmp_path / "a.yaml"
    first.write_text("psyq: perturbations/1\nid: mine\ncontent_source: user\nsource: me\nperturbations:\n"
                     "  - id: caps\n    method: substitute\n    seed: 1\n    params: {map: {a: A}}\n")
    assert asyncio.run(perturb_run(path, load_perturbations(first), None, log=lambda m: None)).counts \
        == {"caps": {"perturbed": 2}}
    first.write_text(first.read_text().replace("{a: A}", "{o: O}"))
    with pytest.raises(InputError, match="applied to this run before with other settings"):
        asyncio.run(perturb_run(path, load_perturbations(first), None, log=lambda m: None))


def test_only_with_an_unknown_id_is_an_input_error(tmp_path, capsys):
    path = small_run(tmp_path)
    assert main(["perturb", str(path), "--set", "haleas7", "--only", "leetspeak,nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_schema_and_validate_know_the_format(capsys):
    assert main(["schema", "perturbations"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "psyq perturbation set (format perturbations/1)"
    assert main(["validate", str(HALEAS)]) == 0


# --- prompts and persona replies -----------------------------------------------------------------

def test_prompt_texts_perturbed_by_rule_and_rewrites_refused():
    from psyq.engine.design.instrument import load_instrument
    from psyq.engine.design.perturbation_sets import Perturbation, perturb_prompt_texts
    mini = load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml")
    typos = Perturbation(id="cut", method="typos", seed=4, params={"rate": 0, "keep": 0.5})
    copy = perturb_prompt_texts(mini, typos)
    # keep 0.5 of "Rate each statement." (3 words) -> round(1.5) = 2 words; "Item a" (2 words) -> 1 word.
    assert copy.instructions == "Rate each" and [i.text for i in copy.items] == ["Item"] * 4
    assert [i.id for i in copy.items] == [i.id for i in mini.items] and copy.subscales == mini.subscales
    rewrite = next(p for p in load_perturbations(HALEAS).perturbations if p.method == "rewrite")
    with pytest.raises(ValueError, match="only rules"):
        perturb_prompt_texts(mini, rewrite)


def test_perturb_first_adds_the_persona_replies_of_response_items(tmp_path):
    # A real run of response items over the stub (tests/test_response.py): psyq perturb before any
    # judge adds every persona reply as a target (2 personas x 8 messages = 16), then perturbs each.
    from test_response import N_MESSAGES, PERSONAS, replies_run
    path = replies_run(tmp_path)
    only_leet = load_perturbations(HALEAS).select(["leetspeak"])
    pset = load_perturbations(HALEAS).model_copy(update={"perturbations": only_leet})
    asyncio.run(perturb_run(path, pset, None))
    with RunStore(path / "run.sqlite") as store:
        targets = read_targets(store)
    originals = targets[targets["perturbation"].isna()]
    assert len(originals) == len(PERSONAS) * N_MESSAGES and set(originals["source"]) == {"persona"}
    assert len(targets[targets["perturbation"] == "leetspeak"]) == len(originals)


def test_a_failed_rewrite_is_asked_again_on_the_next_run(tmp_path):
    path = small_run(tmp_path)
    pset = load_perturbations(HALEAS)
    # Both requests get HTTP 500 and the rewriter retries nothing (max_retries 0): 'failed', no target.
    with StubServer(faults=["500", "500"]) as stub:
        first = asyncio.run(perturb_run(path, pset, rewriter(stub.url), only=["casual"], log=lambda m: None))
    assert first.counts == {"casual": {"failed": 2}}
    with StubServer(answer=casual_reply) as stub:
        second = asyncio.run(perturb_run(path, pset, rewriter(stub.url), only=["casual"], log=lambda m: None))
        assert len(chat_requests(stub)) == 2                     # the failed ones, asked again
    assert second.already == 0 and second.counts == {"casual": {"perturbed": 2}}
