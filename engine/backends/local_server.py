"""psyq's llama-server process: how it serves a run's requests (:data:`SERVING`: reproducible or
fast), started on a free port of 127.0.0.1, stopped when the run ends or psyq dies.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from psyq.engine.files.errors import BackendError


@dataclass(frozen=True)
class Serving:
    """How psyq's llama-server serves a run's requests: a backend's `serving:` names one of
    :data:`SERVING`.

    llama.cpp's logits are not bit-identical across batch sizes (its server README, on
    `cache_prompt`). Two things change the batch a prompt is computed in from one run to the
    next: requests of several slots decoded together (continuous batching), and a prompt read
    partly from a slot's cache, whose content depends on which request came before. Measured on
    the quick start's requests (docs/local-models.md, "Same study, same answers"): either one
    alone makes the first-token probabilities of the same request differ between runs.

    Example:
        >>> SERVING["reproducible"].slots(4), SERVING["fast"].slots(4), SERVING["fast"].cache_prompt
        (1, 4, True)
    """

    name: str
    one_slot: bool         # one request computed at a time; else `concurrency` slots decoded together
    cache_prompt: bool     # a slot reuses the prompt prefix it holds from its previous request
    said: str              # what `psyq run` says when the server starts ({slots}: how many)

    def slots(self, concurrency: int) -> int:
        """llama-server's parallel slots (`-np`) for a backend with this `concurrency`."""
        return 1 if self.one_slot else concurrency


SERVING: dict[str, Serving] = {
    # Each prompt read whole, alone: its probabilities depend on the prompt only, not on what
    # else the server was doing, the order of requests, a resumed run or the concurrency.
    "reproducible": Serving("reproducible", one_slot=True, cache_prompt=False,
                            said="one request at a time, each prompt read whole: the same study gives the same "
                                 "probabilities, so the same answers; `serving: fast` is quicker but not "
                                 "reproducible, docs/local-models.md"),
    # Slots decoded together and each prompt's shared prefix (persona, instructions) read from
    # the cache: more requests a second; probabilities vary between runs (median .01, up to .1).
    "fast": Serving("fast", one_slot=False, cache_prompt=True,
                    said="{slots} slots decoded together, prompts read from the cache: the first token's "
                         "probabilities differ between runs of the same study, by up to about 0.1; "
                         "`serving: reproducible` gives the same answers, docs/local-models.md"),
}
DEFAULT_SERVING = "reproducible"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    # Runs in the child before exec: ask Linux to SIGTERM the server when psyq dies, even by
    # SIGKILL, so a killed run never leaves a model server behind. (Own session: a Ctrl-C
    # reaches psyq only, which then stops the server itself.)
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class LlamaServer:
    """A llama-server process on 127.0.0.1, healthy once :meth:`start` returns."""

    def __init__(self, binary: Path, model: Path, *, parallel: int = 4, ctx_size: int = 8192,
                 log_file: Path | None = None):
        self.binary, self.model, self.parallel, self.ctx_size = binary, model, parallel, ctx_size
        self.log_file = log_file
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120.0) -> None:
        self.port = free_port()
        log = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL
        # Each parallel slot gets ctx_size / parallel tokens, so the whole context is shared.
        # --swa-full: Gemma 3 uses sliding-window attention; with the default (window-sized)
        # cache llama-server can reuse little of a slot's previous prompt, so every item re-reads
        # most of the persona's system prompt and the instructions. A full-size cache lets it
        # reuse the whole shared prefix: twice the items/s with answer: logprobs
        # (bench/RESULTS.md), for ~420 MiB more resident memory at 4 slots × 8,192 tokens. It
        # matters only when the cache is used (serving: fast); one slot reading every prompt
        # whole (reproducible) holds one slot's cache.
        self.process = subprocess.Popen(
            [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
             "-c", str(self.ctx_size * self.parallel), "-np", str(self.parallel), "--swa-full"],
            stdout=log, stderr=log, start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BackendError(f"llama-server exited with code {self.process.returncode} at start"
                                   + (f"; see {self.log_file}" if self.log_file else ""))
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        self.stop()
        raise BackendError(f"llama-server did not become healthy within {timeout_s:.0f} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
