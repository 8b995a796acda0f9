"""Ingest built for bursts: a delivery is stored as it came and answered at once; the processor drains
stored deliveries in batches (one commit each), stores every message exactly once through its provider
id, pushes its events after the batch's commit and survives a crash in the middle of a batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

from blueprints.channels import processor
from blueprints.channels.inbound import inbound_batch
from blueprints.channels.intake import InboundDelivery
from blueprints.channels.webhooks import signature_for
from blueprints.messaging import ingest
from core.db import db
from core.environments import LIVE, SANDBOX, environment_app
from core.events import DomainEvent, _subscribers, subscribe
from tests.fakes.fixtures import APP_SECRET, Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_status, wa_text, wamid
from tests.support.queries import count_commits

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "INGEST_MODE": "deferred"}


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliveries are stored but nobody is woken to drain them: the test drains when it wants."""
    monkeypatch.setattr(processor, "request_drain", lambda: None)


@pytest.fixture
def created_events() -> Any:
    seen: list[DomainEvent] = []
    subscribe("message.created", seen.append)
    yield seen
    _subscribers["message.created"].remove(seen.append)


def _burst(wa: Channel, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    ids = [wamid() for _ in range(count)]
    deliveries = [
        wa_delivery(wa_change(wa.address, messages=[wa_text(f"52155{n % 7:08d}", f"m{n}", id=ids[n])]))
        for n in range(count)
    ]
    return deliveries, ids


def _stored_ids(app: Flask) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(text("SELECT external_id FROM messages ORDER BY external_id")))


def _pending(app: Flask) -> int:
    with app.app_context():
        statement = select(func.count()).where(InboundDelivery.processed_at.is_(None))
        return int(db.session.scalar(statement) or 0)


def test_a_delivery_is_stored_as_it_came_and_answered_at_once(
    app: Flask, wa: Channel, deliver: Deliver, held: None
) -> None:
    payload = wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola")]))
    with count_commits() as counted:
        response = deliver(payload)
    assert response.status_code == 200
    body = response.get_json()
    assert body["received"] is True and body["queued"] is True
    assert counted.count == 1  # the INSERT of the raw delivery, nothing else
    assert _stored_ids(app) == []  # not processed yet
    with app.app_context():
        row = db.session.scalars(select(InboundDelivery)).one()
        assert str(row.id) == body["delivery_id"]
        assert row.processed_at is None and row.attempts == 0
        assert row.headers["X-Hub-Signature-256"].startswith("sha256=")
        # the exact bytes the signature covers, so the delivery can be audited (and verified) again
        assert signature_for(APP_SECRET, row.body) == row.headers["X-Hub-Signature-256"]


def test_refused_deliveries_are_not_stored(app: Flask, wa: Channel, deliver: Deliver, held: None) -> None:
    payload = wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola")]))
    assert deliver(payload, signed=False).status_code == 401
    assert deliver(payload, secret="wrong").status_code == 401
    assert deliver(b"not json").status_code == 400
    assert _pending(app) == 0


def test_a_burst_is_drained_in_batches_one_commit_each_every_message_once(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, held: None, created_events: Any
) -> None:
    deliveries, ids = _burst(wa, 45)
    deliveries.append(deliveries[3])  # Meta delivers again: the same message id
    deliveries.append(deliveries[40])
    for payload in deliveries:
        assert deliver(payload).status_code == 200
    assert _pending(app) == 47

    with count_commits() as counted:
        taken = processor.drain(app, LIVE, batch_size=20)
    assert taken == 47
    assert counted.count == 3  # 20 + 20 + 7 deliveries: one commit per batch
    assert _stored_ids(app) == sorted(ids)
    assert _pending(app) == 0
    assert sorted(e.data["external_id"] for e in created_events) == sorted(ids)  # each pushed once
    # seven senders: seven contacts and conversations, found or created once per batch
    listed = client.get(wa.path("/contacts"), headers=wa.org.headers()).get_json()
    assert listed["total"] == 7

    # nothing pending: a drain stores and pushes nothing
    assert processor.drain(app, LIVE, batch_size=20) == 0
    assert len(created_events) == 45


