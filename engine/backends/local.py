"""The zero-configuration default: a real small model served by llama.cpp on 127.0.0.1.

On first use psyq builds llama.cpp's `llama-server` (`local_build.py`) and caches the binary under
the psyq cache (`local_cache.py`: ``$PSYQ_CACHE``, else ``$XDG_CACHE_HOME/psyq``, else
``~/.cache/psyq``); later runs reuse it.

The model is an entry of the catalogue (`engine/backends/catalogue.py`: Gemma 3 270M, a base
model, and SmolLM2-135M-Instruct) or a GGUF file of your own (`model: path/to/file.gguf`). A
catalogue model is fetched on first use and cached (`local_models.py`). The manifest, run id and
methods paragraph name the model and its SHA-256, never a path on your disk. Without `model:` a
study gets the default for its kind of answer (`catalogue.default_local_model`).

The server (`local_server.py`) is started on a free port, used through the OpenAI-compatible
backend, and stopped when the run ends; a JSON answer's free text is bounded to fit its tokens
(`json_bounds.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from psyq.engine.backends.base import BackendConfig, ChatRequest

from psyq.engine.files.errors import BackendError
from psyq.engine.backends.catalogue import CATALOGUE, INSTRUCT_DEFAULT, catalogue_entry
from psyq.engine.backends.json_bounds import bound_free_text
from psyq.engine.backends.local_build import (LLAMA_CPP_PACKAGE, LLAMA_CPP_VERSION, ensure_llama_server,
    llama_server_path)
from psyq.engine.backends.local_models import ensure_local_model
from psyq.engine.backends.local_server import DEFAULT_SERVING, SERVING, LlamaServer, Serving
from psyq.engine.backends.openai import OpenAIBackend
from psyq.engine.files.hashing import file_sha256

DEFAULT_TOP_LOGPROBS = 200  # llama-server returns as many as asked; digits often rank below 20


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
