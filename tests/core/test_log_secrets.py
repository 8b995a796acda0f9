"""A whole partner story through the HTTP API with every log line captured (root at DEBUG, JSON format,
access lines on): no secret used in the story appears in any line, and request lines carry their
request id and organization.

The story: an organization and its keys (CLI), a WhatsApp number connected with a Meta token, Meta's
verification handshake, signed and forged webhook deliveries, a reply sent through the Graph API, a JWT
on the CRM, a desk user signing in with a password (and a wrong one), a telecom user verified with a CURP,
a porting with a NIP, a lifecycle webhook endpoint with its signing secret (its deliveries fail), and one
request that crashes with secrets in the exception's text.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.organizations import services as organization_services
from core.db import utcnow
from core.logs import AgentDeskHandler, JsonFormatter, RedactingFilter
from tests.conftest import TEST_SECRET, Org
from tests.fakes.fixtures import (  # noqa: F401  (fixtures)
    APP_SECRET,
    PHONE_NUMBER_ID,
    VERIFY_TOKEN,
    Connect,
    Deliver,
    connect,
    deliver,
    meta,
    meta_server,
    msg,
)
from tests.fakes.meta_graph import FakeMetaGraph
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.telecom.conftest import CURP, Partner

META_TOKEN = "EAAGstoryToken4f8a2c9d1e7b3a6f"
PASSWORD = "correct horse battery staple"
DATABASE_PASSWORD = "Pg-s3cret-9f8e7d"
NIP = "9753"
CARD = "4111111111111111"
CARD_SPACED = "4111 1111 1111 1111"
CONTACT = "5215512345678"
SIGNIN_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def app_config(app_config: dict[str, Any], meta: FakeMetaGraph) -> dict[str, Any]:  # noqa: F811
    return {
        **app_config,
        "META_GRAPH_URL": meta.graph_url,
        "META_APP_SECRET": APP_SECRET,
        "META_VERIFY_TOKEN": VERIFY_TOKEN,
        "META_HTTP_TIMEOUT": 5,
        "TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK": True,
        "TELECOM_WEBHOOKS_TIMEOUT": 2,
        "LOG_FORMAT": "json",
        "LOG_REQUESTS": True,
    }


@pytest.fixture
def captured_logs(app: Flask) -> Iterator[io.StringIO]:
    """Everything the process logs, through the handler create_app installed (its filters and all)."""
    root = logging.getLogger()
    [handler] = [h for h in root.handlers if isinstance(h, AgentDeskHandler)]
    assert any(isinstance(f, RedactingFilter) for f in handler.filters)
    buffer = io.StringIO()
    level, formatter = root.level, handler.formatter
    handler.setStream(buffer)
    handler.setFormatter(JsonFormatter())
    root.setLevel(logging.DEBUG)
    yield buffer
    root.setLevel(level)
    handler.setFormatter(formatter)
    handler.setStream(None)  # type: ignore[arg-type]  # back to sys.stderr


def _story(
    app: Flask,
    client: FlaskClient,
    runner: FlaskCliRunner,
    org: Org,
    connect: Connect,  # noqa: F811
    deliver: Deliver,  # noqa: F811
    meta: FakeMetaGraph,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    """Runs the story; returns the secrets it used and the request id of the crash."""
    secrets: dict[str, str] = {
        "live key": org.live_key,
        "sandbox key": org.sandbox_key,
        "meta token": META_TOKEN,
        "app secret": APP_SECRET,
        "verify token": VERIFY_TOKEN,
        "secret key": TEST_SECRET,
        "password": PASSWORD,
        "database password": DATABASE_PASSWORD,
        "curp": CURP,
        "card": CARD,
        "card (spaced)": CARD_SPACED,
    }
    # Channels: a WhatsApp number with its Meta token, the handshake, deliveries in and a reply out.
    meta.tokens.add(META_TOKEN)
    connect(org, "whatsapp", PHONE_NUMBER_ID, "--phone-number", "+525500000001", token=META_TOKEN)
    handshake = client.get(
        "/webhooks/meta",
        query_string={
            "hub.mode": "subscribe",
            "hub.verify_token": VERIFY_TOKEN,
            "hub.challenge": "1158201444",
        },
    )
    assert handshake.status_code == 200
    text = f"Hola, mi tarjeta es {CARD_SPACED} y mi CURP {CURP}"
    assert (
        deliver(wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[wa_text(CONTACT, text)]))).status_code == 200
    )
    assert deliver(wa_delivery(wa_change(PHONE_NUMBER_ID)), secret="not-the-app-secret").status_code in (
        401,
        403,
    )
    sent = client.post(
        msg(org, "/messages"),
        json={
            "organization_address": PHONE_NUMBER_ID,
            "service": "whatsapp",
            "contact_address": CONTACT,
            "direction": "outgoing",
            "content": {"kind": "text", "text": f"Recibido; no compartas tu tarjeta {CARD}"},
        },
        headers=org.headers(),
    )
    assert sent.status_code == 201, sent.get_json()
    assert client.get("/sandbox/v1/organizations", headers=org.headers("sandbox")).status_code == 200

    # CRM with a JWT, and a JWT that does not verify.
    jwt = runner.invoke(args=["tokens", "issue", "--org", org.id, "--subject", "member-7"]).output.strip()
    secrets["jwt"] = jwt
    crm = f"/v1/crm/organizations/{org.id}/contacts"
    assert client.get(crm, headers={"Authorization": f"Bearer {jwt}"}).status_code == 200
    assert client.get(crm, headers={"Authorization": f"Bearer {jwt[:-4]}AAAA"}).status_code == 401

    # A desk user with a password signs in (once wrong).
    email = f"ana.{org.id[:6]}@example.test"
    created = runner.invoke(
        args=["users", "create", "--org", org.id, "--email", email, "--password", PASSWORD, "--name", "Ana"]
    )
    assert created.exit_code == 0, created.output
    for password, status in ((PASSWORD[::-1], 200), (PASSWORD, 302)):
        token = SIGNIN_TOKEN.search(client.get("/signin").get_data(as_text=True))
        assert token is not None
        signin = client.post("/signin", data={"email": email, "password": password, "csrf_token": token[1]})
        assert signin.status_code in (status, 401), signin.status_code

    # Telecom: a user verified with a CURP, a porting with a NIP, a webhook endpoint with its secret.
    assert runner.invoke(args=["telecom", "catalogue", "load"]).exit_code == 0
    partner = Partner(client, org, runner)
    user = partner.verified_user()
    hook = partner.ok(
        partner.post("/lifecycle-webhooks", {"url": "http://127.0.0.1:9/hooks", "enabled_events": ["*"]}), 201
    )
    secrets["webhook secret"] = hook["secret"]
    issued = (utcnow() - timedelta(hours=1)).astimezone(UTC).isoformat().replace("+00:00", "Z")
    porting = partner.post(
        "/portings",
        {
            "user": user["id"],
            "phone_number": "+525587654329",
            "nip": NIP,
            "nip_issued_at": issued,
            "holder": {"full_name": "Gloria Hernández García", "person_type": "person", "curp": CURP},
        },
    )
    assert porting.status_code == 201, porting.get_json()
    refused = partner.post("/portings", {"user": user["id"], "nip": NIP, "holder": {"curp": CURP}})
    assert refused.status_code == 400

    # One crash, with secrets in the exception's text (as a careless library might put them).
    def crash(organization_id: Any) -> Any:
        raise RuntimeError(
            f"lookup failed: key={org.live_key} token {META_TOKEN} holder {CURP} nip={NIP} card {CARD} "
            f"signing {hook['secret']} via postgresql://agentdesk:{DATABASE_PASSWORD}@db.internal/live"
        )

    monkeypatch.setattr(organization_services, "get_organization", crash)
    crashed = client.get("/v1/organizations", headers=org.headers())
    assert crashed.status_code == 500
    return {"secrets": secrets, "crash_request_id": crashed.headers["X-Request-Id"]}


def test_no_secret_in_any_log_line_of_a_whole_story(
    app: Flask,
    client: FlaskClient,
    runner: FlaskCliRunner,
    org: Org,
    connect: Connect,  # noqa: F811
    deliver: Deliver,  # noqa: F811
    meta: FakeMetaGraph,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    captured_logs: io.StringIO,
) -> None:
    story = _story(app, client, runner, org, connect, deliver, meta, monkeypatch)

    lines = [json.loads(line) for line in captured_logs.getvalue().splitlines()]
    raw = captured_logs.getvalue()
    assert len(lines) > 20, raw  # the story was logged at all

    for name, secret in story["secrets"].items():
        assert secret not in raw, f"the {name} appears in the logs"
    # A NIP is 4 digits: look for it as a value of its own, not inside an id or a timestamp.
    assert not re.search(rf"(?<![0-9A-Za-z]){NIP}(?![0-9A-Za-z])", raw), "the NIP appears in the logs"
    # CURPs keep at most their first 4 characters.
    assert CURP[:5] not in raw

    # Every line logged inside a request carries its id; authenticated ones carry the organization.
    in_requests = [line for line in lines if "path" in line]
    assert [line for line in in_requests if not line.get("request_id")] == []
    assert in_requests and all(line["request_id"] for line in in_requests)
    access = [line for line in lines if line["logger"] == "agentdesk.access"]
    assert len(access) >= 15
    assert all(
        {"request_id", "method", "path", "status", "duration_ms", "environment"} <= set(a) for a in access
    )
    assert {"live", "sandbox"} <= {a["environment"] for a in access}

    [error] = [line for line in lines if line.get("exception") and "lookup failed" in line["exception"]]
    assert error["level"] == "ERROR"
    assert error["request_id"] == story["crash_request_id"]
    assert error["organization_id"] == org.id
    assert (error["method"], error["path"]) == ("GET", "/v1/organizations")
    assert "Traceback (most recent call last)" in error["exception"]
    # masked, not dropped: an operator still sees which key and which card
    assert "sk_live_" + org.live_key[8:16] in error["exception"]
    assert "************1111" in error["exception"]
    # desk users too: the successful sign-in is logged with the organization
    [signed_in] = [a for a in access if (a["method"], a["path"], a["status"]) == ("POST", "/signin", 302)]
    assert signed_in["organization_id"] == org.id
    [crash_access] = [a for a in access if a["request_id"] == story["crash_request_id"]]
    assert crash_access["status"] == 500
