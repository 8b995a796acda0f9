"""Draining stored deliveries (``inbound_deliveries``) in batches: the second half of the webhook.

A batch is one unit of work (one transaction, one COMMIT):

1. claim up to ``INGEST_BATCH_SIZE`` pending deliveries, oldest first, with ``SELECT ... FOR UPDATE SKIP
   LOCKED`` on PostgreSQL (several drainers take different rows) or the database's write lock on SQLite;
2. parse them all and hand every event of the batch to the ``inbound_batch`` receiver (the messaging area)
   at once: it looks each organization address, contact and conversation up once for the whole batch,
   inserts the messages in bulk and leaves a provider message id it already has as a duplicate;
3. record what was refused at the edge as dead letters, set ``processed_at`` on the claimed rows, commit.

The events (``message.created`` ...) go out right after that commit. A crash anywhere before the commit
rolls everything back and releases the rows (a dead connection's locks go with it): the deliveries are
pending again and the next drain takes them, and the unique provider message id keeps each message stored
exactly once. A batch that meets a concurrent writer's row (two batches creating one new contact) is
claimed and run again; a batch that fails otherwise (one poison delivery) is run again one delivery at a
time through ``delivery.store_delivery``, which keeps the good items and makes dead letters of the bad.
A batch that loses a lock conflict (a deadlock victim, SQLSTATE 40P01, or a serialization failure, 40001)
is run again at once, after a short random pause, up to :data:`LOCK_RETRIES` times, and none of that
counts as a failed attempt: the conflict says nothing about its deliveries. (The batch takes its locks
in one order, ``messaging.threads``, so two drainers should not deadlock at all; the retry is the
safety net.) Only a database that cannot be reached stops the drain and counts as an attempt (the job
is retried; the rows stay pending).

Who drains (``JOBS_MODE``): ``redis``: the job queue (``flask jobs worker``), one job enqueued per burst
(a Redis flag debounces the enqueue; each job drains until nothing is pending); ``embedded``: a drainer
thread in the process that took the delivery, woken right after its commit; ``inline``: the job runs at
once in the request, after its commit. A sweep every minute drains what a dead process left pending, and
an hourly one deletes processed deliveries older than :data:`RETENTION`.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import redis
from flask import Flask, current_app
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from blueprints.channels import dead_letters, inbound
from blueprints.channels.delivery import TRANSIENT, store_delivery
from blueprints.channels.intake import ERROR_LIMIT, InboundDelivery
from core.db import db, for_update, lock_conflict, utcnow
from core.environments import LIVE, current_environment, environment_app, in_environment
from core.jobs import job, periodic

log = logging.getLogger(__name__)

BATCH_SIZE = 200
# A batch stops taking deliveries once it holds this many events (INGEST_BATCH_EVENTS): Meta may put many
# messages in one delivery, and 200 deliveries of ten made 2,000-message transactions that pushed the job
# worker past 200 MB. The deliveries left out stay pending, unlocked at the commit, for the next batch.
BATCH_EVENTS = 500
ATTEMPTS = 3  # claims of one batch that met a concurrent writer's row before it goes one by one
MAX_ATTEMPTS = 5  # a delivery that failed this often is kept as a dead letter and left alone
# Runs of one batch that lost a lock conflict, at once, before the drain gives up until the job's retry;
# not failed attempts. The pause before each is random (up to LOCK_RETRY_PAUSE seconds times the retry's
# number), so two batches that met do not meet again in step.
LOCK_RETRIES = 5
LOCK_RETRY_PAUSE = 0.05
RETENTION = timedelta(days=3)
PURGE_CHUNK = 5000
DRAIN_FLAG_MS = 2000  # how long an enqueued drain job stands for the deliveries that follow it


def drain(app: Flask, environment: str, *, batch_size: int | None = None) -> int:
    """Process pending deliveries batch after batch until none is left; how many were taken."""
    size = batch_size or int(app.config.get("INGEST_BATCH_SIZE") or BATCH_SIZE)
    max_events = int(app.config.get("INGEST_BATCH_EVENTS") or BATCH_EVENTS)
    total = 0
    while True:
        taken, left = _drain_batch(app, environment, size, max_events)
        total += taken
        if not left and taken < size:
            return total


def _drain_batch(app: Flask, environment: str, size: int, max_events: int) -> tuple[int, int]:
    """One batch: (deliveries processed, deliveries claimed but left for the next batch)."""
    claimed: list[uuid.UUID] = []
    conflicts = 0
    attempt = 0
    while attempt < ATTEMPTS:
        claimed = []
        started = time.perf_counter()
        try:
            with in_environment(app, environment):
                rows = _claim(size)
                claimed = [row.id for row in rows]
                report, processed = _process(rows, max_events) if rows else (None, 0)
            if report is not None:
                log.debug(
                    "inbound batch: %d deliveries, %d messages in %.0f ms",
                    processed,
                    report.messages_created,
                    (time.perf_counter() - started) * 1000,
                )
        except IntegrityError:
            # A concurrent batch (or a send) stored the same contact, conversation or message first: what
            # it committed is found on the next claim.
            attempt += 1
            log.info("inbound batch met a concurrent writer (attempt %d); claiming again", attempt)
            continue
        except TRANSIENT as error:
            state = lock_conflict(error)
            if state is None:
                _record_failure(app, environment, claimed, "database unavailable; retried")
                raise
            # Rolled back whole by the database (in_environment rolled the session back): the same batch
            # can run again as it was. Not the deliveries' failure, so their attempts stay as they are.
            if conflicts == LOCK_RETRIES:
                log.warning(
                    "inbound batch of %d deliveries lost %d lock conflicts (SQLSTATE %s); "
                    "left pending for the job's retry",
                    len(claimed),
                    conflicts + 1,
                    state,
                )
                raise
            conflicts += 1
            log.warning(
                "inbound batch of %d deliveries lost a lock conflict (SQLSTATE %s); running it again "
                "(%d of %d)",
                len(claimed),
                state,
                conflicts,
                LOCK_RETRIES,
            )
            time.sleep(random.uniform(0, LOCK_RETRY_PAUSE * conflicts))
            continue
        except Exception as error:
            log.exception("inbound batch of %d deliveries failed; taking them one by one", len(claimed))
            _record_failure(app, environment, claimed, f"batch failed: {type(error).__name__}: {error}")
            return _one_by_one(app, environment, claimed), 0
        if report is not None and report.waiting:
            with in_environment(app, environment):
                inbound.settle(report)
        return processed, len(claimed) - processed
    return _one_by_one(app, environment, claimed), 0


def _claim(size: int) -> list[InboundDelivery]:
    statement = (
        select(InboundDelivery)
        .where(InboundDelivery.processed_at.is_(None))
        .order_by(InboundDelivery.received_at, InboundDelivery.id)
        .limit(size)
    )
    return list(db.session.scalars(for_update(statement, skip_locked=True)))


def _payload(row: InboundDelivery) -> Any:
    """The delivery's JSON; ``None`` (and a dead letter) when it is not JSON (the webhook refuses such
    bodies with 400, so only a row written some other way can be one)."""
    try:
        return json.loads(row.body)
    except (ValueError, RecursionError):
        row.error = "body is not JSON"
        dead_letters.record("body is not JSON", row.body.decode("utf-8", "replace"), source=row.source)
        return None


def _process(
    rows: list[InboundDelivery], max_events: int = BATCH_EVENTS
) -> tuple[inbound.DeliveryReport, int]:
    """The batch's deliveries into one hand-over, until it holds ``max_events`` events (the rest are left
    untouched, pending); the caller's unit of work commits once. The report and how many were taken."""
    now = utcnow()
    events: list[inbound.Event] = []
    rejected: list[tuple[str, inbound.Rejected]] = []
    taken = 0
    for row in rows:
        if events and len(events) >= max_events:
            break
        taken += 1
        row.attempts += 1
        row.processed_at = now
        payload = _payload(row)
        if payload is None:
            continue
        parsed = inbound.parse(payload)
        events += parsed.events
        rejected += [(row.source, item) for item in parsed.rejected]
    report = inbound.hand_over_batch(events)
    for source, item in rejected:
        dead_letters.record(
            item.reason,
            item.raw,
            source=source,
            service=item.service,
            organization_address=item.organization_address,
        )
        report.dead_letters += 1
    if report.unknown_addresses:
        log.warning("deliveries for unknown organization addresses: %s", sorted(report.unknown_addresses))
    return report, taken


