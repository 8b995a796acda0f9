"""Broadcasts: one approved WhatsApp template sent to up to 1,000 recipients per request, in the background.

Every recipient moves ``queued -> sending -> sent | failed`` (or ``canceled``) and is claimed with a
compare-and-set, so two workers never send to the same recipient. The claim is made durable before the
provider is called (checkpoint ``broadcast.progress``); that same checkpoint carries the previous
recipient's outcome, and the job's unit of work commits the last one. After a worker dies, the resumer looks
at each recipient left in ``sending``: if no message was created for it, nothing reached the provider and it
is queued again; if the message has the provider's id it was sent; if the message exists without one, the
outcome is unknown and the recipient is reported as ``unknown`` rather than sent twice. A broadcast given a
later ``scheduled_at`` waits as ``scheduled``: its job is queued for that time, the periodic resume starts
it too once due (a queue that lost the job), and it moves to ``sending`` by a compare-and-set when its time
has come; it can be canceled meanwhile. Sending is paced per broadcast at ``rate_per_second`` (Meta's
default throughput is 80 messages per second per number; ``BROADCAST_RATE_PER_SECOND``). The lease, claim
loop, pacing and hand-back are the core campaign engine's (``core/campaigns.py``); this module says what a
recipient is and how one is sent.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import func, select, update

from blueprints.audit import services as audit_log
from blueprints.channels.crypto import TokenDecryptionError
from blueprints.channels.models import OrganizationAddress
from blueprints.channels.providers import ProviderError, Template
from blueprints.channels.registry import provider_for
from blueprints.inbox.models import Broadcast, BroadcastRecipient
from blueprints.messaging import conversation_state
from blueprints.messaging import sending as messaging
from blueprints.messaging.models import Conversation, Message
from blueprints.messaging.threads import contact_address_for
from core import campaigns
from core.db import db, for_update, utcnow
from core.errors import ApiError
from core.events import publish
from core.jobs import job, periodic
from core.pagination import Page, paginate
from core.tenancy import find_for_org
from core.timeutil import as_utc

RECIPIENT_STATES = ("queued", "sending", "sent", "failed", "unknown", "canceled")
# A time this close to now is "now" (clocks and the form's minutes); further ahead is a schedule.
SCHEDULE_AT_ONCE = timedelta(seconds=60)
MAX_SCHEDULE_AHEAD = timedelta(days=90)


@dataclass(frozen=True)
class Recipient:
    to: str
    components: list[dict[str, Any]] | None = None  # this recipient's own parameters


@dataclass(frozen=True)
class BroadcastSpec:
    """What a broadcast sends: template components in the spec's shape, recipients as given."""

    organization_address: str
    meta_template_id: str
    recipients: list[Recipient]
    components: list[dict[str, Any]] = field(default_factory=list)
    name: str | None = None
    rate_per_second: int | None = None
    scheduled_at: datetime | None = None  # later than now: the broadcast waits until then (``scheduled``)


@dataclass
class BroadcastReport:
    """A broadcast with its count per recipient state and (for one broadcast) every recipient."""

    broadcast: Broadcast
    counts: dict[str, int]
    recipients: list[BroadcastRecipient] | None = None

    def __getattr__(self, name: str) -> Any:
        # the broadcast's own fields read through, so a response model reads the report like a row
        return getattr(self.broadcast, name)


def _rate(requested: int | None) -> int:
    return requested or int(current_app.config.get("BROADCAST_RATE_PER_SECOND", 80))


def _check_named(components: list[dict[str, Any]], where: str) -> None:
    for component in components:
        for parameter in component.get("parameters") or []:
            if parameter.get("type", "text") == "text" and not parameter.get("parameter_name"):
                raise ApiError(
                    400, messaging.PARAMETER_NAME_MISSING, code="template_parameter_missing", param=where
                )


