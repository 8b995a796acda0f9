"""Storing what a webhook delivery (or the simulator) brought: messages, statuses, read watermarks.

Channels hand the events over through ``channels.inbound.inbound_events``, one item of a delivery at a
time; :func:`store_item` (connected in ``init_app``) stores an item and makes it durable (checkpoint
``webhook.item``), so a failure in one item never drops the items stored before it. Deliveries are
at-least-once and out of order, so:
- a provider message id already stored (or repeated inside the delivery) is counted as a duplicate;
- statuses only move forward and keep their timestamps (``threads.apply_status``), merged under a lock
  on the message row so concurrent deliveries for one message take turns (taken with the rows of every
  other message the delivery or batch changes, in one statement by id: ``threads``' lock order);
- a status for a message not stored yet waits in the backlog; whichever of the send and this delivery
  commits last applies it (:func:`store_item` looks again after its commit);
- two deliveries racing on the same message meet the unique constraint: the loser rolls back and runs
  again, and then finds the message already there.
The whole delivery costs a fixed number of queries (chunks of 500 ids), not one per message.

Stored deliveries are drained in batches (``channels.processor``): :func:`store_batch` (the
``inbound_batch`` receiver) stores every event of a batch of deliveries in the same fixed number of
queries, without committing (the processor commits once per batch and retries the batch when it meets a
concurrent writer), and :func:`settle_batch` (``inbound_settle``) re-checks the backlog after that commit.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.exc import IntegrityError

from blueprints.channels.inbound import (
    DeliveryReport,
    Event,
    InboundMessage,
    ReactionUpdate,
    StatusUpdate,
    WatermarkUpdate,
)
from blueprints.channels.models import OrganizationAddress
from blueprints.channels.services import addresses_by_provider_id
from blueprints.messaging.models import (
    DESK_STATUSES,
    INCOMING_STATUS,
    STATUS_RANK,
    Conversation,
    Message,
    StatusBacklog,
)
from blueprints.messaging.reactions import apply_reaction
from blueprints.messaging.schemas import MessageOut
from blueprints.messaging.threads import (
    CHUNK,
    ThreadKey,
    ThreadRequest,
    apply_backlog,
    apply_status,
    apply_waiting,
    arrival_times,
    chunks,
    lock_in_order,
    resolve_threads,
)
from core import uow
from core.db import db, isoformat
from core.events import publish

log = logging.getLogger(__name__)
ATTEMPTS = 3


def store_item(*, events: list[Event]) -> DeliveryReport:
    """The ``inbound_events`` receiver: one item of a delivery, durable before the next is handed over.

    A status whose message was not found waits in the backlog. The send that stores that message may
    have looked at the backlog before this commit (under READ COMMITTED neither side sees the other's
    uncommitted row), so once the backlog row is committed the message is looked for again: whichever
    side commits last applies the status."""
    report, waiting = _ingest(events)
    uow.checkpoint("webhook.item")
    if waiting:
        applied = _recheck_backlog(waiting)
        if applied:
            report.statuses_applied += applied
            report.statuses_waiting = max(0, report.statuses_waiting - applied)
        if uow.has_work():
            uow.checkpoint("webhook.item")
    return report


def store_batch(*, events: list[Event]) -> DeliveryReport:
    """The ``inbound_batch`` receiver: a whole batch of deliveries' events, flushed, not committed. A
    concurrent writer's row raises IntegrityError to the caller, who claims the batch again."""
    report, waiting = _ingest_once(events)
    report.waiting = set(waiting)
    return report


def settle_batch(*, report: DeliveryReport) -> int:
    """The ``inbound_settle`` receiver: after a batch's commit, the statuses it left waiting whose send
    has committed since (whichever commits last applies them); the caller commits."""
    return _recheck_backlog(report.waiting) if report.waiting else 0


def _recheck_backlog(waiting: set[tuple[uuid.UUID, str]]) -> int:
    by_org: dict[uuid.UUID, list[str]] = defaultdict(list)
    for organization_id, external_id in waiting:
        by_org[organization_id].append(external_id)
    found: list[Message] = []
    for organization_id, external_ids in by_org.items():
        for part in chunks(sorted(external_ids)):
            found += db.session.scalars(
                select(Message).where(
                    Message.organization_id == organization_id,
                    Message.external_id.in_(part),
                    Message.direction == "outgoing",
                )
            )
    if not found:
        return 0
    changed = apply_backlog(found)
    _publish_updates(changed)
    return len(changed)


def ingest_events(events: Sequence[Event]) -> DeliveryReport:
    """Store the events (a fixed number of queries however many); the caller's unit of work commits.
    Call it with nothing else uncommitted: a race with another delivery rolls back and runs again."""
    return _ingest(events)[0]


