"""Agent configuration: replace, partial update, validation, chat defaults, versions and restore."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.members.conftest import NO_ACCESS, error, mem

CHAT_DEFAULTS = {"temperature": 0.7, "context_messages": 50, "context_days": 7, "split_long_messages": False}

FULL = {
    "sections": {"identity": "You are Sofía.", "rules": "Be brief.", "chat": {"temperature": 0.2}},
    "tools": {"transfer_to_human": {"enabled": True}, "create_ticket": {"enabled": False}},
    "voice": "alloy",
    "agent_type": "sales",
    "business_category": "sales",
    "notifications": {
        "end_of_call": {"email": ["Ops@Example.test"], "webhook": "https://hooks.example.test/calls"},
        "transfer_to_human": {"whatsapp": ["+52 1 55 1234 5678"]},
    },
    "call_transfers": [
        {
            "name": "Billing",
            "condition": "asks about an invoice",
            "target": "+1 (212) 555-0100",
            "announce_message": "One moment",
        }
    ],
}


def cfg(org: Org, agent_id: str, suffix: str = "") -> str:
    return mem(org, f"/members/{agent_id}/agent-config{suffix}")


def test_create_read_with_defaults(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, name="Sofía", ai=True)
    assert client.get(cfg(org, agent["id"]), headers=org.headers()).get_json() == error(
        404, "No Agent configuration found"
    )
    created = client.post(cfg(org, agent["id"]), json=FULL, headers=org.headers())
    assert created.status_code == 201
    body = created.get_json()
    assert body["member_id"] == agent["id"] and body["version"] == 1
    assert body["sections"] == {
        "identity": "You are Sofía.",
        "rules": "Be brief.",
        "chat": {**CHAT_DEFAULTS, "temperature": 0.2},
    }
    assert body["tools"] == {"transfer_to_human": {"enabled": True}, "create_ticket": {"enabled": False}}
    assert body["notifications"] == {
        "end_of_call": {"email": ["Ops@example.test"], "webhook": "https://hooks.example.test/calls"},
        "transfer_to_human": {"whatsapp": ["+525512345678"]},
    }
    assert body["call_transfers"] == [
        {
            "name": "Billing",
            "condition": "asks about an invoice",
            "target": "+12125550100",
            "target_type": "phone",
            "announce_message": "One moment",
        }
    ]
    assert (body["voice"], body["agent_type"], body["business_category"]) == ("alloy", "sales", "sales")
    assert client.get(cfg(org, agent["id"]), headers=org.headers()).get_json() == body


def test_post_replaces_everything(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    client.post(cfg(org, agent["id"]), json=FULL, headers=org.headers())
    replaced = client.post(cfg(org, agent["id"]), json={"sections": {"tone": "warm"}}, headers=org.headers())
    assert replaced.status_code == 200
    body = replaced.get_json()
    assert body["sections"] == {"tone": "warm", "chat": CHAT_DEFAULTS}
    assert body["tools"] == {} and body["notifications"] == {} and body["call_transfers"] == []
    assert body["voice"] is None and body["agent_type"] == "generic" and body["business_category"] is None
    assert body["version"] == 2


def test_patch_changes_only_what_is_sent(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    client.post(cfg(org, agent["id"]), json=FULL, headers=org.headers())
    patched = client.patch(
        cfg(org, agent["id"]),
        json={
            "sections": {"rules": None, "closing": "Bye!", "chat": {"context_messages": 0}},
            "tools": {"schedule_meeting": {"enabled": True}, "create_ticket": None},
            "voice": "verse",
        },
        headers=org.headers(),
    )
    assert patched.status_code == 200
    body = patched.get_json()
    assert body["sections"] == {
        "identity": "You are Sofía.",
        "closing": "Bye!",
        "chat": {**CHAT_DEFAULTS, "context_messages": 0},
    }
    assert body["tools"] == {"transfer_to_human": {"enabled": True}, "schedule_meeting": {"enabled": True}}
    assert body["voice"] == "verse" and body["agent_type"] == "sales" and body["business_category"] == "sales"
    assert len(body["notifications"]) == 2 and len(body["call_transfers"]) == 1
    unchanged = client.patch(cfg(org, agent["id"]), json={}, headers=org.headers()).get_json()
    assert unchanged["version"] == body["version"]  # nothing changed: no new version


def test_validation_names_the_field(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    cases = [
        ({}, "sections: Field required"),
        ({"sections": "text"}, "sections: "),
        ({"sections": {"identity": 5}}, "sections.identity: "),
        ({"sections": {"bad name!": "x"}}, "sections: "),
        ({"sections": {"chat": {"temperature": 1.5}}}, "sections.chat.temperature: "),
        ({"sections": {"chat": {"temperature": -0.1}}}, "sections.chat.temperature: "),
        ({"sections": {"chat": {"context_messages": 101}}}, "sections.chat.context_messages: "),
        ({"sections": {"chat": {"context_days": 0}}}, "sections.chat.context_days: "),
        ({"sections": {"chat": {"context_days": 31}}}, "sections.chat.context_days: "),
        ({"sections": {"chat": {"split_long_messages": "often"}}}, "sections.chat.split_long_messages: "),
        ({"sections": {"chat": {"mood": 1}}}, "sections.chat.mood: "),
        ({"sections": {}, "tools": {"hack_the_planet": {"enabled": True}}}, "tools.hack_the_planet"),
        ({"sections": {}, "tools": {"send_product": {}}}, "tools.send_product.enabled: Field required"),
        ({"sections": {}, "notifications": {"on_lunch": {}}}, "notifications.on_lunch"),
        (
            {"sections": {}, "notifications": {"end_of_call": {"email": ["nope"]}}},
            "notifications.end_of_call.email: ",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"whatsapp": ["12"]}}},
            "notifications.end_of_call.whatsapp: ",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"webhook": "http://hooks.example.test"}}},
            "notifications.end_of_call.webhook: webhook must be an https URL",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"sms": ["x"]}}},
            "notifications.end_of_call.sms: ",
        ),
        (
            {"sections": {}, "call_transfers": [{"name": "x", "condition": "y"}]},
            "call_transfers.0.target: Field required",
        ),
        (
            {"sections": {}, "call_transfers": [{"name": "x", "condition": "y", "target": "+1 555"}]},
            "call_transfers.0.target: ",
        ),
        (
            {"sections": {}, "call_transfers": [{"name": "x", "condition": "y", "target": "mem_nobody"}]},
            "call_transfers.0.target: no member with id 'mem_nobody'",
        ),
        ({"sections": {}, "agent_type": ""}, "agent_type: "),
    ]
    for body, message in cases:
        response = client.post(cfg(org, agent["id"]), json=body, headers=org.headers())
        assert response.status_code == 400, body
        assert response.get_json()["statusCode"] == 400
        assert response.get_json()["message"].startswith(message), (body, response.get_json())
    patch = client.patch(cfg(org, agent["id"]), json={"sections": {}}, headers=org.headers())
    assert patch.get_json() == error(404, "No Agent configuration found")


def test_member_targets_and_tool_triggers(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    human = make_member(org, name="Supervisor")
    body = {
        "sections": {},
        "notifications": {"schedule_meeting": {"email": ["a@b.test"]}},
        "call_transfers": [{"name": "Escalate", "condition": "angry caller", "target": human["id"]}],
    }
    response = client.post(cfg(org, agent["id"]), json=body, headers=org.headers())
    assert response.status_code == 201
    [transfer] = response.get_json()["call_transfers"]
    assert transfer["target"] == human["id"] and transfer["target_type"] == "member"
    assert transfer["announce_message"] is None


def test_non_ai_unknown_and_foreign_members(
    client: FlaskClient, org: Org, other_org: Org, make_member
) -> None:
    human = make_member(org, name="Human")
    theirs = make_member(other_org, name="Theirs", ai=True)
    message = f"Member {human['id']} is not an AI agent: only AI agents have a configuration"
    for method in ("get", "post", "patch"):
        kwargs = {} if method == "get" else {"json": {"sections": {}}}
        assert getattr(client, method)(
            cfg(org, human["id"]), headers=org.headers(), **kwargs
        ).get_json() == error(400, message)
        for agent_id in ("ai_missing", theirs["id"]):
            response = getattr(client, method)(cfg(org, agent_id), headers=org.headers(), **kwargs)
            assert response.get_json() == error(404, "No Member found")
    assert client.get(cfg(other_org, theirs["id"]), headers=org.headers()).get_json() == NO_ACCESS
    assert client.get(cfg(org, human["id"], "/versions"), headers=org.headers()).status_code == 400


def test_versions_record_who_when_what_and_restore(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    client.post(
        cfg(org, agent["id"]), json={"sections": {"identity": "v1"}, "voice": "alloy"}, headers=org.headers()
    )
    client.patch(cfg(org, agent["id"]), json={"sections": {"identity": "v2"}}, headers=org.headers())
    client.patch(
        cfg(org, agent["id"]),
        json={"voice": "verse", "tools": {"send_product": {"enabled": True}}},
        headers=org.headers(),
    )
    listed = client.get(cfg(org, agent["id"], "/versions"), headers=org.headers()).get_json()
    assert listed["total"] == 3 and listed["page"] == 1 and listed["limit"] == 20
    v3, v2, v1 = listed["data"]
    assert [v["version"] for v in (v3, v2, v1)] == [3, 2, 1]
    assert (v1["action"], v2["action"], v3["action"]) == ("create", "update", "update")
    assert v1["changed_by"] == f"api_key:{org.live_key[:16]}" and v1["changed_at"].endswith("Z")
    assert v2["diff"] == {"sections.identity": {"from": "v1", "to": "v2"}}
    assert v3["diff"] == {
        "tools.send_product": {"from": None, "to": {"enabled": True}},
        "voice": {"from": "alloy", "to": "verse"},
    }
    restored = client.post(cfg(org, agent["id"], "/versions/1/restore"), headers=org.headers())
    assert restored.status_code == 200
    body = restored.get_json()
    assert body["sections"]["identity"] == "v1" and body["voice"] == "alloy" and body["tools"] == {}
    assert body["version"] == 4
    newest = client.get(cfg(org, agent["id"], "/versions?limit=1"), headers=org.headers()).get_json()
    assert newest["total"] == 4 and len(newest["data"]) == 1
    assert newest["data"][0]["action"] == "restore" and newest["data"][0]["restored_from"] == 1
    assert newest["data"][0]["diff"]["sections.identity"] == {"from": "v2", "to": "v1"}
    missing = client.post(cfg(org, agent["id"], "/versions/99/restore"), headers=org.headers())
    assert missing.get_json() == error(404, "No Configuration version found")
    assert client.get(cfg(org, agent["id"], "/versions?limit=101"), headers=org.headers()).status_code == 400
    assert client.post(cfg(org, agent["id"], "/versions/x/restore"), headers=org.headers()).status_code == 404


def test_deleting_an_agent_removes_its_configuration(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    client.post(cfg(org, agent["id"]), json=FULL, headers=org.headers())
    client.patch(cfg(org, agent["id"]), json={"voice": "verse"}, headers=org.headers())
    deleted = client.delete(
        f"/v2/messages/organizations/{org.id}/members/{agent['id']}", headers=org.headers()
    )
    assert deleted.status_code == 200
    assert client.get(cfg(org, agent["id"]), headers=org.headers()).get_json() == error(
        404, "No Member found"
    )
    assert client.get(mem(org, "/members/ai-agents"), headers=org.headers()).get_json()["total"] == 0
    # the same custom id can be used again, starting without a configuration
    again = make_member(org, ai=True, id=agent["id"])
    assert client.get(cfg(org, again["id"]), headers=org.headers()).get_json() == error(
        404, "No Agent configuration found"
    )
