"""Meta webhook payloads -> plain events, handed to whoever stores them.

Every entry, change, message and status of a delivery is read (Chatwoot read only the first of each).
Nothing here touches the database: the parsing is pure so it can be tested on its own and reused by
the simulator, which speaks the same payloads.

Inbound events flow one way: channels parse them and hand them over through the :data:`inbound_events`
hook; the messaging area connects the receiver that stores them (channels never import messaging). A
delivery is handed over one item (one ``entry`` of Meta's payload) at a time, and the receiver makes
each item durable on its own, so one bad item never drops the good ones of its batch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.hooks import hook
from core.phones import InvalidPhoneNumber, normalize_phone

log = logging.getLogger(__name__)

OBJECT_SERVICES = {"whatsapp_business_account": "whatsapp", "instagram": "instagram", "page": "messenger"}
MEDIA_KINDS = {
    "image": "image",
    "video": "video",
    "audio": "audio",
    "document": "document",
    "sticker": "image",
}
ATTACHMENT_KINDS = {"image": "image", "video": "video", "audio": "audio", "file": "document"}


@dataclass(frozen=True)
class InboundMessage:
    service: str
    organization_address: str
    external_id: str
    contact_address: str  # E.164 for WhatsApp; the PSID / IGSID for Messenger and Instagram
    provider_contact_id: str  # wa_id / PSID as Meta wrote it (the Mexican 521 form is kept here)
    contact_name: str | None
    timestamp: datetime
    content: dict[str, Any]
    direction: str = "incoming"  # "outgoing" for Instagram/Messenger echoes of the Page's own sends
    reply_to: str | None = None


@dataclass(frozen=True)
class StatusUpdate:
    service: str
    organization_address: str
    external_id: str
    status: str
    timestamp: datetime
    error: dict[str, Any] | None = None


@dataclass(frozen=True)
class WatermarkUpdate:
    """Messenger/Instagram ``delivery``/``read``: every outgoing message up to ``watermark`` (or the
    listed ids) reached ``status``."""

    service: str
    organization_address: str
    contact_address: str
    status: str
    watermark: datetime
    external_ids: tuple[str, ...] = ()


Event = InboundMessage | StatusUpdate | WatermarkUpdate


@dataclass
class ParsedDelivery:
    events: list[Event] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    # ``events`` cut into the delivery's items (one per ``entry``), in order; each item is stored on its own
    items: list[list[Event]] = field(default_factory=list)


@dataclass
class DeliveryReport:
    """What the receiver did with the events handed over (the webhook's answer reports it)."""

    messages_created: int = 0
    duplicates: int = 0
    statuses_applied: int = 0
    statuses_waiting: int = 0
    unknown_addresses: set[tuple[str, str]] = field(default_factory=set)

    def add(self, other: DeliveryReport) -> None:
        self.messages_created += other.messages_created
        self.duplicates += other.duplicates
        self.statuses_applied += other.statuses_applied
        self.statuses_waiting += other.statuses_waiting
        self.unknown_addresses |= other.unknown_addresses

    def as_dict(self) -> dict[str, object]:
        return {
            "messages_created": self.messages_created,
            "duplicates": self.duplicates,
            "statuses_applied": self.statuses_applied,
            "statuses_waiting": self.statuses_waiting,
            "unknown_addresses": sorted(f"{s}:{a}" for s, a in self.unknown_addresses),
        }


inbound_events = hook(
    "channels.inbound_events",
    "fn(events: list[Event]) -> DeliveryReport: store one item of a provider delivery and make it durable",
)


def hand_over(events: list[Event]) -> DeliveryReport:
    """Give one item's events to the receivers (the messaging area) and sum what they report."""
    report = DeliveryReport()
    if not events:
        return report
    answers = inbound_events.answers(events=events)
    if not answers:
        # nothing would store them: fail, so the provider delivers them again once a receiver is connected
        raise RuntimeError(
            f"no receiver is connected to {inbound_events.name}: {len(events)} events not stored"
        )
    for answer in answers:
        if isinstance(answer, DeliveryReport):
            report.add(answer)
    return report


def hand_over_delivery(parsed: ParsedDelivery) -> DeliveryReport:
    report = DeliveryReport()
    for item in parsed.items:
        report.add(hand_over(item))
    return report


def from_seconds(value: Any) -> datetime:
    try:
        return datetime.fromtimestamp(int(str(value)), UTC)
    except (TypeError, ValueError):
        return datetime.now(UTC)


def from_millis(value: Any) -> datetime:
    try:
        return datetime.fromtimestamp(int(str(value)) / 1000, UTC)
    except (TypeError, ValueError):
        return datetime.now(UTC)


def whatsapp_contact_address(wa_id: str) -> str:
    """E.164 with the Mexican ``521`` / Argentine ``549`` quirks folded, so one person is one contact."""
    try:
        return normalize_phone(wa_id)
    except InvalidPhoneNumber:
        digits = "".join(ch for ch in str(wa_id) if ch.isdigit())
        return f"+{digits}"


def parse(payload: Any) -> ParsedDelivery:
    parsed = ParsedDelivery()
    if not isinstance(payload, dict):
        parsed.ignored.append("payload is not a JSON object")
        return parsed
    service = OBJECT_SERVICES.get(str(payload.get("object")))
    if service is None:
        parsed.ignored.append(f"object {payload.get('object')!r}")
        return parsed
    for entry in _list(payload.get("entry")):
        first = len(parsed.events)
        if service == "whatsapp":
            for change in _list(entry.get("changes")):
                _whatsapp_change(change, parsed)
        else:
            page_id = str(entry.get("id", ""))
            for item in _list(entry.get("messaging")):
                _messaging_item(service, page_id, item, parsed)
        if len(parsed.events) > first:
            parsed.items.append(parsed.events[first:])
    return parsed


def _list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _whatsapp_change(change: dict[str, Any], parsed: ParsedDelivery) -> None:
    if change.get("field") != "messages":
        parsed.ignored.append(f"field {change.get('field')!r}")
        return
    value = change.get("value") or {}
    address = str((value.get("metadata") or {}).get("phone_number_id", ""))
    names = {str(c.get("wa_id")): (c.get("profile") or {}).get("name") for c in _list(value.get("contacts"))}
    for message in _list(value.get("messages")):
        content = _whatsapp_content(message)
        if content is None:
            parsed.ignored.append(f"message type {message.get('type')!r}")
            continue
        wa_id = str(message.get("from", ""))
        parsed.events.append(
            InboundMessage(
                service="whatsapp",
                organization_address=address,
                external_id=str(message.get("id", "")),
                contact_address=whatsapp_contact_address(wa_id),
                provider_contact_id=wa_id,
                contact_name=names.get(wa_id),
                timestamp=from_seconds(message.get("timestamp")),
                content=content,
                reply_to=(message.get("context") or {}).get("id"),
            )
        )
    for status in _list(value.get("statuses")):
        errors = _list(status.get("errors"))
        error = None
        if errors:
            first = errors[0]
            error = {
                "code": first.get("code"),
                "title": first.get("title") or first.get("message"),
                "details": (first.get("error_data") or {}).get("details") or first.get("message"),
                "provider": "meta",
            }
        parsed.events.append(
            StatusUpdate(
                service="whatsapp",
                organization_address=address,
                external_id=str(status.get("id", "")),
                status=str(status.get("status", "")),
                timestamp=from_seconds(status.get("timestamp")),
                error=error,
            )
        )
    for error in _list(value.get("errors")):  # system-level errors carry no message id
        log.warning("WhatsApp system error on %s: %s", address, error)
        parsed.ignored.append(f"system error {error.get('code')}")


def _whatsapp_content(message: dict[str, Any]) -> dict[str, Any] | None:
    kind = message.get("type")
    if kind == "text":
        return {"kind": "text", "text": (message.get("text") or {}).get("body", "")}
    if kind in MEDIA_KINDS:
        media = message.get(kind) or {}
        file = {
            "uri": media.get("url") or media.get("link"),
            "mime_type": media.get("mime_type"),
            "provider_id": media.get("id"),
        }
        if media.get("filename"):
            file["filename"] = media["filename"]
        if media.get("sha256"):
            file["sha256"] = media["sha256"]
        return {"kind": MEDIA_KINDS[kind], "text": media.get("caption"), "file": file}
    if kind == "location":
        location = message.get("location") or {}
        return {
            "kind": "location",
            "location": {
                key: location[key] for key in ("latitude", "longitude", "name", "address") if key in location
            },
        }
    if kind == "button":
        return {"kind": "text", "text": (message.get("button") or {}).get("text", "")}
    if kind == "interactive":
        interactive = message.get("interactive") or {}
        reply = interactive.get("button_reply") or interactive.get("list_reply") or {}
        return {"kind": "text", "text": reply.get("title", "")}
    return None  # reactions, unsupported, system and ephemeral messages are not conversation content


def _messaging_item(service: str, page_id: str, item: dict[str, Any], parsed: ParsedDelivery) -> None:
    sender = str((item.get("sender") or {}).get("id", ""))
    recipient = str((item.get("recipient") or {}).get("id", ""))
    timestamp = from_millis(item.get("timestamp"))
    if "message" in item:
        message = item.get("message") or {}
        if message.get("is_deleted") or message.get("is_unsupported"):
            parsed.ignored.append("deleted or unsupported message")
            return
        echo = bool(message.get("is_echo"))
        contact = recipient if echo else sender
        content = _attachment_content(message)
        if content is None:
            parsed.ignored.append("message without supported content")
            return
        parsed.events.append(
            InboundMessage(
                service=service,
                organization_address=page_id,
                external_id=str(message.get("mid", "")),
                contact_address=contact,
                provider_contact_id=contact,
                contact_name=None,
                timestamp=timestamp,
                content=content,
                direction="outgoing" if echo else "incoming",
                reply_to=(message.get("reply_to") or {}).get("mid"),
            )
        )
    elif "postback" in item:
        postback = item.get("postback") or {}
        parsed.events.append(
            InboundMessage(
                service=service,
                organization_address=page_id,
                external_id=str(postback.get("mid") or f"postback.{sender}.{item.get('timestamp')}"),
                contact_address=sender,
                provider_contact_id=sender,
                contact_name=None,
                timestamp=timestamp,
                content={"kind": "text", "text": postback.get("title") or postback.get("payload") or ""},
            )
        )
    elif "delivery" in item or "read" in item:
        status = "delivered" if "delivery" in item else "read"
        detail = item.get("delivery") or item.get("read") or {}
        mids = tuple(str(m) for m in detail.get("mids") or ([detail["mid"]] if detail.get("mid") else []))
        watermark = from_millis(detail["watermark"]) if detail.get("watermark") else timestamp
        parsed.events.append(WatermarkUpdate(service, page_id, sender, status, watermark, mids))
    else:
        parsed.ignored.append("messaging event without message, postback, delivery or read")


def _attachment_content(message: dict[str, Any]) -> dict[str, Any] | None:
    text = message.get("text")
    for attachment in _list(message.get("attachments")):
        kind = ATTACHMENT_KINDS.get(str(attachment.get("type")))
        payload = attachment.get("payload") or {}
        if kind:
            return {"kind": kind, "text": text, "file": {"uri": payload.get("url"), "mime_type": None}}
        if attachment.get("type") == "location" and isinstance(payload.get("coordinates"), dict):
            coordinates = payload["coordinates"]
            return {
                "kind": "location",
                "location": {"latitude": coordinates.get("lat"), "longitude": coordinates.get("long")},
            }
    if text is not None:
        return {"kind": "text", "text": text}
    return None
