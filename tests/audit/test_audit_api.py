"""The audit log through the API: every administrative action writes exactly one entry naming who did
what to which object, with field names and never values; a refused or failed action writes none; the
route is the organization's own (403 for another organization's key) and filters and pages like the
other keyset lists."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.audit import services as audit_log
from blueprints.audit.models import AuditEntry
from core.db import db, utcnow
from tests.audit.conftest import audit_url, key_actor, read_log
from tests.conftest import Org

MEMBERS = "/v1/members/organizations/{org}"
MESSAGING = "/v2/messages/organizations/{org}"
CRM = "/v1/crm/organizations/{org}"
CHANNEL_TOKEN = "EAAG-secret-channel-token-0123456789"


class Api:
    """The organization's calls, each checked for success."""

    def __init__(self, client: FlaskClient, org: Org) -> None:
        self.client, self.org = client, org

    def __call__(self, method: str, path: str, body: Any = None, expect: int | None = None) -> Any:
        response = self.client.open(
            path.format(org=self.org.id), method=method, json=body, headers=self.org.headers()
        )
        if expect is not None:
            assert response.status_code == expect, response.get_data(as_text=True)
        else:
            assert response.status_code < 300, response.get_data(as_text=True)
        return response.get_json(silent=True)


def _everything(client: FlaskClient, org: Org) -> list[dict[str, Any]]:
    return read_log(client, org, take=200)["data"]


@pytest.fixture
def api(client: FlaskClient, org: Org) -> Api:
    return Api(client, org)


def test_each_administrative_action_writes_exactly_one_entry(client: FlaskClient, org: Org, api: Api) -> None:
    seen = {entry["id"] for entry in _everything(client, org)}

    def expect(action: str, target_type: str, target_id: object, fields: set[str] | None = None) -> None:
        new = [e for e in _everything(client, org) if e["id"] not in seen]
        assert [(e["action"], e["target_type"], e["target_id"]) for e in new] == [
            (action, target_type, str(target_id))
        ]
        entry = new[0]
        assert entry["actor"] == key_actor(org)
        assert entry["request_id"] and entry["request_id"].startswith("req_")
        assert entry["source_ip"] == "127.0.0.1"
        if fields is not None:
            assert set(entry["summary"]["fields"]) == fields
        seen.add(entry["id"])

    # members and AI agent configuration
    member = api("POST", MESSAGING + "/members", {"name": "Sofía IA", "ai": True, "organization_id": org.id})
    expect("member.created", "member", member["id"], {"name", "ai", "organization_id"})
    api("PATCH", MESSAGING + f"/members/{member['id']}", {"name": "Sofía"})
    expect("member.updated", "member", member["id"], {"name"})
    api("POST", MEMBERS + f"/members/{member['id']}/agent-config", {"sections": {"identity": "Eres Sofía."}})
    expect("agent_config.updated", "agent", member["id"], {"sections"})
    api("PATCH", MEMBERS + f"/members/{member['id']}/agent-config", {"voice": "alloy"})
    expect("agent_config.updated", "agent", member["id"], {"voice"})
    # teams
    team = api("POST", MEMBERS + "/teams", {"name": "Ventas", "description": "Equipo"})
    expect("team.created", "team", team["id"], {"name", "description"})
    api("PATCH", MEMBERS + f"/teams/{team['id']}", {"name": "Ventas MX"})
    expect("team.updated", "team", team["id"], {"name"})
    api("POST", MEMBERS + f"/teams/{team['id']}/members", {"member_ids": [member["id"]]})
    expect("team.members_added", "team", team["id"], {"members"})
    api("POST", MEMBERS + f"/teams/{team['id']}/members", {"member_ids": [member["id"]]})  # already in
    assert [e for e in _everything(client, org) if e["id"] not in seen] == []
    api("DELETE", MEMBERS + f"/teams/{team['id']}/members/{member['id']}")
    expect("team.members_removed", "team", team["id"], {"members"})
    api("DELETE", MEMBERS + f"/teams/{team['id']}")
    expect("team.deleted", "team", team["id"])
    api("DELETE", MESSAGING + f"/members/{member['id']}")
    expect("member.deleted", "member", member["id"])
    # deletions in the messaging and inbox areas
    contact = api("POST", MESSAGING + "/contacts", {"name": "Lucía"})
    api("DELETE", MESSAGING + f"/contacts/{contact['id']}")
    expect("contact.deleted", "contact", contact["id"])
    label = api("POST", MESSAGING + "/labels", {"name": "vip"})
    expect("label.created", "label", label["id"], {"name"})
    api("PATCH", MESSAGING + f"/labels/{label['id']}", {"name": "VIP", "color": "#ff0000"})
    expect("label.updated", "label", label["id"], {"name", "color"})
    api("DELETE", MESSAGING + f"/labels/{label['id']}")
    expect("label.deleted", "label", label["id"], {"name"})
    canned = api("POST", MESSAGING + "/canned-responses", {"short_code": "hola", "content": "¡Hola!"})
    expect("canned_response.created", "canned_response", canned["id"], {"short_code", "title", "content"})
    api("PATCH", MESSAGING + f"/canned-responses/{canned['id']}", {"content": "¡Hola!"})  # no change
    assert [e for e in _everything(client, org) if e["id"] not in seen] == []
    api("PATCH", MESSAGING + f"/canned-responses/{canned['id']}", {"short_code": "saludo"})
    expect("canned_response.updated", "canned_response", canned["id"], {"short_code"})
    api("DELETE", MESSAGING + f"/canned-responses/{canned['id']}")
    expect("canned_response.deleted", "canned_response", canned["id"])
    # deletions in the CRM
    crm_contact = api("POST", CRM + "/contacts", {"name": "Lucía Pérez"})
    api("DELETE", CRM + f"/contacts/{crm_contact['id']}")
    expect("crm_contact.deleted", "crm_contact", crm_contact["id"])
    account = api("POST", CRM + "/accounts", {"name": "Acme SA"})
    api("DELETE", CRM + f"/accounts/{account['id']}")
    expect("account.deleted", "account", account["id"])
    task = api("POST", CRM + "/tasks", {"title": "Llamar"})
    api("DELETE", CRM + f"/tasks/{task['id']}")
    expect("task.deleted", "task", task["id"])
    product = api("POST", CRM + "/products", {"name": "Plan 5 GB", "price": 99})
    api("DELETE", CRM + f"/products/{product['id']}")
    expect("product.deleted", "product", product["id"])
    pipeline = api("POST", CRM + "/pipelines", {"name": "Ventas", "key": "VTA"})
    stage = api("POST", CRM + f"/pipelines/{pipeline['id']}/stages", {"name": "Nuevo", "stage_order": 0})
    deal = api(
        "POST", CRM + "/deals", {"name": "Renovación", "pipeline_id": pipeline["id"], "stage_id": stage["id"]}
    )
    api("DELETE", CRM + f"/deals/{deal['id']}")
    expect("deal.deleted", "deal", deal["id"])
    api("DELETE", CRM + f"/pipelines/{pipeline['id']}")
    expect("pipeline.deleted", "pipeline", pipeline["id"])
    # members' unavailability reasons
    reason = api("POST", MEMBERS + "/members/unavailable-reasons", {"name": "Comida"})
    expect("unavailable_reason.created", "unavailable_reason", reason["id"], {"name"})
    api(
        "PATCH",
        MEMBERS + f"/members/unavailable-reasons/{reason['id']}",
        {"name": "Almuerzo", "active": False},
    )
    expect("unavailable_reason.updated", "unavailable_reason", reason["id"], {"name", "active"})
    api("DELETE", MEMBERS + f"/members/unavailable-reasons/{reason['id']}")
    expect("unavailable_reason.deleted", "unavailable_reason", reason["id"], set())


