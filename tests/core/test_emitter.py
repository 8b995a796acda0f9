"""With a message queue, domain events are published from one emitter thread per process: in the order
they were committed, every one of them, without the committing thread waiting on Redis."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from core import realtime


def test_events_are_published_in_order_off_the_committing_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    published: list[tuple[str, Any, list[str], str]] = []

    def slow_publish(event: str, message: Any, to: list[str]) -> None:
        time.sleep(0.002)  # a Redis round trip
        published.append((event, message, to, threading.current_thread().name))

    monkeypatch.setattr(realtime.socketio, "emit", slow_publish)
    emitter = realtime._Emitter()
    for n in range(300):
        emitter.submit("message.created", {"n": n}, ["live:org:1"])
    published_when_submitted = len(published)
    assert emitter.flush(timeout=10)
    assert [message["n"] for _, message, _, _ in published] == list(range(300))
    assert {thread for *_, thread in published} == {"socketio-emitter"}
    assert published_when_submitted < 300  # the committer did not wait for the publishes


def test_a_failed_publish_does_not_stop_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    published: list[int] = []

    def flaky_publish(event: str, message: Any, to: list[str]) -> None:
        if message["n"] == 1:
            raise ConnectionError("Redis went away")
        published.append(message["n"])

    monkeypatch.setattr(realtime.socketio, "emit", flaky_publish)
    emitter = realtime._Emitter()
    for n in range(3):
        emitter.submit("message.created", {"n": n}, ["live:org:1"])
    assert emitter.flush(timeout=5)
    assert published == [0, 2]
