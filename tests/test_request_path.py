"""The per-request path made lighter for issue 42 (bench/RESULTS.md): what is done once per run
instead of once per trial, and that what is stored and sent stays what it was, byte for byte."""

import asyncio
import io
import json
import sqlite3

import pytest

from psyq.engine.backends import bodies
from psyq.engine.store import run_store, writer_process
from psyq.engine.store.run_store import AnswerRecord, RunStore, TrialRecord
from psyq.engine.trials import parsing, prompts
from psyq.engine.trials.scale import Option


def _record(trial_id: str, request: dict, response: dict | None) -> TrialRecord:
    answer = AnswerRecord("1", 0, 3, "answered", distribution={1: 0.25, 3: 0.75}, option_mass=0.9, expected=2.5)
    return TrialRecord(trial_id=trial_id, backend_id="b", model="m", respondent_id="r1", instrument_id="iri",
                       item_ids=["1"], repeat=0, option_order="as_written", status="answered",
                       request=bodies.compact_json(request),
                       response=response, raw_text="D", attempts=1, reasks=0, latency_s=0.01, prompt_tokens=9,
                       completion_tokens=1, started_at="s", finished_at="f", error=None, answers=[answer])


REQUEST = {"model": "m", "messages": [{"role": "system", "content": "Du bist Zoë, 34 — “wörtlich”"},
                                      {"role": "user", "content": "Options:\nA = never\nE = always"}],
           "max_tokens": 48, "temperature": 0.7, "seed": 123456789, "top_p": None}
