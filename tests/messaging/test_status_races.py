"""Statuses racing each other and racing the send: whatever the order and concurrency, a message ends at
its furthest status with every timestamp, and a status that arrives before the send commits is applied.
Concurrency tests: run on both lanes (on SQLite writes serialize; the rules must still hold)."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.fakes.fixtures import APP_SECRET, Channel, Deliver
from tests.fakes.meta_graph import FakeMetaGraph
from tests.fakes.meta_webhooks import encode, now_seconds, sign, wa_change, wa_delivery, wa_status
from tests.messaging.helpers import CONTACT, get_message, open_window, send, text_body
from tests.support.stores import Stores

MESSAGES = 100
THREADS = 16


def _post_signed(app: Flask, payload: dict[str, Any]) -> int:
    """One delivery on its own client (its own request, session and connection), as Meta's would be."""
    body = encode(payload)
    response = app.test_client().post(
        "/webhooks/meta",
        data=body,
        headers={"Content-Type": "application/json", "X-Hub-Signature-256": sign(body, APP_SECRET)},
    )
    return response.status_code


def test_concurrent_sent_delivered_read_all_end_read_with_three_timestamps(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    open_window(deliver, wa)
    sent = []
    for n in range(MESSAGES):
        response = send(client, wa, text_body(wa, text=f"message {n}"))
        assert response.status_code == 201
        sent.append(response.get_json())
    deliveries = [
        wa_delivery(
            wa_change(
                wa.address,
                statuses=[wa_status(message["external_id"], status, CONTACT, timestamp=now_seconds(offset))],
            )
        )
        for message in sent
        for offset, status in ((1, "sent"), (2, "delivered"), (3, "read"))
    ]
    random.Random(14).shuffle(deliveries)
    with ThreadPoolExecutor(THREADS) as pool:
        answers = list(pool.map(lambda payload: _post_signed(app, payload), deliveries))
    assert answers == [200] * len(deliveries)
    wrong = []
    for message in sent:
        stored = get_message(client, wa, message["id"])
        if stored["current_status"] != "read" or not {"sent", "delivered", "read"} <= set(stored["status"]):
            wrong.append((stored["current_status"], sorted(stored["status"])))
    assert wrong == []


def test_a_status_posted_before_the_send_commits_is_applied(
    app: Flask,
    client: FlaskClient,
    wa: Channel,
    deliver: Deliver,
    meta: FakeMetaGraph,
    stores: Stores,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The webhook looks for the message while the send is between "provider answered" and its commit,
    and commits its backlog row only after the send looked at the backlog: one of the two sides must
    still apply the status (here the webhook, re-checking after its own commit)."""
    if stores.backend == "sqlite":
        pytest.skip("SQLite has one writer at a time: the webhook's uncommitted backlog row blocks the send")
    from blueprints.channels.meta import MetaProvider
    from blueprints.messaging import ingest

    open_window(deliver, wa)
    looked_up, send_done = threading.Event(), threading.Event()
    answers: list[int] = []
    real_send = MetaProvider.send
    real_uow = ingest.uow

    class HeldCheckpoint:
        """The webhook side: hold the item's commit until the send has finished."""

        def __getattr__(self, name: str) -> Any:
            return getattr(real_uow, name)

        def checkpoint(self, name: str) -> None:
            if threading.current_thread() is not threading.main_thread() and not looked_up.is_set():
                looked_up.set()
                assert send_done.wait(20)
            real_uow.checkpoint(name)

    def held_send(self: MetaProvider, address: Any, message: Any) -> Any:
        result = real_send(self, address, message)
        status = wa_delivery(
            wa_change(wa.address, statuses=[wa_status(result.external_id, "failed", CONTACT)])
        )
        worker = threading.Thread(target=lambda: answers.append(_post_signed(app, status)))
        worker.start()
        held_send.worker = worker  # type: ignore[attr-defined]
        assert looked_up.wait(20)  # the webhook found no message and wrote its backlog row, uncommitted
        return result

    monkeypatch.setattr(ingest, "uow", HeldCheckpoint())
    monkeypatch.setattr(MetaProvider, "send", held_send)
    response = send(client, wa, text_body(wa))
    send_done.set()
    held_send.worker.join(20)  # type: ignore[attr-defined]
    assert response.status_code == 201 and answers == [200]
    stored = get_message(client, wa, response.get_json()["id"])
    assert stored["current_status"] == "failed" and "failed" in stored["status"]
