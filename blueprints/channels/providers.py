"""One interface for every channel provider: ``meta`` (the real Graph API) and ``simulator`` (offline).

The messaging area builds an :class:`OutboundMessage`, asks ``registry.provider_for`` for the address's
provider and calls ``send`` / ``get_template`` / ``list_templates``. Providers raise
:class:`ProviderError` carrying Meta's code, title and details; the messaging area maps those to the
spec's errors and to ``status.error``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from blueprints.channels.models import OrganizationAddress
from blueprints.channels.provider_ids import IdForm
from core.environments import SANDBOX, current_environment

# Meta codes grouped by what the desk does about them (meta.md §1.7, §5.1).
OUTSIDE_WINDOW_CODES = {131047, 10}
RATE_LIMIT_CODES = {130429, 131056, 4, 80007, 131048}
AUTH_CODES = {190}
TEMPLATE_MISSING_CODES = {132001, 132015, 132016}
# Only these services have message templates (Instagram and Messenger have none).
TEMPLATE_SERVICES = ("whatsapp",)
APPROVED = "APPROVED"


@dataclass(frozen=True)
class MediaRef:
    uri: str  # a public https URL or a provider media id
    mime_type: str | None = None
    filename: str | None = None


@dataclass(frozen=True)
class OutboundMessage:
    service: str
    to: str  # WhatsApp: digits of the number (or the wa_id); Instagram/Messenger: the PSID / IGSID
    kind: str  # text, image, video, audio, document, location, template
    text: str | None = None
    media: MediaRef | None = None
    location: dict[str, Any] | None = None
    template_name: str | None = None
    template_language: str | None = None
    template_components: list[dict[str, Any]] = field(default_factory=list)
    reply_to: str | None = None
    reference: str | None = None  # our message id, so a provider that can tell finds the send again


@dataclass(frozen=True)
class SendResult:
    external_id: str
    provider_status: str | None = None  # Meta's messages[0].message_status, when given


@dataclass(frozen=True)
class PastSend:
    """What a provider knows of a send we may have made (:meth:`Provider.lookup_send`): ``seen`` True with
    its ``result``, False when it never received it (a re-send cannot duplicate), None when it cannot tell
    (Meta has no lookup by our id)."""

    seen: bool | None
    result: SendResult | None = None


@dataclass(frozen=True)
class Template:
    id: str
    name: str
    language: str
    status: str
    category: str | None
    parameter_format: str  # NAMED or POSITIONAL
    components: list[dict[str, Any]]

    def text_of(self, component_type: str) -> str | None:
        for component in self.components:
            if str(component.get("type", "")).upper() == component_type.upper():
                return component.get("text")
        return None

    def placeholders(self, component_type: str) -> list[str]:
        return re.findall(r"\{\{\s*([a-z0-9_]+)\s*\}\}", self.text_of(component_type) or "")

    def render_body(self, values: dict[str, str]) -> str | None:
        body = self.text_of("BODY")
        if body is None:
            return None
        return re.sub(r"\{\{\s*([a-z0-9_]+)\s*\}\}", lambda m: values.get(m.group(1), m.group(0)), body)

    @classmethod
    def from_graph(cls, data: dict[str, Any]) -> Template:
        return cls(
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
            language=str(data.get("language", "")),
            status=str(data.get("status", "")).upper(),
            category=data.get("category"),
            parameter_format=str(data.get("parameter_format") or "POSITIONAL").upper(),
            components=list(data.get("components") or []),
        )


class ProviderError(Exception):
    """A provider refused or failed a call. ``code`` is Meta's (an int) or ours (``timeout``...)."""

    def __init__(
        self,
        code: int | str,
        title: str,
        details: str | None = None,
        *,
        http_status: int | None = None,
        subcode: int | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(f"({code}) {title}")
        self.code = code
        self.title = title
        self.details = details
        self.http_status = http_status
        self.subcode = subcode
        self.retry_after = retry_after

    @property
    def outside_window(self) -> bool:
        return self.code in OUTSIDE_WINDOW_CODES

    @property
    def rate_limited(self) -> bool:
        return self.code in RATE_LIMIT_CODES

    @property
    def auth_failed(self) -> bool:
        return self.code in AUTH_CODES

    @property
    def template_missing(self) -> bool:
        return self.code in TEMPLATE_MISSING_CODES

    @property
    def unavailable(self) -> bool:
        """The provider did not answer or failed on its side (5xx, timeout, network)."""
        return self.code in ("timeout", "network") or (self.http_status or 0) >= 500

    def as_status_error(self, provider: str) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "title": self.title, "provider": provider}
        if self.details:
            error["details"] = self.details
        if self.subcode is not None:
            error["subcode"] = self.subcode
        return error


class Provider(Protocol):
    name: str
    # The form of this provider's object ids: every id a client sends is checked against it before it
    # becomes part of a provider URL (provider_ids.py).
    ids: IdForm

    def send(self, address: OrganizationAddress, message: OutboundMessage) -> SendResult: ...

    def get_template(self, address: OrganizationAddress, template_id: str) -> Template: ...

    def list_templates(self, address: OrganizationAddress) -> list[Template]:
        """The address's APPROVED templates (only those can be sent: spec, "Limits"), every page of them;
        an empty list for addresses whose service has no templates (Instagram, Messenger)."""
        ...

    def after_send(self, address: OrganizationAddress, message: OutboundMessage, result: SendResult) -> None:
        """Called once the sent message is committed (the simulator schedules its status updates)."""
        ...

    def lookup_send(self, address: OrganizationAddress, reference: str) -> PastSend:
        """Whether the provider received the send whose ``OutboundMessage.reference`` is ``reference``;
        used to reconcile a send whose process died between ``send.pending`` and the provider's answer."""
        ...


def uses_simulator(address: OrganizationAddress) -> bool:
    """The sandbox never reaches Meta, whatever the address says; elsewhere the address's provider
    decides, for every organization alike (the demo organization's number is a simulator address)."""
    return address.provider == "simulator" or current_environment() == SANDBOX
