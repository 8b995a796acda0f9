"""Storing a parsed provider delivery item by item, with dead letters for what cannot be stored.

Each item (one ``entry`` of Meta's payload) is handed to the receiver, which stores it and makes it
durable (checkpoint ``webhook.item``). When an item fails, what it had not committed is rolled back and
its events are handed over again one by one, so only the event that fails is left out; that one is
recorded as a dead letter (also durable at once, checkpoint ``webhook.item``). Items refused at the edge
(``ParsedDelivery.rejected``) become dead letters too. Only a database that cannot be reached fails the
delivery (500, so the provider delivers it again): nothing, dead letters included, could be kept then.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from blueprints.channels import dead_letters
from blueprints.channels.inbound import DeliveryReport, Event, NoReceiver, ParsedDelivery, hand_over
from core import uow
from core.db import db

log = logging.getLogger(__name__)

# Failures that say nothing about the item: the database is down, a deadlock or serialization victim,
# no connection free. The delivery fails and is delivered again.
TRANSIENT = (OperationalError, InterfaceError, PoolTimeout, NoReceiver)


def store_delivery(parsed: ParsedDelivery, source: str = dead_letters.META) -> DeliveryReport:
    """Store every item of ``parsed``; record the refused and the failing ones as dead letters."""
    report = DeliveryReport()
    for item in parsed.items:
        report.add(_store(item, source))
    for rejected in parsed.rejected:
        _dead_letter(rejected.reason, rejected.raw, source, rejected.service, rejected.organization_address)
        report.dead_letters += 1
    return report


def _store(events: list[Event], source: str) -> DeliveryReport:
    try:
        return hand_over(events)
    except TRANSIENT:
        raise
    except Exception as error:  # a poison item: keep the others of the delivery, record this one
        db.session.rollback()
        failure = error
    if len(events) > 1:
        report = DeliveryReport()
        for event in events:
            report.add(_store([event], source))
        return report
    event = events[0]
    log.error("inbound event not stored", exc_info=failure)
    reason = f"not stored: {type(failure).__name__}: {failure}"
    _dead_letter(
        reason,
        event.raw if event.raw is not None else event,
        source,
        event.service,
        event.organization_address,
    )
    return DeliveryReport(dead_letters=1)


def _dead_letter(
    reason: str, raw: object, source: str, service: str | None, organization_address: str | None
) -> None:
    dead_letters.record(
        reason, raw, source=source, service=service, organization_address=organization_address
    )
    uow.checkpoint("webhook.item")
