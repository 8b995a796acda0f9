"""Two job workers draining one burst at once on PostgreSQL: they never deadlock, and every message is
stored exactly once.

SKIP LOCKED hands the two drainers different deliveries, but a burst from a few senders puts the same
contacts, conversations and messages in both workers' batches. A batch therefore takes the locks of each
table in one global order (existing rows by primary key in one statement, new rows in the order of their
unique key) before it changes anything, so one worker waits for the other's commit instead of each
waiting for the other (``docs/channels.md``, "Lock order"). The burst mixes what a batch locks or writes:
new messages from known and new senders, statuses and reactions on outgoing messages (WhatsApp), read
watermarks (Messenger). Deadlocks are counted by PostgreSQL itself (``pg_stat_database.deadlocks``), so a
deadlock that the processor's retry hid is counted too. PostgreSQL only: SQLite has one writer at a time.

Before the lock order (0c37dbc) the burst deadlocked in every run (2-6 deadlocks in PostgreSQL's count,
each a drain job failed and every delivery of its batch charged an attempt): a batch locked its
conversations ``FOR UPDATE``, and a message updated twice in one transaction (a status, then a reaction)
re-checks its foreign key with ``FOR KEY SHARE`` on its conversation, which waited for the other
batch's conversation lock; and statuses and reactions locked messages in two passes.
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from flask import Flask
from sqlalchemy import create_engine, event, func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from blueprints.channels import intake, processor
from blueprints.channels.dead_letters import META
from blueprints.channels.intake import InboundDelivery
from blueprints.messaging.models import Conversation, Message
from core.db import db, isoformat
from core.environments import LIVE
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect
from tests.fakes.meta_reactions import wa_reaction
from tests.fakes.meta_webhooks import (
    encode,
    messaging_delivery,
    messaging_read,
    messaging_text,
    wa_change,
    wa_delivery,
    wa_status,
    wa_text,
    wamid,
)
from tests.support.queries import count_queries
from tests.support.stores import Stores

pytestmark = pytest.mark.postgres

KNOWN = [f"52155{n:08d}" for n in range(12)]  # WhatsApp senders with a conversation before the burst
NEW = [f"52156{n:08d}" for n in range(4)]  # WhatsApp senders who write for the first time in the burst
PSIDS = [f"2400000000000{n:02d}" for n in range(4)]  # Messenger senders (known)
OUTGOING = 6  # outgoing messages per known conversation: what statuses, reactions and watermarks touch
DELIVERIES = 1200
BATCH = 25  # small batches: many of them, each touching some of the conversations, as a burst's tail does
DRAINERS = 2
# After each statement that writes or locks rows, a pause: on the shared 2-core machine of the report the
# two workers' transactions overlapped for milliseconds at each step; in one test process (one GIL) they
# hardly do without it. Any lock order holds under it; a wrong one deadlocks in every run.
PAUSE = 0.01


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "INGEST_MODE": "deferred"}


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliveries are stored but nobody is woken to drain them: the test's drainers do."""
    monkeypatch.setattr(processor, "request_drain", lambda: None)


@pytest.fixture
def postgres(stores: Stores) -> Stores:
    if stores.backend != "postgresql":
        pytest.skip("row locks and their order need PostgreSQL (SQLite has one writer at a time)")
    return stores


def _store(app: Flask, payloads: list[dict[str, Any]]) -> None:
    """The deliveries as the webhook stores them (one row each), committed together."""
    with app.app_context():
        for payload in payloads:
            intake.store(encode(payload), {}, META)
        db.session.commit()


def _seed(app: Flask, channels: list[Channel], start: datetime) -> dict[str, list[tuple[str, str]]]:
    """A conversation per known sender on each channel (through a drain) and outgoing messages in each;
    per organization address, the (contact address as the webhook names it, outgoing provider id) pairs."""
    at = str(int(start.timestamp()))
    first: list[dict[str, Any]] = []
    for channel in channels:
        if channel.service == "whatsapp":
            first += [
                wa_delivery(wa_change(channel.address, messages=[wa_text(sender, "hola", timestamp=at)]))
                for sender in KNOWN
            ]
        else:
            first += [
                messaging_delivery("page", channel.address, messaging_text(channel.address, psid, "hi"))
                for psid in PSIDS
            ]
    _store(app, first)
    assert processor.drain(app, LIVE) == len(first)
    outgoing: dict[str, list[tuple[str, str]]] = {channel.address: [] for channel in channels}
    with app.app_context():
        for conversation in db.session.scalars(select(Conversation).order_by(Conversation.contact_address)):
            for n in range(OUTGOING):
                sent = start + timedelta(seconds=n + 1)
                whatsapp = conversation.service == "whatsapp"
                external_id = wamid() if whatsapp else f"m_out{uuid.uuid4().hex}"
                db.session.add(
                    Message(
                        organization_id=conversation.organization_id,
                        conversation_id=conversation.id,
                        direction="outgoing",
                        service=conversation.service,
                        organization_address=conversation.organization_address,
                        contact_address=conversation.contact_address,
                        external_id=external_id,
                        timestamp=sent,
                        content={"kind": "text", "text": f"reply {n}"},
                        status={"sent": isoformat(sent)},
                        current_status="sent",
                    )
                )
                # WhatsApp's items name the wa_id (digits), Messenger's the PSID
                contact = (
                    conversation.contact_address.lstrip("+") if whatsapp else conversation.contact_address
                )
                outgoing[conversation.organization_address].append((contact, external_id))
        db.session.commit()
    return outgoing


