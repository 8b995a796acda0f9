"""Subscriptions (mobile lines) and the orders that move them.

Every provisioning step and every action is an :class:`Order`, carried out asynchronously by the carrier
(:func:`process_order`, a job enqueued after the request commits): the request answers 202 with the line in
a transitional state, the job settles it. Orders that cost money hold the price when accepted and post the
debit when they complete (``services.ledger``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from blueprints.telecom.carrier import CarrierDeclined, UsageDay, carrier_for
from blueprints.telecom.models import Order, Plan, Subscription, TopupOffer
from blueprints.telecom.services import catalogue, kyc, ledger, portings
from blueprints.telecom.services.common import CursorPage, conflict, cursor_page, invalid, publish
from blueprints.telecom.services.users import active_user
from core.db import db, utcnow
from core.errors import ApiError
from core.jobs import job, periodic
from core.tenancy import find_for_org, get_for_org

MAX_LINES_PER_IDENTITY = 10
# Which states each action may start from, and the transitional state it puts the line in meanwhile.
ALLOWED_FROM: dict[str, tuple[str, ...]] = {
    "suspend": ("active",),
    "resume": ("suspended",),
    "cancel": ("active", "suspended"),
    "plan_change": ("active",),
    "sim_change": ("active", "suspended"),
    "topup": ("active",),
}
TRANSITIONAL = {"suspend": "suspending", "resume": "resuming", "cancel": "canceling"}
SIM_CHANGE_REASONS = ("lost", "stolen", "damaged", "device_change")


@dataclass
class NewLine:
    """A line to order: a new number in ``area_code``, or the number a ``porting`` (``prt_…``) brings in."""

    type: str
    user_id: str
    plan_id: str
    area_code: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    porting_id: str | None = None


@dataclass(frozen=True)
class Usage:
    subscription: Subscription
    period_start: datetime
    period_end: datetime
    as_of: datetime
    days: list[UsageDay]
    totals: dict[str, int]
    allowances: dict[str, int | None]

    @property
    def remaining(self) -> dict[str, int | None]:
        return {
            name: None if allowance is None else max(0, allowance - self.totals[name])
            for name, allowance in self.allowances.items()
        }


def dispatch(order: Order) -> None:
    """Hand the order to the carrier once the request's work is committed."""
    process_order.enqueue(str(order.organization_id), order.id)


def _source(order: Order) -> tuple[str, str]:
    return ("order", order.id)


def _lines_of(identity_number: str) -> int:
    # The limit is the person's, whichever partner sold the lines: counted over the whole store.
    return int(
        db.session.scalar(
            select(func.count())
            .select_from(Subscription)
            .where(Subscription.identity_number == identity_number, Subscription.status != "ended")
        )
        or 0
    )


def create_subscription(organization_id: uuid.UUID, line: NewLine) -> tuple[Subscription, Order]:
    if (line.area_code is None) == (line.porting_id is None):
        raise invalid(
            "area_code",
            "send either area_code (a new number) or porting (a ported number), not both"
            if line.area_code is not None
            else "Field required (or porting, to bring the number of a porting)",
        )
    user = active_user(organization_id, line.user_id)
    verification = kyc.verified_for(organization_id, user)
    if verification is None:
        raise conflict(
            "kyc_required", "The user's identity must be verified (KYC) before a line is ordered", "user"
        )
    plan = catalogue.orderable_plan(line.plan_id, line.type)
    porting = None
    if line.porting_id is not None:
        porting = portings.claim_for_line(organization_id, line.porting_id, user.id)
        area_code = portings.area_code_of(porting.phone_number)
    elif line.area_code is not None:
        area_code = catalogue.orderable_area_code(line.area_code).code
    identity = verification.curp or verification.rfc or ""
    lines = _lines_of(identity)
    if lines >= MAX_LINES_PER_IDENTITY:
        raise conflict(
            "line_limit_exceeded",
            f"The holder already has {MAX_LINES_PER_IDENTITY} lines registered to their CURP/RFC",
            "user",
        )
    now = utcnow()
    subscription = Subscription(
        id=f"sub_{uuid.uuid4().hex}",
        organization_id=organization_id,
        user_id=user.id,
        plan_id=plan.id,
        type=line.type,
        status="pending",
        area_code=area_code,
        kyc_verification_id=verification.id,
        identity_number=identity,
        registration_folio=f"{verification.folio}-{lines + 1:02d}",
        registered_at=now,
        extra=dict(line.metadata),
    )
    iccid, profile = carrier_for().reserve_sim(subscription)
    subscription.iccid = iccid
    if profile is not None:
        subscription.esim_smdp_address = profile.smdp_address
        subscription.esim_matching_id = profile.matching_id
    db.session.add(subscription)
    db.session.flush()
    details = {"plan": plan.id} if porting is None else {"plan": plan.id, "porting": porting.id}
    # A ported line is activated by its porting's completion, not dispatched to the carrier now.
    order = _new_order(
        subscription,
        "line_purchase",
        details,
        plan.price_cents,
        f"Line {plan.name}",
        dispatched=porting is None,
    )
    if porting is not None:
        portings.attach_line(porting, subscription)
    publish("subscription.created", organization_id, {"id": subscription.id, "object": "subscription"})
    return subscription, order


