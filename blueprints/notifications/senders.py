"""The three ways a notification goes out: e-mail (SMTP), WhatsApp (through the organization's number)
and a signed webhook. Each returns an :class:`Outcome`; none writes the delivery row (the caller does).

Settings (app config, defaults from the environment in ``blueprints/notifications/__init__.py``):
``SMTP_HOST`` (unset: e-mails are skipped, the product runs offline), ``SMTP_PORT`` (587),
``SMTP_USERNAME``/``SMTP_PASSWORD`` (login when set), ``SMTP_STARTTLS`` (true), ``SMTP_FROM``,
``SMTP_TIMEOUT_SECONDS`` (10); ``NOTIFICATIONS_WEBHOOK_TIMEOUT_SECONDS`` (10);
``NOTIFICATIONS_SIGNING_KEY`` (the key webhook secrets are derived from; ``SECRET_KEY`` when unset);
``NOTIFICATIONS_ALLOW_HTTP_LOOPBACK`` (tests only: plain http to 127.0.0.1 receivers).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import smtplib
import ssl
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import formataddr, make_msgid
from typing import Any

import httpx
from flask import current_app
from sqlalchemy import func, select

from blueprints.channels.models import OrganizationAddress
from blueprints.messaging.models import Conversation
from blueprints.messaging.sending import Content, send_message

# One signing scheme, URL check and pinned POST for every webhook the product sends.
from core import outbound
from core.db import db
from core.errors import ApiError

SIGNATURE_HEADER = "AgentDesk-Signature"
USER_AGENT = "AgentDesk-Notifications/1.0"
WHATSAPP_WINDOW = timedelta(hours=24)
WHATSAPP_MAX_CHARS = 4096
RESPONSE_EXCERPT = 300


@dataclass(frozen=True)
class Outcome:
    """``ok``: sent. Otherwise ``retry`` says whether a later attempt may succeed; ``skipped``: not sent
    by configuration (not an error of the target)."""

    ok: bool
    error: str | None = None
    retry: bool = False
    skipped: bool = False
    code: int | None = None


def _config(name: str, default: Any = None) -> Any:
    value = current_app.config.get(name)
    return default if value is None or value == "" else value


def _flag(name: str) -> bool:
    value = current_app.config.get(name)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


# ------------------------------------------------------------------------------------------------- text


TRIGGER_LABELS = {
    "end_of_call": "call ended",
    "transfer_to_human": "transferred to a human",
    "search_knowledge": "searched the knowledge",
    "send_product": "sent a product",
    "create_ticket": "created a ticket",
    "schedule_meeting": "scheduled a meeting",
}


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def _agent_name(envelope: dict[str, Any]) -> str:
    agent = envelope.get("agent") or {}
    return str(agent.get("name") or agent.get("id") or "AI agent")


def _label(envelope: dict[str, Any]) -> str:
    return TRIGGER_LABELS.get(envelope["trigger"], envelope["trigger"])


def subject(envelope: dict[str, Any]) -> str:
    who = envelope.get("contact_address")
    tail = f" ({who})" if who else ""
    organization = envelope.get("organization_name") or "Agent Desk"
    return f"[{organization}] {_agent_name(envelope)}: {_label(envelope)}{tail}"


def body_text(envelope: dict[str, Any], conversation_url: str | None) -> str:
    """The plain-text notification: what happened, where, and the tool's call as the agent made it."""
    agent = envelope.get("agent") or {}
    data = envelope.get("data") or {}
    lines = [
        f"{_agent_name(envelope)} {_label(envelope)}.",
        "",
        f"Organization: {envelope.get('organization_name') or envelope['organization_id']}",
        f"Agent: {agent.get('name') or ''} ({agent.get('id')})",
        f"Trigger: {envelope['trigger']}",
        f"When: {envelope['occurred_at']}",
    ]
    if envelope.get("contact_address"):
        lines.append(f"Contact: {envelope['contact_address']}")
    if envelope.get("conversation_id"):
        lines.append(f"Conversation: {envelope['conversation_id']}")
    if conversation_url:
        lines.append(f"Open in the desk: {conversation_url}")
    if "arguments" in data:
        lines += ["", "Arguments:", _pretty(data["arguments"])]
    if "result" in data:
        lines += ["", "Result:", _pretty(data["result"])]
    rest = {k: v for k, v in data.items() if k not in ("arguments", "result")}
    if rest:
        lines += ["", "Details:", _pretty(rest)]
    lines += ["", f"Notification {envelope['id']}"]
    return "\n".join(lines)


