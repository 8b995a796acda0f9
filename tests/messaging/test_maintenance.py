"""Hourly purges: statuses whose message never came (messaging), expired idempotency keys (core)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from flask import Flask
from sqlalchemy import select

from blueprints.messaging.maintenance import purge_expired
from blueprints.messaging.models import StatusBacklog
from core.db import db, utcnow
from tests.conftest import Org


def test_purge_drops_only_the_statuses_that_waited_too_long(app: Flask, org: Org) -> None:
    organization_id = uuid.UUID(org.id)
    now = utcnow()
    with app.app_context():
        db.session.add_all(
            [
                StatusBacklog(
                    organization_id=organization_id,
                    external_id="wamid.old",
                    status="delivered",
                    timestamp=now,
                    created_at=now - timedelta(days=8),
                ),
                StatusBacklog(
                    organization_id=organization_id,
                    external_id="wamid.new",
                    status="delivered",
                    timestamp=now,
                    created_at=now - timedelta(days=1),
                ),
            ]
        )
        db.session.commit()
        assert purge_expired() == {"waiting_statuses": 1}
        db.session.commit()
        assert list(db.session.scalars(select(StatusBacklog.external_id))) == ["wamid.new"]
        assert purge_expired() == {"waiting_statuses": 0}
