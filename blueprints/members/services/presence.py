"""Presence: each member's status (online, offline, busy, away), its history and its live connections.

A status change is one transaction: the member row, a history row and a ``presence.updated`` event
delivered to the organization's Socket.IO room after the commit.

Connections (Socket.IO with a member's JWT) keep presence honest without flapping: when a member's last
connection drops, nothing changes at once; after ``PRESENCE_GRACE_SECONDS`` (default 30) a timer sets
the member ``offline`` if no connection came back and the drop is still the latest one. A member set
offline that way is marked ``auto_offline``; its next connection restores the status it had chosen.
Connections are rows in ``member_connections`` so every server process sees them.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import Flask, current_app
from sqlalchemy import delete, func, select

from blueprints.members.models import Member, MemberConnection, UnavailabilityReason
from blueprints.members.services import hooks
from blueprints.members.services.members import get_member, record_status_event
from core.db import db, isoformat, utcnow
from core.environments import in_environment
from core.errors import ApiError
from core.events import publish

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0


@dataclass(frozen=True)
class Availability:
    member: Member
    reason: UnavailabilityReason | None
    connected: bool
    active_conversations: int


def _reason_for(organization_id: uuid.UUID, reason_id: uuid.UUID | None) -> UnavailabilityReason | None:
    if reason_id is None:
        return None
    reason = db.session.scalar(
        select(UnavailabilityReason).where(
            UnavailabilityReason.organization_id == organization_id, UnavailabilityReason.id == reason_id
        )
    )
    if reason is None or not reason.active:
        raise ApiError(400, "reason_id: no active unavailability reason with this id")
    return reason


def _apply(
    member: Member,
    status: str,
    reason: UnavailabilityReason | None,
    *,
    changed_by: str,
    source: str,
    at: datetime | None = None,
) -> bool:
    """Set the visible status; record and publish the change. False when nothing changed."""
    reason_id = reason.id if reason else None
    if member.status == status and member.status_reason_id == reason_id:
        return False
    previous = member.status
    member.status = status
    member.status_reason_id = reason_id
    member.status_since = at or utcnow()
    record_status_event(
        member,
        from_status=previous,
        changed_by=changed_by,
        source=source,
        reason_name=reason.name if reason else None,
    )
    publish(
        "presence.updated",
        member.organization_id,
        {
            "member_id": member.id,
            "name": member.name,
            "ai": member.ai,
            "status": status,
            "previous_status": previous,
            "reason": {"id": str(reason.id), "name": reason.name} if reason else None,
            "since": isoformat(member.status_since),
            "changed_by": changed_by,
            "source": source,
        },
    )
    return True


def change_status(
    organization_id: uuid.UUID,
    member_id: str,
    status: str,
    reason_id: uuid.UUID | None = None,
    *,
    changed_by: str,
    at: datetime | None = None,
) -> Member:
    """The member chooses (or a supervisor sets) a status. ``at`` back-dates it (demo data, tests)."""
    member = get_member(organization_id, member_id)
    if status == "online" and reason_id is not None:
        raise ApiError(400, "reason_id: a reason is only given when the status is not online")
    reason = _reason_for(organization_id, reason_id)
    member.chosen_status = status
    member.chosen_reason_id = reason.id if reason else None
    member.auto_offline = False
    _apply(member, status, reason, changed_by=changed_by, source="api", at=at)
    db.session.commit()
    return member


def availabilities(
    organization_id: uuid.UUID,
    *,
    status: str | None = None,
    ai: bool | None = None,
    member_pks: list[uuid.UUID] | None = None,
) -> list[Availability]:
    """Every member's presence, its reason, whether it is connected and its conversation load: three
    queries and one call of the conversation counter, whatever the number of members."""
    statement = (
        select(Member, UnavailabilityReason)
        .outerjoin(UnavailabilityReason, UnavailabilityReason.id == Member.status_reason_id)
        .where(Member.organization_id == organization_id)
    )
    if status is not None:
        statement = statement.where(Member.status == status)
    if ai is not None:
        statement = statement.where(Member.ai == ai)
    if member_pks is not None:
        statement = statement.where(Member.pk.in_(member_pks))
    rows = list(db.session.execute(statement.order_by(Member.name, Member.id)))
    pks = [member.pk for member, _ in rows]
    connected = set()
    if pks:
        connected = set(
            db.session.scalars(
                select(MemberConnection.member_pk).where(MemberConnection.member_pk.in_(pks)).distinct()
            )
        )
    load = hooks.active_conversations(organization_id, [member.id for member, _ in rows])
    return [Availability(member, reason, member.pk in connected, load[member.id]) for member, reason in rows]


# ------------------------------------------------------------------------------------- connections

# sid -> (environment, member pk): the process that accepted a connection is the one that hears it end.
_local_connections: dict[str, tuple[str, uuid.UUID]] = {}
_lock = threading.Lock()


def grace_seconds() -> float:
    return float(current_app.config.get("PRESENCE_GRACE_SECONDS", DEFAULT_GRACE_SECONDS))


def member_connected(member: Member, sid: str, environment: str) -> None:
    """Record the connection; if the grace period had set the member offline, restore its choice."""
    now = utcnow()
    db.session.merge(MemberConnection(sid=sid, member_pk=member.pk, connected_at=now, last_seen_at=now))
    member.disconnected_at = None
    if member.auto_offline:
        member.auto_offline = False
        reason = (
            db.session.get(UnavailabilityReason, member.chosen_reason_id) if member.chosen_reason_id else None
        )
        _apply(member, member.chosen_status, reason, changed_by=f"member:{member.id}", source="reconnect")
    db.session.commit()
    with _lock:
        _local_connections[sid] = (environment, member.pk)
    from blueprints.members.services.heartbeat import ensure_heartbeat

    ensure_heartbeat(current_app._get_current_object())  # type: ignore[attr-defined]


def local_connections() -> dict[str, tuple[str, uuid.UUID]]:
    """The member sockets this process holds: sid -> (environment, member pk)."""
    with _lock:
        return dict(_local_connections)


def set_offline_by_system(member: Member, *, source: str) -> None:
    """Offline decided by the service (grace period over, connection gone); the member's choice is kept."""
    _apply(member, "offline", None, changed_by="system", source=source)


