"""Lifecycle webhooks: partner endpoints, and the signed delivery of every stored event to them.

Design (Stripe's webhooks, docs/telecom.md "Lifecycle webhooks"):

- an endpoint has a ``whsec_…`` secret, shown only at creation and when rolled, kept encrypted (Fernet);
- each event makes one delivery row per enabled endpoint subscribed to its type (or ``*``), in the
  transaction of the change; the job ``deliver_webhook`` is queued after the commit;
- a delivery is a ``POST`` of the event's JSON signed ``Partner-Signature: t=<unix>,v1=<hex>`` (HMAC-SHA256
  of ``"{t}.{body}"``); a 2xx answer within the timeout is success, anything else a failed attempt, retried
  after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (8 attempts over about 27.6 hours);
- an endpoint that has failed every attempt for 3 days is disabled (``too_many_failures``), and its pending
  deliveries stop.

Retries are due times stored on the delivery, not only queued jobs: the job attempts a delivery only when
it is due (so the inline job queue of tests, which runs scheduled jobs at once, does nothing early), and a
sweep every minute queues deliveries whose job was lost. Tests move the clock (``events.clock``) and call
the sweep.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app
from sqlalchemy import func, select, update

from blueprints.audit import services as audit_log
from blueprints.telecom.models import new_id
from blueprints.telecom.models_webhooks import TelecomEvent, WebhookDelivery, WebhookEndpoint
from blueprints.telecom.schemas_webhooks import EventOut
from blueprints.telecom.services import events as event_store
from blueprints.telecom.services.common import CursorPage, conflict, cursor_page, invalid, publish
from core import outbound
from core.db import db, isoformat
from core.jobs import job, periodic
from core.tenancy import find_for_org, get_for_org

log = logging.getLogger(__name__)

MAX_ENDPOINTS = 16
# Waits after each failed automatic attempt (attempt 1 is immediate): the Svix / Standard Webhooks schedule.
RETRY_DELAYS = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=10),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
DISABLE_AFTER = timedelta(days=3)
# The sweep leaves a due delivery to its own scheduled job for this long, so the two never race.
SWEEP_GRACE = timedelta(minutes=2)
MAX_ROLL_OVERLAP_SECONDS = 24 * 3600
BODY_EXCERPT_BYTES = 1024
HISTORY_LIMIT = 20
DEFAULT_TIMEOUT_SECONDS = 10.0
USER_AGENT = "AgentDesk-Webhooks/1.0"
SIGNATURE_HEADER = "Partner-Signature"


# Secrets -----------------------------------------------------------------------------------------------


def _cipher() -> MultiFernet:
    """Like channel tokens (``blueprints.channels.crypto``): ``TELECOM_WEBHOOK_SECRET_KEY`` (Fernet keys,
    comma-separated, the first encrypts) or a key derived from ``SECRET_KEY`` with its own HKDF salt."""
    configured = current_app.config.get("TELECOM_WEBHOOK_SECRET_KEY")
    if configured:
        keys = [k.strip().encode() for k in str(configured).split(",") if k.strip()]
    else:
        hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"agentdesk-telecom-webhooks", info=b"fernet")
        keys = [base64.urlsafe_b64encode(hkdf.derive(current_app.config["SECRET_KEY"].encode()))]
    return MultiFernet([Fernet(k) for k in keys])


def _encrypt(secret: str) -> str:
    return _cipher().encrypt(secret.encode()).decode()


def _decrypt(ciphertext: str) -> str:
    return _cipher().decrypt(ciphertext.encode()).decode()


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    found = [_decrypt(endpoint.secret_ciphertext)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_ciphertext and expires is not None and now < expires:
        found.append(_decrypt(endpoint.previous_secret_ciphertext))
    return found


# URLs and addresses (SSRF): core.outbound, with this area's test switch ---------------------------------


def loopback_allowed() -> bool:
    """``TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK`` (default off): tests' receivers on 127.0.0.1 over http."""
    return bool(current_app.config.get("TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK", False))


