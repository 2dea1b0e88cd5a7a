"""A stub of the provider batch APIs on 127.0.0.1, for tests and bench/batch_roundtrip.py.

OpenAI: ``POST /v1/files`` (multipart, purpose batch), ``POST /v1/batches``, ``GET /v1/batches``
(list, newest first), ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``. Anthropic:
``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}`` and ``…/{id}/results``.

Each request of a batch is answered as tests/stub_server.py answers it online
(``default_answer``: a digit hashed from the request). Modes, set as attributes (also between
polls, from the test's thread):

- ``in_progress_polls``: a batch stays ``in_progress`` for this many status polls, then ends;
- ``fail_half_batches``: the first N batches created fail every second request (an error line);
- ``expire_batches``: the first N batches end ``expired`` with only their first half answered;
- ``reject_batches``: the first N batches end ``failed`` (as when the input file is invalid): no output;
- ``drop_create_replies``: the first N batch creations are done, but the connection is closed
  before the reply (the client cannot know whether its batch exists).

What it saw, for the tests: ``creations`` (batches created), ``answered`` (a Counter of the
successful results per custom_id: a count of 2 would be a request paid twice), ``uploads``,
``online`` (bodies POSTed to ``/v1/chat/completions``, served as online for re-asks) and ``seen``
(method and path of every HTTP request, in order of arrival).
Usage as a script: ``python tests/batch_stub.py [--port P]`` prints ``READY <base_url>``.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stub_server import default_answer, prompt_chars  # noqa: E402


class BatchStub:
    """The batch endpoints of OpenAI and Anthropic, in a thread (see the module docstring)."""

    def __init__(self, *, answer: Callable[[dict], str] = default_answer, in_progress_polls: int = 0,
                 fail_half_batches: int = 0, expire_batches: int = 0, reject_batches: int = 0,
                 drop_create_replies: int = 0, port: int = 0):
        self.answer = answer
        self.in_progress_polls = in_progress_polls
        self.fail_half_batches = fail_half_batches
        self.expire_batches = expire_batches
        self.reject_batches = reject_batches
        self.drop_create_replies = drop_create_replies
        self.port = port
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.creations = 0
        self.uploads = 0
        self.online: list[dict] = []   # bodies of online chat requests
        self.keys: set[str] = set()      # API keys seen in the Authorization / x-api-key headers
        self.answered: collections.Counter[str] = collections.Counter()
        self.seen: list[tuple[str, str]] = []   # (method, path) of every request received
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self.url = ""

    # -------------------------------------------------------------- lifecycle
    def start(self) -> "BatchStub":
        stub = self

        class Handler(_Handler):
            pass
        Handler.stub = stub
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> "BatchStub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -------------------------------------------------------------- batches
    def create(self, provider: str, requests: list[dict], metadata: dict | None) -> dict:
        with self.lock:
            self.creations += 1
            n = self.creations
            batch_id = f"batch_{n}" if provider == "openai" else f"msgbatch_{n}"
            batch = {"id": batch_id, "provider": provider, "requests": requests, "polls": 0, "status": "in_progress",
                     "metadata": metadata or {}, "created_at": time.time(), "n": n,
                     "fail_half": n <= self.fail_half_batches, "expire": n <= self.expire_batches,
                     "reject": n <= self.reject_batches}
            self.batches[batch_id] = batch
        return batch

    def poll(self, batch_id: str) -> dict | None:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return None
            if batch["status"] == "in_progress":
                batch["polls"] += 1
                if batch["polls"] > self.in_progress_polls:
                    self._finish(batch)
            return batch

    def _finish(self, batch: dict) -> None:
        """Answer every request (or not, by mode) and write the output / error files."""
        if batch["reject"]:
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_request", "line": 1,
                                                           "message": "stub: the batch was rejected"}]}
            batch["counts"] = {"total": len(batch["requests"]), "completed": 0, "failed": 0}
            batch["results"] = b""
            return
        ok, errors = [], []
        half = len(batch["requests"]) // 2
        for k, req in enumerate(batch["requests"]):
            cid, body = req["custom_id"], req["body"]
            if batch["expire"] and k >= half:
                errors.append((cid, "expired"))
            elif batch["fail_half"] and k % 2 == 1:
                errors.append((cid, "failed"))
            else:
                ok.append((cid, body))
                self.answered[cid] += 1
        batch["status"] = "expired" if batch["expire"] else "completed"
        batch["counts"] = {"total": len(batch["requests"]), "completed": len(ok), "failed": len(errors)}
        if batch["provider"] == "openai":
            out = [{"id": f"req_{i}", "custom_id": cid, "error": None,
                    "response": {"status_code": 200, "request_id": f"r{i}", "body": self._openai_body(body)}}
                   for i, (cid, body) in enumerate(ok)]
            err = [{"id": f"req_e{i}", "custom_id": cid, "response": None,
                    "error": {"code": "batch_expired", "message": "This request could not be executed before the "
                              "completion window expired."}} if why == "expired" else
                   {"id": f"req_e{i}", "custom_id": cid, "error": None,
                    "response": {"status_code": 500, "request_id": f"e{i}",
                                 "body": {"error": {"message": "stub server error", "type": "server_error"}}}}
                   for i, (cid, why) in enumerate(errors)]
            batch["output_file_id"] = self._put_file(out) if out else None
            batch["error_file_id"] = self._put_file(err) if err else None
        else:
            batch["results"] = _lines([{"custom_id": cid, "result": {"type": "succeeded",
                                                                      "message": self._anthropic_body(body)}}
                                       for cid, body in ok]
                                      + [{"custom_id": cid, "result": {"type": why if why == "expired" else "errored",
                                                                       **({} if why == "expired" else {"error": {
                                                                           "type": "error", "error": {
                                                                               "type": "api_error",
                                                                               "message": "stub error"}}})}}
                                         for cid, why in errors])

    def _put_file(self, rows: list[dict]) -> str:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = _lines(rows)
        return file_id

    def _openai_body(self, body: dict) -> dict:
        text = str(self.answer(body))
        return {"id": "chatcmpl-batch", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_chars(body) // 4, "completion_tokens": len(text) // 4 + 1}}

    def _anthropic_body(self, body: dict) -> dict:
        text = str(self.answer(body))
        return {"id": "msg_batch", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": prompt_chars(body) // 4, "output_tokens": len(text) // 4 + 1}}

    def openai_view(self, batch: dict) -> dict:
        return {"id": batch["id"], "object": "batch", "endpoint": "/v1/chat/completions",
                "status": batch["status"], "input_file_id": batch.get("input_file_id"),
                "output_file_id": batch.get("output_file_id"), "error_file_id": batch.get("error_file_id"),
                "metadata": batch["metadata"], "errors": batch.get("errors"),
                "request_counts": batch.get("counts") or {"total": len(batch["requests"]), "completed": 0,
                                                          "failed": 0}}

    def anthropic_view(self, batch: dict) -> dict:
        ended = batch["status"] != "in_progress"
        return {"id": batch["id"], "type": "message_batch",
                "processing_status": "ended" if ended else "in_progress",
                "request_counts": batch.get("counts") or {},
                "results_url": f"{self.url}/messages/batches/{batch['id']}/results" if ended else None}


def _lines(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def _multipart_file(content_type: str, raw: bytes) -> tuple[bytes | None, str | None]:
    """The `file` part and the `purpose` field of a multipart/form-data body."""
    m = re.search(r'boundary="?([^";]+)"?', content_type or "")
    if not m:
        return None, None
    file, purpose = None, None
    for part in raw.split(b"--" + m.group(1).encode()):
        head, _, data = part.partition(b"\r\n\r\n")
        if data.endswith(b"\r\n"):
            data = data[:-2]
        if b'name="file"' in head:
            file = data
        elif b'name="purpose"' in head:
            purpose = data.decode()
    return file, purpose


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub: BatchStub

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def _send(self, status: int, obj: Any = None, raw: bytes | None = None) -> None:
        payload = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if raw is None else "application/jsonl")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _note_key(self) -> None:
        with self.stub.lock:
            self.stub.seen.append((self.command, urlsplit(self.path).path))
        key = self.headers.get("x-api-key") or (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if key:
            self.stub.keys.add(key)

    def do_POST(self):
        self._note_key()
        stub, path, raw = self.stub, urlsplit(self.path).path.rstrip("/"), self._body()
        if path == "/v1/files":
            data, purpose = _multipart_file(self.headers.get("Content-Type", ""), raw)
            if data is None or purpose != "batch":
                return self._send(400, {"error": {"message": "need a file and purpose=batch"}})
            with stub.lock:
                stub.uploads += 1
                file_id = f"file-{len(stub.files) + 1}"
                stub.files[file_id] = data
            return self._send(200, {"id": file_id, "object": "file", "purpose": "batch", "bytes": len(data)})
        body = json.loads(raw or b"{}")
        if path == "/v1/batches":
            data = stub.files.get(body.get("input_file_id"))
            if data is None or body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
                return self._send(400, {"error": {"message": "bad batch request"}})
            requests = [json.loads(line) for line in data.splitlines() if line.strip()]
            if any(r.get("method") != "POST" or r.get("url") != "/v1/chat/completions" for r in requests):
                return self._send(400, {"error": {"message": "bad input line"}})
            batch = stub.create("openai", requests, body.get("metadata"))
            batch["input_file_id"] = body["input_file_id"]
            with stub.lock:
                drop = stub.drop_create_replies > 0
                stub.drop_create_replies -= drop
            if drop:   # created, but the reply never arrives
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return None
            return self._send(200, {**stub.openai_view(batch), "status": "validating"})
        if path == "/v1/chat/completions":   # online requests (re-asks with `reasks: online`)
            with stub.lock:
                stub.online.append(body)
            return self._send(200, stub._openai_body(body))
        if path == "/v1/messages/batches":
            requests = [{"custom_id": r["custom_id"], "body": r["params"]} for r in body.get("requests", [])]
            batch = stub.create("anthropic", requests, None)
            return self._send(200, stub.anthropic_view(batch))
        return self._send(404, {"error": {"message": f"no route for POST {path}"}})

    def do_GET(self):
        self._note_key()
        stub, parts = self.stub, urlsplit(self.path)
        path = parts.path.rstrip("/")
        if path == "/v1/batches":
            after = parse_qs(parts.query).get("after", [None])[0]
            listed = sorted(stub.batches.values(), key=lambda b: -b["n"])
            if after:
                listed = listed[[b["id"] for b in listed].index(after) + 1:]
            return self._send(200, {"object": "list", "data": [stub.openai_view(b) for b in listed[:100]],
                                    "has_more": len(listed) > 100})
        if m := re.fullmatch(r"/v1/batches/([^/]+)", path):
            batch = stub.poll(m.group(1))
            return self._send(200, stub.openai_view(batch)) if batch else self._send(404, {"error": {}})
        if m := re.fullmatch(r"/v1/files/([^/]+)/content", path):
            data = stub.files.get(m.group(1))
            return self._send(200, raw=data) if data is not None else self._send(404, {"error": {}})
        if m := re.fullmatch(r"/v1/messages/batches/([^/]+)", path):
            batch = stub.poll(m.group(1))
            return self._send(200, stub.anthropic_view(batch)) if batch else self._send(404, {"error": {}})
        if m := re.fullmatch(r"/v1/messages/batches/([^/]+)/results", path):
            batch = stub.batches.get(m.group(1))
            if batch and "results" in batch:
                return self._send(200, raw=batch["results"])
            return self._send(404, {"error": {}})
        return self._send(404, {"error": {"message": f"no route for GET {path}"}})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="batch-API stub")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--in-progress-polls", type=int, default=0)
    args = ap.parse_args(argv)
    stub = BatchStub(port=args.port, in_progress_polls=args.in_progress_polls).start()
    print(f"READY {stub.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    stub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
