"""Travel eSIMs (``data_esims``): bought from the eSIM offers catalogue, issued by the travel eSIM supplier
(``blueprints/telecom/travel.py``), followed through its reports, topped up.

Money moves as for line orders: the price is held when the purchase (or top-up) is accepted, 402
``balance_insufficient`` when the balance does not cover it; the debit is posted when the supplier issues
the eSIM (applies the top-up), and only the hold is released when it declines. Issuing is asynchronous
(:func:`provision_data_esim`, a job enqueued after the request commits): the purchase answers 202 with the
eSIM ``provisioning``, like a line order, so a slow supplier never holds a partner's request open.

The supplier is the source of truth for the life of the eSIM (``not_active → active → depleted |
expired``). Reading one eSIM asks the supplier and stores what changed; a sweep does the same for every
eSIM still alive. Whoever notices a change publishes its event, once: the row is locked while the change
is applied, and the state stored is what the next look compares with.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import segno
from sqlalchemy import select

from blueprints.telecom.models import EsimOffer
from blueprints.telecom.models_data_esims import DataEsim, DataEsimTopup, activation_code
from blueprints.telecom.services import ledger
from blueprints.telecom.services.common import CursorPage, conflict, cursor_page, publish
from blueprints.telecom.services.users import active_user
from blueprints.telecom.travel import (
    DataUsageDay,
    EsimHandle,
    EsimReport,
    Package,
    SupplierDeclined,
    supplier_for,
)
from core.db import db, for_update, utcnow
from core.errors import not_found
from core.jobs import job, periodic
from core.tenancy import find_for_org, get_for_org

# States the supplier may still move (the sweep follows them); a top-up is accepted in these too.
LIVE_STATES = ("not_active", "active", "depleted")
STATUSES = ("provisioning", "failed", *LIVE_STATES, "expired")
LOW_DATA_PERCENT = 20
QR_SCALE = 8  # pixels per module: a 57-module code (with its border) is a 456-pixel image
QR_BORDER = 4  # the quiet zone ISO/IEC 18004 asks for


def clock() -> datetime:
    """Now, for every decision of this module; tests replace it to move through an eSIM's life."""
    return utcnow()


@dataclass
class NewDataEsim:
    offer_id: str
    user_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DataEsimView:
    """An eSIM as the supplier last reported it; ``as_of`` is when (now, for a refreshed read)."""

    esim: DataEsim
    as_of: datetime | None


@dataclass(frozen=True)
class DataEsimUsage:
    esim: DataEsim
    as_of: datetime
    days: list[DataUsageDay]


def _offer(offer_id: str) -> EsimOffer:
    offer = db.session.get(EsimOffer, offer_id)  # the catalogue is shared by the environment's organizations
    if offer is None:
        raise not_found("eSIM offer")
    return offer


def _source(esim: DataEsim) -> tuple[str, str]:
    return ("data_esim", esim.id)


def _topup_source(topup: DataEsimTopup) -> tuple[str, str]:
    return ("data_esim_topup", topup.id)


def _event(esim: DataEsim, **extra: str) -> dict[str, Any]:
    return {"id": esim.id, "object": "data_esim", **extra}


# Purchase ----------------------------------------------------------------------------------------------


def purchase(organization_id: uuid.UUID, new: NewDataEsim) -> DataEsim:
    """Accept the purchase of an offer: the eSIM is stored ``provisioning`` with the price held, and the
    supplier is asked once the request has committed."""
    offer = _offer(new.offer_id)
    if offer.status != "available":
        raise conflict("offer_not_available", f"The eSIM offer {offer.id} is {offer.status}", "offer")
    user = active_user(organization_id, new.user_id) if new.user_id else None
    supplier_for()  # a production supplier that is not configured is 424 now, not a stuck purchase later
    esim = DataEsim(
        id=f"des_{uuid.uuid4().hex}",
        organization_id=organization_id,
        user_id=user.id if user else None,
        offer_id=offer.id,
        status="provisioning",
        price_cents=offer.price_cents,
        offer_data_bytes=offer.data_bytes,
        offer_validity_days=offer.validity_days,
        activation_policy=offer.activation_policy,
        data_total_bytes=offer.data_bytes,
        data_remaining_bytes=offer.data_bytes,
        low_data_notified=False,
        extra=dict(new.metadata),
    )
    db.session.add(esim)
    db.session.flush()
    ledger.hold(organization_id, offer.price_cents, f"Travel eSIM {offer.name}", _source(esim))
    # announced before the job is queued: after the commit, listeners hear "created" before "ready"
    publish("data_esim.created", organization_id, _event(esim))
    provision_data_esim.enqueue(str(organization_id), esim.id)
    return esim


