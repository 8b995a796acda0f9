"""A fake of Meta's Graph API for tests: a real HTTP server on 127.0.0.1, in a thread.

It speaks the wire formats of ``../shared/research/meta.md``: the WhatsApp Cloud API send endpoint
(``POST /<version>/<phone_number_id>/messages``) with its validation and error bodies, the Instagram /
Messenger Send API (``{recipient, message}`` -> ``{recipient_id, message_id}``), and template reads
(``GET /<version>/<template_id>``) and template lists of a WhatsApp Business Account
(``GET /<version>/<waba_id>/message_templates`` with ``fields``, ``status``, ``limit`` and cursor
paging: ``{data, paging: {cursors: {before, after}, next}}``, ``next`` only while more pages follow).
Tests steer it: which tokens are valid or expired, which recipients are outside the window, rate limited
or undeliverable, which templates exist (and in which WABA); and read back every request it received.
It knows nothing of the application's code.
"""

from __future__ import annotations

import base64
import re
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from flask import Flask, Response, jsonify, request
from werkzeug.serving import BaseWSGIServer, make_server

VERSION = "v23.0"
WA_TYPES = ("text", "image", "video", "audio", "document", "location", "template", "sticker")
MEDIA_TYPES = ("image", "video", "audio", "document", "sticker")
PLACEHOLDER = re.compile(r"\{\{\s*([a-z0-9_]+)\s*\}\}")
WABA_ID = "102290129340398"  # the WhatsApp Business Account of the fixtures' number (tests/fakes/fixtures.py)
# Keys of a stored template that steer the fake and are not part of Meta's template object.
INTERNAL_KEYS = ("status_at_send", "waba_id")
DEFAULT_PAGE_SIZE = 25  # Graph's page size when ``limit`` is not given
MAX_PAGE_SIZE = 1000


def graph_error(
    http_status: int,
    code: int,
    title: str,
    details: str | None = None,
    *,
    subcode: int | None = None,
    message: str | None = None,
    error_type: str = "OAuthException",
) -> Response:
    error: dict[str, Any] = {
        "message": message or f"(#{code}) {title}",
        "type": error_type,
        "code": code,
        "fbtrace_id": "A" + secrets.token_urlsafe(16),
    }
    if details is not None:
        error["error_data"] = {"messaging_product": "whatsapp", "details": details}
    if subcode is not None:
        error["error_subcode"] = subcode
    response = jsonify({"error": error})
    response.status_code = http_status
    return response


def _public(template: dict[str, Any], fields: list[str] | None = None) -> dict[str, Any]:
    """The template as Meta shows it: without the fake's own keys, only ``fields`` (and ``id``) if given."""
    shown = {key: value for key, value in template.items() if key not in INTERNAL_KEYS}
    if fields:
        shown = {key: value for key, value in shown.items() if key in fields or key == "id"}
    return shown


def _cursor(position: int) -> str:
    # Graph's cursors are opaque base64 strings; this one encodes a position in the list.
    return base64.urlsafe_b64encode(f"pos:{position}".encode()).decode()


