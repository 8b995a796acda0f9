"""Builders for Meta's webhook deliveries (meta.md §3 and §5.2) and their signature.

WhatsApp: ``object: whatsapp_business_account``, ``entry[].changes[].value`` with ``metadata``,
``contacts``, ``messages`` (string seconds) and ``statuses``. Instagram/Messenger: ``object:
instagram|page``, ``entry[].messaging[]`` with millisecond timestamps.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from typing import Any

WABA_ID = "102290129340398"


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(payload: dict[str, Any]) -> bytes:
    # Meta sends compact JSON with escaped unicode; the signature covers exactly these bytes.
    return json.dumps(payload, separators=(",", ":")).encode()


def wamid() -> str:
    return "wamid.HBgL" + secrets.token_hex(16).upper()


def now_seconds(offset: int = 0) -> str:
    return str(int(time.time()) + offset)


def wa_text(sender: str, text: str, *, id: str | None = None, timestamp: str | None = None) -> dict[str, Any]:
    return {
        "from": sender,
        "id": id or wamid(),
        "timestamp": timestamp or now_seconds(),
        "type": "text",
        "text": {"body": text},
    }


def wa_media(
    sender: str,
    kind: str,
    *,
    media_id: str = "1003383421387256",
    mime_type: str = "image/jpeg",
    caption: str | None = None,
    filename: str | None = None,
    url: str | None = None,
    id: str | None = None,
) -> dict[str, Any]:
    media: dict[str, Any] = {"mime_type": mime_type, "sha256": "4654+8g=", "id": media_id}
    if caption is not None:
        media["caption"] = caption
    if filename is not None:
        media["filename"] = filename
    if url is not None:
        media["url"] = url
    return {"from": sender, "id": id or wamid(), "timestamp": now_seconds(), "type": kind, kind: media}


def wa_location(sender: str, latitude: float, longitude: float, name: str | None = None) -> dict[str, Any]:
    location: dict[str, Any] = {"latitude": latitude, "longitude": longitude}
    if name:
        location["name"] = name
    return {
        "from": sender,
        "id": wamid(),
        "timestamp": now_seconds(),
        "type": "location",
        "location": location,
    }


def wa_status(
    message_id: str,
    status: str,
    recipient: str,
    *,
    timestamp: str | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": message_id,
        "status": status,
        "timestamp": timestamp or now_seconds(),
        "recipient_id": recipient,
    }
    if status in ("sent", "delivered"):
        item["pricing"] = {"billable": True, "pricing_model": "PMP", "type": "regular", "category": "utility"}
    if error is not None:
        item["errors"] = [error]
    return item


def wa_change(
    phone_number_id: str,
    *,
    messages: list[dict[str, Any]] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    names: dict[str, str] | None = None,
    display_phone_number: str = "15550783881",
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": display_phone_number, "phone_number_id": phone_number_id},
    }
    if messages:
        senders = dict.fromkeys(m["from"] for m in messages)
        value["contacts"] = [
            {"profile": {"name": (names or {}).get(s, f"Contact {s[-4:]}")}, "wa_id": s} for s in senders
        ]
        value["messages"] = messages
    if statuses:
        value["statuses"] = statuses
    return {"field": "messages", "value": value}


def wa_delivery(*changes: dict[str, Any], entries: int = 1) -> dict[str, Any]:
    """One delivery; with ``entries`` > 1 the changes are spread over several entries."""
    groups: list[list[dict[str, Any]]] = [[] for _ in range(max(1, entries))]
    for position, change in enumerate(changes):
        groups[position % len(groups)].append(change)
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": WABA_ID, "changes": group} for group in groups if group],
    }


def messaging_delivery(kind: str, page_id: str, *items: dict[str, Any]) -> dict[str, Any]:
    """``kind`` is ``instagram`` or ``page`` (Messenger)."""
    return {
        "object": kind,
        "entry": [{"id": page_id, "time": int(time.time() * 1000), "messaging": list(items)}],
    }


def messaging_text(
    page_id: str, sender: str, text: str, *, mid: str | None = None, echo: bool = False
) -> dict[str, Any]:
    millis = int(time.time() * 1000)
    message: dict[str, Any] = {"mid": mid or "m_" + secrets.token_hex(12), "text": text}
    if echo:
        message["is_echo"] = True
    return {
        "sender": {"id": page_id if echo else sender},
        "recipient": {"id": sender if echo else page_id},
        "timestamp": millis,
        "message": message,
    }


def messaging_attachment(page_id: str, sender: str, kind: str, url: str) -> dict[str, Any]:
    return {
        "sender": {"id": sender},
        "recipient": {"id": page_id},
        "timestamp": int(time.time() * 1000),
        "message": {
            "mid": "m_" + secrets.token_hex(12),
            "attachments": [{"type": kind, "payload": {"url": url}}],
        },
    }


def messaging_read(page_id: str, sender: str, watermark_ms: int) -> dict[str, Any]:
    return {
        "sender": {"id": sender},
        "recipient": {"id": page_id},
        "timestamp": watermark_ms,
        "read": {"watermark": watermark_ms},
    }


def messaging_delivered(page_id: str, sender: str, mids: list[str], watermark_ms: int) -> dict[str, Any]:
    return {
        "sender": {"id": sender},
        "recipient": {"id": page_id},
        "timestamp": watermark_ms,
        "delivery": {"mids": mids, "watermark": watermark_ms},
    }
