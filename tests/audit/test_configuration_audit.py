"""What an AI agent's configuration and knowledge leave in the audit log: every save (create, replace,
update), restore and knowledge document create, update and delete, each with the fields it changed and,
for a configuration, the version it made; a refused change (a rule, a stale If-Match) leaves nothing."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.audit.conftest import key_actor, read_log
from tests.conftest import Org

MEMBERS = "/v1/members/organizations/{org}"


class Log:
    """The entries recorded since the last look."""

    def __init__(self, client: FlaskClient, org: Org) -> None:
        self.client, self.org = client, org
        self.seen = {entry["id"] for entry in self._all()}

    def _all(self) -> list[dict[str, Any]]:
        return read_log(self.client, self.org, take=200)["data"]  # type: ignore[no-any-return]

    def new(self) -> list[dict[str, Any]]:
        fresh = [entry for entry in self._all() if entry["id"] not in self.seen]
        self.seen.update(entry["id"] for entry in fresh)
        return [
            {key: entry[key] for key in ("action", "target_type", "target_id", "summary", "actor")}
            for entry in reversed(fresh)
        ]


def test_saves_and_restores_name_the_version_they_made(client: FlaskClient, org: Org) -> None:
    def call(method: str, suffix: str, body: Any = None, **headers: str) -> Any:
        return client.open(
            MEMBERS.format(org=org.id) + suffix,
            method=method,
            json=body,
            headers={**org.headers(), **headers},
        )

    agent = client.post(
        f"/v2/messages/organizations/{org.id}/members",
        json={"name": "Sofía", "ai": True, "organization_id": org.id},
        headers=org.headers(),
    ).get_json()["id"]
    url = f"/members/{agent}/agent-config"
    log = Log(client, org)

    def entry(fields: list[str], version: int) -> dict[str, Any]:
        return {
            "action": "agent_config.updated",
            "target_type": "agent",
            "target_id": agent,
            "summary": {"fields": fields, "version": version},
            "actor": key_actor(org),
        }

    assert call("POST", url, {"sections": {"identity": "v1"}, "voice": "alloy"}).status_code == 201
    assert log.new() == [entry(["sections", "voice"], 1)]
    assert call("POST", url, {"sections": {"identity": "v2"}}).status_code == 200
    assert log.new() == [entry(["sections", "voice"], 2)]
    assert call("PATCH", url, {"tools": {"create_ticket": {"enabled": True}}}).status_code == 200
    assert log.new() == [entry(["tools"], 3)]
    assert call("PATCH", url, {"tools": {"create_ticket": {"enabled": True}}}).status_code == 200
    assert log.new() == []  # nothing changed: no version, no entry
    assert call("POST", url + "/versions/1/restore").status_code == 200
    assert log.new() == [entry(["sections", "tools", "voice"], 4)]
    # refused changes leave nothing
    assert call("PATCH", url, {"voice": "verse"}, **{"If-Match": '"3"'}).status_code == 412
    assert call("POST", url + "/versions/2/restore", **{"If-Match": '"1"'}).status_code == 412
    assert call("PATCH", url, {"sections": {"chat": {"temperature": 2}}}).status_code == 400
    assert call("PATCH", url, {"voice": "verse"}, **{"If-Match": "nope"}).status_code == 400
    assert log.new() == []
    assert call("PATCH", url, {"voice": "verse"}, **{"If-Match": '"4"'}).status_code == 200
    assert log.new() == [entry(["voice"], 5)]


def test_knowledge_documents_are_audited_from_creation_to_deletion(client: FlaskClient, org: Org) -> None:
    base = MEMBERS.format(org=org.id) + "/knowledge"
    log = Log(client, org)
    created = client.post(base, json={"title": "Envíos", "body": "A todo México."}, headers=org.headers())
    assert created.status_code == 201
    document = created.get_json()["id"]

    def entry(action: str, fields: list[str]) -> dict[str, Any]:
        return {
            "action": action,
            "target_type": "knowledge_document",
            "target_id": document,
            "summary": {"fields": fields},
            "actor": key_actor(org),
        }

    assert log.new() == [entry("knowledge_document.created", ["body", "title"])]
    patched = client.patch(
        f"{base}/{document}", json={"title": "Envíos y entregas", "source": "faq"}, headers=org.headers()
    )
    assert patched.status_code == 200
    assert log.new() == [entry("knowledge_document.updated", ["source", "title"])]
    same = client.patch(f"{base}/{document}", json={"title": "Envíos y entregas"}, headers=org.headers())
    assert same.status_code == 200 and log.new() == []
    assert client.delete(f"{base}/{document}", headers=org.headers()).status_code == 200
    assert log.new() == [entry("knowledge_document.deleted", [])]
