"""A small partner client for ``/v1/partner`` acting as one organization, and builders for the story."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient, FlaskCliRunner
from werkzeug.test import TestResponse

from blueprints.telecom.mexico import with_curp_check_digit, with_rfc_check_digit
from tests.conftest import Org

CURP = with_curp_check_digit("HEGG560427MVZRRL0")
RFC = with_rfc_check_digit("ABC680524P7")


class Partner:
    def __init__(
        self, client: FlaskClient, org: Org, runner: FlaskCliRunner, environment: str = "live"
    ) -> None:
        self.client, self.org, self.runner, self.environment = client, org, runner, environment
        self.base = "/v1/partner" if environment == "live" else "/sandbox/v1/partner"
        self.headers = org.headers(environment)

    def get(self, suffix: str, **params: Any) -> TestResponse:
        return self.client.get(self.base + suffix, headers=self.headers, query_string=params)

    def post(self, suffix: str, json: Any = None, headers: dict[str, str] | None = None) -> TestResponse:
        return self.client.post(self.base + suffix, headers={**self.headers, **(headers or {})}, json=json)

    def patch(self, suffix: str, json: Any = None) -> TestResponse:
        return self.client.patch(self.base + suffix, headers=self.headers, json=json)

    def delete(self, suffix: str) -> TestResponse:
        return self.client.delete(self.base + suffix, headers=self.headers)

    @staticmethod
    def ok(response: TestResponse, status: int = 200) -> Any:
        assert response.status_code == status, response.get_json()
        return response.get_json()

    # builders -----------------------------------------------------------------------------------------

    def user(self, **fields: Any) -> dict[str, Any]:
        body = {
            "email": f"u{len(self.ok(self.get('/users', limit=100))['data'])}@example.mx",
            "full_name": "Gloria",
        }
        return self.ok(self.post("/users", {**body, **fields}), 201)

    def verify(self, user: dict[str, Any], number: str = "IDMEX123456", **fields: Any) -> dict[str, Any]:
        if user["person_type"] == "company":
            body = {
                "full_name": user["full_name"],
                "rfc": RFC,
                "document": {"type": "acta_constitutiva", "number": number},
            }
        else:
            body = {
                "full_name": user["full_name"],
                "curp": CURP,
                "document": {"type": "ine", "number": number},
            }
        self.ok(self.post(f"/users/{user['id']}/kyc_verifications", {**body, **fields}), 202)
        return self.ok(self.get(f"/users/{user['id']}/kyc_verifications"))["data"][0]

    def verified_user(self, **fields: Any) -> dict[str, Any]:
        user = self.user(**fields)
        assert self.verify(user)["status"] == "verified"
        return user

    def credit(self, amount: str) -> None:
        result = self.runner.invoke(
            args=[
                "telecom",
                "balance",
                "credit",
                "--org",
                self.org.id,
                "--amount",
                amount,
                "--env",
                self.environment,
            ]
        )
        assert result.exit_code == 0, result.output

    def line(self, user: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        user = user or self.verified_user()
        body = {"type": "SIM", "user": user["id"], "plan": "pln_basico_5gb", "area_code": "55", **fields}
        created = self.ok(self.post("/subscriptions", body), 202)
        return self.ok(self.get(f"/subscriptions/{created['id']}"))

    def balance(self) -> dict[str, Any]:
        return self.ok(self.get("/balance"))


@pytest.fixture
def catalogue(runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["telecom", "catalogue", "load"])
    assert result.exit_code == 0, result.output


@pytest.fixture
def partner(client: FlaskClient, org: Org, runner: FlaskCliRunner, catalogue: None) -> Partner:
    return Partner(client, org, runner)


@pytest.fixture
def make_partner(client: FlaskClient, runner: FlaskCliRunner, catalogue: None) -> Callable[..., Partner]:
    def _make(org: Org, environment: str = "live") -> Partner:
        return Partner(client, org, runner, environment)

    return _make