def _one_by_one(app: Flask, environment: str, ids: list[uuid.UUID]) -> int:
    """The deliveries of a failed batch, each on its own: item by item, dead letters for what fails."""
    for delivery_id in ids:
        try:
            with in_environment(app, environment):
                statement = select(InboundDelivery).where(
                    InboundDelivery.id == delivery_id, InboundDelivery.processed_at.is_(None)
                )
                row = db.session.scalar(for_update(statement, skip_locked=True))
                if row is None:
                    continue  # taken and finished by another drainer meanwhile
                if row.attempts >= MAX_ATTEMPTS:
                    _give_up(row)
                    continue
                payload = _payload(row)
                if payload is not None:
                    # commits item by item (checkpoint webhook.item); the row is marked last, so a crash
                    # in between leaves it pending and its stored items come back as duplicates
                    store_delivery(inbound.parse(payload), row.source)
                row.attempts += 1  # after: a failing item's rollback inside would have undone it
                row.processed_at = utcnow()
        except TRANSIENT:
            raise
        except Exception as error:
            log.exception("inbound delivery %s failed", delivery_id)
            _record_failure(app, environment, [delivery_id], f"{type(error).__name__}: {error}")
    return len(ids)


def _give_up(row: InboundDelivery) -> None:
    reason = f"delivery failed {row.attempts} times: {row.error or 'unknown error'}"
    dead_letters.record(reason, row.body.decode("utf-8", "replace"), source=row.source)
    row.error = reason[:ERROR_LIMIT]
    row.processed_at = utcnow()


