"""What the desk pages need to know about the person signed in (read-only; sign-in itself is
``users.authenticate`` and ``users.start_sign_in``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select

from blueprints.members.models import DeskSignIn, Member, User
from blueprints.organizations.models import Organization
from core.db import db, utcnow


@dataclass(frozen=True)
class DeskIdentity:
    user_id: uuid.UUID
    organization_id: uuid.UUID
    organization_name: str
    organization_timezone: str
    member_id: str | None
    name: str
    email: str
    role: str
    # The open sign-in (desk_sign_ins row) the session and "remember me" cookie name.
    sign_in_id: uuid.UUID
    # The user's sign-in generation (users.session_version): a session made under another one has ended.
    session_version: int = 1
    # A password someone else chose: the desk shows only the change-password page until it is changed.
    must_change_password: bool = False


def desk_identity(user_id: uuid.UUID, sign_in_id: uuid.UUID) -> DeskIdentity | None:
    """The active user with this id, with their human member and organization, while ``sign_in_id`` is
    one of their sign-ins that has neither ended (signed out) nor expired: one query for the whole check,
    since it runs on every page request and every Socket.IO connection."""
    row = db.session.execute(
        select(User, Organization.name, Organization.timezone, Member.id)
        .join(Organization, Organization.id == User.organization_id)
        .join(
            DeskSignIn,
            (DeskSignIn.id == sign_in_id)
            & (DeskSignIn.user_id == User.id)
            & DeskSignIn.ended_at.is_(None)
            & (DeskSignIn.expires_at > utcnow()),
        )
        .outerjoin(Member, (Member.organization_id == User.organization_id) & (Member.user_id == User.id))
        .where(User.id == user_id, User.active.is_(True))
    ).first()
    if row is None:
        return None
    user, organization_name, organization_timezone, member_id = row
    return DeskIdentity(
        user_id=user.id,
        organization_id=user.organization_id,
        organization_name=organization_name,
        organization_timezone=organization_timezone or "UTC",
        member_id=member_id,
        name=user.name,
        email=user.email,
        role=user.role,
        session_version=user.session_version,
        sign_in_id=sign_in_id,
        must_change_password=bool(user.must_change_password),
    )
