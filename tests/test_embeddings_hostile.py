"""An embeddings server that misbehaves (`answer: ssr`, engine/backends/embeddings.py and the
phase engine/administer/ssr_rating.py): every reply a server can send is met without a traceback.

A real loopback HTTP server (:class:`HostileEmbeddings`) answers ``POST /v1/embeddings`` as each
test scripts it, one reply per request: OpenAI's CreateEmbeddingResponse as documented
(github.com/openai/openai-openapi; the shapes in tests/data/provider_schemas/openai/), or that reply
broken — no ``data``, an embedding that is not a list of numbers, too few or too many embeddings,
vectors of different lengths, an empty or non-JSON body, a 200 MB body streamed — or an error
(400/401 with OpenAI's error object, 429/500/503). The chat replies come from tests/stub_server.py,
with test_ssr.py's study (5 anchor statements and 4 answers, 3 texts a request, one request at a time).

Each case checks what psyq promises of a reply: no traceback; an error a retry cannot fix is shown
at once in the provider's words and stops the run (exit 6); a reply that is retried is retried; the
answers whose embeddings did not come stay missing (``unrated``) with the reason stored; what was
stored is never asked for again, and a rerun against a sound server finishes every answer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from psyq.engine.backends.bodies import MAX_BODY_BYTES
from psyq.engine.backends.embeddings import EmbeddingsClient, reply_bound
from psyq.engine.files.errors import BackendError
from psyq.engine.store.embeddings import text_key
from cli_helper import psyq_in_process
from stub_server import StubServer
from test_ssr import REPLIES, embedding, reply, write_study

ANCHOR_TEXTS = [f"statement {v}" for v in range(1, 6)]
ALL_TEXTS = ANCHOR_TEXTS + list(REPLIES.values())     # 9 texts: 3 requests of 3
HUGE_BYTES = 200 * 2**20


def openai_reply(inputs: list[str], vectors: list[list[float]] | None = None) -> dict:
    """OpenAI's CreateEmbeddingResponse for `inputs` (test_ssr's vectors unless given)."""
    vectors = vectors if vectors is not None else [embedding(t) for t in inputs]
    return {"object": "list", "model": "embed-small",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}}


def _broken(fault: str, inputs: list[str]) -> dict:
    """A 200 reply that is JSON but not the documented shape."""
    good = openai_reply(inputs)
    data = good["data"]
    if fault == "no_data":
        return {"object": "list", "model": "embed-small"}
    if fault == "words":
        data[0]["embedding"] = ["zero", "point", "one"]
    elif fault == "base64":   # what a server sends for encoding_format: base64, which psyq does not ask
        data[0]["embedding"] = base64.b64encode(struct.pack("<5f", *embedding(inputs[0]))).decode()
    elif fault == "nan":
        data[0]["embedding"] = [float("nan")] * 5
    elif fault == "no_index":
        del data[1]["index"]
    elif fault == "fewer":
        del data[-1]
    elif fault == "more":
        data.append({"object": "embedding", "index": len(data), "embedding": embedding("extra")})
    elif fault == "ragged":
        data[1]["embedding"] = data[1]["embedding"] + [0.5]
    elif fault == "six_numbers":   # a reply whose vectors agree with each other, not with the earlier replies
        for entry in data:
            entry["embedding"] = entry["embedding"] + [0.0]
    return good


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def do_POST(self):
        server: HostileEmbeddings = self.server.hostile
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            fault = server.script.pop(0) if server.script else "ok"
            server.received.append((fault, list(body["input"])))
        inputs = body["input"]
        if fault in ("429", "500", "503"):
            self._reply(int(fault), {"error": {"message": f"busy ({fault})", "type": "server_error"}},
                        {"Retry-After": "0"})
        elif fault == "401":
            self._reply(401, {"error": {"message": "Incorrect API key provided: sk-wr***ong. You can find your API "
                                                   "key at https://platform.openai.com/account/api-keys.",
                                        "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})
        elif fault == "400":
            self._reply(400, {"error": {"message": "This model's maximum context length is 8192 tokens, however "
                                                   "you requested 9000 tokens. Please reduce your prompt.",
                                        "type": "invalid_request_error", "param": None, "code": None}})
        elif fault == "empty":
            self._raw(200, b"", "application/json")
        elif fault == "not_json":
            self._raw(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
        elif fault == "huge":
            self._huge()
        elif fault == "ok":
            self._reply(200, openai_reply(inputs))
        elif fault == "pretty_3072":   # text-embedding-3-large's length, indented as OpenAI's reference shows it
            vectors = [[(-1) ** j * 0.012345678901234567 * (1 + (i + j) % 7) for j in range(3072)]
                       for i in range(len(inputs))]
            self._raw(200, json.dumps(openai_reply(inputs, vectors), indent=2).encode(), "application/json")
        else:
            self._reply(200, _broken(fault, inputs))

    def _reply(self, status: int, obj: dict, headers: dict | None = None) -> None:
        self._raw(status, json.dumps(obj).encode(), "application/json", headers)

    def _raw(self, status: int, payload: bytes, kind: str, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _huge(self) -> None:
        """200 MB of one JSON reply, streamed a megabyte at a time; counts what the client took."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(HUGE_BYTES))
        self.end_headers()
        head = b'{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": ['
        chunk = b"0.125, " * (2**20 // 7)
        self.close_connection = True
        try:
            self.wfile.write(head)
            self.server.hostile.streamed += len(head)
            while self.server.hostile.streamed + len(chunk) <= HUGE_BYTES:
                self.wfile.write(chunk)
                self.server.hostile.streamed += len(chunk)
        except OSError:   # the client hung up: what it took is counted
            pass


class HostileEmbeddings:
    """``POST /v1/embeddings`` on 127.0.0.1, answering each request by the next fault of `script`
    ("ok" once it is used up); `received` holds (fault, inputs) of every request, in order."""

    def __init__(self, script: list[str] = ()):
        self.script, self.received, self.streamed = list(script), [], 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.hostile = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "HostileEmbeddings":
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def sent(self, fault: str | None = None) -> list[str]:
        """Every text sent, in order (of the requests answered with `fault`, if given)."""
        return [t for f, inputs in self.received if fault in (None, f) for t in inputs]


def study(tmp_path: Path, chat: str, embeddings: str, **settings) -> Path:
    """test_ssr's study, its embeddings server's settings changed by `settings`."""
    path = write_study(tmp_path, chat, embeddings)
    spec = yaml.safe_load(path.read_text())
    spec["protocol"]["ssr"]["embeddings"].update(settings)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run(path: Path):
    """`psyq run` of `path` in this process (an exception psyq does not catch fails the test)."""
    out = psyq_in_process("run", path, "--runs-dir", path.parent / "runs")
    assert "Traceback" not in out.stderr, out.stderr
    return out


def answers(tmp_path: Path) -> dict[tuple[str, str], tuple[str, str | None, str]]:
    """(respondent, item) -> (answer status, its reason, trial status)."""
    database = next((tmp_path / "runs").rglob("run.sqlite"))
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT t.respondent_id, a.item_id, a.status, a.reason, t.status "
                          "FROM answers a JOIN trials t USING (trial_id)").fetchall()
    return {(r[0], r[1]): r[2:] for r in rows}


