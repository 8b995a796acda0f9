"""Team assignment and routing: availability, load, idleness, waiting conversations, concurrency."""

from __future__ import annotations

import threading
import uuid

from flask import Flask
from flask.testing import FlaskClient

from core.environments import in_environment
from tests.conftest import Org
from tests.inbox.conftest import MakeConversation, msg, set_status


def assign_team(client: FlaskClient, org: Org, cid: str, team: str, **extra: str):
    return client.post(
        msg(org, f"/conversations/{cid}/assign-team"), json={"team_id": team, **extra}, headers=org.headers()
    )


def test_assign_team_picks_an_online_member_with_the_fewest_conversations(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    busy = make_member(org, "Busy", status="busy")
    loaded = make_member(org, "Loaded", status="online")
    free = make_member(org, "Free", status="online")
    team = make_team(org, "Support", [busy, loaded, free])
    make_conversation(org, member_id=loaded)
    cid = make_conversation(org)
    response = assign_team(client, org, cid, team, team_name="Soporte")
    assert response.status_code == 200
    body = response.get_json()
    assert body["assigned_member_id"] == free
    assert body["conversation"]["extra"]["team_id"] == team
    assert body["conversation"]["extra"]["team_name"] == "Soporte"
    trail = client.get(
        msg(org, f"/conversations/{cid}/events?types=assignment"), headers=org.headers()
    ).get_json()
    assert trail[0]["data"] == {"member_id": free, "assigned_by": "team", "previous_member_id": None}


def test_ties_go_to_the_member_idle_longest(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    a = make_member(org, "A", status="online")
    b = make_member(org, "B", status="online")
    team = make_team(org, "T", [a, b])
    first = assign_team(client, org, make_conversation(org), team).get_json()["assigned_member_id"]
    # the first member now has one conversation; archive it so both have zero again
    [busy] = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
    url = msg(org, f"/conversations/{busy['id']}")
    client.patch(url, json={"extra": {"archived": "2026-11-20T00:00:00Z"}}, headers=org.headers())
    second = assign_team(client, org, make_conversation(org), team).get_json()["assigned_member_id"]
    assert {first, second} == {a, b}


def test_nobody_available_waits_for_the_next_member_online(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    away = make_member(org, "Away", status="away")
    team = make_team(org, "Night", [away])
    older = make_conversation(org)
    newer = make_conversation(org)
    for cid in (older, newer):
        body = assign_team(client, org, cid, team).get_json()
        assert body["assigned_member_id"] is None
        assert body["conversation"]["extra"]["team_id"] == team
    set_status(client, org, away, "online")
    for cid in (older, newer):
        conversation = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()
        assert conversation["extra"]["member_id"] == away


def test_assign_team_validation(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    cid = make_conversation(org)
    missing = client.post(msg(org, f"/conversations/{cid}/assign-team"), json={}, headers=org.headers())
    assert missing.status_code == 400 and missing.get_json()["message"].startswith("team_id:")
    unknown = assign_team(client, org, cid, str(uuid.uuid4()))
    assert unknown.status_code == 400 and "team_id" in unknown.get_json()["message"]


def test_routing_rule_routes_new_conversations_from_the_address(
    client: FlaskClient, org: Org, wa, deliver, make_member, make_team
) -> None:
    from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text

    agent = make_member(org, "Ana", status="online")
    team = make_team(org, "Sales", [agent])
    url = msg(org, f"/addresses/{wa.address}/routing")
    assert client.get(url, headers=org.headers()).get_json()["target"] == "none"
    rule = client.put(url, json={"target": "team", "team_id": team}, headers=org.headers())
    assert rule.status_code == 200 and rule.get_json()["team_id"] == team
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "quiero comprar")])))
    [conversation] = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
    assert conversation["extra"]["team_id"] == team
    assert conversation["extra"]["member_id"] == agent
    bad = client.put(url, json={"target": "team"}, headers=org.headers())
    assert bad.status_code == 400 and "team_id" in bad.get_json()["message"]
    assert client.get(msg(org, "/addresses/000/routing"), headers=org.headers()).status_code == 404


def test_routing_to_an_ai_agent_after_archive_and_clean(
    client: FlaskClient, org: Org, wa, deliver, make_member
) -> None:
    from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text

    bot = make_member(org, "Bot", ai=True)
    client.put(
        msg(org, f"/addresses/{wa.address}/routing"),
        json={"target": "member", "member_id": bot},
        headers=org.headers(),
    )
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola")])))
    [conversation] = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
    assert conversation["extra"]["member_id"] == bot
    clean = {
        "archived": "2026-11-20T10:00:00Z",
        "member_id": None,
        "assignment": None,
        "team_id": None,
        "team_name": None,
        "labels": [],
    }
    client.patch(
        msg(org, f"/conversations/{conversation['id']}"), json={"extra": clean}, headers=org.headers()
    )
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "otra vez")])))
    again = client.get(msg(org, f"/conversations/{conversation['id']}"), headers=org.headers()).get_json()
    assert again["extra"]["archived"] is None and again["extra"]["member_id"] == bot


