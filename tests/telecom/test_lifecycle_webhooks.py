"""Lifecycle webhooks and events: endpoints and their secret, signed deliveries to a real receiver on
loopback (every signature verified with the endpoint's secret), retries on schedule with a controllable
clock, auto-disable, manual retry, secret roll, the events API and its 30 days, and the whole story of a
line received by a partner."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from blueprints.telecom.models_webhooks import TelecomEvent, WebhookEndpoint
from blueprints.telecom.services import events as event_store
from blueprints.telecom.services import portings, webhooks
from core.db import db, utcnow
from core.environments import environment_app, in_environment
from tests.conftest import Org
from tests.telecom.conftest import CURP, Partner

TIMEOUT = 0.5


# The receiver's side: what docs/telecom.md shows a partner --------------------------------------------


def verify_signature(
    payload: bytes, header: str, secret: str, tolerance: int = 300, now: float | None = None
) -> bool:
    """True when one ``v1`` of ``Partner-Signature`` is the HMAC-SHA256 of ``"{t}.{payload}"`` with the
    secret and ``t`` is within ``tolerance`` seconds of now."""
    pairs = [part.split("=", 1) for part in header.split(",") if "=" in part]
    timestamps = [value for key, value in pairs if key.strip() == "t"]
    signatures = [value for key, value in pairs if key.strip() == "v1"]
    if len(timestamps) != 1 or not signatures or not timestamps[0].isdigit():
        return False
    timestamp = int(timestamps[0])
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, signature) for signature in signatures)


@dataclass
class Delivered:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool

    @property
    def event(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Clock:
    """The real clock moved by an offset: it still ticks, so events keep their order."""

    offset: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return utcnow() + self.offset

    @property
    def now(self) -> datetime:
        return self()

    @now.setter
    def now(self, value: datetime) -> None:
        self.offset = value - utcnow()

    def advance(self, delta: timedelta) -> None:
        self.offset += delta


@dataclass
class Receiver:
    """A partner's webhook receiver on 127.0.0.1: verifies each signature with the secret of the path."""

    clock: Clock | None = None
    secrets: dict[str, str] = field(default_factory=dict)
    answers: dict[str, list[int]] = field(default_factory=dict)  # statuses to answer next, per path
    slow: set[str] = field(default_factory=set)
    received: list[Delivered] = field(default_factory=list)
    _server: BaseWSGIServer | None = None

    def start(self) -> Receiver:
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()

    def reset(self, clock: Clock) -> None:
        self.clock, self.secrets, self.answers, self.slow, self.received = clock, {}, {}, set(), []

    def url(self, path: str) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}{path}"

    def at(self, path: str) -> list[Delivered]:
        return [d for d in self.received if d.path == path]

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        body = request.get_data()
        secret = self.secrets.get(request.path, "")
        now = self.clock().timestamp() if self.clock else None
        header = request.headers.get("Partner-Signature", "")
        verified = bool(secret) and verify_signature(body, header, secret, now=now)
        self.received.append(Delivered(request.path, dict(request.headers), body, verified))
        if request.path in self.slow:
            time.sleep(TIMEOUT * 3)
        queued = self.answers.get(request.path)
        status = queued.pop(0) if queued else 200
        text = "ok" if status < 300 else "receiver broke: " + "x" * 5000
        return Response(text, status=status)(environ, start_response)


@pytest.fixture(scope="module")
def receiver_server() -> Iterator[Receiver]:
    server = Receiver().start()
    yield server
    server.stop()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(event_store, "clock", fake)
    return fake


@pytest.fixture
def receiver(receiver_server: Receiver, clock: Clock) -> Receiver:
    receiver_server.reset(clock)
    return receiver_server


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK": True, "TELECOM_WEBHOOKS_TIMEOUT": TIMEOUT}


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_json()
    return response.get_json()["error"]


