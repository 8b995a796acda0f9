"""The ``meta`` provider: WhatsApp Cloud API and the Instagram / Messenger Send API over httpx.

Wire formats follow ``../shared/research/meta.md`` (§1 WhatsApp sends, §2 templates, §5.1 Send API).
Retries only where they cannot duplicate a message: a send is retried when the connection was never
made (the request did not leave), never after it may have reached Meta; template reads are retried on
timeouts and 5xx as well, because a GET is safe to repeat.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any
from urllib.parse import quote

import httpx
from flask import current_app

from blueprints.channels.crypto import decrypt_token
from blueprints.channels.models import OrganizationAddress
from blueprints.channels.provider_ids import META_IDS
from blueprints.channels.providers import (
    APPROVED,
    TEMPLATE_SERVICES,
    OutboundMessage,
    PastSend,
    ProviderError,
    SendResult,
    Template,
)

log = logging.getLogger(__name__)

CONNECT_RETRIES = 2
RETRY_PAUSES = (0.2, 0.6)
_TITLE = re.compile(r"^\(#(\d+)\)\s*")
# Instagram / Messenger attachment types for our content kinds.
_ATTACHMENT_TYPES = {"image": "image", "video": "video", "audio": "audio", "document": "file"}
# Template lists: the fields the desk reads, the page size asked for, a bound on the pages followed (a
# WABA holds at most a few hundred templates; the bound stops a provider that pages forever), and the
# seconds a list read may take (an agent waits for it).
TEMPLATE_FIELDS = "id,name,language,status,category,parameter_format,components"
TEMPLATE_PAGE_SIZE = 100
MAX_TEMPLATE_PAGES = 20
LIST_TIMEOUT = 5.0
# What httpx raises besides its HTTPError family: a URL it cannot build (a control character, a huge
# value), a cookie clash, a stream read twice. Each is the provider call failing, never a 500.
CLIENT_ERRORS: tuple[type[Exception], ...] = (
    httpx.HTTPError,
    httpx.InvalidURL,
    httpx.CookieConflict,
    httpx.StreamError,
)


_shared: list[httpx.Client] = []


def _client() -> httpx.Client:
    """One pooled client per process (thread-safe): keep-alive connections and one TLS context, instead of
    building both for every send."""
    if not _shared:
        _shared.append(httpx.Client(limits=httpx.Limits(max_connections=50, max_keepalive_connections=10)))
    return _shared[0]


def parse_graph_error(response: httpx.Response) -> ProviderError:
    """Meta's ``{"error": {message, type, code, error_data{details}, error_subcode, fbtrace_id}}``."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return ProviderError(
            "http_error", f"Provider answered HTTP {response.status_code}", http_status=response.status_code
        )
    message = str(error.get("message") or "")
    title = _TITLE.sub("", message) or "Provider error"
    details = (
        (error.get("error_data") or {}).get("details") if isinstance(error.get("error_data"), dict) else None
    )
    code = error.get("code")
    retry_after = response.headers.get("Retry-After")
    return ProviderError(
        int(code) if isinstance(code, int | str) and str(code).isdigit() else "unknown",
        title,
        details or error.get("error_user_msg"),
        http_status=response.status_code,
        subcode=error.get("error_subcode"),
        retry_after=int(retry_after) if retry_after and retry_after.isdigit() else None,
    )


def whatsapp_body(message: OutboundMessage) -> dict[str, Any]:
    body: dict[str, Any] = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": message.to}
    if message.reply_to:
        body["context"] = {"message_id": message.reply_to}
    kind = message.kind
    if kind == "text":
        body |= {"type": "text", "text": {"preview_url": False, "body": message.text or ""}}
    elif kind in ("image", "video", "audio", "document"):
        assert message.media is not None
        media: dict[str, Any] = (
            {"link": message.media.uri} if message.media.uri.startswith("http") else {"id": message.media.uri}
        )
        if message.text and kind != "audio":  # Meta refuses captions on audio (meta.md §1.3)
            media["caption"] = message.text
        if kind == "document" and message.media.filename:
            media["filename"] = message.media.filename
        body |= {"type": kind, kind: media}
    elif kind == "location":
        body |= {"type": "location", "location": dict(message.location or {})}
    elif kind == "template":
        template: dict[str, Any] = {
            "name": message.template_name,
            "language": {"code": message.template_language},
        }
        if message.template_components:
            template["components"] = message.template_components
        body |= {"type": "template", "template": template}
    else:  # validated upstream; a programming error if reached
        raise ValueError(f"unsupported kind {kind!r}")
    return body


def send_api_body(message: OutboundMessage) -> dict[str, Any]:
    """Instagram / Messenger Send API: replies inside the window are ``messaging_type: RESPONSE``."""
    if message.kind == "text":
        content: dict[str, Any] = {"text": message.text or ""}
    else:
        assert message.media is not None
        content = {
            "attachment": {
                "type": _ATTACHMENT_TYPES[message.kind],
                "payload": {"url": message.media.uri, "is_reusable": True},
            }
        }
    return {"recipient": {"id": message.to}, "messaging_type": "RESPONSE", "message": content}


