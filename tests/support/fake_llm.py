"""A fake OpenAI-compatible chat-completions server for tests: a real HTTP server on 127.0.0.1, in a thread.

It speaks the wire format of ``POST /v1/chat/completions`` (OpenAI's, which vLLM, Ollama and llama.cpp's
server also speak): the request's ``model``, ``messages``, ``tools``, ``temperature``, ``max_tokens``; the
answer ``{id, object: "chat.completion", created, model, choices: [{index, message: {role, content,
tool_calls: [{id, type: "function", function: {name, arguments}}]}, finish_reason}], usage: {...}}``; and
errors as ``{"error": {message, type, code}}`` with their HTTP status (429 with ``Retry-After``, 500).

Tests script it: a queue of answers (:meth:`reply`, :meth:`call_tools`, :meth:`fail`), a delay per answer
(for timeouts), a hook run while a request is being answered (to deliver messages "while the model
thinks"), and read back every request it received (:attr:`requests`). An empty queue answers a default
text. A request with ``"stream": true`` is answered with server-sent events (``chat.completion.chunk``:
the text word by word, each tool call's id and name then its arguments in two pieces, a usage chunk when
``stream_options.include_usage`` asks, then ``data: [DONE]``). It knows nothing of the application's code.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, Response, jsonify, request, stream_with_context
from werkzeug.serving import BaseWSGIServer, make_server

DEFAULT_TEXT = "Hello! How can I help you?"


@dataclass
class Scripted:
    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error_type: str = ""
    delay: float = 0.0
    raw_arguments: dict[int, str] = field(default_factory=dict)  # index -> raw (invalid) argument text
    during: Callable[[], None] | None = None  # run while this request is being answered
    word_delay: float = 0.0  # seconds between two streamed words (a slow model, to speak over it)


@dataclass
class FakeLLM:
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    script: list[Scripted] = field(default_factory=list)
    model: str = "fake-model-1"
    _server: BaseWSGIServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- control ----
    def start(self) -> FakeLLM:
        app = Flask("fake_llm")
        app.add_url_rule("/v1/chat/completions", "complete", self._complete, methods=["POST"])
        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self.script.clear()

    def reply(self, text: str, **options: Any) -> FakeLLM:
        self.script.append(Scripted(text=text, **options))
        return self

    def call_tools(
        self, *calls: tuple[str, dict[str, Any]], text: str | None = None, **options: Any
    ) -> FakeLLM:
        """One answer calling ``calls`` (name, arguments) in parallel."""
        self.script.append(
            Scripted(text=text, tool_calls=[{"name": n, "arguments": a} for n, a in calls], **options)
        )
        return self

    def fail(
        self, status: int = 500, times: int = 1, error_type: str = "server_error", **options: Any
    ) -> FakeLLM:
        for _ in range(times):
            self.script.append(Scripted(status=status, error_type=error_type, **options))
        return self

    # ---- reading back ----
    def tool_names(self, index: int = -1) -> list[str]:
        """Names of the tools offered in request ``index``."""
        return [tool["function"]["name"] for tool in self.requests[index].get("tools") or []]

    def system(self, index: int = -1) -> str:
        return str(self.requests[index]["messages"][0]["content"])

    def conversation(self, index: int = -1) -> list[tuple[str, str]]:
        """(role, content) of the non-system messages of request ``index``."""
        return [(m["role"], m.get("content") or "") for m in self.requests[index]["messages"][1:]]

    # ---- HTTP ----
    def _complete(self) -> Response | tuple[Response, int]:
        body = request.get_json(force=True)
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            step = self.script.pop(0) if self.script else Scripted(text=DEFAULT_TEXT)
        if step.during is not None:
            step.during()
        if step.delay:
            time.sleep(step.delay)
        if step.status != 200:
            error = {"error": {"message": f"fake error {step.status}", "type": step.error_type, "code": None}}
            response = jsonify(error)
            response.status_code = step.status
            if step.status == 429:
                response.headers["Retry-After"] = "0"
            return response
        calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": step.raw_arguments.get(index, json.dumps(call["arguments"])),
                },
            }
            for index, call in enumerate(step.tool_calls)
        ]
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(step.text or "") // 4 + 1,
            "total_tokens": prompt_tokens + len(step.text or "") // 4 + 1,
        }
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = self._events(body, step, calls, usage if include_usage else None)
            return Response(stream_with_context(events), mimetype="text/event-stream")
        message: dict[str, Any] = {"role": "assistant", "content": step.text}
        if calls:
            message["tool_calls"] = calls
        return jsonify(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if step.tool_calls else "stop",
                    }
                ],
                "usage": usage,
            }
        )

    def _events(
        self,
        body: dict[str, Any],
        step: Scripted,
        calls: list[dict[str, Any]],
        usage: dict[str, int] | None,
    ) -> Any:
        """The answer as OpenAI's ``chat.completion.chunk`` server-sent events."""
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
        }

        def event(delta: dict[str, Any], finish: str | None = None) -> str:
            chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(chunk)}\n\n"

        yield event({"role": "assistant", "content": ""})
        words = (step.text or "").split(" ")
        for index, word in enumerate(words if step.text else []):
            if index and step.word_delay:
                time.sleep(step.word_delay)
            yield event({"content": word if index == 0 else " " + word})
        for index, call in enumerate(calls):
            head = {"index": index, "id": call["id"], "type": "function"}
            yield event({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]})
            arguments = call["function"]["arguments"]
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                yield event({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield event({}, "tool_calls" if calls else "stop")
        if usage is not None:
            yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
        yield "data: [DONE]\n\n"