def check_url(url: str) -> str:
    """The endpoint URL, or 400 naming ``url``: https, a host, no credentials, not a private address."""
    try:
        return outbound.check_url(url, allow_loopback=loopback_allowed())
    except outbound.UrlRefused as refused:
        raise invalid("url", str(refused)) from None


# Endpoints ---------------------------------------------------------------------------------------------


@dataclass
class EndpointFields:
    url: str
    enabled_events: list[str]
    description: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def check_enabled_events(names: list[str]) -> list[str]:
    if not names:
        raise invalid("enabled_events", 'name at least one event type, or ["*"] for all')
    unknown = [n for n in names if n != "*" and n not in event_store.EVENT_TYPES]
    if unknown:
        raise invalid("enabled_events", f"unknown event type {unknown[0]!r}")
    if "*" in names:
        return ["*"]
    return list(dict.fromkeys(names))


def _endpoint_count(organization_id: uuid.UUID) -> int:
    return int(
        db.session.scalar(
            select(func.count())
            .select_from(WebhookEndpoint)
            .where(WebhookEndpoint.organization_id == organization_id)
        )
        or 0
    )


def create_endpoint(organization_id: uuid.UUID, fields: EndpointFields) -> tuple[WebhookEndpoint, str]:
    """The endpoint and its secret in clear (the only moment besides a roll that it is shown)."""
    url = check_url(fields.url)
    enabled_events = check_enabled_events(fields.enabled_events)
    if _endpoint_count(organization_id) >= MAX_ENDPOINTS:
        raise conflict(
            "webhook_endpoint_limit_reached",
            f"An organization may have at most {MAX_ENDPOINTS} lifecycle webhook endpoints",
        )
    secret = new_secret()
    endpoint = WebhookEndpoint(
        id=new_id("whe"),
        organization_id=organization_id,
        url=url,
        description=fields.description,
        enabled_events=enabled_events,
        status="enabled",
        secret_ciphertext=_encrypt(secret),
        extra=dict(fields.metadata),
    )
    db.session.add(endpoint)
    db.session.flush()
    return endpoint, secret


def get_endpoint(organization_id: uuid.UUID, endpoint_id: str) -> WebhookEndpoint:
    return get_for_org(WebhookEndpoint, endpoint_id, organization_id, "WebhookEndpoint")


def list_endpoints(
    organization_id: uuid.UUID, *, limit: int = 10, starting_after: str | None = None
) -> CursorPage[WebhookEndpoint]:
    statement = select(WebhookEndpoint).where(WebhookEndpoint.organization_id == organization_id)
    return cursor_page(
        WebhookEndpoint, statement, organization_id, limit=limit, starting_after=starting_after
    )


def _stop_pending(endpoint: WebhookEndpoint, now: datetime) -> None:
    db.session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.status == "pending")
        .values(status="failed", next_attempt_at=None, last_error="endpoint_disabled", completed_at=now)
    )


def _disable(endpoint: WebhookEndpoint, reason: str, now: datetime) -> None:
    endpoint.status, endpoint.disabled_reason, endpoint.disabled_at = "disabled", reason, now
    _stop_pending(endpoint, now)


def update_endpoint(organization_id: uuid.UUID, endpoint_id: str, changes: dict[str, Any]) -> WebhookEndpoint:
    endpoint = get_endpoint(organization_id, endpoint_id)
    now = event_store.clock()
    if "url" in changes:
        endpoint.url = check_url(changes["url"])
    if "enabled_events" in changes:
        endpoint.enabled_events = check_enabled_events(changes["enabled_events"])
    if "description" in changes:
        endpoint.description = changes["description"]
    if "metadata" in changes:
        endpoint.extra = dict(changes["metadata"])
    status = changes.get("status")
    if status == "disabled" and endpoint.status == "enabled":
        _disable(endpoint, "manual", now)
    elif status == "enabled" and endpoint.status == "disabled":
        # Events of the disabled time are not sent later (Stripe's rule); a manual retry still can.
        endpoint.status, endpoint.disabled_reason, endpoint.disabled_at = "enabled", None, None
        endpoint.failing_since = None
    db.session.flush()
    return endpoint


