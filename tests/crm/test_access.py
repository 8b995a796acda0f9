"""Who may call the CRM: API key or Bearer JWT; every route refuses other organizations and strangers."""

from __future__ import annotations

import re
import uuid

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.crm.conftest import Crm, crm_error

NO_ACCESS = crm_error(403, "You do not have access to this organization")
UNAUTHORIZED = crm_error(401, "Invalid API key or JWT")


def _token(runner: FlaskCliRunner, org: Org, env: str = "live") -> str:
    result = runner.invoke(args=["tokens", "issue", "--org", org.id, "--subject", "member-7", "--env", env])
    assert result.exit_code == 0, result.output
    return result.output.strip()


def _crm_routes(app: Flask) -> list[tuple[str, str]]:
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/v1/crm/"):
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                routes.append((method, rule.rule))
    return routes


def _fill(rule: str, organization_id: str) -> str:
    path = rule.replace("<organization_id>", organization_id)
    path = re.sub(r"<(from_currency|to_currency)>", "USD", path)
    path = path.replace("<reference>", "TCK-1")
    return re.sub(r"<[^>]+>", str(uuid.uuid4()), path)


def test_bearer_jwt_is_accepted_and_recorded_as_the_actor(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    crm = Crm(client, org, {"Authorization": f"Bearer {_token(runner, org)}"})
    assert crm.pipeline()["key"] == "VNT"
    ticket = crm.ticket()
    history = crm.ok(crm.get(f"/tickets/{ticket['id']}/history"))["data"]
    # core.auth.current_actor: a JWT subject is recorded as ``member:<subject>``
    assert history[0]["changed_by"] == "member:member-7"


def test_api_key_is_accepted(crm: Crm) -> None:
    assert crm.ok(crm.get("/deals"))["total"] == 0


def test_sandbox_is_a_separate_store(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    live = Crm(client, org)
    live.ticket()
    sandbox_path = f"/sandbox/v1/crm/organizations/{org.id}/tickets"
    response = client.get(sandbox_path, headers=org.headers("sandbox"))
    assert response.status_code == 200 and response.get_json()["total"] == 0
    sandbox_token = _token(runner, org, "sandbox")
    assert client.get(sandbox_path, headers={"Authorization": f"Bearer {sandbox_token}"}).status_code == 200
    # a sandbox token is refused by production
    assert (
        live.client.get(
            live.url("/tickets"), headers={"Authorization": f"Bearer {sandbox_token}"}
        ).status_code
        == 401
    )


def test_missing_or_bad_credentials_are_401_in_the_crm_format(client: FlaskClient, org: Org) -> None:
    path = f"/v1/crm/organizations/{org.id}/deals"
    for headers in (
        {},
        {"X-API-Key": "sk_live_nope"},
        {"Authorization": "Bearer not.a.jwt"},
        {"Authorization": f"Bearer {org.live_key}"},
    ):
        response = client.get(path, headers=headers)
        assert response.status_code == 401
        assert response.get_json() == UNAUTHORIZED


def test_every_crm_route_refuses_another_organizations_path(
    app: Flask, client: FlaskClient, org: Org, other_org: Org, runner: FlaskCliRunner
) -> None:
    routes = _crm_routes(app)
    assert len(routes) >= 60
    token = _token(runner, org)
    for method, rule in routes:
        path = _fill(rule, other_org.id)
        for headers in (org.headers(), {"Authorization": f"Bearer {token}"}):
            response = client.open(path, method=method, headers=headers, json={})
            assert response.status_code == 403, (method, path)
            assert response.get_json() == NO_ACCESS
        assert client.open(path, method=method, json={}).status_code == 401


@pytest.mark.parametrize("suffix", ["/deals", "/tickets", "/tasks", "/contacts", "/accounts", "/pipelines"])
def test_unknown_method_is_route_not_found(client: FlaskClient, org: Org, suffix: str) -> None:
    response = client.put(f"/v1/crm/organizations/{org.id}{suffix}", headers=org.headers(), json={})
    assert response.status_code == 404
    assert response.get_json() == {"error_msg": "404 Route Not Found"}


def test_body_that_is_not_an_object_is_400(crm: Crm) -> None:
    response = crm.post("/tickets", ["title"])
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == "Request body must be a JSON object"
