"""Agent notifications: an AI agent's configuration names, per trigger, who hears of it
(``notifications = {trigger: {email: [...], whatsapp: [...], webhook: url}}``; triggers ``end_of_call`` and
the tool names). A trigger becomes one notification (an id and an envelope) and one delivery row per
target, in the caller's unit of work; the job ``send_notification`` sends each after the commit.

Retries: a failed attempt that may succeed later (a connection error, a timeout, a 5xx or 429 answer, an
SMTP 4xx) is retried after ``NOTIFICATIONS_RETRY_BASE_SECONDS`` * 2^(attempt-1) (30 s, 1 min, 2 min, 4 min,
8 min by default) until ``NOTIFICATIONS_MAX_ATTEMPTS`` (6) attempts; a permanent one (an SMTP 5xx, an
address refused, no WhatsApp window) fails at once. The due time is stored on the row, and the job acts
only on a due delivery: the inline queue of the tests (which runs scheduled jobs at once) does nothing
early, and the minute sweep (:func:`retry_due`) queues due deliveries whose job was lost.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import select

from blueprints.members.models import AgentConfig, Member
from blueprints.members.services.members import find_member
from blueprints.notifications import senders
from blueprints.notifications.models import OPEN_STATUSES, NotificationDelivery
from blueprints.organizations.models import Organization
from core.db import db, isoformat, utcnow
from core.errors import ApiError, not_found
from core.events import DomainEvent, publish
from core.jobs import job, periodic
from core.pagination import Page, paginate
from core.tenancy import find_for_org

log = logging.getLogger(__name__)

# The clock of the schedule (tests move it, as the telecom webhooks' tests do).
clock: Callable[[], datetime] = utcnow

DEFAULT_MAX_ATTEMPTS = 6
DEFAULT_RETRY_BASE_SECONDS = 30.0
# The sweep leaves a due delivery to its own scheduled job for this long, so the two never race.
SWEEP_GRACE = timedelta(minutes=2)
# A tool's arguments and result travel in the payload; beyond this size they are cut (as text).
MAX_DATA_CHARS = 16_000


def max_attempts() -> int:
    return int(current_app.config.get("NOTIFICATIONS_MAX_ATTEMPTS") or DEFAULT_MAX_ATTEMPTS)


def retry_delay(attempts: int) -> timedelta:
    """The wait after the ``attempts``-th failed attempt: base * 2^(attempts-1)."""
    base = float(current_app.config.get("NOTIFICATIONS_RETRY_BASE_SECONDS") or DEFAULT_RETRY_BASE_SECONDS)
    return timedelta(seconds=base * (2 ** max(attempts - 1, 0)))


# ---------------------------------------------------------------------------------------------- triggers


def targets_of(notifications: dict[str, Any] | None, trigger: str) -> list[tuple[str, str]]:
    """``[(channel, target), ...]`` configured for ``trigger``, in channel order, duplicates dropped."""
    configured = (notifications or {}).get(trigger) or {}
    found: list[tuple[str, str]] = []
    for address in configured.get("email") or []:
        found.append(("email", str(address)))
    for number in configured.get("whatsapp") or []:
        found.append(("whatsapp", str(number)))
    if configured.get("webhook"):
        found.append(("webhook", str(configured["webhook"])))
    return list(dict.fromkeys(found))


def _bounded(data: dict[str, Any]) -> dict[str, Any]:
    """The trigger's data as plain JSON (instants and ids as text), each value cut to
    :data:`MAX_DATA_CHARS` of JSON text when it is larger."""
    bounded: dict[str, Any] = {}
    for key, value in data.items():
        text = json.dumps(value, ensure_ascii=False, default=str)
        bounded[str(key)] = json.loads(text) if len(text) <= MAX_DATA_CHARS else text[:MAX_DATA_CHARS] + "…"
    return bounded


def _agent(organization_id: uuid.UUID, agent_id: str) -> tuple[Member, AgentConfig | None] | None:
    member = find_member(organization_id, agent_id)
    if member is None or not member.ai:
        return None
    config = db.session.scalar(select(AgentConfig).where(AgentConfig.member_pk == member.pk))
    return member, config


def _organization_name(organization_id: uuid.UUID) -> str | None:
    return db.session.scalar(select(Organization.name).where(Organization.id == organization_id))


def envelope(
    organization_id: uuid.UUID, member: Member, trigger: str, payload: dict[str, Any], notification_id: str
) -> dict[str, Any]:
    """What every target receives (the webhook's JSON body; e-mail and WhatsApp texts are written from
    it): who, what, where, and the trigger's own data (a tool's ``arguments`` and ``result``)."""
    data = _bounded(dict(payload))
    return {
        "id": notification_id,
        "type": "agent.notification",
        "trigger": trigger,
        "organization_id": str(organization_id),
        "organization_name": _organization_name(organization_id),
        "agent": {"id": member.id, "name": member.name},
        "conversation_id": data.get("conversation_id") or data.get("call_id"),
        "contact_address": data.get("contact_address"),
        "occurred_at": isoformat(clock()),
        "data": data,
    }


def notify(
    organization_id: uuid.UUID, agent_id: str, trigger: str, payload: dict[str, Any]
) -> list[NotificationDelivery]:
    """One delivery per target the agent's configuration names for ``trigger``, each sent by a job after
    the caller's commit. Nothing configured (or not an AI agent): no delivery. The voice area calls this
    with ``end_of_call`` and ``{call_id, conversation_id?, contact_address, duration_seconds, ...}``;
    the AI runtime's ``ai.tool_called`` event reaches it through :func:`on_tool_called`."""
    found = _agent(organization_id, agent_id)
    if found is None:
        return []
    member, config = found
    targets = targets_of(config.notifications if config else None, trigger)
    if not targets:
        return []
    notification_id = f"ntf_{uuid.uuid4().hex}"
    body = envelope(organization_id, member, trigger, payload, notification_id)
    now = clock()
    deliveries = [
        NotificationDelivery(
            id=uuid.uuid4(),
            organization_id=organization_id,
            agent_id=member.id,
            agent_name=member.name,
            notification_id=notification_id,
            trigger=trigger,
            channel=channel,
            target=target,
            status="pending",
            attempts=0,
            next_attempt_at=now,
            payload=body,
            created_at=now,
            updated_at=now,
        )
        for channel, target in targets
    ]
    db.session.add_all(deliveries)
    db.session.flush()
    for delivery in deliveries:
        send_notification.enqueue(str(organization_id), str(delivery.id))
    return deliveries