def _cursor_position(cursor: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return int(text[4:]) if text.startswith("pos:") and text[4:].isdigit() else None


def new_wamid() -> str:
    return "wamid." + base64.b64encode(b"HBgL" + secrets.token_bytes(24)).decode()


@dataclass
class Received:
    method: str
    path: str
    object_id: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    query: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeMetaGraph:
    tokens: set[str] = field(default_factory=set)
    expired_tokens: set[str] = field(default_factory=set)
    outside_window: set[str] = field(default_factory=set)  # recipients whose window Meta sees closed
    rate_limited: set[str] = field(default_factory=set)
    undeliverable: set[str] = field(default_factory=set)
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    wabas: set[str] = field(default_factory=set)  # WABAs known without templates (their list is empty)
    received: list[Received] = field(default_factory=list)
    server_errors: int = 0  # answer the next N requests with HTTP 500
    _server: BaseWSGIServer | None = None

    # ---- control ----
    def start(self) -> FakeMetaGraph:
        app = Flask("fake_meta_graph")
        app.add_url_rule("/<version>/<object_id>/messages", "send", self._send, methods=["POST"])
        app.add_url_rule("/<version>/<object_id>", "read", self._read, methods=["GET"])
        app.add_url_rule(
            "/<version>/<object_id>/message_templates", "templates", self._list_templates, methods=["GET"]
        )
        # Anything else (another depth, another method) is recorded and answered as Graph does.
        app.add_url_rule(
            "/", "stray_root", self._stray, defaults={"rest": ""}, methods=["GET", "POST", "DELETE"]
        )
        app.add_url_rule("/<path:rest>", "stray", self._stray, methods=["GET", "POST", "DELETE"])
        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def graph_url(self) -> str:
        return f"{self.base_url}/{VERSION}"

    def reset(self) -> None:
        for collection in (
            self.tokens,
            self.expired_tokens,
            self.outside_window,
            self.rate_limited,
            self.undeliverable,
            self.templates,
            self.wabas,
        ):
            collection.clear()
        self.received.clear()
        self.server_errors = 0

    def add_template(self, **template: Any) -> dict[str, Any]:
        """A template of the WABA ``waba_id`` (default the fixtures' :data:`WABA_ID`)."""
        template.setdefault("id", str(800000000000000 + len(self.templates) + 1))
        template.setdefault("waba_id", WABA_ID)
        template.setdefault("status", "APPROVED")
        template.setdefault("category", "UTILITY")
        template.setdefault("language", "en_US")
        template.setdefault("parameter_format", "NAMED")
        self.templates[str(template["id"])] = template
        return template

    def sends(self) -> list[Received]:
        return [r for r in self.received if r.method == "POST"]

    def outside_version(self) -> list[Received]:
        """Every request whose path left the versioned prefix ``/<VERSION>/`` (``/_ctl/stats`` reached
        through ``../``, say): the application must never send one, whatever a client gave it."""
        return [r for r in self.received if not r.path.startswith(f"/{VERSION}/")]

    def template_lists(self) -> list[Received]:
        """Every ``GET /<waba_id>/message_templates`` received (one per page)."""
        return [r for r in self.received if r.path.endswith("/message_templates")]

    # ---- HTTP ----
    def _record(self, object_id: str) -> Received:
        body = request.get_json(silent=True) if request.method == "POST" else None
        received = Received(
            request.method, request.path, object_id, dict(request.headers), body, dict(request.args)
        )
        self.received.append(received)
        return received

    def _auth(self) -> Response | None:
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
        if token in self.expired_tokens:
            return graph_error(
                401,
                190,
                "Access token has expired",
                subcode=463,
                message="Error validating access token: Session has expired on Saturday, 29-Jun-24 "
                "09:00:00 PDT. The current time is Monday, 01-Jul-24 11:06:30 PDT.",
            )
        if token not in self.tokens:
            return graph_error(401, 190, "Invalid OAuth access token", message="Invalid OAuth access token.")
        return None

    def _stray(self, rest: str) -> Response:
        self._record(rest)
        return graph_error(
            400,
            2500,
            "Unknown path components",
            error_type="OAuthException",
            message=f"Unknown path components: /{rest}",
        )

    def _read(self, version: str, object_id: str) -> Response:
        self._record(object_id)
        if self.server_errors:
            self.server_errors -= 1
            return graph_error(500, 1, "An unknown error occurred", error_type="GraphMethodException")
        if (failure := self._auth()) is not None:
            return failure
        template = self.templates.get(object_id)
        if template is None:
            return graph_error(
                400,
                100,
                "Unsupported get request",
                subcode=33,
                error_type="GraphMethodException",
                message=f"Unsupported get request. Object with ID '{object_id}' does not exist, cannot be "
                "loaded due to missing permissions, or does not support this operation.",
            )
        return jsonify(_public(template))

    def _list_templates(self, version: str, object_id: str) -> Response:
        """A WABA's templates as Graph pages them: ``status`` and ``name`` filter, ``fields`` chooses the
        keys (``id`` always comes), ``limit`` sizes the page, ``after`` is the opaque cursor of the last
        template of the previous page; ``paging.next`` is there only while more pages follow."""
        self._record(object_id)
        if self.server_errors:
            self.server_errors -= 1
            return graph_error(500, 1, "An unknown error occurred", error_type="GraphMethodException")
        if (failure := self._auth()) is not None:
            return failure
        owned = [t for t in self.templates.values() if t.get("waba_id") == object_id]
        if not owned and object_id not in self.wabas:
            return graph_error(
                400,
                100,
                "Unsupported get request",
                subcode=33,
                error_type="GraphMethodException",
                message=f"Unsupported get request. Object with ID '{object_id}' does not exist, cannot be "
                "loaded due to missing permissions, or does not support this operation.",
            )
        limit_text = request.args.get("limit", str(DEFAULT_PAGE_SIZE))
        if not limit_text.isdigit() or not 0 < int(limit_text) <= MAX_PAGE_SIZE:
            return graph_error(400, 100, "Invalid parameter", "Param limit must be a positive number")
        status = request.args.get("status")
        if status:
            wanted = {s.strip().upper() for s in status.split(",")}
            owned = [t for t in owned if t["status"] in wanted]
        if request.args.get("name"):
            owned = [t for t in owned if request.args["name"] in t["name"]]
        start = 0
        if "after" in request.args:
            start = _cursor_position(request.args["after"])
            if start is None:
                return graph_error(400, 100, "Invalid parameter", "Invalid cursor")
            start += 1
        page = owned[start : start + int(limit_text)]
        fields = [f.strip() for f in request.args.get("fields", "").split(",") if f.strip()]
        data = [_public(t, fields) for t in page]
        if not page:
            return jsonify({"data": []})
        last = start + len(page) - 1
        paging: dict[str, Any] = {"cursors": {"before": _cursor(start), "after": _cursor(last)}}
        if last + 1 < len(owned):
            query = {key: value for key, value in request.args.items() if key not in ("after", "before")}
            paging["next"] = f"{request.base_url}?{urlencode({**query, 'after': _cursor(last)})}"
        return jsonify({"data": data, "paging": paging})

    def _send(self, version: str, object_id: str) -> Response:
        received = self._record(object_id)
        if self.server_errors:
            self.server_errors -= 1
            return graph_error(500, 131000, "Something went wrong")
        if (failure := self._auth()) is not None:
            return failure
        body = received.body
        if not isinstance(body, dict):
            return graph_error(400, 100, "Invalid parameter", "The request body must be JSON")
        if body.get("messaging_product") == "whatsapp":
            return self._whatsapp(body)
        return self._send_api(body)

    def _whatsapp(self, body: dict[str, Any]) -> Response:
        to = str(body.get("to", ""))
        kind = body.get("type", "text")
        if not to.lstrip("+").isdigit():
            return graph_error(400, 100, "Invalid parameter", "Recipient phone number is not valid")
        if kind not in WA_TYPES or not isinstance(body.get(kind), dict):
            return graph_error(400, 100, "Invalid parameter", f"Param {kind} is required")
        payload = body[kind]
        if to in self.rate_limited:
            return graph_error(
                429,
                130429,
                "Rate limit hit",
                "Message failed to send because there were too many messages sent from this phone number in "
                "a short period of time",
                subcode=2494055,
            )
        if kind != "template" and to in self.outside_window:
            return graph_error(
                400,
                131047,
                "Re-engagement message",
                "Message failed to send because more than 24 hours have passed since the customer last "
                "replied to this number.",
            )
        if to in self.undeliverable:
            return graph_error(400, 131026, "Message Undeliverable", "Message Undeliverable.")
        if kind == "text":
            text = payload.get("body")
            if not isinstance(text, str) or not text or len(text) > 4096:
                return graph_error(
                    400, 100, "Invalid parameter", "Param text['body'] must be 1-4096 characters"
                )
        elif kind in MEDIA_TYPES:
            if ("id" in payload) == ("link" in payload):
                return graph_error(400, 100, "Invalid parameter", "Please use either id or link, not both")
            if "caption" in payload and kind in ("audio", "sticker"):
                return graph_error(400, 100, "Invalid parameter", f"Param {kind}['caption'] is not allowed")
            if "filename" in payload and kind != "document":
                return graph_error(400, 100, "Invalid parameter", f"Param {kind}['filename'] is not allowed")
        elif kind == "location":
            if "latitude" not in payload or "longitude" not in payload:
                return graph_error(400, 100, "Invalid parameter", "latitude and longitude are required")
        elif kind == "template" and (failure := self._check_template(payload)) is not None:
            return failure
        sent: dict[str, Any] = {"id": new_wamid()}
        if kind == "template":
            sent["message_status"] = "accepted"
        return jsonify(
            {"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}], "messages": [sent]}
        )

    def _check_template(self, payload: dict[str, Any]) -> Response | None:
        name = payload.get("name")
        language = (payload.get("language") or {}).get("code")
        template = next(
            (t for t in self.templates.values() if t["name"] == name and t["language"] == language), None
        )
        # ``status_at_send`` lets a test change a template between its lookup and the send.
        status = template.get("status_at_send", template["status"]) if template else None
        if template is None or status not in ("APPROVED", "PAUSED"):
            return graph_error(
                404,
                132001,
                "Template does not exist",
                "The template does not exist in the specified language or the template has not been "
                "approved.",
            )
        if status == "PAUSED":
            return graph_error(400, 132015, "Template is paused", "Template is paused due to low quality")
        body_text = next(
            (c.get("text", "") for c in template.get("components", []) if c.get("type") == "BODY"), ""
        )
        expected = PLACEHOLDER.findall(body_text)
        parameters = [
            p
            for c in payload.get("components") or []
            if c.get("type") == "body"
            for p in c.get("parameters") or []
        ]
        if template.get("parameter_format") == "NAMED" and any(
            p.get("type") == "text" and not p.get("parameter_name") for p in parameters
        ):
            return graph_error(400, 100, "Invalid parameter", "Parameter name is missing or empty")
        if len(parameters) != len(expected):
            return graph_error(
                400,
                132000,
                "Number of parameters does not match the expected number of params",
                f"body: number of localizable_params ({len(parameters)}) does not match the expected number "
                f"of params ({len(expected)})",
            )
        return None

    def _send_api(self, body: dict[str, Any]) -> Response:
        recipient = str((body.get("recipient") or {}).get("id", ""))
        message = body.get("message") or {}
        if not recipient or not (message.get("text") or message.get("attachment")):
            return graph_error(400, 100, "Invalid parameter", "recipient.id and message are required")
        if "text" in message and len(str(message["text"]).encode()) > 2000:
            return graph_error(400, 100, "Invalid parameter", "Message text is too long")
        if recipient in self.outside_window and body.get("tag") != "HUMAN_AGENT":
            return graph_error(
                400,
                10,
                "This message is sent outside of allowed window.",
                message="(#10) This message is sent outside of allowed window. Learn more about the new "
                "policy here: https://developers.facebook.com/docs/messenger-platform/policy-overview",
                subcode=2018278,
            )
        if recipient in self.rate_limited:
            return graph_error(429, 4, "Application request limit reached")
        return jsonify({"recipient_id": recipient, "message_id": "m_" + secrets.token_urlsafe(24)})
