"""Hourly purge: expired idempotency keys and statuses whose message never came."""

from __future__ import annotations

import uuid
from datetime import timedelta

from flask import Flask
from sqlalchemy import select

from blueprints.messaging.maintenance import purge_expired
from blueprints.messaging.models import IdempotencyRecord, StatusBacklog
from core.db import db, utcnow
from tests.conftest import Org


def test_purge_drops_only_what_expired(app: Flask, org: Org) -> None:
    organization_id = uuid.UUID(org.id)
    now = utcnow()
    with app.app_context():
        db.session.add_all(
            [
                IdempotencyRecord(
                    organization_id=organization_id,
                    key="old",
                    request_hash="h",
                    created_at=now - timedelta(hours=25),
                ),
                IdempotencyRecord(
                    organization_id=organization_id,
                    key="fresh",
                    request_hash="h",
                    created_at=now - timedelta(hours=23),
                ),
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
        assert purge_expired() == {"idempotency_keys": 1, "waiting_statuses": 1}
        assert list(db.session.scalars(select(IdempotencyRecord.key))) == ["fresh"]
        assert list(db.session.scalars(select(StatusBacklog.external_id))) == ["wamid.new"]
        assert purge_expired() == {"idempotency_keys": 0, "waiting_statuses": 0}