def endpoint(
    partner: Partner, receiver: Receiver, path: str, events: list[str] | None = None
) -> dict[str, Any]:
    created = partner.ok(
        partner.post("/lifecycle-webhooks", {"url": receiver.url(path), "enabled_events": events or ["*"]}),
        201,
    )
    receiver.secrets[path] = created["secret"]
    return created


def deliveries(partner: Partner, endpoint_id: str, **params: Any) -> list[dict[str, Any]]:
    return partner.ok(partner.get(f"/lifecycle-webhooks/{endpoint_id}/deliveries", limit=100, **params))[
        "data"
    ]


def sweep(app: Flask, environment: str = "live") -> int:
    with in_environment(app, environment):
        return webhooks.retry_due()


def drive(partner: Partner, app: Flask, clock: Clock, delivery_id: str) -> dict:
    """Follow a delivery's schedule: move the clock past each due time and run the sweep, until it ends."""
    while True:
        delivery = partner.ok(partner.get(f"/lifecycle-webhooks/deliveries/{delivery_id}"))
        if delivery["status"] != "pending":
            return delivery
        due = datetime.fromisoformat(delivery["next_attempt_at"].replace("Z", "+00:00"))
        clock.now = max(clock.now, due + webhooks.SWEEP_GRACE + timedelta(seconds=1))
        assert sweep(app) >= 1


# Endpoints ---------------------------------------------------------------------------------------------


def test_endpoint_crud_secret_never_shown_again(
    partner: Partner, receiver: Receiver, app: Flask, commits: Callable
) -> None:
    with commits() as counted:
        created = partner.ok(
            partner.post(
                "/lifecycle-webhooks",
                {
                    "url": "https://hooks.partner.example/telecom",
                    "enabled_events": ["subscription.activated", "subscription.activated", "user.created"],
                    "description": "CRM",
                    "metadata": {"team": "ops"},
                },
            ),
            201,
        )
    assert counted.count == 1
    secret = created["secret"]
    assert created["id"].startswith("whe_") and created["object"] == "webhook_endpoint"
    assert secret.startswith("whsec_") and len(secret) > 40
    assert created["enabled_events"] == ["subscription.activated", "user.created"]
    assert (created["status"], created["disabled_reason"], created["livemode"]) == ("enabled", None, True)
    assert (
        created["metadata"] == {"team": "ops"} and created["url"] == "https://hooks.partner.example/telecom"
    )

    with commits() as counted:
        shown = partner.get(f"/lifecycle-webhooks/{created['id']}")
        listed = partner.get("/lifecycle-webhooks")
    assert counted.count == 0
    for response in (shown, listed):
        assert response.status_code == 200 and secret not in response.get_data(as_text=True)
        assert "secret" not in json.dumps(response.get_json()).replace("previous_secret_expires_at", "")
    with in_environment(app, "live"):
        stored = db.session.scalar(select(WebhookEndpoint.secret_ciphertext))
        assert stored and secret not in stored  # encrypted at rest, not the secret itself

    patched = partner.ok(
        partner.patch(
            f"/lifecycle-webhooks/{created['id']}",
            {"enabled_events": ["*", "user.created"], "description": None, "status": "disabled"},
        )
    )
    assert patched["enabled_events"] == ["*"] and patched["description"] is None
    assert (patched["status"], patched["disabled_reason"]) == ("disabled", "manual")
    assert patched["disabled_at"] is not None and "secret" not in patched
    enabled = partner.ok(partner.patch(f"/lifecycle-webhooks/{created['id']}", {"status": "enabled"}))
    assert (enabled["status"], enabled["disabled_reason"], enabled["disabled_at"]) == ("enabled", None, None)
    refused = _error(partner.patch(f"/lifecycle-webhooks/{created['id']}", {"url": None}), 400)
    assert refused["message"].startswith("url: must not be null")

    deleted = partner.ok(partner.delete(f"/lifecycle-webhooks/{created['id']}"))
    assert deleted == {"id": created["id"], "object": "webhook_endpoint", "deleted": True}
    assert _error(partner.get(f"/lifecycle-webhooks/{created['id']}"), 404)["code"] == "resource_missing"


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"url": "http://hooks.partner.example/x", "enabled_events": ["*"]}, "url", "https"),
        ({"url": "https://10.1.2.3/x", "enabled_events": ["*"]}, "url", "private"),
        ({"url": "https://169.254.169.254/latest", "enabled_events": ["*"]}, "url", "private"),
        ({"url": "https://[fd00::1]/x", "enabled_events": ["*"]}, "url", "private"),
        ({"url": "https://[::ffff:192.168.0.1]/x", "enabled_events": ["*"]}, "url", "private"),
        ({"url": "https://user:pw@hooks.partner.example/x", "enabled_events": ["*"]}, "url", "credentials"),
        ({"url": "ftp://hooks.partner.example/x", "enabled_events": ["*"]}, "url", "https"),
        ({"url": "hooks.partner.example", "enabled_events": ["*"]}, "url", "https"),
        (
            {"url": "https://hooks.partner.example/x", "enabled_events": ["user.exploded"]},
            "enabled_events",
            "user.exploded",
        ),
        ({"url": "https://hooks.partner.example/x", "enabled_events": []}, "enabled_events", ""),
        ({"url": "https://hooks.partner.example/x"}, "enabled_events", ""),
    ],
)
def test_endpoint_input_refused_naming_the_field(
    partner: Partner, body: dict, param: str, words: str
) -> None:
    error = _error(partner.post("/lifecycle-webhooks", body), 400)
    assert error["param"] == param and words in error["message"]
    assert partner.ok(partner.get("/lifecycle-webhooks"))["data"] == []


