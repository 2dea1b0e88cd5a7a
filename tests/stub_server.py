"""A small OpenAI- and Anthropic-compatible HTTP stub server that can inject faults.

Standard library only: a ``ThreadingHTTPServer`` speaking HTTP/1.1 (keep-alive, exact
Content-Length) on 127.0.0.1, so clients talk to it over real loopback HTTP.

In-process use::

    with StubServer(faults=["429", "ok"], latency_s=0.01) as srv:
        httpx.post(srv.url + "/chat/completions", json={...})
        srv.requests[0].outcome   # "429"

As a script (own process)::

    python tests/stub_server.py --port 0 [--fault-rate 0.2 --seed 1 --latency 0.0
                                          --rpm-limit N --record FILE]

prints ``READY http://127.0.0.1:PORT/v1`` (flushed) once listening and serves until
SIGTERM/SIGINT.  With ``--record`` one JSON line per request received is appended to FILE
(``time``, ``path``, ``messages``, ``outcome``; ``system`` too when the body had one),
flushed per line.

Endpoints: ``GET /health``, ``GET /v1/models``, ``POST /v1/chat/completions`` (OpenAI),
``POST /v1/messages`` (Anthropic), ``POST /v1/embeddings`` (OpenAI; see "Embeddings" below). With ``tokenizer=True`` (``--tokenizer``) also llama.cpp's
``POST /apply-template`` ({"messages"} -> {"prompt"}: :func:`toy_template`) and ``POST /tokenize``
({"content"} -> {"tokens"}: :func:`toy_tokens`), and the OpenAI replies' ``usage.prompt_tokens``
is then the toy tokenizer's count of the templated prompt, as llama-server counts its own
(without it: characters of the messages // 4). The record file's lines also hold ``body``.

Prompt cache (``prompt_cache="openai"`` / ``"llamacpp"``, ``--prompt-cache KIND``): the stub
remembers every system prompt it has answered; a later request with the same system prompt
reports ``len(system) // 4`` cached prompt tokens (the first one: 0), as
``usage.prompt_tokens_details.cached_tokens`` ("openai") or ``timings.cache_n`` ("llamacpp");
Anthropic replies then carry ``cache_read_input_tokens`` / ``cache_creation_input_tokens``
(the system prompt's tokens read or written) with ``input_tokens`` the rest, as Anthropic counts.
Every usage block sent is kept in ``sent_usage`` (in order of sending).

Per POST request the outcome is decided in this order: bad path/body -> 404/400
(outcomes "not_found"/"bad_request"); a request the provider would refuse (see "Provider
contracts" below) -> 400 (outcome "bad_request", the error message in ``Recorded.error`` and in
the record file's ``error``); rpm limit exceeded -> 429 (outcome "429", does
not consume a scripted fault); next scripted fault, if any; with ``pathological_every=N``,
every Nth POST gets the next kind of ``pathological_kinds`` (cycling through them); else with
probability ``fault_rate`` a kind drawn from ``fault_kinds`` (``random.Random(seed)``); else "ok".

Pathological kinds (``PATHOLOGICAL_KINDS``) answer 200 with a reply shaped to break a client:
``content_list`` (content as ``[{"type": "text", "text": …}]``, which is legitimate and holds the
normal answer), ``content_dict`` / ``content_number`` / ``content_bool`` (content not text),
``logprob_null_token`` / ``logprob_inf`` / ``logprob_nan`` / ``logprob_huge`` (logprobs sent
whether asked or not, one entry broken: token null, logprob Infinity, NaN or 1e308),
``nested_brackets`` (content: 5,000 nested ``[`` then ``]``), ``long_text`` (the answer
followed by 40,000 spaces and letters), ``huge_body`` (a 5 MiB body), ``empty_body`` (200
with no body), ``no_choices`` (``{"choices": []}``), ``message_string`` (message is a
string), ``nested_body`` (the whole body 5,000 arrays deep).
Logprobs (an OpenAI request with ``logprobs: true``): the reply's one content token is the most
probable token of the next-token distribution, with the ``top_logprobs`` most probable
alternatives as OpenAI documents them (``choices[0].logprobs.content[0].top_logprobs``). The
distribution is :data:`LOGPROB_DISTRIBUTION` for every request, or ``distribution(body)`` when a
``distribution`` callback is given (pairs of token and probability, most probable first).
``latency_s`` is applied to every POST before it is answered (whatever the outcome).
The record (``requests`` and the record file) is written when the outcome is decided,
before any latency or hang, so a request the client gave up on is still counted.

What was served: an OpenAI reply's ``model`` is the model requested unless a ``served(body)``
callback returns another ``model`` (a provider serving a dated snapshot for an alias) and a
``system_fingerprint`` (OpenAI's chat completion object has both); an Anthropic reply's ``model``
likewise (its message object has no fingerprint).

Embeddings
----------
``POST /v1/embeddings`` answers OpenAI's CreateEmbeddingRequest [O1]: ``model`` (a string) and
``input``, a string or a list of strings (each non-empty; at most 2,048 of them) [O1]; anything else
is refused with 400 and OpenAI's error object (our wording). The reply is a CreateEmbeddingResponse
[O1]: ``{"object": "list", "data": [{"object": "embedding", "embedding": [floats], "index": i},
...], "model", "usage": {"prompt_tokens", "total_tokens"}}``, one entry per input in input order,
each text's vector given by the ``embedding`` callback (default :func:`hashed_embedding`: the same
text gets the same vector, of :data:`EMBEDDING_DIMENSIONS` numbers, or of ``dimensions`` when the
request sets it [O1]); ``prompt_tokens`` is the stub's usual ``len(text) // 4 + 1`` per text.
Scripted and random faults apply as to chat requests (429, 500, 503, timeout, drop, garbage); the
kinds that shape a chat reply (pathological, invalid_answer, refusal) answer normally.

Provider contracts (reasoning and thinking models)
--------------------------------------------------
What follows makes the stub hold requests to the rules the providers publish, chosen from the
request alone as the real APIs choose them. A request to ``stub-model`` (or any model outside
:data:`OPENAI_REASONING_MODELS`) on ``/v1/chat/completions`` is answered exactly as before, and
so is an Anthropic request without ``thinking`` and without a forcing ``tool_choice`` (apart from
the required ``max_tokens``).

OpenAI ``POST /v1/chat/completions`` with a reasoning model: a ``model`` that, lower-cased,
matches a pattern of :data:`OPENAI_REASONING_MODELS` (``fnmatch``; the o1, o3, o4 and GPT-5
families, the same patterns as psyq's own capability table; the choice of names is ours [O1]).

- Refused with HTTP 400 and OpenAI's error object ``{"error": {"message", "type":
  "invalid_request_error", "param", "code"}}`` [O1], the first failing check in this order (the
  order is ours): ``max_tokens`` (any non-null value) [O1, O3]; ``temperature`` other than 1
  [O3]; ``top_p`` (any non-null value) [O3]; ``logprobs: true``, then ``top_logprobs`` (any
  non-null value) [O2, O3]; ``reasoning_effort`` not one of :data:`REASONING_EFFORTS` (null is
  the default) [O1]; ``max_completion_tokens`` not an integer [O1].
- Reasoning tokens are spent inside ``max_completion_tokens`` [O1]: :data:`REASONING_TOKENS` for
  the request's effort (default ``medium`` [O1]; the numbers are our deterministic choice), then
  the answer's ``len(text) // 4 + 1`` tokens (the stub's usual count). If both fit (or no
  ``max_completion_tokens`` was sent): the answer, ``finish_reason`` "stop", ``completion_tokens``
  = reasoning + answer. If not: ``content`` "" (the stub never sends a partial answer),
  ``finish_reason`` "length" [O1], ``completion_tokens`` = the budget.
  ``usage.completion_tokens_details.reasoning_tokens`` is always sent [O1] (at most the budget).
- The answer is the one the stub gives any model (the ``answer`` callback; by default a digit).

Anthropic ``POST /v1/messages`` (any model):

- ``max_tokens`` is required [A1]: without it, 400 with Anthropic's error shape ``{"type":
  "error", "error": {"type": "invalid_request_error", "message"}}`` [A1] (as every 400 below).
- ``thinking: {"type": "enabled", "budget_tokens": N}`` [A1]: N must be an integer >= 1024 and
  less than ``max_tokens`` [A1, A4]; with thinking on, a ``temperature`` other than 1, any
  ``top_k``, a ``top_p`` outside [0.95, 1] and a ``tool_choice`` that forces tool use (``any`` or
  ``tool``) are refused [A2, A4]. The reply's content starts with a thinking block ``{"type":
  "thinking", "thinking", "signature"}`` [A1] (a fixed short text and a signature derived from
  the messages), then the answer block. The stub's thinking always spends the whole budget N
  (deterministic, the worst case; real models may think less, and return summarised thinking
  shorter than the tokens billed [A1]): ``usage.output_tokens`` = N + the answer's tokens, and
  ``usage.output_tokens_details.thinking_tokens`` = N [A1]. When N + the answer's tokens exceed
  ``max_tokens``: ``stop_reason`` "max_tokens" [A1], ``output_tokens`` = ``max_tokens`` and no
  answer block (the stub never sends a partial one). Other thinking types ("disabled",
  "adaptive" [A1]) are answered as without thinking.
- ``tools`` with ``tool_choice: {"type": "tool", "name": X}`` (or ``{"type": "any"}``: the first
  tool) [A1, A3]: the content is one ``tool_use`` block ``{"type": "tool_use", "id", "name": X,
  "input"}`` [A1] and nothing before it (nor after) [A3], ``stop_reason`` "tool_use" [A1]. Its
  ``input`` is the answer callback's reply when that is a JSON object, else
  :func:`schema_instance` of the tool's ``input_schema`` built around the reply (a digit fills a
  number or picks an enum value). A tool name not among ``tools`` is refused (our wording).
  ``max_tokens`` applies as above. The scripted "invalid_answer" and "refusal" outcomes still
  reply with a text block.

Sources (facts only; no code or prose was copied). The error messages marked *verbatim* in the
code are the wording of real API replies quoted in the cited threads; the others are ours.

[O1] OpenAI's OpenAPI document, github.com/openai/openai-openapi ``openapi.yaml`` (commit
     f85dbe22, 2026-08-21): ``POST /chat/completions`` (parameter support differs for reasoning
     models, see the reasoning guide); ``Reasoning`` ("gpt-5 and o-series models only");
     ``CreateChatCompletionRequest``: ``max_tokens`` deprecated for ``max_completion_tokens`` and
     not compatible with o-series models, ``max_completion_tokens`` an integer bound that includes
     visible output and reasoning tokens; ``ReasoningEffort``: none, minimal, low, medium, high,
     xhigh, max, default medium, nullable; ``CreateChatCompletionResponse``: ``finish_reason``
     "length" when the request's token maximum was reached; ``CompletionUsage``:
     ``completion_tokens_details.reasoning_tokens`` (tokens generated for reasoning); ``Error`` /
     ``ErrorResponse``: ``message``, ``type``, ``param``, ``code`` all present (param and code
     nullable) under ``error``.
[O2] OpenAI reasoning guide, platform.openai.com/docs/guides/reasoning (read in stored copies):
     GPT-5 (and gpt-5-mini, gpt-5-nano), o3, o3-mini, o4-mini and o1 as reasoning models,
     ``reasoning_effort`` in Chat Completions. The copies read did not show the guide's list of
     unsupported parameters, so logprobs rest on a reply: the only one found (o4-mini, quoted in
     confident-ai/deepeval#2184) is a 403 "You are not allowed to request logprobs from this
     model" with param and code null; the stub answers 400 naming the param instead (our choice).
[O3] OpenAI API replies quoted in issue threads (verbatim wording, type
     "invalid_request_error"): max_tokens, code "unsupported_parameter":
     griptape-ai/ComfyUI-Griptape#312 (gpt-5), ITSpecialist111/ai_automation_suggester#38
     (o1-preview), fish2018/YPrompt#26 (gpt-5.1); temperature, code "unsupported_value":
     gabrii/Cursor-Azure-GPT-5#33, owndev/Open-WebUI-Functions#98 (GPT-5), OpenHands/OpenHands#4131
     (o1-mini); top_p, code "unsupported_parameter": aandrew-me/tgpt#333 (o1),
     lfnovo/open-notebook#107 (GPT-5).
[A1] Anthropic's Python SDK types (MIT; generated from Anthropic's OpenAPI spec),
     github.com/anthropics/anthropic-sdk-python ``src/anthropic/types/`` (commit 009b0353,
     2026-08-07): ``message_create_params.py`` (``max_tokens`` required; ``thinking`` blocks come
     before the final answer, budget at least 1,024 and counted in ``max_tokens``; temperature
     default 1.0), ``thinking_config_enabled_param.py`` (``budget_tokens`` >= 1024 and less than
     ``max_tokens``), ``thinking_config_param.py`` (enabled, disabled, adaptive),
     ``thinking_block.py``, ``tool_use_block.py``, ``tool_param.py`` (``input_schema``: the JSON
     schema of the input the model produces), ``tool_choice_tool_param.py`` and
     ``tool_choice_any_param.py``, ``stop_reason.py`` / ``message.py`` ("max_tokens": the
     requested ``max_tokens`` was exceeded; "tool_use": the model invoked a tool), ``usage.py``
     and ``output_tokens_details.py`` (``output_tokens`` is the inclusive total;
     ``thinking_tokens`` counts the raw reasoning, not the possibly summarised text),
     ``shared/error_response.py`` and ``shared/invalid_request_error.py``.
[A2] Anthropic extended-thinking guide, platform.claude.com/docs/en/build-with-claude/
     extended-thinking, "Feature compatibility": thinking is not compatible with temperature or
     top_k changes nor with forced tool use; with thinking, top_p may be set between 0.95 and 1
     (the 2025 text also listed top_p as incompatible; the stub follows the current one);
     "Extended thinking with tool use": only tool_choice auto or none, any or tool give an error.
     Read in stored copies and as quoted in anthropics/claude-code#19414 and
     run-llama/llama_index#19641.
[A3] Anthropic tool-use guide, "Forcing tool use": with tool_choice any or tool the assistant
     turn is prefilled to force the tool, so no text comes before the tool_use block (as quoted
     in anthropics/claude-code#19414).
[A4] Anthropic API replies quoted in threads (verbatim wording): "max_tokens: Field required"
     (quoted in public client tests and a tutorial's recorded curl reply);
     "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
     (themaximalist/llm.js#30); max_tokens vs budget_tokens (ProfSynapse/nexus#17,
     liuw1535/antigravity2api-nodejs#149); temperature (MartialBE/one-hub#529); top_k
     (quarkiverse/quarkus-langchain4j#1812); forced tool use (run-llama/llama_index#19641,
     mastra-ai/mastra#7507, usestrix/strix#503).
"""

