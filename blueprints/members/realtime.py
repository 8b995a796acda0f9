"""The members area's Socket.IO layer: member connections, the grace timers and the heartbeat.

Members connect with ``auth={"token": <JWT>}`` (subject = member id or login user id). This module is
the only one of the area that knows about sockets and threads: it reads the socket id, keeps which
sockets this process holds, starts the grace timer when a member's last connection drops and the
heartbeat thread that keeps this process's connections fresh. The rules themselves are plain service
functions (``services/presence.py``, ``services/heartbeat.py``), each called inside its own unit of work
(``core.environments.in_environment``), which commits when the block ends: a connection is durable
before the socket is told it joined, and a drop is recorded before its timer starts.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import Flask, current_app, request

from blueprints.members.services import heartbeat, presence, users
from core import realtime
from core.environments import ENVIRONMENTS, in_environment
from core.events import room_for
from core.tokens import InvalidToken, decode_token

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0
DEFAULT_HEARTBEAT_SECONDS = 20.0
DEFAULT_SESSION_CHECK_SECONDS = 5.0


@dataclass(frozen=True)
class DeskSession:
    """What a desk socket was accepted under: closed once this sign-in or this generation has ended."""

    user_id: uuid.UUID
    session_version: int
    sign_in_id: uuid.UUID


@dataclass(frozen=True)
class HeldConnection:
    """A member socket this process accepted: only this process hears it close."""

    environment: str
    organization_id: uuid.UUID
    member_pk: uuid.UUID
    session: DeskSession | None = None  # None for a member's JWT, which no sign-out ends


_local_connections: dict[str, HeldConnection] = {}
_lock = threading.Lock()
_heartbeat_apps: dict[int, Flask] = {}  # the apps whose heartbeat runs in this process, by id
_heartbeat_lock = threading.Lock()


def local_connections() -> dict[str, HeldConnection]:
    """The member sockets this process holds, by socket id."""
    with _lock:
        return dict(_local_connections)


def _app() -> Flask:
    return current_app._get_current_object()  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------- connect, disconnect


def hold_connection(
    environment: str,
    organization_id: uuid.UUID,
    member_id: str,
    *,
    session: DeskSession | None = None,
) -> list[str] | None:
    """Record the current socket as a connection of the member (durable before the socket is told it
    joined) and return the rooms it joins; None when no such member exists. A desk socket passes its
    ``session``: it is closed when that sign-in ends (signed out, expired) or the user's sessions do."""
    sid = getattr(request, "sid", None)
    if not sid:
        return None
    app = _app()
    with in_environment(app, environment):
        member = presence.member_for_subject(organization_id, member_id)
        if member is None:
            return None
        presence.connect(member, sid)
        held = HeldConnection(environment, organization_id, member.pk, session)
    with _lock:
        _local_connections[sid] = held
    ensure_heartbeat(app)
    return [room_for(environment, organization_id)]


def authenticate_member_socket(*, auth: dict[str, Any]) -> list[str] | None:
    """Socket.IO authenticator for a member's JWT: records the connection and returns the organization's
    room, or None to let another authenticator (or the refusal) decide."""
    token = auth.get("token") if isinstance(auth, dict) else None
    if not token or not isinstance(token, str):
        return None
    app = _app()
    for environment in ENVIRONMENTS:
        try:
            claims = decode_token(app.config["SECRET_KEY"], token, environment=environment)
        except InvalidToken:
            continue
        return hold_connection(environment, uuid.UUID(str(claims["org"])), str(claims["sub"]))
    return None


def connection_dropped(*, sid: str | None) -> None:
    """Forget the socket; when it was the member's last connection, start the grace timer."""
    with _lock:
        held = _local_connections.pop(sid or "", None)
    if held is None or sid is None:
        return
    app = _app()
    with in_environment(app, held.environment) as env_app:
        dropped_at = presence.disconnect(held.organization_id, held.member_pk, sid)
        delay = float(env_app.config.get("PRESENCE_GRACE_SECONDS", DEFAULT_GRACE_SECONDS))
    if dropped_at is not None:  # started after the drop was committed, so the timer always sees it
        timer = threading.Timer(delay, _grace_expired, args=(app, held, dropped_at))
        timer.daemon = True
        timer.start()


