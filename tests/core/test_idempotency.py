"""``core.idempotency``: Stripe's ``Idempotency-Key`` rules, for any area (messaging's sends use it; the
route-level behaviour is in tests/messaging/test_send.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from flask import Flask
from sqlalchemy import func, select, update

from core.db import db, utcnow
from core.environments import in_environment
from core.errors import ApiError
from core.idempotency import IN_PROGRESS, OTHER_REQUEST, REPLAYED, IdempotencyKey, Outcome, run_idempotent

SCOPE = "org-1 POST /things"


def counting(status: int = 201, body: object = None) -> tuple[list[int], Callable[[], Outcome]]:
    runs: list[int] = []

    def action() -> Outcome:
        runs.append(1)
        return Outcome(status, body if body is not None else {"run": len(runs)})

    return runs, action


def test_the_same_key_and_body_replay_the_first_answer(app: Flask) -> None:
    runs, action = counting()
    with in_environment(app, "live"):
        first = run_idempotent(SCOPE, "k", {"a": 1, "b": 2}, action)
    with in_environment(app, "live"):
        again = run_idempotent(SCOPE, "k", {"b": 2, "a": 1}, action)  # key order does not matter
        assert again.response().headers[REPLAYED] == "true"
    assert (first.status, first.body, first.replayed) == (201, {"run": 1}, False)
    assert (again.status, again.body, again.replayed) == (201, {"run": 1}, True)
    assert len(runs) == 1


def test_another_body_is_409_and_scopes_are_apart(app: Flask) -> None:
    runs, action = counting()
    with in_environment(app, "live"):
        run_idempotent(SCOPE, "k", {"a": 1}, action)
    with in_environment(app, "live"), pytest.raises(ApiError) as refused:
        run_idempotent(SCOPE, "k", {"a": 2}, action)
    assert (refused.value.status, refused.value.message) == (409, OTHER_REQUEST)
    with in_environment(app, "live"):
        assert run_idempotent("org-2 POST /things", "k", {"a": 2}, action).status == 201
    assert len(runs) == 2


def test_a_key_whose_request_is_still_running_is_409(app: Flask) -> None:
    started, finish = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow() -> Outcome:
        runs.append(1)
        started.set()
        finish.wait(10)
        return Outcome(201, {"done": True})

    def first() -> None:
        with in_environment(app, "live"):
            run_idempotent(SCOPE, "busy", {}, slow)

    worker = threading.Thread(target=first)
    worker.start()
    try:
        assert started.wait(10)
        with in_environment(app, "live"), pytest.raises(ApiError) as refused:
            run_idempotent(SCOPE, "busy", {}, slow)
        assert (refused.value.status, refused.value.message) == (409, IN_PROGRESS)
    finally:
        finish.set()
        worker.join(10)
    with in_environment(app, "live"):
        assert run_idempotent(SCOPE, "busy", {}, slow).body == {"done": True}
    assert len(runs) == 1  # concurrent duplicates ran once


def test_client_errors_are_kept_and_their_work_is_dropped(app: Flask) -> None:
    runs: list[int] = []

    def refuse() -> Outcome:
        runs.append(1)
        db.session.add(IdempotencyKey(scope="work", key="written", request_hash="h"))  # the work's row
        db.session.flush()
        raise ApiError(400, "Nope", headers={"X-Thing-Id": "7"})

    for _ in range(2):
        with in_environment(app, "live"), pytest.raises(ApiError) as refused:
            run_idempotent(SCOPE, "bad", {}, refuse)
    assert (refused.value.status, refused.value.message) == (400, "Nope")
    assert refused.value.headers == {"X-Thing-Id": "7", REPLAYED: "true"}
    assert len(runs) == 1
    with app.app_context():
        assert db.session.scalar(select(func.count()).where(IdempotencyKey.scope == "work")) == 0


@pytest.mark.parametrize("status", [429, 500, 502])
def test_answers_a_retry_could_change_are_not_kept(app: Flask, status: int) -> None:
    runs: list[int] = []

    def flaky() -> Outcome:
        runs.append(1)
        if len(runs) == 1:
            raise ApiError(status, "Try again")
        return Outcome(201, {"ok": True})

    with in_environment(app, "live"), pytest.raises(ApiError):
        run_idempotent(SCOPE, "flaky", {}, flaky)
    with in_environment(app, "live"):
        assert run_idempotent(SCOPE, "flaky", {}, flaky).body == {"ok": True}
    assert len(runs) == 2


def test_keys_expire_after_24_hours(app: Flask) -> None:
    runs, action = counting()
    with in_environment(app, "live"):
        run_idempotent(SCOPE, "old", {"a": 1}, action)
    with app.app_context():
        db.session.execute(update(IdempotencyKey).values(created_at=utcnow() - timedelta(hours=25)))
        db.session.commit()
    with in_environment(app, "live"):
        # expired: the key starts over, even with another body
        assert run_idempotent(SCOPE, "old", {"a": 2}, action).body == {"run": 2}
    with in_environment(app, "live"):
        from core.idempotency import purge_expired

        assert purge_expired() == 0  # the new record is fresh
    assert len(runs) == 2


def test_keys_must_be_1_to_255_characters(app: Flask) -> None:
    _, action = counting()
    for key in (" ", "x" * 256):
        with in_environment(app, "live"), pytest.raises(ApiError) as refused:
            run_idempotent(SCOPE, key, {}, action)
        assert refused.value.status == 400 and refused.value.param == "Idempotency-Key"
    with in_environment(app, "live"):
        assert run_idempotent(SCOPE, None, {}, action).status == 201  # no key: it simply runs
