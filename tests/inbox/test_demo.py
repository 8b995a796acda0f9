"""The inbox's part of the demo: labels, a VIP flow, routing of the demo number, one worked conversation."""

from __future__ import annotations

from flask.testing import FlaskClient, FlaskCliRunner

from core.demo import DEMO_ORGANIZATION_ID

ORG = str(DEMO_ORGANIZATION_ID)


def _key(output: str) -> str:
    return next(line.split(": ")[1] for line in output.splitlines() if "live API key" in line)


def test_demo_inbox_is_seeded_once(client: FlaskClient, runner: FlaskCliRunner) -> None:
    first = runner.invoke(args=["demo", "seed"])
    assert first.exit_code == 0, first.output
    assert runner.invoke(args=["demo", "seed"]).exit_code == 0
    headers = {"X-API-Key": _key(first.output)}
    base = f"/v2/messages/organizations/{ORG}"
    assert [label["name"] for label in client.get(f"{base}/labels", headers=headers).get_json()["data"]] == [
        "lead",
        "soporte",
        "vip",
    ]
    assert client.get(f"{base}/flows", headers=headers).get_json()["total"] == 1
    assert (
        client.get(f"{base}/addresses/100000000000001/routing", headers=headers).get_json()["target"]
        == "team"
    )
    worked = client.get(f"{base}/conversations?labels=soporte", headers=headers).get_json()["data"]
    assert len(worked) == 2 and {c["extra"]["member_id"] for c in worked} == {"mem_demo_ana"}
    for conversation in worked:  # a second seed added no second note
        notes = client.get(f"{base}/conversations/{conversation['id']}/notes", headers=headers).get_json()
        assert notes["total"] == 1
    # every state an agent meets: mine, a teammate's, the AI agent's, unassigned, closed, archived
    every = client.get(f"{base}/conversations?take=100", headers=headers).get_json()["data"]
    by_name = {c["name"]: c for c in every}
    assert by_name["Valeria Montes"]["status"] == "closed"
    assert by_name["Valeria Montes"]["extra"]["member_id"] == "mem_demo_ben"
    assert by_name["Fernanda Ortiz"]["extra"]["member_id"] == "ai_demo_sofia"
    assert by_name["Camila Ruiz"]["extra"].get("member_id") is None  # Instagram: no routing rule
    archived = client.get(f"{base}/conversations?status=archived", headers=headers).get_json()["data"]
    assert [c["name"] for c in archived] == ["Rodrigo Canul"]
    assert {c["service"] for c in every} == {"whatsapp", "instagram", "messenger"}
