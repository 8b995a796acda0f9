"""The desk's live connection: a signed-in page is connected over Socket.IO with its session and hears
its own organization's events, and nobody else's."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from flask import Flask

from core.environments import LIVE, in_environment
from core.events import publish
from tests.browser.conftest import DeskLogin, sign_in
from tests.conftest import Org

LISTEN = """
window.heard = [];
document.body.addEventListener('desk:probe.ping', e => window.heard.push(e.detail.data));
"""


def test_a_signed_in_page_hears_its_organizations_events_only(
    app: Flask,
    new_context: Callable[..., Any],
    make_user: Callable[..., DeskLogin],
    org: Org,
    other_org: Org,
) -> None:
    mine, theirs = make_user(org, "Ana Agent"), make_user(other_org, "Gus Globex")
    pages = []
    for login in (mine, theirs):
        page = new_context().new_page()
        sign_in(page, login)
        page.wait_for_url("**/desk")
        page.wait_for_selector("body[data-live=on]")
        page.evaluate(LISTEN)
        pages.append(page)
    with in_environment(app, LIVE):
        publish("probe.ping", uuid.UUID(org.id), {"n": 1})
    pages[0].wait_for_function("() => window.heard.length === 1")
    assert pages[0].evaluate("window.heard") == [{"n": 1}]
    assert pages[1].evaluate("window.heard") == []
    # a page of B asking to follow a conversation id of A is refused (no such conversation for B)
    answer = pages[1].evaluate("agentDesk.joinConversation('" + str(uuid.uuid4()) + "')")
    assert answer["ok"] is False


def test_no_session_no_connection(app: Flask, server: str) -> None:
    import socketio

    client = socketio.Client(reconnection=False)
    try:
        client.connect(server, auth={"desk": "live"}, transports=["polling"], wait_timeout=5)
        connected = client.connected
    except socketio.exceptions.ConnectionError:
        connected = False
    finally:
        client.disconnect()
    assert connected is False
