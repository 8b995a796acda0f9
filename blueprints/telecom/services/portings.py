"""Number portability (port-in), Mexican rules: a partner's customer brings their number to a new line.

The holder texts "NIP" to 051 from the line and receives a 4-digit NIP valid 5 calendar days; with it the
receiving carrier asks the ABD for the port, which runs at the next port window (within 24 h on business
days). Shape and states follow Gigs' porting resource (docs/telecom.md, "Portings"):

    (create) ─► pending ──(its line is ordered: POST /subscriptions {porting})──► requested
    requested ──(port window)──► completed            the line activates on the ported number
    requested ──(port window)──► declined ──PATCH nip/holder──► pending ─► requested …
    pending | requested | declined ──POST /cancel──► canceled
    pending | declined ──(the NIP lapses before the port is requested)──► expired

A porting is only sent to the ABD once the line that receives the number exists: the subscription created
with ``porting`` stays ``pending`` (its ``line_purchase`` order holds the plan's price) until the port
completes; a cancel or an expiry ends that line and releases the hold, a decline keeps both waiting for a
corrected request. Everything the carrier does runs as jobs; :func:`process_due` is the sweep (and what
tests call with a chosen ``now``) that settles what is due.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import phonenumbers
from sqlalchemy import select

from blueprints.telecom.carrier import CarrierDeclined, carrier_for
from blueprints.telecom.mexico import curp_problem, rfc_problem
from blueprints.telecom.models import Order, Subscription
from blueprints.telecom.models_portings import OPEN_STATUSES, Porting
from blueprints.telecom.services import kyc, ledger
from blueprints.telecom.services.common import CursorPage, conflict, cursor_page, invalid, publish
from blueprints.telecom.services.users import active_user
from core.db import db, for_update, isoformat, utcnow
from core.hooks import hook
from core.jobs import job, periodic
from core.phones import InvalidPhoneNumber, normalize_phone
from core.tenancy import find_for_org, get_for_org
from core.timeutil import as_utc

NIP_VALIDITY = timedelta(days=5)
# Clocks of a partner's system and ours drift; a NIP "issued" a little ahead of our clock is not a lie.
CLOCK_SKEW = timedelta(minutes=5)
EDITABLE_FROM = ("pending", "declined")
CANCELABLE_FROM = OPEN_STATUSES
# Declines that mean the NIP itself is useless: it is erased and a new one is needed to try again.
NIP_DECLINES = ("nip_invalid", "nip_expired")

# A completed port whose line waits on it: the subscriptions module (which builds on this one to claim a
# porting for a new line) activates the line and charges its order, in the same unit of work. Connected
# in blueprints/integrations.
line_ported = hook(
    "telecom.line_ported", "fn(organization_id, order_id) -> None, in the caller's transaction"
)


@dataclass
class Holder:
    full_name: str
    person_type: str = "person"
    curp: str | None = None
    rfc: str | None = None


@dataclass
class NewPorting:
    user_id: str
    phone_number: str
    nip: str
    nip_issued_at: datetime
    holder: Holder
    metadata: dict[str, Any] = field(default_factory=dict)


def _event(name: str, porting: Porting, **extra: Any) -> None:
    publish(
        name,
        porting.organization_id,
        {"id": porting.id, "object": "porting", "subscription": porting.subscription_id, **extra},
    )


# Validation -------------------------------------------------------------------------------------------


def mexican_number(raw: str, param: str = "phone_number") -> str:
    """``+52`` + 10 digits, or 400 ``phone_number_invalid`` naming ``param``."""
    try:
        number = normalize_phone(raw, "MX")
    except InvalidPhoneNumber:
        number = ""
    if not (number.startswith("+52") and len(number) == 13):
        raise invalid(param, "must be a Mexican number in E.164 (+52 and 10 digits)", "phone_number_invalid")
    return number


def area_code_of(phone_number: str) -> str:
    """The area code (clave LADA, 2 or 3 digits) of a Mexican E.164 number."""
    number = phonenumbers.parse(phone_number)
    length = phonenumbers.length_of_geographical_area_code(number) or 3
    return str(number.national_number)[:length]


def _nip(nip: str, issued_at: datetime, now: datetime) -> tuple[str, datetime, datetime]:
    if not (len(nip) == 4 and nip.isascii() and nip.isdigit()):
        raise invalid("nip", "must be the 4 digits the holder received from 051")
    # A time without a zone is read as UTC, like every instant of the API; kept to the millisecond the API
    # shows, so the nip_expires_at a partner reads is exactly when the porting expires.
    issued_at = as_utc(issued_at)
    issued_at = issued_at.replace(microsecond=issued_at.microsecond // 1000 * 1000)
    if issued_at > now + CLOCK_SKEW:
        raise invalid("nip_issued_at", "must not be in the future")
    expires_at = issued_at + NIP_VALIDITY
    if expires_at <= now:
        raise invalid(
            "nip_issued_at", "the NIP has lapsed (valid 5 calendar days): ask for a new one", "nip_expired"
        )
    return nip, issued_at, expires_at


def _holder(holder: Holder) -> Holder:
    if holder.person_type == "person":
        if not holder.curp:
            raise invalid("holder.curp", "required for a person (persona física)")
        problem = curp_problem(holder.curp)
        if problem:
            raise invalid("holder.curp", problem, "curp_invalid")
        return Holder(holder.full_name, "person", holder.curp, None)
    if not holder.rfc:
        raise invalid("holder.rfc", "required for a company (persona moral)")
    problem = rfc_problem(holder.rfc, company=True)
    if problem:
        raise invalid("holder.rfc", problem, "rfc_invalid")
    return Holder(holder.full_name, "company", None, holder.rfc)


def _set_holder(porting: Porting, holder: Holder) -> None:
    porting.holder_full_name, porting.holder_person_type = holder.full_name, holder.person_type
    porting.holder_curp, porting.holder_rfc = holder.curp, holder.rfc


# The partner's side -----------------------------------------------------------------------------------


def create_porting(organization_id: uuid.UUID, request: NewPorting, now: datetime | None = None) -> Porting:
    now = now or utcnow()
    phone_number = mexican_number(request.phone_number)
    nip, issued_at, expires_at = _nip(request.nip, request.nip_issued_at, now)
    holder = _holder(request.holder)
    user = active_user(organization_id, request.user_id)
    if kyc.verified_for(organization_id, user) is None:
        raise conflict("kyc_required", "The user's identity must be verified (KYC) before a port-in", "user")
    open_one = db.session.scalar(
        select(Porting.id).where(
            Porting.organization_id == organization_id,
            Porting.phone_number == phone_number,
            Porting.status.in_(OPEN_STATUSES),
        )
    )
    if open_one is not None:
        raise conflict(
            "porting_in_progress", f"The porting {open_one} of this number is still open", "phone_number"
        )
    if db.session.scalar(
        select(Subscription.id).where(
            Subscription.organization_id == organization_id,
            Subscription.phone_number == phone_number,
            Subscription.status != "ended",
        )
    ):
        raise conflict("number_already_active", "The number is already a line of ours", "phone_number")
    porting = Porting(
        id=f"prt_{uuid.uuid4().hex}",
        organization_id=organization_id,
        user_id=user.id,
        phone_number=phone_number,
        status="pending",
        nip=nip,
        nip_issued_at=issued_at,
        nip_expires_at=expires_at,
        declined_attempts=0,
        extra=dict(request.metadata),
    )
    _set_holder(porting, holder)
    db.session.add(porting)
    db.session.flush()
    _event("porting.created", porting, status=porting.status)
    return porting


def get_porting(organization_id: uuid.UUID, porting_id: str) -> Porting:
    return get_for_org(Porting, porting_id, organization_id, "Porting")


def list_portings(
    organization_id: uuid.UUID,
    *,
    status: str | None = None,
    user_id: str | None = None,
    phone_number: str | None = None,
    limit: int = 10,
    starting_after: str | None = None,
) -> CursorPage[Porting]:
    statement = select(Porting).where(Porting.organization_id == organization_id)
    if status is not None:
        statement = statement.where(Porting.status == status)
    if user_id is not None:
        statement = statement.where(Porting.user_id == user_id)
    if phone_number is not None:
        statement = statement.where(Porting.phone_number == mexican_number(phone_number))
    return cursor_page(Porting, statement, organization_id, limit=limit, starting_after=starting_after)


def _refuse(porting: Porting, action: str, allowed: tuple[str, ...]) -> None:
    if porting.status not in allowed:
        raise conflict(
            "invalid_state_transition",
            f"A {porting.status} porting cannot {action} (allowed from: {', '.join(allowed)})",
        )


def update_porting(
    organization_id: uuid.UUID,
    porting_id: str,
    changes: dict[str, Any],
    now: datetime | None = None,
) -> Porting:
    """PATCH: a new NIP (``nip`` + ``nip_issued_at``), corrected ``holder`` data or ``metadata`` while the
    porting is ``pending`` or ``declined``; a declined one goes back to ``pending`` and, when its line
    exists, is requested again."""
    now = now or utcnow()
    porting = get_porting(organization_id, porting_id)
    _refuse(porting, "be changed", EDITABLE_FROM)
    new_nip = changes.get("nip") is not None
    if new_nip != (changes.get("nip_issued_at") is not None):
        missing = "nip_issued_at" if new_nip else "nip"
        raise invalid(missing, "nip and nip_issued_at are sent together")
    if porting.status == "declined" and not new_nip and changes.get("holder") is None:
        raise invalid("nip", "a declined porting needs a new nip or corrected holder data to be retried")
    if new_nip:
        porting.nip, porting.nip_issued_at, porting.nip_expires_at = _nip(
            changes["nip"], changes["nip_issued_at"], now
        )
    if changes.get("holder") is not None:
        _set_holder(porting, _holder(changes["holder"]))
    if changes.get("metadata") is not None:
        porting.extra = dict(changes["metadata"])
    if porting.status == "declined":
        if porting.nip is None:
            raise invalid("nip", "the last NIP was refused: send the new one the holder received from 051")
        porting.status = "pending"
        porting.declined_code = porting.declined_message = None
        if porting.subscription_id is not None:
            _dispatch_submission(porting)
    db.session.flush()
    return porting


def cancel_porting(organization_id: uuid.UUID, porting_id: str, now: datetime | None = None) -> Porting:
    now = now or utcnow()
    porting = get_porting(organization_id, porting_id)
    _refuse(porting, "be canceled", CANCELABLE_FROM)
    _finish(porting, "canceled", now, "The porting was canceled")
    return porting


# Attaching the line (called by services.subscriptions) ------------------------------------------------


def claim_for_line(organization_id: uuid.UUID, porting_id: str, user_id: str) -> Porting:
    """The porting a new subscription will receive its number from: the user's, ``pending``, not yet
    given to another line; 409 ``porting_not_available`` naming ``porting`` otherwise."""
    porting = get_porting(organization_id, porting_id)
    if porting.subscription_id is not None:
        raise conflict(
            "porting_not_available",
            f"The porting already belongs to the subscription {porting.subscription_id}",
            "porting",
        )
    if porting.status != "pending":
        raise conflict("porting_not_available", f"The porting is {porting.status}, not pending", "porting")
    if porting.user_id != user_id:
        raise conflict("porting_not_available", "The porting belongs to another user", "porting")
    return porting


def attach_line(porting: Porting, subscription: Subscription) -> None:
    """The receiving line exists: the porting goes to the ABD (after the request commits)."""
    porting.subscription_id = subscription.id
    db.session.flush()
    _dispatch_submission(porting)


# The carrier's side -----------------------------------------------------------------------------------


def _dispatch_submission(porting: Porting) -> None:
    submit_porting.enqueue(str(porting.organization_id), porting.id)


def _submit(porting: Porting, now: datetime) -> None:
    if porting.nip_expires_at <= now:
        _finish(porting, "expired", now, "The NIP lapsed before the port was requested")
        return
    accepted = carrier_for().submit_port(porting, now)
    porting.status, porting.requested_at = "requested", now
    porting.donor_provider, porting.scheduled_for = accepted.donor_provider, accepted.scheduled_for
    db.session.flush()
    _event("porting.requested", porting, scheduled_for=isoformat(porting.scheduled_for))
    # Inline job mode (tests) runs this at once: the job then finds the port not due and leaves it.
    settle_porting.schedule(
        max(0.0, (accepted.scheduled_for - now).total_seconds()), str(porting.organization_id), porting.id
    )


def _settle(porting: Porting, now: datetime) -> None:
    """The port window ran: the number is ours (the line activates on it) or the ABD declined."""
    try:
        carrier_for().port_outcome(porting)
    except CarrierDeclined as declined:
        porting.status, porting.declined_code, porting.declined_message = (
            "declined",
            declined.code,
            declined.message,
        )
        porting.declined_attempts += 1
        porting.last_declined_at = now
        if declined.code in NIP_DECLINES:
            porting.nip = None  # useless now; the retry needs the holder's new NIP
        db.session.flush()
        _event("porting.declined", porting, declined_code=declined.code)
        return
    porting.status, porting.completed_at, porting.nip = "completed", now, None
    db.session.flush()
    _event("porting.completed", porting, phone_number=porting.phone_number)
    order = _line_purchase(porting)
    if order is not None:
        # The line activates on the ported number and its order is charged, in this unit of work.
        line_ported.answers(organization_id=str(porting.organization_id), order_id=order.id)


def _line_purchase(porting: Porting) -> Order | None:
    if porting.subscription_id is None:
        return None
    return db.session.scalar(
        select(Order).where(
            Order.organization_id == porting.organization_id,
            Order.subscription_id == porting.subscription_id,
            Order.type == "line_purchase",
            Order.status == "processing",
        )
    )


def _finish(porting: Porting, status: str, now: datetime, reason: str) -> None:
    """``canceled`` or ``expired``: the NIP is erased and a line waiting for the number ends, its hold
    released (it was never charged)."""
    porting.status, porting.nip = status, None
    if status == "canceled":
        porting.canceled_at = now
    else:
        porting.expired_at = now
    order = _line_purchase(porting)
    if order is not None:
        subscription = get_for_org(Subscription, order.subscription_id, porting.organization_id)
        order.status, order.completed_at = "failed", now
        order.failure_code, order.failure_message = f"porting_{status}", reason
        subscription.status, subscription.sim_status, subscription.ended_at = "ended", "retired", now
        if subscription.pending_order_id == order.id:
            subscription.pending_order_id = None
        if order.amount_cents:
            ledger.settle(
                porting.organization_id, order.amount_cents, order.type, ("order", order.id), charge=False
            )
        publish(
            "order.failed",
            porting.organization_id,
            {"id": subscription.id, "object": "subscription", "order": order.id},
        )
    db.session.flush()
    _event(f"porting.{status}", porting)


def _locked(organization_id: str, porting_id: str) -> Porting | None:
    """The porting, locked until the commit: a job and the sweep never move the same porting twice."""
    return db.session.scalar(
        for_update(
            select(Porting).where(
                Porting.id == porting_id, Porting.organization_id == uuid.UUID(organization_id)
            )
        )
    )


@job(retries=3, retry_delay=30)
def submit_porting(organization_id: str, porting_id: str) -> None:
    """Send a pending porting whose line exists to the ABD."""
    porting = _locked(organization_id, porting_id)
    if porting is None or porting.status != "pending" or porting.subscription_id is None:
        return  # canceled, changed or already sent meanwhile
    _submit(porting, utcnow())


@job(retries=3, retry_delay=30)
def settle_porting(organization_id: str, porting_id: str) -> None:
    """At the port window: the outcome of a requested porting (nothing when it is not due yet)."""
    porting = _locked(organization_id, porting_id)
    now = utcnow()
    if porting is None or porting.status != "requested" or (porting.scheduled_for or now) > now:
        return
    _settle(porting, now)


def process_due(now: datetime | None = None) -> int:
    """The sweep: expire portings whose NIP lapsed before they were requested, send pending ones whose
    line exists (a submission job that was lost), settle requested ones whose port window has passed.
    Returns how many portings moved. Tests call it with a later ``now`` to let time pass."""
    now = now or utcnow()
    moved = 0
    lapsed = db.session.scalars(
        for_update(
            select(Porting)
            .where(Porting.status.in_(EDITABLE_FROM), Porting.nip_expires_at <= now)
            .order_by(Porting.id),
            skip_locked=True,
        )
    )
    for porting in list(lapsed):
        _finish(porting, "expired", now, "The NIP lapsed before the port was requested")
        moved += 1
    waiting = db.session.scalars(
        for_update(
            select(Porting)
            .where(Porting.status == "pending", Porting.subscription_id.is_not(None))
            .order_by(Porting.id),
            skip_locked=True,
        )
    )
    for porting in list(waiting):
        _submit(porting, now)
        moved += 1
    due = db.session.scalars(
        for_update(
            select(Porting)
            .where(Porting.status == "requested", Porting.scheduled_for <= now)
            .order_by(Porting.id),
            skip_locked=True,
        )
    )
    for porting in list(due):
        _settle(porting, now)
        moved += 1
    db.session.flush()
    return moved


@periodic(minute="*/5")
def process_due_sweep() -> None:
    process_due()


def ported_number(organization_id: uuid.UUID, porting_id: str) -> str | None:
    """The number a completed porting brought in (the line activates on it), or None."""
    porting = find_for_org(Porting, porting_id, organization_id)
    return porting.phone_number if porting is not None and porting.status == "completed" else None
