"""Broadcasts through the fake Graph server: limits, address and template rules, per-recipient results,
cancel, and a 1,000-recipient send interrupted midway and resumed with every recipient sent once."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect
from tests.fakes.meta_graph import FakeMetaGraph
from tests.inbox.conftest import msg

BODY = "Hola {{name}}, tenemos una oferta para ti"


@pytest.fixture
def template(meta: FakeMetaGraph) -> dict[str, Any]:
    return meta.add_template(
        id="900000000000001", name="promo", language="es_MX", components=[{"type": "BODY", "text": BODY}]
    )


def named(name: str) -> list[dict[str, Any]]:
    return [{"type": "body", "parameters": [{"type": "text", "parameter_name": "name", "text": name}]}]


def numbers(count: int, start: int = 0) -> list[str]:
    return [f"+5255{index:08d}" for index in range(start, start + count)]


def body(channel: Channel, template_id: str, recipients: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "name": "Black Friday",
        "organization_address": channel.address,
        "meta_template_id": template_id,
        "components": named("cliente"),
        "recipients": [{"to": to} for to in recipients],
        "rate_per_second": 1000,
        **extra,
    }


def create(client: FlaskClient, org: Org, payload: dict[str, Any]):
    return client.post(msg(org, "/broadcasts"), json=payload, headers=org.headers())


def create_and_run(client: FlaskClient, org: Org, payload: dict[str, Any]) -> dict[str, Any]:
    """Create; the inline queue of the tests runs the job once the request committed, before it answers."""
    response = create(client, org, payload)
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert created["status"] == "sending"  # answered before the job starts, as with a real queue
    detail = client.get(msg(org, f"/broadcasts/{created['id']}"), headers=org.headers())
    return detail.get_json()


def test_broadcast_sends_to_every_recipient_and_reports_each(
    client: FlaskClient, org: Org, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    recipients = numbers(5)
    payload = body(wa, template["id"], recipients)
    payload["recipients"][0]["components"] = named("Ana")
    broadcast = create_and_run(client, org, payload)
    assert broadcast["status"] == "completed"
    assert broadcast["total"] == 5 and broadcast["counts"]["sent"] == 5
    assert broadcast["template_name"] == "promo"
    assert [r["state"] for r in broadcast["recipients"]] == ["sent"] * 5
    sends = meta.sends()
    assert sorted(s.body["to"] for s in sends) == sorted(r.lstrip("+") for r in recipients)
    first = next(s for s in sends if s.body["to"] == recipients[0].lstrip("+"))
    assert first.body["template"]["components"][0]["parameters"][0]["text"] == "Ana"
    listed = client.get(msg(org, "/conversations?is_broadcast=true"), headers=org.headers()).get_json()
    assert listed["total"] == 5
    by_id = client.get(
        msg(org, f"/conversations?broadcast_id={broadcast['id']}"), headers=org.headers()
    ).get_json()
    assert by_id["total"] == 5
    detail = client.get(msg(org, f"/broadcasts/{broadcast['id']}"), headers=org.headers()).get_json()
    assert all(r["message_id"] and r["conversation_id"] for r in detail["recipients"])
    page = client.get(msg(org, "/broadcasts"), headers=org.headers()).get_json()
    assert page["total"] == 1 and page["data"][0]["counts"]["sent"] == 5


def test_existing_conversations_are_not_marked_as_opened_by_the_broadcast(
    client: FlaskClient, org: Org, wa: Channel, deliver, template: dict[str, Any]
) -> None:
    from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text

    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215500000000", "hola")])))
    create(client, org, body(wa, template["id"], numbers(2)))
    assert (
        client.get(msg(org, "/conversations?is_broadcast=true"), headers=org.headers()).get_json()["total"]
        == 1
    )
    assert (
        client.get(msg(org, "/conversations?is_broadcast=false"), headers=org.headers()).get_json()["total"]
        == 1
    )


def test_limits_and_rules(
    client: FlaskClient,
    org: Org,
    wa: Channel,
    connect: Connect,
    meta: FakeMetaGraph,
    template: dict[str, Any],
) -> None:
    too_many = create(client, org, body(wa, template["id"], numbers(1001)))
    assert too_many.status_code == 400 and too_many.get_json()["message"].startswith("recipients:")
    assert meta.sends() == []
    empty = create(client, org, body(wa, template["id"], []))
    assert empty.status_code == 400
    unknown_address = create(
        client, org, {**body(wa, template["id"], numbers(1)), "organization_address": "000"}
    )
    assert unknown_address.status_code == 404
    assert unknown_address.get_json()["message"] == "Organization address not found"
    connect(org, "instagram", "17841400000000099")
    instagram = create(
        client, org, {**body(wa, template["id"], numbers(1)), "organization_address": "17841400000000099"}
    )
    assert instagram.status_code == 400 and "WhatsApp" in instagram.get_json()["message"]
    unnamed = body(wa, template["id"], numbers(1))
    unnamed["components"] = [{"type": "body", "parameters": [{"type": "text", "text": "x"}]}]
    missing_name = create(client, org, unnamed)
    assert (
        missing_name.status_code == 400 and missing_name.get_json()["message"] == "Parameter name is missing"
    )
    no_template = create(client, org, body(wa, "404404", numbers(1)))
    assert (
        no_template.status_code == 404
        and no_template.get_json()["message"] == "Failed to get template from Meta"
    )
    meta.add_template(
        id="900000000000002", name="draft", status="PENDING", components=[{"type": "BODY", "text": "x"}]
    )
    pending = create(client, org, body(wa, "900000000000002", numbers(1)))
    assert pending.status_code == 400 and "not approved" in pending.get_json()["message"]
    bad_number = create(client, org, body(wa, template["id"], ["123"]))
    assert bad_number.status_code == 400 and bad_number.get_json()["message"].startswith("recipients.0.to")
    assert meta.sends() == []


def test_failures_are_reported_per_recipient(
    client: FlaskClient, org: Org, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    recipients = numbers(3)
    meta.undeliverable.add(recipients[1].lstrip("+"))
    broadcast = create_and_run(client, org, body(wa, template["id"], recipients))
    states = {r["to"]: r["state"] for r in broadcast["recipients"]}
    assert states == {recipients[0]: "sent", recipients[1]: "failed", recipients[2]: "sent"}
    failed = next(r for r in broadcast["recipients"] if r["state"] == "failed")
    assert failed["error"]["message"]
    assert broadcast["status"] == "completed"


def test_duplicate_recipients_are_sent_once(
    client: FlaskClient, org: Org, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    broadcast = create(
        client, org, body(wa, template["id"], ["+5215500000001", "5215500000001", "+52 1 55 0000 0001"])
    ).get_json()
    assert broadcast["total"] == 1
    assert len(meta.sends()) == 1


def _stop_after(monkeypatch: pytest.MonkeyPatch, sends: int) -> None:
    """Make the worker die after ``sends`` messages, just after claiming the next recipient."""
    from blueprints.inbox.services import broadcasts

    original = broadcasts.send_template
    done = {"count": 0}

    class WorkerDied(Exception):
        pass

    def dying_send(organization_id: uuid.UUID, payload: Any) -> Any:
        if done["count"] >= sends:
            raise WorkerDied("killed")
        done["count"] += 1
        return original(organization_id, payload)

    monkeypatch.setattr(broadcasts, "send_template", dying_send)


def test_a_thousand_recipients_interrupted_and_resumed_each_sent_exactly_once(
    app: Flask,
    client: FlaskClient,
    org: Org,
    wa: Channel,
    meta: FakeMetaGraph,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from blueprints.inbox.services import broadcasts

    recipients = numbers(1000)
    _stop_after(monkeypatch, 437)
    # the inline queue runs the job inside this request; the queue logs the "crash" and the request answers
    assert create(client, org, body(wa, template["id"], recipients)).status_code == 201
    assert len(meta.sends()) == 437
    with app.app_context():
        [broadcast_id] = [b.id for b in broadcasts.list_broadcasts(uuid.UUID(org.id)).items]
    detail = client.get(msg(org, f"/broadcasts/{broadcast_id}"), headers=org.headers()).get_json()
    assert detail["status"] == "sending"
    assert (
        detail["counts"]["sent"] == 437
        and detail["counts"]["sending"] == 1
        and detail["counts"]["queued"] == 562
    )

    monkeypatch.undo()
    result = app.test_cli_runner().invoke(args=["broadcasts", "resume", "--older-than", "0"])
    assert result.exit_code == 0, result.output
    detail = client.get(msg(org, f"/broadcasts/{broadcast_id}"), headers=org.headers()).get_json()
    assert detail["status"] == "completed"
    assert detail["counts"]["sent"] == 1000
    sent_to = Counter(s.body["to"] for s in meta.sends())
    assert len(sent_to) == 1000 and set(sent_to.values()) == {1}
    assert sorted(sent_to) == sorted(r.lstrip("+") for r in recipients)


def test_cancel_stops_the_rest(
    client: FlaskClient,
    org: Org,
    wa: Channel,
    meta: FakeMetaGraph,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _stop_after(monkeypatch, 2)
    create(client, org, body(wa, template["id"], numbers(10)))
    [broadcast] = client.get(msg(org, "/broadcasts"), headers=org.headers()).get_json()["data"]
    canceled = client.post(msg(org, f"/broadcasts/{broadcast['id']}/cancel"), headers=org.headers())
    assert canceled.status_code == 200
    assert canceled.get_json()["status"] == "canceled"
    assert canceled.get_json()["counts"]["canceled"] == 7
    monkeypatch.undo()
    client.application.test_cli_runner().invoke(args=["broadcasts", "resume", "--older-than", "0"])
    assert len(meta.sends()) == 2
    again = client.post(msg(org, f"/broadcasts/{broadcast['id']}/cancel"), headers=org.headers())
    assert again.status_code == 409


def test_other_organization_cannot_see_a_broadcast(
    client: FlaskClient, org: Org, other_org: Org, wa: Channel, template: dict[str, Any]
) -> None:
    broadcast = create(client, org, body(wa, template["id"], numbers(1))).get_json()
    assert (
        client.get(msg(other_org, f"/broadcasts/{broadcast['id']}"), headers=other_org.headers()).status_code
        == 404
    )
    assert (
        client.get(msg(org, f"/broadcasts/{broadcast['id']}"), headers=other_org.headers()).status_code == 403
    )


def test_a_resume_racing_a_live_worker_sends_each_recipient_once(
    app: Flask,
    client: FlaskClient,
    org: Org,
    wa: Channel,
    meta: FakeMetaGraph,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The live worker is mid-send (recipient claimed, provider not answered yet) when a resume with
    ``--older-than 0`` starts: the resume must not take that recipient, nor any other."""
    import threading

    from blueprints.inbox.services import broadcasts
    from core.environments import LIVE, in_environment

    recipients = numbers(6)
    original = broadcasts.send_template
    in_flight, go_on = threading.Event(), threading.Event()

    def slow_send(organization_id: uuid.UUID, payload: Any) -> Any:
        if payload.to == recipients[2] and not go_on.is_set():
            in_flight.set()
            assert go_on.wait(10)
        return original(organization_id, payload)

    # create it without running it: the job is what the test starts by hand
    monkeypatch.setattr(broadcasts.run_broadcast_job, "enqueue", lambda *args: None)
    monkeypatch.setattr(broadcasts, "send_template", slow_send)
    broadcast_id = create(client, org, body(wa, template["id"], recipients)).get_json()["id"]
    errors: list[BaseException] = []

    def live_worker() -> None:
        try:
            with in_environment(app, LIVE):
                broadcasts.run_broadcast(uuid.UUID(org.id), broadcast_id)
        except BaseException as error:  # reported below
            errors.append(error)

    worker = threading.Thread(target=live_worker)
    worker.start()
    assert in_flight.wait(10)
    monkeypatch.undo()  # the resumer sends normally (and enqueues for real)
    resumed = app.test_cli_runner().invoke(args=["broadcasts", "resume", "--older-than", "0"])
    assert resumed.exit_code == 0, resumed.output
    assert "live: resumed 1 broadcast(s)" in resumed.output  # resumed, and it found the lease held
    go_on.set()
    worker.join(20)
    assert not errors, errors
    detail = client.get(msg(org, f"/broadcasts/{broadcast_id}"), headers=org.headers()).get_json()
    assert detail["status"] == "completed" and detail["counts"]["sent"] == 6
    sent_to = Counter(s.body["to"] for s in meta.sends())
    assert set(sent_to.values()) == {1} and len(sent_to) == 6
