"""A webhook receiver on a free loopback port (werkzeug's threaded server) that records every request and
verifies its ``t=…,v1=…`` signature with a given secret; answers can be queued per path."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response


def verify_signature(payload: bytes, header: str, secret: str, tolerance: int = 300) -> bool:
    """What a receiver does: one ``v1`` is HMAC-SHA256 of ``"{t}.{payload}"`` and ``t`` is recent."""
    pairs = [part.split("=", 1) for part in header.split(",") if "=" in part]
    timestamps = [value for key, value in pairs if key.strip() == "t"]
    signatures = [value for key, value in pairs if key.strip() == "v1"]
    if len(timestamps) != 1 or not signatures or not timestamps[0].isdigit():
        return False
    if abs(time.time() - int(timestamps[0])) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{timestamps[0]}.".encode() + payload, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, s) for s in signatures)


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    signature_header: str = "AgentDesk-Signature"
    secret: str = ""
    answers: dict[str, list[int]] = field(default_factory=dict)  # statuses to answer next, per path
    received: list[ReceivedRequest] = field(default_factory=list)
    _server: BaseWSGIServer | None = None

    def url(self, path: str) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}{path}"

    def at(self, path: str) -> list[ReceivedRequest]:
        return [r for r in self.received if r.path == path]

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        body = request.get_data()
        header = request.headers.get(self.signature_header, "")
        verified = bool(self.secret) and verify_signature(body, header, self.secret)
        self.received.append(ReceivedRequest(request.path, dict(request.headers), body, verified))
        queued = self.answers.get(request.path)
        status = queued.pop(0) if queued else 200
        return Response("ok" if status < 300 else "receiver broke", status=status)(environ, start_response)


@contextmanager
def webhook_receiver(signature_header: str = "AgentDesk-Signature") -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver(signature_header=signature_header)
    receiver._server = make_server("127.0.0.1", 0, receiver._wsgi, threaded=True)
    thread = threading.Thread(target=receiver._server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver._server.shutdown()
