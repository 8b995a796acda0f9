"""Meta webhook payloads -> plain events, handed to whoever stores them.

Every entry, change, message and status of a delivery is read (Chatwoot read only the first of each).
Nothing here touches the database: the parsing is pure so it can be tested on its own and reused by
the simulator, which speaks the same payloads.

Inbound events flow one way: channels parse them and hand them over through hooks; the messaging area
connects the receivers that store them (channels never import messaging). Stored deliveries are drained
in batches (``processor``): every event of a batch goes to :data:`inbound_batch` at once, inside the
batch's one transaction, and :data:`inbound_settle` follows its commit. A delivery processed inside its
request (``INGEST_MODE=inline``), or one of a batch that failed, is handed to :data:`inbound_events` one
item (one ``entry`` of Meta's payload) at a time, and the receiver makes each item durable on its own, so
one bad item never drops the good ones of its delivery.

The edge of the webhook (docs/channels.md, "What is cleaned or refused"): every string of a message or
status is cleaned (NUL removed, lone UTF-16 surrogates replaced with U+FFFD), because PostgreSQL can store
neither and one such character used to fail the whole delivery. A message or status that cannot be
stored as it is (no id, a ``from`` that is not a phone number, a timestamp that is not a Unix time, text
that is not a string, nesting deeper than :data:`MAX_DEPTH`) is not an event: it becomes a
:class:`Rejected` item, which the webhook records in the dead letters.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
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
# Meta's payloads are about 6 levels deep; anything much deeper is not Meta's and is refused per item.
MAX_DEPTH = 32
ID_LIMIT = 255  # messages.external_id / reply_to
ADDRESS_LIMIT = 64  # contact addresses and provider ids
NAME_LIMIT = 200  # messaging_contacts.name
EMOJI_LIMIT = 16  # one emoji, modifiers and joiners included (a family emoji is 11 code points)
# A timestamp further ahead than this is not a clock difference: it would keep a window open for years.
FUTURE_LIMIT = timedelta(days=1)
_SURROGATES = re.compile("[\ud800-\udfff]")
_WA_ID = re.compile(r"\+?\d{5,15}")
_PHONE_PUNCTUATION = re.compile(r"[\s().-]")


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
    raw: Any = field(default=None, compare=False, repr=False)  # the item as received, for dead letters


@dataclass(frozen=True)
class StatusUpdate:
    service: str
    organization_address: str
    external_id: str
    status: str
    timestamp: datetime
    error: dict[str, Any] | None = None
    raw: Any = field(default=None, compare=False, repr=False)


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
    raw: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ReactionUpdate:
    """A contact reacted to a message (WhatsApp ``reaction``, Messenger/Instagram ``reaction``): ``emoji``
    on the message whose provider id is ``message_external_id``; an empty ``emoji`` removes the contact's
    reaction. Not conversation content: it changes the message it points to."""

    service: str
    organization_address: str
    external_id: str  # the reaction's own id (WhatsApp sends it as a message); "" when there is none
    message_external_id: str
    contact_address: str
    emoji: str
    timestamp: datetime
    raw: Any = field(default=None, compare=False, repr=False)


Event = InboundMessage | StatusUpdate | WatermarkUpdate | ReactionUpdate


class Poison(ValueError):
    """A message or status that cannot be stored as it is; the text says why (a dead letter's reason)."""


@dataclass(frozen=True)
class Rejected:
    """A message or status refused at the edge: recorded as a dead letter, never stored as an event."""

    service: str
    organization_address: str | None
    reason: str
    raw: Any


@dataclass
class ParsedDelivery:
    events: list[Event] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    # ``events`` cut into the delivery's items (one per ``entry``), in order; each item is stored on its own
    items: list[list[Event]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


@dataclass
class DeliveryReport:
    """What the receiver did with the events handed over (the webhook's answer reports it)."""

    messages_created: int = 0
    duplicates: int = 0
    statuses_applied: int = 0
    statuses_waiting: int = 0
    unknown_addresses: set[tuple[str, str]] = field(default_factory=set)
    dead_letters: int = 0
    reactions_applied: int = 0
    # reactions to a message the desk does not have (older than the desk, or another thread's): dropped
    reactions_unmatched: int = 0
    # (organization id, provider id) of the statuses left waiting for their message; what
    # :data:`inbound_settle` looks at again once the batch has committed (not part of the answer)
    waiting: set[tuple[Any, str]] = field(default_factory=set)

    def add(self, other: DeliveryReport) -> None:
        self.messages_created += other.messages_created
        self.duplicates += other.duplicates
        self.statuses_applied += other.statuses_applied
        self.statuses_waiting += other.statuses_waiting
        self.unknown_addresses |= other.unknown_addresses
        self.dead_letters += other.dead_letters
        self.reactions_applied += other.reactions_applied
        self.reactions_unmatched += other.reactions_unmatched
        self.waiting |= other.waiting

    def as_dict(self) -> dict[str, object]:
        return {
            "messages_created": self.messages_created,
            "duplicates": self.duplicates,
            "statuses_applied": self.statuses_applied,
            "statuses_waiting": self.statuses_waiting,
            "unknown_addresses": sorted(f"{s}:{a}" for s, a in self.unknown_addresses),
            "dead_letters": self.dead_letters,
            "reactions_applied": self.reactions_applied,
            "reactions_unmatched": self.reactions_unmatched,
        }


inbound_events = hook(
    "channels.inbound_events",
    "fn(events: list[Event]) -> DeliveryReport: store one item of a provider delivery and make it durable",
)


inbound_batch = hook(
    "channels.inbound_batch",
    "fn(events: list[Event]) -> DeliveryReport: store a batch of events in the caller's unit of work "
    "(flush only: the caller commits once for the whole batch)",
)
inbound_settle = hook(
    "channels.inbound_settle",
    "fn(report: DeliveryReport) -> int: after a batch committed, apply the statuses it left waiting "
    "whose message is there now (a send that committed meanwhile); the caller commits",
)


class NoReceiver(RuntimeError):
    """Nothing is connected to store inbound events: refuse, so the provider delivers them again."""


def hand_over(events: list[Event]) -> DeliveryReport:
    """Give one item's events to the receivers (the messaging area) and sum what they report."""
    report = DeliveryReport()
    if not events:
        return report
    if not inbound_events.receivers:
        # nothing would store them: fail, so the provider delivers them again once a receiver is connected
        raise NoReceiver(
            f"no receiver is connected to {inbound_events.name}: {len(events)} events not stored"
        )
    for answer in inbound_events.answers(events=events):
        if isinstance(answer, DeliveryReport):
            report.add(answer)
    return report


def hand_over_batch(events: list[Event]) -> DeliveryReport:
    """Give a whole batch's events to the batch receiver, in the caller's transaction."""
    report = DeliveryReport()
    if not events:
        return report
    if not inbound_batch.receivers:
        raise NoReceiver(f"no receiver is connected to {inbound_batch.name}: {len(events)} events not stored")
    for answer in inbound_batch.answers(events=events):
        if isinstance(answer, DeliveryReport):
            report.add(answer)
    return report


def settle(report: DeliveryReport) -> int:
    """After a batch's commit: the waiting statuses whose message is there now; how many were applied."""
    return sum(int(answer or 0) for answer in inbound_settle.answers(report=report))


def clean_text(text: str) -> str:
    """NUL removed and lone surrogates replaced with U+FFFD: what PostgreSQL (and UTF-8) can store."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    return _SURROGATES.sub("\ufffd", text)


def clean(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON value with every string (keys included) cleaned; :class:`Poison` when nested
    deeper than :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise Poison(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v, depth + 1) for v in value]
    return value


def _timestamp(value: Any, divisor: int, field_name: str) -> datetime:
    """A Unix time in seconds (WhatsApp) or milliseconds (Instagram/Messenger, ``divisor`` 1000). Missing:
    now, as before; anything else that is not a Unix time a datetime can hold is :class:`Poison`."""
    if value is None or value == "":
        return datetime.now(UTC)
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit():
        raise Poison(f"{field_name}: not a Unix time")
    try:
        stamp = datetime.fromtimestamp(int(text) / divisor, UTC)
    except (OverflowError, ValueError, OSError):
        raise Poison(f"{field_name}: not a Unix time") from None
    if stamp > datetime.now(UTC) + FUTURE_LIMIT:
        raise Poison(f"{field_name}: more than a day in the future")
    return stamp


def from_seconds(value: Any) -> datetime:
    return _timestamp(value, 1, "timestamp")


def from_millis(value: Any) -> datetime:
    return _timestamp(value, 1000, "timestamp")


def _required_id(value: Any, field_name: str, limit: int = ID_LIMIT) -> str:
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not text:
        raise Poison(f"{field_name}: missing")
    if len(text) > limit:
        raise Poison(f"{field_name}: longer than {limit} characters")
    return text


def _optional_id(value: Any) -> str | None:
    # a reference we merely keep (the message replied to): dropped rather than refusing the message
    return value if isinstance(value, str) and 0 < len(value) <= ID_LIMIT else None


def _name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value.strip()[:NAME_LIMIT] or None  # a longer profile name is cut, never refused


def whatsapp_contact_address(wa_id: str) -> str:
    """E.164 with the Mexican ``521`` / Argentine ``549`` quirks folded, so one person is one contact.

    A WhatsApp id is 5 to 15 digits; anything else (``"abc"`` used to become the contact ``+``) raises
    :class:`Poison`. Digits that ``phonenumbers`` does not know are kept as ``+<digits>``."""
    text = _PHONE_PUNCTUATION.sub("", str(wa_id))
    if not _WA_ID.fullmatch(text):
        raise Poison("from: not a phone number")
    try:
        return normalize_phone(text)
    except InvalidPhoneNumber:
        return "+" + text.lstrip("+")


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
            page_id = _address(entry.get("id"))
            for item in _list(entry.get("messaging")):
                try:
                    _messaging_item(service, page_id, clean(item), item, parsed)
                except Exception as error:  # any unreadable item is one dead letter, never a failed delivery
                    parsed.rejected.append(Rejected(service, page_id or None, _reason(error), item))
        if len(parsed.events) > first:
            parsed.items.append(parsed.events[first:])
    return parsed


def _reason(error: Exception) -> str:
    """A dead letter's reason: the rule a refused item broke, or what an unexpected shape raised."""
    if isinstance(error, Poison):
        return str(error)
    log.warning("webhook item not readable", exc_info=error)
    return f"unreadable item ({type(error).__name__}: {error})"[:500]


def _list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _address(value: Any) -> str:
    """The organization address a delivery names (an id we look up, never stored when unknown)."""
    if not isinstance(value, str | int) or isinstance(value, bool):
        return ""
    text = clean_text(str(value)).strip()
    return text if len(text) <= ADDRESS_LIMIT else ""


def _whatsapp_change(change: dict[str, Any], parsed: ParsedDelivery) -> None:
    if change.get("field") != "messages":
        parsed.ignored.append(f"field {change.get('field')!r}")
        return
    value = change.get("value") if isinstance(change.get("value"), dict) else {}
    metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
    address = _address(metadata.get("phone_number_id"))
    names: dict[str, str | None] = {}
    for contact in _list(value.get("contacts")):
        profile = contact.get("profile") if isinstance(contact.get("profile"), dict) else {}
        names[str(contact.get("wa_id"))] = (
            _name(clean_text(profile["name"])) if _is_text(profile, "name") else None
        )
    for raw in _list(value.get("messages")):
        try:
            message = clean(raw)
            event = _whatsapp_message(address, message, names)
        except Exception as error:  # any unreadable item is one dead letter, never a failed delivery
            parsed.rejected.append(Rejected("whatsapp", address or None, _reason(error), raw))
            continue
        if event is None:
            parsed.ignored.append(f"message type {message.get('type')!r}")
            continue
        parsed.events.append(event)
    for raw in _list(value.get("statuses")):
        try:
            parsed.events.append(_whatsapp_status(address, clean(raw), raw))
        except Exception as error:  # any unreadable item is one dead letter, never a failed delivery
            parsed.rejected.append(Rejected("whatsapp", address or None, _reason(error), raw))
    for error in _list(value.get("errors")):  # system-level errors carry no message id
        log.warning("WhatsApp system error on %s: %s", address, error)
        parsed.ignored.append(f"system error {error.get('code')}")


def _is_text(container: dict[str, Any], key: str) -> bool:
    return isinstance(container.get(key), str)


def _whatsapp_message(
    address: str, message: dict[str, Any], names: dict[str, str | None]
) -> InboundMessage | ReactionUpdate | None:
    external_id = _required_id(message.get("id"), "id")
    wa_id = str(message.get("from", ""))
    contact_address = whatsapp_contact_address(wa_id)
    timestamp = from_seconds(message.get("timestamp"))
    if message.get("type") == "reaction":
        return _whatsapp_reaction(address, external_id, contact_address, timestamp, message)
    content = _whatsapp_content(message)
    if content is None:
        return None
    context = message.get("context") if isinstance(message.get("context"), dict) else {}
    return InboundMessage(
        service="whatsapp",
        organization_address=address,
        external_id=external_id,
        contact_address=contact_address,
        provider_contact_id=wa_id.strip().lstrip("+"),
        contact_name=names.get(wa_id),
        timestamp=timestamp,
        content=content,
        reply_to=_optional_id(context.get("id")),
        raw=message,
    )


def _whatsapp_reaction(
    address: str, external_id: str, contact_address: str, timestamp: datetime, message: dict[str, Any]
) -> ReactionUpdate | None:
    """``reaction: {message_id, emoji}``; an empty or missing ``emoji`` removes the reaction. A reaction
    that names no message cannot be placed anywhere: ignored, like the other non-content types."""
    reaction = message.get("reaction") if isinstance(message.get("reaction"), dict) else {}
    target = _optional_id(reaction.get("message_id"))
    if target is None:
        return None
    emoji = _text_field(reaction, "emoji") or ""
    return ReactionUpdate(
        service="whatsapp",
        organization_address=address,
        external_id=external_id,
        message_external_id=target,
        contact_address=contact_address,
        emoji=emoji.strip()[:EMOJI_LIMIT],
        timestamp=timestamp,
        raw=message,
    )


def _whatsapp_status(address: str, status: dict[str, Any], raw: dict[str, Any]) -> StatusUpdate:
    external_id = _required_id(status.get("id"), "id")
    if not _is_text(status, "status"):
        raise Poison("status: missing")
    errors = _list(status.get("errors"))
    error = None
    if errors:
        first = errors[0]
        error_data = first.get("error_data") if isinstance(first.get("error_data"), dict) else {}
        error = {
            "code": first.get("code"),
            "title": first.get("title") or first.get("message"),
            "details": error_data.get("details") or first.get("message"),
            "provider": "meta",
        }
    return StatusUpdate(
        service="whatsapp",
        organization_address=address,
        external_id=external_id,
        status=status["status"],
        timestamp=from_seconds(status.get("timestamp")),
        error=error,
        raw=raw,
    )


def _text_field(container: Any, key: str, default: str | None = "") -> str | None:
    """A text a message carries; :class:`Poison` when it is there but not a string."""
    if not isinstance(container, dict) or container.get(key) is None:
        return default
    value = container[key]
    if not isinstance(value, str):
        raise Poison(f"{key}: not a string")
    return value


def _whatsapp_content(message: dict[str, Any]) -> dict[str, Any] | None:
    kind = message.get("type")
    if kind == "text":
        return {"kind": "text", "text": _text_field(message.get("text"), "body")}
    if kind in MEDIA_KINDS:
        media = message.get(kind) if isinstance(message.get(kind), dict) else {}
        file = {
            "uri": media.get("url") or media.get("link"),
            "mime_type": media.get("mime_type"),
            "provider_id": media.get("id"),
        }
        if media.get("filename"):
            file["filename"] = media["filename"]
        if media.get("sha256"):
            file["sha256"] = media["sha256"]
        return {"kind": MEDIA_KINDS[kind], "text": _text_field(media, "caption", None), "file": file}
    if kind == "location":
        location = message.get("location") or {}
        return {
            "kind": "location",
            "location": {
                key: location[key] for key in ("latitude", "longitude", "name", "address") if key in location
            },
        }
    if kind == "button":
        return {"kind": "text", "text": _text_field(message.get("button"), "text")}
    if kind == "interactive":
        interactive = message.get("interactive") if isinstance(message.get("interactive"), dict) else {}
        reply = interactive.get("button_reply") or interactive.get("list_reply") or {}
        return {"kind": "text", "text": _text_field(reply, "title")}
    return None  # unsupported, system and ephemeral messages are not conversation content


def _messaging_item(
    service: str, page_id: str, item: dict[str, Any], raw: dict[str, Any], parsed: ParsedDelivery
) -> None:
    """One Instagram/Messenger ``messaging`` item, already cleaned (``raw``: as received)."""
    sender = str((item.get("sender") or {}).get("id", "")) if isinstance(item.get("sender"), dict) else ""
    recipient = (
        str((item.get("recipient") or {}).get("id", "")) if isinstance(item.get("recipient"), dict) else ""
    )
    if "message" in item:
        message = item.get("message") if isinstance(item.get("message"), dict) else {}
        if message.get("is_deleted") or message.get("is_unsupported"):
            parsed.ignored.append("deleted or unsupported message")
            return
        echo = bool(message.get("is_echo"))
        contact = _required_id(
            recipient if echo else sender, "recipient.id" if echo else "sender.id", ADDRESS_LIMIT
        )
        external_id = _required_id(message.get("mid"), "message.mid")
        timestamp = from_millis(item.get("timestamp"))
        content = _attachment_content(message)
        if content is None:
            parsed.ignored.append("message without supported content")
            return
        reply_to = message.get("reply_to") if isinstance(message.get("reply_to"), dict) else {}
        parsed.events.append(
            InboundMessage(
                service=service,
                organization_address=page_id,
                external_id=external_id,
                contact_address=contact,
                provider_contact_id=contact,
                contact_name=None,
                timestamp=timestamp,
                content=content,
                direction="outgoing" if echo else "incoming",
                reply_to=_optional_id(reply_to.get("mid")),
                raw=raw,
            )
        )
    elif "postback" in item:
        postback = item.get("postback") if isinstance(item.get("postback"), dict) else {}
        sender = _required_id(sender, "sender.id", ADDRESS_LIMIT)
        timestamp = from_millis(item.get("timestamp"))
        external_id = _required_id(postback.get("mid") or f"postback.{sender}.{item.get('timestamp')}", "mid")
        text = _text_field(postback, "title", None) or _text_field(postback, "payload") or ""
        parsed.events.append(
            InboundMessage(
                service=service,
                organization_address=page_id,
                external_id=external_id,
                contact_address=sender,
                provider_contact_id=sender,
                contact_name=None,
                timestamp=timestamp,
                content={"kind": "text", "text": text},
                raw=raw,
            )
        )
    elif "reaction" in item:
        # Messenger / Instagram: {mid, action: react|unreact, reaction, emoji}; unreact removes it
        reaction = item.get("reaction") if isinstance(item.get("reaction"), dict) else {}
        target = _optional_id(reaction.get("mid"))
        if target is None:
            parsed.ignored.append("reaction without mid")
            return
        sender = _required_id(sender, "sender.id", ADDRESS_LIMIT)
        emoji = "" if reaction.get("action") == "unreact" else (_text_field(reaction, "emoji") or "")
        parsed.events.append(
            ReactionUpdate(
                service=service,
                organization_address=page_id,
                external_id="",
                message_external_id=target,
                contact_address=sender,
                emoji=emoji.strip()[:EMOJI_LIMIT],
                timestamp=from_millis(item.get("timestamp")),
                raw=raw,
            )
        )
    elif "delivery" in item or "read" in item:
        status = "delivered" if "delivery" in item else "read"
        sender = _required_id(sender, "sender.id", ADDRESS_LIMIT)
        detail = item.get("delivery") or item.get("read")
        detail = detail if isinstance(detail, dict) else {}
        listed = detail.get("mids") if isinstance(detail.get("mids"), list) else []
        mids = tuple(str(m) for m in listed or ([detail["mid"]] if detail.get("mid") else []))
        mids = tuple(m for m in mids if 0 < len(m) <= ID_LIMIT)
        watermark = (
            from_millis(detail["watermark"])
            if detail.get("watermark")
            else from_millis(item.get("timestamp"))
        )
        parsed.events.append(WatermarkUpdate(service, page_id, sender, status, watermark, mids, raw=raw))
    else:
        parsed.ignored.append("messaging event without message, postback, reaction, delivery or read")


def _attachment_content(message: dict[str, Any]) -> dict[str, Any] | None:
    text = _text_field(message, "text", None)
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
