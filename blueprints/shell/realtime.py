"""The desk's Socket.IO connections: a browser connects with its sign-in session, nothing else.

The page passes ``auth={"desk": "<environment>"}``; the connection is accepted only when that
environment's session cookie names an open sign-in of an active user, and joins only the rooms of that
user's organization (conversation rooms are joined later through ``join_conversation``, which checks
the conversation). The member's presence follows the connection (members area).
"""

from __future__ import annotations

from typing import Any

from flask import current_app, request

from blueprints.desk.security import identity_of_session
from blueprints.members import realtime as members_realtime
from core.environments import ENVIRONMENTS, environment_app, in_environment


def _session_user_id(environment: str) -> str | None:
    target = environment_app(current_app._get_current_object(), environment)  # type: ignore[attr-defined]
    session = target.session_interface.open_session(target, request)
    user_id = session.get("_user_id") if session is not None else None
    return str(user_id) if user_id else None


def authenticate_desk_socket(*, auth: dict[str, Any]) -> list[str] | None:
    environment = auth.get("desk") if isinstance(auth, dict) else None
    if environment not in ENVIRONMENTS:
        return None
    user_id = _session_user_id(environment)
    if user_id is None:
        return None
    # The pages' own check (blueprints/desk/security.py): a session that was signed out or expired, of a
    # deactivated user, or from before a password change, cannot (re)connect.
    with in_environment(current_app._get_current_object(), environment):  # type: ignore[attr-defined]
        identity = identity_of_session(user_id)
    if identity is None or identity.member_id is None or identity.must_change_password:
        return None  # no desk yet for a user who must change the password first
    return members_realtime.hold_connection(
        environment,
        identity.organization_id,
        identity.member_id,
        session=members_realtime.DeskSession(identity.user_id, identity.session_version, identity.sign_in_id),
    )
