"""A slow OpenAI-compatible stub with a fixed number of slots, like one GPU server (own process).

Every ``POST`` waits for one of ``--slots`` slots (further requests queue, as a vLLM or
llama.cpp server with that many parallel sequences queues them), holds it ``--latency`` seconds
and answers one fixed chat completion; ``GET /health`` answers ``{"status": "ok"}``. Its
throughput is therefore at most slots / latency requests a second whatever the client does, so a
client's gain from a second replica is the pool's doing, not the server's. aiohttp serves it
(cheap per request: the benchmark measures the latency-bound server, not the stub's CPU).

    python bench/slow_stub.py [--port 0] [--latency 0.1] [--slots 4] [--content D]

prints ``READY http://127.0.0.1:PORT/v1`` (flushed) once listening; serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from aiohttp import web


def make_app(latency_s: float, slots: int, content: str) -> web.Application:
    """The server: one fixed answer, at most `slots` requests being answered at a time."""
    gate = asyncio.Semaphore(slots)
    body = json.dumps({"id": "chatcmpl-slow", "object": "chat.completion", "model": "stub-model",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}}).encode()

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        async with gate:
            await asyncio.sleep(latency_s)
        return web.Response(body=body, content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/health", health)
    return app


async def serve(port: int, latency_s: float, slots: int, content: str) -> None:
    runner = web.AppRunner(make_app(latency_s, slots, content), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]   # the port chosen when --port 0
    print(f"READY http://127.0.0.1:{bound}/v1", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--content", default="D")
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.latency, args.slots, args.content))


if __name__ == "__main__":
    main()