def _new_order(
    subscription: Subscription,
    kind: str,
    details: dict[str, Any],
    amount_cents: int | None,
    description: str,
    *,
    dispatched: bool = True,
) -> Order:
    order = Order(
        id=f"ord_{uuid.uuid4().hex}",
        organization_id=subscription.organization_id,
        subscription_id=subscription.id,
        type=kind,
        status="processing",
        amount_cents=amount_cents,
        details={**details, "from_status": subscription.status},
    )
    db.session.add(order)
    db.session.flush()
    if amount_cents:
        ledger.hold(subscription.organization_id, amount_cents, description, _source(order))
    subscription.pending_order_id = order.id
    db.session.flush()
    if dispatched:
        dispatch(order)
    return order


def get_subscription(organization_id: uuid.UUID, subscription_id: str) -> Subscription:
    return get_for_org(Subscription, subscription_id, organization_id, "Subscription")


def list_subscriptions(
    organization_id: uuid.UUID,
    *,
    status: str | None = None,
    user_id: str | None = None,
    limit: int = 10,
    starting_after: str | None = None,
) -> CursorPage[Subscription]:
    statement = select(Subscription).where(Subscription.organization_id == organization_id)
    if status is not None:
        statement = statement.where(Subscription.status == status)
    if user_id is not None:
        statement = statement.where(Subscription.user_id == user_id)
    return cursor_page(Subscription, statement, organization_id, limit=limit, starting_after=starting_after)


def list_orders(organization_id: uuid.UUID, subscription_id: str) -> list[Order]:
    subscription = get_subscription(organization_id, subscription_id)
    return list(
        db.session.scalars(
            select(Order)
            .where(Order.organization_id == organization_id, Order.subscription_id == subscription.id)
            .order_by(Order.created_at.desc(), Order.id.desc())
        )
    )


def _movable(organization_id: uuid.UUID, subscription_id: str, action: str) -> Subscription:
    subscription = get_subscription(organization_id, subscription_id)
    if subscription.pending_order_id is not None:
        raise conflict(
            "action_in_progress",
            f"The order {subscription.pending_order_id} of this line is still processing",
        )
    if subscription.status not in ALLOWED_FROM[action]:
        raise conflict(
            "invalid_state_transition",
            f"A {subscription.status} subscription cannot {action.replace('_', ' ')}"
            f" (allowed from: {', '.join(ALLOWED_FROM[action])})",
        )
    return subscription


def request_action(
    organization_id: uuid.UUID, subscription_id: str, action: str
) -> tuple[Subscription, Order]:
    """``suspend``, ``resume`` or ``cancel``: free, asynchronous, transitional state meanwhile."""
    subscription = _movable(organization_id, subscription_id, action)
    order = _new_order(subscription, action, {}, None, action)
    subscription.status = TRANSITIONAL[action]
    db.session.flush()
    return subscription, order


def change_plan(
    organization_id: uuid.UUID, subscription_id: str, plan_id: str, when: str
) -> tuple[Subscription, Order]:
    subscription = _movable(organization_id, subscription_id, "plan_change")
    plan = catalogue.orderable_plan(plan_id, subscription.type)
    if plan.id == subscription.plan_id:
        raise conflict("plan_unchanged", f"The line is already on {plan.id}", "plan")
    if when == "now":
        order = _new_order(
            subscription, "plan_change", {"plan": plan.id, "when": when}, plan.price_cents, plan.name
        )
        return subscription, order
    # At renewal: recorded now, charged and applied when the period ends; a newer choice replaces it.
    for earlier in db.session.scalars(
        select(Order).where(
            Order.organization_id == organization_id,
            Order.subscription_id == subscription.id,
            Order.status == "scheduled",
        )
    ):
        earlier.status = "canceled"
    order = Order(
        id=f"ord_{uuid.uuid4().hex}",
        organization_id=organization_id,
        subscription_id=subscription.id,
        type="plan_change",
        status="scheduled",
        amount_cents=plan.price_cents,
        details={"plan": plan.id, "when": when, "from_status": subscription.status},
    )
    db.session.add(order)
    subscription.scheduled_plan_id = plan.id
    db.session.flush()
    return subscription, order


