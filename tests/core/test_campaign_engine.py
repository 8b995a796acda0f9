"""The core campaign engine (core/campaigns.py) on a fake area of its own: two tables created for the test
beside the real ones, a fake "provider" that records every act. These are the properties the broadcasts
rely on and the voice area's campaigns will: no recipient acted on twice across a crash, a restart and a
worker beside a live one; never more than ``max_concurrent`` live; at most ``max_attempts`` attempts,
each retry ``retry_after`` later; nothing done while the window says "not now"."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Boolean, Column, Integer, MetaData, String, Table, func, select, update

from core import campaigns
from core.campaigns import Outcome, Policy
from core.db import UTCDateTime, db, for_update, utcnow
from core.environments import LIVE, in_environment
from core.uow import checkpoint

CHECKPOINT = "campaign.progress"
METADATA = MetaData()
CAMPAIGNS = Table(
    "test_engine_campaigns",
    METADATA,
    Column("id", String(36), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("lease_owner", String(64)),
    Column("lease_expires_at", UTCDateTime()),
)
RECIPIENTS = Table(
    "test_engine_recipients",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("campaign_id", String(36), nullable=False),
    Column("position", Integer, nullable=False),
    # queued -> acting -> done | live | queued (a retry, due at due_at) | failed | unknown
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("due_at", UTCDateTime()),
    Column("marked", Boolean, nullable=False),  # the act began: stored before the outside effect
)
LIVE_STATES = ("acting", "live")


class Killed(BaseException):
    """The worker's process dies (raised by a hung act when the test lets it go)."""


class FakeArea:
    """An area on the engine: ``behave(recipient, area)`` is the outside effect, and what it came to."""

    def __init__(self, campaign_id: str, behave: Callable[[dict[str, Any], FakeArea], Outcome]) -> None:
        self.campaign_id = campaign_id
        self.lease = campaigns.Lease(CAMPAIGNS, campaign_id)
        self.behave = behave

    def is_active(self) -> bool:
        return (
            db.session.scalar(select(CAMPAIGNS.c.status).where(CAMPAIGNS.c.id == self.campaign_id))
            == "running"
        )

    def recover(self) -> None:
        c = RECIPIENTS.c
        mine = (c.campaign_id == self.campaign_id) & (c.state == "acting")
        # the act never began: nothing happened, the attempt did not count; it began: maybe done, never again
        db.session.execute(
            update(RECIPIENTS)
            .where(mine, c.marked.is_(False))
            .values(state="queued", attempts=c.attempts - 1)
        )
        db.session.execute(update(RECIPIENTS).where(mine, c.marked.is_(True)).values(state="unknown"))

    def claim(self, limit: int, now: datetime, max_attempts: int) -> list[dict[str, Any]]:
        c = RECIPIENTS.c
        ids = db.session.scalars(
            for_update(
                select(c.id)
                .where(c.campaign_id == self.campaign_id, c.state == "queued", c.attempts < max_attempts)
                .where(c.due_at.is_(None) | (c.due_at <= now))
                .order_by(c.position)
                .limit(limit),
                skip_locked=True,
            )
        ).all()
        if not ids:
            return []
        db.session.execute(
            update(RECIPIENTS)
            .where(c.id.in_(ids), c.state == "queued")
            .values(state="acting", attempts=c.attempts + 1, marked=False)
        )
        rows = db.session.execute(select(RECIPIENTS).where(c.id.in_(ids)).order_by(c.position))
        return [dict(row._mapping) for row in rows]

    def act(self, recipient: dict[str, Any]) -> Outcome:
        db.session.execute(update(RECIPIENTS).where(RECIPIENTS.c.id == recipient["id"]).values(marked=True))
        checkpoint(CHECKPOINT)  # as a message stored pending before the provider is called
        return self.behave(recipient, self)

    def record(self, recipient: dict[str, Any], outcome: Outcome, retry_at: datetime | None) -> None:
        state = {Outcome.DONE: "done", Outcome.LIVE: "live"}.get(outcome, "queued" if retry_at else "failed")
        db.session.execute(
            update(RECIPIENTS).where(RECIPIENTS.c.id == recipient["id"]).values(state=state, due_at=retry_at)
        )

    def attempts(self, recipient: dict[str, Any]) -> int:
        return int(recipient["attempts"])

    def count_live(self) -> int:
        c = RECIPIENTS.c
        return int(
            db.session.scalar(
                select(func.count()).where(c.campaign_id == self.campaign_id, c.state.in_(LIVE_STATES))
            )
            or 0
        )

    def next_due(self) -> datetime | None:
        c = RECIPIENTS.c
        return db.session.scalar(
            select(func.min(c.due_at)).where(c.campaign_id == self.campaign_id, c.state == "queued")
        )

    def complete(self) -> None:
        db.session.execute(
            update(CAMPAIGNS)
            .where(CAMPAIGNS.c.id == self.campaign_id, CAMPAIGNS.c.status == "running")
            .values(status="completed")
        )


