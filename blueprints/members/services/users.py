"""Login users of the desk and their human members. Passwords are hashed with Argon2id (argon2-cffi)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from email_validator import EmailNotValidError, validate_email
from sqlalchemy import select, update

from blueprints.audit import services as audit_log
from blueprints.members.models import ROLES, DeskSignIn, Member, User
from blueprints.members.services.members import new_member_id, record_status_event
from blueprints.organizations.models import Organization
from core import uow
from core.db import db, utcnow
from core.errors import ApiError
from core.hooks import hook
from core.tenancy import get_for_org

MIN_PASSWORD_LENGTH = 8
_hasher = PasswordHasher()


@dataclass(frozen=True)
class CreatedUser:
    user: User
    member: Member


def normalize_email(raw: str) -> str:
    try:
        return validate_email(
            raw.strip(), check_deliverability=False, test_environment=True
        ).normalized.lower()
    except EmailNotValidError as exc:
        raise ApiError(400, f"email: not a valid e-mail address: {raw!r}") from exc


def create_user(
    organization_id: uuid.UUID,
    *,
    email: str,
    password: str,
    name: str,
    role: str = "agent",
    member_id: str | None = None,
) -> CreatedUser:
    """The user and its human member, in the caller's unit of work."""
    if db.session.get(Organization, organization_id) is None:
        raise ApiError(404, "No Organization found")
    if role not in ROLES:
        raise ApiError(400, f"role: must be one of {', '.join(ROLES)}")
    name = name.strip()
    if not name:
        raise ApiError(400, "name: must not be empty")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ApiError(400, f"password: at least {MIN_PASSWORD_LENGTH} characters")
    address = normalize_email(email)
    if find_user_by_email(address) is not None:
        raise ApiError(409, f"email: a user with e-mail {address} already exists")
    user = User(
        organization_id=organization_id,
        email=address,
        password_hash=_hasher.hash(password),
        name=name,
        role=role,
    )
    db.session.add(user)
    db.session.flush()
    now = utcnow()
    member = Member(
        id=member_id or new_member_id(),
        organization_id=organization_id,
        name=name,
        ai=False,
        user_id=user.id,
        extra={"email": address, "role": role},
        status="offline",
        chosen_status="offline",
        status_since=now,
    )
    db.session.add(member)
    db.session.flush()
    record_status_event(member, from_status=None, changed_by="cli", source="created")
    db.session.flush()
    audit_log.record(
        "member.created",
        "member",
        member.id,
        ["email", "name", "password", "role"],
        organization_id=organization_id,
    )
    return CreatedUser(user, member)


def find_user_by_email(email: str) -> User | None:
    # Addresses are stored lower-cased, so the unique index answers this lookup.
    return db.session.scalar(select(User).where(User.email == email.strip().lower()))


def authenticate(email: str, password: str) -> User | None:
    """The active user with this e-mail and password (for the desk's login page), else None."""
    user = find_user_by_email(email)
    if user is None or not user.active:
        _hasher.hash(password)  # spend the same time whether or not the user exists
        return None
    try:
        _hasher.verify(user.password_hash, password)
    except (VerificationError, InvalidHashError):
        return None
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = _hasher.hash(password)
    user.last_login_at = utcnow()  # committed by the login page's unit of work
    return user


def _user_of(organization_id: uuid.UUID, user_id: uuid.UUID) -> User:
    return get_for_org(User, user_id, organization_id, "User")


# The realtime layer closes the open desk sockets of a user whose sessions ended, in this process at once
# (blueprints/members/realtime.py); every other process finds them at its next session check.
sessions_ended = hook("members.sessions_ended", "fn(user_id) -> None, right after the commit that ended them")


