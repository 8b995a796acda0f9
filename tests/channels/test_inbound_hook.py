"""Inbound provider events flow one way: channels parse and hand them over through a hook; the messaging
area connects the receiver. Channels never import messaging."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient

from blueprints.channels.inbound import DeliveryReport, Event, InboundMessage, inbound_events
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text

CHANNELS = Path(__file__).resolve().parents[2] / "blueprints" / "channels"


def test_channels_never_import_messaging() -> None:
    imports = []
    for path in sorted(CHANNELS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("blueprints.messaging"):
                imports.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Import) and any(
                a.name.startswith("blueprints.messaging") for a in node.names
            ):
                imports.append(f"{path.name}:{node.lineno}")
    assert imports == []


def test_a_delivery_is_handed_over_one_entry_at_a_time(wa: Channel, deliver: Deliver) -> None:
    received: list[list[Event]] = []

    def receiver(*, events: list[Event]) -> DeliveryReport:
        received.append(events)
        return DeliveryReport(messages_created=len(events))

    payload = wa_delivery(
        wa_change(wa.address, messages=[wa_text("5215512345678", "a"), wa_text("5215512345678", "b")]),
        wa_change(wa.address, messages=[wa_text("5215587654321", "c")]),
        entries=2,
    )
    with inbound_events.only(receiver):
        response = deliver(payload)
    assert response.status_code == 200
    assert [len(item) for item in received] == [2, 1]
    assert all(isinstance(e, InboundMessage) for item in received for e in item)
    assert response.get_json()["messages_created"] == 3  # the receivers' reports, summed


def test_the_messaging_area_is_the_receiver(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    from blueprints.messaging.ingest import store_item

    assert store_item in inbound_events.receivers
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola")])))
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()
    assert [m["content"]["text"] for m in listed["data"]] == ["hola"]


def test_connected_services_lists_what_can_send(app: Flask, org: Org, wa: Channel, connect: Connect) -> None:
    from blueprints.channels.services import connected_services

    connect(org, "messenger", "104000000000002", "--provider", "simulator", token=None)
    connect(org, "instagram", "17841400000000002")
    with app.app_context():
        from blueprints.channels.models import OrganizationAddress
        from core.db import db

        db.session.query(OrganizationAddress).filter_by(service="instagram").update(
            {"status": "disconnected"}
        )
        db.session.commit()
        assert connected_services(uuid.UUID(org.id)) == ["messenger", "whatsapp"]
        assert connected_services(uuid.uuid4()) == []


def test_events_without_a_receiver_are_refused_so_they_come_again(
    app: Flask, wa: Channel, deliver: Deliver
) -> None:
    app.config["PROPAGATE_EXCEPTIONS"] = False
    with inbound_events.only(None):
        response = deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "x")])))
    assert response.status_code == 500  # Meta redelivers; a 200 would lose the messages
