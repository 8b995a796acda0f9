"""Helpers for the members area tests: paths, a member factory and the error bodies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from blueprints.members.services import hooks
from tests.conftest import Org

NO_ACCESS = {"statusCode": 403, "message": "You do not have access to this organization"}
INVALID_TOKEN = {"statusCode": 401, "message": "Invalid or expired token"}
ROUTE_NOT_FOUND = {"error_msg": "404 Route Not Found"}


def msg(org: Org, suffix: str = "") -> str:
    return f"/v2/messages/organizations/{org.id}/members{suffix}"


def mem(org: Org, suffix: str = "") -> str:
    return f"/v1/members/organizations/{org.id}{suffix}"


def error(status: int, message: str) -> dict[str, Any]:
    return {"statusCode": status, "message": message}


@pytest.fixture
def make_member(client: FlaskClient) -> Callable[..., dict[str, Any]]:
    def _make(org: Org, name: str = "Ana", ai: bool = False, **fields: Any) -> dict[str, Any]:
        body = {"name": name, "ai": ai, "organization_id": org.id, **fields}
        response = client.post(msg(org), json=body, headers=org.headers())
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    return _make


@pytest.fixture(autouse=True)
def _no_provider_hooks() -> Any:
    """Each test starts without the other areas' providers; the real ones are put back afterwards, so
    tests of other areas that run later (apps are reused between tests) still see them."""
    with hooks.active_conversation_counts.only(None), hooks.connected_channels.only(None):
        yield