def test_loopback_http_needs_the_test_switch(partner: Partner, app: Flask, receiver: Receiver) -> None:
    assert (
        partner.post("/lifecycle-webhooks", {"url": receiver.url("/a"), "enabled_events": ["*"]}).status_code
        == 201
    )
    environment_app(app, "live").config["TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK"] = False  # the default
    for url in (receiver.url("/b"), "https://127.0.0.1/b", "https://localhost/b", "https://[::1]/b"):
        assert (
            _error(partner.post("/lifecycle-webhooks", {"url": url, "enabled_events": ["*"]}), 400)["param"]
            == "url"
        )


def test_endpoint_limit_other_organization_and_sandbox(
    partner: Partner, other_org: Org, make_partner: Callable[..., Partner], receiver: Receiver
) -> None:
    first = endpoint(partner, receiver, "/limit")
    for _ in range(webhooks.MAX_ENDPOINTS - 1):
        partner.ok(
            partner.post(
                "/lifecycle-webhooks", {"url": "https://h.partner.example/", "enabled_events": ["*"]}
            ),
            201,
        )
    refused = _error(
        partner.post("/lifecycle-webhooks", {"url": "https://h.partner.example/", "enabled_events": ["*"]}),
        409,
    )
    assert refused["code"] == "webhook_endpoint_limit_reached"

    stranger = make_partner(other_org)
    for response in (
        stranger.get(f"/lifecycle-webhooks/{first['id']}"),
        stranger.patch(f"/lifecycle-webhooks/{first['id']}", {"status": "disabled"}),
        stranger.delete(f"/lifecycle-webhooks/{first['id']}"),
        stranger.post(f"/lifecycle-webhooks/{first['id']}/roll_secret", {}),
        stranger.get(f"/lifecycle-webhooks/{first['id']}/deliveries"),
    ):
        assert _error(response, 404)["code"] == "resource_missing"
    assert stranger.ok(stranger.get("/lifecycle-webhooks"))["data"] == []
    sandbox = make_partner(partner.org, "sandbox")
    assert sandbox.ok(sandbox.get("/lifecycle-webhooks"))["data"] == []
    assert _error(sandbox.get(f"/lifecycle-webhooks/{first['id']}"), 404)["code"] == "resource_missing"
    assert (
        partner.client.get(
            "/v1/partner/lifecycle-webhooks", headers=partner.org.headers("sandbox")
        ).status_code
        == 401
    )
    assert partner.ok(partner.get(f"/lifecycle-webhooks/{first['id']}"))["status"] == "enabled"