def delete_endpoint(organization_id: uuid.UUID, endpoint_id: str) -> str:
    endpoint = get_endpoint(organization_id, endpoint_id)
    db.session.execute(
        WebhookDelivery.__table__.delete().where(WebhookDelivery.endpoint_id == endpoint.id)  # type: ignore[attr-defined]
    )
    db.session.delete(endpoint)
    db.session.flush()
    audit_log.record(
        "telecom_webhook_endpoint.deleted",
        "telecom_webhook_endpoint",
        endpoint.id,
        organization_id=organization_id,
    )
    return endpoint.id


def roll_secret(
    organization_id: uuid.UUID, endpoint_id: str, expires_in: int = 0
) -> tuple[WebhookEndpoint, str]:
    """A new secret; with ``expires_in`` > 0 the old one keeps signing (a second ``v1``) for that many
    seconds, so receivers can switch without dropping a delivery."""
    if not 0 <= expires_in <= MAX_ROLL_OVERLAP_SECONDS:
        raise invalid("expires_in", f"must be between 0 and {MAX_ROLL_OVERLAP_SECONDS} seconds")
    endpoint = get_endpoint(organization_id, endpoint_id)
    now = event_store.clock()
    secret = new_secret()
    if expires_in > 0:
        endpoint.previous_secret_ciphertext = endpoint.secret_ciphertext
        endpoint.previous_secret_expires_at = now + timedelta(seconds=expires_in)
    else:
        endpoint.previous_secret_ciphertext = endpoint.previous_secret_expires_at = None
    endpoint.secret_ciphertext = _encrypt(secret)
    db.session.flush()
    return endpoint, secret


# Deliveries --------------------------------------------------------------------------------------------


def _subscribed(endpoint: WebhookEndpoint, event_type: str) -> bool:
    return "*" in endpoint.enabled_events or event_type in endpoint.enabled_events


def record_and_fan_out(*, name: str, organization_id: uuid.UUID, obj: dict[str, Any]) -> None:
    """``common.event_published``: the event stored (``GET /v1/partner/events``), then one delivery per
    endpoint listening to it."""
    fan_out(event_store.record(name, organization_id, obj))


def fan_out(event: TelecomEvent) -> list[WebhookDelivery]:
    """One delivery per enabled endpoint of the organization that listens to the event's type."""
    endpoints = db.session.scalars(
        select(WebhookEndpoint)
        .where(WebhookEndpoint.organization_id == event.organization_id, WebhookEndpoint.status == "enabled")
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
    )
    deliveries = [
        WebhookDelivery(
            id=new_id("whd"),
            organization_id=event.organization_id,
            endpoint_id=endpoint.id,
            event_id=event.id,
            event_type=event.type,
            status="pending",
            attempts=0,
            automatic_attempts=0,
            next_attempt_at=event.created_at,
            history=[],
        )
        for endpoint in endpoints
        if _subscribed(endpoint, event.type)
    ]
    if deliveries:
        db.session.add_all(deliveries)
        db.session.flush()
        for delivery in deliveries:
            deliver_webhook.enqueue(str(event.organization_id), delivery.id)
    return deliveries


def list_deliveries(
    organization_id: uuid.UUID,
    endpoint_id: str,
    *,
    status: str | None = None,
    event_id: str | None = None,
    limit: int = 10,
    starting_after: str | None = None,
) -> CursorPage[WebhookDelivery]:
    endpoint = get_endpoint(organization_id, endpoint_id)
    statement = select(WebhookDelivery).where(
        WebhookDelivery.organization_id == organization_id, WebhookDelivery.endpoint_id == endpoint.id
    )
    if status is not None:
        statement = statement.where(WebhookDelivery.status == status)
    if event_id is not None:
        statement = statement.where(WebhookDelivery.event_id == event_id)
    return cursor_page(
        WebhookDelivery, statement, organization_id, limit=limit, starting_after=starting_after
    )