def create_broadcast(
    organization_id: uuid.UUID, spec: BroadcastSpec, *, created_by: str | None = None
) -> BroadcastReport:
    """Store the broadcast and its recipients (duplicates after normalisation once) and start sending in
    the background once this unit of work commits."""
    address = messaging.sendable_address(organization_id, spec.organization_address, None)
    if address.service != "whatsapp":
        raise ApiError(
            400,
            "organization_address: broadcasts are sent from WhatsApp addresses",
            param="organization_address",
        )
    _check_named(spec.components, "components")
    recipients: dict[str, BroadcastRecipient] = {}
    for index, item in enumerate(spec.recipients):
        to = contact_address_for("whatsapp", item.to, f"recipients.{index}.to")
        if item.components is not None:
            _check_named(item.components, f"recipients.{index}.components")
        if to not in recipients:
            recipients[to] = BroadcastRecipient(
                organization_id=organization_id,
                position=len(recipients),
                contact_address=to,
                parameters=item.components or None,
            )
    template = _approved_template(address, spec.meta_template_id)
    now = utcnow()
    when = as_utc(spec.scheduled_at) if spec.scheduled_at is not None else None
    if when is not None and when < now - SCHEDULE_AT_ONCE:
        raise ApiError(400, "scheduled_at: must not be in the past", param="scheduled_at")
    if when is not None and when > now + MAX_SCHEDULE_AHEAD:
        raise ApiError(400, "scheduled_at: at most 90 days ahead", param="scheduled_at")
    scheduled = when is not None and when > now + SCHEDULE_AT_ONCE
    broadcast = Broadcast(
        organization_id=organization_id,
        name=spec.name,
        organization_address=address.address,
        meta_template_id=spec.meta_template_id,
        template_name=template.name,
        template_language=template.language,
        components=list(spec.components),
        status="scheduled" if scheduled else "sending",
        scheduled_at=when if scheduled else None,
        rate_per_second=_rate(spec.rate_per_second),
        total=len(recipients),
        created_by=created_by,
    )
    db.session.add(broadcast)
    db.session.flush()
    for recipient in recipients.values():
        recipient.broadcast_id = broadcast.id
    db.session.add_all(recipients.values())
    db.session.flush()
    broadcast_id = str(broadcast.id)
    audit_log.record(
        "broadcast.created",
        "broadcast",
        broadcast_id,
        [
            name
            for name in ("name", "organization_address", "meta_template_id", "components")
            if getattr(spec, name)
        ]
        + ["recipients"],
        organization_id=organization_id,
    )
    publish("broadcast.created", organization_id, {"broadcast_id": broadcast_id, "total": broadcast.total})
    if scheduled and when is not None:
        # the queue holds it until then; the periodic resume starts it too if the queue lost it
        run_broadcast_job.schedule((when - now).total_seconds(), str(organization_id), broadcast_id)
    else:
        run_broadcast_job.enqueue(str(organization_id), broadcast_id)
    return get_broadcast(organization_id, broadcast_id)


def _approved_template(address: OrganizationAddress, template_id: str) -> Template:
    """Read the template once at creation so a broadcast with a bad template never starts; every send
    reads it again (the messaging area's rule), so a template paused midway stops the rest."""
    provider = provider_for(address)
    provider.ids.check(template_id, "meta_template_id")
    try:
        template = provider.get_template(address, template_id)
    except (ProviderError, TokenDecryptionError):
        raise ApiError(
            404, messaging.TEMPLATE_LOOKUP_FAILED, code="template_not_found", param="meta_template_id"
        ) from None
    if template.status != "APPROVED":
        raise ApiError(
            400,
            f"Template {template.name} is not approved (status {template.status})",
            param="meta_template_id",
        )
    return template


def _broadcast_or_404(organization_id: uuid.UUID, broadcast_id: str) -> Broadcast:
    broadcast = find_for_org(Broadcast, broadcast_id, organization_id)
    if broadcast is None:
        raise ApiError(404, "Broadcast not found")
    return broadcast


def _counts(broadcast_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[str, int]]:
    counts: dict[uuid.UUID, Counter[str]] = {b: Counter() for b in broadcast_ids}
    if broadcast_ids:
        rows = db.session.execute(
            select(BroadcastRecipient.broadcast_id, BroadcastRecipient.state, func.count())
            .where(BroadcastRecipient.broadcast_id.in_(broadcast_ids))
            .group_by(BroadcastRecipient.broadcast_id, BroadcastRecipient.state)
        )
        for broadcast_id, state, count in rows:
            counts[broadcast_id][state] = count
    return {b: {state: c.get(state, 0) for state in RECIPIENT_STATES} for b, c in counts.items()}


def get_broadcast(organization_id: uuid.UUID, broadcast_id: str) -> BroadcastReport:
    broadcast = _broadcast_or_404(organization_id, broadcast_id)
    recipients = db.session.scalars(
        select(BroadcastRecipient)
        .where(BroadcastRecipient.broadcast_id == broadcast.id)
        .order_by(BroadcastRecipient.position)
    )
    return BroadcastReport(broadcast, _counts([broadcast.id])[broadcast.id], list(recipients))


