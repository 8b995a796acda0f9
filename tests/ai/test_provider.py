"""The provider against the fake server: settings, the request it sends, answers and errors."""

from __future__ import annotations

import pytest
from flask import Flask

from blueprints.ai.provider import ProviderError, chat_provider
from core.environments import LIVE, environment_app
from tests.support.fake_llm import FakeLLM

TOOL = {"type": "function", "function": {"name": "search_knowledge", "parameters": {"type": "object"}}}


def test_no_model_configured_means_offline(app: Flask, offline: None) -> None:
    with environment_app(app, LIVE).app_context():
        assert chat_provider() is None


def test_a_completion_with_tool_calls_and_usage(app: Flask, llm: FakeLLM) -> None:
    llm.call_tools(("search_knowledge", {"query": "envío"}), text=None)
    with environment_app(app, LIVE).app_context():
        provider = chat_provider()
        assert provider is not None
        completion = provider.complete(
            [{"role": "user", "content": "hola"}], tools=[TOOL], temperature=0.1, max_tokens=5000
        )
    [call] = completion.tool_calls
    assert (call.name, call.arguments) == ("search_knowledge", {"query": "envío"})
    assert completion.text is None and completion.finish_reason == "tool_calls"
    assert completion.prompt_tokens is not None and completion.completion_tokens is not None
    request = llm.requests[0]
    assert request["tools"] == [TOOL] and request["tool_choice"] == "auto"
    assert request["temperature"] == 0.1
    assert request["max_tokens"] == 800  # LLM_MAX_TOKENS bounds what a caller asks


def test_errors_are_one_exception_with_a_reason(app: Flask, llm: FakeLLM) -> None:
    config = environment_app(app, LIVE).config
    with environment_app(app, LIVE).app_context():
        provider = chat_provider()
        assert provider is not None
        llm.fail(401, error_type="invalid_api_key")
        with pytest.raises(ProviderError) as auth:
            provider.complete([{"role": "user", "content": "x"}])
        assert auth.value.reason == "auth" and len(llm.requests) == 1  # not retried
        llm.fail(400, error_type="invalid_request_error")
        with pytest.raises(ProviderError) as bad:
            provider.complete([{"role": "user", "content": "x"}])
        assert bad.value.reason == "bad_request"
        llm.fail(429, times=2)
        with pytest.raises(ProviderError) as limited:
            provider.complete([{"role": "user", "content": "x"}])
        assert (
            limited.value.reason == "rate_limited" and len(llm.requests) == 4
        )  # one retry (LLM_MAX_RETRIES=1)
        llm.reply("")
        with pytest.raises(ProviderError) as empty:
            provider.complete([{"role": "user", "content": "x"}])
        assert empty.value.reason == "bad_response"
    config["LLM_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens there
    config["LLM_MAX_RETRIES"] = 0
    with environment_app(app, LIVE).app_context():
        provider = chat_provider()
        assert provider is not None
        with pytest.raises(ProviderError) as refused:
            provider.complete([{"role": "user", "content": "x"}])
        assert refused.value.reason == "unavailable"
