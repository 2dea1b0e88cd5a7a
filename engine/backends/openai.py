"""OpenAI-compatible chat completions (`POST {base_url}/chat/completions`).

Serves llama.cpp's llama-server, vLLM, Ollama, LM Studio and hosted APIs alike. `base_url`
ends in `/v1` (e.g. ``http://127.0.0.1:8080/v1``).
"""

from __future__ import annotations

import math
from typing import Any

from psyq.engine.backends.base import BackendConfig, ChatRequest, ChatResult, HttpBackend
from psyq.engine.backends.openai_batch import OpenAIBatchClient


class OpenAIBackend(HttpBackend):
    """An OpenAI-compatible server.

    Example:
        >>> cfg = BackendConfig(id="vllm", kind="openai", model="qwen", base_url="http://127.0.0.1:8000/v1")
        >>> backend = OpenAIBackend(cfg)             # nothing is sent until a run starts it
        >>> backend.endpoint()
        'http://127.0.0.1:8000/v1/chat/completions'
    """

    kind = "openai"
    needs_base_url = True
    batch_client = OpenAIBatchClient
    # OpenAI's chat completion object: `model` (the snapshot used), `system_fingerprint` (the
    # backend configuration; vLLM and llama.cpp send one too, others may not).
    served_model_field = "model"
    fingerprint_field = "system_fingerprint"

    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The request body, with only the fields the model accepts (engine/backends/capabilities.py).

        Example:
            >>> b = OpenAIBackend(BackendConfig(id="r", kind="openai", model="gpt-5-mini",
            ...                                 base_url="http://127.0.0.1:1/v1", reasoning_effort="low"))
            >>> body = b.payload(ChatRequest(messages=({"role": "user", "content": "Hi"},), max_tokens=48,
            ...                              temperature=1.0))
            >>> sorted(body)
            ['max_completion_tokens', 'messages', 'model', 'reasoning_effort']
        """
        caps = self.capabilities
        body: dict[str, Any] = {"model": self.config.model or "default",
                                "messages": list(request.messages),
                                caps.token_limit_field: self.token_limit(request)}
        # A model that takes only the default temperature gets none (1 is the default; a study
        # that asked for another was refused before sending; the judge's own 0 is dropped).
        if request.temperature is not None and caps.temperature == "any":
            body["temperature"] = request.temperature
        if request.top_p is not None and caps.top_p:
            body["top_p"] = request.top_p
        if request.seed is not None and caps.seed:
            body["seed"] = request.seed
        if request.top_logprobs and caps.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        if request.json_schema is not None and caps.json_schema == "response_format":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "schema": request.json_schema}}
        if self.config.reasoning_effort is not None and caps.reasoning == "reasoning_effort":
            body["reasoning_effort"] = self.config.reasoning_effort
        return body

    def result(self, body: dict[str, Any]) -> ChatResult:
        # A body without choices[0].message raises (KeyError/TypeError …): the base class retries it.
        choice = body["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("the message is not an object")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        text, problem = content_text(message.get("content"))
        text = without_thinking(text)   # reasoning text some servers put inline is not the answer
        logprobs, logprobs_problem = first_token_logprobs_checked(choice)
        details = usage.get("completion_tokens_details")
        return ChatResult(text=text, first_token_logprobs=logprobs,
                          prompt_tokens=usage_count(usage.get("prompt_tokens")),
                          completion_tokens=usage_count(usage.get("completion_tokens")), raw=compact_logprobs(body),
                          problem="unreadable_response" if problem else None, problem_reason=problem,
                          logprobs_problem=logprobs_problem, cached_tokens=cached_prompt_tokens(body),
                          reasoning_tokens=(usage_count(details.get("reasoning_tokens"))
                                            if isinstance(details, dict) else None),
                          budget_exhausted=choice.get("finish_reason") == "length")


def without_thinking(text: str) -> str:
    """The answer in a reply whose reasoning a server put inline, in a leading ``<think>…</think>``
    block (DeepSeek-R1 and Qwen3 style, when the server does not move it to ``reasoning_content``);
    a reply still inside that block has no answer yet. The whole reply stays in the raw response.

    Example:
        >>> without_thinking("<think>They feel let down.</think>\\n3")
        '3'
        >>> without_thinking("<think>Cut off while thinking")
        ''
        >>> without_thinking("3 <think> is not a leading block")
        '3 <think> is not a leading block'
    """
    stripped = text.lstrip()
    if not stripped.startswith("<think>"):
        return text
    end = stripped.find("</think>")
    return "" if end < 0 else stripped[end + len("</think>"):].lstrip()


def cached_prompt_tokens(body: dict[str, Any]) -> int | None:
    """Prompt tokens the server took from its prompt cache, as it reports them (None: not reported).

    OpenAI and vLLM send ``usage.prompt_tokens_details.cached_tokens`` (part of ``prompt_tokens``);
    llama.cpp's llama-server sends ``timings.cache_n`` (prompt tokens reused from the slot's cache,
    also part of ``prompt_tokens``), read when the first is absent.

    Example:
        >>> cached_prompt_tokens({"usage": {"prompt_tokens": 90, "prompt_tokens_details": {"cached_tokens": 64}}})
        64
        >>> cached_prompt_tokens({"usage": {"prompt_tokens": 90}, "timings": {"cache_n": 80, "prompt_n": 10}})
        80
        >>> cached_prompt_tokens({"usage": {"prompt_tokens": 90}}) is None
        True
    """
    usage = body.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    if isinstance(details, dict) and usage_count(details.get("cached_tokens")) is not None:
        return usage_count(details.get("cached_tokens"))
    timings = body.get("timings")
    return usage_count(timings.get("cache_n")) if isinstance(timings, dict) else None


def usage_count(value: Any) -> int | None:
    """A token count from a usage block (None unless a non-negative integer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def content_text(content: Any) -> tuple[str, str | None]:
    """The assistant's text from a message's `content`, and why it is unreadable (None: readable).

    Servers send a string, null (no text), or a list of parts (``[{"type": "text", "text": …}]``),
    whose text parts are joined; anything else (an object, a number, true) is not text.

    Example:
        >>> content_text([{"type": "text", "text": "3"}, {"type": "text", "text": "."}])
        ('3.', None)
        >>> content_text(3)
        ('', 'the message content is a number (3), not text')
    """
    if content is None:
        return "", None
    if isinstance(content, str):
        return content, None
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") not in (None, "text"):
                continue   # e.g. a refusal or an image part: not answer text
            else:
                return "", "the message content is a list with a part that is not text"
        return "".join(texts), None
    kind = ("true/false" if isinstance(content, bool) else "a number" if isinstance(content, (int, float))
            else "an object" if isinstance(content, dict) else type(content).__name__)
    shown = f" ({content})" if isinstance(content, (int, float)) and not isinstance(content, bool) else ""
    return "", f"the message content is {kind}{shown}, not text"


def compact_logprobs(body: dict[str, Any]) -> dict[str, Any]:
    """The response with each logprob entry cut to token and logprob.

    Servers add token ids and UTF-8 bytes to every alternative (llama-server: ~20 kB for 200
    alternatives); they repeat the token and would make the store grow tenfold. Entries of an
    unexpected shape are kept as they came.
    """
    def slim(entry: Any) -> Any:
        if not isinstance(entry, dict):
            return entry
        out = {"token": entry.get("token"), "logprob": entry.get("logprob")}
        if isinstance(entry.get("top_logprobs"), list):
            out["top_logprobs"] = [{"token": t.get("token"), "logprob": t.get("logprob")} if isinstance(t, dict)
                                   else t for t in entry["top_logprobs"]]
        return out

    choices = []
    for choice in body.get("choices") or []:
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if isinstance(content, list) and content:
            choice = {**choice, "logprobs": {**logprobs, "content": [slim(e) for e in content]}}
        choices.append(choice)
    return {**body, "choices": choices}


def first_token_logprobs(choice: dict[str, Any]) -> dict[str, float] | None:
    """Alternatives for the first generated token, as {token: natural-log probability}
    (None when there are none or they are unusable; see :func:`first_token_logprobs_checked`).

    Example:
        >>> first_token_logprobs({"logprobs": {"content": [{"token": "3", "logprob": -0.1,
        ...     "top_logprobs": [{"token": "3", "logprob": -0.1}, {"token": "2", "logprob": -2.3}]}]}})
        {'3': -0.1, '2': -2.3}
    """
    return first_token_logprobs_checked(choice)[0]


# A log probability is at most 0; servers round, so a hair above 0 is accepted as 0.
_LOGPROB_SLACK = 1e-3


def first_token_logprobs_checked(choice: dict[str, Any]) -> tuple[dict[str, float] | None, str | None]:
    """The first token's alternatives, and why they are unusable (None when usable or absent).

    Every entry must have a string token and a number that is a log probability: at most 0
    (-Infinity is probability 0). An entry with a null token or a logprob of NaN, +Infinity or
    1e308 makes the whole distribution unusable — it says the server is broken, so none of its
    numbers is trusted.

    Example:
        >>> first_token_logprobs_checked({"logprobs": {"content": [{"token": None, "logprob": -0.1}]}})
        (None, 'the log probabilities are unusable: first token: the token is null')
    """
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None, None
    if not isinstance(content, list) or not isinstance(content[0], dict):
        return None, "the log probabilities are unusable: not a list of token entries"
    first = content[0]
    entries = [("first token", first)]
    top = first.get("top_logprobs") or []
    if not isinstance(top, list):
        return None, "the log probabilities are unusable: top_logprobs is not a list"
    entries += [(f"alternative {k + 1}", t) for k, t in enumerate(top)]
    alternatives: dict[str, float] = {}
    for where, entry in entries:
        why = _entry_problem(entry)
        if why:
            return None, f"the log probabilities are unusable: {where}: {why}"
        if where == "first token":
            continue
        alternatives[entry["token"]] = float(entry["logprob"])
    alternatives.setdefault(first["token"], float(first["logprob"]))
    return alternatives, None


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "not an object"
    token, logprob = entry.get("token"), entry.get("logprob")
    if token is None:
        return "the token is null"
    if not isinstance(token, str):
        return "the token is not a string"
    if isinstance(logprob, bool) or not isinstance(logprob, (int, float)):
        return "the logprob is not a number"
    if math.isnan(logprob) or logprob > _LOGPROB_SLACK:
        return f"the logprob {logprob!r} is not a log probability (NaN, or above 0)"
    return None
