"""The campaign engine: act on each recipient of a campaign once, paced, under one worker's lease.

An area that contacts many recipients in the background (the inbox's broadcasts; the voice area's
campaigns) owns its tables and says what "acting on one recipient" means; this engine owns the rest, in
one place: the worker's lease on the campaign row, the settling of recipients a dead worker left in
flight, the claim of due recipients, pacing, the concurrency limit, attempts and their retry delay, and
an optional window ("may we act now?"). docs/architecture.md, "Campaign engine", is the contract.

The area provides a :class:`CampaignArea` (a plain object with these methods, over its own tables); the
engine commits through :func:`core.uow.checkpoint` under the area's checkpoint name:

- ``claim(limit, now, max_attempts)``: move up to ``limit`` *due* recipients (queued, due at or before
  ``now``, fewer than ``max_attempts`` attempts) to the area's in-flight state, counting one more
  attempt, and return them; rows another worker holds are skipped (:func:`core.db.for_update` with
  ``skip_locked``: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, the write lock on SQLite);
- ``act(recipient) -> Outcome``: do one recipient (send, dial); anything the area must know after a
  crash (a message stored ``pending`` before the provider call) it makes durable itself;
- ``record(recipient, outcome, retry_at)``: store the attempt's outcome; ``retry_at`` is set when the
  recipient goes back to the queue (due then), ``None`` when the outcome is final;
- ``recover()``: settle the recipients a dead worker left in flight (nothing happened: queue again;
  something may have happened: never act again);
- ``attempts(recipient)``: the attempts it has had, this one included;
- ``count_live()``: recipients acted on whose outcome is still open (live calls); ``next_due()``: the
  earliest time a queued recipient becomes due (``None`` when none is queued);
- ``is_active()``: the campaign may go on (not paused or canceled); ``complete()``: nothing is left;
- ``lease``: a :class:`Lease` on the campaign's row (columns ``lease_owner``, ``lease_expires_at``).
"""

from __future__ import annotations

import enum
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Table, or_, update

from core.db import db, utcnow
from core.uow import checkpoint

R = TypeVar("R")

LEASE_SECONDS = 60  # longer than one provider call may take, plus the pacing wait


class Outcome(enum.Enum):
    """What acting on one recipient came to."""

    DONE = "done"  # final, whatever the result (sent, failed for good, unknown)
    RETRY = "retry"  # this attempt failed; the recipient may be tried again after the retry delay
    LIVE = "live"  # started (a call ringing): the area settles it later with next_attempt()


# A window: None when the campaign may act at ``now``, else the next time it may.
Window = Callable[[datetime], "datetime | None"]


@dataclass(frozen=True)
class Policy:
    """How a campaign runs. ``max_concurrent`` None: one recipient at a time (each act finishes before the
    next); otherwise at most that many live at once (``count_live()`` plus those claimed)."""

    checkpoint: str
    rate_per_second: float | None = None
    max_concurrent: int | None = None
    max_attempts: int = 1
    retry_after: timedelta = timedelta(0)
    window: Window | None = None
    batch_size: int = 1
    lease_seconds: int = LEASE_SECONDS