# Deliveries --------------------------------------------------------------------------------------------


def test_delivery_is_signed_and_is_the_event(partner: Partner, receiver: Receiver) -> None:
    hook = endpoint(partner, receiver, "/signed", ["user.created"])
    user = partner.user()
    partner.ok(partner.patch(f"/users/{user['id']}", {"full_name": "Otra"}))  # user.updated: not subscribed

    [delivered] = receiver.at("/signed")
    assert delivered.verified
    assert not verify_signature(delivered.body, delivered.headers["Partner-Signature"], "whsec_wrong")
    assert not verify_signature(delivered.body + b" ", delivered.headers["Partner-Signature"], hook["secret"])
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", delivered.headers["Partner-Signature"])
    assert delivered.headers["Content-Type"] == "application/json"
    assert delivered.headers["User-Agent"].startswith("AgentDesk-Webhooks/")
    event = delivered.event
    assert delivered.headers["Partner-Event-Id"] == event["id"] and event["id"].startswith("evt_")
    assert (event["object"], event["type"], event["livemode"]) == ("event", "user.created", True)
    assert event["data"]["object"]["id"] == user["id"] and event["data"]["object"]["email"] == user["email"]
    assert event == partner.ok(partner.get(f"/events/{event['id']}"))

    [log] = deliveries(partner, hook["id"])
    assert (log["status"], log["attempts"], log["event"], log["event_type"]) == (
        "succeeded",
        1,
        event["id"],
        "user.created",
    )
    assert log["last_response"]["status"] == 200 and log["last_response"]["body"] == "ok"
    assert log["next_attempt_at"] is None and log["history"][0]["duration_ms"] >= 0


def test_failing_endpoint_is_retried_on_schedule(
    partner: Partner, receiver: Receiver, app: Flask, clock: Clock
) -> None:
    hook = endpoint(partner, receiver, "/flaky", ["user.created"])
    receiver.answers["/flaky"] = [500, 503, 500]
    partner.user()
    [delivery] = deliveries(partner, hook["id"])
    assert (delivery["status"], delivery["attempts"], delivery["last_error"]) == ("pending", 1, "http_500")
    assert delivery["last_response"]["status"] == 500
    assert len(delivery["last_response"]["body"].encode()) == 1024  # an excerpt of the 5 KB answer
    waits = []
    for expected_wait in (timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30)):
        last = datetime.fromisoformat(delivery["last_attempt_at"].replace("Z", "+00:00"))
        due = datetime.fromisoformat(delivery["next_attempt_at"].replace("Z", "+00:00"))
        waits.append(due - last)
        assert due - last == expected_wait
        clock.now = due - timedelta(seconds=1)  # not due yet: the sweep sends nothing
        assert sweep(app, "live") == 0
        clock.now = due + webhooks.SWEEP_GRACE + timedelta(seconds=1)
        assert sweep(app, "live") == 1
        delivery = partner.ok(partner.get(f"/lifecycle-webhooks/deliveries/{delivery['id']}"))
    assert (delivery["status"], delivery["attempts"], delivery["next_attempt_at"]) == ("succeeded", 4, None)
    assert [h["response_status"] for h in delivery["history"]] == [500, 503, 500, 200]
    assert all(h["manual"] is False and h["duration_ms"] >= 0 for h in delivery["history"])
    sent = receiver.at("/flaky")
    assert len(sent) == 4 and all(d.verified for d in sent)
    assert len({d.headers["Partner-Event-Id"] for d in sent}) == 1
    assert sweep(app, "live") == 0  # nothing left to do


