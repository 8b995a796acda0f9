"""Agent notifications: e-mails received by a real SMTP server, webhooks received (and their signatures
verified) by a real loopback receiver, retries with exponential backoff on the delivery's schedule, the
ai.tool_called event as a trigger, end_of_call called directly, and the delivery log API."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blueprints.notifications import services
from core.environments import in_environment
from core.events import publish
from tests.conftest import Org
from tests.notifications.conftest import (
    TOOL_CALL,
    Clock,
    deliveries,
    mem,
    notify,
    set_notifications,
    sweep,
)
from tests.support.smtp_server import SmtpServer, smtp_server
from tests.support.webhook_receiver import WebhookReceiver, webhook_receiver

RETRY_BASE = 10  # seconds: 10, 20, 40 ... between attempts


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


@pytest.fixture(scope="module")
def receiver_server() -> Iterator[WebhookReceiver]:
    with webhook_receiver() as server:
        yield server


@pytest.fixture
def mailbox(smtp: SmtpServer) -> SmtpServer:
    smtp.received.clear()
    smtp.refuse.clear()
    return smtp


@pytest.fixture
def receiver(receiver_server: WebhookReceiver) -> WebhookReceiver:
    receiver_server.received.clear()
    receiver_server.answers.clear()
    receiver_server.secret = ""
    return receiver_server


@pytest.fixture
def app_config(app_config: dict[str, Any], smtp: SmtpServer) -> dict[str, Any]:
    return {
        **app_config,
        "SMTP_HOST": smtp.host,
        "SMTP_PORT": smtp.port,
        "SMTP_STARTTLS": False,
        "SMTP_FROM": "desk@agentdesk.test",
        "SMTP_TIMEOUT_SECONDS": 2,
        "NOTIFICATIONS_ALLOW_HTTP_LOOPBACK": True,
        "NOTIFICATIONS_WEBHOOK_TIMEOUT_SECONDS": 1,
        "NOTIFICATIONS_MAX_ATTEMPTS": 3,
        "NOTIFICATIONS_RETRY_BASE_SECONDS": RETRY_BASE,
        "DESK_BASE_URL": "https://desk.example.test",
    }


def _secret(client: FlaskClient, org: Org) -> str:
    response = client.get(mem(org, "/notifications/signing-secret"), headers=org.headers())
    assert response.status_code == 200
    body = response.get_json()
    assert body["header"] == "AgentDesk-Signature" and body["secret"].startswith("whsec_")
    return str(body["secret"])


def _at(value: str | None) -> datetime:
    assert value is not None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# ------------------------------------------------------------------------------------------------ e-mail


def test_tool_call_event_emails_the_configured_address(
    app: Flask, client: FlaskClient, org: Org, make_agent: Callable[..., str], mailbox: SmtpServer
) -> None:
    agent_id = make_agent(org, {"transfer_to_human": {"email": ["Supervisor@Example.test"]}})
    with in_environment(app, "live"):
        # what the AI runtime publishes when its tool ran (delivered after this unit's commit)
        publish("ai.tool_called", org.id, {"agent_id": agent_id, **TOOL_CALL})

    [received] = mailbox.received
    assert received.recipients == ["Supervisor@example.test"]
    assert received.subject == f"[{org.name}] Sofía: transferred to a human (+525512345678)"
    assert "Quiere hablar con ventas" in received.text and "team:Ventas" in received.text
    assert f"https://desk.example.test/inbox/c/{TOOL_CALL['conversation_id']}" in received.text

    [delivery] = deliveries(client, org, agent_id)
    assert delivery["channel"] == "email" and delivery["target"] == "Supervisor@example.test"
    assert (delivery["status"], delivery["attempts"], delivery["last_error"]) == ("sent", 1, None)
    assert delivery["last_response_code"] == 250 and delivery["sent_at"] is not None
    assert delivery["trigger"] == "transfer_to_human"
    assert delivery["payload"]["data"]["arguments"] == TOOL_CALL["arguments"]
    assert received.message["X-AgentDesk-Notification"] == delivery["notification_id"]


def test_end_of_call_and_untriggered_tools(
    app: Flask, client: FlaskClient, org: Org, make_agent: Callable[..., str], mailbox: SmtpServer
) -> None:
    agent_id = make_agent(org, {"end_of_call": {"email": ["ops@example.test", "boss@example.test"]}})
    call = {
        "call_id": "call_1",
        "contact_address": "+525512345678",
        "duration_seconds": 93,
        "ended_at": datetime(2026, 11, 23, 20, 0, tzinfo=UTC),  # plain JSON in the payload
        "transcript": "hola " * 5_000,  # cut: the payload stays bounded
    }
    ids = notify(app, org, agent_id, "end_of_call", call)
    assert len(ids) == 2
    data = deliveries(client, org, agent_id)[0]["payload"]["data"]
    assert data["ended_at"] == "2026-11-23 20:00:00+00:00"
    assert len(data["transcript"]) == services.MAX_DATA_CHARS + 1
    assert sorted(r.recipients[0] for r in mailbox.received) == ["boss@example.test", "ops@example.test"]
    assert "call ended" in mailbox.received[0].subject
    assert '"duration_seconds": 93' in mailbox.received[0].text
    # a trigger the configuration does not name, an unknown agent and a human member: nothing
    assert notify(app, org, agent_id, "create_ticket", {}) == []
    assert notify(app, org, "no-such-agent", "end_of_call", call) == []
    assert len(mailbox.received) == 2


def test_without_smtp_host_the_email_is_skipped_with_the_reason(
    app: Flask, client: FlaskClient, org: Org, make_agent: Callable[..., str], mailbox: SmtpServer
) -> None:
    agent_id = make_agent(org, {"end_of_call": {"email": ["ops@example.test"]}})
    app.config["SMTP_HOST"] = None
    notify(app, org, agent_id, "end_of_call", {"call_id": "call_1"})
    assert mailbox.received == []
    [delivery] = deliveries(client, org, agent_id)
    assert delivery["status"] == "skipped"
    assert delivery["last_error"] == "SMTP_HOST is not configured: e-mail notifications are off"


def test_a_permanent_refusal_fails_at_once_a_temporary_one_is_retried(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_agent: Callable[..., str],
    mailbox: SmtpServer,
    clock: Clock,
) -> None:
    agent_id = make_agent(org, {"end_of_call": {"email": ["gone@example.test", "busy@example.test"]}})
    mailbox.refuse["gone@example.test"] = "550 5.1.1 no such user"
    mailbox.refuse["busy@example.test"] = "451 4.3.0 try again later"
    notify(app, org, agent_id, "end_of_call", {"call_id": "call_1"})
    by_target = {d["target"]: d for d in deliveries(client, org, agent_id)}
    gone, busy = by_target["gone@example.test"], by_target["busy@example.test"]
    assert (gone["status"], gone["attempts"], gone["last_response_code"]) == ("failed", 1, 550)
    assert "no such user" in gone["last_error"]
    assert (busy["status"], busy["attempts"], busy["last_response_code"]) == ("retrying", 1, 451)
    assert _at(busy["next_attempt_at"]) - _at(busy["last_attempt_at"]) == timedelta(seconds=RETRY_BASE)

    del mailbox.refuse["busy@example.test"]
    assert sweep(app) == 0  # not due yet
    clock.advance(timedelta(seconds=RETRY_BASE) + services.SWEEP_GRACE + timedelta(seconds=1))
    assert sweep(app) == 1
    retried = deliveries(client, org, agent_id, status="sent")
    assert [(d["target"], d["attempts"]) for d in retried] == [("busy@example.test", 2)]
    assert [r.recipients for r in mailbox.received] == [["busy@example.test"]]


# ----------------------------------------------------------------------------------------------- webhook


def test_webhook_is_signed_with_the_organizations_secret(
    app: Flask,
    client: FlaskClient,
    org: Org,
    other_org: Org,
    make_agent: Callable[..., str],
    receiver: WebhookReceiver,
) -> None:
    agent_id = make_agent(org, {"transfer_to_human": {"webhook": "https://hooks.example.test/x"}})
    set_notifications(app, org, agent_id, {"transfer_to_human": {"webhook": receiver.url("/hooks/agent")}})
    receiver.secret = _secret(client, org)
    assert _secret(client, other_org) != receiver.secret  # one secret per organization

    notify(app, org, agent_id, "transfer_to_human", TOOL_CALL)
    [request] = receiver.at("/hooks/agent")
    assert request.verified
    body = request.json
    assert body["type"] == "agent.notification" and body["trigger"] == "transfer_to_human"
    assert body["agent"] == {"id": agent_id, "name": "Sofía"}
    assert body["organization_id"] == org.id
    assert body["conversation_id"] == TOOL_CALL["conversation_id"]
    assert body["data"]["result"] == TOOL_CALL["result"]
    [delivery] = deliveries(client, org, agent_id)
    assert request.headers["Agentdesk-Delivery-Id"] == delivery["id"]
    assert (delivery["status"], delivery["last_response_code"]) == ("sent", 200)

    # a receiver holding another secret (or the body changed on the way) would reject it
    receiver.secret = _secret(client, other_org)
    receiver.received.clear()
    notify(app, org, agent_id, "transfer_to_human", TOOL_CALL)
    assert [r.verified for r in receiver.received] == [False]


def test_webhook_retries_with_exponential_backoff_then_gives_up(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_agent: Callable[..., str],
    receiver: WebhookReceiver,
    clock: Clock,
) -> None:
    agent_id = make_agent(org, {"end_of_call": {"webhook": "https://hooks.example.test/x"}})
    set_notifications(app, org, agent_id, {"end_of_call": {"webhook": receiver.url("/flaky")}})
    receiver.answers["/flaky"] = [503, 500, 502]
    notify(app, org, agent_id, "end_of_call", {"call_id": "call_1"})

    waits = []
    for expected_attempts in (1, 2):
        [delivery] = deliveries(client, org, agent_id)
        assert (delivery["status"], delivery["attempts"]) == ("retrying", expected_attempts)
        waits.append(_at(delivery["next_attempt_at"]) - _at(delivery["last_attempt_at"]))
        clock.advance(waits[-1] + services.SWEEP_GRACE + timedelta(seconds=1))
        assert sweep(app) == 1
    assert waits == [timedelta(seconds=RETRY_BASE), timedelta(seconds=2 * RETRY_BASE)]
    [delivery] = deliveries(client, org, agent_id)
    assert (delivery["status"], delivery["attempts"]) == ("failed", 3)  # NOTIFICATIONS_MAX_ATTEMPTS
    assert delivery["last_error"].startswith("http 502") and delivery["next_attempt_at"] is None
    assert len(receiver.at("/flaky")) == 3
    assert sweep(app) == 0

    # a supervisor sends it again by hand: a fresh attempt, now answered 200
    retried = client.post(
        mem(org, f"/members/{agent_id}/notifications/deliveries/{delivery['id']}/retry"),
        headers=org.headers(),
    )
    assert retried.status_code == 200
    [delivery] = deliveries(client, org, agent_id)
    assert (delivery["status"], delivery["attempts"]) == ("sent", 1)
    again = client.post(
        mem(org, f"/members/{agent_id}/notifications/deliveries/{delivery['id']}/retry"),
        headers=org.headers(),
    )
    assert again.status_code == 409
    assert again.get_json() == {"statusCode": 409, "message": "The notification was already delivered"}


def test_webhooks_to_plain_http_or_private_addresses_are_refused(
    app: Flask, client: FlaskClient, org: Org, make_agent: Callable[..., str], receiver: WebhookReceiver
) -> None:
    # a private address is refused when saved (tests/members/test_agent_config_webhooks.py); one stored
    # before that check existed is still refused at its delivery
    agent_id = make_agent(org, {"end_of_call": {"webhook": "https://hooks.example.test/x"}})
    set_notifications(app, org, agent_id, {"end_of_call": {"webhook": "https://10.0.0.8/hook"}})
    app.config["NOTIFICATIONS_ALLOW_HTTP_LOOPBACK"] = False
    notify(app, org, agent_id, "end_of_call", {"call_id": "call_1"})
    set_notifications(app, org, agent_id, {"end_of_call": {"webhook": receiver.url("/never")}})
    notify(app, org, agent_id, "end_of_call", {"call_id": "call_2"})
    errors = sorted(d["last_error"] for d in deliveries(client, org, agent_id))
    assert errors == [
        "address refused: 10.0.0.8 is not a public address",
        "address refused: only https webhooks are called",
    ]
    assert {d["status"] for d in deliveries(client, org, agent_id)} == {"failed"}
    assert receiver.received == []


# ----------------------------------------------------------------------------------------------- the log


def test_delivery_log_pages_filters_and_errors(
    app: Flask,
    client: FlaskClient,
    org: Org,
    other_org: Org,
    make_agent: Callable[..., str],
    mailbox: SmtpServer,
    commits: Any,
) -> None:
    agent_id = make_agent(
        org, {"end_of_call": {"email": ["a@example.test", "b@example.test", "c@example.test"]}}
    )
    notify(app, org, agent_id, "end_of_call", {"call_id": "call_1"})
    path = mem(org, f"/members/{agent_id}/notifications/deliveries")
    with commits() as counted:
        page = client.get(path, headers=org.headers(), query_string={"page": 2, "limit": 2}).get_json()
    assert counted.count == 0  # a read
    assert (page["total"], page["page"], page["limit"], len(page["data"])) == (3, 2, 2, 1)
    assert deliveries(client, org, agent_id, channel="webhook") == []
    assert len(deliveries(client, org, agent_id, status="sent", trigger="end_of_call")) == 3

    one = page["data"][0]
    got = client.get(f"{path}/{one['id']}", headers=org.headers())
    assert got.status_code == 200 and got.get_json() == one

    missing = client.get(mem(org, "/members/nobody/notifications/deliveries"), headers=org.headers())
    assert missing.status_code == 404
    assert missing.get_json() == {"statusCode": 404, "message": "No AI agent found"}
    # another organization's key
    foreign = client.get(path, headers=other_org.headers())
    assert foreign.status_code == 403
    assert client.get(f"{path}/{uuid.uuid4()}", headers=org.headers()).status_code == 404
    assert client.get(path, headers=org.headers(), query_string={"status": "lost"}).status_code == 400