class Provider:
    """The outside world: every act it received, in order (a fake Graph API or Twilio)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acts: list[tuple[int, datetime]] = []

    def receive(self, recipient: dict[str, Any], at: datetime | None = None) -> None:
        with self.lock:
            self.acts.append((recipient["id"], at or utcnow()))

    def per_recipient(self) -> Counter[int]:
        return Counter(recipient_id for recipient_id, _ in self.acts)


@pytest.fixture
def tables(app: Flask) -> Iterator[None]:
    with app.app_context():
        METADATA.create_all(db.engine)
    yield
    with app.app_context():
        db.session.remove()
        METADATA.drop_all(db.engine)


def _campaign(app: Flask, count: int) -> str:
    campaign_id = uuid.uuid4().hex
    with in_environment(app, LIVE):
        db.session.execute(CAMPAIGNS.insert().values(id=campaign_id, status="running"))
        db.session.execute(
            RECIPIENTS.insert(),
            [
                {
                    "id": i,
                    "campaign_id": campaign_id,
                    "position": i,
                    "state": "queued",
                    "attempts": 0,
                    "marked": False,
                }
                for i in range(count)
            ],
        )
    return campaign_id


def _rows(app: Flask) -> dict[int, dict[str, Any]]:
    with app.app_context():
        rows = [dict(r._mapping) for r in db.session.execute(select(RECIPIENTS))]
        db.session.remove()
    return {row["id"]: row for row in rows}


def _campaign_row(app: Flask, campaign_id: str) -> dict[str, Any]:
    with app.app_context():
        row = dict(db.session.execute(select(CAMPAIGNS).where(CAMPAIGNS.c.id == campaign_id)).one()._mapping)
        db.session.remove()
    return row


def _run(app: Flask, area: FakeArea, policy: Policy, **kwargs: Any) -> campaigns.RunResult[dict[str, Any]]:
    with in_environment(app, LIVE):
        return campaigns.run(area, policy, **kwargs)


def test_two_workers_one_killed_mid_batch_and_restarted_act_on_each_recipient_once(
    app: Flask, tables: None
) -> None:
    campaign_id = _campaign(app, 30)
    provider = Provider()
    policy = Policy(checkpoint=CHECKPOINT, batch_size=5, lease_seconds=1)
    hung, let_go = threading.Event(), threading.Event()

    def dies_on_the_eighth(recipient: dict[str, Any], area: FakeArea) -> Outcome:
        provider.receive(recipient)
        if recipient["position"] == 7:  # the third of its second batch: acted on, its outcome never stored
            hung.set()
            assert let_go.wait(30)
            raise Killed  # (a killed process never runs again: this one only unwinds)
        return Outcome.DONE

    def sends(recipient: dict[str, Any], area: FakeArea) -> Outcome:
        provider.receive(recipient)
        return Outcome.DONE

    errors: list[BaseException] = []

    def first_worker() -> None:
        try:
            _run(app, FakeArea(campaign_id, dies_on_the_eighth), policy)
        except BaseException as error:  # reported below
            errors.append(error)

    worker = threading.Thread(target=first_worker)
    worker.start()
    assert hung.wait(30)
    # a second worker started beside the live one (a resume) leaves at once, acting on nobody
    assert _run(app, FakeArea(campaign_id, sends), policy).state == "busy"
    assert len(provider.acts) == 8
    # the first worker is gone (its lease expires): the second takes over, settles what it left in flight
    # (the recipient acted on is "unknown", never acted on again; the rest of its batch is queued again)
    time.sleep(1.2)
    taken_over = _run(app, FakeArea(campaign_id, sends), policy)
    assert taken_over.state == "completed"
    assert [r["position"] for r in taken_over.acted] == list(range(8, 30))
    # the dead worker's last moments: its hand-back cannot free the lease it no longer holds
    let_go.set()
    worker.join(30)
    assert len(errors) == 1 and isinstance(errors[0], Killed)
    # it restarts: the campaign is over, it acts on nobody
    assert _run(app, FakeArea(campaign_id, sends), policy).state == "stopped"

    assert set(provider.per_recipient().values()) == {1} and len(provider.per_recipient()) == 30
    states = Counter(row["state"] for row in _rows(app).values())
    assert states == {"done": 29, "unknown": 1}
    assert _rows(app)[7]["state"] == "unknown"
    assert {row["attempts"] for row in _rows(app).values()} == {1}
    campaign = _campaign_row(app, campaign_id)
    assert campaign["status"] == "completed" and campaign["lease_owner"] is None


def test_a_worker_that_fails_inside_its_process_hands_the_campaign_back_and_a_rerun_finishes_it(
    app: Flask, tables: None
) -> None:
    campaign_id = _campaign(app, 6)
    provider = Provider()
    policy = Policy(checkpoint=CHECKPOINT, batch_size=3)

    class Boom(Exception):
        pass

    def fails_before_the_fifth(recipient: dict[str, Any], area: FakeArea) -> Outcome:
        if recipient["position"] == 4:
            raise Boom  # before any outside effect
        provider.receive(recipient)
        return Outcome.DONE

    with pytest.raises(Boom):
        _run(app, FakeArea(campaign_id, fails_before_the_fifth), policy)
    assert _campaign_row(app, campaign_id)["lease_owner"] is None  # handed back at once, no expiry to wait
    assert [row["state"] for _, row in sorted(_rows(app).items())] == ["done"] * 4 + ["acting"] * 2

    def sends(recipient: dict[str, Any], area: FakeArea) -> Outcome:
        provider.receive(recipient)
        return Outcome.DONE

    assert _run(app, FakeArea(campaign_id, sends), policy).state == "completed"
    # the act on the fifth had stored its mark before failing: maybe acted on, so never again
    assert _rows(app)[4]["state"] == "unknown"
    assert sorted(provider.per_recipient()) == [0, 1, 2, 3, 5]
    assert set(provider.per_recipient().values()) == {1}


def test_the_concurrency_limit_is_never_exceeded_with_two_workers(app: Flask, tables: None) -> None:
    campaign_id = _campaign(app, 24)
    provider = Provider()
    policy = Policy(checkpoint=CHECKPOINT, max_concurrent=3, batch_size=10)
    seen_live: list[int] = []

    def dials(recipient: dict[str, Any], area: FakeArea) -> Outcome:
        provider.receive(recipient)
        seen_live.append(area.count_live())  # this call included: every call ringing or talking now
        return Outcome.LIVE  # the call goes on after the act; the "provider" ends it later

    def hang_up_some() -> None:
        """The provider's status callbacks: a live call ends (the area settles it with next_attempt)."""
        with in_environment(app, LIVE):
            c = RECIPIENTS.c
            live = db.session.execute(
                for_update(select(c.id, c.attempts).where(c.state == "live").order_by(c.id).limit(2))
            ).all()
            for recipient_id, _ in live:
                db.session.execute(update(RECIPIENTS).where(c.id == recipient_id).values(state="done"))

    stop = threading.Event()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while not stop.is_set():
                result = _run(app, FakeArea(campaign_id, dials), policy, poll_seconds=0)
                if result.state in ("completed", "stopped"):
                    return
                time.sleep(0.01)
        except BaseException as error:  # reported below
            errors.append(error)

    workers = [threading.Thread(target=worker) for _ in range(2)]
    for thread in workers:
        thread.start()
    deadline = time.monotonic() + 90
    while _campaign_row(app, campaign_id)["status"] != "completed" and time.monotonic() < deadline:
        hang_up_some()
        time.sleep(0.02)
    stop.set()
    for thread in workers:
        thread.join(30)
    assert not errors, errors
    assert _campaign_row(app, campaign_id)["status"] == "completed"
    assert seen_live and max(seen_live) <= 3
    assert max(seen_live) == 3  # the limit was reached, not merely respected by running one at a time
    assert set(provider.per_recipient().values()) == {1} and len(provider.per_recipient()) == 24


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def test_attempts_never_exceed_the_limit_and_each_retry_waits_retry_after(app: Flask, tables: None) -> None:
    campaign_id = _campaign(app, 5)
    provider = Provider()
    start = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
    clock = Clock(start)
    retry = timedelta(minutes=10)
    policy = Policy(checkpoint=CHECKPOINT, max_attempts=3, retry_after=retry, batch_size=2)

    def odd_ones_fail(recipient: dict[str, Any], area: FakeArea) -> Outcome:
        provider.receive(recipient, clock())
        return Outcome.RETRY if recipient["position"] % 2 else Outcome.DONE

    area = FakeArea(campaign_id, odd_ones_fail)
    first = _run(app, area, policy, clock=clock)
    assert first.state == "deferred" and first.resume_at == start + retry
    assert len(first.acted) == 5
    assert {row["due_at"] for row in _rows(app).values() if row["state"] == "queued"} == {start + retry}

    clock.at = start + retry - timedelta(seconds=1)  # not yet due: nothing is acted on
    early = _run(app, area, policy, clock=clock)
    assert early.state == "deferred" and early.resume_at == start + retry and early.acted == []
    assert len(provider.acts) == 5

    clock.at = start + retry
    second = _run(app, area, policy, clock=clock)
    assert [r["position"] for r in second.acted] == [1, 3]
    assert second.state == "deferred" and second.resume_at == start + 2 * retry

    clock.at = start + 2 * retry
    third = _run(app, area, policy, clock=clock)
    assert [r["position"] for r in third.acted] == [1, 3]
    assert third.state == "completed"  # the third failure was the last attempt: failed for good

    clock.at = start + 10 * retry
    assert _run(app, area, policy, clock=clock).acted == []
    rows = _rows(app)
    assert {i: rows[i]["state"] for i in rows} == {0: "done", 1: "failed", 2: "done", 3: "failed", 4: "done"}
    assert max(row["attempts"] for row in rows.values()) == 3
    assert provider.per_recipient() == {0: 1, 1: 3, 2: 1, 3: 3, 4: 1}
    times = {i: [at for r, at in provider.acts if r == i] for i in (1, 3)}
    assert all(b - a >= retry for acts in times.values() for a, b in itertools.pairwise(acts))


