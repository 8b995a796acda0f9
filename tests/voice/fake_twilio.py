"""A fake of Twilio's Programmable Voice REST API on 127.0.0.1, in a thread, for tests.

It speaks the wire format of ``../shared/research/voice.md``: ``POST /2010-04-01/Accounts/{AccountSid}/
Calls.json`` (form-encoded, HTTP Basic ``AccountSid:AuthToken``) answered with a Call resource (``sid``
``CA`` + 32 hex, ``status`` ``queued``), ``POST …/Calls/{Sid}.json`` with ``Status=completed`` (hang-up),
and Twilio's JSON error body ``{code, message, more_info, status}`` for a bad credential (20003), a
missing parameter (21201/21205) or a number the test marked as refused (13224). It records every request
it received and knows nothing of the application's code."""

from __future__ import annotations

import base64
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.datastructures import MultiDict
from werkzeug.serving import BaseWSGIServer, make_server


@dataclass
class Received:
    method: str
    path: str
    account_sid: str
    auth: tuple[str, str] | None
    form: MultiDict[str, str]
    content_type: str


def twilio_error(status: int, code: int, message: str) -> Response:
    response = jsonify(
        {
            "code": code,
            "message": message,
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status,
        }
    )
    response.status_code = status
    return response


@dataclass
class FakeTwilio:
    accounts: dict[str, str] = field(default_factory=dict)  # account sid -> auth token
    refused_numbers: set[str] = field(default_factory=set)
    received: list[Received] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    _server: BaseWSGIServer | None = None

    def start(self) -> FakeTwilio:
        app = Flask("fake_twilio")
        app.add_url_rule(
            "/2010-04-01/Accounts/<account_sid>/Calls.json", view_func=self._create, methods=["POST"]
        )
        app.add_url_rule(
            "/2010-04-01/Accounts/<account_sid>/Calls/<sid>.json", view_func=self._update, methods=["POST"]
        )
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

    def reset(self) -> None:
        self.accounts.clear()
        self.refused_numbers.clear()
        self.received.clear()
        self.calls.clear()

    def requests_to(self, suffix: str) -> list[Received]:
        return [r for r in self.received if r.path.endswith(suffix)]

    def _record(self, account_sid: str) -> Response | None:
        auth = None
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            auth = (user, password)
        self.received.append(
            Received(
                request.method,
                request.path,
                account_sid,
                auth,
                request.form.copy(),
                request.content_type or "",
            )
        )
        if auth is None or auth[0] != account_sid or self.accounts.get(account_sid) != auth[1]:
            return twilio_error(401, 20003, "Authenticate")
        return None

    def _create(self, account_sid: str) -> Response | tuple[Response, int]:
        if (refused := self._record(account_sid)) is not None:
            return refused
        form = request.form
        if not form.get("To"):
            return twilio_error(400, 21201, "No 'To' number is specified")
        if not form.get("From"):
            return twilio_error(400, 21213, "No 'From' number is specified")
        if not (form.get("Url") or form.get("Twiml")):
            return twilio_error(400, 21205, "Url parameter is required.")
        if form["To"] in self.refused_numbers:
            return twilio_error(400, 13224, "Invalid phone number")
        sid = "CA" + secrets.token_hex(16)
        call = {
            "sid": sid,
            "account_sid": account_sid,
            "to": form["To"],
            "from": form["From"],
            "status": "queued",
            "direction": "outbound-api",
            "start_time": None,
            "end_time": None,
            "duration": None,
            "uri": f"/2010-04-01/Accounts/{account_sid}/Calls/{sid}.json",
        }
        self.calls[sid] = call
        return jsonify(call), 201

    def _update(self, account_sid: str, sid: str) -> Response:
        if (refused := self._record(account_sid)) is not None:
            return refused
        call = self.calls.get(sid)
        if call is None:
            return twilio_error(404, 20404, f"The requested resource {request.path} was not found")
        if request.form.get("Status") in ("completed", "canceled"):
            call["status"] = request.form["Status"]
        return jsonify(call)