def test_concurrent_assignments_never_give_one_conversation_to_two_members(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    from blueprints.inbox.services.assignment import assign_team as assign_team_service

    members = [make_member(org, f"M{i}", status="online") for i in range(4)]
    teams = [make_team(org, f"Team {i}", [m]) for i, m in enumerate(members)]
    conversations = [make_conversation(org) for _ in range(5)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(teams))

    def worker(team: str, cid: str) -> None:
        try:
            with in_environment(app, "live"):
                barrier.wait(timeout=10)
                assign_team_service(uuid.UUID(org.id), cid, team, None, actor="test")
        except BaseException as error:
            errors.append(error)

    for cid in conversations:
        threads = [threading.Thread(target=worker, args=(team, cid)) for team in teams]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        barrier.reset()
    assert not errors, errors
    for cid in conversations:
        trail = client.get(
            msg(org, f"/conversations/{cid}/events?types=assignment"), headers=org.headers()
        ).get_json()
        final = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"]
        # whatever order the calls ran in, the conversation ends with exactly one member, the one of its
        # final team, and every assignment in the trail replaced the previous holder it saw
        assert final["member_id"] in members
        assert members.index(final["member_id"]) == teams.index(final["team_id"])
        holders = [None] + [e["data"]["member_id"] for e in trail]
        assert all(e["data"]["previous_member_id"] == holders[i] for i, e in enumerate(trail))


def test_concurrent_routing_assigns_exactly_once(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    from blueprints.inbox.services.assignment import route

    members = [make_member(org, f"M{i}", status="online") for i in range(3)]
    team = make_team(org, "Pool", members)
    cid = make_conversation(org, team_id=team)
    results: list[str | None] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def worker() -> None:
        try:
            with in_environment(app, "live"):
                barrier.wait(timeout=10)
                results.append(route(uuid.UUID(org.id), cid))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    trail = client.get(
        msg(org, f"/conversations/{cid}/events?types=assignment"), headers=org.headers()
    ).get_json()
    assert len(trail) == 1
    winner = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"][
        "member_id"
    ]
    assert trail[0]["data"]["member_id"] == winner
    assert all(r in (None, winner) for r in results)


def test_team_assignment_picks_people_only(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    # an AI member is always online and has no conversations: before this rule it won every team pick
    bot = make_member(org, "Bot", ai=True)
    person = make_member(org, "Ana", status="away")
    team = make_team(org, "Support", [bot, person])
    cid = make_conversation(org)
    body = assign_team(client, org, cid, team).get_json()
    assert body["assigned_member_id"] is None
    assert body["conversation"]["extra"]["member_id"] is None
    set_status(client, org, bot, "online")  # an AI member "coming online" takes nothing
    assert (
        client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"]["member_id"]
        is None
    )
    set_status(client, org, person, "online")
    assert (
        client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"]["member_id"]
        == person
    )


def test_a_declined_member_rule_sends_the_conversation_to_its_team_or_leaves_it_waiting(
    client: FlaskClient, org: Org, wa, deliver, make_member, make_team
) -> None:
    from blueprints.inbox.services.assignment import routing_declined
    from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text

    bot = make_member(org, "Bot", ai=True)
    person = make_member(org, "Ana", status="offline")
    team = make_team(org, "Support", [person])
    client.put(
        msg(org, f"/addresses/{wa.address}/routing"),
        json={"target": "member", "member_id": bot},
        headers=org.headers(),
    )
    asked: list[dict[str, object]] = []

    def declined(**kwargs: object) -> bool:
        asked.append(kwargs)
        return kwargs["member_id"] == bot

    with routing_declined.connected(declined):
        deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola")])))
        [conversation] = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
        cid = conversation["id"]
        assert conversation["extra"]["member_id"] is None  # no team: it waits in the unassigned queue
        assert (
            asked
            and str(asked[-1]["conversation_id"]) == cid
            and asked[-1]["organization_id"] == uuid.UUID(org.id)
        )
        client.patch(
            msg(org, f"/conversations/{cid}"), json={"extra": {"team_id": team}}, headers=org.headers()
        )
        for text in ("¿hay alguien?", "hola??"):
            deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", text)])))
        waiting = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"]
        assert waiting["member_id"] is None and waiting["team_id"] == team
        trail = client.get(
            msg(org, f"/conversations/{cid}/events?types=assignment,unassignment"), headers=org.headers()
        ).get_json()
        assert trail == []  # no churn: nobody was assigned and taken away again
        set_status(client, org, person, "online")
        assert (
            client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"][
                "member_id"
            ]
            == person
        )
    # without the hook's "no" the rule's member gets a new conversation as before
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215587654321", "hola")])))
    fresh = [
        c
        for c in client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
        if c["id"] != cid
    ]
    assert fresh[0]["extra"]["member_id"] == bot
