"""Presence that survives a crashed server process.

Connections are rows shared by every process, but only the process holding a socket hears it close. If
that process dies, its rows would keep members "online" forever. So each process refreshes
``last_seen_at`` of its own connections every ``PRESENCE_HEARTBEAT_SECONDS`` (default 20), and a sweep run
every minute by the job queue removes rows not refreshed for ``PRESENCE_STALE_SECONDS`` (default 90). A
member left without connections is set offline as after the grace period (``auto_offline``: the next
connection restores the status the member chose).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import defaultdict
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy import delete, func, select, update

from blueprints.members.models import Member, MemberConnection
from blueprints.members.services import presence
from core.db import db, utcnow
from core.environments import in_environment
from core.jobs import periodic

log = logging.getLogger(__name__)

DEFAULT_HEARTBEAT_SECONDS = 20.0
DEFAULT_STALE_SECONDS = 90.0

_started: set[int] = set()
_start_lock = threading.Lock()


def beat(app: Flask) -> int:
    """Refresh ``last_seen_at`` of this process's connections; returns how many rows it touched."""
    by_environment: dict[str, list[str]] = defaultdict(list)
    for sid, (environment, _member_pk) in presence.local_connections().items():
        by_environment[environment].append(sid)
    touched = 0
    now = utcnow()
    for environment, sids in by_environment.items():
        with in_environment(app, environment):
            result = db.session.execute(
                update(MemberConnection).where(MemberConnection.sid.in_(sids)).values(last_seen_at=now)
            )
            touched += int(result.rowcount or 0)
            db.session.commit()
    return touched


def ensure_heartbeat(app: Flask) -> None:
    """Start this process's heartbeat thread once (on its first member connection)."""
    with _start_lock:
        if id(app) in _started:
            return
        _started.add(id(app))
    interval = float(app.config.get("PRESENCE_HEARTBEAT_SECONDS", DEFAULT_HEARTBEAT_SECONDS))

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(interval):
            try:
                beat(app)
            except Exception:  # keep beating: one failed refresh must not end presence for the process
                log.exception("presence heartbeat failed")

    threading.Thread(target=loop, name="presence-heartbeat", daemon=True).start()


def sweep_stale(now: datetime | None = None) -> list[str]:
    """Remove connections no process refreshes any more; members left without one go offline."""
    now = now or utcnow()
    stale_after = float(current_app.config.get("PRESENCE_STALE_SECONDS", DEFAULT_STALE_SECONDS))
    cutoff = now - timedelta(seconds=stale_after)
    seen = func.coalesce(MemberConnection.last_seen_at, MemberConnection.connected_at)
    stale = db.session.execute(
        select(MemberConnection.sid, MemberConnection.member_pk).where(seen < cutoff)
    ).all()
    if not stale:
        return []
    db.session.execute(delete(MemberConnection).where(MemberConnection.sid.in_([sid for sid, _ in stale])))
    member_pks: set[uuid.UUID] = {member_pk for _, member_pk in stale}
    still_connected = set(
        db.session.scalars(
            select(MemberConnection.member_pk).where(MemberConnection.member_pk.in_(member_pks))
        )
    )
    offline: list[str] = []
    for member in db.session.scalars(select(Member).where(Member.pk.in_(member_pks - still_connected))):
        member.disconnected_at = None
        if member.status != "offline":
            member.auto_offline = True
            presence.set_offline_by_system(member, source="stale_connection")
            offline.append(member.id)
    db.session.commit()
    return offline


@periodic(minute="*")
def sweep_every_minute() -> None:
    sweep_stale()
