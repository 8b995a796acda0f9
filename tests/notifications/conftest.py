"""Helpers of the notification tests: an AI agent with a configuration, the delivery log, a movable clock."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from blueprints.members.models import AgentConfig, Member
from blueprints.notifications import services
from core.db import db, utcnow
from core.environments import in_environment
from tests.conftest import Org


def mem(org: Org, suffix: str = "") -> str:
    return f"/v1/members/organizations/{org.id}{suffix}"


@dataclass
class Clock:
    """The real clock moved by an offset."""

    offset: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return utcnow() + self.offset

    def advance(self, delta: timedelta) -> None:
        self.offset += delta


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(services, "clock", fake)
    return fake


@pytest.fixture
def make_agent(client: FlaskClient) -> Callable[..., str]:
    """An AI agent of ``org`` whose configuration sends ``notifications``; its id."""

    def _make(org: Org, notifications: dict[str, Any], name: str = "Sofía") -> str:
        created = client.post(
            f"/v2/messages/organizations/{org.id}/members",
            json={"name": name, "ai": True, "organization_id": org.id},
            headers=org.headers(),
        )
        assert created.status_code == 201, created.get_json()
        agent_id = created.get_json()["id"]
        # https webhooks pass the configuration's validation; the tests' receivers are http on loopback,
        # so those are written straight into the stored configuration (see set_notifications)
        response = client.post(
            mem(org, f"/members/{agent_id}/agent-config"),
            json={"sections": {"identity": "You are Sofía."}, "notifications": notifications},
            headers=org.headers(),
        )
        assert response.status_code == 201, response.get_json()
        return str(agent_id)

    return _make


def set_notifications(app: Flask, org: Org, agent_id: str, notifications: dict[str, Any]) -> None:
    with in_environment(app, "live"):
        member = db.session.scalars(
            select(Member).where(Member.organization_id == uuid.UUID(org.id), Member.id == agent_id)
        ).one()
        config = db.session.scalars(select(AgentConfig).where(AgentConfig.member_pk == member.pk)).one()
        config.notifications = notifications


def notify(app: Flask, org: Org, agent_id: str, trigger: str, payload: dict[str, Any]) -> list[str]:
    """``services.notify`` as the voice area (or a job) calls it: one unit of work; the delivery ids."""
    with in_environment(app, "live"):
        deliveries = services.notify(uuid.UUID(org.id), agent_id, trigger, payload)
        return [str(d.id) for d in deliveries]


def deliveries(client: FlaskClient, org: Org, agent_id: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(
        mem(org, f"/members/{agent_id}/notifications/deliveries"), headers=org.headers(), query_string=params
    )
    assert response.status_code == 200, response.get_json()
    return list(response.get_json()["data"])


def sweep(app: Flask) -> int:
    with in_environment(app, "live"):
        return services.retry_due()


TOOL_CALL = {
    "conversation_id": "c0ffee00-0000-4000-8000-000000000001",
    "contact_address": "+525512345678",
    "tool": "transfer_to_human",
    "arguments": {"reason": "Quiere hablar con ventas", "team": "Ventas"},
    "result": {"transferred_to": "team:Ventas"},
    "run_id": "run_1",
}