def start_sign_in(user: User, *, remember: bool, lifetime: timedelta) -> DeskSignIn:
    """The server-side record of one desk sign-in (one browser), open for ``lifetime`` at most; its id
    goes into the session and the "remember me" cookie (blueprints/desk/security.py). Flushed, so the
    caller can read it back in the same unit of work."""
    now = utcnow()
    sign_in = DeskSignIn(
        id=uuid.uuid4(),
        organization_id=user.organization_id,
        user_id=user.id,
        created_at=now,
        expires_at=now + lifetime,
        remember=remember,
    )
    db.session.add(sign_in)
    db.session.flush()
    return sign_in


def end_sign_in(organization_id: uuid.UUID, user_id: uuid.UUID, sign_in_id: uuid.UUID) -> None:
    """Sign out of one browser: that sign-in ends (a copy of its session or remember cookie is refused
    from now on), the user's other sign-ins stay. Its open sockets close after the commit."""
    db.session.execute(
        update(DeskSignIn)
        .where(
            DeskSignIn.id == sign_in_id,
            DeskSignIn.user_id == user_id,
            DeskSignIn.organization_id == organization_id,
            DeskSignIn.ended_at.is_(None),
        )
        .values(ended_at=utcnow())
    )
    uow.after_commit(lambda: sessions_ended.answers(user_id=user_id))


def end_sessions(user: User) -> None:
    """Every desk session, "remember me" cookie and Socket.IO (re)connection made before ends: they
    carry the previous ``session_version`` (blueprints/desk/security.py), and every open sign-in of the
    user is marked ended (the generation alone would do; the rows then also say when each one ended).
    Sockets already open are closed after the commit (``sessions_ended``)."""
    user.session_version = (user.session_version or 1) + 1
    user_id = user.id
    db.session.execute(
        update(DeskSignIn)
        .where(DeskSignIn.user_id == user_id, DeskSignIn.ended_at.is_(None))
        .values(ended_at=utcnow())
    )
    uow.after_commit(lambda: sessions_ended.answers(user_id=user_id))


def sign_out_everywhere(organization_id: uuid.UUID, user_id: uuid.UUID) -> User:
    """The user's own "sign out everywhere": every browser they are signed in on is signed out (in the
    caller's unit of work)."""
    user = _user_of(organization_id, user_id)
    end_sessions(user)
    db.session.flush()
    return user


def live_sign_ins(sign_in_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, tuple[uuid.UUID, int]]:
    """Of ``sign_in_ids``, the sign-ins still open (not ended, not expired, their user active), each with
    its user and that user's current sign-in generation, in one query; the others are left out."""
    ids = sorted(set(sign_in_ids))
    if not ids:
        return {}
    rows = db.session.execute(
        select(DeskSignIn.id, User.id, User.session_version)
        .join(User, User.id == DeskSignIn.user_id)
        .where(
            DeskSignIn.id.in_(ids),
            DeskSignIn.ended_at.is_(None),
            DeskSignIn.expires_at > utcnow(),
            User.active.is_(True),
        )
    )
    return {sign_in_id: (user_id, int(version or 1)) for sign_in_id, user_id, version in rows}


def deactivate_user(organization_id: uuid.UUID, user_id: uuid.UUID) -> User:
    """The user can no longer sign in, and is signed out everywhere (in the caller's unit of work)."""
    user = _user_of(organization_id, user_id)
    user.active = False
    end_sessions(user)
    db.session.flush()
    audit_log.record("user.deactivated", "user", user.id, ["active"], organization_id=organization_id)
    return user


def change_password(organization_id: uuid.UUID, user_id: uuid.UUID, password: str) -> User:
    """A new password; every session signed in with the old one ends (in the caller's unit of work)."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ApiError(400, f"password: at least {MIN_PASSWORD_LENGTH} characters")
    user = _user_of(organization_id, user_id)
    user.password_hash = _hasher.hash(password)
    end_sessions(user)
    db.session.flush()
    audit_log.record("user.password_changed", "user", user.id, ["password"], organization_id=organization_id)
    return user


def member_of_user(user: User) -> Member | None:
    return db.session.scalar(
        select(Member).where(Member.organization_id == user.organization_id, Member.user_id == user.id)
    )
