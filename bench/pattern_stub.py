"""An OpenAI-compatible stub that answers per persona and per item, in a chosen pattern (own process).

bench/fast_stub.py answers without reading the request (a fixed reply, or one drawn at random in
arrival order). This stub reads each request body: the persona's ``serial`` attribute from the
system prompt (bench/common.py's cohorts give every persona a distinct one: ``- serial: 17``) and
the item(s) from the user message — ``Statement: TEXT`` when one item is asked, the numbered
``Statements:`` list when the whole instrument is (``presentation: whole_instrument``) — and gives
every (persona, item) its own answer, the same whichever way the item is asked and in whatever
order requests arrive (a pure function of the seed, the serial and the item's text). Patterns:

``random``
    each option with equal probability, independently per persona and item: pure noise.
``small-model``
    what a small model gives (bench/grm_vs_mirt.py's ``personas_like``, here per request): a latent
    ``style · acquiescence(persona) + shift(item) + noise(persona, item)`` cut so that the second and
    third options take most answers, the first and fourth few and the last option none (a category
    nobody uses); the persona's acquiescence raises its answers to every item alike, so once
    reverse-keyed items are keyed they correlate negatively with the others (mixed signs).

Replies: the option's code (``B``) for ``answer: text``; ``{"answer": "B"}`` for ``answer: json``
per item; for a whole instrument ``{"1": "B", "2": "C", …}`` (json) or one ``1: B`` line per
statement (text). The options are read from the prompt's ``Options:`` block, in the order shown.

Usage::

    python bench/pattern_stub.py --pattern small-model [--seed 1] [--style 0.15] [--port 0]

prints ``READY http://127.0.0.1:PORT/v1`` (flushed) once listening; serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from hashlib import blake2b
from statistics import NormalDist

from fast_stub import completion_body, http_response, serve_with

PATTERNS = ("random", "small-model")
CUTS = (-1.6, 0.1, 1.5)          # first | second | third | fourth option; the last option never
SERIAL = re.compile(r"^- serial: (\d+)$", re.M)
STATEMENT = re.compile(r"\nStatement: (.*?)\n\nOptions:\n", re.S)
STATEMENTS = re.compile(r"\nStatements:\n(.*?)\n\nAnswer every statement", re.S)
NUMBERED = re.compile(r"^(\S+)\. (.*)$")
_NORMAL = NormalDist()


def uniform(*key: object) -> float:
    """A number in (0, 1), a fixed function of `key` (BLAKE2b of its text)."""
    digest = blake2b(repr(key).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") + 0.5) / 2**64


def normal(*key: object) -> float:
    """A standard normal draw, a fixed function of `key`."""
    return _NORMAL.inv_cdf(uniform(*key))


class Answerer:
    """The answer of persona `serial` to the item worded `text`, given the options shown."""

    def __init__(self, pattern: str, seed: int, style: float):
        if pattern not in PATTERNS:
            raise ValueError(f"pattern must be one of {PATTERNS}")
        self.pattern, self.seed, self.style = pattern, seed, style
        self.acquiescence: dict[int, float] = {}
        self.shift: dict[str, float] = {}

    def option(self, serial: int, text: str, options: list[str]) -> str:
        if self.pattern == "random":
            return options[int(uniform(self.seed, "random", serial, text) * len(options))]
        if serial not in self.acquiescence:
            self.acquiescence[serial] = normal(self.seed, "acquiescence", serial)
        if text not in self.shift:
            self.shift[text] = 0.3 * normal(self.seed, "shift", text)
        latent = self.style * self.acquiescence[serial] + self.shift[text] + normal(self.seed, "noise", serial, text)
        level = sum(latent > cut for cut in CUTS)
        return options[min(level, len(options) - 2)] if len(options) > 1 else options[0]

    def reply(self, body: bytes) -> str:
        """The assistant's text for one chat-completion request body."""
        request = json.loads(body)
        messages = request["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = next(m["content"] for m in messages if m["role"] == "user")    # the question (re-asks follow it)
        found = SERIAL.search(system)
        serial = int(found.group(1)) if found else -1
        options = _options(user)
        json_answer = "Reply with JSON only" in user
        one = STATEMENT.search(user)
        if one:
            code = self.option(serial, one.group(1), options)
            return json.dumps({"answer": code}) if json_answer else code
        block = STATEMENTS.search(user)
        if not block:
            return options[0] if options else "A"
        answers = {}
        for line in block.group(1).split("\n"):
            numbered = NUMBERED.match(line)
            if numbered:
                answers[numbered.group(1)] = self.option(serial, numbered.group(2), options)
        if json_answer:
            return json.dumps(answers)
        return "\n".join(f"{number}: {code}" for number, code in answers.items())


def _options(user: str) -> list[str]:
    """The option codes of the prompt's ``Options:`` block, in the order shown."""
    at = user.find("\nOptions:\n")
    if at < 0:
        return ["A", "B", "C", "D", "E"]
    block = user[at + len("\nOptions:\n"):].split("\n\n", 1)[0]
    return [line.split(" = ", 1)[0].strip() for line in block.split("\n") if line.strip()]


async def serve(port: int, pattern: str, seed: int, style: float) -> None:
    """Listen on 127.0.0.1:`port` until SIGTERM or SIGINT, answering in `pattern`."""
    answerer = Answerer(pattern, seed, style)
    await serve_with(port, lambda body: http_response(completion_body(answerer.reply(body))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="OpenAI-compatible stub answering per persona and item")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pattern", choices=PATTERNS, default="small-model")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--style", type=float, default=0.15,
                        help="small-model: weight of the persona's acquiescence (bench/grm_vs_mirt.py's 0.15)")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.port, args.pattern, args.seed, args.style))
    return 0


if __name__ == "__main__":
    sys.exit(main())