def test_a_batch_stops_at_its_event_cap_and_the_rest_is_drained_next(
    app: Flask,
    wa: Channel,
    deliver: Deliver,
    held: None,
    created_events: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Meta groups a burst: six deliveries of five messages each; a batch holds at most 12 events, so it
    # takes three deliveries (15 events: it stops once it holds 12) and leaves the others pending.
    ids: list[str] = []
    for delivery in range(6):
        messages = [wa_text(f"52155{delivery:08d}", f"m{n}", id=wamid()) for n in range(5)]
        ids += [m["id"] for m in messages]
        assert deliver(wa_delivery(wa_change(wa.address, messages=messages))).status_code == 200
    for environment in (LIVE, SANDBOX):
        monkeypatch.setitem(environment_app(app, environment).config, "INGEST_BATCH_EVENTS", 12)
    with count_commits() as counted:
        taken = processor.drain(app, LIVE, batch_size=20)
    assert taken == 6
    assert counted.count == 2  # 3 + 3 deliveries: the claimed rows left out were taken by the next batch
    assert _stored_ids(app) == sorted(ids)
    assert sorted(e.data["external_id"] for e in created_events) == sorted(ids)
    assert _pending(app) == 0


def test_a_batch_that_cannot_commit_pushes_nothing_and_stays_pending(
    app: Flask, wa: Channel, deliver: Deliver, held: None, created_events: Any
) -> None:
    deliveries, _ = _burst(wa, 3)
    for payload in deliveries:
        deliver(payload)

    def stored_then_unreachable(*, events: Any) -> Any:
        ingest.store_batch(events=events)  # flushed, events published to the session...
        raise OperationalError("COMMIT", {}, ConnectionResetError("the database went away"))

    with inbound_batch.only(stored_then_unreachable), pytest.raises(OperationalError):
        processor.drain(app, LIVE, batch_size=10)
    assert created_events == [] and _stored_ids(app) == []  # ...and dropped with the rollback
    assert _pending(app) == 3  # the next drain takes them
    processor.drain(app, LIVE, batch_size=10)
    assert len(created_events) == 3 and len(_stored_ids(app)) == 3


def test_a_poison_delivery_fails_its_batch_and_the_others_are_kept_one_by_one(
    app: Flask,
    client: FlaskClient,
    wa: Channel,
    deliver: Deliver,
    held: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deliveries, ids = _burst(wa, 5)
    for payload in deliveries:
        deliver(payload)
    real = ingest._store_messages

    def poison(items: Any, result: Any) -> None:
        if any(event.external_id == ids[2] for _, event in items):
            raise ValueError("cannot store this one")
        real(items, result)

    monkeypatch.setattr(ingest, "_store_messages", poison)
    assert processor.drain(app, LIVE, batch_size=10) == 5
    assert _stored_ids(app) == sorted(i for i in ids if i != ids[2])
    assert _pending(app) == 0
    letters = client.get(wa.path("/dead-letters"), headers=wa.org.headers()).get_json()["data"]
    assert [letter["reason"] for letter in letters] == ["not stored: ValueError: cannot store this one"]
    with app.app_context():
        attempts = sorted(db.session.scalars(select(InboundDelivery.attempts)))
    assert attempts == [2] * 5  # the failed batch, then each on its own


def test_a_status_waits_for_its_message_across_deliveries_of_one_batch(
    app: Flask, wa: Channel, deliver: Deliver, held: None
) -> None:
    ids = [wamid() for _ in range(2)]
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "a", id=ids[0])])))
    deliver(wa_delivery(wa_change(wa.address, statuses=[wa_status(wamid(), "read", "5215512345678")])))
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "b", id=ids[1])])))
    assert processor.drain(app, LIVE) == 3
    assert _stored_ids(app) == sorted(ids)
    with app.app_context():
        waiting = db.session.scalar(text("SELECT count(*) FROM message_status_backlog"))
    assert waiting == 1


def test_with_inline_jobs_a_delivery_is_drained_right_after_its_commit(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    response = deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola")])))
    assert response.status_code == 200 and response.get_json()["queued"] is True
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()
    assert [m["content"]["text"] for m in listed["data"]] == ["hola"]
    assert _pending(app) == 0


def test_processed_deliveries_are_purged_after_the_retention(
    app: Flask, wa: Channel, deliver: Deliver, held: None
) -> None:
    deliveries, _ = _burst(wa, 3)
    for payload in deliveries:
        deliver(payload)
    processor.drain(app, LIVE)
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "later")])))
    with app.app_context():
        old = db.session.scalars(select(InboundDelivery).where(InboundDelivery.processed_at.is_not(None)))
        for row in list(old)[:2]:
            row.processed_at = row.processed_at - processor.RETENTION
        db.session.commit()
        assert processor.purge_processed() == 2
        db.session.commit()
        left = db.session.scalar(select(func.count()).select_from(InboundDelivery))
        assert left == 2  # the recent processed one and the pending one


# ---- a crash in the middle of a batch ----

CRASHING_DRAINER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from app import create_app
    from blueprints.channels import processor
    from blueprints.channels.inbound import inbound_batch
    from blueprints.messaging.ingest import store_batch

    live, sandbox, instance, marker = sys.argv[1:5]
    app = create_app({
        "DATABASE_URL": live, "SANDBOX_DATABASE_URL": sandbox, "INSTANCE_PATH": instance,
        "SECRET_KEY": "crash-test", "JOBS_MODE": "inline", "REDIS_URL": None, "INGEST_MODE": "deferred",
    })
    batches = []

    def store_then_stall(*, events):
        report = store_batch(events=events)
        batches.append(len(events))
        if len(batches) == 3:  # the third batch: stored and flushed, not committed
            Path(marker).write_text("stalled")
            time.sleep(120)
        return report

    with inbound_batch.only(store_then_stall):
        processor.drain(app, "live", batch_size=10)
    """
)


def test_a_drainer_killed_mid_batch_loses_and_repeats_nothing(
    app: Flask, wa: Channel, deliver: Deliver, held: None, tmp_path: Path, created_events: Any
) -> None:
    deliveries, ids = _burst(wa, 35)
    for payload in deliveries:
        assert deliver(payload).status_code == 200
    live_url = app.config["SQLALCHEMY_DATABASE_URI"]
    sandbox_url = environment_app(app, SANDBOX).config["SQLALCHEMY_DATABASE_URI"]
    marker = tmp_path / "stalled"
    with app.app_context():
        db.session.remove()
        db.engine.dispose()  # SQLite: no connection of ours holds the file while the child writes
    child = subprocess.Popen(
        [sys.executable, "-c", CRASHING_DRAINER, live_url, sandbox_url, str(tmp_path / "i"), str(marker)],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DEMO_LIVE_MESSAGES": "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, child.stdout.read().decode() if child.stdout else ""
            assert time.monotonic() < deadline, "the drainer never reached its third batch"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)  # in the middle of the third batch, before its commit
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    committed = set(_stored_ids(app))
    assert len(committed) == 20  # two batches committed, the third rolled back with the process
    assert _pending(app) == 15

    assert processor.drain(app, LIVE, batch_size=10) == 15  # restarted: takes what was left
    assert _stored_ids(app) == sorted(ids)  # every message exactly once
    assert _pending(app) == 0
    assert sorted(e.data["external_id"] for e in created_events) == sorted(set(ids) - committed)
