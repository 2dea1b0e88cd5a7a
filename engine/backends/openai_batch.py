"""The OpenAI Batch API: upload a JSONL file, create a batch, poll it, download its output.

Input line: ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` where
body is exactly what the online path would POST (``backend.payload``). Output and error
files hold ``{"custom_id", "response": {"status_code", "body"}, "error"}`` lines. A batch is
created with ``metadata.psyq_intent`` so that a run killed between "created" and "recorded"
finds it again by listing the batches (:meth:`OpenAIBatchClient.find`) instead of sending it twice.
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterator


from psyq.engine.backends.base import HttpBackend
from psyq.engine.backends.batch_api import BatchLine, BatchState, call, jsonl, read_jsonl
from psyq.engine.files.errors import BatchApiError

ENDED = {"completed", "failed", "expired", "cancelled"}
CHAT_URL = "/v1/chat/completions"
CREATE_ATTEMPTS = 4


class OpenAIBatchClient:
    """Batches on an OpenAI-compatible server (`base_url` ends in /v1).

    Example:
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> backend = make_backend(BackendConfig(id="v", kind="openai", model="m", base_url="http://127.0.0.1:8000/v1"))
        >>> client = OpenAIBatchClient(backend)
        >>> client.base, client.can_find
        ('http://127.0.0.1:8000/v1', True)
        >>> file_id = asyncio.run(client.upload([("t1", backend.payload(request))]))  # uploads  # doctest: +SKIP
    """

    provider = "openai"
    can_find = True

    def __init__(self, backend: HttpBackend):
        self.backend = backend
        self.base = backend.base_url

    async def upload(self, requests: list[tuple[str, dict[str, Any]]]) -> str:
        """Upload the requests as a batch input file; its file id."""
        import aiohttp   # imported by the backend's start(): a look-up

        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", jsonl({"custom_id": cid, "method": "POST", "url": CHAT_URL, "body": body}
                                     for cid, body in requests),
                       filename="psyq-batch.jsonl", content_type="application/jsonl")
        reply = await call(self.backend, "POST", f"{self.base}/files", data=form)
        return str(reply["id"])

    async def create(self, input_file_id: str | None, requests: list[tuple[str, dict[str, Any]]],
                     intent: str) -> str:
        """Create the batch from the uploaded file; its batch id.

        When the reply is lost (a dropped connection, a 5xx), the batch may exist all the same:
        it is looked up by its intent before the create is tried again, so it is never made twice.
        """
        body = {"input_file_id": input_file_id, "endpoint": CHAT_URL, "completion_window": "24h",
                "metadata": {"psyq_intent": intent}}
        for attempt in range(CREATE_ATTEMPTS):
            try:
                reply = await call(self.backend, "POST", f"{self.base}/batches", json_body=body, idempotent=False)
                return str(reply["id"])
            except BatchApiError as exc:
                if exc.fatal or (exc.status is not None and exc.status < 500) or attempt == CREATE_ATTEMPTS - 1:
                    raise
                found = await self.find(intent)
                if found is not None:
                    return found
                await asyncio.sleep(2.0 ** attempt)
        raise AssertionError("unreachable")

    async def find(self, intent: str) -> str | None:
        """The id of a batch created with this intent (a run killed before recording it), if any."""
        after: str | None = None
        for _ in range(100):   # at most 10,000 batches back
            url = f"{self.base}/batches?limit=100" + (f"&after={after}" if after else "")
            page = await call(self.backend, "GET", url)
            data = page.get("data") or []
            for batch in data:
                if (batch.get("metadata") or {}).get("psyq_intent") == intent:
                    return str(batch["id"])
            if not page.get("has_more") or not data:
                return None
            after = data[-1]["id"]
        return None

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's status now."""
        b = await call(self.backend, "GET", f"{self.base}/batches/{batch_id}")
        status = str(b.get("status"))
        errors = [f"{e.get('code')}: {e.get('message')}" for e in ((b.get("errors") or {}).get("data") or [])
                  if isinstance(e, dict)]
        return BatchState(batch_id, status, status in ENDED,
                          [f for f in (b.get("output_file_id"), b.get("error_file_id")) if f],
                          {k: int(v) for k, v in (b.get("request_counts") or {}).items() if isinstance(v, int)},
                          errors)

    async def results(self, state: BatchState) -> Iterator[BatchLine]:
        """Every result line of the ended batch (output and error files)."""
        lines: list[BatchLine] = []
        for file_id in state.outputs:
            data = await call(self.backend, "GET", f"{self.base}/files/{file_id}/content", raw=True)
            lines.extend(parse_output_line(obj) for obj in read_jsonl(data))
        return iter([line for line in lines if line.custom_id])


def parse_output_line(obj: dict[str, Any] | None) -> BatchLine:
    """One line of an output or error file as a :class:`BatchLine`.

    Example:
        >>> parse_output_line({"custom_id": "t1", "response": {"status_code": 500, "body": {}}, "error": None})
        BatchLine(custom_id='t1', body=None, error='HTTP 500')
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
        return BatchLine("", None, "unreadable line")
    cid = obj["custom_id"]
    error = obj.get("error")
    if isinstance(error, dict):
        return BatchLine(cid, None, f"{error.get('code')}: {error.get('message')}")
    response = obj.get("response") if isinstance(obj.get("response"), dict) else {}
    status = response.get("status_code")
    body = response.get("body")
    if status != 200 or not isinstance(body, dict):
        message = ((body or {}).get("error") or {}).get("message") if isinstance(body, dict) else None
        return BatchLine(cid, None, f"HTTP {status}" + (f": {message}" if message else ""))
    return BatchLine(cid, body)
