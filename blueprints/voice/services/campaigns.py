"""Voice campaigns: an AI agent calls many numbers in the background, within a window, at most
``max_concurrent`` at once, each number until it answers or ``max_attempts`` run out (docs/voice.md,
"Campaigns").

The lease, the claim loop, the concurrency limit and the window's deferral are the core campaign engine's
(``core/campaigns.py``); this module says what a recipient is and how one is called. A claimed recipient
moves to ``calling``; its call is stored and bound to it (``call_id``) and committed before the provider is
dialled, so a worker that dies mid-dial leaves a trace: the next worker finds the call without the
provider's id and marks the recipient ``failed`` (it may have rung: never dialled again) instead of calling
twice. A placed call is ``LIVE`` for the engine until it ends: the call's lifecycle (a status callback, the
simulator) calls :func:`settle`, which records the outcome (``completed`` is final; ``busy``,
``no_answer``, ``failed`` are tried again ``retry_minutes`` later until ``max_attempts``) and enqueues the
next run into the freed place. A run that must wait (the window is closed, retries are not yet due) stores
``next_run_at``; the periodic sweep enqueues it then.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import func, or_, select, update

from blueprints.messaging.models import Contact
from blueprints.voice import lifecycle
from blueprints.voice.models import (
    RECIPIENT_STATES,
    TERMINAL,
    Call,
    VoiceCampaign,
    VoiceCampaignRecipient,
)
from blueprints.voice.services import calls
from blueprints.voice.services.numbers import Refusal, check_member, e164, find_number
from core import campaigns as engine
from core.db import db, for_update, utcnow
from core.errors import ApiError
from core.events import publish
from core.jobs import job, periodic
from core.pagination import Page, paginate
from core.phones import InvalidPhoneNumber, normalize_phone
from core.tenancy import find_for_org, get_for_org
from core.timeutil import as_utc
from core.uow import checkpoint

MAX_RECIPIENTS = 10_000
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
ACTIVE = ("scheduled", "running")
RETRIED = ("busy", "no_answer", "failed")  # a call that ended so is tried again; completed is final
POLL_SECONDS = 30.0  # the concurrency limit reached: a call's end enqueues the next run sooner


def clock() -> datetime:
    """Now, for the campaigns' runs and windows (a seam: the tests move time)."""
    return utcnow()


@dataclass(frozen=True)
class RecipientIn:
    number: str
    contact_id: str | None = None
    variables: dict[str, Any] | None = None


@dataclass(frozen=True)
class Window:
    timezone: str
    days: list[str]
    start: str  # HH:MM, local
    end: str  # HH:MM, local, after start

    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def next_open(self, now: datetime) -> datetime | None:
        """None when ``now`` is inside the window, else the next moment it opens (the engine's window)."""
        zone = self.zone()
        local = as_utc(now).astimezone(zone)
        start, end = _hhmm(self.start), _hhmm(self.end)
        if DAYS[local.weekday()] in self.days and start <= local.time().replace(tzinfo=None) < end:
            return None
        for ahead in range(8):
            day: date = local.date() + timedelta(days=ahead)
            if DAYS[day.weekday()] not in self.days:
                continue
            opens = datetime.combine(day, start, tzinfo=zone)
            if opens > local:
                return opens.astimezone(as_utc(now).tzinfo)
        return None  # unreachable for a window with at least one day


@dataclass(frozen=True)
class CampaignSpec:
    name: str
    agent_id: str
    from_number: str
    recipients: list[RecipientIn]
    window: Window
    max_concurrent: int
    max_attempts: int
    retry_minutes: int
    exclude_list: list[str] = field(default_factory=list)


@dataclass
class CampaignReport:
    """A campaign with its count per recipient state (and, at creation, the rejected rows)."""

    campaign: VoiceCampaign
    counts: dict[str, int]
    rejected: list[dict[str, Any]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.campaign, name)


def _hhmm(value: str) -> time:
    hours, minutes = value.split(":")
    return time(int(hours), int(minutes))


