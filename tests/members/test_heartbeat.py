"""Presence after a server process dies: its connections stop being refreshed and are swept, and their
members go offline (then get their chosen status back on their next connection)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select

from blueprints.members.models import Member, MemberConnection
from blueprints.members.realtime import beat
from blueprints.members.services.heartbeat import sweep_stale
from core.db import db, utcnow
from core.realtime import socketio
from tests.conftest import Org
from tests.members.conftest import mem
from tests.members.test_realtime import _row, _token


def _online(client: FlaskClient, org: Org, member_id: str) -> None:
    response = client.patch(
        mem(org, f"/members/{member_id}/status"), json={"status": "online"}, headers=org.headers()
    )
    assert response.status_code == 200


def test_heartbeat_refreshes_this_process_connections(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, make_member
) -> None:
    member = make_member(org)
    socket = socketio.test_client(app, auth={"token": _token(runner, org, member["id"])})
    assert socket.is_connected()
    old = utcnow() - timedelta(minutes=5)
    with app.app_context():
        for row in db.session.scalars(select(MemberConnection)):
            row.last_seen_at = old
        db.session.commit()
        assert beat(app) >= 1
        [row] = db.session.scalars(select(MemberConnection)).all()
        assert row.last_seen_at > old
        assert sweep_stale() == []  # refreshed rows stay
    socket.disconnect()


def test_connections_of_a_dead_process_are_swept_and_the_member_goes_offline(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, make_member
) -> None:
    member = make_member(org)
    _online(client, org, member["id"])
    with app.app_context():
        pk = db.session.scalar(select(Member.pk).where(Member.id == member["id"]))
        stale = utcnow() - timedelta(minutes=10)
        # a socket held by a process that died: nobody refreshes it and nobody will hear it close
        db.session.add(
            MemberConnection(
                sid=f"dead-{uuid.uuid4().hex}", member_pk=pk, connected_at=stale, last_seen_at=stale
            )
        )
        db.session.commit()
    assert _row(client, org, member["id"])["status"] == "online"
    with app.app_context():
        assert sweep_stale() == [member["id"]]
        assert db.session.scalars(select(MemberConnection)).all() == []
        db.session.commit()  # the sweep's unit of work (a job commits it when it ends)
    row = _row(client, org, member["id"])
    assert row["status"] == "offline" and row["chosen_status"] == "online"
    history = client.get(mem(org, "/members/status-history/organization"), headers=org.headers()).get_json()
    assert history["data"][0]["source"] == "stale_connection"
    # the member's next connection restores the status they chose
    socket = socketio.test_client(app, auth={"token": _token(runner, org, member["id"])})
    assert socket.is_connected()
    assert _row(client, org, member["id"])["status"] == "online"
    socket.disconnect()


def test_a_member_with_another_live_connection_stays_online(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, make_member
) -> None:
    member = make_member(org)
    _online(client, org, member["id"])
    socket = socketio.test_client(app, auth={"token": _token(runner, org, member["id"])})
    with app.app_context():
        pk = db.session.scalar(select(Member.pk).where(Member.id == member["id"]))
        stale = utcnow() - timedelta(minutes=10)
        db.session.add(MemberConnection(sid="dead-1", member_pk=pk, connected_at=stale, last_seen_at=stale))
        db.session.commit()
        assert sweep_stale() == []
        assert [r.sid for r in db.session.scalars(select(MemberConnection))] != ["dead-1"]
    assert _row(client, org, member["id"])["status"] == "online"
    socket.disconnect()