def _event(
    rng: random.Random, wa: Channel, fb: Channel, outgoing: dict[str, list[tuple[str, str]]], at: int
) -> tuple[dict[str, Any], str | None]:
    """One delivery of a burst, and the provider id of the message it brings (None: no new message)."""
    roll = rng.random()
    if roll < 0.30:
        message_id = wamid()
        message = wa_text(rng.choice(KNOWN + NEW), "hola", id=message_id, timestamp=str(at))
        return wa_delivery(wa_change(wa.address, messages=[message])), message_id
    if roll < 0.65:
        recipient, message_id = rng.choice(outgoing[wa.address])
        status = wa_status(message_id, rng.choice(["delivered", "read"]), recipient, timestamp=str(at))
        return wa_delivery(wa_change(wa.address, statuses=[status])), None
    if roll < 0.90:
        sender, message_id = rng.choice(outgoing[wa.address])
        reaction = wa_reaction(sender, message_id, rng.choice(["👍", "❤️", ""]), timestamp=str(at))
        return wa_delivery(wa_change(wa.address, messages=[reaction])), None
    if roll < 0.95:
        mid = f"m_in{uuid.uuid4().hex}"
        item = messaging_text(fb.address, rng.choice(PSIDS), "hi", mid=mid)
        return messaging_delivery("page", fb.address, item), mid
    read = messaging_read(fb.address, rng.choice(PSIDS), (at - 60 - rng.randint(0, OUTGOING)) * 1000)
    return messaging_delivery("page", fb.address, read), None