def change_sim(
    organization_id: uuid.UUID, subscription_id: str, sim_type: str, reason: str
) -> tuple[Subscription, Order]:
    subscription = _movable(organization_id, subscription_id, "sim_change")
    order = _new_order(subscription, "sim_change", {"type": sim_type, "reason": reason}, None, "SIM change")
    return subscription, order


def add_topup(organization_id: uuid.UUID, subscription_id: str, topup_id: str) -> tuple[Subscription, Order]:
    subscription = _movable(organization_id, subscription_id, "topup")
    topup = catalogue.orderable_topup(topup_id, subscription.plan_id)
    order = _new_order(subscription, "topup", {"topup": topup.id}, topup.price_cents, f"Top-up {topup.name}")
    return subscription, order


# The carrier's side ------------------------------------------------------------------------------------


def _start_period(subscription: Subscription, plan: Plan, now: datetime) -> None:
    subscription.period_start = now
    subscription.period_end = now + timedelta(days=plan.validity_days)


def _carry_out(
    subscription: Subscription, order: Order, now: datetime, ported_number: str | None = None
) -> str:
    """Ask the carrier and apply the result to the line; returns the event to publish."""
    carrier = carrier_for()
    kind = order.type
    if kind == "line_purchase":
        activation = carrier.activate_line(subscription)
        # A ported line activates on the number it brought, not on a new one.
        subscription.phone_number = ported_number or activation.phone_number
        subscription.iccid = activation.iccid
        subscription.status = "active"
        subscription.sim_status = "active"
        subscription.activated_at = now
        _start_period(subscription, db.session.get(Plan, subscription.plan_id), now)  # type: ignore[arg-type]
        return "subscription.activated"
    if kind == "suspend":
        carrier.suspend_line(subscription)
        subscription.status, subscription.suspended_at = "suspended", now
        subscription.suspension_reason = "partner_request"
        return "subscription.suspended"
    if kind == "resume":
        carrier.resume_line(subscription)
        subscription.status, subscription.suspended_at, subscription.suspension_reason = "active", None, None
        return "subscription.resumed"
    if kind == "cancel":
        carrier.cancel_line(subscription)
        subscription.status, subscription.sim_status = "ended", "retired"
        subscription.canceled_at = subscription.ended_at = now
        subscription.scheduled_plan_id = None
        return "subscription.canceled"
    if kind == "plan_change":
        plan = catalogue.get_plan(order.details["plan"])
        carrier.change_plan(subscription, plan)
        subscription.plan_id = plan.id
        subscription.scheduled_plan_id = None
        _start_period(subscription, plan, now)
        return "subscription.plan_changed"
    if kind == "sim_change":
        iccid, profile = carrier.change_sim(subscription, order.details["type"])
        subscription.type, subscription.iccid = order.details["type"], iccid
        subscription.esim_smdp_address = profile.smdp_address if profile else None
        subscription.esim_matching_id = profile.matching_id if profile else None
        return "subscription.sim_changed"
    if kind == "topup":
        topup = db.session.get(TopupOffer, order.details["topup"])
        carrier.apply_topup(subscription, topup)  # type: ignore[arg-type]
        return "topup.activated"
    raise ValueError(f"unknown order type {kind}")


def _fail(subscription: Subscription, order: Order, declined: CarrierDeclined, now: datetime) -> None:
    order.failure_code, order.failure_message = declined.code, declined.message
    if order.type == "line_purchase":
        subscription.status, subscription.sim_status, subscription.ended_at = "ended", "retired", now
    else:
        subscription.status = order.details.get("from_status", subscription.status)


def activate_ported_line(*, organization_id: str, order_id: str) -> None:
    """``portings.line_ported``: the port completed, so its line purchase goes ahead now."""
    process_order(organization_id, order_id)