from __future__ import annotations

import argparse
import base64
import collections
import fnmatch
import hashlib
import json
import math
import random
import re
import signal
import socket
import socketserver
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

MODEL_ID = "stub-model"
REFUSAL_TEXT = "As an AI language model, I don't have personal feelings."
INVALID_ANSWER_TEXT = "banana"
GARBAGE_BODY = b"<html>oops</html>"

# Pathological replies: HTTP 200 with a body a careless client crashes on (see _pathological).
PATHOLOGICAL_KINDS = ("content_list", "content_dict", "content_number", "content_bool", "logprob_null_token",
                      "logprob_inf", "logprob_nan", "logprob_huge", "nested_brackets", "long_text", "huge_body",
                      "empty_body", "no_choices", "message_string", "nested_body")
FAULT_KINDS = ("ok", "429", "500", "503", "timeout", "drop", "garbage", "invalid_answer", "refusal",
               *PATHOLOGICAL_KINDS)
DEFAULT_FAULT_KINDS = ("429", "500", "timeout", "drop", "garbage")
LONG_TEXT_CHARS = 40_000             # the reply that once blocked the event loop for 23 s
HUGE_BODY_BYTES = 5 * 2**20          # over psyq's 4 MiB cap on a reply body
NESTING = 5_000                      # brackets deep

