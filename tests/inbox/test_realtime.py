"""Conversation changes reach the organization's Socket.IO room from the domain layer."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from core.realtime import socketio
from tests.conftest import Org
from tests.inbox.conftest import MakeConversation, msg


def test_assignment_publishes_conversation_assigned_and_updated(
    app: Flask,
    client: FlaskClient,
    org: Org,
    other_org: Org,
    make_conversation: MakeConversation,
    make_member,
) -> None:
    agent = make_member(org, "Ana")
    cid = make_conversation(org)
    listener = socketio.test_client(app, auth={"api_key": org.live_key})
    outsider = socketio.test_client(app, auth={"api_key": other_org.live_key})
    listener.get_received()
    response = client.patch(
        msg(org, f"/conversations/{cid}"), json={"extra": {"member_id": agent}}, headers=org.headers()
    )
    assert response.status_code == 200
    received = {packet["name"]: packet["args"][0] for packet in listener.get_received()}
    assert received["conversation.assigned"]["data"]["member_id"] == agent
    assert received["conversation.assigned"]["data"]["conversation_id"] == cid
    assert received["conversation.updated"]["data"]["conversation"]["extra"]["member_id"] == agent
    assert not [p for p in outsider.get_received() if p["name"].startswith("conversation.")]


def test_a_refused_change_publishes_nothing(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    cid = make_conversation(org)
    listener = socketio.test_client(app, auth={"api_key": org.live_key})
    listener.get_received()
    bad = client.patch(
        msg(org, f"/conversations/{cid}"), json={"extra": {"member_id": "mem_nobody"}}, headers=org.headers()
    )
    assert bad.status_code == 400
    assert not [p for p in listener.get_received() if p["name"].startswith("conversation.")]