def _locked(model: type[Any], object_id: str, organization_id: uuid.UUID) -> Any:
    """The row, read afresh and held until the commit: a job and a refresh never apply one change twice."""
    statement = select(model).where(model.id == object_id, model.organization_id == organization_id)
    return db.session.scalar(for_update(statement))


@job(retries=3, retry_delay=30)
def provision_data_esim(organization_id: str, esim_id: str) -> None:
    """Order the eSIM from the supplier: issued → ``not_active`` and charged; declined → ``failed`` and the
    hold released. Any other error retries (the eSIM stays ``provisioning`` with its hold)."""
    org = uuid.UUID(organization_id)
    esim = _locked(DataEsim, esim_id, org)
    if esim is None or esim.status != "provisioning":
        return  # settled by an earlier run
    now = clock()
    try:
        issued = supplier_for().order_esim(esim.id, esim.offer_id, dict(esim.extra or {}))
    except SupplierDeclined as declined:
        esim.status, esim.failure_code, esim.failure_message = "failed", declined.code, declined.message
        esim.data_total_bytes = esim.data_remaining_bytes = None
        ledger.settle(org, esim.price_cents, "Travel eSIM declined", _source(esim), charge=False)
        db.session.flush()
        publish("data_esim.failed", org, _event(esim))
        return
    esim.iccid, esim.smdp_address, esim.matching_id = issued.iccid, issued.smdp_address, issued.matching_id
    esim.supplier, esim.supplier_reference = supplier_for().name, issued.supplier_reference
    esim.status, esim.issued_at, esim.reported_at = "not_active", now, now
    ledger.settle(org, esim.price_cents, "Travel eSIM", _source(esim), charge=True)
    db.session.flush()
    publish("data_esim.ready", org, _event(esim))


# Reading and refreshing --------------------------------------------------------------------------------


def _handle(esim: DataEsim) -> EsimHandle:
    topups = db.session.scalars(
        select(DataEsimTopup)
        .where(
            DataEsimTopup.organization_id == esim.organization_id,
            DataEsimTopup.data_esim_id == esim.id,
            DataEsimTopup.status == "completed",
        )
        .order_by(DataEsimTopup.completed_at, DataEsimTopup.id)
    )
    first = Package(
        esim.offer_id, esim.offer_data_bytes, esim.offer_validity_days, esim.issued_at or esim.created_at
    )
    packages = [first] + [
        Package(t.offer_id, t.data_bytes, t.validity_days, t.completed_at or t.created_at) for t in topups
    ]
    return EsimHandle(
        id=esim.id,
        iccid=esim.iccid or "",
        issued_at=esim.issued_at or esim.created_at,
        activation_policy=esim.activation_policy,
        packages=tuple(packages),
        metadata=dict(esim.extra or {}),
    )


def _changed(esim: DataEsim, report: EsimReport) -> bool:
    return (
        esim.status,
        esim.data_total_bytes,
        esim.data_remaining_bytes,
        esim.activated_at,
        esim.expires_at,
    ) != (
        report.status,
        report.data_total_bytes,
        report.data_remaining_bytes,
        report.activated_at,
        report.expires_at,
    )


def _apply(esim: DataEsim, report: EsimReport) -> list[str]:
    """Store the supplier's report on the row; returns the events its changes mean, in order."""
    events: list[str] = []
    if esim.activated_at is None and report.activated_at is not None:
        events.append("data_esim.activated")
    total, remaining = report.data_total_bytes, report.data_remaining_bytes
    low = total is not None and remaining is not None and remaining * 100 <= total * LOW_DATA_PERCENT
    if not low:
        esim.low_data_notified = False  # a top-up lifted it above the mark: warn again next time
    elif not esim.low_data_notified and report.status in ("active", "depleted"):
        esim.low_data_notified = True
        events.append("data_esim.low_data")
    if report.status == "depleted" and esim.status != "depleted":
        esim.depleted_at = report.as_of
        events.append("data_esim.depleted")
    elif report.status == "active":
        esim.depleted_at = None
    if report.status == "expired" and esim.status != "expired":
        events.append("data_esim.expired")
    esim.status = report.status
    esim.data_total_bytes, esim.data_remaining_bytes = total, remaining
    esim.activated_at, esim.expires_at = report.activated_at, report.expires_at
    esim.reported_at = report.as_of
    return events