def stored_texts(tmp_path: Path) -> set[str]:
    database = next((tmp_path / "runs").rglob("run.sqlite"))
    with sqlite3.connect(database) as db:
        keys = {row[0] for row in db.execute("SELECT text_sha256 FROM embeddings")}
    return {t for t in ALL_TEXTS if text_key(t) in keys}


def resume_finishes(tmp_path: Path, path: Path, chat: StubServer, embeddings: HostileEmbeddings,
                    stored_before: set[str]) -> None:
    """A rerun, the server's script spent (it answers soundly), sends no chat request, asks only
    for the texts not stored (each once), and every answer is then mapped."""
    assert embeddings.script == []
    chat_before, asked_before = len(chat.requests), len(embeddings.received)
    out = run(path)
    asked = [t for _, inputs in embeddings.received[asked_before:] for t in inputs]
    assert out.returncode == 0, out.stderr
    assert len(chat.requests) == chat_before                       # no reply asked twice
    assert not set(asked) & stored_before                          # nothing stored is asked again
    assert sorted(asked) == sorted(set(ALL_TEXTS) - stored_before)  # the rest, each once
    assert {(s, t) for s, _, t in answers(tmp_path).values()} == {("answered", "answered")}


# ------------------------------------------------------------------ a 200 that is not an embeddings reply

