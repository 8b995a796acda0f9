"""Authentication, environments and tenancy: every rule of the spec's Authentication section."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org

INVALID_TOKEN = {"statusCode": 401, "message": "Invalid or expired token"}
NO_ACCESS = {"statusCode": 403, "message": "You do not have access to this organization"}


def msg(org: Org, suffix: str = "/probe") -> str:
    return f"/v2/messages/organizations/{org.id}{suffix}"


def crm(org: Org, suffix: str = "/probe") -> str:
    return f"/v1/crm/organizations/{org.id}{suffix}"


def test_valid_key_resolves_its_organization(client: FlaskClient, org: Org) -> None:
    response = client.get("/v1/organizations", headers=org.headers())
    assert response.status_code == 200
    [organization] = response.get_json()
    assert organization["id"] == org.id
    assert organization["name"] == "Acme"
    assert set(organization) >= {"id", "name", "created_at", "updated_at"}


def test_missing_key_is_401(client: FlaskClient, org: Org) -> None:
    response = client.get(msg(org))
    assert response.status_code == 401
    assert response.get_json() == INVALID_TOKEN


def test_wrong_key_is_401(client: FlaskClient, org: Org) -> None:
    wrong = org.live_key[:-1] + ("x" if org.live_key[-1] != "x" else "y")  # never the key itself
    response = client.get(msg(org), headers={"X-API-Key": wrong})
    assert response.status_code == 401
    assert response.get_json() == INVALID_TOKEN


def test_key_sent_as_bearer_is_401_even_when_valid(client: FlaskClient, org: Org) -> None:
    for path in (msg(org), crm(org), "/v1/organizations", "/v1/partner/probe"):
        response = client.get(path, headers={"Authorization": f"Bearer {org.live_key}"})
        assert response.status_code == 401, path
        both = client.get(path, headers={"Authorization": f"Bearer {org.live_key}", **org.headers()})
        assert both.status_code == 401, path


def test_sandbox_key_rejected_by_production_and_live_key_by_sandbox(client: FlaskClient, org: Org) -> None:
    assert client.get(msg(org), headers={"X-API-Key": org.sandbox_key}).get_json() == INVALID_TOKEN
    assert client.get("/sandbox" + msg(org), headers={"X-API-Key": org.live_key}).status_code == 401
    assert client.get("/sandbox" + msg(org), headers={"X-API-Key": org.sandbox_key}).status_code == 200
    assert client.get("/v1/partner/probe", headers={"X-API-Key": org.sandbox_key}).status_code == 401
    assert client.get("/sandbox/v1/partner/probe", headers={"X-API-Key": org.live_key}).status_code == 401


def test_environment_is_the_keys_attribute_not_its_prefix(client: FlaskClient, sandbox_app, org: Org) -> None:
    # A sandbox key rewritten to look like a live key is still a sandbox key: production rejects it,
    # and the sandbox rejects it too because the value changed.
    forged = "sk_live_" + org.sandbox_key.removeprefix("sk_test_")
    assert client.get(msg(org), headers={"X-API-Key": forged}).status_code == 401
    # A key whose stored environment disagrees with the store it sits in is refused (defence in depth).
    from blueprints.organizations.models import ApiKey
    from blueprints.organizations.services import find_key
    from core.db import db

    with sandbox_app.app_context():
        key: ApiKey | None = find_key(org.sandbox_key)
        assert key is not None
        key.environment = "live"
        db.session.commit()
    assert client.get("/sandbox" + msg(org), headers={"X-API-Key": org.sandbox_key}).status_code == 401


def test_organization_mismatch_is_403(client: FlaskClient, org: Org, other_org: Org) -> None:
    response = client.get(msg(other_org), headers=org.headers())
    assert response.status_code == 403
    assert response.get_json() == NO_ACCESS
    members = client.get(f"/v1/members/organizations/{other_org.id}/probe", headers=org.headers())
    assert members.get_json() == NO_ACCESS
    not_uuid = client.get("/v2/messages/organizations/not-a-uuid/probe", headers=org.headers())
    assert not_uuid.status_code == 403


def test_revoked_key_is_401(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    assert client.get(msg(org), headers=org.headers()).status_code == 200
    prefix = org.live_key[:16]
    result = runner.invoke(args=["keys", "revoke", prefix])
    assert result.exit_code == 0, result.output
    assert client.get(msg(org), headers=org.headers()).get_json() == INVALID_TOKEN
    # the sandbox key of the same organization is untouched
    assert client.get("/sandbox" + msg(org), headers=org.headers("sandbox")).status_code == 200


def test_revoke_unknown_prefix_fails(runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["keys", "revoke", "sk_live_nothing1"])
    assert result.exit_code != 0
    assert "no key" in result.output


def test_expired_key_is_401(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    soon_past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    result = runner.invoke(
        args=["keys", "create", "--org", org.id, "--env", "live", "--expires-at", soon_past, "--json"]
    )
    assert result.exit_code == 0, result.output
    expired = json.loads(result.stdout)["api_key"]
    assert client.get(msg(org), headers={"X-API-Key": expired}).get_json() == INVALID_TOKEN
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    result = runner.invoke(args=["keys", "create", "--org", org.id, "--expires-at", future, "--json"])
    assert (
        client.get(msg(org), headers={"X-API-Key": json.loads(result.stdout)["api_key"]}).status_code == 200
    )


def test_keys_create_for_sandbox(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    result = runner.invoke(args=["keys", "create", "--org", org.id, "--env", "sandbox", "--json"])
    created = json.loads(result.stdout)
    assert created["api_key"].startswith("sk_test_")
    assert created["environment"] == "sandbox"
    assert (
        client.get("/sandbox/v1/organizations", headers={"X-API-Key": created["api_key"]}).status_code == 200
    )
    assert client.get("/v1/organizations", headers={"X-API-Key": created["api_key"]}).status_code == 401


def test_last_used_is_recorded(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    # the use is written once the response has gone out (a WSGI server closes it; the test client on close())
    client.get("/v1/organizations", headers=org.headers()).close()
    listed = json.loads(runner.invoke(args=["keys", "list", "--org", org.id, "--json"]).stdout)
    live = [k for k in listed if k["environment"] == "live"]
    assert live[0]["last_used_at"] is not None
    assert all(k["prefix"] not in (org.live_key, org.sandbox_key) for k in listed)


def test_crm_accepts_a_signed_jwt(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    token = runner.invoke(args=["tokens", "issue", "--org", org.id, "--subject", "mem_1"]).output.strip()
    response = client.get(crm(org), headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response.get_json()["kind"] == "jwt"
    # the JWT names its organization: another organization's path is forbidden
    other = client.get(
        "/v1/crm/organizations/00000000-0000-4000-8000-000000000000/probe",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert other.status_code == 403


def test_jwt_only_in_the_crm_area(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    token = runner.invoke(args=["tokens", "issue", "--org", org.id, "--subject", "mem_1"]).output.strip()
    response = client.get(msg(org), headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401
    assert response.get_json() == INVALID_TOKEN


def test_jwt_of_other_environment_or_expired_is_401(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    sandbox_token = runner.invoke(
        args=["tokens", "issue", "--org", org.id, "--subject", "u1", "--env", "sandbox"]
    ).output.strip()
    assert client.get(crm(org), headers={"Authorization": f"Bearer {sandbox_token}"}).status_code == 401
    assert (
        client.get("/sandbox" + crm(org), headers={"Authorization": f"Bearer {sandbox_token}"}).status_code
        == 200
    )

    from core.tokens import issue_token
    from tests.conftest import TEST_SECRET

    expired = issue_token(
        TEST_SECRET,
        organization_id=__import__("uuid").UUID(org.id),
        subject="u1",
        environment="live",
        ttl_seconds=-10,
    )
    response = client.get(crm(org), headers={"Authorization": f"Bearer {expired}"})
    assert response.status_code == 401
    assert response.get_json()["error"]["statusCode"] == 401
    forged = issue_token(
        "another-secret-entirely-0123456789abcdef",
        organization_id=__import__("uuid").UUID(org.id),
        subject="u1",
        environment="live",
        ttl_seconds=60,
    )
    assert client.get(crm(org), headers={"Authorization": f"Bearer {forged}"}).status_code == 401


def test_tokens_issue_rejects_unknown_org(runner: FlaskCliRunner) -> None:
    result = runner.invoke(
        args=["tokens", "issue", "--org", "00000000-0000-4000-8000-000000000000", "--subject", "x"]
    )
    assert result.exit_code != 0


def test_product_gating_is_403_in_telecom_format(client: FlaskClient, make_org) -> None:
    no_sim = make_org("Travel only", products="TRAVEL_ESIM")
    response = client.post("/v1/partner/probe/sim", headers=no_sim.headers())
    assert response.status_code == 403
    error = response.get_json()["error"]
    assert error["type"] == "permission_error"
    assert error["code"] == "product_not_enabled"
    assert "SIM" in error["message"]
    with_sim = make_org("Lines", products="SIM")
    assert client.post("/v1/partner/probe/sim", headers=with_sim.headers()).status_code == 200


def test_revoke_accepts_a_start_of_the_key_or_the_whole_key(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    short = runner.invoke(args=["keys", "revoke", org.live_key[:13]])
    assert short.exit_code == 0, short.output
    assert client.get(msg(org), headers=org.headers()).status_code == 401
    whole = runner.invoke(args=["keys", "revoke", org.sandbox_key])
    assert whole.exit_code == 0, whole.output
    assert client.get("/sandbox" + msg(org), headers=org.headers("sandbox")).status_code == 401


def test_revoke_refuses_an_ambiguous_or_too_short_prefix(app, runner: FlaskCliRunner, org: Org) -> None:
    import uuid as uuid_module

    from blueprints.organizations.services import get_organization, issue_api_key
    from core.environments import LIVE, in_environment

    with in_environment(app, LIVE):  # one unit of work: committed on exit
        organization = get_organization(uuid_module.UUID(org.id))
        for tail in ("1111", "2222"):
            issue_api_key(organization, "live", plaintext="sk_live_ABCD" + tail + "x" * 32)
    ambiguous = runner.invoke(args=["keys", "revoke", "sk_live_ABCD"])
    assert ambiguous.exit_code != 0 and "ambiguous" in ambiguous.output
    assert runner.invoke(args=["keys", "revoke", "sk_live_"]).exit_code != 0  # too short to name a key
    assert runner.invoke(args=["keys", "revoke", "sk_live_ABCD1111" + "y" * 32]).exit_code != 0  # not the key
    exact = runner.invoke(args=["keys", "revoke", "sk_live_ABCD1111"])
    assert exact.exit_code == 0 and "sk_live_ABCD1111" in exact.output
