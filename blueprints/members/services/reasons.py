"""Unavailability reasons ("Lunch", "Training"): why a member is busy, away or offline.

Lifecycle: a reason is created active; it can be renamed, deactivated (archived: members can no longer
choose it, the history and statistics keep it) and activated again. Deleting a reason that was ever used
(in the status history or as a member's current reason) deactivates it instead, so history and
statistics keep meaning; the history also copies the reason's name at the time of the change.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import exists, or_, select

from blueprints.audit import services as audit_log
from blueprints.members.models import Member, MemberStatusEvent, UnavailabilityReason
from core.db import db
from core.errors import ApiError
from core.events import publish
from core.tenancy import get_for_org

# The fields whose values the audit log keeps, before and after (none is a secret).
_KEPT = ("name", "description", "active")


def list_reasons(organization_id: uuid.UUID, *, active: bool | None = None) -> list[UnavailabilityReason]:
    statement = select(UnavailabilityReason).where(UnavailabilityReason.organization_id == organization_id)
    if active is not None:
        statement = statement.where(UnavailabilityReason.active == active)
    return list(db.session.scalars(statement.order_by(UnavailabilityReason.name_key)))


def get_reason(organization_id: uuid.UUID, reason_id: uuid.UUID | str) -> UnavailabilityReason:
    """The reason, or 404 (also for a malformed id or another organization's reason)."""
    return get_for_org(UnavailabilityReason, reason_id, organization_id, "Unavailability reason")


def _check_unique(organization_id: uuid.UUID, name: str, exclude: uuid.UUID | None = None) -> None:
    statement = select(UnavailabilityReason.id).where(
        UnavailabilityReason.organization_id == organization_id,
        UnavailabilityReason.name_key == name.lower(),
    )
    if exclude is not None:
        statement = statement.where(UnavailabilityReason.id != exclude)
    if db.session.scalar(statement) is not None:
        raise ApiError(
            409, f"name: a reason named {name!r} already exists", code="reason_exists", param="name"
        )


def create_reason(organization_id: uuid.UUID, fields: dict[str, Any]) -> UnavailabilityReason:
    name = fields["name"]
    _check_unique(organization_id, name)
    reason = UnavailabilityReason(
        organization_id=organization_id,
        name=name,
        name_key=name.lower(),
        description=fields.get("description"),
        active=fields.get("active", True),
    )
    db.session.add(reason)
    db.session.flush()
    publish("unavailable_reason.created", organization_id, {"reason_id": str(reason.id), "name": name})
    audit_log.record(
        "unavailable_reason.created",
        "unavailable_reason",
        reason.id,
        fields,
        organization_id=organization_id,
        before_after={name: (None, getattr(reason, name)) for name in _KEPT if name in fields},
    )
    return reason


def update_reason(
    organization_id: uuid.UUID, reason_id: uuid.UUID | str, fields: dict[str, Any]
) -> UnavailabilityReason:
    reason = get_reason(organization_id, reason_id)
    before = {name: getattr(reason, name) for name in _KEPT}
    if "name" in fields:
        _check_unique(organization_id, fields["name"], exclude=reason.id)
        reason.name = fields["name"]
        reason.name_key = fields["name"].lower()
    if "description" in fields:
        reason.description = fields["description"]
    if "active" in fields:
        reason.active = fields["active"]
    publish("unavailable_reason.updated", organization_id, {"reason_id": str(reason.id), "name": reason.name})
    audit_log.record(
        "unavailable_reason.updated",
        "unavailable_reason",
        reason.id,
        fields,
        organization_id=organization_id,
        before_after={
            name: (before[name], getattr(reason, name))
            for name in _KEPT
            if name in fields and before[name] != getattr(reason, name)
        },
    )
    db.session.flush()  # the answer shows the new updated_at
    return reason


def reason_in_use(organization_id: uuid.UUID, reason_id: uuid.UUID) -> bool:
    used_in_history = exists().where(
        MemberStatusEvent.organization_id == organization_id, MemberStatusEvent.reason_id == reason_id
    )
    used_now = exists().where(
        Member.organization_id == organization_id,
        or_(Member.status_reason_id == reason_id, Member.chosen_reason_id == reason_id),
    )
    return bool(db.session.scalar(select(or_(used_in_history, used_now))))


def delete_reason(organization_id: uuid.UUID, reason_id: uuid.UUID | str) -> tuple[uuid.UUID, bool]:
    """Delete an unused reason or deactivate one in use: (its id, whether it was deleted)."""
    reason = get_reason(organization_id, reason_id)
    reason_id = reason.id
    if reason_in_use(organization_id, reason.id):
        reason.active = False
        deleted = False
    else:
        db.session.delete(reason)
        deleted = True
    audit_log.record(
        "unavailable_reason.deleted",
        "unavailable_reason",
        reason_id,
        [] if deleted else ["active"],  # a reason in use is deactivated instead
        organization_id=organization_id,
    )
    publish(
        "unavailable_reason.deleted",
        organization_id,
        {"reason_id": str(reason_id), "deleted": deleted},
    )
    db.session.flush()
    return reason_id, deleted
