"""Desk logins for tests: made as a person makes them (``flask users create``) and signed in through the
sign-in form, so every test that needs a desk user goes through the product's own path."""

from __future__ import annotations

import json
import re
from typing import Any

from flask.testing import FlaskClient, FlaskCliRunner

DESK_PASSWORD = "correct horse battery"
SIGNIN_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def create_desk_user(
    runner: FlaskCliRunner,
    organization_id: str,
    email: str,
    *,
    password: str = DESK_PASSWORD,
    name: str = "Ana Agent",
    role: str = "agent",
    environment: str = "live",
) -> dict[str, Any]:
    """``users create``'s JSON (``user_id``, ``member_id`` ...) with the ``email`` and ``password``."""
    result = runner.invoke(
        args=[
            *("users", "create", "--org", organization_id, "--email", email, "--password", password),
            *("--name", name, "--role", role, "--env", environment, "--json"),
        ]
    )
    assert result.exit_code == 0, result.output
    return {"email": email, "password": password, **json.loads(result.stdout)}


def post_sign_in(
    client: FlaskClient,
    email: str,
    password: str = DESK_PASSWORD,
    *,
    prefix: str = "",
    remember: bool = False,
) -> Any:
    """Fill in and send the sign-in form (``prefix`` ``/sandbox`` for the sandbox desk); the response."""
    token = SIGNIN_TOKEN.search(client.get(f"{prefix}/signin").get_data(as_text=True))
    assert token is not None
    form = {"email": email, "password": password, "csrf_token": token.group(1)}
    if remember:
        form["remember"] = "on"
    return client.post(f"{prefix}/signin", data=form)


def sign_in(
    client: FlaskClient, email: str, password: str = DESK_PASSWORD, *, prefix: str = ""
) -> FlaskClient:
    """The client, signed in (the form answered with its redirect to the desk)."""
    response = post_sign_in(client, email, password, prefix=prefix)
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    return client