def _grace_expired(app: Flask, held: HeldConnection, dropped_at: datetime) -> None:
    try:
        with in_environment(app, held.environment):
            presence.expire_grace(held.organization_id, held.member_pk, dropped_at)
    except Exception:  # a timer thread has nobody to report to but the log
        log.exception("presence grace check failed for member %s", held.member_pk)


# ------------------------------------------------------------------------------------------- heartbeat


def beat(app: Flask) -> int:
    """Refresh ``last_seen_at`` of this process's connections; returns how many rows it touched."""
    by_environment: dict[str, list[str]] = defaultdict(list)
    for sid, held in local_connections().items():
        by_environment[held.environment].append(sid)
    touched = 0
    for environment, sids in by_environment.items():
        with in_environment(app, environment):
            touched += heartbeat.refresh_connections(sids)
    return touched


def close_ended_sessions(app: Flask) -> list[str]:
    """Close this process's desk sockets whose sign-in ended (signed out, expired, user deactivated,
    password changed; one query per environment); returns their socket ids. The socket's own disconnect
    handler then forgets it and starts the presence grace timer, as for a closed tab."""
    by_environment: dict[str, dict[str, DeskSession]] = defaultdict(dict)
    for sid, held in local_connections().items():
        if held.session is not None:
            by_environment[held.environment][sid] = held.session
    ended: list[str] = []
    for environment, sessions in by_environment.items():
        with in_environment(app, environment):
            live = users.live_sign_ins(session.sign_in_id for session in sessions.values())
        ended += [
            sid
            for sid, session in sessions.items()
            if live.get(session.sign_in_id) != (session.user_id, session.session_version)
        ]
    for sid in ended:
        realtime.socketio.server.disconnect(sid, namespace="/", ignore_queue=True)
    return ended


def close_sockets_of_ended_sessions(*, user_id: uuid.UUID) -> None:
    """After the commit that ended a user's sessions: close their sockets held by this process now."""
    with _heartbeat_lock:
        apps = list(_heartbeat_apps.values())
    for app in apps:
        try:
            close_ended_sessions(app)
        except Exception:  # the next session check closes them; the change itself is committed
            log.exception("closing the sockets of ended sessions failed")


def ensure_heartbeat(app: Flask) -> None:
    """Start this process's heartbeat thread once (on its first member connection). It refreshes the
    connections every ``PRESENCE_HEARTBEAT_SECONDS`` and, every ``DESK_SESSION_CHECK_SECONDS`` (5),
    closes desk sockets whose session ended on another process."""
    with _heartbeat_lock:
        if id(app) in _heartbeat_apps:
            return
        _heartbeat_apps[id(app)] = app
    interval = float(app.config.get("PRESENCE_HEARTBEAT_SECONDS", DEFAULT_HEARTBEAT_SECONDS))
    check = float(app.config.get("DESK_SESSION_CHECK_SECONDS", DEFAULT_SESSION_CHECK_SECONDS))

    def loop() -> None:
        stop = threading.Event()
        next_beat = time.monotonic() + interval
        while not stop.wait(min(interval, check)):
            try:
                close_ended_sessions(app)
            except Exception:  # keep checking: the next tick tries again
                log.exception("desk session check failed")
            if time.monotonic() < next_beat:
                continue
            next_beat = time.monotonic() + interval
            try:
                beat(app)
            except Exception:  # keep beating: one failed refresh must not end presence for the process
                log.exception("presence heartbeat failed")

    threading.Thread(target=loop, name="presence-heartbeat", daemon=True).start()