def list_broadcasts(
    organization_id: uuid.UUID, *, status: str | None = None, skip: int = 0, take: int = 20
) -> Page[BroadcastReport]:
    statement = select(Broadcast).where(Broadcast.organization_id == organization_id)
    if status:
        statement = statement.where(Broadcast.status == status)
    page = paginate(statement.order_by(Broadcast.created_at.desc(), Broadcast.id), offset=skip, limit=take)
    counts = _counts([b.id for b in page.items])
    return Page([BroadcastReport(b, counts[b.id]) for b in page.items], page.total)


def cancel_broadcast(organization_id: uuid.UUID, broadcast_id: str) -> BroadcastReport:
    broadcast = _broadcast_or_404(organization_id, broadcast_id)
    if broadcast.status in ("completed", "canceled"):
        raise ApiError(409, f"Broadcast is already {broadcast.status}")
    broadcast.status = "canceled"
    broadcast.canceled_at = utcnow()
    db.session.execute(
        update(BroadcastRecipient)
        .where(BroadcastRecipient.broadcast_id == broadcast.id, BroadcastRecipient.state == "queued")
        .values(state="canceled", finished_at=utcnow())
    )
    audit_log.record(
        "broadcast.canceled", "broadcast", broadcast.id, ["status"], organization_id=organization_id
    )
    publish("broadcast.canceled", organization_id, {"broadcast_id": str(broadcast.id)})
    return get_broadcast(organization_id, broadcast_id)


# ---- sending ---------------------------------------------------------------------------------------------


def _send_one(broadcast: Broadcast, recipient: BroadcastRecipient) -> None:
    """Send to one claimed recipient and record the outcome (made durable by the next checkpoint)."""
    components = recipient.parameters if recipient.parameters is not None else broadcast.components
    send = messaging.TemplateSend(
        organization_address=broadcast.organization_address,
        to=recipient.contact_address,
        meta_template_id=broadcast.meta_template_id,
        components=list(components or []),
        do_not_pause=True,
    )
    started = recipient.attempted_at or utcnow()
    existed = _conversation_exists(broadcast, recipient.contact_address)
    try:
        message = send_template(broadcast.organization_id, send)
    except ApiError as error:
        # the messaging area stored what the provider refused (its own checkpoint) before raising
        sent = _message_for(broadcast, recipient.contact_address, started)
        recipient.state = "failed"
        recipient.error = {"message": error.message, "status": error.status}
        recipient.message_id = str(sent.id) if sent else None
        recipient.conversation_id = str(sent.conversation_id) if sent else None
        recipient.finished_at = utcnow()
        db.session.flush()
        _progressed(broadcast, recipient)
        return
    recipient.state = "sent"
    recipient.message_id = str(message.id)
    recipient.conversation_id = str(message.conversation_id)
    recipient.finished_at = utcnow()
    if not existed:
        _mark_opened(broadcast, message.conversation_id)
    db.session.flush()
    _progressed(broadcast, recipient)


def _progressed(broadcast: Broadcast, recipient: BroadcastRecipient) -> None:
    """One recipient's outcome, to the organization's room once it is committed (the next checkpoint):
    the desk's progress view refreshes on it. Delivered and read arrive as the message's own
    ``message.updated``, whose id the view knows from this event's ``message_id``."""
    publish(
        "broadcast.progress",
        broadcast.organization_id,
        {
            "broadcast_id": str(broadcast.id),
            "position": recipient.position,
            "state": recipient.state,
            "message_id": recipient.message_id,
        },
    )


def send_template(organization_id: uuid.UUID, send: messaging.TemplateSend) -> Message:
    """The messaging area's template send: the same rules as a single send (kept as a seam for tests)."""
    return messaging.send_template(organization_id, send)


def _conversation_exists(broadcast: Broadcast, contact_address: str) -> bool:
    return (
        db.session.scalar(
            select(Conversation.id).where(
                Conversation.organization_id == broadcast.organization_id,
                Conversation.organization_address == broadcast.organization_address,
                Conversation.contact_address == contact_address,
                Conversation.service == "whatsapp",
            )
        )
        is not None
    )


