"""A desk user who is deactivated or changes password is signed out everywhere: the open page session,
the "remember me" cookie and the Socket.IO connection all stop working, while other users stay signed in.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.members.services.users import change_password, deactivate_user
from core.environments import LIVE, in_environment
from core.errors import ApiError
from core.realtime import socketio
from tests.conftest import Org
from tests.support.desk_users import create_desk_user, post_sign_in

PASSWORD = "correct horse battery"
SESSION_COOKIE = "agentdesk_live"
REMEMBER_COOKIE = "agentdesk_live_remember"


def _user(runner: FlaskCliRunner, org: Org, email: str) -> uuid.UUID:
    return uuid.UUID(create_desk_user(runner, org.id, email, password=PASSWORD, name="Ana")["user_id"])


def _sign_in(client: FlaskClient, email: str, password: str = PASSWORD, remember: bool = False) -> int:
    return int(post_sign_in(client, email, password, remember=remember).status_code)


def _signed_in(client: FlaskClient) -> bool:
    response = client.get("/desk")
    if response.status_code == 302:
        assert "/signin" in response.headers["Location"]
        return False
    assert response.status_code == 200
    return True


@pytest.fixture
def make_signed_in(
    app: Flask, runner: FlaskCliRunner, org: Org
) -> Callable[..., tuple[FlaskClient, uuid.UUID]]:
    def _make(email: str, remember: bool = False) -> tuple[FlaskClient, uuid.UUID]:
        user_id = _user(runner, org, email)
        client = app.test_client()
        assert _sign_in(client, email, remember=remember) == 302
        assert _signed_in(client)
        return client, user_id

    return _make


def test_deactivation_signs_the_user_out_and_refuses_sign_in(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    client, user_id = make_signed_in("ana@example.test")
    colleague, _ = make_signed_in("bea@example.test")
    with in_environment(app, LIVE):
        deactivate_user(uuid.UUID(org.id), user_id)
    assert not _signed_in(client)
    assert _signed_in(colleague)  # only that user's sessions end
    assert _sign_in(app.test_client(), "ana@example.test") == 401


def test_a_password_change_ends_the_old_sessions_and_the_new_password_works(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    client, user_id = make_signed_in("ana@example.test")
    with in_environment(app, LIVE):
        change_password(uuid.UUID(org.id), user_id, "a brand new secret")
    assert not _signed_in(client)
    fresh = app.test_client()
    assert _sign_in(fresh, "ana@example.test") == 401  # the old password is gone
    assert _sign_in(fresh, "ana@example.test", "a brand new secret") == 302
    assert _signed_in(fresh)


def test_the_remember_me_cookie_ends_too(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    client, user_id = make_signed_in("ana@example.test", remember=True)
    remembered = client.get_cookie(REMEMBER_COOKIE)
    assert remembered is not None

    def browser_restarted() -> FlaskClient:
        # A new browser session: no session cookie, only the long-lived remember cookie.
        restarted = app.test_client()
        restarted.set_cookie(REMEMBER_COOKIE, remembered.value, path="/")
        return restarted

    assert _signed_in(browser_restarted())  # the cookie alone signs in ...
    with in_environment(app, LIVE):
        change_password(uuid.UUID(org.id), user_id, "a brand new secret")
    assert not _signed_in(browser_restarted())  # ... until the password changes


def test_socketio_refuses_the_connection_after_deactivation(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    client, user_id = make_signed_in("ana@example.test")
    before = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=client)
    assert before.is_connected()
    before.disconnect()
    with in_environment(app, LIVE):
        deactivate_user(uuid.UUID(org.id), user_id)
    again = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=client)
    assert not again.is_connected()


def test_socketio_refuses_a_session_from_before_a_password_change(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    client, user_id = make_signed_in("ana@example.test")
    with in_environment(app, LIVE):
        change_password(uuid.UUID(org.id), user_id, "a brand new secret")
    assert not socketio.test_client(app, auth={"desk": "live"}, flask_test_client=client).is_connected()
    assert _sign_in(client, "ana@example.test", "a brand new secret") == 302
    assert socketio.test_client(app, auth={"desk": "live"}, flask_test_client=client).is_connected()


def test_an_open_socket_closes_when_its_user_is_deactivated(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    client, user_id = make_signed_in("ana@example.test")
    colleague, _ = make_signed_in("bea@example.test")
    open_socket = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=client)
    other_socket = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=colleague)
    assert open_socket.is_connected() and other_socket.is_connected()
    with in_environment(app, LIVE):
        deactivate_user(uuid.UUID(org.id), user_id)
    assert not open_socket.is_connected()  # closed right after the commit, not when it next reconnects
    assert other_socket.is_connected()
    other_socket.disconnect()


def test_a_socket_whose_session_ended_on_another_process_closes_at_the_session_check(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    from blueprints.members.models import User
    from blueprints.members.realtime import close_ended_sessions
    from core.db import db

    client, user_id = make_signed_in("ana@example.test")
    open_socket = socketio.test_client(app, auth={"desk": "live"}, flask_test_client=client)
    assert close_ended_sessions(app) == []  # a current session stays open
    # Another process changed the password: this one hears nothing, its own check finds it.
    with in_environment(app, LIVE):
        user = db.session.get(User, user_id)
        assert user is not None
        user.session_version += 1
    assert open_socket.is_connected()
    assert len(close_ended_sessions(app)) == 1
    assert not open_socket.is_connected()


def test_a_session_from_before_sign_in_records_signs_in_again(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    # Sessions signed in before desk_sign_ins name no sign-in (``<user>`` or ``<user>:<version>``): the
    # upgrade asks those browsers to sign in once more (docs/browser-security.md).
    client, user_id = make_signed_in("ana@example.test")
    for old_id in (str(user_id), f"{user_id}:1"):
        with client.session_transaction() as session:
            session["_user_id"] = old_id
        assert not _signed_in(client), old_id


def test_the_services_keep_to_their_organization(
    app: Flask, make_org: Callable[..., Org], make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    client, user_id = make_signed_in("ana@example.test")
    stranger = make_org("Globex")
    with in_environment(app, LIVE), pytest.raises(ApiError) as refused:
        deactivate_user(uuid.UUID(stranger.id), user_id)
    assert refused.value.status == 404
    with in_environment(app, LIVE), pytest.raises(ApiError):
        change_password(uuid.UUID(stranger.id), user_id, "a brand new secret")
    assert _signed_in(client)


def test_the_users_commands_end_the_sessions(
    runner: FlaskCliRunner, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    ana, _ = make_signed_in("ana@example.test")
    bea, _ = make_signed_in("bea@example.test")
    changed = runner.invoke(
        args=["users", "set-password", "--email", "ana@example.test", "--password", "a brand new secret"]
    )
    assert changed.exit_code == 0, changed.output
    assert not _signed_in(ana)
    deactivated = runner.invoke(args=["users", "deactivate", "--email", "bea@example.test"])
    assert deactivated.exit_code == 0, deactivated.output
    assert not _signed_in(bea)
    unknown = runner.invoke(args=["users", "deactivate", "--email", "nobody@example.test"])
    assert unknown.exit_code != 0 and "no desk user" in unknown.output


def test_deactivation_and_password_changes_are_in_the_audit_log(
    app: Flask, org: Org, make_signed_in: Callable[..., tuple[FlaskClient, uuid.UUID]]
) -> None:
    _, ana = make_signed_in("ana@example.test")
    with in_environment(app, LIVE):
        change_password(uuid.UUID(org.id), ana, "a brand new secret")
        deactivate_user(uuid.UUID(org.id), ana)
    client = app.test_client()
    response = client.get(f"/v1/members/organizations/{org.id}/audit-log", headers=org.headers())
    assert response.status_code == 200, response.get_json()
    entries = [(e["action"], e["target_id"]) for e in response.get_json()["data"]]
    assert ("user.password_changed", str(ana)) in entries
    assert ("user.deactivated", str(ana)) in entries
    assert "a brand new secret" not in response.get_data(as_text=True)
