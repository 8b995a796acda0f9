"""The demo desk stays alive: the periodic job makes a simulated customer write to the demo number, the
way a webhook would (the message is stored and its conversation moves), unless DEMO_LIVE_MESSAGES is off.
Other organizations never get these."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import func, select

from blueprints.messaging.demo_live import LIVE_CUSTOMERS, demo_live_messages, send_live_message
from blueprints.messaging.models import Message
from core.db import db
from core.demo import DEMO_ORGANIZATION_ID
from core.environments import LIVE, SANDBOX, in_environment
from core.jobs import _periodic


def _count(app: Flask, environment: str = LIVE) -> int:
    with in_environment(app, environment):
        found = (
            select(func.count()).select_from(Message).where(Message.organization_id == DEMO_ORGANIZATION_ID)
        )
        return int(db.session.scalar(found) or 0)


def test_a_simulated_customer_writes_to_the_demo_number(app: Flask, runner: FlaskCliRunner) -> None:
    assert runner.invoke(args=["demo", "seed"]).exit_code == 0
    before = _count(app)
    with in_environment(app, LIVE):
        who = send_live_message(minute_of_day=3)
    assert who == LIVE_CUSTOMERS[3][1]
    assert _count(app) == before + 1
    with in_environment(app, LIVE):
        newest = db.session.scalars(
            select(Message)
            .where(Message.organization_id == DEMO_ORGANIZATION_ID)
            .order_by(Message.timestamp.desc())
        ).first()
        assert newest is not None and newest.direction == "incoming"
        assert newest.content == {"kind": "text", "text": LIVE_CUSTOMERS[3][2]}
    assert any(fn is demo_live_messages for fn, _minute in _periodic.values())  # runs once a minute


def test_nothing_without_the_demo_organization(app: Flask) -> None:
    with in_environment(app, SANDBOX):
        assert send_live_message(minute_of_day=0) is None


class TestSwitchedOff:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        return {**app_config, "DEMO_LIVE_MESSAGES": False}

    def test_demo_live_messages_0_turns_it_off(self, app: Flask, runner: FlaskCliRunner) -> None:
        assert runner.invoke(args=["demo", "seed"]).exit_code == 0
        before = _count(app)
        with in_environment(app, LIVE):
            assert send_live_message(minute_of_day=1) is None
        assert _count(app) == before