# Fixed next-token distribution for logprobs requests, sorted by probability
# (ties keep this order), unless a `distribution` callback gives one per request.
LOGPROB_DISTRIBUTION: tuple[tuple[str, float], ...] = (
    ("3", 0.30),
    ("4", 0.25),
    ("2", 0.20),
    ("1", 0.10),
    (" The", 0.10),
    ("I", 0.05),
)

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
EMBEDDING_DIMENSIONS = 16
MAX_EMBEDDING_INPUTS = 2048          # OpenAI: an input array holds at most 2,048 items [O1]
MESSAGES_PATH = "/v1/messages"
TEMPLATE_PATH = "/apply-template"
TOKENIZE_PATH = "/tokenize"
_TOY_TOKEN = re.compile(r"\w+|[^\w\s]")

# ------------------------------------------------------------------ provider contracts
# (see "Provider contracts" in the module docstring for what each rule does and its source)

# The one table of OpenAI reasoning models: fnmatch patterns of the request's lower-cased model.
OPENAI_REASONING_MODELS: tuple[str, ...] = ("o1", "o1-*", "o3", "o3-*", "o4-*", "gpt-5", "gpt-5-*", "gpt-5.*")
# OpenAPI ReasoningEffort values [O1]; a null or missing reasoning_effort means the default.
REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
DEFAULT_REASONING_EFFORT = "medium"
# Reasoning tokens the stub spends per effort: our deterministic choice, growing with the effort.
REASONING_TOKENS: dict[str, int] = {"none": 0, "minimal": 16, "low": 64, "medium": 256, "high": 1024,
                                    "xhigh": 2048, "max": 4096}
MIN_THINKING_BUDGET = 1024          # Anthropic thinking.budget_tokens >= 1024 [A1]
THINKING_TOP_P = (0.95, 1.0)        # top_p allowed with thinking [A2]
THINKING_TEXT = "The stub considers the question before it answers."

# OpenAI error wording. Verbatim [O3]: max_tokens, temperature, and the top_p form of
# "unsupported parameter" (used for logprobs/top_logprobs too: our extension, see [O2]).
OPENAI_MAX_TOKENS_MESSAGE = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                             "Use 'max_completion_tokens' instead.")
OPENAI_TEMPERATURE_MESSAGE = ("Unsupported value: 'temperature' does not support {value} with this model. "
                              "Only the default (1) value is supported.")
OPENAI_UNSUPPORTED_MESSAGE = "Unsupported parameter: '{param}' is not supported with this model."
# Ours (no reply found to copy):
OPENAI_EFFORT_MESSAGE = "Invalid value: {value}. Supported values are: {allowed}."
OPENAI_INTEGER_MESSAGE = "Invalid type for '{param}': expected an integer, but got {value} instead."

# Anthropic error wording. Verbatim [A4]:
ANTHROPIC_MAX_TOKENS_MESSAGE = "max_tokens: Field required"
ANTHROPIC_BUDGET_MIN_MESSAGE = "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
ANTHROPIC_BUDGET_MAX_MESSAGE = ("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                                "documentation at https://docs.claude.com/en/docs/build-with-claude/"
                                "extended-thinking#max-tokens-and-context-window-size")
ANTHROPIC_TEMPERATURE_MESSAGE = ("`temperature` may only be set to 1 when thinking is enabled. Please consult our "
                                 "documentation at https://docs.anthropic.com/en/docs/build-with-claude/"
                                 "extended-thinking#important-considerations-when-using-extended-thinking")
ANTHROPIC_TOP_K_MESSAGE = ("`top_k` must be unset when thinking is enabled. Please consult our documentation at "
                           "https://docs.claude.com/en/docs/build-with-claude/"
                           "extended-thinking#important-considerations-when-using-extended-thinking")
ANTHROPIC_FORCED_TOOL_MESSAGE = "Thinking may not be enabled when tool_choice forces tool use."
# Ours:
ANTHROPIC_TOP_P_MESSAGE = "`top_p` must be between 0.95 and 1 when thinking is enabled."
ANTHROPIC_INTEGER_MESSAGE = "{field}: Input should be a valid integer"
ANTHROPIC_UNKNOWN_TOOL_MESSAGE = "tool_choice.name: no tool named {name!r} in tools"
ANTHROPIC_NO_TOOLS_MESSAGE = "tool_choice forces tool use but no tools were given"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_openai_reasoning_model(model: Any) -> bool:
    """Whether a chat request's model is one of :data:`OPENAI_REASONING_MODELS`.

    Example:
        >>> [is_openai_reasoning_model(m) for m in ("gpt-5-mini", "O3", "o4-mini", "gpt-4o", "stub-model")]
        [True, True, True, False, False]
    """
    name = model.lower() if isinstance(model, str) else ""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in OPENAI_REASONING_MODELS)


