"""Error bodies per area, route matching before authentication, validation naming the field."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.conftest import Org

ROUTE_NOT_FOUND = {"error_msg": "404 Route Not Found"}


def test_unknown_route_is_404_while_published_siblings_answer_401(client: FlaskClient, org: Org) -> None:
    # no key at all: the published route asks for one, the unpublished one does not exist
    assert client.get("/v1/partner/probe").status_code == 401
    unknown = client.get("/v1/partner/orders")
    assert unknown.status_code == 404
    assert unknown.get_json() == ROUTE_NOT_FOUND
    assert client.get(f"/v2/messages/organizations/{org.id}/nope").get_json() == ROUTE_NOT_FOUND
    assert client.get("/v3/anything").get_json() == ROUTE_NOT_FOUND
    assert client.get("/sandbox/v1/partner/orders").get_json() == ROUTE_NOT_FOUND
    # a published path with a method that is not published is not a route either
    assert client.delete("/v1/organizations", headers=org.headers()).get_json() == ROUTE_NOT_FOUND


def test_crm_error_body(client: FlaskClient, org: Org) -> None:
    unauthorized = client.get(f"/v1/crm/organizations/{org.id}/probe")
    assert unauthorized.status_code == 401
    assert unauthorized.get_json() == {
        "statusCode": 401,
        "error": {"message": "Invalid API key or JWT", "error": "Unauthorized", "statusCode": 401},
    }
    missing = client.get(f"/v1/crm/organizations/{org.id}/probe/missing", headers=org.headers())
    assert missing.status_code == 404
    assert missing.get_json() == {
        "statusCode": 404,
        "error": {"message": "No Deal found", "error": "Not Found", "statusCode": 404},
    }


def test_crm_forbidden_body(client: FlaskClient, org: Org, other_org: Org) -> None:
    response = client.get(f"/v1/crm/organizations/{other_org.id}/probe", headers=org.headers())
    assert response.status_code == 403
    assert response.get_json() == {
        "statusCode": 403,
        "error": {
            "message": "You do not have access to this organization",
            "error": "Forbidden",
            "statusCode": 403,
        },
    }


def test_validation_error_names_the_field_in_each_format(client: FlaskClient, org: Org) -> None:
    crm = client.post(f"/v1/crm/organizations/{org.id}/probe", json={"name": "x"}, headers=org.headers())
    assert crm.status_code == 400
    body = crm.get_json()
    assert body["statusCode"] == 400 and body["error"]["error"] == "Bad Request"
    assert body["error"]["message"].startswith("amount:")

    msg = client.post(
        f"/v2/messages/organizations/{org.id}/probe", json={"name": "x", "amount": -1}, headers=org.headers()
    )
    assert msg.status_code == 400
    assert msg.get_json()["statusCode"] == 400
    assert msg.get_json()["message"].startswith("amount:")
    assert set(msg.get_json()) == {"statusCode", "message"}

    tel = client.post("/v1/partner/probe/body", json={"amount": 1}, headers=org.headers())
    assert tel.status_code == 400
    error = tel.get_json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "name"
    assert error["message"].startswith("name:")
    assert error["request_id"] == tel.headers["X-Request-Id"]


def test_query_validation_names_the_parameter(client: FlaskClient, org: Org) -> None:
    response = client.get(f"/v1/crm/organizations/{org.id}/probe?limit=500", headers=org.headers())
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith("limit:")
    ok = client.get(f"/v1/crm/organizations/{org.id}/probe?limit=5", headers=org.headers())
    assert ok.get_json()["limit"] == 5


def test_malformed_json_is_400_not_500(client: FlaskClient, org: Org) -> None:
    response = client.post(
        f"/v2/messages/organizations/{org.id}/probe",
        data="{not json",
        headers={**org.headers(), "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert "JSON object" in response.get_json()["message"]
    array = client.post(f"/v2/messages/organizations/{org.id}/probe", json=[1, 2], headers=org.headers())
    assert array.status_code == 400


def test_conflict_keeps_the_telecom_format(client: FlaskClient, org: Org) -> None:
    response = client.post(
        "/v1/partner/probe/body", json={"name": "taken", "amount": 1}, headers=org.headers()
    )
    assert response.status_code == 409
    assert response.get_json()["error"] == {
        "type": "conflict_error",
        "code": "name_taken",
        "message": "name: already used",
        "param": "name",
        "request_id": response.headers["X-Request-Id"],
    }


def test_unexpected_error_is_a_500_in_the_area_format_without_a_trace(client: FlaskClient, org: Org) -> None:
    response = client.get(f"/v1/crm/organizations/{org.id}/probe/boom", headers=org.headers())
    assert response.status_code == 500
    assert response.is_json
    assert response.get_json()["error"]["message"] == "Internal server error"
    assert "Traceback" not in response.get_data(as_text=True)


def test_auth_runs_before_validation(client: FlaskClient, org: Org) -> None:
    # an invalid body without a key is a 401, not a 400
    response = client.post(f"/v2/messages/organizations/{org.id}/probe", json={})
    assert response.status_code == 401