def connection_closed(app: Flask, sid: str | None) -> None:
    """Forget the connection; when it was the member's last one, start the grace timer."""
    with _lock:
        entry = _local_connections.pop(sid or "", None)
    if entry is None:
        return
    environment, member_pk = entry
    with in_environment(app, environment) as env_app:
        db.session.execute(delete(MemberConnection).where(MemberConnection.sid == sid))
        remaining = db.session.scalar(
            select(func.count()).select_from(MemberConnection).where(MemberConnection.member_pk == member_pk)
        )
        member = db.session.get(Member, member_pk)
        if member is None or remaining:
            db.session.commit()
            return
        dropped_at = utcnow()
        member.disconnected_at = dropped_at
        db.session.commit()
        delay = float(env_app.config.get("PRESENCE_GRACE_SECONDS", DEFAULT_GRACE_SECONDS))
    timer = threading.Timer(delay, _grace_expired, args=(app, environment, member_pk, dropped_at))
    timer.daemon = True
    timer.start()


def _grace_expired(app: Flask, environment: str, member_pk: uuid.UUID, dropped_at: datetime) -> None:
    try:
        with in_environment(app, environment):
            expire_grace(member_pk, dropped_at)
    except Exception:  # a timer thread has nobody to report to but the log
        log.exception("presence grace check failed for member %s", member_pk)


def expire_grace(member_pk: uuid.UUID, dropped_at: datetime) -> bool:
    """Set the member offline if it is still disconnected since ``dropped_at``. True when it did."""
    member = db.session.get(Member, member_pk)
    if member is None or member.disconnected_at is None or member.disconnected_at != dropped_at:
        return False  # reconnected (and maybe dropped again: a later timer owns that drop)
    connected = db.session.scalar(
        select(func.count()).select_from(MemberConnection).where(MemberConnection.member_pk == member_pk)
    )
    if connected or member.status == "offline":
        member.disconnected_at = None
        db.session.commit()
        return False
    member.auto_offline = True
    member.disconnected_at = None
    set_offline_by_system(member, source="grace_period")
    db.session.commit()
    return True


def authenticate_connection(auth: dict[str, Any]) -> list[str] | None:
    """Socket.IO authenticator for ``auth={"token": <JWT>}`` whose subject is a member (or a login user
    with a member): records the connection and returns the organization's room."""
    from flask import request

    from blueprints.members.models import User
    from blueprints.members.services.users import member_of_user
    from core.environments import ENVIRONMENTS
    from core.events import room_for
    from core.tokens import InvalidToken, decode_token

    token = auth.get("token") if isinstance(auth, dict) else None
    sid = getattr(request, "sid", None)
    if not token or not isinstance(token, str) or not sid:
        return None
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    for environment in ENVIRONMENTS:
        try:
            claims = decode_token(app.config["SECRET_KEY"], token, environment=environment)
        except InvalidToken:
            continue
        with in_environment(app, environment):
            organization_id = claims["org"]
            subject = str(claims["sub"])
            member = db.session.scalar(
                select(Member).where(Member.organization_id == organization_id, Member.id == subject)
            )
            if member is None:
                try:
                    user = db.session.get(User, uuid.UUID(subject))
                except ValueError:
                    user = None
                if user is not None and user.organization_id == organization_id and user.active:
                    member = member_of_user(user)
            if member is None:
                return None
            member_connected(member, sid, environment)
            return [room_for(environment, organization_id)]
    return None
