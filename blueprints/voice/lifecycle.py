"""A call's lifecycle: status reports applied idempotently and never backwards (docs/voice.md, "States").

Used by the Twilio status callbacks and the simulator alike: a report carries the provider's sequence
number; one not above the last applied is a duplicate or late and changes nothing; a newer one moves the
call only forward (queued < ringing < in_progress < terminal), and a terminal call never changes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from blueprints.voice.models import RANK, TERMINAL, Call
from blueprints.voice.provider import StatusUpdate
from blueprints.voice.schemas import CallOut
from core import events
from core.db import utcnow

EVENT = "call.updated"


def publish(call: Call) -> None:
    events.publish(EVENT, call.organization_id, {"call": CallOut.dump(call)})


def apply_update(call: Call, update: StatusUpdate) -> bool:
    """Apply one report to ``call``; True when the call changed (and ``call.updated`` was published)."""
    if update.status is None:
        return False
    if update.sequence >= 0:
        if update.sequence <= call.last_sequence_number:
            return False
        call.last_sequence_number = update.sequence
    if call.status in TERMINAL or RANK[update.status] <= RANK[call.status]:
        return False
    at = update.at or utcnow()
    call.status = update.status
    if update.status == "in_progress":
        call.answered_at = call.answered_at or at
    elif update.status in TERMINAL:
        end(call, update.status, at=at, duration_seconds=update.duration_seconds)
    if update.recording_url:
        call.recording_url = update.recording_url
    publish(call)
    return True


def end(
    call: Call,
    status: str,
    *,
    at: datetime | None = None,
    duration_seconds: int | None = None,
    reason: str | None = None,
) -> None:
    at = at or utcnow()
    call.status = status
    call.ended_at = at
    # An AI call the agent transferred ends, as far as we know it, with the person's leg.
    transferred = status == "completed" and bool(call.transfer)
    call.ended_reason = reason or ("transferred" if transferred else status)
    if duration_seconds is not None:
        call.duration_seconds = duration_seconds
        if call.answered_at is None and duration_seconds > 0:
            call.answered_at = at - timedelta(seconds=duration_seconds)  # the answered report came late
    elif call.answered_at is not None and status == "completed":
        call.duration_seconds = max(0, int((at - call.answered_at).total_seconds()))
    elif status != "completed":
        call.duration_seconds = 0
    if call.campaign_id is not None:
        for handler in _ended:
            handler(call)


# What happens when a campaign's call ends: ``services.campaigns.settle`` (the recipient's outcome, and
# the campaign's next run into the freed place), set by the area's ``init_app`` because the campaigns sit
# above this module (they place calls through the calls' service, which uses it).
_ended: list[Callable[[Call], None]] = []


def on_campaign_call_ended(handler: Callable[[Call], None]) -> None:
    _ended[:] = [handler]