MALFORMED = {
    "no_data": "the reply has no `data` list",
    "words": "data[0].embedding is not a list of finite numbers",
    "base64": "data[0].embedding is not a list of finite numbers",
    "nan": "data[0].embedding is not a list of finite numbers",
    "no_index": "data[1] has no whole-number `index`",
    "ragged": "the embeddings have different lengths (5 and 6 numbers)",
    "empty": "the reply is empty",
    "not_json": "the reply is not JSON: <html><body><h1>502 Bad Gateway</h1></body></html>",
    "fewer": "the server returned 2 embeddings for 3 texts",
    "more": "the server returned 4 embeddings for 3 texts",
    "six_numbers": "the server's embeddings have 6 numbers, those it gave before 5",
}


# The rerun is the same whatever was wrong, once the answers wait: checked for one fault of each
# way the client meets it (read by the base class and retried; not JSON; counted by the client;
# compared across batches), to keep the file's time short.
RERUN = {"no_data", "not_json", "fewer", "six_numbers"}


@pytest.mark.parametrize("fault", list(MALFORMED))
def test_a_malformed_reply_leaves_its_answers_waiting_with_the_reason_and_a_rerun_finishes(tmp_path, fault):
    """The first request is answered, the second is broken (no retries allowed): the texts of the
    first are kept, the answers wait (unrated, their trials missing) with what was wrong stored as
    their reason and said in the run's notes; the rerun asks only for what is not kept."""
    with StubServer(answer=reply) as chat, HostileEmbeddings(["ok", fault]) as embeddings:
        path = study(tmp_path, chat.url, embeddings.url)
        out = run(path)
        assert [f for f, _ in embeddings.received] == ["ok", fault]   # stopped after the failure
        kept = stored_texts(tmp_path)
        assert kept == set(embeddings.sent("ok")) == set(ANCHOR_TEXTS[:3])
        assert out.returncode == 0, out.stderr
        assert "still wait to be mapped" in out.stderr and MALFORMED[fault] in out.stderr, out.stderr
        for status, reason, trial in answers(tmp_path).values():
            assert (status, trial) == ("unrated", "missing")
            assert MALFORMED[fault] in reason and "run the study again" in reason
        if fault in RERUN:
            resume_finishes(tmp_path, path, chat, embeddings, kept)


def test_a_malformed_reply_is_retried_like_a_malformed_chat_reply(tmp_path):
    with StubServer(answer=reply) as chat, HostileEmbeddings(["no_data", "not_json"]) as embeddings:
        out = run(study(tmp_path, chat.url, embeddings.url, max_retries=2))
        faults = [f for f, _ in embeddings.received]
    assert out.returncode == 0, out.stderr
    assert faults == ["no_data", "not_json", "ok", "ok", "ok"]
    assert {(s, t) for s, _, t in answers(tmp_path).values()} == {("answered", "answered")}


# ------------------------------------------------------------------ errors a retry can fix, or not

def test_429_and_5xx_are_retried_and_the_run_finishes(tmp_path):
    """Retry-After: 0 on each, so the test does not wait; the batch is sent again until answered."""
    with StubServer(answer=reply) as chat, HostileEmbeddings(["ok", "429", "500", "503"]) as embeddings:
        out = run(study(tmp_path, chat.url, embeddings.url, max_retries=3))
        faults = [f for f, _ in embeddings.received]
        second = [inputs for _, inputs in embeddings.received[1:5]]
    assert out.returncode == 0, out.stderr
    assert faults == ["ok", "429", "500", "503", "ok", "ok"]
    assert second == [second[0]] * 4                     # the same batch, until it was answered
    assert {(s, t) for s, _, t in answers(tmp_path).values()} == {("answered", "answered")}


def test_5xx_after_the_last_retry_leaves_the_answers_waiting_and_a_rerun_finishes(tmp_path):
    with StubServer(answer=reply) as chat, HostileEmbeddings(["ok", "500", "503"]) as embeddings:
        path = study(tmp_path, chat.url, embeddings.url, max_retries=1)
        out = run(path)
        assert len(embeddings.received) == 3
        assert out.returncode == 0 and "gave up after 2 attempts; last: HTTP 503" in out.stderr, out.stderr
        assert {r[0] for r in answers(tmp_path).values()} == {"unrated"}
        assert all("HTTP 503" in r[1] for r in answers(tmp_path).values())
        resume_finishes(tmp_path, path, chat, embeddings, stored_texts(tmp_path))


