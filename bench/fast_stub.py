"""A fast, zero-latency OpenAI-compatible stub for throughput benchmarks (own process).

``tests/stub_server.py`` (a threaded stdlib server with fault injection) tops out at a few
hundred requests a second on two cores and would measure itself rather than the client. This
stub is a bare ``asyncio.Protocol`` speaking just enough HTTP/1.1 (keep-alive, Content-Length
bodies) to answer every ``POST`` with one fixed chat-completion JSON and ``GET /health`` with
``{"status": "ok"}``. It parses nothing but the request head and never looks at the body, so its
cost per request is a few microseconds of Python plus the socket work.

Usage::

    python bench/fast_stub.py [--port 0] [--content D]

    python bench/fast_stub.py --choices A,B,C,D,E [--seed 1]

prints ``READY http://127.0.0.1:PORT/v1`` (flushed) once listening; serves until SIGTERM/SIGINT.
With ``--choices`` every POST gets one of the answers drawn at random (seeded, in arrival order):
noise-like answers, as a small model gives, for the statistics at scale (bench/report_scale.py).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import signal
import sys
from typing import Callable

HEAD_END = b"\r\n\r\n"


def completion_body(content: str) -> bytes:
    """The fixed chat-completion JSON every POST gets (an answer `content`, usage counts)."""
    return json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 1, "total_tokens": 121},
    }).encode()


def http_response(body: bytes) -> bytes:
    """A complete keep-alive HTTP/1.1 200 response carrying `body` as JSON."""
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    return head + body


class StubProtocol(asyncio.Protocol):
    """One connection: read each request (head and body) and write `answer(body)` for a POST, the
    health reply for a GET."""

    def __init__(self, answer: Callable[[bytes], bytes], get_reply: bytes):
        self.answer, self.get_reply = answer, get_reply
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(HEAD_END)
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            length = _content_length(head)
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body = bytes(self.buffer[end + 4:total])
            del self.buffer[:total]
            assert self.transport is not None
            self.transport.write(self.get_reply if head.startswith(b"get") else self.answer(body))


def _content_length(head: bytes) -> int:
    """The Content-Length of a lower-cased request head (0 when absent)."""
    at = head.find(b"\r\ncontent-length:")
    if at < 0:
        return 0
    start = at + len(b"\r\ncontent-length:")
    stop = head.find(b"\r\n", start)
    return int(head[start:stop if stop >= 0 else None].strip())


async def serve_with(port: int, answer: Callable[[bytes], bytes]) -> None:
    """Listen on 127.0.0.1:`port` until SIGTERM or SIGINT; a POST gets `answer(its body)` (a whole
    HTTP response). Prints ``READY <url>`` once listening."""
    get_reply = http_response(b'{"status": "ok"}')
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: StubProtocol(answer, get_reply), "127.0.0.1", port, backlog=1024)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"READY http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    await stop.wait()
    server.close()


async def serve(port: int, content: str, choices: list[str] | None = None, seed: int = 1) -> None:
    """Listen on 127.0.0.1:`port` until SIGTERM or SIGINT; POSTs get `content`, or one of `choices` at random."""
    if choices:
        rng = random.Random(seed)
        replies = {c: http_response(completion_body(c)) for c in choices}
        # 2^20 seeded draws, cycled: the same sequence in every run, no per-request random call.
        post_replies = itertools.cycle([replies[rng.choice(choices)] for _ in range(1 << 20)])
    else:
        post_replies = itertools.cycle([http_response(completion_body(content))])
    await serve_with(port, lambda body: next(post_replies))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fast fixed-answer OpenAI-compatible stub")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--content", default="D", help="the assistant's answer text (default D)")
    parser.add_argument("--choices", help="comma-separated answers, one drawn at random per POST (seeded)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    asyncio.run(serve(args.port, args.content, args.choices.split(",") if args.choices else None, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
