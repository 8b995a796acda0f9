"""The API keys page (``/settings/keys``): a supervisor lists, creates and revokes the organization's keys
through the organizations area's verbs; the new key is shown once, works against the API and stops
working once revoked; another organization's key is the designed 404; agents get 403 on every URL; every
change lands in the audit log with its before and after."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.support.desk_users import create_desk_user, sign_in

CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
NEW_KEY = re.compile(r'id="new-key"[^>]*value="(sk_live_[A-Za-z0-9]+)"')
HX = {"HX-Request": "true"}


class Desk:
    def __init__(self, client: FlaskClient, prefix: str = "") -> None:
        self.client = client
        self.prefix = prefix
        found = CSRF.search(client.get(f"{prefix}/settings/keys").get_data(as_text=True))
        assert found is not None
        self.csrf = found.group(1)

    def get(self, path: str, **headers: str) -> Any:
        return self.client.get(f"{self.prefix}{path}", headers={**HX, **headers})

    def post(self, path: str, data: dict[str, str] | None = None) -> Any:
        return self.client.post(
            f"{self.prefix}{path}", data=data or {}, headers={**HX, "X-CSRFToken": self.csrf}
        )


def _desk(app: Flask, runner: FlaskCliRunner, org: Org, role: str = "supervisor", prefix: str = "") -> Any:
    env = "sandbox" if prefix else "live"
    login = create_desk_user(
        runner, org.id, f"{role}.{env}.{org.id[:6]}@example.test", role=role, environment=env
    )
    client = sign_in(app.test_client(), login["email"], prefix=prefix)
    return client if role != "supervisor" else Desk(client, prefix)


def _key_id(html: str, prefix: str) -> str:
    found = re.search(
        r'data-key-id="([^"]+)"[^>]*>\s*<td[^>]*>\s*<div[^>]*>[^<]*</div>\s*<code[^>]*>' + re.escape(prefix),
        html,
    )
    assert found is not None, html
    return found.group(1)


def test_a_key_made_on_the_page_works_until_revoked_on_the_page(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    desk = _desk(app, runner, org)
    page = desk.client.get("/settings/keys")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    html = page.get_data(as_text=True)
    assert org.live_key[:16] in html  # the organization's own key, by its shown prefix only
    assert org.live_key not in html

    created = desk.post("/settings/keys", {"name": "  Partner   CRM "})
    assert created.status_code == 200 and created.headers["Cache-Control"] == "no-store"
    body = created.get_data(as_text=True)
    plaintext = NEW_KEY.search(body)
    assert plaintext is not None
    key = plaintext.group(1)
    assert "Partner CRM" in body  # spaces folded by the verb
    url = "/v1/organizations"  # answers the organization the key resolves
    answer = client.get(url, headers={"X-API-Key": key})
    assert answer.status_code == 200 and answer.get_json()[0]["id"] == org.id

    # shown once: the page never shows the key again
    assert key not in desk.client.get("/settings/keys").get_data(as_text=True)

    key_id = _key_id(body, key[:16])
    question = desk.get(f"/settings/keys/{key_id}/revoke")
    assert question.status_code == 200 and "Revoke key" in question.get_data(as_text=True)
    cancelled = desk.get(f"/settings/keys/{key_id}")
    assert 'data-state="active"' in cancelled.get_data(as_text=True)

    revoked = desk.post(f"/settings/keys/{key_id}/revoke")
    assert revoked.status_code == 200 and 'data-state="revoked"' in revoked.get_data(as_text=True)
    assert client.get(url, headers={"X-API-Key": key}).status_code == 401
    assert client.get(url, headers=org.headers()).status_code == 200  # the others keep working

    log = client.get(
        f"/v1/members/organizations/{org.id}/audit-log",
        query_string={"target_id": key[:16]},
        headers=org.headers(),
    ).get_json()["data"]
    by_action = {entry["action"]: entry for entry in log}
    assert by_action["api_key.created"]["summary"]["changes"]["name"] == {
        "before": None,
        "after": "Partner CRM",
    }
    assert by_action["api_key.revoked"]["summary"]["changes"]["active"] == {"before": True, "after": False}
    assert by_action["api_key.revoked"]["actor"].startswith("user:")


def test_a_name_too_long_is_refused_under_its_field(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    desk = _desk(app, runner, org)
    refused = desk.post("/settings/keys", {"name": "x" * 121})
    html = refused.get_data(as_text=True)
    assert refused.status_code == 422
    assert 'id="key-name-error"' in html and "At most 120 characters." in html
    assert 'id="new-key"' not in html
    assert "x" * 121 in html  # what was typed stays


def test_another_organizations_key_is_not_found(
    app: Flask, runner: FlaskCliRunner, org: Org, other_org: Org
) -> None:
    desk = _desk(app, runner, other_org)
    theirs = _desk(app, runner, org)
    own_id = _key_id(theirs.client.get("/settings/keys").get_data(as_text=True), org.live_key[:16])
    assert desk.post(f"/settings/keys/{own_id}/revoke").status_code == 404
    assert desk.get(f"/settings/keys/{own_id}").status_code == 404
    assert desk.get("/settings/keys/not-a-uuid/revoke").status_code == 404
    assert org.live_key[:16] not in desk.client.get("/settings/keys").get_data(as_text=True)


def test_agents_get_403_on_every_url(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    agent = _desk(app, runner, org, role="agent")
    token = CSRF.search(agent.get("/desk").get_data(as_text=True))
    assert token is not None
    headers = {"X-CSRFToken": token.group(1)}
    some_id = "00000000-0000-0000-0000-000000000000"
    assert agent.get("/settings/keys").status_code == 403
    assert agent.get(f"/settings/keys/{some_id}").status_code == 403
    assert agent.get(f"/settings/keys/{some_id}/revoke").status_code == 403
    assert agent.post("/settings/keys", data={"name": "x"}, headers=headers).status_code == 403
    assert agent.post(f"/settings/keys/{some_id}/revoke", headers=headers).status_code == 403
    assert app.test_client().get("/settings/keys").status_code == 302  # signed out: to the sign-in page


def test_the_sandbox_page_makes_sandbox_keys_and_both_languages_render(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    desk = _desk(app, runner, org, prefix="/sandbox")
    html = desk.client.get("/sandbox/settings/keys").get_data(as_text=True)
    assert org.sandbox_key[:16] in html and org.live_key[:16] not in html
    assert 'href="/settings/keys"' in html  # the live keys, one link away
    created = desk.post("/settings/keys", {"name": "pruebas"}).get_data(as_text=True)
    found = re.search(r'id="new-key"[^>]*value="(sk_test_[A-Za-z0-9]+)"', created)
    assert found is not None
    sandbox_key = {"X-API-Key": found.group(1)}
    assert client.get("/sandbox/v1/organizations", headers=sandbox_key).status_code == 200
    assert client.get("/v1/organizations", headers=sandbox_key).status_code == 401

    spanish = desk.client.get("/sandbox/settings/keys", headers={"Accept-Language": "es-MX"})
    assert "Claves de API" in spanish.get_data(as_text=True)
