"""Conversation summaries through the fake OpenAI-compatible server: linking a conversation to a deal
captures the model's summary; a failing model, or none configured, leaves the extractive one; the
transcript the model reads is bounded to the newest messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flask.testing import FlaskClient

from blueprints.ai import summaries
from tests.ai.conftest import Say, conversation_of
from tests.conftest import Org
from tests.crm.conftest import Crm
from tests.support.fake_llm import FakeLLM

MODEL_SUMMARY = "El cliente quiere 20 asientos de agente en MXN y pide la propuesta para el viernes."


def _link(client: FlaskClient, org: Org, conversation_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    crm = Crm(client, org)
    deal = crm.deal(name="20 seats")
    link = crm.ok(
        crm.post(
            f"/deals/{deal['id']}/conversations", {"conversation_id": conversation_id, "channel": "whatsapp"}
        ),
        201,
    )
    activity = next(
        a
        for a in crm.ok(crm.get(f"/deals/{deal['id']}/activities"))["data"]
        if a["type"] == "conversation_linked"
    )
    return link, activity


def test_linking_captures_the_models_summary(client: FlaskClient, org: Org, say: Say, llm: FakeLLM) -> None:
    say("Hola, necesito 20 asientos de agente.", "¿Me mandan la propuesta para el viernes?")
    conversation = conversation_of(client, org)
    llm.reply(f"  {MODEL_SUMMARY}\n")

    link, activity = _link(client, org, conversation["id"])

    assert link["summary"] == MODEL_SUMMARY
    assert activity["summary"] == MODEL_SUMMARY
    assert activity["data"]["summary_method"] == "fake-model-1"
    assert activity["data"]["message_count"] == 2
    [request] = llm.requests
    system, user = request["messages"]
    assert system["role"] == "system" and "never invent" in system["content"]
    assert user["content"].startswith("Transcript (channel: whatsapp):")
    assert "Customer: Hola, necesito 20 asientos de agente." in user["content"]
    assert user["content"].index("20 asientos") < user["content"].index("propuesta para el viernes")
    assert request["temperature"] == summaries.TEMPERATURE
    assert request["max_tokens"] == summaries.MAX_SUMMARY_TOKENS
    assert "tools" not in request


def test_a_failing_model_leaves_the_extractive_summary(
    client: FlaskClient, org: Org, say: Say, llm: FakeLLM
) -> None:
    say("Quiero cotizar el plan de WhatsApp.")
    conversation = conversation_of(client, org)
    llm.fail(500, times=2)  # the provider's one retry fails too

    link, activity = _link(client, org, conversation["id"])

    assert len(llm.requests) == 2
    assert activity["data"]["summary_method"] == "extractive"
    assert link["summary"].startswith("1 messages (1 from the contact, 0 from the business).")
    assert "Contact: Quiero cotizar el plan de WhatsApp." in link["summary"]


def test_without_a_model_the_extractive_summary_is_written(
    client: FlaskClient, org: Org, say: Say, offline: None, llm_server: FakeLLM
) -> None:
    llm_server.reset()
    say("Hola, ¿tienen soporte en portugués?")
    link, activity = _link(client, org, conversation_of(client, org)["id"])
    assert activity["data"]["summary_method"] == "extractive"
    assert "soporte en portugués" in link["summary"]
    assert llm_server.requests == []


def test_the_transcript_keeps_the_newest_messages_within_the_bound() -> None:
    start = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    lines = [
        ("inbound" if i % 2 == 0 else "outgoing", f"message {i} " + "x" * 2_000, start + timedelta(minutes=i))
        for i in range(40)
    ]
    text = summaries.transcript_text(lines)
    assert len(text) <= summaries.MAX_TRANSCRIPT_CHARS + 50
    body = text.splitlines()
    assert body[0].endswith("earlier messages omitted)")
    assert body[-1].startswith("[2026-11-23 09:39] Business: message 39 ")
    assert all(len(line) < summaries.MAX_MESSAGE_CHARS + 40 for line in body)
    assert "Customer: message 38" in text and "message 0 " not in text
