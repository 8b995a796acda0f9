"""``users create``: a desk login user and its human member; ``users deactivate`` and
``users set-password``, which also end the user's desk sessions. ``--must-change-password`` (create,
set-password) marks a password someone else chose: the desk has the user change it at their next sign-in."""

from __future__ import annotations

import json
import uuid

import click
from flask import Flask, current_app
from flask.cli import AppGroup

from blueprints.members.models import ROLES
from blueprints.members.services.users import (
    change_password,
    create_user,
    deactivate_user,
    find_user_by_email,
    reset_password,
)
from core.environments import ENVIRONMENTS, LIVE, environment_app, in_environment
from core.errors import ApiError

users_cli = AppGroup("users", help="Desk login users (each with its human member).")


@users_cli.command("create")
@click.option("--org", "org_id", required=True, help="Organization id.")
@click.option("--email", required=True)
@click.option("--password", required=True, help="At least 8 characters; stored as an Argon2id hash.")
@click.option("--name", required=True)
@click.option("--role", type=click.Choice(list(ROLES)), default="agent", show_default=True)
@click.option("--member-id", default=None, help="Custom id for the member (a generated UUID otherwise).")
@click.option("--must-change-password", is_flag=True, help="The user changes the password at first sign-in.")
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def create_user_command(
    org_id: str,
    email: str,
    password: str,
    name: str,
    role: str,
    member_id: str | None,
    must_change_password: bool,
    environment: str,
    as_json: bool,
) -> None:
    try:
        organization_id = uuid.UUID(org_id)
    except ValueError:
        raise click.ClickException(f"--org: not a UUID: {org_id!r}") from None
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with in_environment(app, environment):
        try:
            created = create_user(
                organization_id,
                email=email,
                password=password,
                name=name,
                role=role,
                member_id=member_id,
                must_change_password=must_change_password,
            )
        except ApiError as error:
            raise click.ClickException(error.message or "invalid input") from None
        result = {
            "user_id": str(created.user.id),
            "member_id": created.member.id,
            "organization_id": str(organization_id),
            "email": created.user.email,
            "name": created.user.name,
            "role": created.user.role,
            "must_change_password": created.user.must_change_password,
            "environment": environment,
        }
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(
            f"User {result['email']} ({result['role']}) id {result['user_id']}, member {result['member_id']}"
        )


def _user_in(environment: str, email: str) -> tuple[Flask, uuid.UUID, uuid.UUID]:
    """The app, and the organization and id of the user with this e-mail in that environment."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with environment_app(app, environment).app_context():
        user = find_user_by_email(email)
        if user is None:
            raise click.ClickException(f"no desk user with e-mail {email!r} in {environment}")
        return app, user.organization_id, user.id


@users_cli.command("deactivate")
@click.option("--email", required=True)
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
def deactivate_user_command(email: str, environment: str) -> None:
    """The user can no longer sign in; their open desk sessions and "remember me" cookies end."""
    app, organization_id, user_id = _user_in(environment, email)
    with in_environment(app, environment):
        deactivate_user(organization_id, user_id)
    click.echo(f"User {email} deactivated; their desk sessions have ended")


@users_cli.command("set-password")
@click.option("--email", required=True)
@click.option(
    "--password", prompt=True, hide_input=True, confirmation_prompt=True, help="At least 8 characters."
)
@click.option(
    "--must-change-password",
    is_flag=True,
    help="A reset: the user must change this password at their next sign-in.",
)
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
def set_password_command(email: str, password: str, must_change_password: bool, environment: str) -> None:
    """A new password; every desk session signed in with the old one ends."""
    app, organization_id, user_id = _user_in(environment, email)
    with in_environment(app, environment):
        try:
            if must_change_password:
                reset_password(organization_id, user_id, password)
            else:
                change_password(organization_id, user_id, password)
        except ApiError as error:
            raise click.ClickException(error.message or "invalid input") from None
    after = "; they must change it at their next sign-in" if must_change_password else ""
    click.echo(f"Password of {email} changed; their other desk sessions have ended{after}")


COMMANDS = (users_cli,)
