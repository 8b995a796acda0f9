"""``Idempotency-Key`` with Stripe's semantics, for any area's POST routes.

A client that may retry a request sends ``Idempotency-Key: <unique string>`` (1-255 characters):

- the same key with the same body replays the first answer, with ``Idempotent-Replayed: true``;
- the same key with another body is 409, and so is a retry while the first request is still running;
- answers a retry could change (429 and 5xx) are not kept, so the retry runs again;
- keys expire after 24 hours (:data:`TTL`); an hourly sweep deletes older ones.

A key belongs to a scope: the organization and the route (``<organization id> POST <url rule>``), so two
organizations, or two routes of one organization, never see each other's keys.

Concurrent duplicates run once: the key is reserved (checkpoint ``idempotency.claim``) before the work, so
a second request with the key finds it, or meets the unique constraint and then finds it. When the work
fails, its uncommitted changes are dropped and the key is released or answered (checkpoint
``idempotency.release``); when it succeeds the answer is stored in the request's own unit of work.

Use :func:`idempotent` on a view (under the area's ``auth.protect``), or :func:`run_idempotent` where the
scope is not a request's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flask import Response, jsonify, make_response, request
from sqlalchemy import Integer, String, UniqueConstraint, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from core import auth, uow
from core.db import JSONType, UUIDPrimaryKeyMixin, db, utcnow
from core.errors import ApiError
from core.jobs import periodic

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
TTL = timedelta(hours=24)
IN_PROGRESS = "A request with this Idempotency-Key is in progress"
OTHER_REQUEST = "Idempotency-Key was already used with a different request"
# Headers of a stored success that a replay repeats; the rest (length, type, dates) are the server's.
_NOT_REPLAYED = {"content-type", "content-length", "date", "server", "set-cookie"}


class IdempotencyKey(UUIDPrimaryKeyMixin, db.Model):
    """One key of one scope: the request's hash and, once answered, the answer to replay."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("scope", "key", name="uq_idempotency_keys_scope_key"),)

    scope: Mapped[str] = mapped_column(String(255))
    key: Mapped[str] = mapped_column(String(255))
    request_hash: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int | None] = mapped_column(Integer)
    response: Mapped[Any] = mapped_column(JSONType, nullable=True)
    response_headers: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


@dataclass
class Outcome:
    """An answer to give: the first one, or its replay (``replayed``)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    replayed: bool = False

    def response(self) -> Response:
        response = make_response(jsonify(self.body), self.status)
        for name, value in self.headers.items():
            response.headers[name] = value
        if self.replayed:
            response.headers[REPLAYED] = "true"
        return response


def request_hash(payload: Any) -> str:
    """The same parameters in any key order give the same hash."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _clean_key(key: str) -> str:
    key = key.strip()
    if not key or len(key) > 255:
        raise ApiError(400, f"{HEADER}: must be 1-255 characters", param=HEADER)
    return key


def _find(scope: str, key: str) -> IdempotencyKey | None:
    return db.session.scalar(
        select(IdempotencyKey)
        .where(IdempotencyKey.scope == scope, IdempotencyKey.key == key)
        .execution_options(populate_existing=True)
    )


def _replay(record: IdempotencyKey, digest: str) -> Outcome:
    if record.request_hash != digest:
        raise ApiError(409, OTHER_REQUEST, param=HEADER)
    if record.response_status is None:
        raise ApiError(409, IN_PROGRESS, param=HEADER)
    headers = {**(record.response_headers or {}), REPLAYED: "true"}
    if record.response_status >= 400:
        # re-raised so the area's error handler writes its own error body, as the first time
        raise ApiError(record.response_status, (record.response or {}).get("message"), headers=headers)
    return Outcome(
        record.response_status, record.response, dict(record.response_headers or {}), replayed=True
    )