def openai_contract_problem(body: dict) -> tuple[str, str, str] | None:
    """(param, code, message) of the first parameter an OpenAI reasoning model refuses, or None
    (always None for other models)."""
    if not is_openai_reasoning_model(body.get("model")):
        return None
    if body.get("max_tokens") is not None:
        return "max_tokens", "unsupported_parameter", OPENAI_MAX_TOKENS_MESSAGE
    temperature = body.get("temperature")
    if temperature is not None and not (_is_number(temperature) and temperature == 1):
        return "temperature", "unsupported_value", OPENAI_TEMPERATURE_MESSAGE.format(value=json.dumps(temperature))
    if body.get("top_p") is not None:
        return "top_p", "unsupported_parameter", OPENAI_UNSUPPORTED_MESSAGE.format(param="top_p")
    if body.get("logprobs") not in (None, False):
        return "logprobs", "unsupported_parameter", OPENAI_UNSUPPORTED_MESSAGE.format(param="logprobs")
    if body.get("top_logprobs") is not None:
        return "top_logprobs", "unsupported_parameter", OPENAI_UNSUPPORTED_MESSAGE.format(param="top_logprobs")
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        allowed = ", ".join(f"'{e}'" for e in REASONING_EFFORTS)
        return "reasoning_effort", "invalid_value", OPENAI_EFFORT_MESSAGE.format(value=json.dumps(effort),
                                                                                 allowed=allowed)
    budget = body.get("max_completion_tokens")
    if budget is not None and not _is_int(budget):
        return ("max_completion_tokens", "invalid_type",
                OPENAI_INTEGER_MESSAGE.format(param="max_completion_tokens", value=json.dumps(budget)))
    return None


def openai_reasoning_tokens(body: dict) -> int | None:
    """Reasoning tokens the stub spends for a chat request (None: not a reasoning model)."""
    if not is_openai_reasoning_model(body.get("model")):
        return None
    return REASONING_TOKENS[body.get("reasoning_effort") or DEFAULT_REASONING_EFFORT]


def thinking_budget(body: dict) -> int | None:
    """budget_tokens of an Anthropic request with ``thinking.type`` "enabled" (None otherwise)."""
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        return thinking.get("budget_tokens")
    return None


def forced_tool(body: dict) -> dict | None:
    """The tool an Anthropic request's tool_choice forces ("tool": the one named; "any": the first)."""
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    if kind == "tool":
        return next((t for t in tools if t.get("name") == choice.get("name")), None)
    if kind == "any":
        return tools[0] if tools else None
    return None


def anthropic_contract_problem(body: dict) -> str | None:
    """The message of the first rule of the Messages API an Anthropic request breaks, or None."""
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return ANTHROPIC_MAX_TOKENS_MESSAGE
    if not _is_int(max_tokens):
        return ANTHROPIC_INTEGER_MESSAGE.format(field="max_tokens")
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    forces = kind in ("any", "tool")
    if forces and forced_tool(body) is None:
        if kind == "tool" and body.get("tools"):
            return ANTHROPIC_UNKNOWN_TOOL_MESSAGE.format(name=choice.get("name"))
        return ANTHROPIC_NO_TOOLS_MESSAGE
    thinking = body.get("thinking")
    if not (isinstance(thinking, dict) and thinking.get("type") == "enabled"):
        return None
    budget = thinking.get("budget_tokens")
    if not _is_int(budget):
        return ANTHROPIC_INTEGER_MESSAGE.format(field="thinking.enabled.budget_tokens")
    if budget < MIN_THINKING_BUDGET:
        return ANTHROPIC_BUDGET_MIN_MESSAGE
    if max_tokens <= budget:
        return ANTHROPIC_BUDGET_MAX_MESSAGE
    temperature = body.get("temperature")
    if temperature is not None and not (_is_number(temperature) and temperature == 1):
        return ANTHROPIC_TEMPERATURE_MESSAGE
    if body.get("top_k") is not None:
        return ANTHROPIC_TOP_K_MESSAGE
    top_p = body.get("top_p")
    if top_p is not None and not (_is_number(top_p) and THINKING_TOP_P[0] <= top_p <= THINKING_TOP_P[1]):
        return ANTHROPIC_TOP_P_MESSAGE
    if forces:
        return ANTHROPIC_FORCED_TOOL_MESSAGE
    return None


def _pick(options: list, answer: str) -> Any:
    """The option equal to the answer (as text), else the answer digit's option (1 = first), else the first."""
    key = answer.strip()
    for option in options:
        if str(option) == key:
            return option
    if re.fullmatch(r"\d+", key):
        return options[(int(key) - 1) % len(options)]
    return options[0]


def schema_instance(schema: Any, answer: str) -> Any:
    """A value that satisfies a simple JSON schema, built deterministically around an answer text.

    Handles ``const``, ``enum``, ``anyOf``/``oneOf`` (the first), and the types object (every
    property), integer and number (the answer's digits, within minimum/maximum, else 0), string
    (the answer, within minLength/maxLength), boolean (true), null and array (minItems items, at
    least one unless maxItems is 0). Anything else (``$ref``, ``allOf``, patterns) is not handled.

    Example:
        >>> schema_instance({"type": "object", "properties": {"answer": {"enum": [1, 2, 3, 4, 5]}},
        ...                  "required": ["answer"]}, "3")
        {'answer': 3}
        >>> schema_instance({"type": "object", "properties": {"n": {"type": "integer", "maximum": 2},
        ...                  "why": {"type": "string"}}}, "4")
        {'n': 2, 'why': '4'}
    """
    if not isinstance(schema, dict):
        return answer
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _pick(schema["enum"], answer)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_instance(schema[key][0], answer)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if isinstance(schema.get("properties"), dict) else "string"
    if kind == "object":
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return {name: schema_instance(sub, answer) for name, sub in properties.items()}
    if kind in ("integer", "number"):
        digits = re.fullmatch(r"\d+", answer.strip())
        n = int(digits.group()) if digits else 0
        if _is_number(schema.get("minimum")):
            n = max(n, math.ceil(schema["minimum"]))
        if _is_number(schema.get("maximum")):
            n = min(n, math.floor(schema["maximum"]))
        return n if kind == "integer" else float(n)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        count = max(int(schema.get("minItems") or 0), 1)
        if _is_int(schema.get("maxItems")):
            count = min(count, schema["maxItems"])
        return [schema_instance(schema.get("items"), answer) for _ in range(count)]
    text = answer
    if _is_int(schema.get("minLength")) and len(text) < schema["minLength"]:
        text += "x" * (schema["minLength"] - len(text))
    if _is_int(schema.get("maxLength")):
        text = text[:schema["maxLength"]]
    return text


def toy_template(messages: list) -> str:
    """A chat template of our own: "<|role|>" and the content per message, then "<|assistant|>"."""
    return "".join(f"<|{m.get('role')}|>\n{m.get('content')}\n" for m in messages if isinstance(m, dict)) + "<|assistant|>\n"


def toy_tokens(text: str) -> list[int]:
    """A toy tokenizer: a BOS token, then one token per word or punctuation character."""
    return [1] + [2 + int(hashlib.sha256(t.encode()).hexdigest()[:6], 16) for t in _TOY_TOKEN.findall(text)]