def _record_failure(app: Flask, environment: str, ids: list[uuid.UUID], error: str) -> None:
    """Count a failed attempt on the rows (their own unit of work: the batch's was rolled back)."""
    if not ids:
        return
    try:
        with in_environment(app, environment):
            db.session.execute(
                update(InboundDelivery)
                .where(InboundDelivery.id.in_(ids), InboundDelivery.processed_at.is_(None))
                .values(attempts=InboundDelivery.attempts + 1, error=error[:ERROR_LIMIT])
            )
    except Exception:  # bookkeeping only: the database may be the thing that failed
        log.warning("could not record the failure of %d inbound deliveries", len(ids), exc_info=True)


# ---- who drains ----


def _flag(app: Flask, environment: str) -> str:
    return f"{app.config.get('SOCKETIO_CHANNEL') or 'agentdesk'}-ingest-drain-{environment}"


_redis_clients: dict[str, redis.Redis] = {}


def _redis(app: Flask) -> redis.Redis:
    url = str(app.config["REDIS_URL"])
    if url not in _redis_clients:
        _redis_clients[url] = redis.Redis.from_url(url, socket_timeout=5)
    return _redis_clients[url]


@job(retries=5, retry_delay=1)
def drain_deliveries() -> None:
    """The queue's drainer: until nothing is pending in the environment that enqueued it."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    environment = current_environment()
    if app.config.get("JOBS_MODE") == "redis":
        # before claiming: a delivery committed from now on enqueues the next job
        _redis(app).delete(_flag(app, environment))
    drain(app, environment)


def request_drain() -> None:
    """After a delivery's commit (``uow.after_commit``): have it drained."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    environment = current_environment()
    mode = app.config.get("JOBS_MODE")
    if mode == "embedded":
        _local_drainer(app).request(environment)
        return
    if mode == "redis":
        try:
            if not _redis(app).set(_flag(app, environment), "1", nx=True, px=DRAIN_FLAG_MS):
                return  # a queued job will take this delivery too
        except redis.RedisError:
            log.warning("drain flag not set; enqueueing anyway", exc_info=True)
    drain_deliveries.enqueue()


class LocalDrainer:
    """The embedded mode's drainer: one thread per process, woken after each delivery's commit."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.environments: set[str] = set()
        self.thread = threading.Thread(target=self._run, name="inbound-drainer", daemon=True)
        self.thread.start()

    def request(self, environment: str) -> None:
        with self.lock:
            self.environments.add(environment)
        self.wake.set()

    def _run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            with self.lock:
                environments, self.environments = self.environments, set()
            for environment in sorted(environments):
                try:
                    drain(self.app, environment)
                except Exception:  # the rows stay pending: try again shortly (the sweep would too)
                    log.exception("draining inbound deliveries failed; retrying in a second")
                    time.sleep(1)
                    self.request(environment)


_drainer_lock = threading.Lock()
_EXTENSION = "agentdesk.inbound_drainer"


def _local_drainer(app: Flask) -> LocalDrainer:
    live = environment_app(app, LIVE)
    drainer = live.extensions.get(_EXTENSION)
    if drainer is None:
        with _drainer_lock:
            drainer = live.extensions.get(_EXTENSION)
            if drainer is None:
                drainer = live.extensions[_EXTENSION] = LocalDrainer(live)
    return drainer


@periodic(minute="*")
def drain_leftovers() -> None:
    """What a process that died left pending (its locks went with its connection)."""
    drain(current_app._get_current_object(), current_environment())  # type: ignore[attr-defined]


def purge_processed() -> int:
    """Delete processed deliveries older than :data:`RETENTION`, in chunks; how many."""
    cutoff = utcnow() - RETENTION
    deleted = 0
    while True:
        ids = list(
            db.session.scalars(
                select(InboundDelivery.id)
                .where(InboundDelivery.processed_at < cutoff)
                .order_by(InboundDelivery.processed_at)
                .limit(PURGE_CHUNK)
            )
        )
        if not ids:
            return deleted
        db.session.execute(delete(InboundDelivery).where(InboundDelivery.id.in_(ids)))
        deleted += len(ids)


@periodic(minute="23")
def purge_processed_hourly() -> None:
    purge_processed()