def whatsapp_text(envelope: dict[str, Any], conversation_url: str | None) -> str:
    """Shorter than the e-mail: WhatsApp shows it on a phone (and caps a text at 4096 characters)."""
    data = envelope.get("data") or {}
    lines = [f"*{_agent_name(envelope)}* {_label(envelope)}"]
    if envelope.get("contact_address"):
        lines.append(f"Contact: {envelope['contact_address']}")
    if data.get("arguments"):
        lines.append(json.dumps(data["arguments"], ensure_ascii=False, default=str))
    if conversation_url:
        lines.append(conversation_url)
    text = "\n".join(lines)
    return text if len(text) <= WHATSAPP_MAX_CHARS else text[: WHATSAPP_MAX_CHARS - 1] + "…"


def conversation_url(envelope: dict[str, Any]) -> str | None:
    """The desk's page of the conversation when ``DESK_BASE_URL`` says where the desk is served."""
    base = _config("DESK_BASE_URL")
    conversation_id = envelope.get("conversation_id")
    if not base or not conversation_id:
        return None
    return f"{str(base).rstrip('/')}/inbox/c/{conversation_id}"


# ------------------------------------------------------------------------------------------------ email


def send_email(target: str, envelope: dict[str, Any]) -> Outcome:
    host = _config("SMTP_HOST")
    if not host:
        return Outcome(False, "SMTP_HOST is not configured: e-mail notifications are off", skipped=True)
    port = int(_config("SMTP_PORT", 587))
    timeout = float(_config("SMTP_TIMEOUT_SECONDS", 10))
    sender = _config("SMTP_FROM") or f"notifications@{host}"
    message = EmailMessage()
    message["Subject"] = subject(envelope)
    message["From"] = formataddr(("Agent Desk", sender)) if "<" not in sender else sender
    message["To"] = target
    message["Message-ID"] = make_msgid(domain="agentdesk")
    message["X-AgentDesk-Notification"] = envelope["id"]
    message.set_content(body_text(envelope, conversation_url(envelope)))
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            if _flag("SMTP_STARTTLS"):
                smtp.starttls(context=ssl.create_default_context())
            username = _config("SMTP_USERNAME")
            if username:
                smtp.login(username, _config("SMTP_PASSWORD", ""))
            smtp.send_message(message)
    except smtplib.SMTPRecipientsRefused as refused:
        code, reply = next(iter(refused.recipients.values()))
        return Outcome(
            False, f"recipient refused: {code} {_reply(reply)}", retry=400 <= code < 500, code=code
        )
    except smtplib.SMTPResponseException as error:
        # 4xx: the server asks to come back later; 5xx: it will never accept this message
        text = f"smtp {error.smtp_code}: {_reply(error.smtp_error)}"
        return Outcome(False, text, retry=error.smtp_code < 500, code=error.smtp_code)
    except (OSError, smtplib.SMTPException) as error:  # connection refused, timeout, TLS failure
        return Outcome(False, f"smtp connection: {type(error).__name__}: {error}", retry=True)
    return Outcome(True, code=250)


def _reply(reply: bytes | str) -> str:
    return (reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply))[:200]


# --------------------------------------------------------------------------------------------- whatsapp