@dataclass
class Recorded:
    """One request received by the stub."""

    path: str
    headers: dict[str, str]  # header names lower-cased
    body: Any  # parsed JSON, or None (GET, empty or unparsable body)
    outcome: str  # "ok", "429", "500", "503", "timeout", "drop", "garbage", ...
    t: float  # time.monotonic() when the outcome was decided
    conn: int = 0  # serial number of the TCP connection (equal numbers = keep-alive reuse)
    method: str = "POST"
    error: str | None = None  # the message of a 400 the stub sent for a provider's rule (else None)
    raw: bytes = b""  # the body exactly as received


def hashed_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic vector for `text`: numbers in [-1, 1) from the SHA-256 of the text (chained
    for more than 16 dimensions).

    Example:
        >>> hashed_embedding("I cry easily.") == hashed_embedding("I cry easily."), len(hashed_embedding("x", 3))
        (True, 3)
    """
    out: list[float] = []
    block = text.encode("utf-8")
    while len(out) < dimensions:
        block = hashlib.sha256(block).digest()
        out.extend(int.from_bytes(block[i:i + 2], "big") / 32768.0 - 1.0 for i in range(0, 32, 2))
    return out[:dimensions]


def embeddings_request_problem(body: Any) -> str | None:
    """Why a body is not a CreateEmbeddingRequest the stub answers (None: it is)."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' is required (a string)"
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
        return "'input' must be a non-empty string or a list of non-empty strings"
    if len(texts) > MAX_EMBEDDING_INPUTS:
        return f"'input' holds {len(texts)} items; at most {MAX_EMBEDDING_INPUTS} are allowed"
    dims = body.get("dimensions")
    if dims is not None and not (_is_int(dims) and dims >= 1):
        return "'dimensions' must be an integer of at least 1"
    return None