@job(retries=3, retry_delay=30)
def process_order(organization_id: str, order_id: str) -> None:
    """The carrier carries out one order; a decline fails it (hold released), other errors retry."""
    org = uuid.UUID(organization_id)
    order = find_for_org(Order, order_id, org)
    if order is None or order.status != "processing":
        return  # settled by an earlier run
    ported_number = None
    if order.type == "line_purchase" and order.details.get("porting"):
        ported_number = portings.ported_number(org, order.details["porting"])
        if ported_number is None:
            return  # the line waits for its port to complete; the porting's completion runs this again
    subscription = get_for_org(Subscription, order.subscription_id, org, "Subscription")
    now = utcnow()
    try:
        with db.session.begin_nested():  # a decline leaves no half-applied change on the line
            event = _carry_out(subscription, order, now, ported_number)
    except CarrierDeclined as declined:
        _fail(subscription, order, declined, now)
        order.status = "failed"
        event = "order.failed"
    else:
        order.status = "completed"
    order.completed_at = now
    if subscription.pending_order_id == order.id:
        subscription.pending_order_id = None
    if order.amount_cents:
        ledger.settle(org, order.amount_cents, order.type, _source(order), charge=order.status == "completed")
    db.session.flush()
    publish(event, org, {"id": subscription.id, "object": "subscription", "order": order.id})


def renew_due(now: datetime | None = None) -> int:
    """Start the next period of every active line whose period ended: apply a plan change scheduled for
    the renewal and charge the period; a line the balance cannot pay for is suspended. Returns how many."""
    now = now or utcnow()
    due = list(
        db.session.scalars(
            select(Subscription).where(
                Subscription.status == "active",
                Subscription.period_end <= now,
                Subscription.pending_order_id.is_(None),
            )
        )
    )
    for subscription in due:
        org = subscription.organization_id
        scheduled = db.session.scalar(
            select(Order).where(
                Order.organization_id == org,
                Order.subscription_id == subscription.id,
                Order.status == "scheduled",
            )
        )
        plan = catalogue.get_plan(scheduled.details["plan"] if scheduled else subscription.plan_id)
        order = scheduled or Order(
            id=f"ord_{uuid.uuid4().hex}",
            organization_id=org,
            subscription_id=subscription.id,
            type="renewal",
            details={"plan": plan.id, "from_status": "active"},
        )
        order.amount_cents = plan.price_cents
        if scheduled is None:
            db.session.add(order)
        db.session.flush()
        try:
            with db.session.begin_nested():
                ledger.hold(org, plan.price_cents, f"Renewal {plan.name}", _source(order))
        except ApiError:  # 402: the balance does not cover the period; the line stops until it is paid
            order.status, order.failure_code = "failed", "balance_insufficient"
            order.completed_at = now
            subscription.status, subscription.suspended_at = "suspended", now
            subscription.suspension_reason = "balance_insufficient"
            publish("subscription.suspended", org, {"id": subscription.id, "object": "subscription"})
            continue
        ledger.settle(org, plan.price_cents, f"Renewal {plan.name}", _source(order), charge=True)
        order.status, order.completed_at = "completed", now
        subscription.plan_id, subscription.scheduled_plan_id = plan.id, None
        subscription.period_start = subscription.period_end
        subscription.period_end = (subscription.period_start or now) + timedelta(days=plan.validity_days)
        publish("subscription.renewed", org, {"id": subscription.id, "object": "subscription"})
    db.session.flush()
    return len(due)


@periodic(minute="*/10")
def renew_due_sweep() -> None:
    renew_due()


def usage(organization_id: uuid.UUID, subscription_id: str, now: datetime | None = None) -> Usage:
    subscription = get_subscription(organization_id, subscription_id)
    now = now or utcnow()
    as_of = now.replace(minute=0, second=0, microsecond=0)  # carriers report hourly, not live
    start = subscription.period_start or subscription.created_at
    end = subscription.period_end or start
    days: list[date] = []
    if subscription.period_start is not None:
        day = start.date()
        while day <= min(as_of, end).date():
            days.append(day)
            day += timedelta(days=1)
    records = carrier_for().usage(subscription, days)
    totals = {
        "data_bytes": sum(r.data_bytes for r in records),
        "voice_seconds": sum(r.voice_seconds for r in records),
        "sms_messages": sum(r.sms_messages for r in records),
    }
    plan = db.session.get(Plan, subscription.plan_id)
    allowances: dict[str, int | None] = {
        "data_bytes": plan.data_bytes if plan else None,
        "voice_seconds": plan.voice_seconds if plan else None,
        "sms_messages": plan.sms_messages if plan else None,
    }
    topups = db.session.scalars(
        select(Order).where(
            Order.organization_id == organization_id,
            Order.subscription_id == subscription.id,
            Order.type == "topup",
            Order.status == "completed",
            Order.completed_at >= start,
        )
    )
    for order in topups:
        topup = db.session.get(TopupOffer, order.details["topup"])
        for name in allowances:
            extra = getattr(topup, name, None) if topup else None
            if allowances[name] is not None and extra:
                allowances[name] = (allowances[name] or 0) + extra
    return Usage(subscription, start, end, as_of, records, totals, allowances)
