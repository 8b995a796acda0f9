"""``/webhooks/meta``: Meta's verification handshake and signed deliveries for WhatsApp, Instagram and
Messenger.

A delivery is checked before anything is parsed or stored: ``X-Hub-Signature-256`` must be the
HMAC-SHA256 of the raw body with ``META_APP_SECRET`` (constant-time comparison); a bad or missing
signature is 401 and stores nothing, and with no secret configured every delivery is refused; a body
that is not JSON is 400. Then (``intake.ingest_mode``):

- deferred (production): the delivery is stored as it came in one INSERT (``inbound_deliveries``),
  committed, and answered 200 at once (Meta's advice); the processor drains stored deliveries in batches
  (``processor``), woken right after the commit. A database that cannot take the INSERT is 503/500, so
  Meta delivers again.
- inline (tests, ``JOBS_MODE=inline``): every entry, change, message and status is handed to the receiver
  of ``inbound.inbound_events`` (the messaging area), one item (entry) at a time; each item is durable
  before the next is handed over, and 200 is answered only after the last one with what was stored, so
  Meta redelivers anything we failed to keep (items already stored are then counted as duplicates).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

from flask import Blueprint, Response, current_app, jsonify, request

from blueprints.channels import dead_letters, inbound, intake, processor
from blueprints.channels.delivery import store_delivery
from core import uow
from core.errors import ApiError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 5 * 1024 * 1024  # Meta's deliveries are at most 3 MB
SIGNATURE_HEADER = "X-Hub-Signature-256"

webhooks = Blueprint("meta_webhooks", __name__, url_prefix="/webhooks/meta")


def signature_for(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_is_valid(secret: str | None, body: bytes, header: str | None) -> bool:
    if not secret or not header:
        return False
    return hmac.compare_digest(signature_for(secret, body), header.strip().lower())


@webhooks.get("")
def verify_subscription() -> Response:
    """Meta calls this when the callback URL is saved: echo ``hub.challenge`` if the token matches."""
    expected = current_app.config.get("META_VERIFY_TOKEN")
    mode = request.args.get("hub.mode")
    token = request.args.get("hub.verify_token", "")
    challenge = request.args.get("hub.challenge", "")
    if mode == "subscribe" and expected and hmac.compare_digest(token.encode(), str(expected).encode()):
        return Response(challenge, status=200, mimetype="text/plain")
    raise ApiError(403, "Verification token mismatch")


@webhooks.post("")
def receive() -> Response:
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise ApiError(413, "Payload too large")
    body = request.get_data(cache=True)
    secret = current_app.config.get("META_APP_SECRET")
    if not secret:
        log.error("Meta webhook refused: META_APP_SECRET is not configured")
        raise ApiError(401, "Invalid signature")
    if not signature_is_valid(secret, body, request.headers.get(SIGNATURE_HEADER)):
        log.warning("Meta webhook refused: bad or missing %s", SIGNATURE_HEADER)
        raise ApiError(401, "Invalid signature")
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep, never Meta's
        raise ApiError(400, "Request body must be a JSON object") from None
    if intake.ingest_mode(current_app) == intake.DEFERRED:
        delivery_id = intake.store(body, dict(request.headers), dead_letters.META)
        uow.after_commit(processor.request_drain)  # the boundary's commit makes it durable, then this
        return jsonify({"received": True, "queued": True, "delivery_id": str(delivery_id)})
    parsed = inbound.parse(payload)
    if parsed.ignored:
        log.info("Meta webhook: ignored %s", parsed.ignored)
    report = store_delivery(parsed)
    return jsonify({"received": True, **report.as_dict(), "ignored": len(parsed.ignored)})