def _check_window(window: Window) -> None:
    try:
        window.zone()
    except (ZoneInfoNotFoundError, ValueError):
        raise Refusal(
            400, "window.timezone: not a known time zone", code="invalid", param="window.timezone"
        ) from None
    if _hhmm(window.end) <= _hhmm(window.start):
        raise Refusal(400, "window.end: must be after window.start", code="invalid", param="window.end")


def _normalized(value: str) -> str | None:
    try:
        return normalize_phone(value)
    except InvalidPhoneNumber:
        return None


def create_campaign(
    organization_id: uuid.UUID, spec: CampaignSpec, *, created_by: str | None = None
) -> CampaignReport:
    """Store a ``draft`` campaign with its accepted recipients: valid E.164, once each, not excluded;
    every other row is reported in ``rejected`` (``invalid``, ``duplicate``, ``excluded``)."""
    agent_id = check_member(organization_id, spec.agent_id, ai=True, param="agent_id")
    number = find_number(organization_id, e164(spec.from_number, "from_number"))
    if number is None:
        raise Refusal(
            400,
            "from_number: not a number of this organization",
            code="number_not_found",
            param="from_number",
        )
    _check_window(spec.window)
    excluded = {n for n in (_normalized(raw) for raw in spec.exclude_list) if n}
    _check_contacts(organization_id, spec.recipients)
    accepted: dict[str, RecipientIn] = {}
    rejected: list[dict[str, Any]] = []
    for row, item in enumerate(spec.recipients):
        normal = _normalized(item.number)
        reason = (
            "invalid"
            if normal is None
            else "excluded"
            if normal in excluded
            else "duplicate"
            if normal in accepted
            else None
        )
        if reason or normal is None:
            rejected.append({"row": row, "number": item.number, "reason": reason})
            continue
        accepted[normal] = item
    if not accepted:
        raise Refusal(400, "recipients: no number left to call", code="invalid", param="recipients")
    campaign = VoiceCampaign(
        organization_id=organization_id,
        name=spec.name,
        agent_id=agent_id,
        from_number=number.number,
        status="draft",
        window={
            "timezone": spec.window.timezone,
            "days": [d for d in DAYS if d in spec.window.days],
            "start": spec.window.start,
            "end": spec.window.end,
        },
        max_concurrent=spec.max_concurrent,
        max_attempts=spec.max_attempts,
        retry_minutes=spec.retry_minutes,
        recipients_total=len(accepted),
        rejected_total=len(rejected),
        created_by=created_by,
    )
    db.session.add(campaign)
    db.session.flush()
    db.session.execute(
        VoiceCampaignRecipient.__table__.insert(),
        [
            {
                "id": uuid.uuid4(),
                "organization_id": organization_id,
                "campaign_id": campaign.id,
                "position": position,
                "number": normal,
                "contact_id": item.contact_id,
                "variables": item.variables,
                "state": "pending",
                "attempts": 0,
                "attempt_log": [],
                "created_at": campaign.created_at,
                "updated_at": campaign.created_at,
            }
            for position, (normal, item) in enumerate(accepted.items())
        ],
    )
    _changed(campaign)
    return CampaignReport(campaign, _counts([campaign.id])[campaign.id], rejected)


def _check_contacts(organization_id: uuid.UUID, recipients: list[RecipientIn]) -> None:
    """Every ``contact_id`` given is one of the organization's contacts (one query for all)."""
    wanted: dict[uuid.UUID, int] = {}
    for row, item in enumerate(recipients):
        if item.contact_id is None:
            continue
        try:
            wanted.setdefault(uuid.UUID(item.contact_id), row)
        except ValueError:
            raise _bad_contact(row) from None
    if not wanted:
        return
    found = set(
        db.session.scalars(
            select(Contact.id).where(Contact.organization_id == organization_id, Contact.id.in_(wanted))
        )
    )
    for contact_id, row in wanted.items():
        if contact_id not in found:
            raise _bad_contact(row)


def _bad_contact(row: int) -> Refusal:
    param = f"recipients.{row}.contact_id"
    return Refusal(400, f"{param}: not a contact of this organization", code="contact_not_found", param=param)


