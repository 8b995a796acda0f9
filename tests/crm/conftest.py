"""A small client for the CRM paths, acting as one organization, plus shared builders."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from blueprints.crm import hooks
from tests.conftest import Org


class Crm:
    """``crm.get("/deals")`` -> the response for ``/v1/crm/organizations/<org>/deals`` with the org's key."""

    def __init__(self, client: FlaskClient, org: Org, headers: dict[str, str] | None = None) -> None:
        self.client = client
        self.org = org
        self.headers = headers or org.headers()

    def url(self, suffix: str) -> str:
        return f"/v1/crm/organizations/{self.org.id}{suffix}"

    def get(self, suffix: str, **params: Any) -> TestResponse:
        return self.client.get(self.url(suffix), headers=self.headers, query_string=params)

    def post(self, suffix: str, json: Any = None, **params: Any) -> TestResponse:
        return self.client.post(self.url(suffix), headers=self.headers, json=json, query_string=params)

    def patch(self, suffix: str, json: Any = None) -> TestResponse:
        return self.client.patch(self.url(suffix), headers=self.headers, json=json)

    def delete(self, suffix: str, **params: Any) -> TestResponse:
        return self.client.delete(self.url(suffix), headers=self.headers, query_string=params)

    def ok(self, response: TestResponse, status: int = 200) -> Any:
        assert response.status_code == status, response.get_json()
        return response.get_json()

    # builders -----------------------------------------------------------------------------------------

    def pipeline(self) -> dict[str, Any]:
        """The default pipeline (created on first list)."""
        return self.ok(self.get("/pipelines"))["data"][0]

    def stage(self, pipeline: dict[str, Any], name: str) -> dict[str, Any]:
        return next(s for s in pipeline["stages"] if s["name"] == name)

    def deal(self, **fields: Any) -> dict[str, Any]:
        if "pipeline_id" not in fields:
            pipeline = self.pipeline()
            fields = {"pipeline_id": pipeline["id"], "stage_id": pipeline["stages"][0]["id"], **fields}
        return self.ok(self.post("/deals", {"name": "Deal", **fields}), 201)

    def ticket(self, **fields: Any) -> dict[str, Any]:
        return self.ok(self.post("/tickets", {"title": "Help", "source": "api", **fields}), 201)

    def task(self, **fields: Any) -> dict[str, Any]:
        return self.ok(self.post("/tasks", {"title": "Call back", **fields}), 201)

    def contact(self, **fields: Any) -> dict[str, Any]:
        return self.ok(self.post("/contacts", {"name": "Ana", **fields}), 201)

    def account(self, **fields: Any) -> dict[str, Any]:
        return self.ok(self.post("/accounts", {"name": "Initech", **fields}), 201)


def crm_error(status: int, message: str) -> dict[str, Any]:
    from http import HTTPStatus

    return {
        "statusCode": status,
        "error": {"message": message, "error": HTTPStatus(status).phrase, "statusCode": status},
    }


def not_found_body(resource: str) -> dict[str, Any]:
    return crm_error(404, f"No {resource} found")


@pytest.fixture
def crm(client: FlaskClient, org: Org) -> Crm:
    return Crm(client, org)


@pytest.fixture
def other_crm(client: FlaskClient, other_org: Org) -> Crm:
    return Crm(client, other_org)


@pytest.fixture
def make_crm(client: FlaskClient) -> Callable[[Org], Crm]:
    return lambda org: Crm(client, org)


@pytest.fixture(autouse=True)
def _crm_alone(request: pytest.FixtureRequest, app: Flask) -> Iterator[None]:
    """Most CRM tests run the CRM alone: nobody answers which member and conversation ids exist, so ids
    are accepted as given (the CRM's rule without those areas). Tests that take the ``wired`` fixture keep
    the real receivers (members and messaging, connected in ``blueprints/integrations/``). It asks for
    ``app`` first because building the app is what connects them."""
    if "wired" in request.fixturenames:
        yield
        return
    with hooks.known_members.only(None), hooks.known_conversations.only(None):
        yield


@pytest.fixture
def wired() -> None:
    """The areas' real answers to ``known_members`` and ``known_conversations`` (see ``_crm_alone``)."""
    assert hooks.known_members.receivers and hooks.known_conversations.receivers, "not wired"
