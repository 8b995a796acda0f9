"""Members (human agents and AI agents): the messaging area's member CRUD, and the lookups other areas
use to check a member id (``existing_member_ids``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select

from blueprints.audit import services as audit_log
from blueprints.members.models import Member, MemberStatusEvent
from blueprints.members.services import hooks
from core.db import db, utcnow
from core.errors import ApiError, not_found
from core.events import publish


def new_member_id() -> str:
    """A generated member id is a UUID in text form, the "member UUID" the CRM's member fields take;
    ids a client chooses stay free-form strings (MEMBER_ID_PATTERN)."""
    return str(uuid.uuid4())


def get_member(organization_id: uuid.UUID, member_id: str) -> Member:
    """The member ``member_id`` of this organization; 404 otherwise (also for another org's member)."""
    member = find_member(organization_id, member_id)
    if member is None:
        raise not_found("Member")
    return member


def find_member(organization_id: uuid.UUID, member_id: str) -> Member | None:
    # Member ids are unique per organization only (the surrogate key ``pk`` is the primary key), so
    # the lookup is by (organization, id) rather than core.tenancy's primary-key lookup.
    return db.session.scalar(
        select(Member).where(Member.organization_id == organization_id, Member.id == member_id)
    )


def members_by_ids(organization_id: uuid.UUID, member_ids: list[str]) -> dict[str, Member]:
    if not member_ids:
        return {}
    rows = db.session.scalars(
        select(Member).where(Member.organization_id == organization_id, Member.id.in_(set(member_ids)))
    )
    return {m.id: m for m in rows}


def existing_member_ids(organization_id: uuid.UUID, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` name a member (human or AI) of the organization, in one query. Deleted members
    are gone from the table, so they are never among them. Other areas check their member fields with it."""
    wanted = {i for i in ids if isinstance(i, str) and i}
    if not wanted:
        return set()
    return set(
        db.session.scalars(
            select(Member.id).where(Member.organization_id == organization_id, Member.id.in_(wanted))
        )
    )


def list_members(organization_id: uuid.UUID, *, skip: int, take: int) -> list[Member]:
    statement = (
        select(Member)
        .where(Member.organization_id == organization_id)
        .order_by(Member.created_at, Member.id)
        .offset(skip)
        .limit(take)
    )
    return list(db.session.scalars(statement))


def record_status_event(
    member: Member,
    *,
    from_status: str | None,
    changed_by: str,
    source: str,
    reason_name: str | None = None,
) -> MemberStatusEvent:
    event = MemberStatusEvent(
        organization_id=member.organization_id,
        member_id=member.id,
        member_name=member.name,
        from_status=from_status,
        to_status=member.status,
        reason_id=member.status_reason_id,
        reason_name=reason_name,
        changed_by=changed_by,
        source=source,
        at=member.status_since,
    )
    db.session.add(event)
    return event


def create_member(organization_id: uuid.UUID, fields: dict[str, Any], *, changed_by: str) -> Member:
    """``fields``: ``name``, ``ai`` and optionally ``id``, ``organization_id``, ``user_id``, ``picture``,
    ``extra``. Without an ``id`` the member gets a generated UUID."""
    if fields.get("organization_id") not in (None, organization_id):
        raise ApiError(400, "organization_id: must be the organization of the path")
    ai = bool(fields["ai"])
    member_id = fields.get("id") or new_member_id()
    if find_member(organization_id, member_id) is not None:
        raise ApiError(409, f"id: a member with id {member_id!r} already exists", code="member_exists")
    now = utcnow()
    # People start offline until they connect or set a status; AI agents are available from the start.
    status = "online" if ai else "offline"
    member = Member(
        id=member_id,
        organization_id=organization_id,
        name=fields["name"],
        ai=ai,
        user_id=fields.get("user_id"),
        picture=fields.get("picture"),
        extra=fields.get("extra") or {},
        status=status,
        chosen_status=status,
        status_since=now,
    )
    db.session.add(member)
    db.session.flush()
    record_status_event(member, from_status=None, changed_by=changed_by, source="created")
    publish("member.created", organization_id, {"member_id": member.id, "ai": member.ai})
    audit_log.record("member.created", "member", member.id, fields, organization_id=organization_id)
    db.session.flush()
    return member


def update_member(organization_id: uuid.UUID, member_id: str, fields: dict[str, Any]) -> Member:
    """Change the fields present in ``fields`` (``extra`` is replaced as a whole)."""
    member = get_member(organization_id, member_id)
    if fields.get("organization_id") not in (None, organization_id):
        raise ApiError(400, "organization_id: must be the organization of the path")
    if fields.get("id") not in (None, member.id):
        raise ApiError(400, "id: a member's id cannot be changed")
    for name in ("name", "ai", "user_id", "picture"):
        if name in fields:
            setattr(member, name, fields[name])
    if "extra" in fields:
        member.extra = fields["extra"] or {}
    publish("member.updated", organization_id, {"member_id": member.id, "fields": sorted(fields)})
    audit_log.record("member.updated", "member", member.id, fields, organization_id=organization_id)
    db.session.flush()  # the answer shows the new updated_at
    return member


def delete_member(organization_id: uuid.UUID, member_id: str) -> int:
    """Delete the member; its conversations stay assigned (the spec says so). Returns how many active
    conversations it still holds, so the caller knows what to reassign or archive."""
    member = get_member(organization_id, member_id)
    remaining = hooks.active_conversations(organization_id, [member.id])[member.id]
    db.session.delete(member)
    publish("member.deleted", organization_id, {"member_id": member_id, "active_conversations": remaining})
    audit_log.record("member.deleted", "member", member.id, organization_id=organization_id)
    db.session.flush()
    return remaining
