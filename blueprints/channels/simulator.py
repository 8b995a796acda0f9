"""The ``simulator`` provider: works offline, behaves like Meta, and fails on purpose on magic numbers.

Like Stripe's test cards, a recipient whose number (or Instagram/Messenger id) ends in one of the
suffixes below triggers a documented behaviour (docs/channels.md lists them):

=========  ====================================================================================
5550101    refused outside the service window (WhatsApp 131047, Instagram/Messenger code 10)
5550102    accepted, then a ``failed`` status with 131026 "Message Undeliverable" (asynchronous)
5550103    refused with 130429 "Rate limit hit" (HTTP 429)
5550104    refused with 190 "Access token has expired"
5550105    accepted, advanced to ``read``, then the contact replies "Got it, thanks!"
=========  ====================================================================================

The simulator remembers the sends of its process by our message id (``lookup_send``), so the reconcile
sweep of interrupted sends can tell a send it received (kept, not repeated) from one it never saw
(re-sent). After a restart it has seen nothing, and a re-send reaches no one twice: nothing leaves the
machine.

Every other recipient is accepted and advanced ``sent`` -> ``delivered`` -> ``read`` over a few seconds
through the job queue (at once when jobs run inline). Statuses go through the same ingestion as Meta's
webhooks (handed over through ``inbound.inbound_events``), so the simulator exercises the real rules
(ordering, deduplication, realtime events).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any

from blueprints.channels.inbound import InboundMessage, StatusUpdate, hand_over, whatsapp_contact_address
from blueprints.channels.models import OrganizationAddress
from blueprints.channels.provider_ids import SIMULATOR_IDS
from blueprints.channels.providers import (
    APPROVED,
    TEMPLATE_SERVICES,
    OutboundMessage,
    PastSend,
    ProviderError,
    SendResult,
    Template,
)
from core import jobs
from core.db import utcnow

OUTSIDE_WINDOW = "5550101"
UNDELIVERABLE = "5550102"
RATE_LIMITED = "5550103"
TOKEN_EXPIRED = "5550104"
REPLIES = "5550105"
REPLY_TEXT = "Got it, thanks!"

# (delay in seconds, status) after a successful send.
STATUS_STEPS = ((1, "sent"), (2, "delivered"), (4, "read"))
REPLY_DELAY = 5

TEMPLATES: dict[str, dict[str, Any]] = {
    "sim_order_confirmation": {
        "id": "sim_order_confirmation",
        "name": "order_confirmation",
        "language": "en_US",
        "status": "APPROVED",
        "category": "UTILITY",
        "parameter_format": "NAMED",
        "components": [
            {"type": "BODY", "text": "Hi {{customer_name}}, your order {{order_number}} has been confirmed!"}
        ],
    },
    "sim_welcome": {
        "id": "sim_welcome",
        "name": "welcome",
        "language": "es_MX",
        "status": "APPROVED",
        "category": "MARKETING",
        "parameter_format": "NAMED",
        "components": [{"type": "BODY", "text": "Hola {{name}}, gracias por escribirnos."}],
    },
    "sim_paused_promo": {
        "id": "sim_paused_promo",
        "name": "paused_promo",
        "language": "en_US",
        "status": "PAUSED",
        "category": "MARKETING",
        "parameter_format": "NAMED",
        "components": [{"type": "BODY", "text": "Sale ends soon, {{name}}!"}],
    },
}


REMEMBERED_SENDS = 10_000
_sent: OrderedDict[str, SendResult] = OrderedDict()
_sent_lock = threading.Lock()


def _remember(reference: str | None, result: SendResult) -> None:
    if not reference:
        return
    with _sent_lock:
        _sent[reference] = result
        while len(_sent) > REMEMBERED_SENDS:
            _sent.popitem(last=False)


def _digits(value: str) -> str:
    return "".join(ch for ch in value if ch.isdigit())


class SimulatorProvider:
    name = "simulator"
    ids = SIMULATOR_IDS

    def send(self, address: OrganizationAddress, message: OutboundMessage) -> SendResult:
        to = _digits(message.to)
        if to.endswith(OUTSIDE_WINDOW) and message.kind != "template":
            if address.service == "whatsapp":
                raise ProviderError(
                    131047,
                    "Re-engagement message",
                    "Message failed to send because more than 24 hours have passed since the customer "
                    "last replied to this number.",
                    http_status=400,
                )
            raise ProviderError(10, "This message is sent outside of allowed window.", http_status=400)
        if to.endswith(RATE_LIMITED):
            raise ProviderError(
                130429,
                "Rate limit hit",
                "Message failed to send because there were too many messages sent from this phone number "
                "in a short period of time",
                http_status=429,
                retry_after=1,
            )
        if to.endswith(TOKEN_EXPIRED):
            raise ProviderError(190, "Access token has expired", http_status=401, subcode=463)
        if message.kind == "template":
            self._check_template(message)
        if address.service == "whatsapp":
            external_id = f"wamid.SIM{uuid.uuid4().hex.upper()}"
        else:
            external_id = f"m_sim{uuid.uuid4().hex}"
        result = SendResult(external_id, "accepted" if message.kind == "template" else None)
        _remember(message.reference, result)
        return result

    def lookup_send(self, address: OrganizationAddress, reference: str) -> PastSend:
        with _sent_lock:
            result = _sent.get(reference)
        return PastSend(seen=result is not None, result=result)

    def _check_template(self, message: OutboundMessage) -> None:
        found = next((t for t in TEMPLATES.values() if t["name"] == message.template_name), None)
        if found is None or found["status"] != "APPROVED" or found["language"] != message.template_language:
            raise ProviderError(
                132001,
                "Template does not exist",
                "The template does not exist in the specified language or the template has not been "
                "approved.",
                http_status=400,
            )
        template = Template.from_graph(found)
        expected = template.placeholders("BODY")
        given = [
            p.get("parameter_name")
            for c in message.template_components
            if str(c.get("type")).lower() == "body"
            for p in c.get("parameters") or []
        ]
        if sorted(expected) != sorted(n for n in given if n):
            raise ProviderError(
                132000,
                "Number of parameters does not match the expected number of params",
                f"body: number of localizable_params ({len(given)}) does not match the expected number "
                f"of params ({len(expected)})",
                http_status=400,
            )

    def get_template(self, address: OrganizationAddress, template_id: str) -> Template:
        data = TEMPLATES.get(template_id)
        if data is None:
            raise ProviderError(
                100,
                "Invalid parameter",
                f"Unsupported get request. Object with ID '{template_id}' does not exist",
                http_status=400,
            )
        return Template.from_graph(data)

    def list_templates(self, address: OrganizationAddress) -> list[Template]:
        """The simulator's APPROVED templates (``sim_paused_promo`` is not listed: it cannot be sent);
        none for Instagram and Messenger, which have no templates."""
        if address.service not in TEMPLATE_SERVICES:
            return []
        return [Template.from_graph(data) for data in TEMPLATES.values() if data["status"] == APPROVED]

    def after_send(self, address: OrganizationAddress, message: OutboundMessage, result: SendResult) -> None:
        to = _digits(message.to)
        key = (address.service, address.address, result.external_id)
        if to.endswith(UNDELIVERABLE):
            error = {
                "code": 131026,
                "title": "Message Undeliverable",
                "details": "Message failed to send because the recipient is not a WhatsApp user or has not "
                "accepted the terms of service.",
                "provider": "simulator",
            }
            simulated_status.schedule(1, *key, "failed", error)
            return
        for delay, status in STATUS_STEPS:
            simulated_status.schedule(delay, *key, status, None)
        if to.endswith(REPLIES):
            simulated_reply.schedule(REPLY_DELAY, address.service, address.address, message.to, REPLY_TEXT)


@jobs.job(retries=2, retry_delay=2)
def simulated_status(
    service: str, organization_address: str, external_id: str, status: str, error: dict[str, Any] | None
) -> None:
    hand_over([StatusUpdate(service, organization_address, external_id, status, utcnow(), error)])


@jobs.job(retries=2, retry_delay=2)
def simulated_reply(service: str, organization_address: str, contact: str, text: str) -> None:
    simulate_inbound(service, organization_address, contact, text)


def simulate_inbound(
    service: str, organization_address: str, contact: str, text: str, name: str | None = None
) -> None:
    """An inbound text from ``contact``, stored exactly as a webhook delivery would be."""
    contact_address = whatsapp_contact_address(contact) if service == "whatsapp" else contact
    provider_id = _digits(contact) if service == "whatsapp" else contact
    prefix = "wamid.SIMIN" if service == "whatsapp" else "m_simin"
    hand_over(
        [
            InboundMessage(
                service=service,
                organization_address=organization_address,
                external_id=f"{prefix}{uuid.uuid4().hex.upper()}",
                contact_address=contact_address,
                provider_contact_id=provider_id,
                contact_name=name,
                timestamp=utcnow(),
                content={"kind": "text", "text": text},
            )
        ]
    )
