"""The runtime end to end: a customer's WhatsApp message (through Meta's webhook) reaches a conversation
routed to an AI agent, the agent asks the fake model and answers through the fake Meta Graph server."""

from __future__ import annotations

import time
from typing import Any

from flask.testing import FlaskClient

from tests.ai.conftest import MakeAgent, Say, conversation_of, messages_of, runs_of, sent_texts
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM


def test_an_incoming_message_is_answered_by_the_agent(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent()
    llm.reply("¡Hola! ¿En qué te ayudo?")
    say("hola")
    assert sent_texts(meta) == ["¡Hola! ¿En qué te ayudo?"]
    conversation = conversation_of(client, org)
    assert conversation["extra"]["member_id"] == agent.id
    [incoming, answer] = messages_of(client, org, conversation["id"])
    assert answer["direction"] == "outgoing" and answer["member_id"] == agent.id
    [run] = runs_of(client, agent)
    assert run["outcome"] == "answered"
    assert run["model"] == "fake-model-1"
    assert run["trigger_message_ids"] == [incoming["id"]]
    assert run["sent_message_ids"] == [answer["id"]]
    assert run["prompt_chars"] > 0 and run["prompt_tokens"] > 0 and run["latency_ms"] >= 0
    request = llm.requests[0]
    assert request["model"] == "fake-model-1"
    assert llm.headers[0]["Authorization"] == "Bearer sk-test"
    assert request["messages"][-1] == {"role": "user", "content": "hola"}


def test_prompt_sections_in_the_documented_order_with_tools_transfers_and_temperature(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, make_human: Any
) -> None:
    ana = make_human("Ana")
    make_agent(
        {
            "sections": {
                "zeta": "Z section.",
                "closing": "Say goodbye.",
                "faq": "F section.",
                "escalation": "Escalate politely.",
                "knowledge": "We sell SIM cards.",
                "tone": "Warm.",
                "rules": "Never invent prices.",
                "identity": "You are Sofía.",
                "chat": {"temperature": 0.3},
            },
            "tools": {"transfer_to_human": {"enabled": True}, "search_knowledge": {"enabled": True}},
            "call_transfers": [
                {"name": "Billing", "condition": "the customer asks about an invoice", "target": ana}
            ],
        }
    )
    say("hola")
    system = llm.system(0)
    headings = [line for line in system.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Identity",
        "## Rules",
        "## Tone",
        "## Knowledge",
        "## Escalation",
        "## Closing",
        "## Faq",
        "## Zeta",
        "## Tools",
        "## Transfers",
        "## Conversation",
    ]
    assert "You are Sofía." in system and "- Billing: when the customer asks about an invoice" in system
    assert "Channel: whatsapp" in system
    assert llm.requests[0]["temperature"] == 0.3
    assert llm.tool_names(0) == ["transfer_to_human", "search_knowledge"]
    transfer = llm.requests[0]["tools"][0]["function"]["parameters"]
    assert transfer["properties"]["rule"]["enum"] == ["Billing"] and transfer["required"] == ["note"]


def test_disabled_tools_are_never_offered(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say
) -> None:
    agent = make_agent(
        {
            "sections": {"identity": "You are Bot."},
            "tools": {
                "search_knowledge": {"enabled": True},
                "create_ticket": {"enabled": False},
                "send_product": {"enabled": False},
            },
        }
    )
    say("hola")
    assert llm.tool_names(0) == ["search_knowledge"]
    client.patch(
        agent.path(f"/members/{agent.id}/agent-config"),
        json={"tools": {"search_knowledge": {"enabled": False}}},
        headers=org.headers(),
    )
    say("otra pregunta")
    assert "tools" not in llm.requests[1] and "tool_choice" not in llm.requests[1]
    # a model that calls a tool it was not offered gets an error back, and the run goes on
    llm.call_tools(("create_ticket", {"title": "x"})).reply("Listo.")
    say("abre un ticket")
    tool_message = llm.requests[3]["messages"][-1]
    assert tool_message["role"] == "tool" and "not available" in tool_message["content"]
    assert runs_of(client, agent)[0]["outcome"] == "answered"


def test_history_is_limited_by_context_messages_and_none_for_zero(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say
) -> None:
    agent = make_agent({"sections": {"identity": "Bot", "chat": {"context_messages": 2}}})
    llm.reply("a1").reply("a2").reply("a3").reply("a4")
    say("one")
    say("two")
    say("three")
    assert llm.conversation(2) == [("user", "two"), ("assistant", "a2"), ("user", "three")]
    client.patch(
        agent.path(f"/members/{agent.id}/agent-config"),
        json={"sections": {"chat": {"context_messages": 0}}},
        headers=org.headers(),
    )
    say("four")
    assert llm.conversation(3) == [("user", "four")]


def test_history_is_limited_by_context_days_and_a_closed_window_sends_nothing(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent({"sections": {"identity": "Bot", "chat": {"context_days": 2}}})
    three_days_ago = str(int(time.time()) - 3 * 86400)
    say("old question", timestamp=three_days_ago)
    # the window (24 h from the customer's last message) is closed: no model call, nothing sent
    assert llm.requests == [] and meta.sends() == []
    [closed] = runs_of(client, agent)
    assert closed["outcome"] == "window_closed" and closed["sent_message_ids"] == []
    say("new question")
    assert llm.conversation(0) == [("user", "new question")]
    client.patch(
        agent.path(f"/members/{agent.id}/agent-config"),
        json={"sections": {"chat": {"context_days": 7}}},
        headers=org.headers(),
    )
    say("third")
    assert [text for _, text in llm.conversation(1)] == [
        "old question",
        "new question",
        llm_default(),
        "third",
    ]


def llm_default() -> str:
    from tests.support.fake_llm import DEFAULT_TEXT

    return DEFAULT_TEXT