def get_delivery(organization_id: uuid.UUID, delivery_id: str) -> WebhookDelivery:
    return get_for_org(WebhookDelivery, delivery_id, organization_id, "WebhookDelivery")


def request_retry(organization_id: uuid.UUID, delivery_id: str) -> WebhookDelivery:
    """Send the delivery's event again now, whatever its status (one extra attempt, through the queue)."""
    delivery = get_delivery(organization_id, delivery_id)
    endpoint = get_endpoint(organization_id, delivery.endpoint_id)
    if endpoint.status != "enabled":
        raise conflict(
            "webhook_endpoint_disabled",
            "The endpoint is disabled: enable it (PATCH status enabled) before retrying its deliveries",
        )
    delivery.manual_requested_at = event_store.clock()
    db.session.flush()
    deliver_webhook.enqueue(str(organization_id), delivery.id, manual=True)
    return delivery


@dataclass(frozen=True)
class Outcome:
    status: int | None
    body: str | None
    error: str | None
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def payload(event: TelecomEvent) -> bytes:
    """The request body: the event exactly as ``GET /v1/partner/events/{id}`` shows it."""

    return json.dumps(EventOut.dump(event), separators=(",", ":"), ensure_ascii=False).encode()


def _timeout() -> float:
    return float(current_app.config.get("TELECOM_WEBHOOKS_TIMEOUT", DEFAULT_TIMEOUT_SECONDS))


def post(endpoint: WebhookEndpoint, event: TelecomEvent, now: datetime) -> Outcome:
    """One signed POST of the event to the endpoint."""
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    body = payload(event)
    timestamp = int(now.timestamp())
    try:
        signature = outbound.signature_header(signing_secrets(endpoint, now), timestamp, body)
    except InvalidToken:  # the key changed without keeping the old one in TELECOM_WEBHOOK_SECRET_KEY
        return Outcome(None, None, "secret_unreadable: roll the endpoint's secret", elapsed())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Partner-Event-Id": event.id,
        SIGNATURE_HEADER: signature,
    }
    timeout = _timeout()
    try:
        answer = outbound.post(
            endpoint.url,
            body,
            headers,
            allow_loopback=loopback_allowed(),
            timeout=timeout,
            excerpt_bytes=BODY_EXCERPT_BYTES,
        )
    except outbound.AddressRefused as refused:
        return Outcome(None, None, f"address_refused: {refused}"[:300], elapsed())
    except httpx.TimeoutException:
        return Outcome(None, None, f"timeout: no answer within {timeout:g} s", elapsed())
    except httpx.HTTPError as exc:
        return Outcome(None, None, f"connection_error: {type(exc).__name__}: {exc}"[:300], elapsed())
    # PostgreSQL text cannot hold NUL: the excerpt is for reading, so it is replaced.
    text = answer.excerpt.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    error = None if answer.ok else f"http_{answer.status}"
    return Outcome(answer.status, text, error, elapsed())


def _record(delivery: WebhookDelivery, outcome: Outcome, now: datetime, manual: bool) -> None:
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.last_response_status = outcome.status
    delivery.last_response_body = outcome.body
    delivery.last_error = outcome.error
    delivery.last_duration_ms = outcome.duration_ms
    entry = {
        "attempted_at": isoformat(now),
        "response_status": outcome.status,
        "duration_ms": outcome.duration_ms,
        "error": outcome.error,
        "manual": manual,
    }
    delivery.history = [*(delivery.history or []), entry][-HISTORY_LIMIT:]