def default_answer(body: dict) -> str:
    """A digit "1".."4" chosen by sha256 of the JSON of body["messages"]."""
    blob = json.dumps(body.get("messages"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(blob.encode("utf-8")).digest()
    return "1234"[int.from_bytes(digest[:8], "big") % 4]


def _content_chars(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):  # content blocks (OpenAI parts or Anthropic blocks)
        total = 0
        for block in content:
            if isinstance(block, str):
                total += len(block)
            elif isinstance(block, dict):
                total += _content_chars(block.get("text", ""))
        return total
    return len(str(content))


def prompt_chars(body: dict) -> int:
    """Total characters of the messages' contents (plus an Anthropic top-level system)."""
    total = _content_chars(body.get("system"))
    for msg in body.get("messages") or []:
        if isinstance(msg, dict):
            total += _content_chars(msg.get("content"))
    return total


def format_seconds(value: float) -> str:
    """0.05 -> "0.05", 60.0 -> "60", 59.87312 -> "59.873"."""
    text = f"{max(value, 0.0):.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _check_kind(kind: Any) -> str:
    if kind is None:
        return "ok"
    if not isinstance(kind, str) or kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
    return kind


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # StubServer joins its own connection threads (with a deadline)
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, address, handler, stub: "StubServer"):
        self.stub = stub
        super().__init__(address, handler)

    def server_bind(self):
        # HTTPServer.server_bind calls socket.getfqdn(), which can stall on a bad resolver.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = host
        self.server_port = port

    def process_request(self, request, client_address):
        conn_id = self.stub._register_connection(request)
        t = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address, conn_id),
            name=f"stub-conn-{conn_id}",
            daemon=True,
        )
        self.stub._register_thread(conn_id, t)
        t.start()

    def _serve_connection(self, request, client_address, conn_id):
        try:
            self.finish_request(request, client_address)
        except Exception:
            pass
        finally:
            self.shutdown_request(request)
            self.stub._unregister_connection(conn_id)

    def handle_error(self, request, client_address):  # keep test output quiet
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "psyq-stub/1.0"
    sys_version = ""
    timeout = 60  # idle keep-alive connections are closed after this many seconds
    disable_nagle_algorithm = True  # else header/body writes hit the 40 ms delayed-ACK stall

    server: _HTTPServer

    def log_message(self, format, *args):  # noqa: A002 - silence stderr logging
        pass

    # ---------------------------------------------------------------- plumbing
    @property
    def stub(self) -> "StubServer":
        return self.server.stub

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, payload: bytes, content_type: str = "application/json",
              extra_headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (extra_headers or {}).items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            self.close_connection = True

    def _send_json(self, status: int, obj: Any, extra_headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), "application/json", extra_headers)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ----------------------------------------------------------------- methods
    def do_GET(self):
        stub = self.stub
        stub._enter()
        try:
            path = urlsplit(self.path).path.rstrip("/") or "/"
            if path == "/health":
                outcome, status, obj = "ok", 200, {"status": "ok"}
            elif path == "/v1/models":
                outcome, status = "ok", 200
                obj = {"object": "list",
                       "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "psyq-stub"}]}
            else:
                outcome, status = "not_found", 404
                obj = _openai_error(404, f"no route for GET {path}")
            stub._record(self, path, None, outcome, method="GET")
            self._send_json(status, obj)
        finally:
            stub._leave()

    def do_POST(self):
        stub = self.stub
        stub._enter()
        try:
            self._handle_post()
        finally:
            stub._leave()

    def _handle_post(self):
        stub = self.stub
        path = urlsplit(self.path).path.rstrip("/") or "/"
        try:
            raw = self._read_body()
        except (OSError, ValueError):
            self.close_connection = True
            return
        self.raw_body = raw
        anthropic = path == MESSAGES_PATH
        err = _anthropic_error if anthropic else _openai_error

        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None

        if stub.tokenizer and path in (TEMPLATE_PATH, TOKENIZE_PATH) and isinstance(body, dict):
            stub._record(self, path, body, "ok")
            if path == TEMPLATE_PATH:
                self._send_json(200, {"prompt": toy_template(body.get("messages") or [])})
            else:
                self._send_json(200, {"tokens": toy_tokens(str(body.get("content", "")))})
            return
        if path == EMBEDDINGS_PATH:
            self._embeddings(body)
            return
        if path not in (CHAT_PATH, MESSAGES_PATH):
            stub._record(self, path, body, "not_found")
            self._send_json(404, err(404, f"no route for POST {path}"))
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            stub._record(self, path, body, "bad_request")
            self._send_json(400, err(400, "request body must be a JSON object with a 'messages' list"))
            return
        # A request the provider refuses by its published rules (module doc, "Provider contracts").
        if anthropic:
            message = anthropic_contract_problem(body)
            refusal = _anthropic_error(400, message) if message else None
        else:
            problem = openai_contract_problem(body)
            message = problem[2] if problem else None
            refusal = _openai_param_error(*problem) if problem else None
        if refusal is not None:
            stub._record(self, path, body, "bad_request", error=message)
            self._send_json(400, refusal)
            return

        outcome, retry_after = stub._decide()

        text = None
        want_logprobs = (not anthropic) and bool(body.get("logprobs"))
        if outcome in ("ok", "timeout"):
            if want_logprobs:
                text = stub.distribution(body)[0][0]
            else:
                try:
                    text = str(stub.answer(body))
                except Exception as exc:  # a broken answer callback becomes a 500
                    outcome, text = "answer_error", f"answer callback raised {exc!r}"
        elif outcome in PATHOLOGICAL_KINDS:
            try:
                text = str(stub.answer(body))
            except Exception as exc:  # a broken answer callback becomes a 500
                outcome, text = "answer_error", f"answer callback raised {exc!r}"
        elif outcome == "invalid_answer":
            text = INVALID_ANSWER_TEXT
        elif outcome == "refusal":
            text = REFUSAL_TEXT

        stub._record(self, path, body, outcome)

        if not stub._wait(stub.latency_s):
            self._drop()
            return

        if outcome == "drop":
            self._drop()
            return
        if outcome == "429":
            ra = stub.retry_after_s if retry_after is None else retry_after
            self._send_json(429, err(429, "Rate limit exceeded (stub)."), {"Retry-After": format_seconds(ra)})
            return
        if outcome in ("500", "503"):
            self._send_json(int(outcome), err(int(outcome), f"Stub server error {outcome}."))
            return
        if outcome == "answer_error":
            self._send_json(500, err(500, text or "answer callback failed"))
            return
        if outcome == "garbage":
            self._send(200, GARBAGE_BODY, "text/html")
            return
        if outcome == "timeout":
            if not stub._wait(stub.timeout_hang_s):
                self._drop()
                return
        assert text is not None
        reasoning = None if anthropic else openai_reasoning_tokens(body)
        if outcome in PATHOLOGICAL_KINDS and not anthropic:
            self._send(200, stub._pathological(outcome, body, text, want_logprobs, reasoning))
            return
        if anthropic:
            tool = forced_tool(body) if outcome not in ("invalid_answer", "refusal") else None
            self._send_json(200, stub._anthropic_response(body, text, tool))
        else:
            self._send_json(200, stub._openai_response(body, text, want_logprobs, reasoning))


    def _embeddings(self, body: Any) -> None:
        """``POST /v1/embeddings`` (module doc, "Embeddings")."""
        stub = self.stub
        problem = embeddings_request_problem(body)
        if problem is not None:
            stub._record(self, EMBEDDINGS_PATH, body, "bad_request", error=problem)
            self._send_json(400, _openai_error(400, problem))
            return
        outcome, retry_after = stub._decide()
        if outcome not in ("429", "500", "503", "timeout", "drop", "garbage"):
            outcome = "ok"   # the kinds that shape a chat reply do not apply
        stub._record(self, EMBEDDINGS_PATH, body, outcome)
        if not stub._wait(stub.latency_s) or outcome == "drop":
            self._drop()
            return
        if outcome == "429":
            ra = stub.retry_after_s if retry_after is None else retry_after
            self._send_json(429, _openai_error(429, "Rate limit exceeded (stub)."), {"Retry-After": format_seconds(ra)})
            return
        if outcome in ("500", "503"):
            self._send_json(int(outcome), _openai_error(int(outcome), f"Stub server error {outcome}."))
            return
        if outcome == "garbage":
            self._send(200, GARBAGE_BODY, "text/html")
            return
        if outcome == "timeout" and not stub._wait(stub.timeout_hang_s):
            self._drop()
            return
        self._send_json(200, stub._embeddings_response(body))


def _system_text(body: dict) -> str | None:
    """The system prompt of a request: Anthropic's top-level `system` (text or blocks), or the
    content of an OpenAI first message with role system."""
    system = body.get("system")
    if system is None:
        messages = body.get("messages") or []
        first = messages[0] if messages and isinstance(messages[0], dict) else {}
        system = first.get("content") if first.get("role") == "system" else None
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
    return system if isinstance(system, str) else None


def _openai_error(status: int, message: str) -> dict:
    kind = {400: "invalid_request_error", 404: "invalid_request_error",
            429: "rate_limit_error"}.get(status, "server_error")
    code = {429: "rate_limit_exceeded", 404: "not_found"}.get(status)
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _openai_param_error(param: str, code: str, message: str) -> dict:
    """OpenAI's 400 error object naming the refused parameter."""
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _anthropic_error(status: int, message: str) -> dict:
    kind = {400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error",
            503: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _logprob_entry(token: str, p: float) -> dict:
    return {"token": token, "logprob": math.log(p), "bytes": list(token.encode("utf-8"))}


class StubServer:
    """OpenAI/Anthropic-compatible stub on 127.0.0.1 with fault injection (see module doc)."""

    def __init__(self, *, answer: Callable[[dict], str] | None = None, faults: list[str] | None = None,
                 fault_rate: float = 0.0, fault_kinds: Sequence[str] = DEFAULT_FAULT_KINDS,
                 seed: int = 0, latency_s: float = 0.0, retry_after_s: float = 0.05,
                 timeout_hang_s: float = 5.0, rpm_limit: int | None = None,
                 record: str | Path | None = None, port: int = 0, host: str = "127.0.0.1",
                 pathological_every: int | None = None,
                 pathological_kinds: Sequence[str] = PATHOLOGICAL_KINDS, tokenizer: bool = False,
                 prompt_cache: str | None = None,
                 distribution: Callable[[dict], Sequence[tuple[str, float]]] | None = None,
                 embedding: Callable[[str], Sequence[float]] | None = None,
                 served: Callable[[dict], dict] | None = None):
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError("fault_rate must be within [0, 1]")
        if fault_rate > 0 and not fault_kinds:
            raise ValueError("fault_kinds is empty but fault_rate > 0")
        if rpm_limit is not None and rpm_limit < 1:
            raise ValueError("rpm_limit must be >= 1 or None")
        self.answer: Callable[[dict], str] = answer or default_answer
        # What the reply says was served: served(body) -> {"model": …, "system_fingerprint": …}
        # (OpenAI's chat completion object has both; Anthropic's message only `model`, so only that
        # is taken there). Default: the model requested, no fingerprint.
        self.served: Callable[[dict], dict] = served or (lambda body: {})
        self.distribution = distribution or (lambda body: LOGPROB_DISTRIBUTION)
        self.embedding: Callable[[str], Sequence[float]] = embedding or hashed_embedding
        self._initial_faults = [_check_kind(k) for k in (faults or [])]
        self.fault_rate = float(fault_rate)
        self.fault_kinds = tuple(_check_kind(k) for k in fault_kinds)
        self.seed = seed
        self.latency_s = float(latency_s)
        self.retry_after_s = float(retry_after_s)
        self.timeout_hang_s = float(timeout_hang_s)
        self.rpm_limit = rpm_limit
        if pathological_every is not None and pathological_every < 1:
            raise ValueError("pathological_every must be >= 1 or None")
        self.pathological_every = pathological_every
        self.pathological_kinds = tuple(_check_kind(k) for k in pathological_kinds)
        self._n_posts = 0
        self.tokenizer = tokenizer
        if prompt_cache not in (None, "openai", "llamacpp"):
            raise ValueError("prompt_cache must be None, 'openai' or 'llamacpp'")
        self.prompt_cache = prompt_cache
        self._cached_systems: set[str] = set()
        self.sent_usage: list[dict] = []
        self.record_path = Path(record) if record is not None else None
        self._host = host
        self._port = port

        self._lock = threading.Lock()
        self._pending: collections.deque[str] = collections.deque(self._initial_faults)
        self._rng = random.Random(seed)
        self._window: collections.deque[float] = collections.deque()
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._n_ids = 0

        self._conn_lock = threading.Lock()
        self._conn_serial = 0
        self._sockets: dict[int, socket.socket] = {}
        self._threads: dict[int, threading.Thread] = {}

        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._serve_thread: threading.Thread | None = None
        self._record_file = None
        self.url = ""
        self.base_url = ""
        self.port = 0

    # ------------------------------------------------------------- lifecycle
    def start(self) -> "StubServer":
        if self._httpd is not None:
            raise RuntimeError("StubServer already started")
        self._stop.clear()
        if self.record_path is not None:
            self._record_file = open(self.record_path, "a", encoding="utf-8")
        self._httpd = _HTTPServer((self._host, self._port), _Handler, self)
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://{self._host}:{self.port}"
        self.url = self.base_url + "/v1"
        self._serve_thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="stub-serve", daemon=True)
        self._serve_thread.start()
        return self

    def stop(self, join_timeout: float = 5.0) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self._stop.set()  # interrupts latency / timeout hangs
        httpd.shutdown()  # no new connections are accepted after this returns
        with self._conn_lock:
            socks = list(self._sockets.values())
            threads = list(self._threads.values())
        for s in socks:  # wake handlers blocked reading the next keep-alive request
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + join_timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        httpd.server_close()
        if self._serve_thread is not None:
            self._serve_thread.join(max(0.1, deadline - time.monotonic()))
        self._httpd = None
        self._serve_thread = None
        if self._record_file is not None:
            self._record_file.close()
            self._record_file = None

    def __enter__(self) -> "StubServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---------------------------------------------------------------- control
    @property
    def faults(self) -> list[str]:
        """Scripted faults not yet consumed (assign a list to script new ones)."""
        with self._lock:
            return list(self._pending)

    @faults.setter
    def faults(self, kinds: list[str] | None) -> None:
        checked = [_check_kind(k) for k in (kinds or [])]
        with self._lock:
            self._pending = collections.deque(checked)

    @property
    def outcomes(self) -> list[str]:
        with self._lock:
            return [r.outcome for r in self.requests]

    def reset(self) -> None:
        """Forget recorded requests, the concurrency high-water mark and the rpm window;
        restore the scripted faults given to the constructor and re-seed the fault RNG."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight
            self._window.clear()
            self._pending = collections.deque(self._initial_faults)
            self._rng = random.Random(self.seed)
            self._n_posts = 0

    # -------------------------------------------------------------- internals
    def _register_connection(self, sock: socket.socket) -> int:
        with self._conn_lock:
            self._conn_serial += 1
            self._sockets[self._conn_serial] = sock
            return self._conn_serial

    def _register_thread(self, conn_id: int, t: threading.Thread) -> None:
        with self._conn_lock:
            self._threads[conn_id] = t

    def _unregister_connection(self, conn_id: int) -> None:
        with self._conn_lock:
            self._sockets.pop(conn_id, None)
            self._threads.pop(conn_id, None)

    def _conn_id_of(self, handler: _Handler) -> int:
        with self._conn_lock:
            for cid, s in self._sockets.items():
                if s is handler.connection:
                    return cid
        return 0

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _wait(self, seconds: float) -> bool:
        """Sleep, but return False at once if the server is stopping."""
        if seconds <= 0:
            return not self._stop.is_set()
        return not self._stop.wait(seconds)

    def _decide(self) -> tuple[str, float | None]:
        """Outcome for the next POST and, for an rpm rejection, its Retry-After."""
        with self._lock:
            if self.rpm_limit is not None:
                now = time.monotonic()
                while self._window and self._window[0] <= now - 60.0:
                    self._window.popleft()
                if len(self._window) >= self.rpm_limit:
                    return "429", max(0.001, self._window[0] + 60.0 - now)
                self._window.append(now)
            if self._pending:
                return self._pending.popleft(), None
            self._n_posts += 1
            if self.pathological_every and self._n_posts % self.pathological_every == 0:
                k = self._n_posts // self.pathological_every - 1
                return self.pathological_kinds[k % len(self.pathological_kinds)], None
            if self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                return self._rng.choice(self.fault_kinds), None
            return "ok", None

    def _record(self, handler: _Handler, path: str, body: Any, outcome: str, method: str = "POST",
                error: str | None = None) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        rec = Recorded(path=path, headers=headers, body=body, outcome=outcome,
                       t=time.monotonic(), conn=self._conn_id_of(handler), method=method, error=error,
                       raw=getattr(handler, "raw_body", b"") if method == "POST" else b"")
        line = None
        if self._record_file is not None:
            entry: dict[str, Any] = {"time": time.time(), "method": method, "path": path,
                                     "messages": body.get("messages") if isinstance(body, dict) else None,
                                     "outcome": outcome}
            if isinstance(body, dict) and "system" in body:
                entry["system"] = body["system"]
            if error is not None:
                entry["error"] = error
            entry["body"] = body
            line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            self.requests.append(rec)
            if line is not None and self._record_file is not None:
                self._record_file.write(line)
                self._record_file.flush()

    def _next_id(self) -> int:
        with self._lock:
            self._n_ids += 1
            return self._n_ids

    def _openai_response(self, body: dict, text: str, want_logprobs: bool, reasoning: int | None = None) -> dict:
        """A chat completion; with `reasoning` (a reasoning model's tokens) those are spent first,
        inside max_completion_tokens (module doc, "Provider contracts")."""
        prompt_tokens = (len(toy_tokens(toy_template(body.get("messages") or []))) if self.tokenizer
                         else prompt_chars(body) // 4)
        completion_tokens = len(text) // 4 + 1
        finish_reason = "stop"
        details = None
        if reasoning is not None:
            budget = body.get("max_completion_tokens")
            completion_tokens += reasoning
            if budget is not None and completion_tokens > budget:   # ran out: nothing visible
                completion_tokens = max(0, budget)
                reasoning = min(reasoning, completion_tokens)
                text, finish_reason = "", "length"
            details = {"reasoning_tokens": reasoning, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                       "rejected_prediction_tokens": 0}
        cached = self._cache_lookup(_system_text(body)) if self.prompt_cache else None
        logprobs = None
        if want_logprobs:
            k = body.get("top_logprobs") or 0
            try:
                k = max(0, int(k))
            except (TypeError, ValueError):
                k = 0
            distribution = list(self.distribution(body))
            top = [_logprob_entry(tok, p) for tok, p in distribution[:k]]
            first = text.split()[0] if text.split() else text
            p_first = dict(distribution).get(first, 0.01)
            entry = _logprob_entry(first, p_first)
            entry["top_logprobs"] = top
            logprobs = {"content": [entry], "refusal": None}
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}
        if details is not None:
            usage["completion_tokens_details"] = details
        extra: dict[str, Any] = {}
        if cached is not None:
            cached = min(cached[0], prompt_tokens)
            if self.prompt_cache == "openai":
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
            else:
                extra["timings"] = {"cache_n": cached, "prompt_n": prompt_tokens - cached,
                                    "predicted_n": completion_tokens}
        with self._lock:
            self.sent_usage.append({**usage, **extra})
        return {
            **extra,
            "id": f"chatcmpl-stub-{self._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or MODEL_ID,
            **{k: v for k, v in self.served(body).items() if k in ("model", "system_fingerprint")},
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }],
            "usage": usage,
        }

    def _embeddings_response(self, body: dict) -> dict:
        """A CreateEmbeddingResponse: one embedding per input, in input order."""
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        dims = body.get("dimensions")
        data = []
        for index, text in enumerate(texts):
            vector = self.embedding(text) if dims is None else self.embedding(text)[:dims]
            if dims is not None and len(vector) < dims:
                vector = hashed_embedding(text, dims)
            data.append({"object": "embedding", "embedding": [float(x) for x in vector], "index": index})
        tokens = sum(len(t) // 4 + 1 for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        with self._lock:
            self.sent_usage.append(dict(usage))
        return {"object": "list", "data": data, "model": body["model"], "usage": usage}

    def _pathological(self, kind: str, body: dict, text: str, want_logprobs: bool,
                      reasoning: int | None = None) -> bytes:
        """The 200 body of a pathological kind (see the module docstring); `text` is the normal answer."""
        if kind == "empty_body":
            return b""
        if kind == "nested_body":
            return b"[" * NESTING + b"]" * NESTING
        if kind == "no_choices":
            return json.dumps({"id": "chatcmpl-stub-empty", "object": "chat.completion", "choices": []}).encode()
        logprob_kind = kind.startswith("logprob_")
        if logprob_kind:   # sent whether asked or not, with at least two alternatives to break one
            body = {**body, "top_logprobs": max(2, int(body.get("top_logprobs") or len(LOGPROB_DISTRIBUTION)))}
        reply = self._openai_response(body, text, want_logprobs or logprob_kind, reasoning)
        message = reply["choices"][0]["message"]
        if kind == "content_list":
            message["content"] = [{"type": "text", "text": text}]
        elif kind == "content_dict":
            message["content"] = {"text": text}
        elif kind == "content_number":
            message["content"] = int(text) if text.isdigit() else 3
        elif kind == "content_bool":
            message["content"] = True
        elif kind == "message_string":
            reply["choices"][0]["message"] = text
        elif kind == "nested_brackets":
            message["content"] = "[" * NESTING + "]" * NESTING
        elif kind == "long_text":
            message["content"] = text + " " + "lorem ipsum 3 a " * (LONG_TEXT_CHARS // 16)
        elif kind == "huge_body":
            message["content"] = text + " " * HUGE_BODY_BYTES
        elif logprob_kind:
            broken = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"][1]
            if kind == "logprob_null_token":
                broken["token"] = None
            else:
                broken["logprob"] = {"logprob_inf": math.inf, "logprob_nan": math.nan, "logprob_huge": 1e308}[kind]
        return json.dumps(reply).encode()   # allow_nan: Infinity and NaN as some servers send them

    def _cache_lookup(self, system: str | None) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it) for a request with this system prompt."""
        if not system:
            return 0, 0
        with self._lock:
            seen = system in self._cached_systems
            self._cached_systems.add(system)
        return (len(system) // 4, 0) if seen else (0, len(system) // 4)

    def _anthropic_response(self, body: dict, text: str, tool: dict | None = None) -> dict:
        """A Message: with thinking enabled a thinking block first; with a forced `tool` a tool_use
        block instead of the text; either counted against max_tokens (module doc, "Provider contracts")."""
        n = self._next_id()
        budget = thinking_budget(body)
        blocks: list[dict] = []
        if budget is not None:
            digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode("utf-8")).digest()
            blocks.append({"type": "thinking", "thinking": THINKING_TEXT,
                           "signature": base64.b64encode(digest).decode("ascii")})
        if tool is not None:
            try:
                given = json.loads(text)
            except ValueError:
                given = None
            tool_input = given if isinstance(given, dict) else schema_instance(tool.get("input_schema"), text)
            answer = {"type": "tool_use", "id": f"toolu_stub_{n}", "name": tool.get("name"),
                      "input": tool_input if isinstance(tool_input, dict) else {}}
            answer_tokens, stop_reason = len(json.dumps(answer["input"])) // 4 + 1, "tool_use"
        else:
            answer = {"type": "text", "text": text}
            answer_tokens, stop_reason = len(text) // 4 + 1, "end_turn"
        output_tokens = (budget or 0) + answer_tokens
        if (budget is not None or tool is not None) and output_tokens > body["max_tokens"]:
            output_tokens, stop_reason = body["max_tokens"], "max_tokens"   # no (partial) answer block
        else:
            blocks.append(answer)
        usage: dict[str, Any] = {"input_tokens": prompt_chars(body) // 4, "output_tokens": output_tokens}
        if budget is not None:
            usage["output_tokens_details"] = {"thinking_tokens": budget}
        if self.prompt_cache:
            read, written = self._cache_lookup(_system_text(body))
            usage["input_tokens"] -= read + written
            usage.update(cache_read_input_tokens=read, cache_creation_input_tokens=written)
        with self._lock:
            self.sent_usage.append(dict(usage))
        return {
            "id": f"msg_stub_{n}",
            "type": "message",
            "role": "assistant",
            "model": self.served(body).get("model") or body.get("model") or MODEL_ID,
            "content": blocks,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }


# --------------------------------------------------------------------- script
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--fault-kinds", default=",".join(DEFAULT_FAULT_KINDS),
                    help="comma-separated kinds drawn when --fault-rate fires")
    ap.add_argument("--faults", default="", help="comma-separated scripted faults, e.g. 429,500,ok")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--retry-after", type=float, default=0.05)
    ap.add_argument("--timeout-hang", type=float, default=5.0)
    ap.add_argument("--rpm-limit", type=int, default=None)
    ap.add_argument("--record", default=None)
    ap.add_argument("--tokenizer", action="store_true", help="serve llama.cpp's /apply-template and /tokenize")
    ap.add_argument("--prompt-cache", choices=("openai", "llamacpp"), default=None,
                    help="report cached prompt tokens for repeated system prompts, in this server's fields")
    ap.add_argument("--pathological-every", type=int, default=None,
                    help="every Nth POST gets the next pathological reply kind (cycling)")
    args = ap.parse_args(argv)

    split = lambda s: [x.strip() for x in s.split(",") if x.strip()]  # noqa: E731
    server = StubServer(faults=split(args.faults), fault_rate=args.fault_rate,
                        fault_kinds=split(args.fault_kinds), seed=args.seed, latency_s=args.latency,
                        retry_after_s=args.retry_after, timeout_hang_s=args.timeout_hang,
                        rpm_limit=args.rpm_limit, record=args.record, port=args.port, host=args.host,
                        pathological_every=args.pathological_every, tokenizer=args.tokenizer,
                        prompt_cache=args.prompt_cache)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    server.start()
    try:
        print(f"READY {server.url}", flush=True)
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