def _ingest(events: Sequence[Event]) -> tuple[DeliveryReport, set[tuple[uuid.UUID, str]]]:
    """The report, and the (organization, provider id) of the statuses left waiting in the backlog."""
    for attempt in range(ATTEMPTS):
        try:
            return _ingest_once(events)
        except IntegrityError:
            # Another delivery stored the same message, contact or conversation first: start over (the
            # rows it committed are then found, and counted as duplicates).
            db.session.rollback()
            if attempt + 1 == ATTEMPTS:
                raise
            log.info("concurrent delivery stored the same rows; ingesting again")
    raise AssertionError("unreachable")


def _ingest_once(events: Sequence[Event]) -> tuple[DeliveryReport, set[tuple[uuid.UUID, str]]]:
    result = DeliveryReport()
    waiting: set[tuple[uuid.UUID, str]] = set()
    addresses = addresses_by_provider_id({(e.service, e.organization_address) for e in events})
    for event in events:
        if (event.service, event.organization_address) not in addresses:
            result.unknown_addresses.add((event.service, event.organization_address))
    if result.unknown_addresses:
        # Acknowledged, not retried forever: Meta would redeliver for days an address we will never know.
        log.warning("webhook for unknown organization addresses: %s", sorted(result.unknown_addresses))

    def address_of(event: Event) -> OrganizationAddress | None:
        return addresses.get((event.service, event.organization_address))

    # An echo of a message the desk sent (Instagram/Messenger) is that message's "sent" status.
    echoes = [
        StatusUpdate(e.service, e.organization_address, e.external_id, "sent", e.timestamp)
        for e in events
        if isinstance(e, InboundMessage) and e.direction == "outgoing"
    ]
    status_events = [e for e in events if isinstance(e, StatusUpdate)] + echoes
    statuses = [(a, e) for e in status_events if (a := address_of(e))]
    watermarks = [(a, e) for e in events if isinstance(e, WatermarkUpdate) and (a := address_of(e))]
    reactions = [(a, e) for e in events if isinstance(e, ReactionUpdate) and (a := address_of(e))]
    # The lock order (threads' docstring): contacts and conversations, the new messages by provider id,
    # then every stored message the statuses, watermarks and reactions change, in one statement by id
    # (after the new ones: a reaction may point to a message stored by this very batch), then the new
    # backlog rows by key. Each message is changed in memory and written once, at the flush.
    _store_messages(
        [(a, e) for e in events if isinstance(e, InboundMessage) and (a := address_of(e))], result
    )
    targets = _lock_targets(statuses, watermarks, reactions)
    _apply_statuses(statuses, targets, result, waiting)
    _apply_watermarks(watermarks, targets, result)
    _apply_reactions(reactions, targets, result)
    db.session.flush()  # a race with another delivery shows here, inside the retry
    return result, waiting


def _store_messages(items: list[tuple[OrganizationAddress, InboundMessage]], result: DeliveryReport) -> None:
    unique: dict[tuple[uuid.UUID, str], tuple[OrganizationAddress, InboundMessage]] = {}
    for address, event in items:
        key = (address.organization_id, event.external_id)
        if not event.external_id or key in unique:
            result.duplicates += 1
            continue
        unique[key] = (address, event)
    by_org: dict[uuid.UUID, list[str]] = defaultdict(list)
    for organization_id, external_id in unique:
        by_org[organization_id].append(external_id)
    for organization_id, external_ids in by_org.items():
        for part in chunks(external_ids):
            for existing in db.session.scalars(
                select(Message.external_id).where(
                    Message.organization_id == organization_id, Message.external_id.in_(part)
                )
            ):
                unique.pop((organization_id, existing), None)
                result.duplicates += 1
    if not unique:
        return
    fresh = sorted(unique.values(), key=lambda item: item[1].timestamp)
    threads = resolve_threads(
        ThreadRequest(
            ThreadKey(address.organization_id, address.service, address.address, event.contact_address),
            event.provider_contact_id if event.direction == "incoming" else None,
            event.contact_name,
        )
        for address, event in fresh
    )
    created: list[Message] = []
    for (address, event), created_at in zip(fresh, arrival_times(len(fresh)), strict=True):
        thread = threads[
            ThreadKey(address.organization_id, address.service, address.address, event.contact_address)
        ]
        conversation = thread.conversation
        incoming = event.direction == "incoming"
        message = Message(
            id=uuid.uuid4(),
            organization_id=address.organization_id,
            conversation_id=conversation.id,
            direction=event.direction,
            service=address.service,
            organization_address=address.address,
            contact_address=event.contact_address,
            external_id=event.external_id,
            timestamp=event.timestamp,
            content=event.content,
            status={INCOMING_STATUS if incoming else "sent": isoformat(event.timestamp)},
            current_status=INCOMING_STATUS if incoming else "sent",
            reply_to=event.reply_to,
            # in timestamp order, the order of a thread's messages of one second, though inserted below
            # in provider-id order
            created_at=created_at,
            updated_at=created_at,
        )
        created.append(message)
        _touch(conversation, message)
    # Inserted in the order of their unique key: two batches given one message twice (Meta delivers at
    # least once) wait for each other's insert in one direction only.
    db.session.add_all(sorted(created, key=lambda m: (m.organization_id, m.external_id or "")))
    db.session.flush()
    # The backlog of the new outgoing messages (echoes of the Page's sends): their rows are this
    # transaction's own, invisible to any other, so they need no lock.
    apply_waiting([m for m in created if m.direction == "outgoing"])
    for message in created:
        publish("message.created", message.organization_id, MessageOut.dump(message))
    result.messages_created += len(created)


