"""Anthropic Message Batches: ``POST /v1/messages/batches`` with the requests inline, poll, read results_url.

Each request is ``{"custom_id", "params"}`` where params is exactly what the online path would
POST to /v1/messages (``backend.payload``). Result lines are ``{"custom_id", "result": {"type":
"succeeded", "message"}}`` or type errored / canceled / expired. The API has no metadata on a
batch, so a run killed in the instant between the provider's reply and the store's commit
cannot find that batch again (:attr:`AnthropicBatchClient.can_find` is False); psyq says so.
"""

from __future__ import annotations

from typing import Any, Iterator

from psyq.engine.backends.base import HttpBackend
from psyq.engine.backends.batch_api import BatchLine, BatchState, call, read_jsonl


class AnthropicBatchClient:
    """Message Batches on the Anthropic API.

    Example (made without a request; its methods call the API):
        >>> from psyq.engine.backends import make_backend
        >>> from psyq.engine.design.study import BackendConfig
        >>> client = AnthropicBatchClient(make_backend(BackendConfig(id="a", kind="anthropic", model="m")))
        >>> client.base, client.can_find
        ('https://api.anthropic.com/v1', False)
    """

    provider = "anthropic"
    can_find = False

    def __init__(self, backend: HttpBackend):
        self.backend = backend
        self.base = backend.base_url

    async def upload(self, requests: list[tuple[str, dict[str, Any]]]) -> None:
        """Nothing to upload: the requests go inline with the batch."""
        return None

    async def create(self, input_file_id: str | None, requests: list[tuple[str, dict[str, Any]]],
                     intent: str) -> str:
        # Not retried after a lost reply: without metadata, a second create could double the batch.
        reply = await call(self.backend, "POST", f"{self.base}/messages/batches", idempotent=False,
                           json_body={"requests": [{"custom_id": cid, "params": body} for cid, body in requests]})
        return str(reply["id"])

    async def find(self, intent: str) -> str | None:
        return None

    async def poll(self, batch_id: str) -> BatchState:
        b = await call(self.backend, "GET", f"{self.base}/messages/batches/{batch_id}")
        status = str(b.get("processing_status"))
        ended = status == "ended"
        return BatchState(batch_id, status, ended, [b["results_url"]] if ended and b.get("results_url") else [],
                          {k: int(v) for k, v in (b.get("request_counts") or {}).items() if isinstance(v, int)})

    async def results(self, state: BatchState) -> Iterator[BatchLine]:
        lines: list[BatchLine] = []
        for url in state.outputs:
            data = await call(self.backend, "GET", url, raw=True)
            lines.extend(parse_result_line(obj) for obj in read_jsonl(data))
        return iter([line for line in lines if line.custom_id])


def parse_result_line(obj: dict[str, Any] | None) -> BatchLine:
    """One results line as a :class:`BatchLine`.

    Example:
        >>> parse_result_line({"custom_id": "t1", "result": {"type": "expired"}})
        BatchLine(custom_id='t1', body=None, error='expired')
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
        return BatchLine("", None, "unreadable line")
    result = obj.get("result") if isinstance(obj.get("result"), dict) else {}
    kind = result.get("type")
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        return BatchLine(obj["custom_id"], result["message"])
    error = result.get("error") if isinstance(result.get("error"), dict) else {}
    detail = (error.get("error") or {}).get("message") if isinstance(error.get("error"), dict) else error.get("message")
    return BatchLine(obj["custom_id"], None, f"{kind}" + (f": {detail}" if detail else ""))