def test_keys_and_channels_from_the_command_line_are_recorded_without_secrets(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    created = runner.invoke(args=["keys", "create", "--org", org.id, "--name", "ci", "--json"])
    assert created.exit_code == 0, created.output
    issued = json.loads(created.stdout)
    revoked = runner.invoke(args=["keys", "revoke", issued["prefix"]])
    assert revoked.exit_code == 0, revoked.output
    connected = runner.invoke(
        args=[
            "channels",
            "connect",
            "--org",
            org.id,
            "--service",
            "whatsapp",
            "--address",
            "1098765",
            "--phone-number",
            "+525512345678",
            "--access-token",
            CHANNEL_TOKEN,
            "--json",
        ]
    )
    assert connected.exit_code == 0, connected.output
    password = "una contraseña muy secreta"
    user = runner.invoke(
        args=[
            "users",
            "create",
            "--org",
            org.id,
            "--email",
            "sara@example.test",
            "--password",
            password,
            "--name",
            "Sara",
            "--role",
            "supervisor",
            "--json",
        ]
    )
    assert user.exit_code == 0, user.output

    body = read_log(client, org, actor="cli")
    entries = {(e["action"], e["target_id"]): e for e in body["data"]}
    assert ("api_key.created", issued["prefix"]) in entries
    assert ("api_key.revoked", issued["prefix"]) in entries
    channel = entries[("channel.connected", "whatsapp:1098765")]
    assert "access_token" in channel["summary"]["fields"]  # the token changed: its name, never its value
    assert channel["request_id"] is None and channel["source_ip"] is None
    login = entries[("member.created", json.loads(user.stdout)["member_id"])]
    assert login["summary"]["fields"] == ["email", "name", "password", "role"]
    # The organization's own keys (made by `orgs create`) are in the log too, by their shown prefix.
    assert ("api_key.created", org.live_key[:16]) in entries
    text = json.dumps(read_log(client, org, take=200))
    for secret in (issued["api_key"], CHANNEL_TOKEN, org.live_key, org.sandbox_key, password):
        assert secret not in text


def test_refused_and_failed_actions_write_no_entry(
    client: FlaskClient, org: Org, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    api("POST", MEMBERS + "/teams", {"name": "Ventas"}, expect=201)
    before = read_log(client, org)["total"]
    api("POST", MEMBERS + "/teams", {"name": "ventas"}, expect=409)  # refused: the name is taken
    api("DELETE", MEMBERS + f"/teams/{uuid.uuid4()}", expect=404)  # refused: no such team
    assert read_log(client, org)["total"] == before

    # Failed after the entry was added: the contact's deletion breaks when it is announced.
    contact = api("POST", MESSAGING + "/contacts", {"name": "Lucía"}, expect=201)
    before = read_log(client, org)["total"]

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the event bus is down")

    monkeypatch.setattr("blueprints.messaging.contacts.publish", broken)
    try:
        response = client.delete(
            f"/v2/messages/organizations/{org.id}/contacts/{contact['id']}", headers=org.headers()
        )
        assert response.status_code == 500
    except RuntimeError:  # TESTING propagates the view's exception to the test client
        pass
    monkeypatch.undo()
    assert read_log(client, org)["total"] == before
    api("GET", MESSAGING + f"/contacts/{contact['id']}", expect=200)  # and the contact is still there


def test_the_log_is_the_callers_organizations_only(
    client: FlaskClient, org: Org, other_org: Org, api: Api
) -> None:
    api("POST", MEMBERS + "/teams", {"name": "Secreto de Acme"}, expect=201)
    refused = client.get(audit_url(org), headers=other_org.headers())
    assert refused.status_code == 403
    assert refused.get_json() == {"statusCode": 403, "message": refused.get_json()["message"]}
    assert client.get(audit_url(org)).status_code == 401
    assert client.get(audit_url(org), headers={"X-API-Key": org.sandbox_key}).status_code == 401
    assert client.get(audit_url(org), headers={"Authorization": f"Bearer {org.live_key}"}).status_code == 401
    theirs = read_log(client, other_org, take=200)["data"]
    assert all(entry["target_type"] != "team" for entry in theirs)
    # No route changes or deletes an entry: the log is append-only.
    entry_id = read_log(client, org)["data"][0]["id"]
    for method in ("DELETE", "PATCH", "PUT"):
        assert (
            client.open(f"{audit_url(org)}/{entry_id}", method=method, headers=org.headers()).status_code
            == 404
        )
        assert client.open(audit_url(org), method=method, headers=org.headers()).status_code in (404, 405)


def test_filters_and_keyset_pages(client: FlaskClient, org: Org, api: Api) -> None:
    teams = [api("POST", MEMBERS + "/teams", {"name": f"Equipo {n}"}, expect=201) for n in range(5)]
    body = read_log(client, org, action="team.created", take=2)
    assert body["total"] == 5 and body["take"] == 2 and len(body["data"]) == 2
    walked, cursor = [], ""
    while True:
        page = read_log(client, org, action="team.created", take=2, cursor=cursor)
        walked += [e["target_id"] for e in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        api("POST", MEMBERS + "/teams", {"name": f"Nuevo {len(walked)}"}, expect=201)  # never shifts a page
    assert walked == [t["id"] for t in reversed(teams)]  # newest first, each once

    one = read_log(client, org, target_type="team", target_id=teams[1]["id"])
    assert [e["target_id"] for e in one["data"]] == [teams[1]["id"]]
    assert read_log(client, org, actor=key_actor(org), action="team.created")["total"] >= 5
    assert read_log(client, org, actor="user:nobody")["data"] == []
    now = utcnow()
    assert (
        read_log(client, org, action="team.created", since=(now + timedelta(minutes=1)).isoformat())["total"]
        == 0
    )
    assert (
        read_log(client, org, action="team.created", until=(now - timedelta(hours=1)).isoformat())["total"]
        == 0
    )
    assert (
        read_log(client, org, action="team.created", since=(now - timedelta(hours=1)).isoformat())["total"]
        >= 5
    )

    for params, field in (
        ({"cursor": "nonsense"}, "cursor"),
        ({"take": 0}, "take"),
        ({"acton": "x"}, "acton"),
    ):
        refused = client.get(audit_url(org), query_string=params, headers=org.headers())
        assert refused.status_code == 400
        assert refused.get_json()["message"].startswith(f"{field}:")


def test_entries_carry_field_names_never_values(app: Flask, org: Org) -> None:
    with app.app_context():
        with pytest.raises(ValueError):
            audit_log.record(
                "team.updated", "team", "t1", ["name", "Ventas del norte"], organization_id=org.id
            )
        with pytest.raises(ValueError):
            audit_log.record("updated", "team", "t1", organization_id=org.id)
        with pytest.raises(ValueError):  # outside a request there is no caller to take it from
            audit_log.record("team.updated", "team", "t1")
        entry = audit_log.record(
            "team.updated", "team", "t1", ["name", "sections.identity"], organization_id=org.id
        )
        assert entry.summary == {"fields": ["name", "sections.identity"]} and entry.actor == "system"
        db.session.rollback()
        assert db.session.query(AuditEntry).filter_by(target_id="t1").count() == 0