def _touch(conversation: Conversation, message: Message) -> None:
    """A new message renews the conversation; an incoming one re-opens and un-archives it and renews
    the service window (from the provider's own timestamp, so a late delivery cannot shorten it)."""
    if conversation.last_message_at is None or message.timestamp > conversation.last_message_at:
        conversation.last_message_at = message.timestamp
    if message.direction == "incoming":
        if conversation.last_incoming_at is None or message.timestamp > conversation.last_incoming_at:
            conversation.last_incoming_at = message.timestamp
        conversation.archived_at = None
        conversation.status = "active"


# A conversation as a watermark names it: (organization, organization address, contact address, service).
WatermarkKey = tuple[uuid.UUID, str, str, str]


@dataclass
class _Targets:
    """The stored messages a batch changes, locked: by (organization, provider id) for statuses and
    reactions, and per conversation the outgoing ones its watermarks may reach."""

    by_external_id: dict[tuple[uuid.UUID, str], Message] = field(default_factory=dict)
    by_watermark: dict[WatermarkKey, list[Message]] = field(default_factory=dict)


def _watermark_key(address: OrganizationAddress, event: WatermarkUpdate) -> WatermarkKey:
    return (address.organization_id, address.address, event.contact_address, address.service)


def _lock_targets(
    statuses: list[tuple[OrganizationAddress, StatusUpdate]],
    watermarks: list[tuple[OrganizationAddress, WatermarkUpdate]],
    reactions: list[tuple[OrganizationAddress, ReactionUpdate]],
) -> _Targets:
    """Every stored message the batch's statuses, watermarks and reactions change, locked until the commit
    in one ``SELECT ... ORDER BY id FOR NO KEY UPDATE`` (``threads.lock_in_order``) before any of them is
    changed. Locked in one pass per kind, statuses then reactions, two batches could each hold a message
    the other's next pass wants."""
    named: dict[uuid.UUID, set[str]] = defaultdict(set)
    for address, status in statuses:
        named[address.organization_id].add(status.external_id)
    for address, reaction in reactions:
        named[address.organization_id].add(reaction.message_external_id)
    conditions: list[tuple[ColumnElement[bool], int]] = [
        (and_(Message.organization_id == organization_id, Message.external_id.in_(part)), len(part) + 1)
        for organization_id in sorted(named)
        for part in chunks(sorted(named[organization_id]))
    ]
    # A watermark reaches the outgoing messages of its conversation up to its time, or those it lists:
    # lock, per conversation, up to the latest of the batch's watermarks and everything any of them lists.
    reach: dict[WatermarkKey, tuple[datetime, set[str]]] = {}
    for address, watermark in watermarks:
        key = _watermark_key(address, watermark)
        latest, listed = reach.get(key, (watermark.watermark, set()))
        reach[key] = (max(latest, watermark.watermark), listed | set(watermark.external_ids))
    conversations = _watermark_conversations(sorted(reach))
    by_key: dict[WatermarkKey, list[uuid.UUID]] = defaultdict(list)
    for conversation_id, key in conversations.items():
        by_key[key].append(conversation_id)
    for key in sorted(by_key):
        latest, listed = reach[key]
        reached = Message.timestamp <= latest
        if listed:
            reached = or_(reached, Message.external_id.in_(sorted(listed)))
        conditions.append(
            (
                and_(
                    Message.organization_id == key[0],
                    Message.direction == "outgoing",
                    Message.conversation_id.in_(sorted(by_key[key])),
                    reached,
                ),
                4 + len(by_key[key]) + len(listed),
            )
        )
    targets = _Targets()
    for message in lock_in_order(Message, conditions):
        if message.external_id:
            targets.by_external_id[(message.organization_id, message.external_id)] = message
        key = conversations.get(message.conversation_id)
        if key is not None and message.direction == "outgoing":
            targets.by_watermark.setdefault(key, []).append(message)
    return targets


