"""`answer: verbalized`: the respondent states a distribution over the options.

The reader (engine/trials/stated_distribution.py) is tested directly on the forms models write
and on every refusal; then whole runs over real HTTP against the stub server (tests/stub_server.py)
with scripted replies of each form and each refusal, checking what the store keeps: the stated
distribution, its expectation, the value taken from it (drawn with the trial's seed, or the most
likely), the note of what was done to read it, the re-asks and the reasons of what stayed unread.
Expected numbers are written out by hand from the scripted replies.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from psyq.engine.administer.run import administer
from psyq.engine.design.study import load_study
from psyq.engine.files.errors import InputError
from psyq.engine.trials.logprobs import chosen_value
from psyq.engine.trials.scale import Option
from psyq.engine.trials.stated_distribution import read_stated_distribution
from stub_server import StubServer

# The IRI's scale: values 0-4, codes A-E, labels on the end points.
IRI = [Option(value=0, code="A", label="Does not describe me well"), Option(value=1, code="B"),
       Option(value=2, code="C"), Option(value=3, code="D"), Option(value=4, code="E", label="Describes me very well")]
# A scale answered by value, every option labelled (the shipped affect_psyq's).
AFFECT = [Option(value=v, label=label) for v, label in
          enumerate(["Not at all", "Slightly", "Moderately", "Very", "Extremely"], start=1)]
EVEN = {0: 0.1, 1: 0.2, 2: 0.4, 3: 0.2, 4: 0.1}


def read(text: str, scale=IRI, tolerance: float = 0.02):
    return read_stated_distribution(text, scale, tolerance)


def approx(dist: dict) -> dict:
    return {k: pytest.approx(v, abs=1e-12) for k, v in dist.items()}


@pytest.mark.parametrize("text", [
    '{"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1}',                     # keyed by code
    '{"0": 0.1, "1": 0.2, "2": 0.4, "3": 0.2, "4": 0.1}',                     # keyed by value
    '{"a": 0.1, "b": 0.2, "c": 0.4, "d": 0.2, "e": 0.1}',                     # codes in lower case
    '{"Option A": 0.1, "Option B": 0.2, "Option C": 0.4, "Option D": 0.2, "Option E": 0.1}',
    '{"Does not describe me well": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "Describes me very well": 0.1}',  # labels
    'Here it is:\n```json\n{"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1}\n```',   # fenced, in prose
    '{"probabilities": {"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1}}',  # nested once
    'A: 0.1\nB: 0.2\nC: 0.4\nD: 0.2\nE: 0.1',                                  # lines
    '- **A** = 0.1\n- **B** = 0.2\n- **C** = 0.4\n- **D** = 0.2\n- **E** = 0.1',
    '{"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1, "total": 1.0}',       # a total passed over
])
def test_probabilities_that_sum_to_one_are_read_as_written(text):
    got = read(text)
    assert got.status == "answered" and got.value is None
    assert got.distribution == approx(EVEN)
    assert got.reason is None   # nothing was done to read them


@pytest.mark.parametrize("text, done", [
    ('{"A": "10%", "B": "20%", "C": "40%", "D": "20%", "E": "10%"}', "read as percentages (divided by 100)"),
    ('A: 10%\nB: 20 %\nC: 40%\nD: 20%\nE: 10%\nTotal: 100%', "read as percentages (divided by 100)"),
    ('{"A": 10, "B": 20, "C": 40, "D": 20, "E": 10}', "numbers summing to 100 read as percentages (divided by 100)"),
    ('{"A": "1/10", "B": "1/5", "C": "2/5", "D": "1/5", "E": "1/10"}', "fractions read as probabilities"),
    ('{"A": "1/10", "B": 0.2, "C": "2/5", "D": 0.2, "E": 0.1}', "fractions read as probabilities"),
])
def test_percentages_fractions_and_hundreds_are_normalised_and_said(text, done):
    got = read(text)
    assert got.status == "answered"
    assert got.distribution == approx(EVEN)
    assert got.reason == done


def test_a_sum_within_the_tolerance_is_renormalised_and_said():
    got = read('{"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.09}')   # sums to 0.99
    assert got.status == "answered"
    assert got.distribution == approx({0: 0.1 / 0.99, 1: 0.2 / 0.99, 2: 0.4 / 0.99, 3: 0.2 / 0.99, 4: 0.09 / 0.99})
    assert got.reason == "renormalised from a sum of 0.99"
    pct = read('{"A": "10%", "B": "20%", "C": "40%", "D": "20%", "E": "11%"}')   # 101 %: after reading, 1.01
    assert pct.reason == "read as percentages (divided by 100); renormalised from a sum of 1.01"
    wide = read('{"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.14}', tolerance=0.05)   # 1.04
    assert wide.status == "answered" and wide.distribution[4] == pytest.approx(0.14 / 1.04)


def test_labels_name_options_on_a_scale_answered_by_value():
    got = read('{"Not at all": "5%", "Slightly": "15%", "Moderately": "50%", "Very": "20%", "Extremely": "10%"}',
               AFFECT)
    assert got.distribution == approx({1: 0.05, 2: 0.15, 3: 0.5, 4: 0.2, 5: 0.1})


@pytest.mark.parametrize("text, status, reason", [
    ('{"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.2, "E": 0.1}', "unparseable",
     "the stated probabilities sum to 0.9, not 1 (tolerance 0.02)"),
    ('{"A": 0.5, "B": -0.1, "C": 0.4, "D": 0.1, "E": 0.1}', "unparseable",
     "the stated distribution holds a negative probability (B: -0.1)"),
    ('{"A": 0.2, "B": 0.2, "C": 0.4, "D": 0.2}', "unparseable",
     "the stated distribution gives no probability for option E"),
    ('{"A": 0.2, "B": 0.2, "C": 0.2}', "unparseable",
     "the stated distribution gives no probability for options D, E"),
    ('{"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1, "F": 0.0}', "unparseable",
     "the stated distribution names 'F', which is not an option (options: A, B, C, D, E)"),
    ('{"A": 0.1, "0": 0.1, "C": 0.4, "D": 0.2, "E": 0.2}', "unparseable",
     "the stated distribution gives option A twice"),
    ('{"A": "high", "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1}', "unparseable",
     "the probability stated for option A: 'high' is not a number, a percentage or a fraction"),
    ('{"A": null, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1}', "unparseable",
     "the probability stated for option A: None is not a number"),
    ('{"A": "1/0", "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1}', "unparseable",
     "the probability stated for option A: '1/0' divides by zero"),
    ('{"A": "10%", "B": 20, "C": "40%", "D": "20%", "E": "10%"}', "unparseable",
     "the stated distribution mixes percentages with plain numbers or fractions; write every probability the "
     "same way"),
    ('{"A": 0, "B": 0, "C": 0, "D": 0, "E": 0}', "unparseable", "every stated probability is 0"),
    ('{"A": 10, "B": 20, "C": 40, "D": 20, "E": 20}', "unparseable",
     "the stated probabilities sum to 110, not 1 (tolerance 0.02)"),
    ("I would say B, mostly.", "unparseable",
     "no probabilities found; expected one for each option (A, B, C, D, E)"),
    ("As an AI language model, I don't have feelings.", "refusal",
     "the answer declines to give probabilities (refusal or AI disclaimer language, no distribution)"),
    ("   ", "empty", "the answer is empty"),
])
def test_what_is_not_a_distribution_is_refused_with_the_reason(text, status, reason):
    got = read(text)
    assert (got.status, got.reason, got.value, got.distribution) == (status, reason, None, None)


def test_zero_written_plainly_goes_with_percentages():
    got = read('{"A": 0, "B": "20%", "C": "60%", "D": "20%", "E": 0}')
    assert got.reason == "read as percentages (divided by 100)"
    assert got.distribution == approx({0: 0.0, 1: 0.2, 2: 0.6, 3: 0.2, 4: 0.0})


# ------------------------------------------------------------------ runs against the stub

INSTRUMENT = {
    "psyq": "instrument/1", "id": "tiny", "name": "Tiny", "version": 1, "content_source": "psyq",
    "citations": {"psyq": "psyq authors (2026). Toy instrument for tests."}, "terms": "Test data only.",
    "instructions": "Say how well each statement describes you.",
    "scale": [{"value": 0, "code": "A", "label": "Does not describe me well"}, {"value": 1, "code": "B"},
              {"value": 2, "code": "C"}, {"value": 3, "code": "D"},
              {"value": 4, "code": "E", "label": "Describes me very well"}],
    "items": [{"id": i, "text": f"Statement {i}.", "subscales": ["X"]} for i in "abcdef"],
    "subscales": [{"id": "X", "name": "X", "score": "sum", "min_answered": 1}],
}
# Per item: the replies in order (first request, then each re-ask).
SCRIPT = {
    "a": ['{"A": 0.1, "B": 0.2, "C": 0.4, "D": 0.2, "E": 0.1}'],
    "b": ['{"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.2, "E": 0.1}',          # sums to 0.9: re-asked
          'A: 5%\nB: 15%\nC: 50%\nD: 20%\nE: 10%'],
    "c": ['{"A": -0.1, "B": 0.3, "C": 0.4, "D": 0.3, "E": 0.1}',         # negative: re-asked
          '{"A": 0.5, "B": 0.5}',                                        # options missing: re-asked
          '{"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.2, "F": 0.2}'],          # names no option: missing
    "d": ['{"A": "1/2", "B": "1/4", "C": "1/8", "D": "1/16", "E": "1/16"}'],
    "e": ['{"A": 0, "B": 0, "C": 0, "D": 0, "E": 100}'],
    "f": ["As an AI language model, I don't have feelings."],
}


def scripted(body: dict) -> str:
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    item = user[0].split("Statement ")[1][0]
    return SCRIPT[item][min(len(user), len(SCRIPT[item])) - 1]


def write_study(tmp: Path, url: str, protocol: dict, personas: int = 1) -> Path:
    (tmp / "tiny.yaml").write_text(yaml.safe_dump(INSTRUMENT, sort_keys=False))
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": [
        {"id": f"p{i}"} for i in range(personas)]}))
    study = {"psyq": "study/1", "id": "v", "instruments": ["tiny.yaml"], "cohort": "cohort.yaml",
             "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                           "max_retries": 1, "backoff_s": 0.01, "timeout_s": 5}],
             "protocol": {"answer": "verbalized", "seed": 3, **protocol}}
    (tmp / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return tmp / "study.yaml"


def run_rows(tmp: Path, protocol: dict, answer=scripted):
    with StubServer(answer=answer) as stub:
        result = asyncio.run(administer(load_study(write_study(tmp, stub.url, protocol)), tmp / "runs",
                                        log=lambda m: None))
        bodies = [r.body for r in stub.requests]
    with sqlite3.connect(result.run_dir.database) as db:
        rows = db.execute("SELECT a.item_id, a.value, a.status, a.reason, a.distribution, a.expected, t.reasks, "
                          "t.status, t.request FROM answers a JOIN trials t USING (trial_id) "
                          "ORDER BY a.item_id").fetchall()
    return {r[0]: r[1:] for r in rows}, bodies


def test_a_run_stores_the_stated_distribution_its_expectation_and_the_most_likely_value(tmp_path):
    rows, bodies = run_rows(tmp_path, {"logprob_answer": "most_likely", "reask_limit": 2})
    value, status, reason, dist, expected, reasks, trial_status, _ = rows["a"]
    assert (value, status, reason, reasks, trial_status) == (2, "answered", None, 0, "answered")
    assert {int(k): v for k, v in json.loads(dist).items()} == approx(EVEN)
    assert expected == pytest.approx(0.1 * 0 + 0.2 * 1 + 0.4 * 2 + 0.2 * 3 + 0.1 * 4)   # 2.0
    # b: the first reply sums to 0.9 (re-asked with that reason), the second is read as percentages.
    value, status, reason, dist, expected, reasks, _, _ = rows["b"]
    assert (value, status, reason, reasks) == (2, "answered", "read as percentages (divided by 100)", 1)
    assert expected == pytest.approx(0.15 + 2 * 0.5 + 3 * 0.2 + 4 * 0.1)   # 2.15
    reask = next(b for b in bodies if len(b["messages"]) > 2 and "Statement b." in b["messages"][1]["content"])
    assert reask["messages"][-1]["content"].startswith(
        "Your answer could not be read (the stated probabilities sum to 0.9, not 1 "
        "(tolerance 0.02)). Reply with JSON only: one probability from 0 to 1 for each option (A, B, C, D, E)")
    # c: unreadable three times: missing, with the last reason; nothing stored as its distribution.
    value, status, reason, dist, expected, reasks, trial_status, _ = rows["c"]
    assert (value, status, dist, expected, reasks, trial_status) == (None, "unparseable", None, None, 2, "missing")
    assert reason == "the stated distribution names 'F', which is not an option (options: A, B, C, D, E)"
    # d: fractions; the most likely is A (value 0); e: hundreds.
    value, status, reason, dist, expected, *_ = rows["d"]
    assert (value, reason) == (0, "fractions read as probabilities")
    assert expected == pytest.approx(0.25 + 2 / 8 + 3 / 16 + 4 / 16)
    assert rows["e"][:3] == (4, "answered", "numbers summing to 100 read as percentages (divided by 100)")
    assert rows["f"][:2] == (None, "refusal")
    # Every request carried the JSON schema: one number per option, all required.
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema == {"type": "object", "properties": {c: {"type": "number"} for c in "ABCDE"},
                      "required": list("ABCDE"), "additionalProperties": False}
    assert bodies[0]["max_tokens"] == 16 + 12 * 5


def test_a_sampled_value_is_drawn_from_the_stated_distribution_with_the_trials_seed(tmp_path):
    rows, _ = run_rows(tmp_path, {"logprob_answer": "sample", "reask_limit": 2})
    for item in "abde":
        value, _, _, dist, _, _, _, request = rows[item]
        dist = {int(k): v for k, v in json.loads(dist).items()}
        assert value == chosen_value(dist, "sample", json.loads(request)["seed"])
    assert rows["e"][0] == 4   # all its probability on E: every draw is E


def test_the_tolerance_is_the_protocols(tmp_path):
    rows, _ = run_rows(tmp_path, {"logprob_answer": "most_likely", "reask_limit": 0,
                                  "verbalized": {"tolerance": 0.1}})
    value, status, reason, dist, *_ = rows["b"]   # 0.9 is within 0.1 of 1: read at once
    assert (status, reason) == ("answered", "renormalised from a sum of 0.9")
    assert json.loads(dist)["2"] == pytest.approx(0.3 / 0.9)


def test_a_server_without_a_json_schema_gets_none(tmp_path):
    """Where the capability table says the server takes no schema, the request carries none."""
    with StubServer(answer=scripted) as stub:
        path = write_study(tmp_path, stub.url, {"reask_limit": 0})
        study = yaml.safe_load(path.read_text())
        study["backends"][0]["capabilities"] = {"json_schema": "instruction"}
        path.write_text(yaml.safe_dump(study))
        asyncio.run(administer(load_study(path), tmp_path / "runs", log=lambda m: None))
        bodies = [r.body for r in stub.requests]
    assert bodies and all("response_format" not in b for b in bodies)
    assert "in the form {\"A\": <probability>" in bodies[0]["messages"][-1]["content"]


@pytest.mark.parametrize("protocol, instrument, says", [
    ({"answer": "verbalized", "presentation": "whole_instrument"}, None,
     "answer: verbalized asks for one distribution per item, so it needs presentation: per_item"),
    ({"answer": "verbalized"}, "leas_psyq", "answer: verbalized asks rating items only, but 'leas_psyq' has scene items"),
])
def test_validate_refuses_what_verbalized_cannot_ask(tmp_path, protocol, instrument, says):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", {})
    study = yaml.safe_load(path.read_text())
    study["protocol"] = protocol
    if instrument:
        study["instruments"] = [instrument]
    path.write_text(yaml.safe_dump(study))
    with pytest.raises(InputError) as caught:
        load_study(path)
    assert says in str(caught.value)


def test_a_protocol_without_the_new_settings_dumps_as_before():
    """The run id and manifest hash the protocol's dump: a study that does not ask for a
    distribution must dump exactly the fields it always had."""
    study = load_study("quickstart")
    assert list(study.protocol.model_dump()) == ["presentation", "item_order", "option_order", "repeats", "answer",
                                                 "logprob_answer", "reask_limit", "seed"]
    verbalized = study.protocol.model_copy(update={"answer": "verbalized"})
    assert "verbalized" not in verbalized.model_dump()   # unset: the defaults, left out