def _refresh(esim: DataEsim, now: datetime) -> DataEsim:
    """Ask the supplier about a live eSIM and store what changed (publishing its events). A report that
    changes nothing writes nothing, so reading a quiet eSIM takes no lock and sends no COMMIT."""
    if esim.status not in LIVE_STATES:
        return esim
    supplier = supplier_for()
    if not _changed(esim, supplier.status(_handle(esim), now)):
        return esim
    esim = _locked(DataEsim, esim.id, esim.organization_id)
    if esim.status not in LIVE_STATES:  # settled by a concurrent look
        return esim
    report = supplier.status(_handle(esim), now)
    for name in _apply(esim, report) if _changed(esim, report) else []:
        publish(name, esim.organization_id, _event(esim))
    db.session.flush()
    return esim


def get_data_esim(organization_id: uuid.UUID, esim_id: str) -> DataEsimView:
    """The eSIM, refreshed from the supplier (``as_of`` = now for a live eSIM)."""
    esim = get_for_org(DataEsim, esim_id, organization_id, "Data eSIM")
    now = clock()
    esim = _refresh(esim, now)
    return DataEsimView(esim, now if esim.status in LIVE_STATES else esim.reported_at)


def list_data_esims(
    organization_id: uuid.UUID,
    *,
    status: str | None = None,
    user_id: str | None = None,
    limit: int = 10,
    starting_after: str | None = None,
) -> CursorPage[DataEsimView]:
    """The eSIMs as last reported (each with its ``as_of``): a list never calls the supplier."""
    statement = select(DataEsim).where(DataEsim.organization_id == organization_id)
    if status is not None:
        statement = statement.where(DataEsim.status == status)
    if user_id is not None:
        statement = statement.where(DataEsim.user_id == user_id)
    page = cursor_page(DataEsim, statement, organization_id, limit=limit, starting_after=starting_after)
    return CursorPage([DataEsimView(e, e.reported_at) for e in page.items], page.has_more)


def refresh_due(now: datetime | None = None) -> int:
    """Refresh every eSIM the supplier may still move (all organizations of the environment), publishing
    activations, low data, depletion and expiry. Returns how many were looked at."""
    now = now or clock()
    ids = list(
        db.session.execute(
            select(DataEsim.id, DataEsim.organization_id)
            .where(DataEsim.status.in_(LIVE_STATES))
            .order_by(DataEsim.id)
        )
    )
    for esim_id, organization_id in ids:
        esim = find_for_org(DataEsim, esim_id, organization_id)
        if esim is not None:
            _refresh(esim, now)
    return len(ids)


@periodic(minute="*/10")
def refresh_due_sweep() -> None:
    refresh_due()


def usage(organization_id: uuid.UUID, esim_id: str) -> DataEsimUsage:
    """Data used per UTC day from the activation to now (or the expiry)."""
    view = get_data_esim(organization_id, esim_id)
    esim, now = view.esim, clock()
    if esim.activated_at is None or esim.iccid is None:
        return DataEsimUsage(esim, now, [])
    last = min(now, esim.expires_at or now)
    days: list[date] = []
    day = esim.activated_at.date()
    while day <= last.date():
        days.append(day)
        day += timedelta(days=1)
    return DataEsimUsage(esim, now, supplier_for().usage(_handle(esim), days, now))


# Top-ups -----------------------------------------------------------------------------------------------


def _compatible(esim: DataEsim, offer: EsimOffer) -> bool:
    """A top-up must keep working wherever the eSIM works, and be of the same kind (unlimited or not)."""
    original = _offer(esim.offer_id)
    same_kind = (offer.data_bytes is None) == (esim.offer_data_bytes is None)
    return offer.status == "available" and same_kind and set(original.countries) <= set(offer.countries)


