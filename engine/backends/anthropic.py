"""Anthropic Messages API (`POST {base_url}/messages`, default base_url
``https://api.anthropic.com/v1``).

It returns no log probabilities, so `answer: logprobs` is refused for it when a study is loaded
(engine/backends/capabilities.py). A JSON answer's schema is applied through forced tool use:
one tool, ``answer``, whose ``input_schema`` is the schema, and ``tool_choice`` naming it; the
reply's ``tool_use`` block's ``input`` is the answer. Extended thinking (``reasoning_budget``:
``thinking.budget_tokens``) cannot be combined with forced tool use, so with thinking a JSON
answer is asked for by the instruction only (``psyq plan`` and ``psyq validate`` say so).
Thinking blocks come before the text block; they are kept in the raw reply and never read as
the answer."""

from __future__ import annotations

import json
from typing import Any

from psyq.engine.backends.anthropic_batch import AnthropicBatchClient
from psyq.engine.backends.base import BackendConfig, ChatRequest, ChatResult, HttpBackend
from psyq.engine.backends.openai import content_text, usage_count

API_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
ANSWER_TOOL = "answer"   # the one tool a JSON answer is given through


class AnthropicBackend(HttpBackend):
    """Claude models through the Messages API; the key comes from `api_key_env`."""

    kind = "anthropic"
    batch_client = AnthropicBatchClient
    served_model_field = "model"   # the Messages API's response names the model that answered
    tokenizer_unavailable = "Anthropic's tokenizer is not public (counting needs the API key)"

    def __init__(self, config, *, base_url: str | None = None):
        default = None if config.base_urls else DEFAULT_BASE_URL   # an endpoint pool names its own URLs
        super().__init__(config, base_url=base_url or config.base_url or default)

    def endpoint(self) -> str:
        return f"{self.base_url}/messages"

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        headers = {"anthropic-version": API_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The Messages request body.

        Example:
            >>> b = AnthropicBackend(BackendConfig(id="c", kind="anthropic", model="claude-sonnet-4-5",
            ...                                    reasoning_budget=2048))
            >>> body = b.payload(ChatRequest(messages=({"role": "user", "content": "Hi"},), max_tokens=48,
            ...                              temperature=1.0))
            >>> body["max_tokens"], body["thinking"]
            (2096, {'type': 'enabled', 'budget_tokens': 2048})
        """
        caps = self.capabilities
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.token_limit(request),
            "messages": [m for m in request.messages if m["role"] != "system"],
        }
        if system:
            # The persona's system prompt is the prefix every item of a respondent shares: marked
            # as a cache breakpoint, later requests read it from Anthropic's prompt cache (prompts
            # shorter than the model's minimum cacheable length are simply not cached).
            body["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        if request.temperature is not None and caps.temperature == "any":
            body["temperature"] = request.temperature
        if request.top_p is not None and caps.top_p:
            body["top_p"] = request.top_p
        if self.config.reasoning_budget is not None and caps.reasoning == "thinking":
            body["thinking"] = {"type": "enabled", "budget_tokens": self.config.reasoning_budget}
        if request.json_schema is not None and caps.json_schema == "tool":
            body["tools"] = [{"name": ANSWER_TOOL, "description": "Give your answer.",
                              "input_schema": request.json_schema}]
            body["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
        return body

    def result(self, body: dict[str, Any]) -> ChatResult:
        blocks = body["content"]
        if not isinstance(blocks, list):
            raise TypeError("content is not a list of blocks")   # retried as a malformed response
        tool_input = next((b.get("input") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"
                           and b.get("name") == ANSWER_TOOL), None)
        if tool_input is not None:
            # A forced tool call: its input object is the JSON answer, read as a JSON reply is.
            text, problem = json.dumps(tool_input, ensure_ascii=False), None
        else:
            # Text blocks only: `thinking` / `redacted_thinking` blocks are not the answer.
            text, problem = content_text(blocks)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return ChatResult(text=text, first_token_logprobs=None, prompt_tokens=input_tokens(usage),
                          completion_tokens=usage_count(usage.get("output_tokens")), raw=body,
                          problem="unreadable_response" if problem else None, problem_reason=problem,
                          cached_tokens=usage_count(usage.get("cache_read_input_tokens")),
                          budget_exhausted=body.get("stop_reason") == "max_tokens")


def input_tokens(usage: dict[str, Any]) -> int | None:
    """Every prompt token of a reply, cached or not, as OpenAI counts `prompt_tokens`.

    Anthropic's ``input_tokens`` leaves out the tokens read from the cache
    (``cache_read_input_tokens``) and written to it (``cache_creation_input_tokens``); they are
    added so that prompt tokens mean the same for every backend and cached tokens are a part of them.

    Example:
        >>> input_tokens({"input_tokens": 10, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0})
        910
        >>> input_tokens({}) is None
        True
    """
    base = usage_count(usage.get("input_tokens"))
    if base is None:
        return None
    return base + sum(usage_count(usage.get(k)) or 0 for k in ("cache_read_input_tokens", "cache_creation_input_tokens"))
