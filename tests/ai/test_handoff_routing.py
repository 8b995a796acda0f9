"""After an agent hands a conversation to people, the inbox's routing does not give it back to an agent:
it waits in its team (or unassigned) for a person, without assignment churn, and a person coming online
picks it up. Archive-and-clean and a person's explicit assignment bring the agent back."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.ai.conftest import MakeAgent, Say, conversation_of, mem, msg, runs_of, sent_texts
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM

TRANSFER = {"sections": {"identity": "Bot"}, "tools": {"transfer_to_human": {"enabled": True}}}


def _extra(client: FlaskClient, org: Org, cid: str) -> dict[str, Any]:
    return client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"]


def _trail(client: FlaskClient, org: Org, cid: str) -> list[dict[str, Any]]:
    return client.get(
        msg(org, f"/conversations/{cid}/events?types=assignment,unassignment"), headers=org.headers()
    ).get_json()


def test_a_handed_off_conversation_waits_in_its_team_until_a_person_comes_online(
    client: FlaskClient,
    org: Org,
    llm: FakeLLM,
    make_agent: MakeAgent,
    say: Say,
    make_human: Any,
    meta: Any,
) -> None:
    agent = make_agent(TRANSFER)
    other_bot = make_agent(name="Bot 2", route=False)  # an AI member in the team, always online
    ben = make_human("Ben", status="offline")
    team = client.post(
        mem(org, "/teams"), json={"name": "Soporte", "member_ids": [other_bot.id, ben]}, headers=org.headers()
    ).get_json()["id"]
    llm.reply("Hola, soy Bot.")
    say("hola")
    cid = conversation_of(client, org)["id"]
    client.patch(msg(org, f"/conversations/{cid}"), json={"extra": {"team_id": team}}, headers=org.headers())
    llm.call_tools(("transfer_to_human", {"note": "wants a person"}), text="Te paso con una persona.")
    say("quiero hablar con alguien")
    assert _extra(client, org, cid)["member_id"] is None
    before = _trail(client, org, cid)
    assert [e["type"] for e in before] == ["assignment", "unassignment"]  # routed to the agent, handed off
    asked = len(llm.requests)
    for text in ("¿hola?", "¿hay alguien?", "por favor"):
        say(text)
    waiting = _extra(client, org, cid)
    # neither the address's rule (the agent) nor the team (Bot 2 is online, Ben is not) takes it back
    assert waiting["member_id"] is None and waiting["team_id"] == team
    assert _trail(client, org, cid) == before  # no assignment churn
    assert len(llm.requests) == asked  # no agent answered
    assert [r["outcome"] for r in runs_of(client, agent)] == ["handed_off", "answered"]
    assert runs_of(client, other_bot) == []
    assert sent_texts(meta) == ["Hola, soy Bot.", "Te paso con una persona."]
    changed = client.patch(
        mem(org, f"/members/{ben}/status"), json={"status": "online"}, headers=org.headers()
    )
    assert changed.status_code == 200
    assert _extra(client, org, cid)["member_id"] == ben
    last = _trail(client, org, cid)[-1]
    assert last["type"] == "assignment" and last["data"]["member_id"] == ben


def test_a_failed_model_hand_off_without_a_team_stays_unassigned(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent()
    llm.fail(500, times=2)
    say("necesito ayuda")
    cid = conversation_of(client, org)["id"]
    before = _trail(client, org, cid)
    llm.reply("should not be asked")
    say("¿alguien?")
    say("hola")
    assert _extra(client, org, cid)["member_id"] is None
    assert _trail(client, org, cid) == before
    assert [r["outcome"] for r in runs_of(client, agent)] == ["failed_handed_off"]
    assert meta.sends() == []


def test_archive_and_clean_or_a_persons_assignment_bring_the_agent_back(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent(TRANSFER)
    llm.call_tools(("transfer_to_human", {"note": "a person, please"}))
    say("quiero una persona")
    cid = conversation_of(client, org)["id"]
    assert _extra(client, org, cid)["member_id"] is None
    # a person gives it back to the agent by hand: the agent answers the next message
    client.patch(
        msg(org, f"/conversations/{cid}"), json={"extra": {"member_id": agent.id}}, headers=org.headers()
    )
    llm.reply("Aquí sigo.")
    say("¿me ayudas tú?")
    assert sent_texts(meta)[-1] == "Aquí sigo."
    # handed off again, then archived and cleaned: the next message starts over with the address's rule
    llm.call_tools(("transfer_to_human", {"note": "again"}))
    say("mejor una persona")
    assert _extra(client, org, cid)["member_id"] is None
    clean = {
        "archived": "2026-11-20T10:00:00Z",
        "member_id": None,
        "assignment": None,
        "team_id": None,
        "team_name": None,
        "labels": [],
    }
    client.patch(msg(org, f"/conversations/{cid}"), json={"extra": clean}, headers=org.headers())
    llm.reply("Hola de nuevo.")
    say("hola otra vez")
    assert _extra(client, org, cid)["member_id"] == agent.id
    assert sent_texts(meta)[-1] == "Hola de nuevo."