@pytest.mark.parametrize("status, words", [
    ("401", "HTTP 401 (invalid_api_key): Incorrect API key provided: sk-wr***ong."),
    ("400", "HTTP 400 (invalid_request_error): This model's maximum context length is 8192 tokens"),
])
def test_a_refusal_stops_the_run_at_once_in_the_providers_words(tmp_path, status, words):
    """Not retried (one request after the first), said in the provider's words (exit 6); what
    arrived before is kept and the answers wait with those words; a rerun finishes them."""
    with StubServer(answer=reply) as chat, HostileEmbeddings(["ok", status]) as embeddings:
        path = study(tmp_path, chat.url, embeddings.url, max_retries=3)
        out = run(path)
        assert [f for f, _ in embeddings.received] == ["ok", status]
        assert out.returncode == 6, out.stderr
        assert "the server refused a request: " + words in out.stderr        # said when it came
        assert "in a way retrying cannot fix: " + words in out.stderr         # and why the run stopped
        assert all(words in r[1] for r in answers(tmp_path).values())
        kept = stored_texts(tmp_path)
        assert kept == set(ANCHOR_TEXTS[:3])
        resume_finishes(tmp_path, path, chat, embeddings, kept)


# ------------------------------------------------------------------ the size of a reply

def test_a_200_mb_reply_is_refused_past_its_bound_without_being_read(tmp_path):
    """The client stops reading at the bound (4 MB for 3 texts a request): the server could write
    only what the loopback socket's buffers took beyond it. The run stops (exit 1), saying which
    setting makes replies smaller; what arrived before is kept and a rerun finishes."""
    with StubServer(answer=reply) as chat, HostileEmbeddings(["ok", "huge"]) as embeddings:
        path = study(tmp_path, chat.url, embeddings.url, max_retries=3)
        out = run(path)
        assert [f for f, _ in embeddings.received] == ["ok", "huge"]       # too long is not retried
        assert embeddings.streamed < 40 * 2**20, embeddings.streamed
        assert out.returncode == 1, out.stderr
        assert f"the server's reply is longer than {MAX_BODY_BYTES:,} bytes" in out.stderr, out.stderr
        assert "protocol.ssr.embeddings.batch_size" in out.stderr
        assert all("longer than" in r[1] for r in answers(tmp_path).values())
        resume_finishes(tmp_path, path, chat, embeddings, stored_texts(tmp_path))


def test_a_full_batch_of_long_embeddings_is_read(tmp_path):
    """64 texts (the default batch) of 3,072 numbers (text-embedding-3-large), indented as
    OpenAI's reference shows a reply: about 5 MB, more than a chat reply's bound (4 MB), within an
    embeddings reply's (128 KB a text)."""
    texts = [f"text {i}" for i in range(64)]
    kept: list[list[float]] = []

    async def embed() -> int:
        client = EmbeddingsClient.for_server(server.url, "text-embedding-3-large", max_retries=0)
        await client.start()
        try:
            return await client.embed_all(texts, 64, lambda batch, vectors: kept.extend(vectors))
        finally:
            await client.close()

    with HostileEmbeddings(["pretty_3072"]) as server:
        assert asyncio.run(embed()) == 1
    assert len(kept) == 64 and {len(v) for v in kept} == {3072}
    assert kept[1][:2] == [0.012345678901234567 * 2, -0.012345678901234567 * 3]


def test_an_embeddings_reply_is_bounded_by_its_texts():
    assert reply_bound(3) == MAX_BODY_BYTES                 # never less than a chat reply's
    assert reply_bound(64) == 64 * 128 * 1024               # 8 MB
    assert reply_bound(2048) == 64 * 2**20                  # at most 64 MB, whatever the batch


def test_what_the_client_raises_is_a_backend_error():
    """A wrong count raised as ValueError escaped the phase (a traceback): it is a BackendError."""
    async def fewer() -> None:
        client = EmbeddingsClient.for_server(server.url, "m", max_retries=0)
        await client.start()
        try:
            await client.embed(["a", "b", "c"])
        finally:
            await client.close()

    with HostileEmbeddings(["fewer"]) as server:
        with pytest.raises(BackendError, match="the server returned 2 embeddings for 3 texts"):
            asyncio.run(fewer())
