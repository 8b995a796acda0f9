"""The voice API: numbers and their routing, validation naming the field, idempotency, list filters,
another organization's ids, and the simulator's lifecycle (sandbox and offline numbers)."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.voice.conftest import NUMBER, connect, voice
from tests.voice.fake_twilio import FakeTwilio

SIM_NUMBER = "+525550002000"


def _member(client: FlaskClient, org: Org, name: str, ai: bool, env: str = "live") -> str:
    prefix = "/sandbox" if env == "sandbox" else ""
    response = client.post(
        f"{prefix}/v2/messages/organizations/{org.id}/members",
        json={"name": name, "ai": ai, "organization_id": org.id},
        headers=org.headers(env),
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def _simulator(
    runner: FlaskCliRunner, org: Org, env: str = "live", number: str = SIM_NUMBER
) -> dict[str, Any]:
    return connect(runner, org, "--number", number, "--provider", "simulator", "--env", env)


def test_the_simulator_walks_a_call_to_completed_offline(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    _simulator(runner, org)
    created = client.post(f"{voice(org)}/calls", json={"to": "+52 55 1234 5678"}, headers=org.headers())
    assert created.status_code == 201, created.get_json()
    call = created.get_json()
    assert call["status"] == "queued" and call["provider"] == "simulator" and call["to"] == "+525512345678"
    done = client.get(f"{voice(org)}/calls/{call['id']}", headers=org.headers()).get_json()
    assert done["status"] == "completed" and done["duration_seconds"] == 3 and done["answered_at"]
    for to, status in (("+525512340486", "busy"), ("+525512340404", "no_answer")):
        ended = client.post(f"{voice(org)}/calls", json={"to": to}, headers=org.headers()).get_json()
        assert (
            client.get(f"{voice(org)}/calls/{ended['id']}", headers=org.headers()).get_json()["status"]
            == status
        )


def test_the_sandbox_always_uses_the_simulator(
    client: FlaskClient, runner: FlaskCliRunner, org: Org, twilio: FakeTwilio
) -> None:
    connect(
        runner,
        org,
        "--number",
        NUMBER,
        "--provider",
        "twilio",
        "--account-sid",
        "AC" + "1" * 32,
        "--auth-token",
        "secret",
        "--env",
        "sandbox",
    )
    call = client.post(
        f"{voice(org, 'sandbox')}/calls", json={"to": "+525512345678"}, headers=org.headers("sandbox")
    )
    assert call.status_code == 201 and call.get_json()["provider"] == "simulator"
    assert twilio.received == []
    assert client.get(f"{voice(org)}/calls", headers=org.headers()).get_json()["total"] == 0  # not in live


def test_numbers_list_and_routing(
    client: FlaskClient, runner: FlaskCliRunner, org: Org, other_org: Org
) -> None:
    number = _simulator(runner, org)
    assert number["routes_to"] == {"type": "none", "id": None}
    agent = _member(client, org, "Sofía", ai=True)
    human = _member(client, org, "Ana", ai=False)
    listed = client.get(f"{voice(org)}/numbers", headers=org.headers()).get_json()
    assert listed["total"] == 1 and listed["data"][0]["number"] == SIM_NUMBER
    assert "auth_token" not in listed["data"][0] and "auth_token_encrypted" not in listed["data"][0]
    # Default routing: the organization's only AI agent, once it has a voice configuration.
    config = {"sections": {"identity": "Sofía"}, "voice": "es-MX-Standard-A"}
    assert (
        client.post(
            f"/v1/members/organizations/{org.id}/members/{agent}/agent-config",
            json=config,
            headers=org.headers(),
        ).status_code
        == 201
    )
    listed = client.get(f"{voice(org)}/numbers", headers=org.headers()).get_json()
    assert listed["data"][0]["routes_to"] == {"type": "default", "id": agent}

    path = f"{voice(org)}/numbers/{number['id']}"
    routed = client.patch(path, json={"member_id": human}, headers=org.headers())
    assert routed.status_code == 200 and routed.get_json()["routes_to"] == {"type": "member", "id": human}
    routed = client.patch(path, json={"agent_id": agent}, headers=org.headers())
    assert routed.get_json()["agent_id"] == agent and routed.get_json()["member_id"] is None
    for body, field in (
        ({"agent_id": human}, "agent_id"),  # a human is not an AI agent
        ({"member_id": agent}, "member_id"),
        ({"agent_id": agent, "member_id": human}, "agent_id"),
        ({}, "agent_id"),
    ):
        refused = client.patch(path, json=body, headers=org.headers())
        assert refused.status_code == 400, body
        assert refused.get_json()["message"].startswith(f"{field}:"), refused.get_json()
    other = client.patch(
        f"{voice(other_org)}/numbers/{number['id']}", json={"agent_id": agent}, headers=other_org.headers()
    )
    assert other.status_code == 404 and other.get_json() == {
        "statusCode": 404,
        "message": "No Voice number found",
    }


def test_bad_input_is_a_400_naming_the_field(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    url = f"{voice(org)}/calls"
    no_number = client.post(url, json={"to": "+525512345678"}, headers=org.headers())
    assert no_number.status_code == 400 and no_number.get_json()["message"].startswith("from_number:")
    _simulator(runner, org)
    for body, field in (
        ({}, "to"),
        ({"to": "12"}, "to"),
        ({"to": "+525512345678", "from_number": "+525599999999"}, "from_number"),
        ({"to": "+525512345678", "agent_id": "nobody"}, "agent_id"),
        ({"to": "+525512345678", "member_id": "nobody"}, "member_id"),
        ({"to": "+525512345678", "contact_id": "not-a-contact"}, "contact_id"),
        ({"to": "+525512345678", "metadata": "x"}, "metadata"),
    ):
        response = client.post(url, json=body, headers=org.headers())
        assert response.status_code == 400, (body, response.get_json())
        assert response.get_json()["message"].startswith(field), (body, response.get_json())
    bad_filter = client.get(f"{url}?status=ended", headers=org.headers())
    assert bad_filter.status_code == 400 and bad_filter.get_json()["message"].startswith("status")
    assert client.get(url, headers=org.headers()).get_json()["total"] == 0


def test_idempotency_key_replays_the_first_call(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    _simulator(runner, org)
    headers = {**org.headers(), "Idempotency-Key": "call-1"}
    first = client.post(f"{voice(org)}/calls", json={"to": "+525512345678"}, headers=headers)
    again = client.post(f"{voice(org)}/calls", json={"to": "+525512345678"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.get_json()["id"] == first.get_json()["id"]
    other_body = client.post(f"{voice(org)}/calls", json={"to": "+525512349999"}, headers=headers)
    assert other_body.status_code == 409
    assert client.get(f"{voice(org)}/calls", headers=org.headers()).get_json()["total"] == 1


def test_list_filters_and_pages_without_a_query_per_row(
    client: FlaskClient, runner: FlaskCliRunner, org: Org, queries: Any
) -> None:
    _simulator(runner, org)
    agent = _member(client, org, "Sofía", ai=True)
    ids = [
        client.post(
            f"{voice(org)}/calls", json={"to": f"+52551234{i:04d}", **extra}, headers=org.headers()
        ).get_json()["id"]
        for i, extra in enumerate([{}, {"agent_id": agent}, {}, {"agent_id": agent}, {}])
    ]
    page = client.get(f"{voice(org)}/calls?take=2&skip=1", headers=org.headers()).get_json()
    assert (page["total"], page["skip"], page["take"]) == (5, 1, 2)
    assert [c["id"] for c in page["data"]] == [ids[3], ids[2]]
    by_agent = client.get(
        f"{voice(org)}/calls?agent_id={agent}&direction=outbound", headers=org.headers()
    ).get_json()
    assert sorted(c["id"] for c in by_agent["data"]) == sorted([ids[1], ids[3]])
    assert (
        client.get(f"{voice(org)}/calls?since=2999-01-01T00:00:00Z", headers=org.headers()).get_json()[
            "total"
        ]
        == 0
    )
    assert (
        client.get(f"{voice(org)}/calls?until=2999-01-01T00:00:00Z", headers=org.headers()).get_json()[
            "total"
        ]
        == 5
    )
    with queries() as counted:
        client.get(f"{voice(org)}/calls?take=2", headers=org.headers())
    few = counted.count
    with queries() as counted:
        client.get(f"{voice(org)}/calls?take=5", headers=org.headers())
    assert counted.count <= few


def test_another_organizations_key(
    client: FlaskClient, runner: FlaskCliRunner, org: Org, other_org: Org
) -> None:
    _simulator(runner, org)
    call = client.post(f"{voice(org)}/calls", json={"to": "+525512345678"}, headers=org.headers()).get_json()
    # On A's organization path: 403; on its own path with A's call id: 404, and nothing changes.
    assert client.get(f"{voice(org)}/calls", headers=other_org.headers()).status_code == 403
    for method, suffix in (("GET", ""), ("POST", "/hangup")):
        response = client.open(
            f"{voice(other_org)}/calls/{call['id']}{suffix}", method=method, headers=other_org.headers()
        )
        assert response.status_code == 404 and response.get_json()["message"] == "No Call found"
    assert client.get(f"{voice(other_org)}/calls", headers=other_org.headers()).get_json()["total"] == 0
    assert client.get(f"{voice(org)}/calls").status_code == 401