def test_next_attempt_is_never_beyond_the_limit() -> None:
    policy = Policy(checkpoint=CHECKPOINT, max_attempts=2, retry_after=timedelta(minutes=5))
    now = datetime(2026, 3, 2, tzinfo=UTC)
    assert campaigns.next_attempt(policy, 1, now) == now + timedelta(minutes=5)
    assert campaigns.next_attempt(policy, 2, now) is None
    assert campaigns.next_attempt(policy, 3, now) is None


def test_a_window_that_says_not_now_defers_without_acting(app: Flask, tables: None) -> None:
    campaign_id = _campaign(app, 10)
    provider = Provider()
    opens = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
    closes = opens + timedelta(minutes=3)
    clock = Clock(opens - timedelta(hours=2))

    def window(now: datetime) -> datetime | None:
        """Open 09:00-09:03 every day: None while open, else the next opening."""
        day_open = now.replace(hour=9, minute=0, second=0, microsecond=0)
        if day_open <= now < day_open.replace(minute=3):
            return None
        return day_open if now < day_open else day_open + timedelta(days=1)

    def one_minute_each(recipient: dict[str, Any], area: FakeArea) -> Outcome:
        provider.receive(recipient, clock())
        clock.at += timedelta(minutes=1)
        return Outcome.DONE

    area = FakeArea(campaign_id, one_minute_each)
    policy = Policy(checkpoint=CHECKPOINT, window=window, batch_size=1)
    early = _run(app, area, policy, clock=clock)
    assert early.state == "deferred" and early.resume_at == opens and early.acted == []
    assert provider.acts == []
    rows = _rows(app)
    assert {row["state"] for row in rows.values()} == {"queued"} and {
        r["attempts"] for r in rows.values()
    } == {0}
    assert _campaign_row(app, campaign_id)["lease_owner"] is None

    clock.at = opens
    during = _run(app, area, policy, clock=clock)
    assert len(during.acted) == 3  # 09:00, 09:01, 09:02; at 09:03 the window has closed
    assert during.state == "deferred" and during.resume_at == opens + timedelta(days=1)
    assert all(opens <= at < closes for _, at in provider.acts)

    clock.at = opens + timedelta(days=1)
    assert len(_run(app, area, policy, clock=clock).acted) == 3
    assert set(provider.per_recipient().values()) == {1} and len(provider.acts) == 6