def on_tool_called(event: DomainEvent) -> None:
    """``ai.tool_called`` (after its commit): the tool's name is the trigger. The deliveries are written
    by a job of their own, since the unit of work that published the event has already committed."""
    data = dict(event.data or {})
    agent_id, tool = data.get("agent_id"), data.get("tool")
    if not agent_id or not tool:
        return
    payload = {
        key: data.get(key)
        for key in ("conversation_id", "contact_address", "tool", "arguments", "result", "run_id")
        if key in data
    }
    notify_job.enqueue(event.organization_id, str(agent_id), str(tool), payload)


# ------------------------------------------------------------------------------------------------ sending


@dataclass(frozen=True)
class Attempted:
    delivery: NotificationDelivery
    outcome: senders.Outcome | None  # None: nothing was due


def _send(delivery: NotificationDelivery, now: datetime) -> senders.Outcome:
    try:
        if delivery.channel == "email":
            return senders.send_email(delivery.target, delivery.payload)
        if delivery.channel == "whatsapp":
            return senders.send_whatsapp(delivery.organization_id, delivery.target, delivery.payload, now)
        if delivery.channel == "webhook":
            return senders.post_webhook(
                delivery.organization_id, delivery.target, delivery.payload, str(delivery.id)
            )
    except Exception as error:  # a bug in a sender must end as a recorded failure, not a lost delivery
        log.exception("notification delivery %s failed unexpectedly", delivery.id)
        return senders.Outcome(False, f"internal error: {type(error).__name__}", retry=True)
    return senders.Outcome(False, f"unknown channel {delivery.channel!r}")


def attempt(organization_id: uuid.UUID, delivery_id: uuid.UUID | str) -> Attempted | None:
    """Send the delivery if it is open and due, and record the outcome; a no-op otherwise, so a duplicate
    job is harmless. None when the delivery is gone (its organization was deleted)."""
    delivery = find_for_org(NotificationDelivery, delivery_id, organization_id)
    if delivery is None:
        return None
    now = clock()
    due = delivery.status in OPEN_STATUSES and (
        delivery.next_attempt_at is None or delivery.next_attempt_at <= now
    )
    if not due:
        return Attempted(delivery, None)
    # Nothing is written before the send: on SQLite a pending write would hold the database's write lock
    # for as long as the SMTP server or the receiver takes to answer.
    outcome = _send(delivery, now)
    now = clock()
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.last_response_code = outcome.code
    delivery.updated_at = now
    if outcome.ok:
        delivery.status, delivery.sent_at, delivery.next_attempt_at, delivery.last_error = (
            "sent",
            now,
            None,
            None,
        )
    elif outcome.skipped:
        delivery.status, delivery.next_attempt_at, delivery.last_error = "skipped", None, outcome.error
    elif outcome.retry and delivery.attempts < max_attempts():
        delay = retry_delay(delivery.attempts)
        delivery.status, delivery.next_attempt_at = "retrying", now + delay
        delivery.last_error = (outcome.error or "")[:500]
        send_notification.schedule(delay.total_seconds(), str(organization_id), str(delivery.id))
    else:
        delivery.status, delivery.next_attempt_at = "failed", None
        delivery.last_error = (outcome.error or "")[:500]
    db.session.flush()
    publish(
        "notification.delivery.updated",
        organization_id,
        {
            "id": str(delivery.id),
            "agent_id": delivery.agent_id,
            "trigger": delivery.trigger,
            "channel": delivery.channel,
            "status": delivery.status,
            "attempts": delivery.attempts,
        },
    )
    return Attempted(delivery, outcome)