def _campaign(organization_id: uuid.UUID, campaign_id: str) -> VoiceCampaign:
    return get_for_org(VoiceCampaign, campaign_id, organization_id, "Campaign")


def _counts(campaign_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[str, int]]:
    counts: dict[uuid.UUID, Counter[str]] = {c: Counter() for c in campaign_ids}
    if campaign_ids:
        rows = db.session.execute(
            select(VoiceCampaignRecipient.campaign_id, VoiceCampaignRecipient.state, func.count())
            .where(VoiceCampaignRecipient.campaign_id.in_(campaign_ids))
            .group_by(VoiceCampaignRecipient.campaign_id, VoiceCampaignRecipient.state)
        )
        for campaign_id, state, count in rows:
            counts[campaign_id][state] = count
    return {c: {state: n.get(state, 0) for state in RECIPIENT_STATES} for c, n in counts.items()}


def get_campaign(organization_id: uuid.UUID, campaign_id: str) -> CampaignReport:
    campaign = _campaign(organization_id, campaign_id)
    return CampaignReport(campaign, _counts([campaign.id])[campaign.id])


def list_campaigns(
    organization_id: uuid.UUID, *, status: str | None = None, skip: int = 0, take: int = 20
) -> Page[CampaignReport]:
    statement = select(VoiceCampaign).where(VoiceCampaign.organization_id == organization_id)
    if status:
        statement = statement.where(VoiceCampaign.status == status)
    page = paginate(
        statement.order_by(VoiceCampaign.created_at.desc(), VoiceCampaign.id), offset=skip, limit=take
    )
    counts = _counts([c.id for c in page.items])
    return Page([CampaignReport(c, counts[c.id]) for c in page.items], page.total)


def list_recipients(
    organization_id: uuid.UUID, campaign_id: str, *, state: str | None = None, skip: int = 0, take: int = 20
) -> Page[VoiceCampaignRecipient]:
    campaign = _campaign(organization_id, campaign_id)
    statement = select(VoiceCampaignRecipient).where(VoiceCampaignRecipient.campaign_id == campaign.id)
    if state:
        statement = statement.where(VoiceCampaignRecipient.state == state)
    return paginate(statement.order_by(VoiceCampaignRecipient.position), offset=skip, limit=take)


# ---- transitions ------------------------------------------------------------------------------------------

# action -> the states it may leave
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "start": ("draft",),
    "pause": ("scheduled", "running"),
    "resume": ("paused",),
    "cancel": ("draft", "scheduled", "running", "paused"),
}


