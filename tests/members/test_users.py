"""``flask users create``: a login user with an Argon2 hash and its human member."""

from __future__ import annotations

import json
import uuid

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select

from blueprints.members.models import User
from blueprints.members.services.users import authenticate, change_password
from core.db import db
from core.environments import LIVE, in_environment
from core.errors import ApiError
from tests.conftest import Org
from tests.members.conftest import msg


def _create(runner: FlaskCliRunner, org: Org, *extra: str, email: str = "Lead@Example.test") -> object:
    return runner.invoke(
        args=[
            "users",
            "create",
            "--org",
            org.id,
            "--email",
            email,
            "--password",
            "s3cret-pass",
            "--name",
            "Lu",
            *extra,
        ]
    )


def test_creates_user_and_member(app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org) -> None:
    result = _create(runner, org, "--role", "supervisor", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["email"] == "lead@example.test" and data["role"] == "supervisor"
    assert str(uuid.UUID(data["member_id"])) == data["member_id"]  # a generated member id is a UUID
    member = client.get(msg(org, f"/{data['member_id']}"), headers=org.headers()).get_json()
    assert member["user_id"] == data["user_id"] and member["ai"] is False and member["name"] == "Lu"
    with app.app_context():
        user = db.session.get(User, uuid.UUID(data["user_id"]))
        assert user is not None
        assert user.password_hash.startswith("$argon2id$") and "s3cret-pass" not in user.password_hash
        assert authenticate("LEAD@example.test", "s3cret-pass") is not None
        assert authenticate("lead@example.test", "wrong-pass") is None
        assert authenticate("nobody@example.test", "s3cret-pass") is None


def test_default_role_is_agent_and_plain_output(runner: FlaskCliRunner, org: Org) -> None:
    result = _create(runner, org)
    assert result.exit_code == 0
    assert "(agent)" in result.output and "lead@example.test" in result.output


def test_refuses_bad_input(runner: FlaskCliRunner, org: Org) -> None:
    assert _create(runner, org, "--json").exit_code == 0
    duplicate = _create(runner, org, "--json", email="lead@example.test")
    assert duplicate.exit_code != 0 and "already exists" in duplicate.output
    bad_email = _create(runner, org, email="not-an-email")
    assert bad_email.exit_code != 0 and "email: not a valid e-mail address" in bad_email.output
    short = runner.invoke(
        args=["users", "create", "--org", org.id, "--email", "a@b.test", "--password", "short", "--name", "A"]
    )
    assert short.exit_code != 0 and "password: at least 8 characters" in short.output
    role = _create(runner, org, "--role", "admin", email="c@d.test")
    assert role.exit_code != 0 and "admin" in role.output
    unknown_org = runner.invoke(
        args=[
            "users",
            "create",
            "--org",
            "00000000-0000-0000-0000-000000000000",
            "--email",
            "e@f.test",
            "--password",
            "long-enough",
            "--name",
            "E",
        ]
    )
    assert unknown_org.exit_code != 0 and "No Organization found" in unknown_org.output
    not_uuid = runner.invoke(
        args=[
            "users",
            "create",
            "--org",
            "x",
            "--email",
            "e@f.test",
            "--password",
            "long-enough",
            "--name",
            "E",
        ]
    )
    assert not_uuid.exit_code != 0 and "--org: not a UUID" in not_uuid.output


def test_a_password_someone_else_chose_must_be_changed_at_first_sign_in(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org
) -> None:
    """``--must-change-password`` on create and on set-password (a reset) marks the user; the desk's sign-in
    then sends them to change it, and only their own change clears the mark."""
    from tests.support.desk_users import post_sign_in

    created = _create(runner, org, "--must-change-password", "--json")
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["must_change_password"] is True
    first = post_sign_in(client, "lead@example.test", "s3cret-pass")
    assert first.status_code == 302 and first.headers["Location"].startswith("/account/password")

    with app.app_context():
        user = db.session.scalar(select(User).where(User.email == "lead@example.test"))
        assert user is not None and user.must_change_password
        user_id, organization_id = user.id, user.organization_id
    with in_environment(app, LIVE):
        try:
            change_password(organization_id, user_id, "s3cret-pass")
        except ApiError as refusal:
            assert (refusal.code, refusal.param) == ("password_unchanged", "password")
        else:
            raise AssertionError("the given password was accepted as the new one")
    with in_environment(app, LIVE):
        try:
            change_password(organization_id, user_id, "another-pass", current_password="wrong")
        except ApiError as refusal:
            assert (refusal.code, refusal.param) == ("password_wrong", "current_password")
        else:
            raise AssertionError("a wrong current password was accepted")
    with in_environment(app, LIVE):
        change_password(organization_id, user_id, "another-pass", current_password="s3cret-pass")
    assert post_sign_in(app.test_client(), "lead@example.test", "another-pass").headers["Location"] == "/desk"

    reset = runner.invoke(
        args=[
            *("users", "set-password", "--email", "lead@example.test"),
            *("--password", "temporary-1", "--must-change-password"),
        ]
    )
    assert reset.exit_code == 0 and "must change it" in reset.output
    again = post_sign_in(app.test_client(), "lead@example.test", "temporary-1")
    assert again.headers["Location"].startswith("/account/password")
    plain = runner.invoke(
        args=["users", "set-password", "--email", "lead@example.test", "--password", "operator-set-9"]
    )
    assert plain.exit_code == 0
    assert (
        post_sign_in(app.test_client(), "lead@example.test", "operator-set-9").headers["Location"] == "/desk"
    )
