"""People of the desk: members (human and AI), login users, teams, presence and AI agent configuration.

Member ids are strings chosen by the client or generated (a UUID in text form, the "member UUID" other
areas' member fields take), unique within an organization. Other areas refer to a member by
``(organization_id, member id)`` without a foreign key; inside this area tables point at the member's
surrogate key ``members.pk`` so a custom id used by two organizations never collides.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column, relationship

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db, utcnow

STATUSES = ("online", "offline", "busy", "away")
ROLES = ("agent", "supervisor")
# A member id a client chooses: letters, digits and ``_ . : @ -``, 1 to 64, starting with a letter or digit.
MEMBER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$"


class User(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """A person who signs in to the desk. E-mail is unique in a store (it is the login name)."""

    __tablename__ = "users"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16), default="agent")
    active: Mapped[bool] = mapped_column(default=True)
    last_login_at: Mapped[datetime | None]
    # The generation of this user's sign-ins: stamped into the desk session and "remember me" cookie at
    # sign-in and bumped when the user is deactivated or changes password, which ends every session and
    # Socket.IO connection made before (blueprints/desk/security.py).
    session_version: Mapped[int] = mapped_column(default=1, server_default="1")
    # Set when someone else chose the password (a supervisor creating the user or resetting it): the desk
    # sends the user to change it before anything else; their own change clears it (services/users.py).
    must_change_password: Mapped[bool] = mapped_column(default=False, server_default=false())


class DeskSignIn(UUIDPrimaryKeyMixin, db.Model):
    """One sign-in to the desk (one browser): its id is in the session and the "remember me" cookie, and
    the desk accepts those only while this row is open. Signing out sets ``ended_at``, so a copied cookie
    is refused afterwards; ``expires_at`` bounds the sign-in on the server whatever cookie a browser keeps
    (blueprints/desk/security.py). Rows stay after they end: an audit of who signed in when."""

    __tablename__ = "desk_sign_ins"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
    remember: Mapped[bool] = mapped_column(default=False)


class Member(TimestampMixin, db.Model):
    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("organization_id", "id", name="uq_members_organization_id_id"),)

    pk: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    id: Mapped[str] = mapped_column(String(64))
    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    picture: Mapped[str | None] = mapped_column(String(2048))
    ai: Mapped[bool] = mapped_column(default=False, index=True)
    user_id: Mapped[uuid.UUID | None] = mapped_column(index=True)
    extra: Mapped[dict[str, Any]] = mapped_column(default=dict)

    # Presence. ``status`` is what others see; ``chosen_status`` what the member last asked for, restored
    # when a connection comes back after the grace period set them offline (``auto_offline``).
    status: Mapped[str] = mapped_column(String(16), default="offline", index=True)
    status_since: Mapped[datetime] = mapped_column(default=utcnow)
    status_reason_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("unavailability_reasons.id", ondelete="SET NULL"), index=True
    )
    chosen_status: Mapped[str] = mapped_column(String(16), default="offline")
    chosen_reason_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("unavailability_reasons.id", ondelete="SET NULL"), index=True
    )
    auto_offline: Mapped[bool] = mapped_column(default=False)
    # Set when the member's last connection dropped; the grace timer acts only if it is still the same.
    disconnected_at: Mapped[datetime | None]

    status_reason: Mapped[UnavailabilityReason | None] = relationship(
        foreign_keys=[status_reason_id], lazy="raise"
    )
    config: Mapped[AgentConfig | None] = relationship(
        back_populates="member", lazy="raise", passive_deletes=True
    )


class UnavailabilityReason(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "unavailability_reasons"
    __table_args__ = (UniqueConstraint("organization_id", "name_key", name="uq_unavailability_reasons_name"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(120))
    # Lower-cased name: "Lunch" and "lunch" are the same reason.
    name_key: Mapped[str] = mapped_column(String(120))
    description: Mapped[str | None] = mapped_column(Text)
    active: Mapped[bool] = mapped_column(default=True)


class MemberStatusEvent(UUIDPrimaryKeyMixin, db.Model):
    """One presence change. Kept when the member or the reason goes away: ids and names are copied."""

    __tablename__ = "member_status_events"
    __table_args__ = (Index("ix_member_status_events_org_member_at", "organization_id", "member_id", "at"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    member_id: Mapped[str] = mapped_column(String(64))
    member_name: Mapped[str] = mapped_column(String(200))
    from_status: Mapped[str | None] = mapped_column(String(16))
    to_status: Mapped[str] = mapped_column(String(16), index=True)
    reason_id: Mapped[uuid.UUID | None] = mapped_column(index=True)
    reason_name: Mapped[str | None] = mapped_column(String(120))
    changed_by: Mapped[str] = mapped_column(String(120))
    source: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class MemberConnection(db.Model):
    """A live Socket.IO connection of a member (one row per socket id), shared by every process."""

    __tablename__ = "member_connections"

    sid: Mapped[str] = mapped_column(String(64), primary_key=True)
    member_pk: Mapped[uuid.UUID] = mapped_column(ForeignKey("members.pk", ondelete="CASCADE"), index=True)
    connected_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Refreshed by the heartbeat of the process holding the socket; a row nobody refreshes belonged to a
    # process that died, and the sweep removes it (services/heartbeat.py).
    last_seen_at: Mapped[datetime | None] = mapped_column(index=True)


class Team(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "teams"
    __table_args__ = (UniqueConstraint("organization_id", "name_key", name="uq_teams_name"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(120))
    name_key: Mapped[str] = mapped_column(String(120))
    description: Mapped[str | None] = mapped_column(Text)


class TeamMember(db.Model):
    __tablename__ = "team_members"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True)
    member_pk: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("members.pk", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AgentConfig(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "agent_configs"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    member_pk: Mapped[uuid.UUID] = mapped_column(ForeignKey("members.pk", ondelete="CASCADE"), unique=True)
    sections: Mapped[dict[str, Any]] = mapped_column(default=dict)
    tools: Mapped[dict[str, Any]] = mapped_column(default=dict)
    voice: Mapped[str | None] = mapped_column(String(120))
    agent_type: Mapped[str] = mapped_column(String(64), default="generic")
    business_category: Mapped[str | None] = mapped_column(String(64), index=True)
    notifications: Mapped[dict[str, Any]] = mapped_column(default=dict)
    call_transfers: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    # The text sections' names in the prompt's order ([]: the default order; docs/members.md).
    section_order: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    version: Mapped[int] = mapped_column(Integer, default=0)

    member: Mapped[Member] = relationship(back_populates="config", lazy="raise")


class AgentConfigVersion(UUIDPrimaryKeyMixin, db.Model):
    """A configuration as it was after one change: the full snapshot (to restore) and the diff (to read)."""

    __tablename__ = "agent_config_versions"
    __table_args__ = (UniqueConstraint("config_id", "version", name="uq_agent_config_versions_version"),)

    config_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("agent_configs.id", ondelete="CASCADE"), index=True
    )
    version: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(16))  # create, replace, update, restore
    restored_from: Mapped[int | None] = mapped_column(Integer)
    snapshot: Mapped[dict[str, Any]] = mapped_column()
    diff: Mapped[dict[str, Any]] = mapped_column()
    changed_by: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
