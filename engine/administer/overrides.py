"""Command-line overrides of a study's backends (`psyq run` / `psyq plan` flags), keeping meaning.

Rules (also in docs/servers.md, "Overriding the study's backends"):

- ``--base-url URL`` points the study at another OpenAI-compatible server. With one backend in
  the study, that backend is kept and becomes kind ``openai`` at the new URL: its sampling
  settings (temperature, top_p, max_tokens, top_logprobs) and its pacing (concurrency, rate
  limits, timeout, retries) stay. With several backends they are replaced by one backend with
  psyq's defaults. ``--model`` is needed unless the study's one backend is already an
  ``openai`` backend with a model. The study's ``api_key_env`` is not carried to another URL
  (its key would be sent to another server): give ``--api-key-env`` for that.
- ``--model NAME`` names the model (without ``--base-url``: of every study backend). A backend
  whose model is set this way is named after the model (a valid id derived from it), so the
  report shows the model rather than a placeholder.
- ``--concurrency``, ``--rpm``, ``--tpm``, ``--temperature`` and ``--reasoning-effort`` apply to
  every backend, with or without ``--base-url``; the backends as changed are checked against what
  their models accept (engine/backends/capabilities.py) before anything is sent.

Every changed setting is an :class:`Override` (flag, backend, field, old, new), recorded in the
run's manifest. Pacing (concurrency, rpm, tpm) is not part of the run id, so resuming with
another concurrency resumes the same run; the temperature and the model are, so changing them
starts another run (engine/administer/record.py). :func:`check_command_line_backend` checks
``--base-url`` and ``--api-key-env`` as a study's backend is checked (also those of the helper
model of `psyq judge` and `psyq perturb`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from psyq.engine.backends.base import BackendConfig
from psyq.engine.backends.endpoint import base_url_problem, key_env_problem
from psyq.engine.backends.registry import URL_KIND, backend_class
from psyq.engine.files.errors import InputError, Problem

# Settings shown with their origin when overrides are given (the ones that decide answers or pace).
SHOWN = ("base_url", "model", "api_key_env", "temperature", "top_p", "max_tokens", "top_logprobs",
         "reasoning_effort", "reasoning_budget", "concurrency", "requests_per_minute", "tokens_per_minute")
# What --base-url keeps of the study's one backend: settings that still mean something at another server.
KEPT_FOR_NEW_URL = ("temperature", "top_p", "max_tokens", "top_logprobs", "reasoning_effort", "reasoning_budget",
                    "concurrency", "requests_per_minute",
                    "tokens_per_minute", "timeout_s", "max_retries", "backoff_s", "max_backoff_s")
PER_BACKEND_FLAGS = {"concurrency": "--concurrency", "requests_per_minute": "--rpm",
                     "tokens_per_minute": "--tpm", "temperature": "--temperature",
                     "reasoning_effort": "--reasoning-effort"}


@dataclass(frozen=True)
class CliOverrides:
    """The override flags as given (None: not given)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    concurrency: int | None = None
    rpm: float | None = None
    tpm: float | None = None
    temperature: float | None = None
    reasoning_effort: str | None = None

    def any(self) -> bool:
        return any(v is not None for v in vars(self).values())

    def per_backend(self) -> dict[str, Any]:
        values = {"concurrency": self.concurrency, "requests_per_minute": self.rpm,
                  "tokens_per_minute": self.tpm, "temperature": self.temperature,
                  "reasoning_effort": self.reasoning_effort}
        return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class Override:
    """One setting changed by a flag (recorded in the manifest under ``overrides``)."""

    flag: str
    backend: str
    field: str
    old: Any
    new: Any

    def to_json(self) -> dict[str, Any]:
        return {"flag": self.flag, "backend": self.backend, "field": self.field, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class Overridden:
    """The backends to use, what the flags changed, and where each shown setting came from."""

    configs: list[BackendConfig]
    overrides: list[Override]
    origins: list[str]          # one line per backend (empty when no flag was given)


def check_command_line_backend(base_url: str | None, api_key_env: str | None) -> None:
    """--base-url and --api-key-env checked as a study's backend is (InputError with the option's name).

    Example:
        >>> check_command_line_backend("http://127.0.0.1:8080/v1", "MY_KEY")
    """
    problems = []
    if base_url is not None and (why := base_url_problem(base_url)):
        problems.append(Problem("--base-url", None, None, "", why))
    if api_key_env is not None and (why := key_env_problem(api_key_env)):
        problems.append(Problem("--api-key-env", None, None, "", why))
    if problems:
        raise InputError(problems)


def backend_id_for_model(model: str) -> str:
    """A valid backend id derived from a model name (a GGUF path gives its file name).

    Example:
        >>> backend_id_for_model("meta-llama/Llama-3.1-8B-Instruct")
        'meta-llama_Llama-3.1-8B-Instruct'
        >>> backend_id_for_model("/models/gemma-3-270m.Q4_K_M.gguf")
        'gemma-3-270m.Q4_K_M'
        >>> backend_id_for_model("@@@")
        'model'
    """
    name = Path(model).stem if model.lower().endswith(".gguf") else model
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    name = re.sub(r"^[^A-Za-z0-9]+", "", name).rstrip("_.-")
    return name or "model"


def _problem(flag: str, message: str) -> Problem:
    return Problem(flag, None, None, "", message)


def _config(values: dict[str, Any], flag: str) -> BackendConfig:
    try:
        return BackendConfig(**values)
    except ValidationError as exc:
        raise InputError([_problem(flag, f"{'.'.join(map(str, e['loc']))}: {e['msg']}")
                          for e in exc.errors()]) from None


def apply_overrides(backends: list[BackendConfig], flags: CliOverrides, study: str = "the study") -> Overridden:
    """The study's `backends` with the command-line `flags` applied (InputError if they clash).

    Example:
        >>> study = [BackendConfig(id="vllm", kind="openai", model="qwen", base_url="http://a:8000/v1",
        ...                        concurrency=32, temperature=0.7)]
        >>> out = apply_overrides(study, CliOverrides(base_url="http://b:8000/v1"))
        >>> c = out.configs[0]; (c.id, c.base_url, c.model, c.concurrency, c.temperature)
        ('vllm', 'http://b:8000/v1', 'qwen', 32, 0.7)
        >>> [o.field for o in out.overrides]
        ['base_url']
    """
    if not flags.any():
        return Overridden(list(backends), [], [])
    if flags.api_key_env and not flags.base_url:
        raise InputError([_problem("--api-key-env", "goes with --base-url (a study's backends name their key "
                                   "variable in the study file)")])
    overrides: list[Override] = []
    origins: dict[str, dict[str, str]] = {}
    configs: list[BackendConfig] = []
    if flags.base_url:
        config, origin = _new_url(backends, flags, overrides, study)
        configs, origins = [config], {config.id: origin}
    else:
        ids = [backend_id_for_model(flags.model) if flags.model else b.id for b in backends]
        if flags.model and len(set(ids)) < len(ids):   # several backends, one model: keep them apart
            ids = [f"{backend_id_for_model(flags.model)}_{b.id}" for b in backends]
        for backend, new_id in zip(backends, ids):
            values = backend.model_dump()
            origin = {f: f"study backend '{backend.id}'" for f in SHOWN}
            if flags.model:
                values.update(model=flags.model, id=new_id)
                overrides.append(Override("--model", new_id, "model", backend.model, flags.model))
                if new_id != backend.id:
                    overrides.append(Override("--model", new_id, "id", backend.id, new_id))
                origin["model"] = "--model"
            configs.append(_config(values, "--model"))
            origins[new_id] = origin
    final = []
    for config in configs:
        values = config.model_dump()
        for field, value in flags.per_backend().items():
            if values[field] != value:
                overrides.append(Override(PER_BACKEND_FLAGS[field], config.id, field, values[field], value))
            values[field] = value
            origins[config.id][field] = PER_BACKEND_FLAGS[field]
        final.append(_config(values, ", ".join(PER_BACKEND_FLAGS[f] for f in flags.per_backend()) or "--model"))
    lines = [_origin_line(c, origins[c.id]) for c in final]
    if flags.base_url and len(backends) > 1:
        lines.insert(0, f"--base-url: {study}'s {len(backends)} backends ({', '.join(b.id for b in backends)}) are "
                        f"replaced by one backend '{final[0].id}' with psyq's default settings")
    return Overridden(final, overrides, lines)


def _new_url(backends: list[BackendConfig], flags: CliOverrides, overrides: list[Override],
             study: str) -> tuple[BackendConfig, dict[str, str]]:
    """The one backend that --base-url puts in place of the study's (see the module docstring)."""
    only = backends[0] if len(backends) == 1 else None
    model = flags.model or (only.model if only is not None and only.kind == URL_KIND else None)
    if not model:
        what = (f"the study's backend '{only.id}' is kind {only.kind}" if only is not None
                else f"the study has {len(backends)} backends")
        raise InputError([_problem("--base-url", f"needs --model NAME ({what}, so there is no model name to keep)")])
    new_id = backend_id_for_model(flags.model) if flags.model else only.id
    if only is not None:
        values = {f: getattr(only, f) for f in KEPT_FOR_NEW_URL}
        origin = {f: f"study backend '{only.id}'" for f in SHOWN}
        before = {"id": only.id, "kind": only.kind, "base_url": only.base_url, "model": only.model,
                  "api_key_env": only.api_key_env}
    else:
        values = {}
        origin = {f: "psyq default" for f in SHOWN}
        before = {"id": [b.id for b in backends]}
        overrides.append(Override("--base-url", new_id, "backends", [b.id for b in backends], [new_id]))
    values.update(id=new_id, kind=URL_KIND, base_url=flags.base_url, model=model, api_key_env=flags.api_key_env)
    origin.update(base_url="--base-url", api_key_env="--api-key-env" if flags.api_key_env else "not set")
    if flags.model:
        origin["model"] = "--model"
    if only is not None:
        if only.api_key_env and not flags.api_key_env:
            origin["api_key_env"] = (f"not set: the study's {only.api_key_env} is not sent to another URL "
                                     f"(--api-key-env NAME to send a key)")
        for field, old in before.items():
            new = values[field]
            if old != new:
                flag = {"base_url": "--base-url", "model": "--model", "api_key_env": "--api-key-env",
                        "id": "--model" if flags.model else "--base-url", "kind": "--base-url"}[field]
                overrides.append(Override(flag, new_id, field, old, new))
    return _config(values, "--base-url"), origin


def _origin_line(config: BackendConfig, origin: dict[str, str]) -> str:
    """One line saying, for each shown setting of `config`, its value and where it came from."""
    def shown(value: Any) -> str:
        return "none" if value is None else str(value)

    parts = [f"{f} {shown(getattr(config, f))} ({origin.get(f, 'psyq default')})" for f in SHOWN]
    if config.top_logprobs is None:   # the kind's own default applies: say which, it decides answers
        index = SHOWN.index("top_logprobs")
        parts[index] += f" -> {backend_class(config.kind).default_top_logprobs}, the {config.kind} backend's default"
    return f"backend '{config.id}' ({config.kind}): " + "; ".join(parts)
