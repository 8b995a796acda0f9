"""The raw intake of provider deliveries: table ``inbound_deliveries``, written in one statement.

Meta's advice is to answer a delivery fast and do the work afterwards (research notes, "Delivery, retries
and ordering"). A verified delivery is stored here exactly as it came (the raw bytes the signature covers,
and the headers an audit needs) with one INSERT, committed by the request's boundary, and answered 200;
:mod:`blueprints.channels.processor` drains the stored deliveries in batches. A row is *pending* until
``processed_at`` is set, in the same commit as the messages and statuses it brought, so a crash at any
point leaves it pending and it is processed again; the provider message id (unique per organization) makes
that second pass store nothing twice.

Which path a delivery takes (``INGEST_MODE``):

- ``deferred`` (default with a job queue): stored here, answered ``{"received": true, "queued": true}``,
  drained in batches by the job queue (``JOBS_MODE=redis``: ``flask jobs worker``) or, in the embedded
  mode (SQLite, no Redis), by a drainer thread of the process that took it, right after the commit;
- ``inline`` (the default with ``JOBS_MODE=inline``, as in tests): parsed and stored inside the request,
  one item at a time (``delivery.store_delivery``), answered with what was stored; nothing is kept here.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from flask import Flask
from sqlalchemy import Index, LargeBinary, String, insert
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, UUIDPrimaryKeyMixin, db, utcnow

INLINE = "inline"
DEFERRED = "deferred"
MODES = (INLINE, DEFERRED)
# What an audit of a delivery needs besides its body: the signature it came with, who sent it and how.
AUDIT_HEADERS = ("X-Hub-Signature-256", "Content-Type", "User-Agent", "X-Forwarded-For")
ERROR_LIMIT = 500


class InboundDelivery(UUIDPrimaryKeyMixin, db.Model):
    """One provider delivery as received. ``body`` is the raw request body (the bytes the signature was
    computed over); ``attempts`` counts the batches that took it (a failed one records ``error``)."""

    __tablename__ = "inbound_deliveries"
    # the processor's claim: pending rows (processed_at IS NULL) oldest first
    __table_args__ = (Index("ix_inbound_deliveries_pending", "processed_at", "received_at"),)

    source: Mapped[str] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    headers: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    processed_at: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(default=0)
    error: Mapped[str | None] = mapped_column(String(ERROR_LIMIT))


def ingest_mode(app: Flask) -> str:
    """``INGEST_MODE`` when set; otherwise ``deferred`` on the production path (``REDIS_URL`` set, jobs not
    inline: workers drain in batches) and ``inline`` on the embedded one (one process on a laptop: a
    message is readable through the API as soon as its webhook is answered)."""
    configured = app.config.get("INGEST_MODE")
    if configured:
        if configured not in MODES:
            raise ValueError(f"INGEST_MODE must be one of {', '.join(MODES)}, not {configured!r}")
        return str(configured)
    if app.config.get("JOBS_MODE") == "inline" or not app.config.get("REDIS_URL"):
        return INLINE
    return DEFERRED


_INSERT = insert(InboundDelivery.__table__)


def store(body: bytes, headers: dict[str, str], source: str) -> uuid.UUID:
    """One INSERT of the delivery (the caller's unit of work commits it); its id."""
    delivery_id = uuid.uuid4()
    # A Core INSERT with bound parameters: its compiled form is cached, where values given to an ORM
    # insert are part of the statement and made it be keyed and compiled again for every delivery.
    db.session.execute(
        _INSERT,
        {
            "id": delivery_id,
            "source": source,
            "received_at": utcnow(),
            "body": body,
            "headers": {name: headers[name] for name in AUDIT_HEADERS if name in headers},
            "attempts": 0,
        },
    )
    return delivery_id
