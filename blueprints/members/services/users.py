"""Login users of the desk and their human members. Passwords are hashed with Argon2id (argon2-cffi).

A password someone else chose (a supervisor creating the user, or resetting the password) is marked
``must_change_password``: the desk sends the user to change it before any other page, and only the user's
own change (:func:`change_password`) clears the mark. Refusals carry a ``code`` and the ``param`` they
concern, so the desk's pages word them in the page's language by the field (the API answers the message).
"""

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
MAX_NAME_LENGTH = 200  # users.name and members.name
_hasher = PasswordHasher()


@dataclass(frozen=True)
class CreatedUser:
    user: User
    member: Member


@dataclass(frozen=True)
class DeskUserRow:
    """A desk user with its human member (None only for a user whose member was deleted)."""

    user: User
    member: Member | None


def normalize_email(raw: str) -> str:
    try:
        return validate_email(
            raw.strip(), check_deliverability=False, test_environment=True
        ).normalized.lower()
    except EmailNotValidError as exc:
        raise ApiError(
            400, f"email: not a valid e-mail address: {raw!r}", code="email_invalid", param="email"
        ) from exc


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ApiError(
            400,
            f"password: at least {MIN_PASSWORD_LENGTH} characters",
            code="password_too_short",
            param="password",
        )


def create_user(
    organization_id: uuid.UUID,
    *,
    email: str,
    password: str,
    name: str,
    role: str = "agent",
    member_id: str | None = None,
    must_change_password: bool = False,
) -> CreatedUser:
    """The user and its human member, in the caller's unit of work. ``must_change_password``: the password
    was chosen by someone else (a supervisor), and the user replaces it at first sign-in."""
    if db.session.get(Organization, organization_id) is None:
        raise ApiError(404, "No Organization found")
    if role not in ROLES:
        raise ApiError(400, f"role: must be one of {', '.join(ROLES)}", code="role_unknown", param="role")
    name = name.strip()
    if not name:
        raise ApiError(400, "name: must not be empty", code="name_required", param="name")
    if len(name) > MAX_NAME_LENGTH:
        raise ApiError(400, f"name: at most {MAX_NAME_LENGTH} characters", code="name_too_long", param="name")
    _check_password(password)
    address = normalize_email(email)
    if find_user_by_email(address) is not None:
        raise ApiError(
            409, f"email: a user with e-mail {address} already exists", code="email_taken", param="email"
        )
    user = User(
        organization_id=organization_id,
        email=address,
        password_hash=_hasher.hash(password),
        name=name,
        role=role,
        must_change_password=must_change_password,
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
        ["email", "name", "password", "role", *(["must_change_password"] if must_change_password else [])],
        organization_id=organization_id,
        before_after={"email": (None, address), "name": (None, name), "role": (None, role)},
    )
    return CreatedUser(user, member)


def desk_users(organization_id: uuid.UUID) -> list[DeskUserRow]:
    """Every desk user of the organization with its human member, by name (active ones and deactivated
    ones alike), in one query."""
    rows = db.session.execute(
        select(User, Member)
        .outerjoin(Member, (Member.organization_id == User.organization_id) & (Member.user_id == User.id))
        .where(User.organization_id == organization_id)
        .order_by(User.name, User.email)
    )
    return [DeskUserRow(user, member) for user, member in rows]


def find_user_by_email(email: str) -> User | None:
    # Addresses are stored lower-cased, so the unique index answers this lookup.
    return db.session.scalar(select(User).where(User.email == email.strip().lower()))


def authenticate(email: str, password: str) -> User | None:
    """The active user with this e-mail and password (for the desk's login page), else None."""
    user = find_user_by_email(email)
    if user is None or not user.active:
        _hasher.hash(password)  # spend the same time whether or not the user exists
        return None
    if not _verifies(user, password):
        return None
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = _hasher.hash(password)
    user.last_login_at = utcnow()  # committed by the login page's unit of work
    return user


def _verifies(user: User, password: str) -> bool:
    try:
        return bool(_hasher.verify(user.password_hash, password))
    except (VerificationError, InvalidHashError):
        return False


def _user_of(organization_id: uuid.UUID, user_id: uuid.UUID | str) -> User:
    """The organization's user, or 404 ``No User found`` (also for a malformed id or another org's)."""
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


def sign_in_remembered(sign_in_id: uuid.UUID) -> bool:
    """Whether this sign-in was made with "remember me" (a new one that replaces it keeps the choice)."""
    return bool(db.session.scalar(select(DeskSignIn.remember).where(DeskSignIn.id == sign_in_id)))


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


def deactivate_user(
    organization_id: uuid.UUID, user_id: uuid.UUID | str, *, by_user_id: uuid.UUID | None = None
) -> User:
    """The user can no longer sign in, and is signed out everywhere (in the caller's unit of work).
    ``by_user_id``: the desk user doing it, who cannot deactivate themselves (nobody could undo it)."""
    user = _user_of(organization_id, user_id)
    if by_user_id is not None and user.id == by_user_id:
        raise ApiError(409, "user_id: you cannot deactivate yourself", code="user_is_you", param="user_id")
    was_active = user.active
    user.active = False
    end_sessions(user)
    db.session.flush()
    audit_log.record(
        "user.deactivated",
        "user",
        user.id,
        ["active"],
        organization_id=organization_id,
        before_after={"active": (was_active, False)},
    )
    return user


def change_password(
    organization_id: uuid.UUID,
    user_id: uuid.UUID,
    password: str,
    *,
    current_password: str | None = None,
) -> User:
    """A new password; every session signed in with the old one ends (in the caller's unit of work).
    ``current_password``, when given (the user changing their own), must be the one stored. A password
    someone else chose (``must_change_password``) must be replaced by a different one; the change clears
    the mark."""
    user = _user_of(organization_id, user_id)
    _check_password(password)
    if current_password is not None and not _verifies(user, current_password):
        raise ApiError(
            400,
            "current_password: not the user's current password",
            code="password_wrong",
            param="current_password",
        )
    if user.must_change_password and _verifies(user, password):
        raise ApiError(
            400,
            "password: must differ from the password that was given",
            code="password_unchanged",
            param="password",
        )
    user.password_hash = _hasher.hash(password)
    changed = ["password", *(["must_change_password"] if user.must_change_password else [])]
    user.must_change_password = False
    end_sessions(user)
    db.session.flush()
    audit_log.record("user.password_changed", "user", user.id, changed, organization_id=organization_id)
    return user


def reset_password(organization_id: uuid.UUID, user_id: uuid.UUID | str, password: str) -> User:
    """A supervisor's (or an operator's) reset: the new password works at once, every session of the user
    ends, and the user must change it at their next sign-in (in the caller's unit of work)."""
    user = _user_of(organization_id, user_id)
    _check_password(password)
    user.password_hash = _hasher.hash(password)
    user.must_change_password = True
    end_sessions(user)
    db.session.flush()
    audit_log.record(
        "user.password_reset",
        "user",
        user.id,
        ["must_change_password", "password"],
        organization_id=organization_id,
    )
    return user


def member_of_user(user: User) -> Member | None:
    return db.session.scalar(
        select(Member).where(Member.organization_id == user.organization_id, Member.user_id == user.id)
    )
