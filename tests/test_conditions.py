"""Conditions in a study (engine/design/conditions.py): the `conditions:` block read and checked,
its conditions' ids and changes, their trials planned, sent, stored, resumed, exported, counted by
`psyq plan` and filtered by `psyq view`.

Expected values come from the study written in each test (personas × items × conditions ×
backends), from the stub server's own record of what it received, and for the YAML messages from
reading the small files written here (the line and column of the mistake), not from the code under
test.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml

from psyq.engine.administer.plan import plan_chains, plan_trials
from psyq.engine.administer.run import administer
from psyq.engine.backends import make_backend
from psyq.engine.design.study import condition_study, load_study
from psyq.engine.files.errors import InputError
from psyq.engine.results.export import export_table
from psyq.engine.results.run import open_run
from psyq.engine.store.run_store import RunStore
from psyq.engine.view.server import ViewServer
from cli_helper import psyq_in_process
from runs_helper import recorded, wait_until_stored
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"            # 4 items, scale 1–7
FIXTURE = ROOT / "tests" / "fixtures" / "conditions"
COHORT = FIXTURE / "cohort_three.yaml"                        # 3 personas with backstories
BACKSTORY = "You are {id}. {backstory} Answer as this person would."


# --- the YAML block, its mistakes said at their line and column ----------------------------------

def study_text(conditions: str) -> str:
    """A study of two backends (a, b) whose `conditions:` block starts on line 9."""
    return (f"psyq: study/1\nid: c\ninstruments: ['{MINI}']\ncohort: '{COHORT}'\nbackends:\n"
            "  - {id: a, kind: openai, base_url: 'http://127.0.0.1:9/v1', model: m}\n"
            "  - {id: b, kind: openai, base_url: 'http://127.0.0.1:9/v1', model: n}\n"
            "conditions:\n" + conditions)


def validate(tmp_path: Path, text: str) -> list[str]:
    """`psyq validate` (in process) on `text`: exit 2, no traceback; its error lines without 'error: FILE'."""
    path = tmp_path / "study.yaml"
    path.write_text(text)
    result = psyq_in_process("validate", path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    prefix = f"error: {path}"
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith(prefix) for line in lines), result.stderr
    return [line[len(prefix):] for line in lines]


def test_a_level_field_that_does_not_exist(tmp_path):
    # line 12 "        temprature: 0.5": the key at column 9
    errors = validate(tmp_path, study_text("  cross:\n    asking:\n      warm:\n        temprature: 0.5\n"))
    assert errors == [":12:9: conditions.cross.asking.warm.temprature: unknown field 'temprature' "
                      "(did you mean 'temperature'?)"]


def test_a_protocol_field_that_does_not_exist(tmp_path):
    # line 11 "    - name: stated", line 12 "      protocol: {anwser: json}": 'anwser' at column 18
    errors = validate(tmp_path, study_text("  list:\n    - name: stated\n      protocol: {anwser: json}\n"))
    assert errors == [":11:18: conditions.list[0].protocol.anwser: unknown field 'anwser' (did you mean 'answer'?)"]


def test_a_protocol_value_the_protocol_does_not_take(tmp_path):
    errors = validate(tmp_path, study_text("  list:\n    - name: sideways\n      protocol: {option_order: sideways}\n"))
    assert len(errors) == 1 and errors[0].startswith(":11:32: conditions.list[0].protocol.option_order: must be one of")
    assert "'as_written'" in errors[0] and "not 'sideways'" in errors[0]


def test_the_did_you_mean_sees_through_mappings_written_as_data(tmp_path):
    # A price table's models are data too (engine/files/validation.py finds the model of their values).
    text = study_text("  list:\n    - name: x\n").replace("conditions:\n", "prices:\n  m: {input: 1, outpt: 2}\nconditions:\n")
    assert validate(tmp_path, text)[-1] == ":9:17: prices.m.outpt: unknown field 'outpt' (did you mean 'output'?)"


def test_a_listed_name_used_twice(tmp_path):
    # the second 'name:' is on line 12, its value at column 13
    errors = validate(tmp_path, study_text("  list:\n    - name: x\n    - name: x\n"))
    assert errors == [":11:13: conditions.list[1].name: condition name 'x' is used more than once (first by list[0])"]


def test_an_empty_factor(tmp_path):
    errors = validate(tmp_path, study_text("  cross:\n    asking: {}\n"))
    assert errors == [":10:5: conditions.cross.asking: factor 'asking' has no levels: give each level a name and what "
                      "it changes (e.g. `stated: {protocol: {answer: json}}`; `{}` changes nothing)"]


def test_a_condition_name_that_is_not_an_id(tmp_path):
    errors = validate(tmp_path, study_text("  list:\n    - name: two words\n"))
    assert errors == [":10:13: conditions.list[0].name: 'two words' is not a valid id: use letters, digits, '_', "
                      "'-' or '.', starting with a letter or digit"]


def test_a_level_name_that_is_not_an_id(tmp_path):
    # a mapping's bad key is pointed at what it names (line 11 "      two words: {}", its value at column 18)
    errors = validate(tmp_path, study_text("  cross:\n    asking:\n      two words: {}\n"))
    assert errors == [":11:18: conditions.cross.asking.two words: 'two words' is not a valid id: use letters, digits, "
                      "'_', '-' or '.', starting with a letter or digit"]


def test_neither_cross_nor_list(tmp_path):
    errors = validate(tmp_path, study_text("  {}\n"))
    assert errors == [":8:1: conditions: give `cross:` (factors whose levels are crossed) or `list:` (named "
                      "conditions), or both"]


def test_two_factors_changing_one_field(tmp_path):
    errors = validate(tmp_path, study_text(
        "  cross:\n    asking:\n      reversed: {protocol: {option_order: reversed}}\n"
        "    order:\n      plain: {protocol: {option_order: as_written}}\n"))
    # line 13 "      plain: {protocol: {option_order: as_written}}": 'option_order' at column 26
    assert errors == [":13:26: conditions.cross.order.plain.protocol.option_order: factors 'asking' and 'order' both "
                      "change protocol.option_order; a crossed condition takes each field from one factor: change it "
                      "in one factor only, or list the conditions (`list:`)"]


def test_a_backend_the_study_does_not_have(tmp_path):
    errors = validate(tmp_path, study_text("  list:\n    - name: x\n      backends: [a, bb]\n"))
    assert errors == [":11:21: conditions.list[0].backends[1]: no backend 'bb' in this study (did you mean 'b'?)"]


def test_a_template_placeholder_no_persona_can_fill(tmp_path):
    errors = validate(tmp_path, study_text("  list:\n    - name: x\n      template: 'You are {agee}.'\n"))
    assert errors == [":11:17: conditions.list[0].template: unknown placeholder {agee}: no persona has an attribute "
                      "'agee' (did you mean 'age'?)"]


def test_a_change_the_rest_of_the_study_cannot_take_names_its_condition(tmp_path):
    # answer: logprobs asks one item a request; the study asks whole instruments. Only the
    # condition that changes the answer has the problem, pointed at its change (line 13, column 35:
    # "      tokens: {protocol: {answer: logprobs}}").
    text = study_text("  cross:\n    asking:\n      text: {}\n      tokens: {protocol: {answer: logprobs}}\n"
                      "    persona:\n      plain: {}\n      backstory: {template: 'You are {id}.'}\n")
    text = text.replace("conditions:\n", "protocol: {presentation: whole_instrument}\nconditions:\n")
    errors = validate(tmp_path, text)
    assert errors == [":13:35: conditions.cross.asking.tokens.protocol.answer: under condition "
                      "'asking=tokens,persona=plain' (and 1 more): answer: logprobs reads one answer token, so it "
                      "needs presentation: per_item"]


def test_what_a_backend_cannot_take_under_a_condition_is_said_at_the_change(tmp_path):
    # gpt-5-mini takes only its default temperature and gives no log probabilities (psyq's capability
    # table); each condition's change is refused where it is written: line 11 "      temperature: 0.2"
    # (the value at column 20), line 13 "      protocol: {answer: logprobs}" (the value at column 26).
    text = study_text("  list:\n    - name: cool\n      temperature: 0.2\n    - name: tokens\n"
                      "      protocol: {answer: logprobs}\n")
    text = text.replace("base_url: 'http://127.0.0.1:9/v1', model: m}",
                        "base_url: 'https://api.openai.com/v1', model: gpt-5-mini, temperature: null}")
    errors = validate(tmp_path, text)
    assert len(errors) == 2
    assert errors[0].startswith(":11:20: conditions.list[0].temperature: under condition 'cool': backend 'a': ")
    assert "accepts only the default temperature (1)" in errors[0]
    assert errors[1].startswith(":13:26: conditions.list[1].protocol.answer: under condition 'tokens': backend 'a': ")
    assert "returns no log probabilities" in errors[1]


def test_a_problem_every_condition_has_is_the_studys_own(tmp_path):
    # Both conditions keep the study's protocol: the problem is the study's, said as without conditions
    # (line 8 "protocol: {answer: logprobs, presentation: whole_instrument}", 'logprobs' at column 20).
    text = study_text("  list:\n    - name: x\n    - name: y\n      template: 'You are {id}.'\n")
    text = text.replace("conditions:\n", "protocol: {answer: logprobs, presentation: whole_instrument}\nconditions:\n")
    assert validate(tmp_path, text) == [":8:20: protocol.answer: answer: logprobs reads one answer token, so it needs "
                                        "presentation: per_item"]


# --- ids and changes ---------------------------------------------------------------------------------

def test_crossed_ids_and_changes():
    study = load_study(FIXTURE / "conditions_study.yaml")
    assert [c.id for c in study.conditions] == ["asking=digits,persona=plain", "asking=digits,persona=backstory",
                                                "asking=reversed,persona=plain", "asking=reversed,persona=backstory"]
    last = study.conditions[3]
    assert last.factors == {"asking": "reversed", "persona": "backstory"}
    assert last.protocol == {"option_order": "reversed"} and last.template == BACKSTORY
    assert last.sampling == {} and last.backends is None
    asked = condition_study(study, last)
    assert asked.protocol.option_order == "reversed" and asked.protocol.seed == 5   # the rest is the study's
    assert asked.cohort.template == BACKSTORY and asked.condition is last
    assert condition_study(study, study.conditions[0]).cohort.template == study.cohort.template


def test_listed_and_crossed_together_ids_changes_and_backends(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(study_text("  cross:\n    temp:\n      cold: {temperature: 0}\n      warm: {temperature: 1.5}\n"
                               "  list:\n    - name: only_b\n      factors: {temp: hot}\n      backends: [b]\n"
                               "      protocol: {answer: json, reask_limit: 0}\n      top_p: 0.5\n"))
    study = load_study(path)
    assert [c.id for c in study.conditions] == ["temp=cold", "temp=warm", "only_b"]
    listed = study.conditions[2]
    assert listed.factors == {"temp": "hot"} and listed.backends == ("b",)
    assert listed.protocol == {"answer": "json", "reask_limit": 0} and listed.sampling == {"top_p": 0.5}
    assert study.conditions[1].sampling == {"temperature": 1.5}
    # Planned: the listed condition on backend b only; each condition's sampling and protocol in its requests.
    backends = {b.id: make_backend(b) for b in study.spec.backends}
    trials = list(plan_trials(study, backends))
    assert Counter((t.backend_id, t.condition) for t in trials) == {
        ("a", "temp=cold"): 12, ("a", "temp=warm"): 12, ("b", "temp=cold"): 12, ("b", "temp=warm"): 12,
        ("b", "only_b"): 12}
    assert {t.request.temperature for t in trials if t.condition == "temp=cold"} == {0.0}
    assert {t.request.temperature for t in trials if t.condition == "temp=warm"} == {1.5}
    only_b = [t for t in trials if t.condition == "only_b"]
    assert {t.request.top_p for t in only_b} == {0.5} and {t.protocol.answer for t in only_b} == {"json"}
    assert all(t.request.json_schema is not None for t in only_b)
    # the study's own backend objects are not changed by planning a condition's sampling
    assert backends["a"].config.temperature == 1.0 and backends["b"].config.top_p is None


def test_the_condition_is_part_of_the_trial_id(tmp_path):
    # A condition that changes nothing asks exactly the study's messages, but its trials are its own
    # (and so are their seeds, drawn from the trial id).
    plain = tmp_path / "plain.yaml"
    plain.write_text(study_text("").replace("conditions:\n", ""))
    same = tmp_path / "same.yaml"
    same.write_text(study_text("  list:\n    - name: same\n"))
    backends = {b.id: make_backend(b) for b in load_study(plain).spec.backends}
    without = list(plan_trials(load_study(plain), backends))
    under = list(plan_trials(load_study(same), backends))
    assert [(t.request.messages, t.request.temperature) for t in without] == \
        [(t.request.messages, t.request.temperature) for t in under]
    assert not {t.trial_id for t in without} & {t.trial_id for t in under}
    assert {t.condition for t in without} == {""} and {t.condition for t in under} == {"same"}


def test_a_staged_study_plans_its_chains_per_condition(tmp_path):
    staged = yaml.safe_load((ROOT / "tests" / "fixtures" / "stages" / "staged_study.yaml").read_text())
    staged["instruments"] = [str(MINI)]
    staged["cohort"] = str(ROOT / "tests" / "fixtures" / "stages" / "cohort_two.yaml")
    staged["situations"]["file"] = str(ROOT / "tests" / "fixtures" / "stages" / "situations_two.yaml")
    staged["conditions"] = {"list": [{"name": "json", "protocol": {"answer": "json"}}, {"name": "text"}]}
    path = tmp_path / "staged.yaml"
    path.write_text(yaml.safe_dump(staged, sort_keys=False))
    study = load_study(path)
    chains = plan_chains(study, {b.id: make_backend(b) for b in study.spec.backends})
    # 2 personas × 2 situations per condition; each chain's trials carry its condition and protocol
    assert len(chains) == 8 and len({c.chain_id for c in chains}) == 8
    assert [{s.trial.condition for s in c.steps} for c in chains] == [{"json"}] * 4 + [{"text"}] * 4
    assert chains[0].steps[0].trial.protocol.answer == "json" and chains[4].steps[0].trial.protocol.answer == "text"


# --- a run against the stub ----------------------------------------------------------------------------

def write_run_study(tmp: Path, url_a: str, url_b: str) -> Path:
    """The fixture study of conditions (2 backends × asking {digits, reversed} × persona {plain,
    backstory} × 3 personas × 4 items = 96 trials) pointed at the stubs."""
    study = yaml.safe_load((FIXTURE / "conditions_study.yaml").read_text())
    study["instruments"], study["cohort"] = [str(MINI)], str(COHORT)
    study["backends"][0].update(base_url=url_a, concurrency=2, max_retries=2, backoff_s=0.01, timeout_s=5)
    study["backends"][1].update(base_url=url_b, concurrency=2, max_retries=2, backoff_s=0.01, timeout_s=5)
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def conditions_run(tmp_path_factory):
    """A finished run of the fixture study on two stubs; returns (run folder, stub a's requests, stub b's)."""
    tmp = tmp_path_factory.mktemp("conditions")
    with StubServer() as stub_a, StubServer() as stub_b:
        result = asyncio.run(administer(load_study(write_run_study(tmp, stub_a.url, stub_b.url)), tmp / "runs",
                                        log=lambda m: None))
        sent = ([r for r in stub_a.requests if r.path.endswith("/chat/completions")],
                [r for r in stub_b.requests if r.path.endswith("/chat/completions")])
    assert result.planned == 96 and result.counts == {"answered": 96}
    return result.run_dir.path, sent


def test_each_condition_sends_its_own_prompts_and_stores_them(conditions_run):
    run_path, (sent_a, sent_b) = conditions_run
    assert len(sent_a) == len(sent_b) == 48     # each backend asks every condition: 4 × 3 personas × 4 items
    with sqlite3.connect(run_path / "run.sqlite") as db:
        rows = db.execute("SELECT backend_id, condition, request, option_order FROM trials").fetchall()
    assert Counter((b, c) for b, c, _, _ in rows) == {(b, c): 12 for b in ("stub_a", "stub_b") for c in (
        "asking=digits,persona=plain", "asking=digits,persona=backstory", "asking=reversed,persona=plain",
        "asking=reversed,persona=backstory")}
    for backend, condition, request, option_order in rows:
        system, user = (m["content"] for m in json.loads(request)["messages"])
        backstory = condition.endswith("persona=backstory")
        # the template level: the backstory template's words, or psyq's default template's
        assert system.startswith("You are p") == backstory
        assert ("You are answering a questionnaire" in system) != backstory
        # the option order level: the 1–7 options listed from 7 down, and stored as such
        reversed_ = condition.startswith("asking=reversed")
        assert user.index("7 = Strongly agree") < user.index("1 = Strongly disagree") if reversed_ else \
            user.index("1 = Strongly disagree") < user.index("7 = Strongly agree")
        assert option_order == ("reversed" if reversed_ else "as_written")
    # what the stubs received: the same 48 requests as stored per backend, each system prompt as its condition makes it
    stored_a = sorted(json.dumps(json.loads(r)["messages"]) for b, _, r, _ in rows if b == "stub_a")
    assert sorted(json.dumps(r.body["messages"]) for r in sent_a) == stored_a
    assert sum("Grew up by the sea" in r.body["messages"][0]["content"] for r in sent_b) == 4 * 4  # p1: 2 backstory
    # conditions × 4 items on stub b … p1's backstory shows in the default template's prompt too (the default
    # template holds {backstory}); in the backstory template's only after "You are p1."
    assert sum(r.body["messages"][0]["content"].startswith("You are p1. Grew up") for r in sent_b) == 8


def test_each_trial_is_read_and_reasked_under_its_conditions_protocol(tmp_path):
    # The study re-asks an unreadable answer twice; condition 'impatient' never. A stub that always
    # answers "banana": 12 trials × 3 requests for 'patient', 12 × 1 for 'impatient'.
    path = tmp_path / "study.yaml"
    with StubServer(answer=lambda body: "banana") as stub:
        path.write_text(study_text("  list:\n    - name: patient\n    - name: impatient\n      protocol: {reask_limit: 0}\n")
                        .replace("'http://127.0.0.1:9/v1'", f"'{stub.url}'").replace("  - {id: b,", "#")
                        .replace("conditions:\n", "protocol: {reask_limit: 2}\nconditions:\n"))
        result = asyncio.run(administer(load_study(path), tmp_path / "runs", log=lambda m: None))
        sent = [r for r in stub.requests if r.path.endswith("/chat/completions")]
    assert len(sent) == 12 * 3 + 12 * 1
    with sqlite3.connect(result.run_dir.database) as db:
        assert dict(db.execute("SELECT condition, SUM(reasks) FROM trials GROUP BY condition")) == {
            "patient": 24, "impatient": 0}
        assert db.execute("SELECT DISTINCT status FROM trials").fetchall() == [("missing",)]


def test_the_manifest_records_the_conditions(conditions_run):
    run = open_run(conditions_run[0])
    assert [c["id"] for c in run.conditions] == [c.id for c in load_study(FIXTURE / "conditions_study.yaml").conditions]
    assert run.conditions[3] == {"id": "asking=reversed,persona=backstory",
                                 "factors": {"asking": "reversed", "persona": "backstory"},
                                 "changes": {"protocol": {"option_order": "reversed"}, "template": BACKSTORY},
                                 "backends": None}
    assert run.manifest["trials_planned_by_condition"] == {c["id"]: 24 for c in run.conditions}


def test_the_export_has_the_condition_and_one_column_per_factor(conditions_run):
    table = export_table(conditions_run[0])
    columns = list(table.columns)
    assert columns[columns.index("model") + 1:columns.index("respondent_id")] == [
        "condition", "factor_asking", "factor_persona"]
    assert len(table) == 96
    levels = table["condition"].str.extract(r"asking=(\w+),persona=(\w+)")
    assert (levels[0] == table["factor_asking"]).all() and (levels[1] == table["factor_persona"]).all()
    assert table.groupby(["backend_id", "condition"]).size().to_dict() == {
        (b, c): 12 for b in ("stub_a", "stub_b") for c in set(table["condition"])}
    assert (table.loc[table["factor_asking"] == "reversed", "option_order"] == "reversed").all()


def test_a_run_without_conditions_exports_the_columns_of_before(tmp_path):
    with StubServer() as stub:
        path = write_run_study(tmp_path, stub.url, stub.url)
        data = yaml.safe_load(path.read_text())
        del data["conditions"], data["backends"][1]
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        result = asyncio.run(administer(load_study(path), tmp_path / "runs", log=lambda m: None))
    table = export_table(result.run_dir.path)
    # the columns the answer table had before conditions (engine/results/answers.py's docstring)
    assert list(table.columns) == ["run_id", "study", "backend_id", "model", "respondent_id", "age", "gender",
                                   "instrument", "item_id", "position", "repeat", "option_order", "status", "reason",
                                   "disclaimer", "raw_text", "value", "expected", "option_mass", "distribution",
                                   "text", "trial_status", "attempts", "reasks", "keyed_value"]
    assert '"conditions"' not in result.run_dir.path.joinpath("manifest.json").read_text()
    with sqlite3.connect(result.run_dir.database) as db:
        assert db.execute("SELECT DISTINCT condition FROM trials").fetchall() == [("",)]


def test_a_store_of_an_older_psyq_reads_with_condition_empty(tmp_path):
    # A trials table as psyq wrote it before conditions (no `condition` column): opening it adds
    # the column, and its trials read as asked under no condition.
    database = tmp_path / "run.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE trials (trial_id TEXT PRIMARY KEY, backend_id TEXT NOT NULL, model TEXT, "
                   "respondent_id TEXT NOT NULL, instrument_id TEXT NOT NULL, item_ids TEXT NOT NULL, "
                   "repeat INTEGER NOT NULL, option_order TEXT NOT NULL, status TEXT NOT NULL, request TEXT NOT NULL, "
                   "response TEXT, raw_text TEXT, attempts INTEGER NOT NULL, reasks INTEGER NOT NULL, latency_s REAL, "
                   "prompt_tokens INTEGER, completion_tokens INTEGER, started_at TEXT NOT NULL, "
                   "finished_at TEXT NOT NULL, error TEXT)")
        db.execute("INSERT INTO trials VALUES ('t1', 'b', 'm', 'p1', 'mini', '[\"a\"]', 0, 'as_written', 'answered', "
                   "'{}', NULL, '3', 1, 0, 0.1, 5, 1, 'x', 'y', NULL)")
    RunStore(database).close()
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT trial_id, condition FROM trials").fetchall() == [("t1", "")]


def test_killed_midway_and_resumed_nothing_is_sent_twice(tmp_path):
    """Kill `psyq run` of the conditions study with SIGKILL while requests are in flight, run it
    again, and check by each stub's own record that no trial finished before the kill was sent again."""
    records = [tmp_path / "record_a.jsonl", tmp_path / "record_b.jsonl"]
    stubs = [subprocess.Popen([sys.executable, str(ROOT / "tests" / "stub_server.py"), "--port", "0", "--latency",
                               "0.05", "--record", str(record)], stdout=subprocess.PIPE, text=True)
             for record in records]
    try:
        urls = [stub.stdout.readline().split()[1] for stub in stubs]
        study = write_run_study(tmp_path, *urls)
        cmd = [sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(tmp_path / "runs")]
        runner = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = wait_until_stored(tmp_path / "runs", 10)   # some, not all, trials committed
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        before = _finished(db)
        assert 10 <= len(before) < 96
        sent_before = [len(recorded(record)) for record in records]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    finally:
        for stub in stubs:
            stub.terminate()
            stub.wait()
    after = _finished(db)
    assert len(after) == 96 and set(before) <= set(after)
    resent = 0
    for backend, record, start in zip(("stub_a", "stub_b"), records, sent_before):
        finished = {messages for (b, _), messages in before.items() if b == backend}
        second = [json.dumps(r["messages"]) for r in recorded(record)[start:] if r["path"].endswith("completions")]
        assert not set(second) & finished            # nothing finished before the kill is sent again
        assert len(second) == len(set(second))       # and nothing twice
        resent += len(second)
    assert resent == 96 - len(before)                # each unfinished trial once
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(DISTINCT condition) FROM trials").fetchone()[0] == 4