def retry_due(now: datetime | None = None, grace: timedelta = SWEEP_GRACE) -> int:
    """Queue every open delivery overdue by more than ``grace`` (its job was lost: a restarted embedded
    queue, a flushed Redis). Returns how many were queued."""
    cutoff = (now or clock()) - grace
    rows = db.session.execute(
        select(NotificationDelivery.organization_id, NotificationDelivery.id)
        .where(
            NotificationDelivery.status.in_(OPEN_STATUSES),
            NotificationDelivery.next_attempt_at <= cutoff,
        )
        .order_by(NotificationDelivery.next_attempt_at)
        .limit(500)
    ).all()
    for organization_id, delivery_id in rows:
        send_notification.enqueue(str(organization_id), str(delivery_id))
    return len(rows)


# ------------------------------------------------------------------------------------------- the log


@dataclass(frozen=True)
class DeliveryFilters:
    status: str | None = None
    trigger: str | None = None
    channel: str | None = None
    offset: int = 0
    limit: int = 20


def _ai_member(organization_id: uuid.UUID, agent_id: str) -> Member:
    member = find_member(organization_id, agent_id)
    if member is None or not member.ai:
        raise not_found("AI agent")
    return member


def list_deliveries(
    organization_id: uuid.UUID, agent_id: str, filters: DeliveryFilters
) -> Page[NotificationDelivery]:
    """The agent's deliveries, newest first (404 when the id names no AI agent of the organization)."""
    member = _ai_member(organization_id, agent_id)
    statement = select(NotificationDelivery).where(
        NotificationDelivery.organization_id == organization_id, NotificationDelivery.agent_id == member.id
    )
    for name in ("status", "trigger", "channel"):
        value = getattr(filters, name)
        if value is not None:
            statement = statement.where(getattr(NotificationDelivery, name) == value)
    statement = statement.order_by(NotificationDelivery.created_at.desc(), NotificationDelivery.id.desc())
    return paginate(statement, offset=filters.offset, limit=filters.limit)


def get_delivery(organization_id: uuid.UUID, agent_id: str, delivery_id: str) -> NotificationDelivery:
    member = _ai_member(organization_id, agent_id)
    delivery = find_for_org(NotificationDelivery, delivery_id, organization_id)
    if delivery is None or delivery.agent_id != member.id:
        raise not_found("Notification delivery")
    return delivery


def request_retry(organization_id: uuid.UUID, agent_id: str, delivery_id: str) -> NotificationDelivery:
    """Send a delivery that failed (or was skipped) again: it is reopened and queued now, with a fresh
    attempt budget. A delivery already sent is 409: it would reach its target twice."""
    delivery = get_delivery(organization_id, agent_id, delivery_id)
    if delivery.status == "sent":
        raise ApiError(409, "The notification was already delivered")
    now = clock()
    delivery.status, delivery.next_attempt_at, delivery.updated_at = "pending", now, now
    delivery.attempts = 0
    db.session.flush()
    send_notification.enqueue(str(organization_id), str(delivery.id))
    return delivery


# ------------------------------------------------------------------------------------------------- jobs
# Declared here, beside the verbs they run and that queue them, under the names they had in the former
# jobs module (a job queued before an upgrade is found by its name).


@job(retries=2, retry_delay=5, name="blueprints.notifications.jobs.notify_job")
def notify_job(organization_id: str, agent_id: str, trigger: str, payload: dict[str, Any]) -> int:
    """The deliveries of one trigger heard as an event (``ai.tool_called``); returns how many."""
    return len(notify(uuid.UUID(organization_id), agent_id, trigger, payload))


# retries=0: the delivery's own schedule retries (exponential backoff); the sweep catches lost jobs
@job(retries=0, name="blueprints.notifications.jobs.send_notification")
def send_notification(organization_id: str, delivery_id: str) -> str | None:
    attempted = attempt(uuid.UUID(organization_id), delivery_id)
    return attempted.delivery.status if attempted else None


@periodic(minute="*", name="blueprints.notifications.jobs.retry_due_notifications")
def retry_due_notifications() -> None:
    retry_due()
