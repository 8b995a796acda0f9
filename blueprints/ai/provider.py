"""The language model behind one interface: any server speaking OpenAI's chat-completions API.

Hosted (OpenAI, Azure-compatible gateways, OpenRouter...) and self-hosted servers (vLLM, Ollama, llama.cpp's
``llama-server``, LM Studio) all speak ``POST {base}/chat/completions`` with ``tools`` and ``tool_calls``, so
one client reaches them all: the official ``openai`` library with its ``base_url``. Settings (app config,
falling back to the environment):

===================== ======================================================================== =========
``LLM_BASE_URL``      the server's API root, e.g. ``https://api.openai.com/v1``,                  none
                      ``http://127.0.0.1:8000/v1`` (vLLM), ``http://127.0.0.1:11434/v1`` (Ollama)
``LLM_MODEL``         the model name the server knows                                            none
``LLM_API_KEY``       bearer key; may be empty for a self-hosted server                          ``""``
``LLM_TIMEOUT_SECONDS`` one request's time limit                                                  30
``LLM_MAX_RETRIES``   retries of a failed request (connection errors, 408/409/429/5xx), with the  2
                      client's exponential back-off (and ``Retry-After`` when the server sends it)
``LLM_MAX_TOKENS``    upper bound of one answer's tokens                                         800
===================== ======================================================================== =========

Without ``LLM_BASE_URL`` or ``LLM_MODEL`` :func:`chat_provider` is None and the runtime uses the offline
responder (``blueprints/ai/offline.py``). Every failure, after the retries, is one :class:`ProviderError`
with a short ``reason``; callers never see the library's exception classes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from flask import current_app, has_app_context

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_TOKENS = 800


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # The model's raw argument text when it was not a JSON object (the tool answers with an error).
    invalid_arguments: str | None = field(default=None, repr=False)


@dataclass
class Completion:
    text: str | None
    tool_calls: list[ToolCall]
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None = None
    latency_ms: int | None = None


class ProviderError(Exception):
    """The model could not answer. ``reason``: ``timeout``, ``rate_limited``, ``unavailable`` (connection
    refused, 5xx), ``auth`` (401/403), ``bad_request`` (4xx: the request itself), ``bad_response`` (an
    answer without a usable message)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def _setting(name: str, default: Any = None) -> Any:
    if has_app_context():
        value = current_app.config.get(name)
        if value is not None:
            return value
    value = os.environ.get(name)
    return default if value is None or (value == "" and default is not None) else value


@dataclass(frozen=True)
class ProviderSettings:
    base_url: str
    model: str
    api_key: str
    timeout: float
    max_retries: int
    max_tokens: int


def settings() -> ProviderSettings | None:
    base_url, model = _setting("LLM_BASE_URL"), _setting("LLM_MODEL")
    if not base_url or not model:
        return None
    return ProviderSettings(
        base_url=str(base_url),
        model=str(model),
        api_key=str(_setting("LLM_API_KEY", "") or ""),
        timeout=float(_setting("LLM_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)),
        max_retries=int(_setting("LLM_MAX_RETRIES", DEFAULT_MAX_RETRIES)),
        max_tokens=int(_setting("LLM_MAX_TOKENS", DEFAULT_MAX_TOKENS)),
    )


class ChatProvider:
    """One configured model. ``complete`` sends the messages (OpenAI's roles: system, user, assistant,
    tool) and, when given, the tools (OpenAI's ``{"type": "function", "function": {...}}``)."""

    def __init__(self, config: ProviderSettings) -> None:
        # Imported with the first configured model, not at start-up: the client library costs every app
        # process about 40 MB of memory, and without a model it is never used.
        import openai

        self.settings = config
        self.model = config.model
        # A self-hosted server needs no key, but the client refuses an empty one: any text will do.
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "not-needed",
            timeout=config.timeout,
            max_retries=config.max_retries,
        )

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": min(max_tokens or self.settings.max_tokens, self.settings.max_tokens),
        }
        if tools:
            request["tools"] = tools
            request["tool_choice"] = "auto"
        if temperature is not None:
            request["temperature"] = temperature
        import openai  # loaded by __init__ already; the name is needed for the errors below

        started = time.perf_counter()
        try:
            response = self._client.chat.completions.create(**request)
        except openai.APITimeoutError as exc:
            raise ProviderError("timeout", str(exc)) from None
        except openai.RateLimitError as exc:
            raise ProviderError("rate_limited", str(exc)) from None
        except openai.APIConnectionError as exc:
            raise ProviderError("unavailable", str(exc)) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise ProviderError("auth", str(exc)) from None
        except openai.InternalServerError as exc:
            raise ProviderError("unavailable", str(exc)) from None
        except openai.APIStatusError as exc:
            raise ProviderError("bad_request", f"HTTP {exc.status_code}: {exc.message}") from None
        except openai.APIError as exc:  # a body the client could not read
            raise ProviderError("bad_response", str(exc)) from None
        latency_ms = int((time.perf_counter() - started) * 1000)
        return _completion(response, self.model, latency_ms)


def _completion(response: Any, model: str, latency_ms: int) -> Completion:
    choices = getattr(response, "choices", None) or []
    if not choices or getattr(choices[0], "message", None) is None:
        raise ProviderError("bad_response", "the answer has no message")
    message = choices[0].message
    calls = []
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is None:
            continue
        raw = function.arguments or "{}"
        try:
            arguments = json.loads(raw)
        except ValueError:
            arguments = None
        if isinstance(arguments, dict):
            calls.append(ToolCall(id=call.id, name=function.name, arguments=arguments))
        else:
            calls.append(ToolCall(id=call.id, name=function.name, arguments={}, invalid_arguments=raw))
    if not calls and not (message.content or "").strip():
        raise ProviderError("bad_response", "the answer has neither text nor tool calls")
    usage = getattr(response, "usage", None)
    return Completion(
        text=message.content,
        tool_calls=calls,
        model=getattr(response, "model", None) or model,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        finish_reason=getattr(choices[0], "finish_reason", None),
        latency_ms=latency_ms,
    )


def chat_provider() -> ChatProvider | None:
    """The configured model, or None when ``LLM_BASE_URL``/``LLM_MODEL`` are not set (offline mode)."""
    config = settings()
    return ChatProvider(config) if config is not None else None