RESPONSE = {"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "D ✓"},
                                    "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1, "nan": float("nan"), "inf": float("inf")}}


def test_stored_json_is_what_json_dumps_gives_without_an_encoder_per_call(tmp_path, monkeypatch):
    """The store encodes with one encoder made once (json.dumps builds one per call, about as long
    as encoding a short object takes); the text stored is json.dumps's, byte for byte, and the
    request is the record's own text (the body as sent), not encoded again."""
    def no_encoder_per_call(*args, **kwargs):
        raise AssertionError("an encoder was built for one call")

    with RunStore(tmp_path / "run.sqlite") as store:
        monkeypatch.setattr(json.JSONEncoder, "iterencode", no_encoder_per_call)
        store.put_trial(_record("t1", REQUEST, RESPONSE))
        monkeypatch.undo()
    db = sqlite3.connect(tmp_path / "run.sqlite")
    item_ids, request, response = db.execute("SELECT item_ids, request, response FROM trials").fetchone()
    distribution = db.execute("SELECT distribution FROM answers").fetchone()[0]
    assert (item_ids, request, response, distribution) == (
        json.dumps(["1"]), bodies.compact_json(REQUEST), json.dumps(RESPONSE), json.dumps({1: 0.25, 3: 0.75}))


def test_a_reply_too_deep_to_encode_is_stored_as_the_same_note(tmp_path):
    deep: dict = {}
    for _ in range(100_000):
        deep = {"a": deep}
    with pytest.raises(RecursionError):
        json.dumps(deep)
    with RunStore(tmp_path / "run.sqlite") as store:
        store.put_trial(_record("t1", REQUEST, deep))
        response = store.db.execute("SELECT response FROM trials").fetchone()[0]
    assert json.loads(response) == {"unstorable_response": "RecursionError: the response could not be encoded"}


def test_the_request_body_is_sent_as_compact_utf8_json_made_by_one_encoder(monkeypatch):
    body = bodies.compact_json(REQUEST)
    assert body == json.dumps(REQUEST, ensure_ascii=False, separators=(",", ":"))

    def no_encoder_per_call(*args, **kwargs):
        raise AssertionError("an encoder was built for one call")

    monkeypatch.setattr(json.JSONEncoder, "iterencode", no_encoder_per_call)
    assert bodies.compact_json(REQUEST) == body


def test_the_store_checkpoints_its_wal_every_4000_pages(tmp_path):
    """At SQLite's default (1,000 pages) a 10,000-trial run stopped for ~80 fsyncs (bench/RESULTS.md)."""
    with RunStore(tmp_path / "run.sqlite") as store:
        assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == run_store.WAL_CHECKPOINT_PAGES == 4000
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 1   # NORMAL


def test_a_short_reply_is_read_once_per_scale(iri):
    first = parsing.parse_rating("D", iri.scale)
    assert first.value == 3 and first.status == "answered"
    assert parsing.parse_rating("D", iri.scale) is first
    long_reply = "I would say D. " * 10   # over _PARSED_CHARS: read every time
    assert parsing.parse_rating(long_reply, iri.scale) == parsing.parse_rating(long_reply, iri.scale)
    assert parsing.parse_rating(long_reply, iri.scale) is not parsing.parse_rating(long_reply, iri.scale)


def test_a_kept_reading_is_never_given_for_other_options():
    scale = [Option(value=1, code="A", label="no"), Option(value=2, code="B", label="yes")]
    assert parsing.parse_rating("B", scale).value == 2
    scale[:] = [Option(value=4, code="A", label="no"), Option(value=5, code="B", label="yes")]   # same list object
    assert parsing.parse_rating("B", scale).value == 5
    other = [Option(value=1, code="A", label="no"), Option(value=2, label="yes")]
    assert parsing.parse_rating("B", other).status == "out_of_range"


def test_the_options_block_is_made_once_per_scale_and_order(monkeypatch):
    from psyq import load_study
    from psyq.engine.administer.plan import plan_trials
    from psyq.engine.backends import make_backend
    from psyq.engine.design.study import BackendConfig

    made = []
    real = prompts.options_block

    def counted(instrument, order):
        made.append(order)
        return real(instrument, order)

    study = load_study("quickstart")   # IRI, 13 respondents, counterbalanced: two orders
    backend = make_backend(BackendConfig(id="b", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    expected = [t.request.messages for t in plan_trials(study, {"b": backend})]
    monkeypatch.setattr(prompts, "_blocks", {})
    monkeypatch.setattr(prompts, "options_block", counted)
    trials = list(plan_trials(study, {"b": backend}))
    assert [t.request.messages for t in trials] == expected
    assert len(trials) == 364 and sorted(made) == ["as_written", "reversed"]


class _Content:
    """A response body already read by the parser (at EOF), as aiohttp's StreamReader has it."""

    def __init__(self, body: bytes):
        self.body = body

    def is_eof(self) -> bool:
        return True

    def read_nowait(self) -> bytes:
        return self.body

    def iter_chunked(self, size: int):
        raise AssertionError("a body that has arrived is read whole, not chunk by chunk")


class _Response:
    def __init__(self, body: bytes):
        self.content = _Content(body)


def test_a_body_that_has_arrived_is_taken_whole_and_still_bounded():
    read = bodies.read_bounded
    assert asyncio.run(read(_Response(b'{"a": 1}'))) == (b'{"a": 1}', False)
    limit = bodies.MAX_BODY_BYTES
    assert asyncio.run(read(_Response(b"x" * limit))) == (b"x" * limit, False)
    body, too_long = asyncio.run(read(_Response(b"x" * (limit + 10))))
    assert too_long and len(body) == limit


def _queued(store: RunStore, records) -> None:
    async def finish_together():   # trials that end in one turn of the event loop: one group commit
        for record in records:
            store.put_trial_soon(record)
        await asyncio.sleep(0)
        store.flush()
    asyncio.run(finish_together())


def test_one_unstorable_trial_in_a_group_costs_no_other_trial_and_stops_the_caller(tmp_path):
    records = [_record(f"t{i}", REQUEST, RESPONSE) for i in range(3)]
    records[1].status = "not a status"   # the trials table's CHECK refuses it
    with RunStore(tmp_path / "run.sqlite") as store:
        with pytest.raises(sqlite3.IntegrityError):
            _queued(store, records)
        assert store.status_counts() == {"answered": 2}


def test_a_lone_surrogate_costs_its_group_nothing_and_is_stored_as_u_fffd(tmp_path):
    records = [_record(f"t{i}", REQUEST, RESPONSE) for i in range(3)]
    records[1].raw_text, records[2].answers[0].reason = "D \ud800", "half a pair: \udc00"
    with RunStore(tmp_path / "run.sqlite") as store:
        _queued(store, records)
        assert store.status_counts() == {"answered": 3}
        stored = store.db.execute("SELECT t.raw_text, a.reason FROM trials t JOIN answers a USING (trial_id) "
                                  "ORDER BY trial_id").fetchall()
    assert stored == [("D", None), ("D \ufffd", None), ("D", "half a pair: \ufffd")]


def test_the_store_writer_commits_each_group_says_why_one_failed_and_stops_quietly_at_a_cut_frame(tmp_path):
    """engine/store/writer_process.py, fed as the run feeds it: a group with an unstorable trial
    stores the others and names the error; a frame cut short (the run killed while writing it) is
    dropped and everything before it kept."""
    database = tmp_path / "run.sqlite"
    RunStore(database).close()   # the schema
    good, bad, cut = (_record(f"t{i}", REQUEST, RESPONSE) for i in range(3))
    bad.status = "not a status"
    source = (writer_process.frame(("setup", run_store.PRAGMAS, run_store.STATEMENTS))
              + writer_process.frame(("group", *run_store._rows([good, bad])))
              + writer_process.frame(("sync",))
              + writer_process.frame(("group", *run_store._rows([cut])))[:-10])
    events = io.StringIO()
    writer_process.serve(io.BytesIO(source), events, str(database))
    error, synced = events.getvalue().splitlines()
    assert error.startswith("error IntegrityError CHECK constraint failed") and synced == "synced"
    assert sqlite3.connect(database).execute("SELECT trial_id FROM trials").fetchall() == [("t0",)]
