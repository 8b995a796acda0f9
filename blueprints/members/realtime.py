"""Socket.IO wiring of presence: members connect with ``auth={"token": <JWT>}`` (subject = member id or
login user id); their connections keep their presence, with a grace period on disconnect."""

from __future__ import annotations

from typing import Any

from flask import current_app

from blueprints.members.services import heartbeat, presence  # noqa: F401  (heartbeat: the periodic sweep)
from core import realtime


def _authenticate(auth: dict[str, Any]) -> list[str] | None:
    return presence.authenticate_connection(auth)


def _disconnected(sid: str | None) -> None:
    presence.connection_closed(current_app._get_current_object(), sid)  # type: ignore[attr-defined]


def install() -> None:
    """Idempotent: both environments' apps call it; the Socket.IO server is shared."""
    realtime.add_connection_authenticator(_authenticate)
    realtime.add_disconnect_handler(_disconnected)
