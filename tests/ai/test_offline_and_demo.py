"""Without a model: the offline responder answers from the agent's knowledge or hands over; the demo
organization's AI agent answers a knowledge question from the demo documents."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.channels.inbound import InboundMessage, whatsapp_contact_address
from blueprints.messaging.demo import DEMO_PHONE_NUMBER_ID
from blueprints.messaging.ingest import ingest_events
from core.db import utcnow
from core.demo import DEMO_ORGANIZATION_ID
from core.environments import LIVE, in_environment
from tests.ai.conftest import MakeAgent, Say, conversation_of, mem, msg, runs_of, sent_texts
from tests.conftest import Org

FERNANDA = "5215599001122"  # the demo conversation assigned to the AI agent ai_demo_sofia


def _key(output: str) -> str:
    return next(line.split(": ")[1] for line in output.splitlines() if "live API key" in line)


def _fernanda_writes(app: Flask, text: str, n: int) -> None:
    with in_environment(app, LIVE):
        ingest_events(
            [
                InboundMessage(
                    service="whatsapp",
                    organization_address=DEMO_PHONE_NUMBER_ID,
                    external_id=f"wamid.TEST.{n}",
                    contact_address=whatsapp_contact_address(FERNANDA),
                    provider_contact_id=FERNANDA,
                    contact_name="Fernanda Ortiz",
                    timestamp=utcnow(),
                    content={"kind": "text", "text": text},
                )
            ]
        )


def test_the_demo_agent_answers_a_knowledge_question_offline(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, offline: None
) -> None:
    seeded = runner.invoke(args=["demo", "seed"])
    assert seeded.exit_code == 0, seeded.output
    headers = {"X-API-Key": _key(seeded.output)}
    org = str(DEMO_ORGANIZATION_ID)
    base = f"/v2/messages/organizations/{org}"
    _fernanda_writes(app, "¿Cuál es su horario de atención?", 1)
    conversations = client.get(f"{base}/conversations?take=100", headers=headers).get_json()["data"]
    [fernanda] = [c for c in conversations if c["name"] == "Fernanda Ortiz"]
    messages = client.get(
        f"{base}/messages?conversation_id={fernanda['id']}&take=50", headers=headers
    ).get_json()
    answer = messages["data"][-1]
    assert answer["direction"] == "outgoing" and answer["member_id"] == "ai_demo_sofia"
    assert "lunes a viernes de 9:00 a 19:00" in answer["content"]["text"]
    runs = client.get(
        f"/v1/members/organizations/{org}/members/ai_demo_sofia/runs", headers=headers
    ).get_json()
    # (seeding itself let the agent answer the demo conversations waiting for it: only Fernanda's here)
    run = next(r for r in runs["data"] if r["conversation_id"] == fernanda["id"])
    assert run["model"] == "offline" and run["outcome"] == "answered"
    assert run["tool_calls"][0]["result"]["results"][0]["title"] == "Horario de atención"
    # a question the knowledge does not cover goes to people (the demo number routes to the sales team)
    _fernanda_writes(app, "¿Venden bicicletas eléctricas?", 2)
    fernanda = client.get(f"{base}/conversations/{fernanda['id']}", headers=headers).get_json()
    assert fernanda["extra"].get("member_id") != "ai_demo_sofia"
    assert fernanda["extra"]["team_id"] is not None
    runs = client.get(
        f"/v1/members/organizations/{org}/members/ai_demo_sofia/runs", headers=headers
    ).get_json()
    latest = next(r for r in runs["data"] if r["conversation_id"] == fernanda["id"])
    assert latest["outcome"] == "handed_off"


def test_offline_answers_from_the_knowledge_section_and_agent_scoped_documents(
    client: FlaskClient, org: Org, make_agent: MakeAgent, say: Say, meta: Any, offline: None
) -> None:
    agent = make_agent(
        {
            "sections": {
                "identity": "Bot",
                "knowledge": "Returns: you can return a product within 30 days.\n\nWe ship to Mexico only.",
            }
        }
    )
    other = make_agent({"sections": {"identity": "Other"}}, name="Other", route=False)
    client.post(
        mem(org, "/knowledge"),
        json={"title": "Warranty", "body": "Every router has a two year warranty.", "agent_id": agent.id},
        headers=org.headers(),
    )
    client.post(
        mem(org, "/knowledge"),
        json={"title": "Secret", "body": "The discount code is SECRET10.", "agent_id": other.id},
        headers=org.headers(),
    )
    say("Can I return a product?")
    assert sent_texts(meta) == ["Returns: you can return a product within 30 days."]
    say("How long is the router warranty?")
    assert sent_texts(meta)[-1] == "Warranty\nEvery router has a two year warranty."
    say("what is the discount code?")  # another agent's document: not this agent's knowledge
    assert len(sent_texts(meta)) == 2
    conversation = conversation_of(client, org)
    assert conversation["extra"].get("member_id") is None
    notes = client.get(
        msg(org, f"/conversations/{conversation['id']}/notes"), headers=org.headers()
    ).get_json()
    assert "discount code" in notes["data"][0]["content"]
    assert [run["outcome"] for run in runs_of(client, agent)] == ["handed_off", "answered", "answered"]