@dataclass(frozen=True)
class Lease:
    """The campaign row a worker leases: ``table`` has ``id``, ``lease_owner`` and ``lease_expires_at``."""

    table: Table
    key: Any

    def take(self, owner: str, seconds: int, now: datetime) -> bool:
        """Become the campaign's one worker: free, expired, or already ours. Renewing is taking it again."""
        c = self.table.c
        taken = db.session.execute(
            update(self.table)
            .where(
                c.id == self.key,
                or_(c.lease_owner.is_(None), c.lease_owner == owner, c.lease_expires_at < now),
            )
            .values(lease_owner=owner, lease_expires_at=now + timedelta(seconds=seconds))
        )
        return bool(getattr(taken, "rowcount", 0) == 1)

    def release(self, owner: str) -> None:
        c = self.table.c
        db.session.execute(
            update(self.table)
            .where(c.id == self.key, c.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )


class CampaignArea(Protocol[R]):
    lease: Lease

    def is_active(self) -> bool: ...
    def recover(self) -> Any: ...
    def claim(self, limit: int, now: datetime, max_attempts: int) -> list[R]: ...
    def act(self, recipient: R) -> Outcome: ...
    def record(self, recipient: R, outcome: Outcome, retry_at: datetime | None) -> None: ...
    def count_live(self) -> int: ...
    def next_due(self) -> datetime | None: ...
    def attempts(self, recipient: R) -> int: ...
    def complete(self) -> None: ...


class Pacer:
    """At most ``rate`` acts per second, spread evenly (no limit when ``rate`` is None)."""

    def __init__(self, rate: float | None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = 1.0 / max(rate, 1) if rate is not None else 0.0
        self.next_at = time.monotonic()
        self.sleep = sleep

    def wait(self) -> None:
        if not self.interval:
            return
        now = time.monotonic()
        if self.next_at > now:
            self.sleep(self.next_at - now)
        self.next_at = max(now, self.next_at) + self.interval


@dataclass
class RunResult(Generic[R]):
    """How a run ended: ``busy`` (another live worker holds the lease), ``stopped`` (the campaign is no
    longer active, or the lease was taken over), ``completed``, ``waiting`` (nothing due, live ones still
    open: their settling starts the next run) or ``deferred`` (run again at ``resume_at``: outside the
    window, the concurrency limit reached, or retries not yet due)."""

    state: str
    resume_at: datetime | None = None
    acted: list[R] = field(default_factory=list)


def next_attempt(policy: Policy, attempts: int, now: datetime) -> datetime | None:
    """When a recipient whose attempt number ``attempts`` failed is tried again; None: never (the limit)."""
    if attempts >= policy.max_attempts:
        return None
    return now + policy.retry_after


def run(
    area: CampaignArea[R],
    policy: Policy,
    *,
    clock: Callable[[], datetime] = utcnow,
    sleep: Callable[[float], None] = time.sleep,
    poll_seconds: float = 5.0,
) -> RunResult[R]:
    """Act on the campaign's due recipients until none is left, the campaign stops, or it must wait.

    Safe to call again, or concurrently, at any time: only the holder of the lease acts; a worker that
    takes the lease settles what a dead one left in flight (``recover``) before claiming; each claim is
    made durable (a checkpoint) before any recipient of it is acted on, and each outcome before the next
    act. ``poll_seconds``: how soon to run again when the concurrency limit is reached."""
    owner = uuid.uuid4().hex
    lease = area.lease
    if not lease.take(owner, policy.lease_seconds, clock()):
        return RunResult("busy")  # a live worker has it
    checkpoint(policy.checkpoint)
    result: RunResult[R] = RunResult("stopped")
    try:
        area.recover()
        pacer = Pacer(policy.rate_per_second, sleep)
        while True:
            now = clock()
            if not area.is_active() or not lease.take(owner, policy.lease_seconds, now):
                break  # paused or canceled, or our lease was taken over after it expired: stop at once
            if policy.window is not None:
                allowed_at = policy.window(now)
                if allowed_at is not None:
                    result = RunResult("deferred", allowed_at, result.acted)
                    break
            room = policy.batch_size
            if policy.max_concurrent is not None:
                room = min(room, policy.max_concurrent - area.count_live())
                if room <= 0:
                    result = RunResult("deferred", now + timedelta(seconds=poll_seconds), result.acted)
                    break
            batch = area.claim(room, now, policy.max_attempts)
            if not batch:
                due = area.next_due()
                if due is not None:
                    result = RunResult("deferred", due, result.acted)
                elif policy.max_concurrent is not None and area.count_live():
                    result = RunResult("waiting", None, result.acted)
                else:
                    area.complete()
                    result = RunResult("completed", None, result.acted)
                break
            checkpoint(policy.checkpoint)  # the claim (and the previous outcome) is durable before acting
            for index, recipient in enumerate(batch):
                if index:
                    checkpoint(policy.checkpoint)  # the previous outcome, before the next act
                pacer.wait()
                outcome = area.act(recipient)
                retry_at = None
                if outcome is Outcome.RETRY:
                    retry_at = next_attempt(policy, area.attempts(recipient), clock())
                area.record(recipient, outcome, retry_at)
                result.acted.append(recipient)
    except BaseException:
        # a crash inside this process: hand the campaign back at once (a killed process instead leaves the
        # lease to expire)
        db.session.rollback()
        lease.release(owner)
        checkpoint(policy.checkpoint)
        raise
    lease.release(owner)
    return result