def _mark_opened(broadcast: Broadcast, conversation_id: uuid.UUID) -> None:
    """A conversation that this send created is marked as opened by the broadcast."""
    conversation = find_for_org(Conversation, conversation_id, broadcast.organization_id)
    if conversation is not None:
        conversation_state.mark_opened_by_broadcast(conversation, broadcast.id)


def _message_for(broadcast: Broadcast, contact_address: str, since: datetime) -> Message | None:
    return db.session.scalar(
        select(Message)
        .where(
            Message.organization_id == broadcast.organization_id,
            Message.organization_address == broadcast.organization_address,
            Message.contact_address == contact_address,
            Message.direction == "outgoing",
            Message.template_name == broadcast.template_name,
            Message.created_at >= since - timedelta(seconds=1),
        )
        .order_by(Message.created_at)
        .limit(1)
    )


def recover_in_flight(broadcast: Broadcast) -> dict[str, int]:
    """Settle recipients a dead worker left in ``sending`` (see the module's docstring)."""
    outcome: Counter[str] = Counter()
    stuck = db.session.scalars(
        select(BroadcastRecipient).where(
            BroadcastRecipient.broadcast_id == broadcast.id, BroadcastRecipient.state == "sending"
        )
    )
    for recipient in list(stuck):
        message = _message_for(
            broadcast, recipient.contact_address, recipient.attempted_at or broadcast.created_at
        )
        if message is None:
            recipient.state, recipient.attempted_at = "queued", None
        elif message.external_id:
            recipient.state, recipient.message_id = "sent", str(message.id)
            recipient.conversation_id = str(message.conversation_id)
            recipient.finished_at = utcnow()
        elif message.current_status == "failed":
            recipient.state, recipient.message_id = "failed", str(message.id)
            recipient.error = (message.status or {}).get("error")
            recipient.finished_at = utcnow()
        else:
            recipient.state, recipient.message_id = "unknown", str(message.id)
            recipient.error = {"message": "the worker stopped while this message was being sent"}
            recipient.finished_at = utcnow()
        outcome[recipient.state] += 1
    db.session.flush()
    return dict(outcome)


