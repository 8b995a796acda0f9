"""A drain batch that loses a lock conflict (a deadlock victim, SQLSTATE 40P01, or a serialization
failure, 40001) runs again at once and is not charged a failed attempt: the database rolled it back
whole, and the conflict says nothing about its deliveries, which must not drift towards the dead letter
a delivery becomes after five failures. A database that cannot be reached still counts, as before.
Both lanes: the conflicts are raised by the driver's own exception classes inside the batch."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from flask import Flask
from sqlalchemy import select, text
from sqlalchemy.exc import OperationalError

from blueprints.channels import processor
from blueprints.channels.inbound import inbound_batch
from blueprints.channels.intake import InboundDelivery
from blueprints.messaging import ingest
from core.db import db, lock_conflict
from core.environments import LIVE
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text, wamid


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "INGEST_MODE": "deferred"}


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliveries are stored but nobody is woken to drain them; retries do not pause."""
    monkeypatch.setattr(processor, "request_drain", lambda: None)
    monkeypatch.setattr(processor, "LOCK_RETRY_PAUSE", 0.0)


def _deadlock() -> OperationalError:
    return OperationalError(
        "SELECT ... FOR NO KEY UPDATE", {}, psycopg.errors.DeadlockDetected("deadlock detected")
    )


def _serialization_failure() -> OperationalError:
    return OperationalError("UPDATE", {}, psycopg.errors.SerializationFailure("could not serialize access"))


def _stored(wa: Channel, deliver: Deliver, count: int) -> list[str]:
    ids = [wamid() for _ in range(count)]
    for n, message_id in enumerate(ids):
        message = wa_text(f"52155{n % 3:08d}", f"m{n}", id=message_id)
        assert deliver(wa_delivery(wa_change(wa.address, messages=[message]))).status_code == 200
    return ids


def _state(app: Flask) -> tuple[list[str], list[tuple[int, str | None, bool]]]:
    """The stored messages' provider ids, and each delivery's (attempts, error, processed)."""
    with app.app_context():
        messages = sorted(db.session.scalars(text("SELECT external_id FROM messages")))
        rows = db.session.execute(
            select(InboundDelivery.attempts, InboundDelivery.error, InboundDelivery.processed_at)
        )
        return messages, sorted((attempts, error, done is not None) for attempts, error, done in rows)


def test_lock_conflicts_are_recognised_by_their_sqlstate() -> None:
    assert lock_conflict(_deadlock()) == "40P01"
    assert lock_conflict(_serialization_failure()) == "40001"
    assert lock_conflict(psycopg.errors.DeadlockDetected("deadlock detected")) == "40P01"
    lost = OperationalError("SELECT 1", {}, psycopg.OperationalError("server closed the connection"))
    assert lock_conflict(lost) is None
    assert lock_conflict(ValueError("not a database error")) is None


def test_a_batch_that_loses_lock_conflicts_runs_again_without_charging_an_attempt(
    app: Flask, wa: Channel, deliver: Deliver, held: None
) -> None:
    ids = _stored(wa, deliver, 5)
    conflicts = [_deadlock(), _serialization_failure(), _deadlock()]
    runs: list[int] = []

    def store_then_lose(*, events: Any) -> Any:
        runs.append(len(events))
        report = ingest.store_batch(events=events)  # written and flushed: rolled back with the conflict
        if conflicts:
            raise conflicts.pop(0)
        return report

    with inbound_batch.only(store_then_lose):
        assert processor.drain(app, LIVE, batch_size=10) == 5
    assert runs == [5, 5, 5, 5]  # the same batch, three conflicts and the run that committed
    messages, deliveries = _state(app)
    assert messages == sorted(ids)  # each stored once
    assert deliveries == [(1, None, True)] * 5  # one attempt each: the one that succeeded


def test_a_batch_that_keeps_losing_is_left_pending_and_uncharged_for_the_job_to_retry(
    app: Flask, wa: Channel, deliver: Deliver, held: None
) -> None:
    ids = _stored(wa, deliver, 3)
    runs: list[int] = []

    def always_lose(*, events: Any) -> Any:
        runs.append(len(events))
        raise _deadlock()

    with inbound_batch.only(always_lose), pytest.raises(OperationalError) as raised:
        processor.drain(app, LIVE, batch_size=10)
    assert lock_conflict(raised.value) == "40P01"
    assert len(runs) == processor.LOCK_RETRIES + 1
    assert _state(app) == ([], [(0, None, False)] * 3)  # pending, never charged
    assert processor.drain(app, LIVE, batch_size=10) == 3  # the job's retry
    assert _state(app) == (sorted(ids), [(1, None, True)] * 3)


def test_a_database_that_cannot_be_reached_still_counts_as_an_attempt(
    app: Flask, wa: Channel, deliver: Deliver, held: None
) -> None:
    _stored(wa, deliver, 2)

    def unreachable(*, events: Any) -> Any:
        raise OperationalError("SELECT 1", {}, psycopg.OperationalError("server closed the connection"))

    with inbound_batch.only(unreachable), pytest.raises(OperationalError):
        processor.drain(app, LIVE, batch_size=10)
    assert _state(app) == ([], [(1, "database unavailable; retried", False)] * 2)
