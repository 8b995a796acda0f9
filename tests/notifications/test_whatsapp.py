"""WhatsApp notifications go through the organization's number (the fake Graph server receives them) while
the recipient's 24-hour window is open; without one the delivery fails with the reason."""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import Org
from tests.fakes.fixtures import (  # noqa: F401  (fixtures)
    Channel,
    Deliver,
    app_config,
    connect,
    deliver,
    meta,
    meta_server,
    wa,
)
from tests.fakes.meta_graph import FakeMetaGraph
from tests.messaging.helpers import CONTACT, CONTACT_E164, open_window
from tests.notifications.conftest import TOOL_CALL, deliveries, notify


def test_sent_through_the_number_with_an_open_window(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_agent: Callable[..., str],
    wa: Channel,  # noqa: F811
    deliver: Deliver,  # noqa: F811
    meta: FakeMetaGraph,  # noqa: F811
) -> None:
    agent_id = make_agent(org, {"transfer_to_human": {"whatsapp": [CONTACT_E164]}})
    open_window(deliver, wa)  # the supervisor wrote to the business number today
    notify(app, org, agent_id, "transfer_to_human", TOOL_CALL)

    [request] = meta.sends()
    assert request.path.endswith(f"/{wa.address}/messages")
    assert request.body["to"] == CONTACT and request.body["type"] == "text"
    text = request.body["text"]["body"]
    assert text.startswith("*Sofía* transferred to a human") and "Quiere hablar con ventas" in text
    [delivery] = deliveries(client, org, agent_id)
    assert (delivery["channel"], delivery["status"], delivery["attempts"]) == ("whatsapp", "sent", 1)


def test_without_an_open_window_it_fails_with_the_reason(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_agent: Callable[..., str],
    wa: Channel,  # noqa: F811
    meta: FakeMetaGraph,  # noqa: F811
) -> None:
    agent_id = make_agent(org, {"transfer_to_human": {"whatsapp": [CONTACT_E164]}})
    notify(app, org, agent_id, "transfer_to_human", TOOL_CALL)
    assert meta.sends() == []
    [delivery] = deliveries(client, org, agent_id)
    assert delivery["status"] == "failed" and delivery["attempts"] == 1
    assert delivery["last_error"] == (
        f"no open 24 h WhatsApp window with {CONTACT_E164}: they must first send a message to +525500000001"
    )


def test_an_organization_without_whatsapp_number(
    app: Flask, client: FlaskClient, org: Org, make_agent: Callable[..., str]
) -> None:
    agent_id = make_agent(org, {"end_of_call": {"whatsapp": [CONTACT_E164]}})
    notify(app, org, agent_id, "end_of_call", {"call_id": "call_1"})
    [delivery] = deliveries(client, org, agent_id)
    assert (delivery["status"], delivery["last_error"]) == (
        "failed",
        "the organization has no connected WhatsApp number",
    )
