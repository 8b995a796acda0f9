"""Each tool's effect in the database, driven by the fake model's tool calls."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from core.db import db
from tests.ai.conftest import MakeAgent, Say, conversation_of, mem, msg, runs_of, sent_texts
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM


def _tools(*names: str) -> dict[str, Any]:
    return {name: {"enabled": True} for name in names}


def test_transfer_to_human_by_a_named_rule_assigns_the_member_with_a_note(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, make_human: Any, meta: Any
) -> None:
    ana = make_human("Ana")
    agent = make_agent(
        {
            "sections": {"identity": "Bot"},
            "tools": _tools("transfer_to_human"),
            "call_transfers": [
                {
                    "name": "Billing",
                    "condition": "an invoice question",
                    "target": ana,
                    "announce_message": "Te comunico con Ana.",
                }
            ],
        }
    )
    llm.call_tools(("transfer_to_human", {"note": "Wants a copy of invoice 42", "rule": "Billing"}))
    say("necesito mi factura")
    conversation = conversation_of(client, org)
    assert conversation["extra"]["member_id"] == ana
    notes = client.get(
        msg(org, f"/conversations/{conversation['id']}/notes"), headers=org.headers()
    ).get_json()
    assert [n["content"] for n in notes["data"]] == ["AI agent handed over: Wants a copy of invoice 42"]
    assert sent_texts(meta) == ["Te comunico con Ana."]  # the rule's announcement closes the run
    assert len(llm.requests) == 1  # people take over: the model is not asked again
    [run] = runs_of(client, agent)
    assert run["outcome"] == "handed_off"
    assert run["tool_calls"][0]["name"] == "transfer_to_human"
    assert run["tool_calls"][0]["result"]["member_id"] == ana
    llm.reply("should not be asked")
    say("¿sigues ahí?")  # the conversation is Ana's now: the agent stays out
    assert len(llm.requests) == 1


def test_transfer_without_a_rule_follows_routing_to_the_team(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, make_human: Any, wa: Any
) -> None:
    ben = make_human("Ben")
    team = client.post(
        mem(org, "/teams"), json={"name": "Soporte", "member_ids": [ben]}, headers=org.headers()
    )
    agent = make_agent({"sections": {"identity": "Bot"}, "tools": _tools("transfer_to_human")})
    llm.reply("hola")
    say("hola")
    # the address now routes new conversations to the team; this one stays the agent's until it hands over
    client.put(
        msg(org, f"/addresses/{wa.address}/routing"),
        json={"target": "team", "team_id": team.get_json()["id"]},
        headers=org.headers(),
    )
    llm.call_tools(("transfer_to_human", {"note": "Customer is angry"}), text="Un momento, por favor.")
    say("quiero hablar con alguien")
    conversation = conversation_of(client, org)
    assert conversation["extra"]["member_id"] == ben
    assert conversation["extra"]["team_id"] == team.get_json()["id"]
    assert runs_of(client, agent)[0]["outcome"] == "handed_off"


def test_transfer_with_no_routing_leaves_the_conversation_unassigned(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say
) -> None:
    make_agent({"sections": {"identity": "Bot"}, "tools": _tools("transfer_to_human")})
    llm.call_tools(("transfer_to_human", {"note": "needs a person"}))
    say("hola")
    conversation = conversation_of(client, org)
    assert conversation["extra"].get("member_id") is None
    events = client.get(
        msg(org, f"/conversations/{conversation['id']}/events?types=unassignment"), headers=org.headers()
    ).get_json()
    assert len(events) == 1


def test_search_knowledge_returns_passages_to_the_model(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    make_agent({"sections": {"identity": "Bot"}, "tools": _tools("search_knowledge")})
    client.post(
        mem(org, "/knowledge"),
        json={"title": "Envíos", "body": "El envío es gratis y tarda de 2 a 4 días hábiles."},
        headers=org.headers(),
    )
    llm.call_tools(("search_knowledge", {"query": "cuánto tarda el envio"})).reply("Tarda de 2 a 4 días.")
    say("¿cuánto tarda el envío?")
    tool_message = llm.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "tarda de 2 a 4" in tool_message["content"]
    assert llm.requests[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "search_knowledge"
    assert sent_texts(meta) == ["Tarda de 2 a 4 días."]


def test_send_product_sends_the_catalogue_item(
    app: Flask, client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    from blueprints.crm.drafts import ProductDraft
    from blueprints.crm.services import products

    with app.app_context():
        plan = products.create_product(
            uuid.UUID(org.id),
            ProductDraft(
                name="Plan 20 GB", price=Decimal("299.00"), currency="MXN", url="https://demo.test/20"
            ),
        )
        photo = products.create_product(
            uuid.UUID(org.id),
            ProductDraft(name="Router 5G", price=Decimal("1499.5"), image_url="https://demo.test/router.png"),
        )
        db.session.commit()
        plan_id, photo_id = str(plan.id), str(photo.id)
    agent = make_agent({"sections": {"identity": "Bot"}, "tools": _tools("send_product")})
    llm.call_tools(("send_product", {"query": "20 GB"})).reply("¿Te lo activo?")
    say("¿qué planes tienen?")
    assert sent_texts(meta) == ["Plan 20 GB — MXN 299.00\nhttps://demo.test/20", "¿Te lo activo?"]
    llm.call_tools(("send_product", {"product_id": photo_id})).reply("Ese es el router.")
    say("¿y el router?")
    image = meta.sends()[2].body
    assert image["type"] == "image" and image["image"]["link"] == "https://demo.test/router.png"
    assert image["image"]["caption"].startswith("Router 5G — MXN 1,499.50")
    llm.call_tools(("send_product", {"product_id": str(uuid.uuid4())})).reply("No lo encontré.")
    say("¿y otro?")
    assert "error" in llm.requests[-1]["messages"][-1]["content"]
    results = [call["result"] for run in runs_of(client, agent) for call in run["tool_calls"]]
    assert {r.get("product_id") for r in results if r.get("sent")} == {plan_id, photo_id}


def test_create_ticket_links_the_conversation_and_the_contact(
    app: Flask, client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say
) -> None:
    from blueprints.crm.drafts import ContactDraft, IdentityDraft
    from blueprints.crm.models import Ticket, TicketConversation
    from blueprints.crm.services import contacts

    with app.app_context():
        contact = contacts.create_contact(
            uuid.UUID(org.id), ContactDraft("Jessica", identities=(IdentityDraft("phone", "+525512345678"),))
        )
        db.session.commit()
        contact_id = contact.id
    make_agent({"sections": {"identity": "Bot"}, "tools": _tools("create_ticket")})
    llm.call_tools(
        (
            "create_ticket",
            {"title": "Sin señal", "description": "Desde ayer <b>no</b> hay señal", "priority": "high"},
        )
    ).reply("Abrí el ticket.")
    say("no tengo señal")
    conversation = conversation_of(client, org)
    with app.app_context():
        [ticket] = db.session.scalars(select(Ticket).where(Ticket.organization_id == uuid.UUID(org.id))).all()
        links = db.session.scalars(select(TicketConversation.conversation_id)).all()
        assert (ticket.title, ticket.priority, ticket.source, ticket.channel) == (
            "Sin señal",
            "high",
            "automation",
            "whatsapp",
        )
        assert ticket.requester_id == contact_id
        assert ticket.body_html is not None and "&lt;b&gt;" in ticket.body_html
        assert links == [conversation["id"]]
    tool_result = llm.requests[1]["messages"][-1]["content"]
    assert ticket.reference in tool_result


def test_schedule_meeting_creates_a_meeting_task_linked_to_contact_and_deal(
    app: Flask, client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say
) -> None:
    from blueprints.crm.drafts import ContactDraft, DealDraft, IdentityDraft
    from blueprints.crm.models import CrmTask
    from blueprints.crm.services import contacts, deals, pipelines

    make_agent({"sections": {"identity": "Bot"}, "tools": _tools("schedule_meeting")})
    llm.reply("hola")
    say("hola")
    conversation = conversation_of(client, org)
    organization_id = uuid.UUID(org.id)
    with app.app_context():
        contact = contacts.create_contact(
            organization_id, ContactDraft("Jessica", identities=(IdentityDraft("phone", "+525512345678"),))
        )
        pipelines.ensure_default_pipeline(organization_id)
        deal = deals.create_deal(
            organization_id,
            DealDraft(
                name="Plan empresa",
                pipeline_id=pipelines.default_pipeline_id(organization_id),
                stage_id=pipelines.default_stage_id(organization_id, 0),
                conversation_ids=(conversation["id"],),
            ),
        )
        db.session.commit()
        contact_id, deal_id = contact.id, deal.id
    llm.reset()
    due = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
    llm.call_tools(
        ("schedule_meeting", {"title": "Demo del plan", "due_date": due.isoformat(), "notes": "Por Meet"})
    ).reply("Agendado.")
    say("¿nos vemos el jueves?")
    with app.app_context():
        [task] = db.session.scalars(select(CrmTask).where(CrmTask.organization_id == organization_id)).all()
        assert (task.type, task.title, task.due_date) == ("meeting", "Demo del plan", due)
        assert task.contact_id == contact_id and task.deal_id == deal_id
        assert task.notes is not None and task.notes.startswith("Por Meet")
    # a date in the past, or not a date: an error for the model, no task
    llm.call_tools(("schedule_meeting", {"title": "Ayer", "due_date": "2020-01-01T10:00:00Z"})).reply("Ok")
    say("¿ayer?")
    assert "past" in llm.requests[-1]["messages"][-1]["content"]
    llm.call_tools(("schedule_meeting", {"title": "X", "due_date": "next thursday"})).reply("Ok")
    say("¿el jueves que viene?")
    assert "invalid arguments: due_date" in llm.requests[-1]["messages"][-1]["content"]
    with app.app_context():
        assert len(db.session.scalars(select(CrmTask)).all()) == 1


def test_invalid_tool_arguments_go_back_to_the_model_never_a_failure(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent(
        {"sections": {"identity": "Bot"}, "tools": _tools("create_ticket", "search_knowledge")}
    )
    llm.call_tools(("create_ticket", {}), ("search_knowledge", {}), raw_arguments={1: "{not json"})
    llm.reply("Perdón, ¿me repites?")
    say("hola")
    tool_messages = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert "invalid arguments: title" in tool_messages[0]["content"]
    assert "must be a JSON object" in tool_messages[1]["content"]
    assert sent_texts(meta) == ["Perdón, ¿me repites?"]
    assert runs_of(client, agent)[0]["outcome"] == "answered"


_EVENTS: list[Any] = []


def _collect(event: Any) -> None:
    _EVENTS.append(event)


def test_tool_calls_and_runs_are_published_for_notifications(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say
) -> None:
    from core.events import subscribe

    for name in ("ai.tool_called", "ai.run.started", "ai.run.finished"):
        subscribe(name, _collect)  # the same function once: subscribing again is a no-op
    _EVENTS.clear()
    agent = make_agent({"sections": {"identity": "Bot"}, "tools": _tools("create_ticket")})
    llm.call_tools(("create_ticket", {"title": "Sin señal"})).reply("Listo.")
    say("no tengo señal")
    conversation = conversation_of(client, org)
    [run] = runs_of(client, agent)
    by_name = {event.name: event.data for event in _EVENTS if event.organization_id == org.id}
    called = by_name["ai.tool_called"]
    assert called["tool"] == "create_ticket" and called["arguments"] == {"title": "Sin señal"}
    assert called["agent_id"] == agent.id and called["conversation_id"] == conversation["id"]
    assert called["contact_address"] == conversation["contact_address"] and called["run_id"] == run["id"]
    assert called["result"]["reference"]
    finished = by_name["ai.run.finished"]
    assert (finished["run_id"], finished["outcome"], finished["tools"]) == (
        run["id"],
        "answered",
        ["create_ticket"],
    )
    assert by_name["ai.run.started"]["run_id"] == run["id"]
