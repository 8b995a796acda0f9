"""Domain events: published by services, delivered only after the transaction commits.

A service calls :func:`publish` while it works; the event waits in the SQLAlchemy session and goes out
in ``after_commit`` (to the organization's Socket.IO room and to in-process subscribers such as webhook
dispatchers). A rollback drops it, so nobody hears of a change that did not happen.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core import uow
from core.db import db, isoformat, utcnow
from core.environments import current_environment

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DomainEvent:
    name: str
    organization_id: str
    environment: str
    data: dict[str, Any]
    id: str = field(default_factory=lambda: f"evt_{uuid.uuid4().hex}")
    occurred_at: str = field(default_factory=lambda: isoformat(utcnow()) or "")

    def as_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.name,
            "organization_id": self.organization_id,
            "occurred_at": self.occurred_at,
            "data": self.data,
        }


Subscriber = Callable[[DomainEvent], None]
BatchSubscriber = Callable[[list[DomainEvent]], None]
_subscribers: dict[str, list[Subscriber]] = defaultdict(list)
_batch_subscribers: dict[str, list[BatchSubscriber]] = defaultdict(list)
_sinks: list[Subscriber] = []
_BATCHES = "agentdesk.event_batches"


def subscribe(name: str, handler: Subscriber) -> None:
    """Call ``handler`` after commit for every event called ``name`` (``*`` for all)."""
    if handler not in _subscribers[name]:
        _subscribers[name].append(handler)


def subscribe_batch(name: str, handler: BatchSubscriber) -> None:
    """Call ``handler`` once per committed unit of work with every ``name`` event it published, in order.

    For work that is cheaper once per batch than once per event: a webhook batch of 200 incoming messages
    asks for one routing job, not 200."""
    if handler not in _batch_subscribers[name]:
        _batch_subscribers[name].append(handler)


def add_sink(handler: Subscriber) -> None:
    """A transport that receives every event (the Socket.IO bridge registers itself here)."""
    if handler not in _sinks:
        _sinks.append(handler)


def room_for(environment: str, organization_id: str | uuid.UUID) -> str:
    return f"{environment}:org:{organization_id}"


def publish(name: str, organization_id: str | uuid.UUID, data: dict[str, Any]) -> DomainEvent:
    domain_event = DomainEvent(name, str(organization_id), current_environment(), data)
    session = db.session()
    if not session.in_transaction():
        # Tie the event to a transaction even when no row changed yet, so a rollback discards it.
        session.begin()
    uow.after_commit(lambda: _deliver(domain_event))
    if _batch_subscribers.get(name):
        _collect(session, domain_event)
    return domain_event


def _collect(session: Any, domain_event: DomainEvent) -> None:
    """Add the event to its unit of work's batch; the batch is handed over after the commit (a rollback
    drops it with the transaction it belonged to)."""
    if not uow.defers():  # published while earlier events are delivered: a batch of its own
        _deliver_batch(domain_event.name, [domain_event])
        return
    transaction = session.get_transaction()
    owner, batches = session.info.get(_BATCHES, (None, {}))
    if owner is not transaction:
        batches = {}
        session.info[_BATCHES] = (transaction, batches)
    if domain_event.name not in batches:
        batch: list[DomainEvent] = []
        batches[domain_event.name] = batch
        uow.after_commit(lambda: _deliver_batch(domain_event.name, batch))
    batches[domain_event.name].append(domain_event)


def _deliver_batch(name: str, batch: list[DomainEvent]) -> None:
    for handler in _batch_subscribers.get(name, ()):
        try:
            handler(list(batch))
        except Exception:
            log.exception("batch handler %r failed for %d %s events", handler, len(batch), name)


def _deliver(domain_event: DomainEvent) -> None:
    for handler in [*_sinks, *_subscribers.get(domain_event.name, ()), *_subscribers.get("*", ())]:
        try:
            handler(domain_event)
        except Exception:  # one failing listener must not hide the event from the others
            log.exception("event handler %r failed for %s", handler, domain_event.name)
