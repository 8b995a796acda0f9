"""Domain events reach the organization's Socket.IO room after commit, and never after a rollback."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask

from core.db import db
from core.environments import SANDBOX, environment_app
from core.events import publish, subscribe, subscribe_batch
from core.realtime import socketio
from tests.conftest import Org


def _events(client, name: str) -> list[dict]:
    return [packet["args"][0] for packet in client.get_received() if packet["name"] == name]


def test_event_is_delivered_to_the_organization_room_after_commit(
    app: Flask, org: Org, other_org: Org
) -> None:
    mine = socketio.test_client(app, auth={"api_key": org.live_key})
    theirs = socketio.test_client(app, auth={"api_key": other_org.live_key})
    assert mine.is_connected() and theirs.is_connected()
    with app.app_context():
        publish("thing.changed", uuid.UUID(org.id), {"value": 1})
        assert _events(mine, "thing.changed") == []  # nothing before the commit
        db.session.commit()
    [received] = _events(mine, "thing.changed")
    assert received["organization_id"] == org.id
    assert received["data"] == {"value": 1}
    assert received["type"] == "thing.changed"
    assert _events(theirs, "thing.changed") == []


def test_rolled_back_event_is_never_delivered(app: Flask, org: Org) -> None:
    listener = socketio.test_client(app, auth={"api_key": org.live_key})
    with app.app_context():
        publish("thing.changed", org.id, {"value": 2})
        db.session.rollback()
        db.session.commit()
    assert _events(listener, "thing.changed") == []


def test_bad_key_cannot_connect(app: Flask) -> None:
    client = socketio.test_client(app, auth={"api_key": "sk_live_wrong"})
    assert not client.is_connected()


def test_sandbox_events_stay_in_the_sandbox_room(app: Flask, org: Org) -> None:
    live_listener = socketio.test_client(app, auth={"api_key": org.live_key})
    sandbox_listener = socketio.test_client(app, auth={"api_key": org.sandbox_key})
    with environment_app(app, SANDBOX).app_context():
        publish("thing.changed", org.id, {"env": "sandbox"})
        db.session.commit()
    assert _events(live_listener, "thing.changed") == []
    assert _events(sandbox_listener, "thing.changed")[0]["data"] == {"env": "sandbox"}


def test_in_process_subscribers_hear_committed_events(app: Flask, org: Org) -> None:
    heard: list[str] = []
    subscribe("probe.subscribed", lambda event: heard.append(event.environment))
    with app.app_context():
        publish("probe.subscribed", org.id, {})
        db.session.commit()
    assert heard == ["live"]


def test_a_batch_subscriber_hears_each_committed_unit_once_with_all_its_events(app: Flask, org: Org) -> None:
    batches: list[list[int]] = []
    subscribe_batch("probe.batched", lambda events: batches.append([e.data["n"] for e in events]))
    with app.app_context():
        for n in range(3):
            publish("probe.batched", org.id, {"n": n})
        publish("probe.other", org.id, {"n": 99})
        db.session.commit()
        # a rolled-back unit is never heard, and does not leak into the next one
        publish("probe.batched", org.id, {"n": 10})
        db.session.rollback()
        publish("probe.batched", org.id, {"n": 20})
        db.session.commit()
    assert batches == [[0, 1, 2], [20]]


def test_events_published_while_a_batch_is_delivered_make_their_own(app: Flask, org: Org) -> None:
    heard: list[list[str]] = []

    def follow(events: list[Any]) -> None:
        heard.append([e.name for e in events])
        if events[0].name == "probe.first":
            publish("probe.second", org.id, {})
            publish("probe.second", org.id, {})

    subscribe_batch("probe.first", follow)
    subscribe_batch("probe.second", follow)
    with app.app_context():
        publish("probe.first", org.id, {})
        db.session.commit()
    assert heard == [["probe.first"], ["probe.second"], ["probe.second"]]