def _claim(scope: str, key: str, digest: str) -> uuid.UUID | Outcome:
    """Reserve the key (committed, so a concurrent duplicate sees it), or the earlier request's answer."""
    record = _find(scope, key)
    if record is not None and record.created_at < utcnow() - TTL:
        db.session.delete(record)  # expired: the key starts over; the claim below commits the deletion
        db.session.flush()
        record = None
    if record is not None:
        return _replay(record, digest)
    claimed = IdempotencyKey(id=uuid.uuid4(), scope=scope, key=key, request_hash=digest)
    try:
        with db.session.begin_nested():
            db.session.add(claimed)
    except IntegrityError:  # the same key arrived twice at once: the other request owns it
        other = _find(scope, key)
        if other is None:
            raise ApiError(409, IN_PROGRESS, param=HEADER) from None
        return _replay(other, digest)
    uow.checkpoint("idempotency.claim")
    return claimed.id


def _release(claim_id: uuid.UUID, error: ApiError | None) -> None:
    """After failed work: drop what it did not commit, then keep its 4xx answer or free the key."""
    db.session.rollback()
    record = db.session.scalar(select(IdempotencyKey).where(IdempotencyKey.id == claim_id))
    if record is None:
        return
    if error is None or error.status == 429 or error.status >= 500:
        db.session.delete(record)  # a retry could succeed: let it run
    else:
        record.response_status = error.status
        record.response = {"message": error.message}
        record.response_headers = dict(error.headers)
    uow.checkpoint("idempotency.release")


def run_idempotent(scope: str, key: str | None, payload: Any, action: Callable[[], Outcome]) -> Outcome:
    """Run ``action`` once per (``scope``, ``key``); without a key it simply runs."""
    if key is None:
        return action()
    key = _clean_key(key)
    digest = request_hash(payload)
    claimed = _claim(scope, key, digest)
    if isinstance(claimed, Outcome):
        return claimed
    try:
        outcome = action()
    except ApiError as error:
        _release(claimed, error)
        raise
    except Exception:
        _release(claimed, None)
        raise
    if outcome.status == 429 or outcome.status >= 500:
        _release(claimed, None)
        return outcome
    record = db.session.scalar(select(IdempotencyKey).where(IdempotencyKey.id == claimed))
    if record is not None:  # stored in the request's own commit, with the work it answers
        record.response_status = outcome.status
        record.response = outcome.body
        record.response_headers = dict(outcome.headers)
    return outcome


def request_scope() -> str:
    """``<organization id> <METHOD> <url rule>`` of the current request."""
    rule = request.url_rule.rule if request.url_rule is not None else request.path
    return f"{auth.current_organization_id()} {request.method} {rule}"


def idempotent(view: Callable[..., Any]) -> Callable[..., Any]:
    """Honour ``Idempotency-Key`` on a view that answers JSON. The view returns a body, ``(body,
    status)`` or a JSON :class:`~flask.Response`; errors it raises as ``ApiError`` are kept (4xx) or not
    (429, 5xx) by the rules above. The request body is what is compared."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        def action() -> Outcome:
            response = make_response(view(*args, **kwargs))
            headers = {
                name: value for name, value in response.headers.items() if name.lower() not in _NOT_REPLAYED
            }
            return Outcome(response.status_code, response.get_json(silent=True), headers)

        payload = request.get_json(silent=True)
        outcome = run_idempotent(request_scope(), request.headers.get(HEADER), payload, action)
        return outcome.response()

    return wrapper


def settle(scope: str, key: str, status: int, body: dict[str, Any]) -> bool:
    """Answer a key whose work was left in progress (its request died) with the outcome found later, so a
    retry gets that answer instead of 409 "in progress". True when a waiting key was settled."""
    record = db.session.scalar(
        select(IdempotencyKey).where(
            IdempotencyKey.scope == scope, IdempotencyKey.key == key, IdempotencyKey.response_status.is_(None)
        )
    )
    if record is None:
        return False
    record.response_status = status
    record.response = body
    record.response_headers = {}
    return True


def purge_expired() -> int:
    """Delete keys older than :data:`TTL`; returns how many."""
    deleted = db.session.execute(delete(IdempotencyKey).where(IdempotencyKey.created_at < utcnow() - TTL))
    return int(deleted.rowcount or 0)


@periodic(minute="7")
def purge_expired_hourly() -> None:
    purge_expired()
