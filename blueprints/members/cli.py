"""``users create``: a desk login user and its human member."""

from __future__ import annotations

import json
import uuid

import click
from flask import current_app
from flask.cli import AppGroup

from blueprints.members.models import ROLES
from blueprints.members.services.users import create_user
from core.environments import ENVIRONMENTS, LIVE, in_environment
from core.errors import ApiError

users_cli = AppGroup("users", help="Desk login users (each with its human member).")


@users_cli.command("create")
@click.option("--org", "org_id", required=True, help="Organization id.")
@click.option("--email", required=True)
@click.option("--password", required=True, help="At least 8 characters; stored as an Argon2id hash.")
@click.option("--name", required=True)
@click.option("--role", type=click.Choice(list(ROLES)), default="agent", show_default=True)
@click.option("--member-id", default=None, help="Custom id for the member (a generated UUID otherwise).")
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def create_user_command(
    org_id: str,
    email: str,
    password: str,
    name: str,
    role: str,
    member_id: str | None,
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
                organization_id, email=email, password=password, name=name, role=role, member_id=member_id
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
            "environment": environment,
        }
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(
            f"User {result['email']} ({result['role']}) id {result['user_id']}, member {result['member_id']}"
        )


COMMANDS = (users_cli,)