def _watermark_conversations(keys: Sequence[WatermarkKey]) -> dict[uuid.UUID, WatermarkKey]:
    """The conversations the watermarks name, by id (one read for the batch, in chunks)."""
    found: dict[uuid.UUID, WatermarkKey] = {}
    for part in chunks(keys, CHUNK // 4):
        rows = db.session.execute(
            select(
                Conversation.id,
                Conversation.organization_id,
                Conversation.organization_address,
                Conversation.contact_address,
                Conversation.service,
            ).where(
                or_(
                    *(
                        and_(
                            Conversation.organization_id == organization_id,
                            Conversation.organization_address == organization_address,
                            Conversation.contact_address == contact_address,
                            Conversation.service == service,
                        )
                        for organization_id, organization_address, contact_address, service in part
                    )
                )
            )
        )
        for conversation_id, *key in rows:
            found[conversation_id] = (key[0], key[1], key[2], key[3])
    return found


def _apply_statuses(
    items: list[tuple[OrganizationAddress, StatusUpdate]],
    targets: _Targets,
    result: DeliveryReport,
    backlogged: set[tuple[uuid.UUID, str]],
) -> None:
    if not items:
        return
    missing: dict[uuid.UUID, set[str]] = defaultdict(set)
    for address, event in items:
        if (address.organization_id, event.external_id) not in targets.by_external_id:
            missing[address.organization_id].add(event.external_id)
    waiting: set[tuple[uuid.UUID, str, str]] = set()
    for organization_id in sorted(missing):
        for part in chunks(sorted(missing[organization_id])):
            for row in db.session.execute(
                select(StatusBacklog.external_id, StatusBacklog.status).where(
                    StatusBacklog.organization_id == organization_id, StatusBacklog.external_id.in_(part)
                )
            ):
                waiting.add((organization_id, row.external_id, row.status))
    changed: dict[uuid.UUID, Message] = {}
    backlog: dict[tuple[uuid.UUID, str, str], StatusBacklog] = {}
    for address, event in items:
        if event.status not in STATUS_RANK or event.status in DESK_STATUSES:
            continue
        message = targets.by_external_id.get((address.organization_id, event.external_id))
        if message is None:
            key = (address.organization_id, event.external_id, event.status)
            if key not in waiting:
                waiting.add(key)
                backlog[key] = StatusBacklog(
                    organization_id=address.organization_id,
                    external_id=event.external_id,
                    status=event.status,
                    timestamp=event.timestamp,
                    error=event.error,
                )
                result.statuses_waiting += 1
                backlogged.add((address.organization_id, event.external_id))
            continue
        if apply_status(message, event.status, event.timestamp, event.error):
            changed[message.id] = message
            result.statuses_applied += 1
    # inserted in the order of their unique key, the last of the lock order
    db.session.add_all([backlog[key] for key in sorted(backlog)])
    _publish_updates(changed.values())


def _apply_watermarks(
    items: list[tuple[OrganizationAddress, WatermarkUpdate]], targets: _Targets, result: DeliveryReport
) -> None:
    changed: dict[uuid.UUID, Message] = {}
    for address, event in items:
        reached = [
            message
            for message in targets.by_watermark.get(_watermark_key(address, event), ())
            if message.timestamp <= event.watermark or message.external_id in event.external_ids
        ]
        for message in sorted(reached, key=lambda m: m.id):
            if message.current_status in ("pending", "failed"):
                continue
            if apply_status(message, event.status, event.watermark):
                changed[message.id] = message
                result.statuses_applied += 1
    _publish_updates(changed.values())


def _apply_reactions(
    items: list[tuple[OrganizationAddress, ReactionUpdate]], targets: _Targets, result: DeliveryReport
) -> None:
    """Each reaction onto the message it names, under the message's row lock (like statuses): two
    deliveries touching one message's reactions take turns. A reaction to a message the desk does not
    have, or that is not this contact's thread on this address, is counted and dropped (it cannot be
    shown anywhere; Meta's reactions to messages older than the desk's history are such)."""
    if not items:
        return
    changed: dict[uuid.UUID, Message] = {}
    for address, event in sorted(items, key=lambda item: item[1].timestamp):
        message = targets.by_external_id.get((address.organization_id, event.message_external_id))
        if (
            message is None
            or message.service != address.service
            or message.organization_address != address.address
            or message.contact_address != event.contact_address
        ):
            result.reactions_unmatched += 1
            continue
        result.reactions_applied += 1
        if apply_reaction(message, event.contact_address, event.emoji, event.timestamp):
            changed[message.id] = message
    _publish_updates(changed.values())


def _publish_updates(messages: Iterable[Message]) -> None:
    for message in messages:
        publish("message.updated", message.organization_id, MessageOut.dump(message))
