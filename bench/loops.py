"""Minimal client loops: the ceiling each HTTP client reaches against a zero-latency stub.

One loop = `concurrency` workers posting the same chat request until `requests` have been
answered, each reading the JSON body and the answer text (the least any client must do). Run
one loop per process so that no event loop, pool or garbage carries over between measurements::

    python bench/loops.py --client aiohttp --url http://127.0.0.1:PORT/v1 --concurrency 64 \\
        --requests 3000 --payload payload.json

prints one JSON line: client, concurrency, requests, seconds, rate (requests/s), errors.
Clients: ``httpx`` (plain ``httpx.AsyncClient``), ``httpx-aiohttp`` (``HttpxAiohttpClient``:
the httpx API over aiohttp's transport), ``aiohttp`` (``aiohttp.ClientSession``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, Awaitable, Callable

Post = Callable[[], Awaitable[str]]


async def _workers(post: Post, concurrency: int, requests: int) -> int:
    """Run `requests` posts with `concurrency` workers; return the number that failed."""
    remaining = requests
    errors = 0

    async def worker() -> None:
        nonlocal remaining, errors
        while remaining > 0:
            remaining -= 1
            try:
                await post()
            except Exception:  # a benchmark loop counts failures; it does not retry
                errors += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return errors


async def run_httpx(url: str, payload: dict[str, Any], concurrency: int, requests: int, *,
                    over_aiohttp: bool) -> tuple[float, int]:
    """The loop with httpx's own transport, or with httpx over aiohttp's (`over_aiohttp`)."""
    import httpx
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(60.0, connect=10.0)
    if over_aiohttp:
        from httpx_aiohttp import HttpxAiohttpClient
        client: httpx.AsyncClient = HttpxAiohttpClient(limits=limits, timeout=timeout)
    else:
        client = httpx.AsyncClient(limits=limits, timeout=timeout)
    endpoint = f"{url}/chat/completions"

    async def post() -> str:
        response = await client.post(endpoint, json=payload)
        response.raise_for_status()
        return response.json()["choices"][0]["message"]["content"]

    async with client:
        began = time.perf_counter()
        errors = await _workers(post, concurrency, requests)
        return time.perf_counter() - began, errors


async def run_aiohttp(url: str, payload: dict[str, Any], concurrency: int, requests: int) -> tuple[float, int]:
    """The loop with a plain aiohttp ClientSession."""
    import aiohttp
    endpoint = f"{url}/chat/completions"
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        async def post() -> str:
            async with session.post(endpoint, json=payload) as response:
                response.raise_for_status()
                body = await response.json()
            return body["choices"][0]["message"]["content"]

        began = time.perf_counter()
        errors = await _workers(post, concurrency, requests)
        return time.perf_counter() - began, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one raw client loop against a stub")
    parser.add_argument("--client", choices=["httpx", "httpx-aiohttp", "aiohttp"], required=True)
    parser.add_argument("--url", required=True, help="base URL ending in /v1")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--payload", required=True, help="JSON file holding the request body")
    args = parser.parse_args(argv)
    with open(args.payload) as handle:
        payload = json.load(handle)
    if args.client == "aiohttp":
        seconds, errors = asyncio.run(run_aiohttp(args.url, payload, args.concurrency, args.requests))
    else:
        seconds, errors = asyncio.run(run_httpx(args.url, payload, args.concurrency, args.requests,
                                                over_aiohttp=args.client == "httpx-aiohttp"))
    print(json.dumps({"client": args.client, "concurrency": args.concurrency, "requests": args.requests,
                      "seconds": seconds, "rate": args.requests / seconds, "errors": errors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