def test_timeout_is_a_failed_attempt(partner: Partner, receiver: Receiver) -> None:
    hook = endpoint(partner, receiver, "/slow", ["user.created"])
    receiver.slow.add("/slow")
    partner.user()
    [delivery] = deliveries(partner, hook["id"])
    assert delivery["status"] == "pending" and delivery["last_error"].startswith("timeout")
    assert delivery["last_response"]["status"] is None and delivery["next_attempt_at"] is not None


def test_private_address_refused_at_delivery(
    partner: Partner, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host name that resolves to a private address (DNS rebinding) is never connected to."""
    real = socket.getaddrinfo

    def resolve(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "hooks.partner.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    hook = partner.ok(
        partner.post(
            "/lifecycle-webhooks",
            {"url": "https://hooks.partner.example/x", "enabled_events": ["user.created"]},
        ),
        201,
    )
    partner.user()
    [delivery] = deliveries(partner, hook["id"])
    assert delivery["status"] == "pending" and delivery["last_error"].startswith("address_refused")
    assert "10.0.0.7" in delivery["last_error"] and delivery["last_response"]["status"] is None


def test_endpoint_disabled_after_three_days_of_failures(
    partner: Partner, receiver: Receiver, app: Flask, clock: Clock
) -> None:
    down = endpoint(partner, receiver, "/down", ["user.created", "user.updated"])
    endpoint(partner, receiver, "/watcher", ["webhook_endpoint.disabled"])
    receiver.answers["/down"] = [500] * 100
    started = clock.now
    user = partner.user()
    [first] = deliveries(partner, down["id"])
    first = drive(partner, app, clock, first["id"])
    # 8 attempts over about 27.6 hours, then the delivery gives up; the endpoint is not 3 days down yet.
    assert (first["status"], first["attempts"], first["last_error"]) == (
        "failed",
        webhooks.MAX_ATTEMPTS,
        "http_500",
    )
    assert timedelta(hours=27) < clock.now - started < timedelta(hours=28)
    assert partner.ok(partner.get(f"/lifecycle-webhooks/{down['id']}"))["status"] == "enabled"

    clock.now = started + timedelta(days=2)
    partner.ok(partner.patch(f"/users/{user['id']}", {"full_name": "Still failing"}))
    [second] = deliveries(partner, down["id"], status="pending")
    second = drive(partner, app, clock, second["id"])
    disabled = partner.ok(partner.get(f"/lifecycle-webhooks/{down['id']}"))
    assert (disabled["status"], disabled["disabled_reason"]) == ("disabled", "too_many_failures")
    assert clock.now - started >= webhooks.DISABLE_AFTER
    assert second["status"] == "failed"

    [notice] = receiver.at("/watcher")
    assert notice.verified and notice.event["type"] == "webhook_endpoint.disabled"
    assert notice.event["data"]["object"]["id"] == down["id"]
    assert (
        notice.event["data"]["object"]["status"] == "disabled"
        and "secret" not in notice.event["data"]["object"]
    )

    sent_before = len(receiver.at("/down"))
    partner.user()  # a disabled endpoint gets no new deliveries
    assert len(deliveries(partner, down["id"])) == 2 and len(receiver.at("/down")) == sent_before
    refused = _error(partner.post(f"/lifecycle-webhooks/deliveries/{second['id']}/retry"), 409)
    assert refused["code"] == "webhook_endpoint_disabled"
    enabled = partner.ok(partner.patch(f"/lifecycle-webhooks/{down['id']}", {"status": "enabled"}))
    assert (enabled["status"], enabled["disabled_reason"]) == ("enabled", None)


def test_disabling_stops_pending_deliveries(
    partner: Partner, receiver: Receiver, app: Flask, clock: Clock
) -> None:
    hook = endpoint(partner, receiver, "/paused", ["user.created"])
    receiver.answers["/paused"] = [500]
    partner.user()
    [delivery] = deliveries(partner, hook["id"])
    assert delivery["status"] == "pending"
    partner.ok(partner.patch(f"/lifecycle-webhooks/{hook['id']}", {"status": "disabled"}))
    clock.advance(timedelta(hours=1))
    assert sweep(app) == 0
    stopped = partner.ok(partner.get(f"/lifecycle-webhooks/deliveries/{delivery['id']}"))
    assert (stopped["status"], stopped["last_error"], stopped["attempts"]) == (
        "failed",
        "endpoint_disabled",
        1,
    )
    assert len(receiver.at("/paused")) == 1


def test_manual_retry(partner: Partner, receiver: Receiver, other_org: Org, make_partner: Callable) -> None:
    hook = endpoint(partner, receiver, "/manual", ["user.created"])
    receiver.answers["/manual"] = [500]
    partner.user()
    [delivery] = deliveries(partner, hook["id"])
    assert delivery["status"] == "pending"

    queued = partner.ok(partner.post(f"/lifecycle-webhooks/deliveries/{delivery['id']}/retry"), 202)
    assert queued["id"] == delivery["id"]
    retried = partner.ok(partner.get(f"/lifecycle-webhooks/deliveries/{delivery['id']}"))
    assert (retried["status"], retried["attempts"], retried["retry_requested"]) == ("succeeded", 2, False)
    assert [h["manual"] for h in retried["history"]] == [False, True]

    partner.ok(
        partner.post(f"/lifecycle-webhooks/deliveries/{delivery['id']}/retry"), 202
    )  # resend a success
    again = partner.ok(partner.get(f"/lifecycle-webhooks/deliveries/{delivery['id']}"))
    assert (again["status"], again["attempts"]) == ("succeeded", 3)
    sent = receiver.at("/manual")
    assert len(sent) == 3 and all(d.verified for d in sent)
    assert len({d.headers["Partner-Event-Id"] for d in sent}) == 1

    stranger = make_partner(other_org)
    for response in (
        stranger.post(f"/lifecycle-webhooks/deliveries/{delivery['id']}/retry"),
        stranger.get(f"/lifecycle-webhooks/deliveries/{delivery['id']}"),
    ):
        assert _error(response, 404)["code"] == "resource_missing"
    assert len(receiver.at("/manual")) == 3


def test_roll_secret_with_and_without_overlap(partner: Partner, receiver: Receiver, clock: Clock) -> None:
    hook = endpoint(partner, receiver, "/roll", ["user.created"])
    old = hook["secret"]
    rolled = partner.ok(partner.post(f"/lifecycle-webhooks/{hook['id']}/roll_secret", {"expires_in": 3600}))
    new = rolled["secret"]
    assert new.startswith("whsec_") and new != old and rolled["previous_secret_expires_at"] is not None
    assert new not in partner.get(f"/lifecycle-webhooks/{hook['id']}").get_data(as_text=True)
    receiver.secrets["/roll"] = new

    partner.user()
    overlapping = receiver.at("/roll")[-1]
    assert overlapping.headers["Partner-Signature"].count("v1=") == 2
    assert overlapping.verified and verify_signature(
        overlapping.body, overlapping.headers["Partner-Signature"], old, now=clock.now.timestamp()
    )

    clock.advance(timedelta(hours=1, seconds=1))  # the old secret has expired
    partner.user()
    after = receiver.at("/roll")[-1]
    assert after.headers["Partner-Signature"].count("v1=") == 1 and after.verified
    assert not verify_signature(
        after.body, after.headers["Partner-Signature"], old, now=clock.now.timestamp()
    )

    newest = partner.ok(partner.post(f"/lifecycle-webhooks/{hook['id']}/roll_secret", {}))["secret"]
    partner.user()
    last = receiver.at("/roll")[-1]
    assert not last.verified  # the receiver still holds the previous secret: no overlap was asked for
    assert verify_signature(last.body, last.headers["Partner-Signature"], newest, now=clock.now.timestamp())
    too_long = _error(
        partner.post(f"/lifecycle-webhooks/{hook['id']}/roll_secret", {"expires_in": 90000}), 400
    )
    assert too_long["param"] == "expires_in"


# Events ------------------------------------------------------------------------------------------------


def test_events_api_pages_filters_and_thirty_days(
    partner: Partner, app: Flask, clock: Clock, other_org: Org, make_partner: Callable
) -> None:
    users = [partner.user() for _ in range(3)]
    partner.ok(partner.patch(f"/users/{users[0]['id']}", {"full_name": "Renamed"}))
    created = partner.ok(partner.get("/events", type="user.created", limit=2))
    assert len(created["data"]) == 2 and created["has_more"] is True
    assert [e["data"]["object"]["id"] for e in created["data"]] == [users[2]["id"], users[1]["id"]]
    rest = partner.ok(partner.get("/events", type="user.created", starting_after=created["data"][-1]["id"]))
    assert [e["data"]["object"]["id"] for e in rest["data"]] == [users[0]["id"]] and rest["has_more"] is False
    updated = partner.ok(partner.get("/events", type="user.updated"))["data"]
    assert [e["data"]["object"]["full_name"] for e in updated] == ["Renamed"]
    assert _error(partner.get("/events", type="user.exploded"), 400)["param"] == "type"
    assert _error(partner.get("/events", kind="user.created"), 400)["param"] == "kind"

    event_id = updated[0]["id"]
    stranger = make_partner(other_org)
    assert _error(stranger.get(f"/events/{event_id}"), 404)["code"] == "resource_missing"
    assert stranger.ok(stranger.get("/events"))["data"] == []
    sandbox = make_partner(partner.org, "sandbox")
    sandbox.user()
    [sandbox_event] = sandbox.ok(sandbox.get("/events"))["data"]
    assert sandbox_event["livemode"] is False and sandbox_event["data"]["object"]["livemode"] is False
    assert _error(sandbox.get(f"/events/{event_id}"), 404)["code"] == "resource_missing"

    clock.advance(timedelta(days=30, minutes=1))
    assert partner.ok(partner.get("/events"))["data"] == []
    assert _error(partner.get(f"/events/{event_id}"), 404)["code"] == "resource_missing"
    fresh = partner.user()
    with in_environment(app, "live"):
        assert event_store.purge_expired() == 4  # three user.created and the user.updated
    with in_environment(app, "live"):
        assert db.session.scalar(select(func.count()).select_from(TelecomEvent)) == 1
    [kept] = partner.ok(partner.get("/events"))["data"]
    assert kept["data"]["object"]["id"] == fresh["id"]


def test_every_published_event_is_in_the_catalogue() -> None:
    """The catalogue is what partners subscribe to: a service publishing a name missing from it would be
    refused in ``enabled_events``. Scans the area's sources for event names."""
    sources = Path(webhooks.__file__).resolve().parents[1]
    resources = "user|kyc_verification|subscription|order|topup|balance|porting|data_esim|webhook_endpoint"
    pattern = re.compile(rf'"((?:{resources})\.[a-z_]+)"')
    found = {name for path in sources.rglob("*.py") for name in pattern.findall(path.read_text())}
    kyc_statuses = {"processing", "verified", "requires_input", "canceled"}  # f"kyc_verification.{status}"
    found |= {f"kyc_verification.{status}" for status in kyc_statuses}
    assert found - event_store.EVENT_TYPES == set()
    assert {"porting.completed", "data_esim.low_data", "subscription.activated"} <= found


# The whole story ---------------------------------------------------------------------------------------


def test_full_story_reaches_the_partner_signed(partner: Partner, receiver: Receiver, app: Flask) -> None:
    hook = endpoint(partner, receiver, "/story")
    user = partner.verified_user()
    partner.credit("1000.00")
    line = partner.line(user)
    assert line["status"] == "active"
    url = f"/subscriptions/{line['id']}"
    # the user's old number comes over: a porting, a second line that takes it, the port window passes
    porting = partner.ok(
        partner.post(
            "/portings",
            {
                "user": user["id"],
                "phone_number": "+525587654321",
                "nip": "2468",
                "nip_issued_at": utcnow().isoformat(),
                "holder": {"full_name": user["full_name"], "curp": CURP},
            },
        ),
        201,
    )
    ported_line = partner.ok(
        partner.post(
            "/subscriptions",
            {"type": "SIM", "user": user["id"], "plan": "pln_basico_5gb", "porting": porting["id"]},
        ),
        202,
    )
    requested = partner.ok(partner.get(f"/portings/{porting['id']}"))
    assert requested["status"] == "requested"
    with in_environment(app, "live"):
        later = datetime.fromisoformat(requested["scheduled_for"].replace("Z", "+00:00")) + timedelta(
            minutes=1
        )
        assert portings.process_due(now=later) == 1
    assert partner.ok(partner.get(f"/subscriptions/{ported_line['id']}"))["phone_number"] == "+525587654321"
    partner.ok(partner.post(f"{url}/topups", {"topup": "tup_datos_1gb"}), 202)
    partner.ok(partner.post(f"{url}/suspend"), 202)
    partner.ok(partner.post(f"{url}/resume"), 202)

    received = receiver.at("/story")
    assert all(d.verified for d in received)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for delivered in received:
        by_type.setdefault(delivered.event["type"], []).append(delivered.event)
    assert Counter({name: len(events) for name, events in by_type.items()}) == Counter(
        {
            "user.created": 1,
            "kyc_verification.processing": 1,
            "kyc_verification.verified": 1,
            "balance.credited": 1,
            "subscription.created": 2,
            "subscription.activated": 2,  # the new number, then the ported one
            "porting.created": 1,
            "porting.requested": 1,
            "porting.completed": 1,
            "balance.debited": 3,  # both lines' first periods and the top-up
            "topup.activated": 1,
            "subscription.suspended": 1,
            "subscription.resumed": 1,
        }
    )
    assert by_type["user.created"][0]["data"]["object"]["id"] == user["id"]
    verified = by_type["kyc_verification.verified"][0]["data"]["object"]
    assert (verified["user"], verified["status"]) == (user["id"], "verified") and verified["folio"]
    completed = by_type["porting.completed"][0]["data"]["object"]
    assert completed["id"] == porting["id"] and completed["status"] == "completed"
    assert "nip" not in json.dumps(completed).replace("nip_", "")  # the NIP never leaves
    activations = {e["data"]["object"]["id"]: e["data"] for e in by_type["subscription.activated"]}
    assert activations[ported_line["id"]]["object"]["phone_number"] == "+525587654321"
    activated = activations[line["id"]]
    assert activated["object"]["id"] == line["id"] and activated["object"]["status"] == "active"
    assert activated["object"]["phone_number"] == line["phone_number"]
    assert activated["order"]["type"] == "line_purchase" and activated["order"]["status"] == "completed"
    topup = by_type["topup.activated"][0]["data"]
    assert topup["order"]["type"] == "topup" and topup["order"]["details"] == {"topup": "tup_datos_1gb"}
    assert by_type["subscription.suspended"][0]["data"]["object"]["status"] == "suspended"
    assert by_type["subscription.resumed"][0]["data"]["object"]["status"] == "active"
    debits = sorted(e["data"]["object"]["amount"] for e in by_type["balance.debited"])
    assert debits == sorted(["-199.00", "-199.00", "-50.00"]), debits
    assert by_type["balance.credited"][0]["data"]["object"]["amount"] == "1000.00"

    log = deliveries(partner, hook["id"])
    assert len(log) == len(received) and {d["status"] for d in log} == {"succeeded"}
    stored = {e["id"] for e in partner.ok(partner.get("/events", limit=100))["data"]}
    assert {d.event["id"] for d in received} == stored
