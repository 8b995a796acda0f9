"""``flask users create``: a login user with an Argon2 hash and its human member."""

from __future__ import annotations

import json
import uuid

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.members.models import User
from blueprints.members.services.users import authenticate
from core.db import db
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