def attempt(organization_id: uuid.UUID, delivery_id: str, *, manual: bool = False) -> WebhookDelivery | None:
    """Make the delivery's attempt if it is (still) due; a no-op otherwise, so duplicate jobs are harmless."""
    delivery = find_for_org(WebhookDelivery, delivery_id, organization_id)
    if delivery is None:
        return None  # deleted with its endpoint, or with its event after 30 days
    now = event_store.clock()
    if manual:
        if delivery.manual_requested_at is None:
            return delivery
    elif delivery.status != "pending" or delivery.next_attempt_at is None or delivery.next_attempt_at > now:
        return delivery
    # Nothing is written before the POST: on SQLite a pending write would hold the database's write lock
    # for as long as the receiver takes to answer.
    endpoint = get_endpoint(organization_id, delivery.endpoint_id)
    event = find_for_org(TelecomEvent, delivery.event_id, organization_id)
    if endpoint.status != "enabled" or event is None:
        delivery.manual_requested_at = None
        if delivery.status == "pending" and endpoint.status != "enabled":
            _stop_pending(endpoint, now)
        return delivery
    outcome = post(endpoint, event, now)
    delivery.manual_requested_at = None if manual else delivery.manual_requested_at
    _record(delivery, outcome, now, manual)
    if outcome.ok:
        delivery.status, delivery.next_attempt_at, delivery.completed_at = "succeeded", None, now
        endpoint.failing_since = None
        db.session.flush()
        return delivery
    if not manual:
        delivery.automatic_attempts += 1
        if delivery.automatic_attempts < MAX_ATTEMPTS:
            delay = RETRY_DELAYS[delivery.automatic_attempts - 1]
            delivery.next_attempt_at = now + delay
            deliver_webhook.schedule(delay.total_seconds(), str(organization_id), delivery.id)
        else:
            delivery.status, delivery.next_attempt_at, delivery.completed_at = "failed", None, now
    elif delivery.status != "pending":
        delivery.status, delivery.completed_at = "failed", now  # a manual retry's failure ends it again
    if endpoint.failing_since is None:
        endpoint.failing_since = now
    db.session.flush()
    if now - endpoint.failing_since >= DISABLE_AFTER:
        _auto_disable(endpoint, now)
    return delivery


def _auto_disable(endpoint: WebhookEndpoint, now: datetime) -> None:
    _disable(endpoint, "too_many_failures", now)
    db.session.flush()
    log.warning(
        "lifecycle webhook endpoint %s (organization %s) disabled: every attempt failed since %s",
        endpoint.id,
        endpoint.organization_id,
        isoformat(endpoint.failing_since),
    )
    data = {"id": endpoint.id, "object": "webhook_endpoint"}
    publish("webhook_endpoint.disabled", endpoint.organization_id, data)


@job(retries=0)  # the delivery's own schedule retries; a crashed run is picked up by the sweep
def deliver_webhook(organization_id: str, delivery_id: str, manual: bool = False) -> None:
    attempt(uuid.UUID(organization_id), delivery_id, manual=manual)


def retry_due(now: datetime | None = None, grace: timedelta = SWEEP_GRACE) -> int:
    """Queue every delivery overdue by more than ``grace`` (its scheduled job was lost: a restart of an
    embedded queue, a flushed Redis). Returns how many were queued."""
    cutoff = (now or event_store.clock()) - grace
    rows = db.session.execute(
        select(WebhookDelivery.organization_id, WebhookDelivery.id, WebhookDelivery.manual_requested_at)
        .where(
            ((WebhookDelivery.status == "pending") & (WebhookDelivery.next_attempt_at <= cutoff))
            | (WebhookDelivery.manual_requested_at <= cutoff)
        )
        .order_by(WebhookDelivery.next_attempt_at)
        .limit(500)
    ).all()
    for organization_id, delivery_id, manual_requested_at in rows:
        manual = manual_requested_at is not None and manual_requested_at <= cutoff
        deliver_webhook.enqueue(str(organization_id), delivery_id, manual=manual)
    return len(rows)


@periodic(minute="*")
def retry_due_sweep() -> None:
    retry_due()