def _burst(
    wa: Channel, fb: Channel, outgoing: dict[str, list[tuple[str, str]]], start: datetime, count: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """``count`` deliveries of one event each, in a fixed random order; the new messages' provider ids."""
    rng = random.Random(20261126)
    payloads: list[dict[str, Any]] = []
    incoming: list[str] = []
    for n in range(count):
        payload, message_id = _event(rng, wa, fb, outgoing, int(start.timestamp()) + 60 + n)
        payloads.append(payload)
        if message_id:
            incoming.append(message_id)
    return payloads, incoming


def _incoming(app: Flask) -> list[str]:
    with app.app_context():
        statement = select(Message.external_id).where(Message.direction == "incoming")
        return [external_id or "" for external_id in db.session.scalars(statement)]


def _clock(database_url: str) -> datetime:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return connection.scalar(text("SELECT clock_timestamp()"))  # type: ignore[no-any-return]
    finally:
        engine.dispose()


def _deadlocks(app: Flask, database_url: str, since: datetime) -> int:
    """PostgreSQL's count of deadlocks detected in the test's database. A backend reports its counts when
    it ends (or a second or more after it went idle), so the app's connections are closed first and the
    backends opened ``since`` the test began are waited for (older ones are other tests' idle pools)."""
    with app.app_context():
        db.session.remove()
        db.engine.dispose()
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                left = connection.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid() AND backend_start >= :since"
                    ),
                    {"since": since},
                )
                if not left:
                    break
                time.sleep(0.05)
            connection.execute(text("SELECT pg_stat_clear_snapshot()"))
            count = connection.scalar(
                text("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            )
            return int(count or 0)
    finally:
        engine.dispose()


def _pause_after_writes(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
    if "SKIP LOCKED" in statement:
        return  # the claim never waits
    if (
        "FOR UPDATE" in statement
        or "FOR NO KEY UPDATE" in statement
        or statement.lstrip()[:6].upper()
        in (
            "INSERT",
            "UPDATE",
            "DELETE",
        )
    ):
        time.sleep(PAUSE)


def test_two_workers_draining_one_burst_never_deadlock_and_store_every_message_once(
    app: Flask, wa: Channel, fb: Channel, held: None, postgres: Stores
) -> None:
    since = _clock(postgres.live_url)
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    outgoing = _seed(app, [wa, fb], start)
    payloads, incoming = _burst(wa, fb, outgoing, start, DELIVERIES)
    _store(app, payloads)
    seeded = _incoming(app)
    before = _deadlocks(app, postgres.live_url, since)

    escaped: list[OperationalError] = []  # what reached the drain job (before the fix: the deadlocks)
    ready = threading.Barrier(DRAINERS)

    def worker() -> None:
        """A job worker's drain job, retried as the queue retries it (without the queue's pause)."""
        ready.wait()
        for _ in range(50):
            try:
                processor.drain(app, LIVE, batch_size=BATCH)
                return
            except OperationalError as error:
                escaped.append(error)

    started = time.monotonic()
    event.listen(Engine, "after_cursor_execute", _pause_after_writes)
    try:
        threads = [threading.Thread(target=worker, name=f"drainer-{n}") for n in range(DRAINERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        event.remove(Engine, "after_cursor_execute", _pause_after_writes)
    elapsed = time.monotonic() - started
    deadlocks = _deadlocks(app, postgres.live_url, since) - before
    victims = [e for e in escaped if isinstance(e.orig, psycopg.errors.DeadlockDetected)]

    stored = _incoming(app)
    with app.app_context():
        pending = db.session.scalar(select(func.count()).where(InboundDelivery.processed_at.is_(None)))
        attempts = sorted(set(db.session.scalars(select(InboundDelivery.attempts))))
        dead_letters = db.session.scalar(text("SELECT count(*) FROM webhook_dead_letters"))
    print(f"{DELIVERIES} deliveries drained by {DRAINERS} workers in {elapsed:.1f} s, {deadlocks} deadlocks")
    assert deadlocks == 0 and not victims, (
        f"{deadlocks} deadlocks in PostgreSQL, {len(victims)} reached the drain job: {victims[:1]}"
    )
    assert not escaped, escaped[:3]
    assert sorted(stored) == sorted(seeded + incoming)  # every message of the burst, exactly once
    assert pending == 0 and dead_letters == 0
    assert attempts == [1]  # no delivery was charged a failed attempt


LOCKING = re.compile(r"\bFROM (\w+)\b.*\bFOR (?:NO KEY )?UPDATE\b(?! SKIP LOCKED)", re.DOTALL)


def test_a_batch_locks_each_table_once_in_primary_key_order(
    app: Flask,
    wa: Channel,
    fb: Channel,
    held: None,
    postgres: Stores,
    make_org: Any,
    connect: Connect,
) -> None:
    """One ``SELECT ... ORDER BY id FOR NO KEY UPDATE`` per table for a whole batch, two organizations'
    events mixed in it, table after table: not one per organization (each in the order its events came,
    as before) nor one per kind of event. The messages name their senders by the other form of their
    WhatsApp number (12 digits, where the first ones came with 13): each contact's provider id changes,
    so the contact addresses are locked too."""
    other: Org = make_org("Other")
    connect(other, "whatsapp", "106540352242999", "--phone-number", "+525500000099")
    wa2 = Channel(other, "whatsapp", "106540352242999")
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    outgoing = _seed(app, [wa, fb, wa2], start)
    payloads: list[dict[str, Any]] = []
    for n, address in enumerate([wa2.address, wa.address] * 6):
        sender, message_id = outgoing[address][n]
        at = str(int(start.timestamp()) + 60 + n)
        payloads += [
            wa_delivery(wa_change(address, messages=[wa_text(sender, f"m{n}", timestamp=at)])),
            wa_delivery(wa_change(address, statuses=[wa_status(message_id, "read", sender, timestamp=at)])),
            wa_delivery(wa_change(address, messages=[wa_reaction(sender, message_id, "👍", timestamp=at)])),
        ]
    payloads.append(
        messaging_delivery("page", fb.address, messaging_read(fb.address, PSIDS[0], int(time.time() * 1000)))
    )
    _store(app, payloads)

    with count_queries() as counted:
        assert processor.drain(app, LIVE, batch_size=100) == len(payloads)
    locks = [match.group(1) for s in counted.statements if (match := LOCKING.search(s))]
    assert locks == ["messaging_contact_addresses", "conversations", "messages"]
    for statement in counted.statements:
        if (match := LOCKING.search(statement)) is not None:
            assert f"ORDER BY {match.group(1)}.id FOR NO KEY UPDATE" in statement
    with app.app_context():
        read = db.session.scalar(select(func.count()).where(Message.current_status == "read"))
        reacted = db.session.scalar(select(func.count()).where(Message.reactions.is_not(None)))
    assert read == 12 + OUTGOING  # six statuses a WhatsApp number, every outgoing message of one Page thread
    assert reacted == 12
