"""One answer per burst, pauses (human replies, supervisors), and model failures handed to people."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from blueprints.messaging.models import Conversation
from core.db import db, utcnow
from core.environments import LIVE, environment_app
from tests.ai.conftest import MakeAgent, Say, conversation_of, messages_of, msg, runs_of, sent_texts
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM


def test_messages_delivered_together_get_one_answer(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent()
    llm.reply("Claro, te ayudo con ambas.")
    say("hola", "tengo dos preguntas", "¿tienen eSIM?")
    assert len(llm.requests) == 1
    assert llm.conversation(0) == [
        ("user", "hola"),
        ("user", "tengo dos preguntas"),
        ("user", "¿tienen eSIM?"),
    ]
    assert sent_texts(meta) == ["Claro, te ayudo con ambas."]
    [run] = runs_of(client, agent)
    assert len(run["trigger_message_ids"]) == 3


def test_messages_arriving_while_the_model_thinks_cause_one_more_run(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent()

    def customer_writes_twice() -> None:
        say("¿sigues ahí?")
        say("también quiero saber el precio")

    llm.reply("Hola, soy Bot.", during=customer_writes_twice).reply("Sí: cuesta $299.")
    say("hola")
    # two runs, not three: the second answers both messages that came in during the first
    assert len(llm.requests) == 2
    assert llm.conversation(1)[-2:] == [("user", "¿sigues ahí?"), ("user", "también quiero saber el precio")]
    assert ("assistant", "Hola, soy Bot.") in llm.conversation(1)
    assert sent_texts(meta) == ["Hola, soy Bot.", "Sí: cuesta $299."]
    runs = runs_of(client, agent)
    assert [len(r["trigger_message_ids"]) for r in reversed(runs)] == [1, 2]


def test_a_human_reply_pauses_the_agent_for_the_documented_time(
    app: Flask, client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, make_human: Any
) -> None:
    agent = make_agent()
    ana = make_human("Ana")
    llm.reply("hola")
    say("hola")
    conversation = conversation_of(client, org)
    reply = client.post(
        msg(org, "/messages"),
        json={
            "organization_address": agent.address,
            "service": "whatsapp",
            "direction": "outgoing",
            "contact_address": conversation["contact_address"].lstrip("+"),
            "content": {"kind": "text", "text": "Soy Ana, te atiendo yo."},
            "member_id": ana,
        },
        headers=org.headers(),
    )
    assert reply.status_code == 201, reply.get_json()
    state = client.get(msg(org, f"/conversations/{conversation['id']}/ai"), headers=org.headers()).get_json()
    assert state["paused"] is True and state["agent_id"] == agent.id and state["paused_until"] != "resumed"
    say("gracias Ana")
    assert len(llm.requests) == 1  # paused: the model is not asked
    assert runs_of(client, agent)[0]["outcome"] == "skipped_paused"
    # AI_PAUSE_MINUTES (30) later the pause is over
    with app.app_context():
        db.session.execute(
            update(Conversation)
            .where(Conversation.id == uuid.UUID(conversation["id"]))
            .values(ai_paused_at=utcnow() - timedelta(minutes=31))
        )
        db.session.commit()
    llm.reply("Aquí sigo.")
    say("¿hay alguien?")
    assert len(llm.requests) == 2
    # the messages people handled are not answered again: only the new one
    assert llm.conversation(1)[-1] == ("user", "¿hay alguien?")
    assert runs_of(client, agent)[0]["outcome"] == "answered"


def test_a_supervisor_pauses_until_resumed(
    app: Flask, client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say
) -> None:
    make_agent()
    say("hola")
    conversation = conversation_of(client, org)
    base = msg(org, f"/conversations/{conversation['id']}/ai")
    paused = client.post(f"{base}/pause", headers=org.headers())
    assert paused.status_code == 200 and paused.get_json()["paused_until"] == "resumed"
    with app.app_context():  # a pause until resumed does not end with time
        db.session.execute(
            update(Conversation)
            .where(Conversation.id == uuid.UUID(conversation["id"]))
            .values(ai_paused_at=utcnow() - timedelta(days=1))
        )
        db.session.commit()
    say("¿hola?")
    assert len(llm.requests) == 1
    resumed = client.post(f"{base}/resume", headers=org.headers())
    assert resumed.status_code == 200 and resumed.get_json()["paused"] is False
    say("¿me ayudas?")
    assert len(llm.requests) == 2 and llm.conversation(1)[-1] == ("user", "¿me ayudas?")
    assert (
        client.post(msg(org, f"/conversations/{uuid.uuid4()}/ai/pause"), headers=org.headers()).status_code
        == 404
    )
    other = client.post(msg(org, "/conversations/nope/ai/resume"), headers=org.headers())
    assert other.status_code == 404 and other.get_json() == {
        "statusCode": 404,
        "message": "Conversation not found",
    }


def test_a_failing_model_hands_the_conversation_to_people_keeping_the_message(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent()
    llm.fail(500, times=2)  # LLM_MAX_RETRIES=1: the first try and one retry
    say("necesito ayuda urgente")
    assert len(llm.requests) == 2
    assert meta.sends() == []
    conversation = conversation_of(client, org)
    assert conversation["extra"].get("member_id") is None  # back to people
    [message] = messages_of(client, org, conversation["id"])
    assert message["direction"] == "incoming" and message["content"]["text"] == "necesito ayuda urgente"
    notes = client.get(
        msg(org, f"/conversations/{conversation['id']}/notes"), headers=org.headers()
    ).get_json()
    assert "necesito ayuda urgente" in notes["data"][0]["content"]
    [run] = runs_of(client, agent)
    assert run["outcome"] == "failed_handed_off" and run["error"].startswith("model unavailable")
    state = client.get(msg(org, f"/conversations/{conversation['id']}/ai"), headers=org.headers()).get_json()
    assert state["last_outcome"] == "failed_handed_off" and state["agent_id"] is None


def test_rate_limits_and_timeouts_are_retried_then_handed_off(
    app: Flask, client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent()
    llm.fail(429).reply("Hola, ya estoy.")  # one 429, then the retry succeeds
    say("hola")
    assert len(llm.requests) == 2 and sent_texts(meta) == ["Hola, ya estoy."]
    environment_app(app, LIVE).config.update(LLM_TIMEOUT_SECONDS=0.05, LLM_MAX_RETRIES=0)
    llm.reply("too late", delay=0.2)
    say("¿sigues?")
    [timed_out, answered] = runs_of(client, agent)
    assert answered["outcome"] == "answered"
    assert timed_out["outcome"] == "failed_handed_off" and timed_out["error"].startswith("model timeout")
    assert sent_texts(meta) == ["Hola, ya estoy."]


def test_a_failure_after_a_tool_keeps_the_tools_effect_and_its_record(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent({"sections": {"identity": "Bot"}, "tools": {"create_ticket": {"enabled": True}}})
    llm.call_tools(("create_ticket", {"title": "Sin señal"})).fail(500, times=2)
    say("no tengo señal")
    [run] = runs_of(client, agent)
    assert run["outcome"] == "failed_handed_off"
    assert [call["name"] for call in run["tool_calls"]] == ["create_ticket"]
    assert run["tool_calls"][0]["result"]["reference"]  # the ticket exists: its reference was answered
    assert run["rounds"] == 1 and meta.sends() == []


def test_a_lease_left_by_a_dead_worker_is_taken_over(
    app: Flask, client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    from blueprints.ai.models import AiConversationState

    make_agent()
    llm.reply("uno")
    say("hola")
    conversation_id = uuid.UUID(conversation_of(client, org)["id"])
    with app.app_context():  # a run died holding the lease
        db.session.execute(
            update(AiConversationState)
            .where(AiConversationState.conversation_id == conversation_id)
            .values(lease_token="dead", lease_until=utcnow() + timedelta(minutes=5))
        )
        db.session.commit()
    say("¿hola?")
    assert len(llm.requests) == 1  # held: the message waits
    with app.app_context():  # AI_LEASE_SECONDS later
        db.session.execute(
            update(AiConversationState)
            .where(AiConversationState.conversation_id == conversation_id)
            .values(lease_until=utcnow() - timedelta(seconds=1))
        )
        db.session.commit()
    llm.reply("Aquí estoy.")
    say("¿alguien?")
    assert len(llm.requests) == 2
    assert llm.conversation(1)[-2:] == [("user", "¿hola?"), ("user", "¿alguien?")]
    assert sent_texts(meta) == ["uno", "Aquí estoy."]


def test_a_template_pauses_the_agent_unless_do_not_pause(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent()
    template = meta.add_template(name="follow_up", components=[{"type": "BODY", "text": "Hola de nuevo"}])
    llm.reply("hola")
    say("hola")

    def send(do_not_pause: bool) -> None:
        response = client.post(
            msg(org, "/messages/send-template"),
            json={
                "organization_address": agent.address,
                "to": "+5215512345678",
                "meta_template_id": template["id"],
                "do_not_pause": do_not_pause,
            },
            headers=org.headers(),
        )
        assert response.status_code == 201, response.get_json()

    send(do_not_pause=True)
    llm.reply("sigo aquí")
    say("¿y ahora?")
    assert len(llm.requests) == 2
    send(do_not_pause=False)
    say("¿hola?")
    assert len(llm.requests) == 2
    assert runs_of(client, agent)[0]["outcome"] == "skipped_paused"
