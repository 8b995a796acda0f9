"""At-least-once, out-of-order, batched deliveries at volume: 1,000 inbound messages with 20% duplicates,
and shuffled, duplicated status webhooks for the replies; nothing lost, nothing doubled."""

from __future__ import annotations

import random
import time
import uuid

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from blueprints.messaging.models import Message
from core.db import db
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_status, wa_text
from tests.messaging.helpers import send, text_body

UNIQUE = 800
DUPLICATES = 200
CONTACTS = 40
REPLIES = 40
BATCH = 50


def test_1000_inbound_messages_with_duplicates_and_shuffled_statuses(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    rng = random.Random(4)
    base = int(time.time()) - 3600
    contacts = [f"52155{5000_0000 + n:08d}" for n in range(CONTACTS)]
    unique = [
        wa_text(contacts[n % CONTACTS], f"message {n}", id=f"wamid.BULK{n:05d}", timestamp=str(base + n))
        for n in range(UNIQUE)
    ]
    deliveries = unique + [rng.choice(unique) for _ in range(DUPLICATES)]
    rng.shuffle(deliveries)
    started = time.perf_counter()
    for start in range(0, len(deliveries), BATCH):
        batch = deliveries[start : start + BATCH]
        # each delivery spreads its messages over several changes and entries, as Meta batches them
        changes = [wa_change(wa.address, messages=batch[i : i + 10]) for i in range(0, len(batch), 10)]
        response = deliver(wa_delivery(*changes, entries=2))
        assert response.status_code == 200
    inbound_seconds = time.perf_counter() - started

    # replies to some contacts, then their statuses: every status twice, all shuffled together
    replies = [send(client, wa, text_body(wa, contact=contacts[n])).get_json() for n in range(REPLIES)]
    assert all(r["current_status"] == "accepted" for r in replies)
    statuses = []
    for reply in replies:
        recipient = reply["contact_address"].lstrip("+")
        for offset, status in ((10, "sent"), (20, "delivered"), (30, "read")):
            item = wa_status(
                reply["external_id"], status, recipient, timestamp=str(int(time.time()) + offset)
            )
            statuses += [item, dict(item)]
    rng.shuffle(statuses)
    started = time.perf_counter()
    for start in range(0, len(statuses), BATCH):
        deliver(wa_delivery(wa_change(wa.address, statuses=statuses[start : start + BATCH])))
    status_seconds = time.perf_counter() - started

    with app.app_context():
        organization_id = uuid.UUID(wa.org.id)
        incoming = db.session.scalar(
            select(func.count()).where(
                Message.organization_id == organization_id, Message.direction == "incoming"
            )
        )
        distinct_ids = db.session.scalar(
            select(func.count(func.distinct(Message.external_id))).where(Message.direction == "incoming")
        )
        outgoing = list(db.session.scalars(select(Message).where(Message.direction == "outgoing")))
    assert incoming == distinct_ids == UNIQUE
    assert len(outgoing) == REPLIES
    for message in outgoing:
        assert message.current_status == "read"
        assert set(message.status) == {"pending", "accepted", "sent", "delivered", "read"}
        assert message.status["sent"] < message.status["delivered"] < message.status["read"]
    listed = client.get(wa.path("/contacts"), headers=wa.org.headers()).get_json()
    assert listed["total"] == CONTACTS
    # printed for the record only: speed is measured in bench/, not asserted in a test a loaded CI runs
    print(f"\n1,000 inbound in {inbound_seconds:.2f}s; {len(statuses)} statuses in {status_seconds:.2f}s")