def send_whatsapp(
    organization_id: uuid.UUID, target: str, envelope: dict[str, Any], now: datetime
) -> Outcome:
    """Free text through the organization's WhatsApp number that has an open 24-hour window with
    ``target`` (WhatsApp allows business-initiated free text only within 24 h of the person's last
    message). Without one the delivery fails with the reason: the supervisor writes once to the
    business number, and later notifications go through."""
    addresses = {
        a.address: a
        for a in db.session.scalars(
            select(OrganizationAddress).where(
                OrganizationAddress.organization_id == organization_id,
                OrganizationAddress.service == "whatsapp",
            )
        )
        if a.can_send
    }
    if not addresses:
        return Outcome(False, "the organization has no connected WhatsApp number")
    windows = db.session.execute(
        select(Conversation.organization_address, func.max(Conversation.last_incoming_at))
        .where(
            Conversation.organization_id == organization_id,
            Conversation.service == "whatsapp",
            Conversation.contact_address == target,
            Conversation.organization_address.in_(list(addresses)),
        )
        .group_by(Conversation.organization_address)
    ).all()
    open_windows = sorted(
        ((last, address) for address, last in windows if last is not None and now - last < WHATSAPP_WINDOW),
        reverse=True,
    )
    if not open_windows:
        # the number people dial (its Meta id when the connection did not record it)
        numbers = ", ".join(
            sorted(str((a.extra or {}).get("phone_number") or a.address) for a in addresses.values())
        )
        return Outcome(
            False,
            f"no open 24 h WhatsApp window with {target}: they must first send a message to {numbers}",
        )
    address = open_windows[0][1]
    text = whatsapp_text(envelope, conversation_url(envelope))
    try:
        send_message(
            organization_id,
            organization_address=address,
            service="whatsapp",
            contact_address=target,
            content=Content(kind="text", text=text),
        )
    except ApiError as error:
        retry = error.status in (429, 502, 503)
        return Outcome(False, f"whatsapp via {address}: {error.status} {error.message}", retry=retry)
    return Outcome(True)


# ---------------------------------------------------------------------------------------------- webhook


def signing_secret(organization_id: uuid.UUID | str) -> str:
    """The organization's webhook secret, derived (HMAC-SHA256) from ``NOTIFICATIONS_SIGNING_KEY`` (or
    ``SECRET_KEY``) and the organization id: stable across restarts and processes without storing it.
    Changing that key changes every organization's secret."""
    key = str(_config("NOTIFICATIONS_SIGNING_KEY") or current_app.config["SECRET_KEY"])
    digest = hmac.new(key.encode(), f"agent-notifications:{organization_id}".encode(), hashlib.sha256)
    return "whsec_" + base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def _loopback_allowed() -> bool:
    # read as the agent configuration reads it when saved (blueprints/members/agent_config_rules.py)
    return outbound.switch_on(current_app.config.get("NOTIFICATIONS_ALLOW_HTTP_LOOPBACK"))


def post_webhook(organization_id: uuid.UUID, url: str, envelope: dict[str, Any], delivery_id: str) -> Outcome:
    """One signed POST: ``AgentDesk-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">``, over a
    connection pinned to the address checked (``core.outbound``). A 2xx within the timeout is success; a
    refused address fails at once; anything else may succeed later (retried on the delivery's schedule)."""
    body = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False, default=str).encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "AgentDesk-Delivery-Id": delivery_id,
        "AgentDesk-Notification-Id": envelope["id"],
        SIGNATURE_HEADER: outbound.signature_header([signing_secret(organization_id)], timestamp, body),
    }
    timeout = float(_config("NOTIFICATIONS_WEBHOOK_TIMEOUT_SECONDS", 10))
    try:
        answer = outbound.post(
            url,
            body,
            headers,
            allow_loopback=_loopback_allowed(),
            timeout=timeout,
            # enough bytes for RESPONSE_EXCERPT characters of UTF-8 (at most 4 bytes each)
            excerpt_bytes=RESPONSE_EXCERPT * 4,
        )
    except outbound.AddressRefused as refused:
        return Outcome(False, f"address refused: {refused}"[:300])
    except httpx.TimeoutException:
        return Outcome(False, f"timeout: no answer within {timeout:g} s", retry=True)
    except httpx.HTTPError as error:
        return Outcome(False, f"connection error: {type(error).__name__}: {error}"[:300], retry=True)
    if answer.ok:
        return Outcome(True, code=answer.status)
    text = answer.excerpt.decode("utf-8", errors="replace")[:RESPONSE_EXCERPT].replace("\x00", "\ufffd")
    return Outcome(False, f"http {answer.status}: {text}", retry=True, code=answer.status)
