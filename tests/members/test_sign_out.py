"""Signing out of the desk ends that sign-in on the server, not only in the browser: a copied session
cookie or "remember me" cookie replayed afterwards is refused, for pages, writes and Socket.IO, while
the user's other sign-ins (another browser) stay. "Sign out everywhere" ends them all, and a sign-in
expires on the server after ``DESK_REMEMBER_DAYS`` (30) even while its cookie is kept.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from blueprints.inbox.models import ConversationNote
from blueprints.messaging.models import Contact, Conversation
from core.db import db
from core.environments import LIVE, in_environment
from core.realtime import socketio
from tests.conftest import Org
from tests.support.desk_users import create_desk_user, post_sign_in

PASSWORD = "correct horse battery"
SESSION_COOKIE = "agentdesk_live"
REMEMBER_COOKIE = "agentdesk_live_remember"
PAGE_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


class Browser:
    """A test client signed in as a person does it, with the cookies it was given kept aside."""

    def __init__(self, app: Flask, email: str, *, remember: bool) -> None:
        self.app = app
        self.client = app.test_client()
        response = post_sign_in(self.client, email, PASSWORD, remember=remember)
        assert response.status_code == 302, response.get_data(as_text=True)[:300]
        page = self.client.get("/inbox")
        assert page.status_code == 200
        found = PAGE_TOKEN.search(page.get_data(as_text=True))
        assert found is not None
        self.token = found.group(1)
        session = self.client.get_cookie(SESSION_COOKIE)
        assert session is not None
        self.session_cookie = session.value
        remembered = self.client.get_cookie(REMEMBER_COOKIE)
        self.remember_cookie = remembered.value if remembered is not None else None

    def sign_out(self, *, everywhere: bool = False) -> None:
        form = {"csrf_token": self.token}
        if everywhere:
            form["scope"] = "everywhere"
        response = self.client.post("/signout", data=form)
        assert response.status_code == 302
        assert "/signin" in response.headers["Location"]

    def replay(self, *, session: bool = True, remember: bool = True) -> FlaskClient:
        """A fresh browser given copies of the cookies this one held (a stolen or kept cookie)."""
        copy = self.app.test_client()
        if session:
            copy.set_cookie(SESSION_COOKIE, self.session_cookie, path="/")
        if remember:
            assert self.remember_cookie is not None
            copy.set_cookie(REMEMBER_COOKIE, self.remember_cookie, path="/")
        return copy


def _signed_in(client: FlaskClient) -> bool:
    response = client.get("/inbox")
    if response.status_code == 302:
        assert "/signin" in response.headers["Location"]
        return False
    assert response.status_code == 200, response.status_code
    return True


@pytest.fixture
def ana(runner: FlaskCliRunner, org: Org) -> uuid.UUID:
    created = create_desk_user(runner, org.id, "ana@example.test", password=PASSWORD, name="Ana")
    return uuid.UUID(created["user_id"])


@pytest.fixture
def browser(app: Flask, ana: uuid.UUID) -> Callable[..., Browser]:
    def _open(remember: bool = True) -> Browser:
        return Browser(app, "ana@example.test", remember=remember)

    return _open


@pytest.fixture
def conversation(app: Flask, org: Org) -> uuid.UUID:
    organization_id = uuid.UUID(org.id)
    with in_environment(app, LIVE):
        contact = Contact(organization_id=organization_id, name="Carla")
        db.session.add(contact)
        db.session.flush()
        row = Conversation(
            organization_id=organization_id,
            contact_id=contact.id,
            organization_address="106540352242922",
            contact_address="+525500000001",
            service="whatsapp",
            status="active",
            extra={"labels": []},
        )
        db.session.add(row)
        db.session.flush()
        return row.id


def _sign_ins(app: Flask, user_id: uuid.UUID) -> list[Any]:
    from blueprints.members.models import DeskSignIn  # here: the tests of behaviour also run without it

    with in_environment(app, LIVE):
        rows = db.session.scalars(
            select(DeskSignIn).where(DeskSignIn.user_id == user_id).order_by(DeskSignIn.created_at)
        ).all()
        db.session.expunge_all()
        return list(rows)


def _notes(app: Flask) -> int:
    with in_environment(app, LIVE):
        return int(db.session.scalar(select(func.count()).select_from(ConversationNote)) or 0)


def _change_sign_in(app: Flask, sign_in_id: uuid.UUID, **values: Any) -> None:
    """Write the record as the clock, or another process, would have left it."""
    from blueprints.members.models import DeskSignIn

    with in_environment(app, LIVE):
        row = db.session.get(DeskSignIn, sign_in_id)
        assert row is not None
        for name, value in values.items():
            setattr(row, name, value)


# ---- (a) (b) a copied cookie is refused after sign-out ---------------------------------------------------


def test_a_copied_session_cookie_reads_and_writes_nothing_after_sign_out(
    app: Flask, browser: Callable[..., Browser], conversation: uuid.UUID
) -> None:
    ana = browser(remember=True)
    kept = ana.replay(remember=False)
    # While the sign-in lasts, the copy is as good as the original (what makes a stolen cookie worth it).
    assert _signed_in(kept)
    written = kept.post(
        f"/inbox/c/{conversation}/notes", data={"text": "before"}, headers={"X-CSRFToken": ana.token}
    )
    assert written.status_code == 200
    assert _notes(app) == 1

    ana.sign_out()
    assert not _signed_in(ana.client)
    replayed = ana.replay(remember=False)
    assert not _signed_in(replayed)
    refused = replayed.post(
        f"/inbox/c/{conversation}/notes", data={"text": "after"}, headers={"X-CSRFToken": ana.token}
    )
    assert refused.status_code == 302 and "/signin" in refused.headers["Location"]
    assert _notes(app) == 1


def test_the_remember_cookie_alone_opens_no_session_after_sign_out(browser: Callable[..., Browser]) -> None:
    ana = browser(remember=True)
    assert _signed_in(ana.replay(session=False))  # a restarted browser: the remember cookie signs in ...
    ana.sign_out()
    restarted = ana.replay(session=False)
    assert not _signed_in(restarted)  # ... until its sign-in is ended
    assert not _signed_in(ana.replay())  # both cookies together neither


def test_signing_out_ends_the_record_in_one_commit(
    app: Flask, ana: uuid.UUID, browser: Callable[..., Browser], commits: Callable[[], Any]
) -> None:
    first = browser(remember=False)
    [record] = _sign_ins(app, ana)
    assert record.ended_at is None and not record.remember
    with commits() as counted:
        first.sign_out()
    assert counted.count == 1
    [record] = _sign_ins(app, ana)
    assert record.ended_at is not None


def test_signing_in_again_on_the_same_browser_ends_its_earlier_sign_in(
    app: Flask, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    ana_browser = browser(remember=True)
    earlier = ana_browser.replay()
    assert post_sign_in(ana_browser.client, "ana@example.test", PASSWORD).status_code == 302
    assert _signed_in(ana_browser.client)
    assert not _signed_in(earlier)
    first, second = _sign_ins(app, ana)
    assert first.ended_at is not None and second.ended_at is None


# ---- (c) (d) one browser or every browser --------------------------------------------------------------


def test_another_browser_of_the_same_user_stays_signed_in(browser: Callable[..., Browser]) -> None:
    laptop = browser(remember=True)
    phone = browser(remember=True)
    laptop.sign_out()
    assert not _signed_in(laptop.replay())
    assert _signed_in(phone.client)
    assert _signed_in(phone.replay(session=False))  # its remember cookie too


def test_sign_out_everywhere_ends_every_sign_in_of_the_user(
    app: Flask, runner: FlaskCliRunner, org: Org, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    create_desk_user(runner, org.id, "bea@example.test", password=PASSWORD, name="Bea")
    colleague = Browser(app, "bea@example.test", remember=True)
    laptop = browser(remember=True)
    phone = browser(remember=False)
    laptop.sign_out(everywhere=True)
    assert not _signed_in(laptop.replay())
    assert not _signed_in(phone.client)
    assert not _signed_in(phone.replay(remember=False))
    assert all(record.ended_at is not None for record in _sign_ins(app, ana))
    assert _signed_in(colleague.client)  # only that user's sign-ins end
    # A new sign-in works at once (the generation moved on; the new record carries the new one).
    assert _signed_in(browser(remember=False).client)


def test_the_shell_offers_both_sign_outs(browser: Callable[..., Browser]) -> None:
    page = browser(remember=False).client.get("/inbox").get_data(as_text=True)
    assert page.count('action="/signout"') == 2
    assert 'name="scope" value="everywhere"' in page


# ---- (e) lifetime -----------------------------------------------------------------------------------------


def test_a_remembered_sign_in_lasts_30_days_on_the_server_and_in_the_cookie(
    app: Flask, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    before = datetime.now(UTC)
    ana_browser = browser(remember=True)
    [record] = _sign_ins(app, ana)
    assert record.remember
    assert record.expires_at - record.created_at == timedelta(days=30)
    remembered = ana_browser.client.get_cookie(REMEMBER_COOKIE)
    assert remembered is not None and remembered.expires is not None
    cookie_expires = remembered.expires
    if cookie_expires.tzinfo is None:
        cookie_expires = cookie_expires.replace(tzinfo=UTC)
    assert abs(cookie_expires - (before + timedelta(days=30))) < timedelta(minutes=1)

    # Past its 30 days the sign-in is refused whatever cookie the browser still holds.
    _change_sign_in(app, record.id, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    assert not _signed_in(ana_browser.client)
    assert not _signed_in(ana_browser.replay(session=False))


def test_a_sign_in_without_remember_me_ends_on_the_server_within_a_day(
    app: Flask, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    ana_browser = browser(remember=False)
    assert ana_browser.remember_cookie is None
    [record] = _sign_ins(app, ana)
    assert record.expires_at - record.created_at == timedelta(hours=24)
    _change_sign_in(app, record.id, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    assert not _signed_in(ana_browser.client)


def test_the_remember_lifetime_is_a_setting(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    from blueprints.desk.security import remember_days

    assert app.config["DESK_REMEMBER_DAYS"] == 30
    assert app.config["REMEMBER_COOKIE_DURATION"] == timedelta(days=30)
    bare = Flask(__name__)
    monkeypatch.delenv("DESK_REMEMBER_DAYS", raising=False)
    assert remember_days(bare) == 30
    monkeypatch.setenv("DESK_REMEMBER_DAYS", "12")
    assert remember_days(bare) == 12
    bare.config["DESK_REMEMBER_DAYS"] = 7  # the configuration wins over the environment
    assert remember_days(bare) == 7
    bare.config["DESK_REMEMBER_DAYS"] = 0
    with pytest.raises(ValueError):
        remember_days(bare)


def test_the_remember_cookie_header_says_30_days(app: Flask, ana: uuid.UUID) -> None:
    client = app.test_client()
    response = post_sign_in(client, "ana@example.test", PASSWORD, remember=True)
    header = next(h for h in response.headers.getlist("Set-Cookie") if h.startswith(REMEMBER_COOKIE + "="))
    expires = re.search(r"Expires=([^;]+)", header)
    assert expires is not None
    left = parsedate_to_datetime(expires.group(1)) - datetime.now(UTC)
    assert timedelta(days=29, hours=23) < left <= timedelta(days=30)


# ---- ids from before sign-in records, and forged ones ----------------------------------------------------


def test_a_session_from_before_sign_in_records_must_sign_in_again(
    app: Flask, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    for old_id in (str(ana), f"{ana}:1"):  # before session generations, and before sign-in records
        client = browser(remember=False).client
        with client.session_transaction() as session:
            session["_user_id"] = old_id
        assert not _signed_in(client), old_id


def test_the_loader_takes_only_an_open_sign_in_of_that_user(
    app: Flask, runner: FlaskCliRunner, org: Org, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    from blueprints.desk.security import identity_of_session

    bea = uuid.UUID(
        create_desk_user(runner, org.id, "bea@example.test", password=PASSWORD, name="Bea")["user_id"]
    )
    browser(remember=False)
    [record] = _sign_ins(app, ana)
    with in_environment(app, LIVE):
        assert identity_of_session(f"{ana}:1:{record.id}") is not None
        assert identity_of_session(f"{bea}:1:{record.id}") is None  # someone else's sign-in
        assert identity_of_session(f"{ana}:2:{record.id}") is None  # another generation
        assert identity_of_session(f"{ana}:1:{uuid.uuid4()}") is None  # no such sign-in
        assert identity_of_session(f"{ana}:1:not-a-uuid") is None


def test_the_identity_of_a_page_request_is_one_query(
    app: Flask, ana: uuid.UUID, browser: Callable[..., Browser], queries: Callable[[], Any]
) -> None:
    from blueprints.desk.security import identity_of_session

    browser(remember=False)
    [record] = _sign_ins(app, ana)
    with in_environment(app, LIVE), queries() as counted:
        assert identity_of_session(f"{ana}:1:{record.id}") is not None
    assert counted.count == 1, counted.statements


def test_deactivation_and_a_new_password_end_the_sign_in_records(
    app: Flask, runner: FlaskCliRunner, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    browser(remember=True)
    changed = runner.invoke(
        args=["users", "set-password", "--email", "ana@example.test", "--password", "a brand new secret"]
    )
    assert changed.exit_code == 0, changed.output
    assert all(record.ended_at is not None for record in _sign_ins(app, ana))


# ---- (f) Socket.IO ----------------------------------------------------------------------------------------


def test_socketio_refuses_an_ended_sign_in_and_closes_its_open_socket(
    app: Flask, browser: Callable[..., Browser]
) -> None:
    laptop = browser(remember=True)
    phone = browser(remember=False)
    laptop_socket = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=laptop.client)
    phone_socket = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=phone.client)
    assert laptop_socket.is_connected() and phone_socket.is_connected()
    kept = laptop.replay()
    laptop.sign_out()
    assert not laptop_socket.is_connected()  # closed right after the sign-out's commit
    assert phone_socket.is_connected()  # the other browser's socket stays
    assert not socketio.test_client(app, auth={"desk": "live"}, flask_test_client=kept).is_connected()
    phone_socket.disconnect()


def test_a_socket_whose_sign_in_ended_on_another_process_closes_at_the_session_check(
    app: Flask, ana: uuid.UUID, browser: Callable[..., Browser]
) -> None:
    from blueprints.members.realtime import close_ended_sessions

    laptop = browser(remember=False)
    phone = browser(remember=False)
    laptop_socket = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=laptop.client)
    phone_socket = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=phone.client)
    assert close_ended_sessions(app) == []
    first, _second = _sign_ins(app, ana)
    # Another process signed the laptop out: this one heard nothing, its own check finds it.
    _change_sign_in(app, first.id, ended_at=datetime.now(UTC))
    assert laptop_socket.is_connected()
    assert len(close_ended_sessions(app)) == 1
    assert not laptop_socket.is_connected()
    assert phone_socket.is_connected()
    phone_socket.disconnect()
