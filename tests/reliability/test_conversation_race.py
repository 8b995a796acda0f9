"""Two writers storing messages of one conversation at once (two drainers' batches: PostgreSQL's SKIP
LOCKED hands them different deliveries of the same conversation): the conversation's
``last_message_at`` and ``last_incoming_at`` end at the newest message whatever the commit order.
Found by the webhook-stream crash test; PostgreSQL only (SQLite serializes writers)."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from flask import Flask
from sqlalchemy import select

from blueprints.messaging import ingest
from blueprints.messaging.models import Conversation, Message
from blueprints.messaging.threads import ThreadKey, ThreadRequest, resolve_threads
from core.db import db
from core.environments import LIVE, in_environment
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.support.stores import Stores

pytestmark = pytest.mark.postgres
SENDER = "5215512345678"


def _touch_in_own_transaction(
    app: Flask, key: ThreadKey, at: datetime, read: threading.Event, go: threading.Event | None
) -> None:
    """Resolve the thread (what a batch does), move its conversation to a message at ``at``, flush, and
    commit once ``go`` is set."""
    with in_environment(app, LIVE):
        conversation = resolve_threads([ThreadRequest(key)])[key].conversation
        ingest._touch(conversation, Message(timestamp=at, direction="incoming"))
        db.session.flush()
        read.set()
        if go is not None:
            assert go.wait(30)


def test_concurrent_batches_never_move_last_message_at_backwards(
    app: Flask, wa: Channel, deliver: Deliver, stores: Stores
) -> None:
    if stores.backend != "postgresql":
        pytest.skip("concurrent writers of one row need PostgreSQL (SQLite serializes them)")
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    first = wa_text(SENDER, "hola", timestamp=str(int(start.timestamp())))
    assert deliver(wa_delivery(wa_change(wa.address, messages=[first]))).status_code == 200
    with app.app_context():
        stored_address = db.session.scalars(select(Conversation.contact_address)).one()  # normalized
    key = ThreadKey(uuid.UUID(wa.org.id), "whatsapp", wa.address, stored_address)
    newest, older = start + timedelta(minutes=2), start + timedelta(minutes=1)

    a_read, b_read, a_commits = threading.Event(), threading.Event(), threading.Event()
    a = threading.Thread(target=_touch_in_own_transaction, args=(app, key, newest, a_read, a_commits))
    b = threading.Thread(target=_touch_in_own_transaction, args=(app, key, older, b_read, None))
    a.start()
    assert a_read.wait(30)  # A holds the newest value, not committed yet
    b.start()  # B reads the conversation now: before A's commit
    time.sleep(0.5)
    a_commits.set()
    a.join(30)
    b.join(30)
    assert b_read.is_set()

    with app.app_context():
        conversation = db.session.scalars(select(Conversation)).one()
        assert conversation.last_message_at == newest  # B's older message did not win
        assert conversation.last_incoming_at == newest