class MetaProvider:
    name = "meta"
    ids = META_IDS

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0))

    @classmethod
    def from_config(cls) -> MetaProvider:
        return cls(current_app.config["META_GRAPH_URL"], float(current_app.config["META_HTTP_TIMEOUT"]))

    def _token(self, address: OrganizationAddress) -> str:
        if not address.access_token_encrypted:
            raise ProviderError("no_token", "Organization address does not have an access token")
        return decrypt_token(address.access_token_encrypted)

    def url(self, *segments: str) -> str:
        """The versioned Graph URL of ``segments``, each quoted whole: a segment can never add a path
        level, leave the version prefix (``..``) or start a query string, whatever it holds."""
        return "/".join([self.base_url, *(quote(segment, safe="") for segment in segments)])

    def _request(
        self,
        method: str,
        segments: tuple[str, ...],
        token: str,
        *,
        json: Any = None,
        params: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        safe: bool,
    ) -> dict[str, Any]:
        url = self.url(*segments)
        headers = {"Authorization": f"Bearer {token}"}
        attempts = 1 + CONNECT_RETRIES
        for attempt in range(attempts):
            try:
                response = _client().request(
                    method, url, json=json, params=params, headers=headers, timeout=timeout or self.timeout
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # The request never reached Meta: repeating it cannot send a message twice.
                if attempt + 1 < attempts:
                    time.sleep(RETRY_PAUSES[min(attempt, len(RETRY_PAUSES) - 1)])
                    continue
                raise ProviderError("network", "Could not reach the provider", str(exc)) from exc
            except httpx.TimeoutException as exc:
                # A send may have been accepted: never repeat it. A read may be repeated.
                if safe and attempt + 1 < attempts:
                    continue
                raise ProviderError("timeout", "The provider did not answer in time", str(exc)) from exc
            except CLIENT_ERRORS as exc:
                raise ProviderError("network", "Could not reach the provider", str(exc)) from exc
            if response.status_code >= 500 and safe and attempt + 1 < attempts:
                time.sleep(RETRY_PAUSES[min(attempt, len(RETRY_PAUSES) - 1)])
                continue
            if response.status_code >= 400:
                raise parse_graph_error(response)
            try:
                data = response.json()
            except ValueError as exc:
                raise ProviderError("bad_response", "The provider answered with invalid JSON") from exc
            if isinstance(data, dict) and "error" in data:
                raise parse_graph_error(response)
            return data if isinstance(data, dict) else {}
        raise AssertionError("unreachable")

    def send(self, address: OrganizationAddress, message: OutboundMessage) -> SendResult:
        token = self._token(address)
        if address.service == "whatsapp":
            data = self._request(
                "POST", (address.address, "messages"), token, json=whatsapp_body(message), safe=False
            )
            sent = (data.get("messages") or [{}])[0]
            if not sent.get("id"):
                raise ProviderError("bad_response", "The provider did not return a message id")
            return SendResult(str(sent["id"]), sent.get("message_status"))
        data = self._request(
            "POST", (address.address, "messages"), token, json=send_api_body(message), safe=False
        )
        if not data.get("message_id"):
            raise ProviderError("bad_response", "The provider did not return a message id")
        return SendResult(str(data["message_id"]))

    def get_template(self, address: OrganizationAddress, template_id: str) -> Template:
        token = self._token(address)
        data = self._request("GET", (template_id,), token, safe=True)
        return Template.from_graph(data)

    def list_templates(self, address: OrganizationAddress) -> list[Template]:
        """``GET /<waba id>/message_templates?fields=…&status=APPROVED&limit=…``, page after page.

        Graph pages carry ``paging.cursors.after`` and, while more follow, ``paging.next``. The next page
        is asked for here with the ``after`` cursor rather than by calling ``paging.next`` as given: that
        URL would receive our token wherever it pointed. Reads are safe to repeat (``safe=True``) but get
        a shorter timeout than sends: the desk waits for this list while an agent looks at the composer.
        """
        if address.service not in TEMPLATE_SERVICES:
            return []
        waba_id = str((address.extra or {}).get("waba_id") or "").strip()
        if not waba_id:
            raise ProviderError(
                "no_waba_id",
                "The WhatsApp Business Account id of this number is not known",
                "Connect the number again with --waba-id to list its templates.",
            )
        token = self._token(address)
        timeout = httpx.Timeout(min(self.timeout.read or LIST_TIMEOUT, LIST_TIMEOUT), connect=LIST_TIMEOUT)
        params = {"fields": TEMPLATE_FIELDS, "status": APPROVED, "limit": str(TEMPLATE_PAGE_SIZE)}
        found: list[Template] = []
        seen_cursors: set[str] = set()
        for _page in range(MAX_TEMPLATE_PAGES):
            data = self._request(
                "GET", (waba_id, "message_templates"), token, params=params, timeout=timeout, safe=True
            )
            for item in data.get("data") or []:
                if isinstance(item, dict):
                    template = Template.from_graph(item)
                    # the filter is asked of Meta and checked again: only APPROVED templates can be sent
                    if template.status == APPROVED and template.id:
                        found.append(template)
            paging = data.get("paging") if isinstance(data.get("paging"), dict) else {}
            cursors = paging.get("cursors") if isinstance(paging.get("cursors"), dict) else {}
            after = cursors.get("after")
            if not paging.get("next") or not isinstance(after, str) or not after or after in seen_cursors:
                break
            seen_cursors.add(after)
            params = {**params, "after": after}
        else:
            log.warning("template list of %s cut at %d pages", waba_id, MAX_TEMPLATE_PAGES)
        return found

    def after_send(self, address: OrganizationAddress, message: OutboundMessage, result: SendResult) -> None:
        return None  # statuses arrive by webhook

    def lookup_send(self, address: OrganizationAddress, reference: str) -> PastSend:
        # The Graph API cannot find a message by anything of ours: the outcome of an interrupted send is
        # unknown, and re-sending could reach the person twice.
        return PastSend(seen=None)
