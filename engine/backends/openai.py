"""OpenAI-compatible chat completions (`POST {base_url}/chat/completions`).

Serves llama.cpp's llama-server, vLLM, Ollama, LM Studio and hosted APIs alike. `base_url`
ends in `/v1` (e.g. ``http://127.0.0.1:8080/v1``).
"""

from __future__ import annotations

from typing import Any

from .base import ChatRequest, ChatResult, HttpBackend


class OpenAIBackend(HttpBackend):
    """An OpenAI-compatible server.

    Example:
        >>> cfg = BackendConfig(id="vllm", kind="openai", model="qwen", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
        >>> backend = OpenAIBackend(cfg)                                                                       # doctest: +SKIP
    """

    kind = "openai"

    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model or "default",
                                "messages": list(request.messages),
                                "max_tokens": request.max_tokens}
        for name in ("temperature", "top_p", "seed"):
            if getattr(request, name) is not None:
                body[name] = getattr(request, name)
        if request.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "schema": request.json_schema}}
        return body

    def result(self, body: dict[str, Any]) -> ChatResult:
        choice = body["choices"][0]
        text = choice["message"].get("content") or ""
        usage = body.get("usage") or {}
        return ChatResult(text=text, first_token_logprobs=first_token_logprobs(choice),
                          prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"), raw=compact_logprobs(body))


def compact_logprobs(body: dict[str, Any]) -> dict[str, Any]:
    """The response with each logprob entry cut to token and logprob.

    Servers add token ids and UTF-8 bytes to every alternative (llama-server: ~20 kB for 200
    alternatives); they repeat the token and would make the store grow tenfold.
    """
    def slim(entry: dict[str, Any]) -> dict[str, Any]:
        out = {"token": entry.get("token"), "logprob": entry.get("logprob")}
        if "top_logprobs" in entry:
            out["top_logprobs"] = [{"token": t.get("token"), "logprob": t.get("logprob")}
                                   for t in entry["top_logprobs"]]
        return out

    choices = []
    for choice in body.get("choices", []):
        content = (choice.get("logprobs") or {}).get("content")
        if content:
            choice = {**choice, "logprobs": {**choice["logprobs"], "content": [slim(e) for e in content]}}
        choices.append(choice)
    return {**body, "choices": choices}


def first_token_logprobs(choice: dict[str, Any]) -> dict[str, float] | None:
    """Alternatives for the first generated token, as {token: natural-log probability}.

    Example:
        >>> first_token_logprobs({"logprobs": {"content": [{"token": "3", "logprob": -0.1,
        ...     "top_logprobs": [{"token": "3", "logprob": -0.1}, {"token": "2", "logprob": -2.3}]}]}})
        {'3': -0.1, '2': -2.3}
    """
    content = (choice.get("logprobs") or {}).get("content") or []
    if not content:
        return None
    first = content[0]
    alternatives = {t["token"]: float(t["logprob"]) for t in first.get("top_logprobs") or []}
    alternatives.setdefault(first["token"], float(first["logprob"]))
    return alternatives