def add_topup(organization_id: uuid.UUID, esim_id: str, offer_id: str) -> tuple[DataEsim, DataEsimTopup]:
    esim = get_for_org(DataEsim, esim_id, organization_id, "Data eSIM")
    esim = _refresh(esim, clock())  # an eSIM that expired since it was last read is refused now
    if esim.status not in LIVE_STATES:
        raise conflict(
            "invalid_state_transition",
            f"A {esim.status} data eSIM cannot be topped up (allowed: {', '.join(LIVE_STATES)})",
        )
    offer = _offer(offer_id)
    if not _compatible(esim, offer):
        raise conflict("topup_not_available", f"The eSIM offer {offer.id} cannot top up this eSIM", "offer")
    topup = DataEsimTopup(
        id=f"dtu_{uuid.uuid4().hex}",
        organization_id=organization_id,
        data_esim_id=esim.id,
        offer_id=offer.id,
        status="processing",
        amount_cents=offer.price_cents,
        data_bytes=offer.data_bytes,
        validity_days=offer.validity_days,
    )
    db.session.add(topup)
    db.session.flush()
    ledger.hold(organization_id, offer.price_cents, f"Travel eSIM top-up {offer.name}", _topup_source(topup))
    apply_data_esim_topup.enqueue(str(organization_id), topup.id)
    return esim, topup


@job(retries=3, retry_delay=30)
def apply_data_esim_topup(organization_id: str, topup_id: str) -> None:
    """The supplier adds the package: completed → charged, the eSIM refreshed (a depleted one is active
    again); declined, or the eSIM expired meanwhile → failed and the hold released."""
    org = uuid.UUID(organization_id)
    topup = _locked(DataEsimTopup, topup_id, org)
    if topup is None or topup.status != "processing":
        return
    esim = _locked(DataEsim, topup.data_esim_id, org)
    now = clock()
    supplier = supplier_for()
    try:
        if supplier.status(_handle(esim), now).status not in LIVE_STATES:
            raise SupplierDeclined("data_esim_expired", "The eSIM expired before the top-up was applied")
        supplier.top_up(_handle(esim), topup.offer_id)
    except SupplierDeclined as declined:
        topup.status, topup.failure_code, topup.failure_message = "failed", declined.code, declined.message
        topup.completed_at = now
        ledger.settle(
            org, topup.amount_cents, "Travel eSIM top-up declined", _topup_source(topup), charge=False
        )
        db.session.flush()
        publish("data_esim.topup_failed", org, _event(esim, topup=topup.id))
        _refresh(esim, now)
        return
    topup.status, topup.completed_at = "completed", now
    ledger.settle(org, topup.amount_cents, "Travel eSIM top-up", _topup_source(topup), charge=True)
    db.session.flush()
    publish("data_esim.topped_up", org, _event(esim, topup=topup.id))
    _refresh(esim, now)


def list_topups(organization_id: uuid.UUID, esim_id: str) -> list[DataEsimTopup]:
    esim = get_for_org(DataEsim, esim_id, organization_id, "Data eSIM")
    return list(
        db.session.scalars(
            select(DataEsimTopup)
            .where(DataEsimTopup.organization_id == organization_id, DataEsimTopup.data_esim_id == esim.id)
            .order_by(DataEsimTopup.created_at.desc(), DataEsimTopup.id.desc())
        )
    )


# QR code -----------------------------------------------------------------------------------------------


def qr_matrix(code: str) -> segno.QRCode:
    """The QR symbol of an activation code: byte mode, error correction M (the level phone cameras and
    printed vouchers are usually given), no Micro QR (eSIM installers do not read it)."""
    return segno.make_qr(code, error="m", boost_error=False)


def qr_png(organization_id: uuid.UUID, esim_id: str) -> tuple[DataEsim, bytes]:
    """The activation code as a PNG a phone scans to install the eSIM (409 before it is issued)."""
    esim = get_for_org(DataEsim, esim_id, organization_id, "Data eSIM")
    code = activation_code(esim)
    if code is None:
        raise conflict(
            "activation_code_unavailable",
            f"A {esim.status} data eSIM has no activation code",
        )
    buffer = io.BytesIO()
    qr_matrix(code).save(buffer, kind="png", scale=QR_SCALE, border=QR_BORDER)
    return esim, buffer.getvalue()