class _BroadcastCampaign:
    """A broadcast as the core campaign engine sees it (core/campaigns.py): one attempt per recipient,
    one at a time, ``queued -> sending -> sent | failed | unknown``; due as soon as queued."""

    def __init__(self, broadcast: Broadcast) -> None:
        self.broadcast = broadcast
        self.lease = campaigns.Lease(Broadcast.__table__, broadcast.id)

    def is_active(self) -> bool:
        return (
            db.session.scalar(select(Broadcast.status).where(Broadcast.id == self.broadcast.id)) == "sending"
        )

    def recover(self) -> dict[str, int]:
        return recover_in_flight(self.broadcast)

    def claim(self, limit: int, now: datetime, max_attempts: int) -> list[BroadcastRecipient]:
        """The next queued recipients, in order, moved to ``sending`` (the engine's checkpoint makes the
        claim durable before the provider is called)."""
        ids = db.session.scalars(
            for_update(
                select(BroadcastRecipient.id)
                .where(
                    BroadcastRecipient.broadcast_id == self.broadcast.id, BroadcastRecipient.state == "queued"
                )
                .order_by(BroadcastRecipient.position)
                .limit(limit),
                skip_locked=True,
            )
        ).all()
        if not ids:
            return []
        db.session.execute(
            update(BroadcastRecipient)
            .where(BroadcastRecipient.id.in_(ids), BroadcastRecipient.state == "queued")
            .values(state="sending", attempted_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return list(
            db.session.scalars(
                select(BroadcastRecipient)
                .where(BroadcastRecipient.id.in_(ids), BroadcastRecipient.state == "sending")
                .order_by(BroadcastRecipient.position)
                .execution_options(populate_existing=True)
            )
        )

    def act(self, recipient: BroadcastRecipient) -> campaigns.Outcome:
        _send_one(self.broadcast, recipient)  # records sent or failed itself: a broadcast never retries
        return campaigns.Outcome.DONE

    def record(
        self, recipient: BroadcastRecipient, outcome: campaigns.Outcome, retry_at: datetime | None
    ) -> None:
        pass  # _send_one stored the outcome

    def attempts(self, recipient: BroadcastRecipient) -> int:
        return 1

    def count_live(self) -> int:
        return int(
            db.session.scalar(
                select(func.count())
                .select_from(BroadcastRecipient)
                .where(
                    BroadcastRecipient.broadcast_id == self.broadcast.id,
                    BroadcastRecipient.state == "sending",
                )
            )
            or 0
        )

    def next_due(self) -> datetime | None:
        return None  # a queued recipient is due at once: the claim found none

    def complete(self) -> None:
        _complete(self.broadcast)


def run_broadcast(organization_id: uuid.UUID, broadcast_id: str) -> BroadcastReport:
    """Send to every queued recipient on the core campaign engine; safe to run again (or concurrently) at
    any time: only the holder of the broadcast's lease sends, and recipients left ``sending`` are settled
    only by a worker that took over an expired lease (their worker is gone, not merely slow)."""
    broadcast = _broadcast_or_404(organization_id, broadcast_id)
    if broadcast.status == "scheduled" and not _start_if_due(broadcast):
        return get_broadcast(organization_id, broadcast_id)  # not yet: its time's job starts it
    policy = campaigns.Policy(checkpoint="broadcast.progress", rate_per_second=broadcast.rate_per_second)
    campaigns.run(_BroadcastCampaign(broadcast), policy)
    return get_broadcast(organization_id, broadcast_id)


def _start_if_due(broadcast: Broadcast) -> bool:
    """A scheduled broadcast whose time has come moves to ``sending`` (a compare-and-set: of two workers
    starting it, one does; the campaign's lease keeps the other from sending too)."""
    if broadcast.scheduled_at is None or as_utc(broadcast.scheduled_at) > utcnow() + SCHEDULE_AT_ONCE:
        return False
    started = db.session.execute(
        update(Broadcast)
        .where(Broadcast.id == broadcast.id, Broadcast.status == "scheduled")
        .values(status="sending")
        .execution_options(synchronize_session=False)
    )
    db.session.refresh(broadcast)
    if started.rowcount:
        publish("broadcast.started", broadcast.organization_id, {"broadcast_id": str(broadcast.id)})
    return broadcast.status == "sending"


def _complete(broadcast: Broadcast) -> None:
    pending = db.session.scalar(
        select(func.count())
        .select_from(BroadcastRecipient)
        .where(
            BroadcastRecipient.broadcast_id == broadcast.id,
            BroadcastRecipient.state.in_(("queued", "sending")),
        )
    )
    if pending:
        return  # another worker is still sending
    done = db.session.execute(
        update(Broadcast)
        .where(Broadcast.id == broadcast.id, Broadcast.status == "sending")
        .values(status="completed", completed_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if done.rowcount:
        publish("broadcast.completed", broadcast.organization_id, {"broadcast_id": str(broadcast.id)})


def resume_stalled(older_than_seconds: int = 60) -> list[str]:
    """Re-enqueue broadcasts still ``sending`` whose last recipient activity is older than the limit
    (their worker died). Run by ``flask --app app broadcasts resume`` and periodically by the queue."""
    cutoff = utcnow() - timedelta(seconds=older_than_seconds)
    last_activity = (
        select(
            BroadcastRecipient.broadcast_id,
            func.max(func.coalesce(BroadcastRecipient.finished_at, BroadcastRecipient.attempted_at)).label(
                "at"
            ),
        )
        .group_by(BroadcastRecipient.broadcast_id)
        .subquery()
    )
    rows = db.session.execute(
        select(Broadcast.organization_id, Broadcast.id)
        .outerjoin(last_activity, last_activity.c.broadcast_id == Broadcast.id)
        .where(Broadcast.status == "sending")
        .where((last_activity.c.at.is_(None)) | (last_activity.c.at < cutoff))
        .where(Broadcast.updated_at < cutoff)
    ).all()
    # scheduled ones whose time has come (their queued job lost, or the queue restarted without it)
    due = db.session.execute(
        select(Broadcast.organization_id, Broadcast.id).where(
            Broadcast.status == "scheduled", Broadcast.scheduled_at <= utcnow()
        )
    ).all()
    rows = [*rows, *due]
    for organization_id, broadcast_id in rows:
        run_broadcast_job.enqueue(str(organization_id), str(broadcast_id))
    return [str(b) for _, b in rows]


@job(retries=0)
def run_broadcast_job(organization_id: str, broadcast_id: str) -> None:
    run_broadcast(uuid.UUID(organization_id), broadcast_id)


@periodic(minute="*")
def resume_stalled_broadcasts() -> None:
    resume_stalled(older_than_seconds=60)
