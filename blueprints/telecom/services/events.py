"""Stored telecom events: the catalogue of event types, the event rows and their 30-day window.

``services.common.publish`` records every event here (in the caller's transaction) and then hands it to
``services.webhooks`` for delivery. An event carries ``data.object``: the resource as the API shows it at
that moment (rendered with the area's response models), so a receiver rarely needs to call back.
"""

from __future__ import annotations

import importlib
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy import delete, select

from blueprints.telecom.models import new_id
from blueprints.telecom.models_webhooks import TelecomEvent, WebhookDelivery
from blueprints.telecom.services.common import CursorPage, cursor_page, invalid
from core.db import db, utcnow
from core.errors import not_found
from core.jobs import periodic
from core.tenancy import find_for_org

log = logging.getLogger(__name__)

RETENTION = timedelta(days=30)

# The one list of event types: the API validates ``enabled_events`` against it and the doc lists it.
CATALOGUE: tuple[tuple[str, str], ...] = (
    ("user.created", "A user (the partner's customer) was created."),
    ("user.updated", "A user's fields or status (active, blocked) changed."),
    ("user.deleted", "A user was marked deleted."),
    ("kyc_verification.processing", "An identity verification was submitted and is being checked."),
    ("kyc_verification.verified", "An identity verification passed; the user may order lines."),
    ("kyc_verification.requires_input", "An identity check failed; a new verification is needed."),
    ("kyc_verification.canceled", "An identity verification was canceled."),
    ("subscription.created", "A line was ordered (pending until the carrier activates it)."),
    ("subscription.activated", "A line was activated: it has its phone number and a current period."),
    ("subscription.suspended", "A line was suspended (on request, or its renewal was not covered)."),
    ("subscription.resumed", "A suspended line is active again."),
    ("subscription.canceled", "A line was canceled and ended."),
    ("subscription.plan_changed", "A line moved to another plan."),
    ("subscription.sim_changed", "A line moved to a new SIM or eSIM."),
    ("subscription.renewed", "A line started a new period and the period was charged."),
    ("order.failed", "The carrier declined an order; data.order holds the failure."),
    ("topup.activated", "A top-up was applied to a line; data.order is the top-up order."),
    ("balance.credited", "The prepaid balance was credited."),
    ("balance.debited", "The prepaid balance was debited for a completed order."),
    ("porting.created", "A number porting was created."),
    ("porting.requested", "A porting was submitted to the number portability administrator."),
    ("porting.declined", "A porting was declined (declined_code says why); a new NIP may fix it."),
    ("porting.completed", "A ported number is now served by the partner's line."),
    ("porting.canceled", "A porting was canceled."),
    ("porting.expired", "A porting's NIP lapsed before it was requested."),
    ("data_esim.created", "A travel eSIM was purchased (provisioning)."),
    ("data_esim.ready", "A travel eSIM was provisioned: its activation code can be installed."),
    ("data_esim.failed", "A travel eSIM could not be provisioned; its hold was released."),
    ("data_esim.activated", "A travel eSIM was installed or used for the first time."),
    ("data_esim.low_data", "A travel eSIM has 20 % or less of its data left."),
    ("data_esim.depleted", "A travel eSIM used all its data."),
    ("data_esim.expired", "A travel eSIM reached the end of its validity."),
    ("data_esim.topped_up", "A top-up was added to a travel eSIM; data.topup is the top-up."),
    ("data_esim.topup_failed", "A travel eSIM top-up was declined; its hold was released."),
    ("webhook_endpoint.disabled", "A lifecycle webhook endpoint was disabled after failing for 3 days."),
)
EVENT_TYPES = frozenset(name for name, _ in CATALOGUE)

# How each object is shown: (models module, model, schemas module, response model). Resolved lazily so
# that parts built later (portings, travel eSIMs) are rendered once they exist, and shown as published
# until then.
RESOURCES: dict[str, tuple[str, str, str, str]] = {
    "user": ("blueprints.telecom.models", "TelecomUser", "blueprints.telecom.schemas", "UserOut"),
    "kyc_verification": (
        "blueprints.telecom.models",
        "KycVerification",
        "blueprints.telecom.schemas",
        "KycOut",
    ),
    "subscription": (
        "blueprints.telecom.models",
        "Subscription",
        "blueprints.telecom.schemas",
        "SubscriptionOut",
    ),
    "order": ("blueprints.telecom.models", "Order", "blueprints.telecom.schemas", "OrderOut"),
    "balance_transaction": (
        "blueprints.telecom.models",
        "LedgerEntry",
        "blueprints.telecom.schemas",
        "TransactionOut",
    ),
    "porting": (
        "blueprints.telecom.models_portings",
        "Porting",
        "blueprints.telecom.schemas_portings",
        "PortingOut",
    ),
    "data_esim": (
        "blueprints.telecom.models_data_esims",
        "DataEsim",
        "blueprints.telecom.schemas_data_esims",
        "DataEsimOut",
    ),
    "data_esim_topup": (
        "blueprints.telecom.models_data_esims",
        "DataEsimTopup",
        "blueprints.telecom.schemas_data_esims",
        "DataEsimTopupOut",
    ),
    "webhook_endpoint": (
        "blueprints.telecom.models_webhooks",
        "WebhookEndpoint",
        "blueprints.telecom.schemas_webhooks",
        "WebhookEndpointOut",
    ),
}
PREFIXES = {
    "usr": "user",
    "kyc": "kyc_verification",
    "sub": "subscription",
    "ord": "order",
    "txn": "balance_transaction",
    "prt": "porting",
    "des": "data_esim",
    "dtu": "data_esim_topup",
    "whe": "webhook_endpoint",
}


