"""Hourly housekeeping of the messaging records that only matter for a while.

- Idempotency keys are honoured for 24 hours (``IDEMPOTENCY_TTL``); older records are deleted.
- Statuses that arrived before their message (the backlog) wait for it for 7 days; a message that never
  showed up by then was not ours (or was lost upstream), so the waiting statuses are dropped.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete

from blueprints.messaging.models import IdempotencyRecord, StatusBacklog
from blueprints.messaging.sending import IDEMPOTENCY_TTL
from core.db import db, utcnow
from core.jobs import periodic

BACKLOG_TTL = timedelta(days=7)


def purge_expired() -> dict[str, int]:
    now = utcnow()
    keys = db.session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < now - IDEMPOTENCY_TTL)
    ).rowcount
    backlog = db.session.execute(
        delete(StatusBacklog).where(StatusBacklog.created_at < now - BACKLOG_TTL)
    ).rowcount
    db.session.commit()
    return {"idempotency_keys": int(keys or 0), "waiting_statuses": int(backlog or 0)}


@periodic(minute="7")
def purge_expired_hourly() -> None:
    purge_expired()
