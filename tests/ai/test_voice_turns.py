"""The voice interface (``voice_turns.py``) on the conversation core, and the provider's streaming,
against the fake OpenAI-compatible server: a call's turns in, the answer streamed out as text chunks,
an interrupt trimming what the agent said, hand-off data from a transfer rule, offline and failures."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask

from blueprints.ai.provider import Completion, ProviderError, chat_provider
from blueprints.ai.voice_turns import VoiceTurns, start_session
from core.environments import LIVE, environment_app
from core.errors import ApiError
from tests.ai.conftest import MakeAgent, mem
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM

TRANSFERS = {
    "sections": {"identity": "You are Sofía.", "chat": {"context_messages": 2}},
    "tools": {
        "transfer_to_human": {"enabled": True},
        "search_knowledge": {"enabled": True},
        "create_ticket": {"enabled": True},
    },
    "call_transfers": [
        {
            "name": "Ventas",
            "condition": "the caller wants to buy",
            "target": "+525512345678",
            "announce_message": "Te comunico con ventas.",
        }
    ],
}


def test_the_provider_streams_text_then_the_assembled_completion(app: Flask, llm: FakeLLM) -> None:
    llm.reply("Claro, enviamos a todo México.")
    llm.call_tools(("search_knowledge", {"query": "envíos"}), ("transfer_to_human", {"note": "x"}))
    with environment_app(app, LIVE).app_context():
        provider = chat_provider()
        assert provider is not None
        first = list(provider.stream([{"role": "user", "content": "hola"}], temperature=0.2))
        second = list(provider.stream([{"role": "user", "content": "hola"}], tools=[{"type": "function"}]))
    *pieces, done = first
    assert len(pieces) > 1 and "".join(pieces) == "Claro, enviamos a todo México."  # word by word
    assert isinstance(done, Completion) and done.text == "Claro, enviamos a todo México."
    assert done.finish_reason == "stop" and done.prompt_tokens is not None and done.completion_tokens
    assert llm.requests[0]["stream"] is True and llm.requests[0]["stream_options"] == {"include_usage": True}
    [calls] = second  # no text: only the completion, its tool calls put back together from their deltas
    assert isinstance(calls, Completion) and calls.text is None
    assert [(c.name, c.arguments) for c in calls.tool_calls] == [
        ("search_knowledge", {"query": "envíos"}),
        ("transfer_to_human", {"note": "x"}),
    ]


def test_a_failing_stream_is_a_provider_error(app: Flask, llm: FakeLLM) -> None:
    llm.fail(429, times=2)
    with environment_app(app, LIVE).app_context():
        provider = chat_provider()
        assert provider is not None
        with pytest.raises(ProviderError) as limited:
            list(provider.stream([{"role": "user", "content": "x"}]))
    assert limited.value.reason == "rate_limited"


def test_a_call_streams_answers_trims_an_interrupt_and_ends_with_a_transfer_rule(
    app: Flask, org: Org, llm: FakeLLM, make_agent: MakeAgent
) -> None:
    agent = make_agent(TRANSFERS, route=False)
    tool_calls: list[dict[str, Any]] = []
    llm.reply("Hola, soy Sofía. ¿En qué te ayudo?")
    llm.reply("Claro, los envíos tardan tres días y cuestan cien pesos.")
    llm.call_tools(("transfer_to_human", {"note": "Quiere comprar 3 SIM", "rule": "Ventas"}))
    with environment_app(app, LIVE).app_context():
        session: VoiceTurns = start_session(
            uuid.UUID(org.id), agent.id, contact_name="Jessica", on_tool=tool_calls.append
        )
        assert list(session.prompt("Hola,", last=False)) == []  # a partial prompt waits for the last piece
        greeting = list(session.prompt("buenas tardes", last=True))
        assert len(greeting) > 1 and "".join(greeting) == "Hola, soy Sofía. ¿En qué te ayudo?"
        answer = session.prompt("¿Cuánto tardan los envíos?")
        said = "".join([next(answer), next(answer)])  # the caller speaks over the agent here
        session.interrupt(said)
        assert list(session.prompt("Quiero comprar tres SIM")) == ["Te comunico con ventas."]
        assert list(session.prompt("¿Sigues ahí?")) == []  # handed off: nobody answers any more
        ended = session.end()
    first = llm.requests[0]
    assert first["stream"] is True and first["messages"][-1] == {
        "role": "user",
        "content": "Hola, buenas tardes",
    }
    system = first["messages"][0]["content"]
    assert "Channel: voice" in system and "Customer name: Jessica" in system and "## Voice" in system
    assert "- Ventas: when the caller wants to buy" in system
    # on a call only the tools that need no messaging conversation are offered
    assert llm.tool_names(0) == ["transfer_to_human", "search_knowledge"]
    # the model's context holds what the caller actually heard (context_messages = 2)
    assert llm.conversation(2) == [
        ("user", "¿Cuánto tardan los envíos?"),
        ("assistant", "Claro, los"),
        ("user", "Quiero comprar tres SIM"),
    ]
    assert [(line["speaker"], line["text"]) for line in ended.transcript] == [
        ("caller", "Hola, buenas tardes"),
        ("agent", "Hola, soy Sofía. ¿En qué te ayudo?"),
        ("caller", "¿Cuánto tardan los envíos?"),
        ("agent", "Claro, los"),
        ("caller", "Quiero comprar tres SIM"),
        ("agent", "Te comunico con ventas."),
    ]
    times = [line["at_ms"] for line in ended.transcript]
    assert times == sorted(times)
    assert ended.handoff is not None and ended.handoff.as_dict() == {
        "target": "+525512345678",
        "rule": "Ventas",
        "reason": "Quiere comprar 3 SIM",
    }
    assert ended.outcome == "handed_off" and [run.outcome for run in ended.runs][-1] == "handed_off"
    assert [call["name"] for call in tool_calls] == ["transfer_to_human"]
    assert tool_calls[0]["result"]["transferred"] is True and len(llm.requests) == 3


def test_a_call_without_a_model_answers_from_knowledge_or_hands_off(
    app: Flask, client: Any, org: Org, make_agent: MakeAgent, offline: None
) -> None:
    agent = make_agent({"sections": {"identity": "Bot"}}, route=False)
    client.post(
        mem(org, "/knowledge"),
        json={
            "title": "Horario",
            "body": "Abrimos de lunes a viernes de 9 a 18 horas.",
            "agent_id": agent.id,
        },
        headers=org.headers(),
    )
    with environment_app(app, LIVE).app_context():
        session = start_session(uuid.UUID(org.id), agent.id)
        assert list(session.prompt("gracias")) == []  # small talk: no answer, no hand-off
        assert list(session.prompt("¿Cuál es su horario?")) == [
            "Horario\nAbrimos de lunes a viernes de 9 a 18 horas."
        ]
        assert list(session.prompt("¿Venden routers?")) == []
        ended = session.end()
    assert ended.handoff is not None and ended.handoff.target is None
    assert "routers" in ended.handoff.reason and ended.outcome == "handed_off"
    assert [run.outcome for run in ended.runs] == ["no_answer", "answered", "handed_off"]


def test_a_failing_model_hands_the_call_to_a_person(
    app: Flask, org: Org, llm: FakeLLM, make_agent: MakeAgent
) -> None:
    agent = make_agent(TRANSFERS, route=False)
    llm.fail(500, times=2)
    with environment_app(app, LIVE).app_context():
        session = start_session(uuid.UUID(org.id), agent.id)
        assert list(session.prompt("hola")) == []
        ended = session.end()
        with pytest.raises(ApiError) as refused:
            start_session(uuid.UUID(org.id), "no-such-agent")
    assert refused.value.status == 404
    assert ended.handoff is not None and ended.handoff.reason == "The language model failed (unavailable)"
    assert ended.runs[0].outcome == "failed_handed_off" and ended.transcript == [
        {"speaker": "caller", "text": "hola", "at_ms": ended.transcript[0]["at_ms"]}
    ]
