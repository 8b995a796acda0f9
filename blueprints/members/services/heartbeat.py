"""Presence that survives a crashed server process.

Connections are rows shared by every process, but only the process holding a socket hears it close. If
that process dies, its rows would keep members "online" forever. So each process refreshes
``last_seen_at`` of its own connections every ``PRESENCE_HEARTBEAT_SECONDS`` (default 20; the thread
that does it is in the realtime layer, ``blueprints/members/realtime.py``), and a sweep run every minute
by the job queue removes rows not refreshed for ``PRESENCE_STALE_SECONDS`` (default 90). A member left
without connections is set offline as after the grace period (``auto_offline``: the next connection
restores the status the member chose).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import delete, func, select, update

from blueprints.members.models import Member, MemberConnection
from blueprints.members.services import presence
from core.db import db, utcnow
from core.jobs import periodic

DEFAULT_STALE_SECONDS = 90.0


def refresh_connections(sids: Collection[str], now: datetime | None = None) -> int:
    """Mark the connections ``sids`` as still alive; returns how many rows it touched."""
    if not sids:
        return 0
    result = db.session.execute(
        update(MemberConnection)
        .where(MemberConnection.sid.in_(list(sids)))
        .values(last_seen_at=now or utcnow())
    )
    return int(result.rowcount or 0)


def sweep_stale(now: datetime | None = None) -> list[str]:
    """Remove connections no process refreshes any more; members left without one go offline. Returns
    the ids of the members it set offline."""
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
    db.session.flush()
    return offline


@periodic(minute="*")
def sweep_every_minute() -> None:
    """Run by the job queue in each environment, as one unit of work (``core.jobs``)."""
    sweep_stale()
