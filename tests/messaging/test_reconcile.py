"""Sends interrupted by a crash after ``send.pending`` are reconciled: kept when the provider had them,
sent again when it never saw them, ``unknown`` when it cannot tell (Meta); their ``Idempotency-Key`` then
answers with the message as it now is instead of 409 "in progress" for 24 hours."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect, Deliver
from tests.fakes.meta_graph import FakeMetaGraph
from tests.messaging.helpers import get_message, open_window, send, text_body

SIM_ADDRESS = "106540352242999"


class Crash(BaseException):
    """The process dies: nothing of the request's own error handling runs (it is not an Exception)."""


@pytest.fixture
def sim(org: Org, connect: Connect) -> Channel:
    connect(org, "whatsapp", SIM_ADDRESS, "--provider", "simulator", token=None)
    return Channel(org, "whatsapp", SIM_ADDRESS)


def _crashing_send(client: FlaskClient, channel: Channel, key: str) -> dict[str, Any]:
    body = text_body(channel)
    with pytest.raises(Crash):
        send(client, channel, body, **{"Idempotency-Key": key})
    retry = send(client, channel, body, **{"Idempotency-Key": key})
    assert retry.status_code == 409  # the key is held by the dead request
    assert retry.get_json()["message"] == "A request with this Idempotency-Key is in progress"
    return body


def _reconcile(runner: FlaskCliRunner, *options: str) -> dict[str, list[str]]:
    result = runner.invoke(args=["messages", "reconcile", "--env", "live", "--json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["live"]


def _pending(client: FlaskClient, channel: Channel) -> dict[str, Any]:
    listed = client.get(channel.path("/messages?direction=outgoing"), headers=channel.org.headers())
    [message] = listed.get_json()["data"]
    return message


@pytest.mark.parametrize("crash", ["before_the_provider", "after_the_provider_answered"])
def test_a_crashed_simulator_send_is_resent_or_kept_and_its_key_answers(
    client: FlaskClient, sim: Channel, deliver: Deliver, runner: FlaskCliRunner, monkeypatch: Any, crash: str
) -> None:
    from blueprints.channels.simulator import SimulatorProvider

    open_window(deliver, sim)
    real_send = SimulatorProvider.send
    reached: list[str] = []

    def send_then_crash(self: SimulatorProvider, address: Any, message: Any) -> Any:
        if crash == "before_the_provider":
            raise Crash
        reached.append(message.reference)
        real_send(self, address, message)
        raise Crash

    monkeypatch.setattr(SimulatorProvider, "send", send_then_crash)
    body = _crashing_send(client, sim, "crash-1")
    pending = _pending(client, sim)
    assert pending["current_status"] == "pending" and pending["external_id"] is None

    def counting_send(self: SimulatorProvider, address: Any, message: Any) -> Any:
        reached.append(message.reference)
        return real_send(self, address, message)

    monkeypatch.setattr(SimulatorProvider, "send", counting_send)
    outcome = _reconcile(runner, "--older-than", "0")
    expected = "resent" if crash == "before_the_provider" else "accepted"
    assert outcome[expected] == [pending["id"]]
    assert reached == [pending["id"]]  # the provider got the message exactly once

    replay = send(client, sim, body, **{"Idempotency-Key": "crash-1"})
    assert replay.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"
    answered = replay.get_json()
    assert answered["id"] == pending["id"] and answered["external_id"]
    assert get_message(client, sim, pending["id"])["external_id"] == answered["external_id"]


def test_a_crashed_meta_send_is_marked_unknown_never_sent_twice(
    client: FlaskClient,
    wa: Channel,
    deliver: Deliver,
    runner: FlaskCliRunner,
    meta: FakeMetaGraph,
    monkeypatch: Any,
) -> None:
    from blueprints.channels.meta import MetaProvider

    open_window(deliver, wa)
    real_send = MetaProvider.send

    def send_then_crash(self: MetaProvider, address: Any, message: Any) -> Any:
        real_send(self, address, message)
        raise Crash  # Meta accepted it; we die before storing its id

    monkeypatch.setattr(MetaProvider, "send", send_then_crash)
    body = _crashing_send(client, wa, "crash-2")
    pending = _pending(client, wa)
    monkeypatch.setattr(MetaProvider, "send", real_send)

    outcome = _reconcile(runner, "--older-than", "0")
    assert outcome == {"accepted": [], "resent": [], "failed": [], "unknown": [pending["id"]]}
    assert len(meta.sends()) == 1  # Meta cannot tell whether it sent it: never sent again

    replay = send(client, wa, body, **{"Idempotency-Key": "crash-2"})
    assert replay.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"
    answered = replay.get_json()
    assert answered["id"] == pending["id"] and answered["current_status"] == "unknown"
    assert answered["status"]["error"]["code"] == "unknown_outcome"
    assert {"pending", "unknown"} <= set(answered["status"])
    text = runner.invoke(args=["messages", "reconcile", "--env", "live", "--older-than", "0"])
    assert "0 unknown" in text.output  # settled once: nothing left pending


def test_a_recent_pending_send_is_left_to_its_request(
    client: FlaskClient, wa: Channel, deliver: Deliver, runner: FlaskCliRunner, monkeypatch: Any
) -> None:
    from blueprints.channels.meta import MetaProvider

    open_window(deliver, wa)

    def crash(self: MetaProvider, address: Any, message: Any) -> Any:
        raise Crash

    monkeypatch.setattr(MetaProvider, "send", crash)
    _crashing_send(client, wa, "crash-3")
    assert _reconcile(runner) == {"accepted": [], "resent": [], "failed": [], "unknown": []}
    assert _pending(client, wa)["current_status"] == "pending"


def test_the_periodic_sweep_reconciles_stale_sends(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, monkeypatch: Any
) -> None:
    from blueprints.channels.meta import MetaProvider
    from blueprints.messaging import maintenance, sending
    from core import jobs
    from core.environments import in_environment

    assert any(fn is maintenance.reconcile_stale_sends for fn, _ in jobs._periodic.values())
    open_window(deliver, wa)

    def crash(self: MetaProvider, address: Any, message: Any) -> Any:
        raise Crash

    monkeypatch.setattr(MetaProvider, "send", crash)
    _crashing_send(client, wa, "crash-4")
    monkeypatch.setattr(sending, "PENDING_LIMIT", timedelta(0))
    with in_environment(app, "live"):
        maintenance.reconcile_stale_sends()
    assert _pending(client, wa)["current_status"] == "unknown"