def _finished(db: Path) -> dict[tuple[str, str], str]:
    """(backend, trial id) -> the messages the trial sent, of every trial answered."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT backend_id, trial_id, request FROM trials WHERE status = 'answered'").fetchall()
    return {(b, t): json.dumps(json.loads(req)["messages"]) for b, t, req in rows}


# --- psyq plan ----------------------------------------------------------------------------------------

def test_plan_counts_requests_tokens_and_cost_per_condition(tmp_path):
    path = write_run_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    data = yaml.safe_load(path.read_text())
    data["prices"] = {"stub-model": {"input": 1.0, "output": 2.0}, "stub-model-b": {"input": 3.0, "output": 4.0}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = psyq_in_process("plan", path, "--tokenizer", "approximate", "--json", "--runs-dir", tmp_path / "runs")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    study = load_study(path)
    trials = list(plan_trials(study, {b.id: make_backend(b) for b in study.spec.backends}))
    by = {c["condition"]: c for c in plan["conditions"]}
    assert list(by) == [c.id for c in study.conditions]
    for condition in study.conditions:
        mine = [t for t in trials if t.condition == condition.id]
        # the approximate count, by hand: characters of the message texts / 4 (engine/administer/tokenizer.py)
        tokens = {b: sum(sum(len(m["content"]) for m in t.request.messages) / 4 for t in mine if t.backend_id == b)
                  for b in ("stub_a", "stub_b")}
        limits = {b: sum(t.request.max_tokens for t in mine if t.backend_id == b) for b in ("stub_a", "stub_b")}
        assert by[condition.id]["requests"] == len(mine) == 24
        assert by[condition.id]["prompt_tokens"] == pytest.approx(tokens["stub_a"] + tokens["stub_b"])
        assert by[condition.id]["completion_tokens_max"] == limits["stub_a"] + limits["stub_b"] == 24 * 48
        cost = (tokens["stub_a"] * 1.0 + limits["stub_a"] * 2.0 + tokens["stub_b"] * 3.0 + limits["stub_b"] * 4.0) / 1e6
        assert by[condition.id]["cost_usd"] == pytest.approx(cost)
    assert sum(c["requests"] for c in plan["conditions"]) == plan["requests"] == 96
    assert {row["condition"] for row in plan["rows"]} == set(by)
    text = psyq_in_process("plan", path, "--tokenizer", "approximate", "--runs-dir", tmp_path / "runs").stdout
    assert "per condition (4; each over the backends that ask it):" in text
    assert re.search(r"^  asking=reversed,persona=backstory +24 ", text, re.M)


def test_plan_of_a_study_without_conditions_has_no_condition_fields():
    out = psyq_in_process("plan", "quickstart", "--tokenizer", "approximate", "--json", "--base-url",
                          "http://127.0.0.1:9/v1", "--model", "m", "--preview", "1")
    plan = json.loads(out.stdout)
    assert "conditions" not in plan and all("condition" not in r for r in plan["rows"] + plan["preview"])
    text = psyq_in_process("plan", "quickstart", "--tokenizer", "approximate", "--base-url", "http://127.0.0.1:9/v1",
                           "--model", "m").stdout
    assert "condition" not in text


# --- psyq view -----------------------------------------------------------------------------------------

def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode("utf-8")


def test_the_viewer_filters_trials_by_condition(conditions_run):
    run_path = conditions_run[0]
    runs = run_path.parent.parent
    rel = run_path.relative_to(runs).as_posix()
    count = lambda body: int(re.search(r'id="count">([\d,]+) trials', body).group(1).replace(",", ""))
    with ViewServer(runs) as server:
        base = f"{server.url.rstrip('/')}/run/{rel}"
        every = _page(f"{base}/trials")
        assert count(every) == 96 and '<select name="condition">' in every
        chosen = _page(f"{base}/trials?condition=asking%3Dreversed%2Cpersona%3Dplain&backend=stub_b")
        assert count(chosen) == 12
        assert chosen.count("<td>asking=reversed,persona=plain</td>") == 12
        trial_id = re.search(r"/trial/([0-9a-f]+)", chosen).group(1)
        assert "<th>condition</th><td>" in _page(f"{base}/trial/{trial_id}")


def test_the_viewer_of_a_run_without_conditions_has_no_condition_filter(tmp_path):
    with StubServer() as stub:
        path = write_run_study(tmp_path, stub.url, stub.url)
        data = yaml.safe_load(path.read_text())
        del data["conditions"]
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        result = asyncio.run(administer(load_study(path), tmp_path / "runs", log=lambda m: None))
    rel = result.run_dir.path.relative_to(tmp_path / "runs").as_posix()
    with ViewServer(tmp_path / "runs") as server:
        body = _page(f"{server.url.rstrip('/')}/run/{rel}/trials?condition=whatever")
    assert 'name="condition"' not in body and re.search(r'id="count">24 trials', body)


def test_the_static_copy_has_a_page_per_condition(conditions_run):
    from psyq.engine.view.site import site_pages

    names = [name for name, _ in site_pages(conditions_run[0]) if "/trials/" in name and "condition-" in name]
    # one folder per condition (ids with '=' and ',' are named by a digest), 24 trials each: one page
    assert len({name.split("/")[3] for name in names}) == 4 and len(names) == 4


def test_loading_a_study_with_conditions_raises_input_error_not_a_crash(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(study_text("  cross: {}\n"))
    with pytest.raises(InputError) as caught:
        load_study(path)
    assert "needs at least 1 entry" in str(caught.value)