def _transition(organization_id: uuid.UUID, campaign_id: str, action: str) -> VoiceCampaign:
    campaign = _campaign(organization_id, campaign_id)
    allowed = TRANSITIONS[action]
    # a compare-and-set: a concurrent transition (or the worker completing it) wins or loses as a whole
    target = {"pause": "paused", "cancel": "canceled"}.get(action, "running")
    values: dict[str, Any] = {"status": target}
    if action == "start":
        values["started_at"] = utcnow()
    if action == "cancel":
        values["canceled_at"] = utcnow()
    moved = db.session.execute(
        update(VoiceCampaign)
        .where(VoiceCampaign.id == campaign.id, VoiceCampaign.status.in_(allowed))
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    db.session.refresh(campaign)
    if not moved.rowcount:
        raise Refusal(
            409,
            f"Campaign is {campaign.status}: it cannot {action}",
            code="campaign_state",
            param="status",
        )
    if action == "cancel":
        db.session.execute(
            update(VoiceCampaignRecipient)
            .where(
                VoiceCampaignRecipient.campaign_id == campaign.id, VoiceCampaignRecipient.state == "pending"
            )
            .values(state="canceled", updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
    if action in ("start", "resume"):
        _schedule_or_run(campaign)
    _changed(campaign)
    return campaign


def _schedule_or_run(campaign: VoiceCampaign) -> None:
    """Running now, or ``scheduled`` until the window opens (its run enqueued either way: it defers)."""
    if _window(campaign).next_open(clock()) is not None:
        campaign.status = "scheduled"
    campaign.next_run_at = None
    db.session.flush()
    run_campaign_job.enqueue(str(campaign.organization_id), str(campaign.id))


def transition(organization_id: uuid.UUID, campaign_id: str, action: str) -> CampaignReport:
    campaign = _transition(organization_id, campaign_id, action)
    return CampaignReport(campaign, _counts([campaign.id])[campaign.id])


def _changed(campaign: VoiceCampaign) -> None:
    publish(
        "campaign.updated",
        campaign.organization_id,
        {"campaign_id": str(campaign.id), "status": campaign.status},
    )


# ---- calling ----------------------------------------------------------------------------------------------


def _window(campaign: VoiceCampaign) -> Window:
    w = campaign.window
    return Window(w["timezone"], list(w["days"]), w["start"], w["end"])


def policy_for(campaign: VoiceCampaign) -> engine.Policy:
    return engine.Policy(
        checkpoint="campaign.progress",
        max_concurrent=campaign.max_concurrent,
        max_attempts=campaign.max_attempts,
        retry_after=timedelta(minutes=campaign.retry_minutes),
        window=_window(campaign).next_open,
        batch_size=campaign.max_concurrent,
    )


def _log(recipient: VoiceCampaignRecipient, call: Call, outcome: str | None) -> None:
    """The attempt of ``call`` in the recipient's log (reassigned: JSON columns track assignment only)."""
    log = [dict(entry) for entry in recipient.attempt_log or []]
    for entry in log:
        if entry["call_id"] == str(call.id):
            entry["outcome"] = outcome
            break
    else:
        log.append({"call_id": str(call.id), "outcome": outcome, "at": clock().isoformat()})
    recipient.attempt_log = log


class _VoiceCampaign:
    """A voice campaign as the core engine sees it: ``pending -> calling`` by the claim; a placed call is
    ``LIVE`` until :func:`settle`."""

    def __init__(self, campaign: VoiceCampaign) -> None:
        self.campaign = campaign
        self.lease = engine.Lease(VoiceCampaign.__table__, campaign.id)

    def _recipients(self) -> Any:
        return select(VoiceCampaignRecipient).where(VoiceCampaignRecipient.campaign_id == self.campaign.id)

    def is_active(self) -> bool:
        status = db.session.scalar(select(VoiceCampaign.status).where(VoiceCampaign.id == self.campaign.id))
        return status in ACTIVE

    def recover(self) -> dict[str, int]:
        """Settle recipients left ``calling`` by a dead worker (no other worker holds the lease): no call
        stored, nothing was dialled (pending again, the attempt not counted); a call without the provider's
        id may have rung (``failed``, never again); a live call is left to its callback; an ended one is
        settled now."""
        outcome: Counter[str] = Counter()
        stuck = list(
            db.session.scalars(
                self._recipients()
                .where(VoiceCampaignRecipient.state == "calling")
                .order_by(VoiceCampaignRecipient.position)
            )
        )
        call_ids = [r.call_id for r in stuck if r.call_id is not None]
        found = (
            {c.id: c for c in db.session.scalars(select(Call).where(Call.id.in_(call_ids)))}
            if call_ids
            else {}
        )
        for recipient in stuck:
            call = found.get(recipient.call_id) if recipient.call_id else None
            if call is None:
                recipient.state, recipient.call_id = "pending", None
                recipient.attempts = max(0, recipient.attempts - 1)
                outcome["requeued"] += 1
            elif call.provider_call_id is None and call.status not in TERMINAL:
                lifecycle.end(call, "failed", reason="worker_lost")  # settles the recipient (settle)
                lifecycle.publish(call)
                outcome["unknown"] += 1
            elif call.status in TERMINAL:
                settle(call)
                outcome["settled"] += 1
            else:
                outcome["live"] += 1
        db.session.flush()
        return dict(outcome)

    def claim(self, limit: int, now: datetime, max_attempts: int) -> list[VoiceCampaignRecipient]:
        r = VoiceCampaignRecipient
        ids = db.session.scalars(
            for_update(
                select(r.id)
                .where(
                    r.campaign_id == self.campaign.id,
                    r.state == "pending",
                    r.attempts < max_attempts,
                    or_(r.due_at.is_(None), r.due_at <= now),
                )
                .order_by(r.position)
                .limit(limit),
                skip_locked=True,
            )
        ).all()
        if not ids:
            return []
        db.session.execute(
            update(r)
            .where(r.id.in_(ids), r.state == "pending")
            .values(state="calling", attempts=r.attempts + 1, call_id=None, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return list(
            db.session.scalars(
                select(r)
                .where(r.id.in_(ids), r.state == "calling")
                .order_by(r.position)
                .execution_options(populate_existing=True)
            )
        )

    def _bind(self, recipient: VoiceCampaignRecipient, call: Call) -> None:
        recipient.call_id = call.id
        _log(recipient, call, None)
        db.session.flush()
        checkpoint("campaign.progress")  # the call is known before it is dialled (module docstring)
        # Begin the next transaction now: outside one, work queued for "after the commit" (the provider's
        # status jobs) would run at once, before the dialled call's provider id is even stored.
        if not db.session().in_transaction():
            db.session.begin()

    def act(self, recipient: VoiceCampaignRecipient) -> engine.Outcome:
        campaign = self.campaign
        draft = calls.CallDraft(
            to=recipient.number,
            from_number=campaign.from_number,
            agent_id=campaign.agent_id,
            contact_id=recipient.contact_id,
            metadata=dict(recipient.variables or {}),
        )
        try:
            calls.place_call(
                campaign.organization_id,
                draft,
                campaign_id=campaign.id,
                before_dial=lambda call: self._bind(recipient, call),
            )
        except ApiError as error:
            call = find_for_org(Call, recipient.call_id, campaign.organization_id)
            if call is not None and call.status not in TERMINAL:
                # the provider refused: the stored call fails, and its settling retries the recipient
                lifecycle.end(call, "failed", reason=(error.code or "provider_error")[:32])
                lifecycle.publish(call)
            elif call is None:
                recipient.state, recipient.error = "failed", error.message[:200]
            db.session.flush()
            return engine.Outcome.DONE
        return engine.Outcome.LIVE

    def record(
        self, recipient: VoiceCampaignRecipient, outcome: engine.Outcome, retry_at: datetime | None
    ) -> None:
        pass  # a live call is settled when it ends (settle); a refusal was settled by act

    def attempts(self, recipient: VoiceCampaignRecipient) -> int:
        return recipient.attempts

    def count_live(self) -> int:
        return int(
            db.session.scalar(
                select(func.count())
                .select_from(VoiceCampaignRecipient)
                .where(
                    VoiceCampaignRecipient.campaign_id == self.campaign.id,
                    VoiceCampaignRecipient.state == "calling",
                )
            )
            or 0
        )

    def next_due(self) -> datetime | None:
        return db.session.scalar(
            select(func.min(VoiceCampaignRecipient.due_at)).where(
                VoiceCampaignRecipient.campaign_id == self.campaign.id,
                VoiceCampaignRecipient.state == "pending",
                VoiceCampaignRecipient.attempts < self.campaign.max_attempts,
            )
        )

    def complete(self) -> None:
        open_ = db.session.scalar(
            select(func.count())
            .select_from(VoiceCampaignRecipient)
            .where(
                VoiceCampaignRecipient.campaign_id == self.campaign.id,
                VoiceCampaignRecipient.state.in_(("pending", "calling")),
            )
        )
        if open_:
            return
        done = db.session.execute(
            update(VoiceCampaign)
            .where(VoiceCampaign.id == self.campaign.id, VoiceCampaign.status.in_(ACTIVE))
            .values(status="completed", completed_at=utcnow(), next_run_at=None)
            .execution_options(synchronize_session=False)
        )
        if done.rowcount:
            db.session.refresh(self.campaign)
            _changed(self.campaign)


def settle(call: Call) -> None:
    """A campaign's call ended (the lifecycle's hook): its recipient's attempt is recorded, and the next
    run enqueued to claim into the freed place."""
    recipient = db.session.scalars(
        for_update(
            select(VoiceCampaignRecipient).where(
                VoiceCampaignRecipient.campaign_id == call.campaign_id,
                VoiceCampaignRecipient.call_id == call.id,
            )
        ).execution_options(populate_existing=True)
    ).first()
    if recipient is None or recipient.state != "calling":
        return  # settled already (a duplicate report), or not this campaign's current attempt
    campaign = find_for_org(VoiceCampaign, recipient.campaign_id, call.organization_id)
    if campaign is None:
        return
    _log(recipient, call, call.status)
    if call.ended_reason == "worker_lost":
        # the worker died while dialling: the phone may have rung, so never again (module docstring)
        recipient.state, recipient.error = "failed", "the worker stopped while this call was dialled"
    elif call.status == "completed":
        recipient.state = "completed"
    elif call.status in RETRIED:
        retry_at = engine.next_attempt(policy_for(campaign), recipient.attempts, clock())
        if retry_at is None:
            recipient.state = "exhausted"
        elif campaign.status == "canceled":
            recipient.state = "canceled"
        else:
            recipient.state, recipient.due_at = "pending", retry_at
    else:
        recipient.state = "failed"  # hung up through the API (canceled): someone meant it to stop
    recipient.updated_at = utcnow()
    db.session.flush()
    publish(
        "campaign.updated",
        campaign.organization_id,
        {"campaign_id": str(campaign.id), "status": campaign.status, "recipient_id": str(recipient.id)},
    )
    if campaign.status in ACTIVE:
        run_campaign_job.enqueue(str(campaign.organization_id), str(campaign.id))


def run_campaign(organization_id: uuid.UUID, campaign_id: str) -> engine.RunResult[Any]:
    """One run on the core engine; safe to call again or concurrently (only the lease holder calls)."""
    campaign = _campaign(organization_id, campaign_id)
    if campaign.status not in ACTIVE:
        return engine.RunResult("stopped")
    window = _window(campaign)
    if campaign.status == "scheduled" and window.next_open(clock()) is None:
        db.session.execute(
            update(VoiceCampaign)
            .where(VoiceCampaign.id == campaign.id, VoiceCampaign.status == "scheduled")
            .values(status="running")
            .execution_options(synchronize_session=False)
        )
        db.session.refresh(campaign)
        _changed(campaign)
    result = engine.run(
        _VoiceCampaign(campaign), policy_for(campaign), clock=clock, poll_seconds=POLL_SECONDS
    )
    if result.state == "deferred" and result.resume_at is not None:
        closed = window.next_open(clock()) is not None
        db.session.execute(
            update(VoiceCampaign)
            .where(VoiceCampaign.id == campaign.id, VoiceCampaign.status.in_(ACTIVE))
            .values(next_run_at=result.resume_at, **({"status": "scheduled"} if closed else {}))
            .execution_options(synchronize_session=False)
        )
    elif result.state in ("waiting", "completed"):
        db.session.execute(
            update(VoiceCampaign)
            .where(VoiceCampaign.id == campaign.id)
            .values(next_run_at=None)
            .execution_options(synchronize_session=False)
        )
    return result


def resume_due(now: datetime | None = None) -> list[str]:
    """Enqueue the runs of active campaigns that are due (their window opened, a retry fell due) or whose
    worker's lease expired. Run every minute by the queue."""
    now = now or clock()
    c = VoiceCampaign
    rows = db.session.execute(
        select(c.organization_id, c.id).where(
            c.status.in_(ACTIVE),
            or_(c.next_run_at.is_(None), c.next_run_at <= now),
            or_(c.lease_owner.is_(None), c.lease_expires_at < now),
        )
    ).all()
    for organization_id, campaign_id in rows:
        run_campaign_job.enqueue(str(organization_id), str(campaign_id))
    return [str(campaign_id) for _, campaign_id in rows]


@job(retries=0)
def run_campaign_job(organization_id: str, campaign_id: str) -> None:
    run_campaign(uuid.UUID(organization_id), campaign_id)


@periodic(minute="*")
def resume_due_campaigns() -> None:
    resume_due()
