"""Periodic housekeeping of messaging.

Hourly: statuses that arrived before their message (the backlog) wait for it for 7 days; a message that
never showed up by then was not ours (or was lost upstream), so the waiting statuses are dropped.
(``Idempotency-Key`` records expire in core: ``core.idempotency.purge_expired``.)

Every minute: sends left ``pending`` by a process that died are reconciled
(``sending.reconcile_stale``; also ``flask --app app messages reconcile``).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete

from blueprints.messaging.models import StatusBacklog
from blueprints.messaging.sending import reconcile_stale
from core.db import db, utcnow
from core.jobs import periodic

BACKLOG_TTL = timedelta(days=7)


def purge_expired() -> dict[str, int]:
    """Drop the waiting statuses older than :data:`BACKLOG_TTL`; the caller's unit of work commits."""
    backlog = db.session.execute(
        delete(StatusBacklog).where(StatusBacklog.created_at < utcnow() - BACKLOG_TTL)
    ).rowcount
    return {"waiting_statuses": int(backlog or 0)}


@periodic(minute="7")
def purge_expired_hourly() -> None:
    purge_expired()


@periodic(minute="*")
def reconcile_stale_sends() -> None:
    reconcile_stale()
