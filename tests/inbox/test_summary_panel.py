"""The inbox side panel shows the conversation's summary: the automatic (extractive) one while the
conversation is linked to no deal, the one the CRM captured once it is linked, nothing without messages."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.crm import hooks
from blueprints.crm.hooks import Summary
from tests.conftest import Org
from tests.fakes.fixtures import PHONE_NUMBER_ID, Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.inbox.conftest import MakeConversation
from tests.support.desk_users import create_desk_user, sign_in

HX = {"HX-Request": "true"}
PHONE = "5215577770002"
SUMMARY = re.compile(r'<section aria-labelledby="summary-heading" data-summary>(.*?)</section>', re.S)


def _desk(app: Flask, runner: FlaskCliRunner, org: Org) -> FlaskClient:
    email = f"ana.{org.id[:6]}@example.test"
    create_desk_user(runner, org.id, email)
    return sign_in(app.test_client(), email)


def _panel_summary(desk: FlaskClient, conversation_id: str) -> str | None:
    response = desk.get(f"/inbox/c/{conversation_id}/panel", headers=HX)
    assert response.status_code == 200
    found = SUMMARY.search(response.get_data(as_text=True))
    return " ".join(found.group(1).split()) if found else None


def _crm(client: FlaskClient, org: Org, method: str, suffix: str, body: Any = None) -> Any:
    response = client.open(
        f"/v1/crm/organizations/{org.id}{suffix}", method=method, headers=org.headers(), json=body
    )
    assert response.status_code < 300, response.get_json()
    return response.get_json()


def test_the_panel_shows_the_automatic_then_the_captured_summary(
    app: Flask,
    client: FlaskClient,
    runner: FlaskCliRunner,
    org: Org,
    wa: Channel,
    deliver: Deliver,
) -> None:
    for text in (
        "Hola, quiero contratar el plan empresarial.",
        "Necesito el plan empresarial para 20 líneas.",
    ):
        deliver(wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[wa_text(PHONE, text)])))
    listed = client.get(f"/v2/messages/organizations/{org.id}/conversations", headers=org.headers())
    [conversation] = listed.get_json()["data"]
    desk = _desk(app, runner, org)

    automatic = _panel_summary(desk, conversation["id"])
    assert automatic is not None
    assert "2 messages (2 from the contact, 0 from the business)." in automatic
    assert "plan empresarial para 20 líneas" in automatic
    assert "Automatic summary of the messages so far" in automatic
    assert "Contact: Necesito el plan empresarial" in re.sub(r"<[^>]+>", "", automatic)
    # the automatic summary is written in the page's language (a captured one stays as it was captured)
    spanish = desk.get(f"/inbox/c/{conversation['id']}/panel", headers={**HX, "Accept-Language": "es"})
    found = SUMMARY.search(spanish.get_data(as_text=True))
    assert found is not None
    text = " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())
    assert "2 mensajes (2 del contacto, 0 del negocio)." in text and "Contacto: Necesito" in text

    pipeline = _crm(client, org, "GET", "/pipelines")["data"][0]
    deal = _crm(
        client,
        org,
        "POST",
        "/deals",
        {"name": "Plan empresarial", "pipeline_id": pipeline["id"], "stage_id": pipeline["stages"][0]["id"]},
    )
    captured = Summary("Rosa quiere el plan empresarial para 20 líneas.", "fake-model", 2)
    with hooks.conversation_summary.only(lambda **_: captured):
        _crm(
            client, org, "POST", f"/deals/{deal['id']}/conversations", {"conversation_id": conversation["id"]}
        )

    shown = _panel_summary(desk, conversation["id"])
    assert shown is not None
    assert "Rosa quiere el plan empresarial para 20 líneas." in shown
    assert f"Captured when linked to {deal['reference']}" in shown
    assert "Automatic summary" not in shown


def test_no_summary_without_messages_and_counts_both_sides(
    app: Flask, runner: FlaskCliRunner, org: Org, make_conversation: MakeConversation
) -> None:
    empty = make_conversation(org, messages=0)
    desk = _desk(app, runner, org)
    assert _panel_summary(desk, empty) is None
    talked = _panel_summary(desk, make_conversation(org, messages=2))
    assert talked is not None and "2 messages (1 from the contact, 1 from the business)." in talked
