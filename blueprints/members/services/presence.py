"""Presence: each member's status (online, offline, busy, away), its history and its live connections.

A status change belongs to the caller's unit of work: the member row, a history row and a
``presence.updated`` event delivered to the organization's Socket.IO room after the commit.

Connections (Socket.IO with a member's JWT) keep presence honest without flapping: when a member's last
connection drops, nothing changes at once; after the grace period the member goes ``offline`` if no
connection came back and the drop is still the latest one. A member set offline that way is marked
``auto_offline``; its next connection restores the status it had chosen. Connections are rows in
``member_connections`` so every server process sees them. The sockets, the grace timers and the
heartbeat live in the realtime layer (``blueprints/members/realtime.py``), which calls the functions
below with plain values (a socket id, a member's key), each call inside its own unit of work.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select

from blueprints.members.models import Member, MemberConnection, UnavailabilityReason, User
from blueprints.members.services import hooks
from blueprints.members.services.members import find_member, get_member, record_status_event
from blueprints.members.services.users import member_of_user
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.events import publish
from core.tenancy import find_for_org


@dataclass(frozen=True)
class Availability:
    member: Member
    reason: UnavailabilityReason | None
    connected: bool
    active_conversations: int


def _reason_for(organization_id: uuid.UUID, reason_id: uuid.UUID | None) -> UnavailabilityReason | None:
    if reason_id is None:
        return None
    reason = find_for_org(UnavailabilityReason, reason_id, organization_id)
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
    db.session.flush()
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


def member_for_subject(organization_id: uuid.UUID, subject: str) -> Member | None:
    """The member a token's subject names: a member id, or the id of an active login user of the
    organization (then that user's member)."""
    member = find_member(organization_id, subject)
    if member is None:
        user = find_for_org(User, subject, organization_id)
        if user is not None and user.active:
            member = member_of_user(user)
    return member


def connect(member: Member, sid: str) -> None:
    """Record the connection ``sid``; if the grace period had set the member offline, restore its choice."""
    now = utcnow()
    db.session.merge(MemberConnection(sid=sid, member_pk=member.pk, connected_at=now, last_seen_at=now))
    member.disconnected_at = None
    if member.auto_offline:
        member.auto_offline = False
        reason = find_for_org(UnavailabilityReason, member.chosen_reason_id, member.organization_id)
        _apply(member, member.chosen_status, reason, changed_by=f"member:{member.id}", source="reconnect")
    db.session.flush()


def disconnect(organization_id: uuid.UUID, member_pk: uuid.UUID, sid: str) -> datetime | None:
    """Forget the connection ``sid``. When it was the member's last one, mark the drop and return its
    time: the caller sets the member offline with :func:`expire_grace` after the grace period."""
    db.session.execute(delete(MemberConnection).where(MemberConnection.sid == sid))
    remaining = db.session.scalar(
        select(func.count()).select_from(MemberConnection).where(MemberConnection.member_pk == member_pk)
    )
    member = find_for_org(Member, member_pk, organization_id)
    if member is None or remaining:
        return None
    dropped_at = utcnow()
    member.disconnected_at = dropped_at
    db.session.flush()
    return dropped_at


def set_offline_by_system(member: Member, *, source: str) -> None:
    """Offline decided by the service (grace period over, connection gone); the member's choice is kept."""
    _apply(member, "offline", None, changed_by="system", source=source)


def expire_grace(organization_id: uuid.UUID, member_pk: uuid.UUID, dropped_at: datetime) -> bool:
    """Set the member offline if it is still disconnected since ``dropped_at``. True when it did."""
    member = find_for_org(Member, member_pk, organization_id)
    if member is None or member.disconnected_at is None or member.disconnected_at != dropped_at:
        return False  # reconnected (and maybe dropped again: a later timer owns that drop)
    connected = db.session.scalar(
        select(func.count()).select_from(MemberConnection).where(MemberConnection.member_pk == member_pk)
    )
    member.disconnected_at = None
    if connected or member.status == "offline":
        return False
    member.auto_offline = True
    set_offline_by_system(member, source="grace_period")
    db.session.flush()
    return True
