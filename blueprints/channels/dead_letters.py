"""Dead letters: inbound items that could not be stored, kept for people to read instead of failing the
delivery they came in.

Meta retries a delivery answered 5xx for seven days, so one bad item used to block every other message of
its POST for a week. Now each message or status is stored on its own, and an item that cannot be (refused
at the edge by ``inbound.parse``, or failing in storage) is recorded here; the delivery is answered 200
once everything is recorded. An organization reads its dead letters at ``GET {msg}/dead-letters``;
items whose organization is unknown are listed by ``flask --app app webhooks dead-letters``. Rows older
than :data:`RETENTION` are deleted by an hourly sweep.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import asdict, is_dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select

from blueprints.channels.models import DeadLetter, OrganizationAddress
from core.db import db, utcnow
from core.jobs import periodic
from core.pagination import Page, paginate

log = logging.getLogger(__name__)

RAW_LIMIT = 16_384  # characters of the raw item kept; Meta's items are well under 4 KB
REASON_LIMIT = 500
RETENTION = timedelta(days=30)
META = "webhook/meta"


def raw_text(raw: Any) -> tuple[str, bool]:
    """The item as ASCII JSON text (NUL and lone surrogates stay escapes), and whether it was cut."""
    if is_dataclass(raw) and not isinstance(raw, type):
        raw = asdict(raw)
    try:
        text = json.dumps(raw, ensure_ascii=True, default=str)
    except (ValueError, TypeError, RecursionError):
        text = ascii(raw)[:RAW_LIMIT]
    if len(text) > RAW_LIMIT:
        return text[:RAW_LIMIT], True
    return text, False


def organization_for(service: str | None, organization_address: str | None) -> uuid.UUID | None:
    if not service or not organization_address:
        return None
    return db.session.scalar(
        select(OrganizationAddress.organization_id).where(
            OrganizationAddress.service == service, OrganizationAddress.address == organization_address
        )
    )


def record(
    reason: str,
    raw: Any,
    *,
    source: str = META,
    service: str | None = None,
    organization_address: str | None = None,
) -> DeadLetter:
    """Add a dead letter (flushed; the caller makes it durable)."""
    text, truncated = raw_text(raw)
    address = (organization_address or "")[:64] or None
    letter = DeadLetter(
        id=uuid.uuid4(),
        organization_id=organization_for(service, address),
        received_at=utcnow(),
        source=source,
        service=service,
        organization_address=address,
        reason=reason[:REASON_LIMIT],
        raw=text,
        raw_truncated=truncated,
    )
    db.session.add(letter)
    db.session.flush()
    log.warning(
        "dead letter %s (%s %s, organization %s): %s",
        letter.id,
        service,
        address,
        letter.organization_id,
        letter.reason,
    )
    return letter


def list_for_organization(organization_id: uuid.UUID, *, skip: int, take: int) -> Page[DeadLetter]:
    """An organization's dead letters, newest first."""
    statement = (
        select(DeadLetter)
        .where(DeadLetter.organization_id == organization_id)
        .order_by(DeadLetter.received_at.desc(), DeadLetter.id)
    )
    return paginate(statement, offset=skip, limit=take)


def list_for_operators(
    *, organization_id: uuid.UUID | None = None, unassigned: bool = False, limit: int = 100
) -> list[DeadLetter]:
    """Every dead letter (or one organization's, or those without an organization), newest first."""
    statement = select(DeadLetter).order_by(DeadLetter.received_at.desc(), DeadLetter.id).limit(limit)
    if unassigned:
        statement = statement.where(DeadLetter.organization_id.is_(None))
    elif organization_id is not None:
        statement = statement.where(DeadLetter.organization_id == organization_id)
    return list(db.session.scalars(statement))


def purge_expired() -> int:
    """Delete dead letters older than :data:`RETENTION`; the caller's unit of work commits."""
    deleted = db.session.execute(delete(DeadLetter).where(DeadLetter.received_at < utcnow() - RETENTION))
    return int(deleted.rowcount or 0)


@periodic(minute="17")
def purge_expired_hourly() -> None:
    purge_expired()