def clock() -> datetime:
    """Now, for events and deliveries. Tests replace it to age events and to reach retry times."""
    return utcnow()


def catalogue() -> tuple[tuple[str, str], ...]:
    return CATALOGUE


def _kind_of(value: Any) -> str | None:
    if not isinstance(value, str) or "_" not in value:
        return None
    return PREFIXES.get(value.split("_", 1)[0])


def _renderer(kind: str) -> tuple[Any, Any] | None:
    spec = RESOURCES.get(kind)
    if spec is None:
        return None
    models_module, model_name, schemas_module, out_name = spec
    try:
        model = getattr(importlib.import_module(models_module), model_name)
        out = getattr(importlib.import_module(schemas_module), out_name)
    except (ImportError, AttributeError):
        return None  # that part of the area is not built (yet): the event shows what was published
    return model, out


def render(organization_id: uuid.UUID, kind: str, object_id: str) -> dict[str, Any] | None:
    """The object as the API shows it now, or None when it cannot be rendered."""
    renderer = _renderer(kind)
    if renderer is None:
        return None
    model, out = renderer
    row = find_for_org(model, object_id, organization_id)
    if row is None:
        return None
    try:
        rendered: dict[str, Any] = out.dump(row)
    except (ValidationError, AttributeError, TypeError, ValueError):
        # An event must never fail the change it reports: keep the published fields instead.
        log.warning("event object %s %s could not be rendered", kind, object_id, exc_info=True)
        return None
    return rendered


def event_data(organization_id: uuid.UUID, published: dict[str, Any]) -> dict[str, Any]:
    """``{"object": <resource>, ...}``. Other published keys that the resource does not show itself are
    kept beside it, ids of renderable objects (``order``) rendered too."""
    kind = published.get("object") or _kind_of(published.get("id"))
    shown = render(organization_id, kind, published["id"]) if kind and published.get("id") else None
    if shown is None:
        shown = {**published, "object": kind} if kind else dict(published)
    data: dict[str, Any] = {"object": shown}
    for key, value in published.items():
        if key in ("id", "object") or key in shown:
            continue
        related = _kind_of(value)
        data[key] = (render(organization_id, related, value) if related else None) or value
    return data


def record(name: str, organization_id: uuid.UUID, published: dict[str, Any]) -> TelecomEvent:
    if name not in EVENT_TYPES:
        # Stored and sent to "*" endpoints anyway; the catalogue (and the doc) should name it.
        log.warning("telecom event %s is not in the catalogue (services/events.py)", name)
    event = TelecomEvent(
        id=new_id("evt"),
        organization_id=organization_id,
        type=name,
        data=event_data(organization_id, published),
        created_at=clock(),
    )
    db.session.add(event)
    db.session.flush()
    return event


def _readable_since() -> datetime:
    return clock() - RETENTION


def list_events(
    organization_id: uuid.UUID,
    *,
    type: str | None = None,
    limit: int = 10,
    starting_after: str | None = None,
) -> CursorPage[TelecomEvent]:
    statement = select(TelecomEvent).where(
        TelecomEvent.organization_id == organization_id, TelecomEvent.created_at >= _readable_since()
    )
    if type is not None:
        if type not in EVENT_TYPES:
            raise invalid("type", "not an event type of the catalogue")
        statement = statement.where(TelecomEvent.type == type)
    return cursor_page(TelecomEvent, statement, organization_id, limit=limit, starting_after=starting_after)


def get_event(organization_id: uuid.UUID, event_id: str) -> TelecomEvent:
    event = find_for_org(TelecomEvent, event_id, organization_id)
    if event is None or event.created_at < _readable_since():
        raise not_found("Event")  # past the 30 days an event is gone, whether or not the sweep ran yet
    return event


def purge_expired(now: datetime | None = None) -> int:
    """Delete events older than 30 days with their deliveries; returns how many events went."""
    cutoff = (now or clock()) - RETENTION
    expired = select(TelecomEvent.id).where(TelecomEvent.created_at < cutoff)
    db.session.execute(delete(WebhookDelivery).where(WebhookDelivery.event_id.in_(expired)))
    result = db.session.execute(delete(TelecomEvent).where(TelecomEvent.created_at < cutoff))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


@periodic(minute="41")
def purge_expired_sweep() -> None:
    purge_expired()
