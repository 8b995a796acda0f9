"""Helpers of the audit log's tests: reading the log through the API, desk users through the real CLI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.support.desk_users import create_desk_user

PASSWORD = "correct horse battery"


def audit_url(org: Org) -> str:
    return f"/v1/members/organizations/{org.id}/audit-log"


def read_log(client: FlaskClient, org: Org, **params: Any) -> dict[str, Any]:
    response = client.get(audit_url(org), query_string=params, headers=org.headers())
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def key_actor(org: Org) -> str:
    """How an entry names the organization's live key: its shown prefix (``sk_live_`` + 8)."""
    return f"api_key:{org.live_key[:16]}"


@pytest.fixture
def make_desk_user(runner: FlaskCliRunner) -> Callable[..., dict[str, Any]]:
    """A desk login of ``org`` with ``role``, created as a person would (``users create``)."""

    def _make(org: Org, role: str, name: str = "Sara Supervisora") -> dict[str, Any]:
        email = f"{role}.{org.id[:8]}@example.test"
        return create_desk_user(runner, org.id, email, password=PASSWORD, name=name, role=role)

    return _make
