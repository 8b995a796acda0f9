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

:meth:`ChatProvider.complete` waits for the whole answer (messaging sends whole messages);
:meth:`ChatProvider.stream` asks for ``stream: true`` and yields the answer's text as its server-sent
events arrive, then the assembled :class:`Completion` (a phone call speaks the first words at once).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
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

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
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
        return request

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        request = self._request(messages, tools, temperature, max_tokens)
        started = time.perf_counter()
        with _as_provider_errors():
            response = self._client.chat.completions.create(**request)
        latency_ms = int((time.perf_counter() - started) * 1000)
        return _completion(response, self.model, latency_ms)

    def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Iterator[str | Completion]:
        """The same request with ``stream: true`` (server-sent events): yields each piece of the answer's
        text as it arrives (a caller on a phone call speaks it at once), then one :class:`Completion`
        with the whole text, the tool calls assembled from their deltas and the usage. Failures are
        :class:`ProviderError`, before the first piece or in the middle of the stream."""
        request = self._request(messages, tools, temperature, max_tokens)
        # Usage comes in a last chunk only when asked for (OpenAI, vLLM, Ollama honour it).
        request.update(stream=True, stream_options={"include_usage": True})
        started = time.perf_counter()
        assembled = _Assembly()
        with _as_provider_errors():
            response = self._client.chat.completions.create(**request)
            try:
                for chunk in response:
                    piece = assembled.add(chunk)
                    if piece:
                        yield piece
            finally:
                # A caller that stops early (the caller spoke over the agent) closes the HTTP stream now,
                # not when the garbage collector gets to it: the server stops writing and the connection
                # goes back to the pool.
                response.close()
        latency_ms = int((time.perf_counter() - started) * 1000)
        yield assembled.completion(self.model, latency_ms)


@contextmanager
def _as_provider_errors() -> Iterator[None]:
    """The client library's exceptions as one :class:`ProviderError` with a short reason."""
    import openai  # loaded by ChatProvider.__init__ already; the names are needed for the errors below

    try:
        yield
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


@dataclass
class _Assembly:
    """A streamed answer put back together: text pieces, tool calls by their ``index`` (the id and name
    come in the first delta, the arguments' text in pieces), the usage of the last chunk."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    model: str | None = None
    finish_reason: str | None = None
    usage: Any = None

    def add(self, chunk: Any) -> str | None:
        self.model = getattr(chunk, "model", None) or self.model
        self.usage = getattr(chunk, "usage", None) or self.usage
        choices = getattr(chunk, "choices", None) or []
        if not choices:
            return None
        self.finish_reason = getattr(choices[0], "finish_reason", None) or self.finish_reason
        delta = getattr(choices[0], "delta", None)
        for call in getattr(delta, "tool_calls", None) or []:
            slot = self.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            function = getattr(call, "function", None)
            slot["id"] = call.id or slot["id"]
            slot["name"] = getattr(function, "name", None) or slot["name"]
            slot["arguments"] += getattr(function, "arguments", None) or ""
        piece = getattr(delta, "content", None)
        if piece:
            self.text.append(piece)
        return piece or None

    def completion(self, model: str, latency_ms: int) -> Completion:
        calls = [_tool_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(self.calls.items())]
        text = "".join(self.text) or None
        if not calls and not (text or "").strip():
            raise ProviderError("bad_response", "the answer has neither text nor tool calls")
        return Completion(
            text=text,
            tool_calls=calls,
            model=self.model or model,
            prompt_tokens=getattr(self.usage, "prompt_tokens", None),
            completion_tokens=getattr(self.usage, "completion_tokens", None),
            finish_reason=self.finish_reason,
            latency_ms=latency_ms,
        )


def _tool_call(call_id: str, name: str, raw: str | None) -> ToolCall:
    """A tool call; arguments that are not a JSON object are kept raw (the tool answers with an error)."""
    raw = raw or "{}"
    try:
        arguments = json.loads(raw)
    except ValueError:
        arguments = None
    if isinstance(arguments, dict):
        return ToolCall(id=call_id, name=name, arguments=arguments)
    return ToolCall(id=call_id, name=name, arguments={}, invalid_arguments=raw)


def _completion(response: Any, model: str, latency_ms: int) -> Completion:
    choices = getattr(response, "choices", None) or []
    if not choices or getattr(choices[0], "message", None) is None:
        raise ProviderError("bad_response", "the answer has no message")
    message = choices[0].message
    calls = [
        _tool_call(call.id, call.function.name, call.function.arguments)
        for call in message.tool_calls or []
        if getattr(call, "function", None) is not None
    ]
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
