"""``orgs``, ``keys`` and ``tokens`` commands, used by people and by tests."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import click
from flask import current_app
from flask.cli import AppGroup

from blueprints.organizations import services
from blueprints.organizations.models import Organization
from core.db import db, isoformat
from core.environments import ENVIRONMENTS, LIVE, in_environment
from core.errors import ApiError
from core.tokens import issue_token

orgs_cli = AppGroup("orgs", help="Organizations (created in both environments with one id).")
keys_cli = AppGroup("keys", help="API keys.")
tokens_cli = AppGroup("tokens", help="Signed JWTs for the CRM area.")


def _fail(message: str) -> None:
    raise click.ClickException(message)


def _parse_uuid(value: str, name: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        _fail(f"{name}: not a UUID: {value!r}")
        raise


@orgs_cli.command("create")
@click.option("--name", required=True)
@click.option("--products", default="", help="Comma-separated: SIM,ESIM,TRAVEL_ESIM")
@click.option(
    "--timezone",
    default="UTC",
    show_default=True,
    help="IANA zone the desk shows times in, e.g. America/Mexico_City.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def create_org(name: str, products: str, timezone: str, as_json: bool) -> None:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    organization_id = uuid.uuid4()
    product_list = [p for p in products.split(",") if p.strip()]
    keys: dict[str, str] = {}
    try:
        products_chosen = services.normalize_products(product_list)
        for environment in ENVIRONMENTS:
            with in_environment(app, environment):
                organization = services.create_organization(
                    name, products_chosen, organization_id, timezone=timezone
                )
                keys[environment] = services.issue_api_key(
                    organization, environment, name="default"
                ).plaintext
    except ApiError as error:
        _fail(error.message or "invalid input")
    result = {
        "organization_id": str(organization_id),
        "name": name.strip(),
        "products": products_chosen,
        "api_keys": {"live": keys["live"], "sandbox": keys["sandbox"]},
    }
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(f"Organization {result['name']} ({organization_id})")
        click.echo(f"  live key:    {keys['live']}")
        click.echo(f"  sandbox key: {keys['sandbox']}")


@orgs_cli.command("timezone")
@click.option("--org", "org_id", required=True)
@click.argument("timezone")
def set_org_timezone(org_id: str, timezone: str) -> None:
    """Set the IANA zone the desk shows this organization's times in (both environments)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    organization_id = _parse_uuid(org_id, "--org")
    try:
        for environment in ENVIRONMENTS:
            with in_environment(app, environment):
                services.set_timezone(organization_id, timezone)
    except ApiError as error:
        _fail(error.message or "invalid input")
    click.echo(f"Organization {organization_id}: times shown in {timezone.strip()}")


@orgs_cli.command("list")
@click.option("--json", "as_json", is_flag=True)
def list_orgs(as_json: bool) -> None:
    from sqlalchemy import select

    rows = [
        {"organization_id": str(o.id), "name": o.name, "products": o.products}
        for o in db.session.scalars(select(Organization).order_by(Organization.created_at))
    ]
    if as_json:
        click.echo(json.dumps(rows))
    else:
        for row in rows:
            click.echo(f"{row['organization_id']}  {row['name']}  {','.join(row['products'])}")


@keys_cli.command("create")
@click.option("--org", "org_id", required=True)
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
@click.option("--name", default=None)
@click.option("--expires-at", default=None, help="ISO 8601 datetime after which the key stops working.")
@click.option("--json", "as_json", is_flag=True)
def create_key(
    org_id: str, environment: str, name: str | None, expires_at: str | None, as_json: bool
) -> None:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    organization_id = _parse_uuid(org_id, "--org")
    expiry = None
    if expires_at:
        try:
            expiry = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
        except ValueError:
            _fail(f"--expires-at: not an ISO 8601 datetime: {expires_at!r}")
        if expiry is not None and expiry.tzinfo is None:
            expiry = expiry.replace(tzinfo=UTC)
    with in_environment(app, environment):
        organization = services.get_organization(organization_id)
        if organization is None:
            _fail(f"--org: no organization {organization_id} in the {environment} store")
        issued = services.issue_api_key(organization, environment, name=name, expires_at=expiry)
        result = {
            "id": str(issued.key.id),
            "organization_id": str(organization_id),
            "environment": environment,
            "api_key": issued.plaintext,
            "prefix": issued.key.prefix,
            "expires_at": isoformat(issued.key.expires_at),
        }
    click.echo(json.dumps(result) if as_json else issued.plaintext)


@keys_cli.command("revoke")
@click.argument("key_prefix")
def revoke_key(key_prefix: str) -> None:
    """Revoke by the key's shown prefix (sk_live_ + 8 characters), a start of it, or the whole key."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    matches: dict[str, list[str]] = {}
    for environment in ENVIRONMENTS:
        with in_environment(app, environment):
            matches[environment] = [k.prefix for k in services.keys_matching(key_prefix)]
    found = [p for prefixes in matches.values() for p in prefixes]
    if not found:
        _fail(f"no key with prefix {key_prefix!r}")
    if len(found) > 1:
        listed = ", ".join(sorted(found))
        _fail(f"prefix {key_prefix!r} is ambiguous ({len(found)} keys: {listed}); give more of it")
    revoked = 0
    for environment in ENVIRONMENTS:
        if matches[environment]:
            with in_environment(app, environment):
                revoked += len(services.revoke_api_keys(key_prefix))
    click.echo(f"revoked {revoked} key with prefix {found[0]}")


@keys_cli.command("list")
@click.option("--org", "org_id", required=True)
@click.option("--json", "as_json", is_flag=True)
def list_keys(org_id: str, as_json: bool) -> None:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    organization_id = _parse_uuid(org_id, "--org")
    rows = []
    for environment in ENVIRONMENTS:
        with in_environment(app, environment):
            rows += [
                {
                    "id": str(k.id),
                    "environment": k.environment,
                    "prefix": k.prefix,
                    "name": k.name,
                    "active": k.active,
                    "expires_at": isoformat(k.expires_at),
                    "last_used_at": isoformat(k.last_used_at),
                    "created_at": isoformat(k.created_at),
                }
                for k in services.list_keys(organization_id)
            ]
    if as_json:
        click.echo(json.dumps(rows))
    else:
        for row in rows:
            state = "active" if row["active"] else "revoked"
            click.echo(
                f"{row['prefix']}…  {row['environment']:<8} {state:<8} last used {row['last_used_at']}"
            )


@tokens_cli.command("issue")
@click.option("--org", "org_id", required=True)
@click.option("--subject", required=True, help="Member or user id the token acts for.")
@click.option("--ttl", default=None, type=click.IntRange(1, 31 * 24 * 3600), help="Seconds.")
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
def issue(org_id: str, subject: str, ttl: int | None, environment: str) -> None:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    organization_id = _parse_uuid(org_id, "--org")
    with in_environment(app, environment) as env_app:
        if services.get_organization(organization_id) is None:
            _fail(f"--org: no organization {organization_id} in the {environment} store")
        token = issue_token(
            env_app.config["SECRET_KEY"],
            organization_id=organization_id,
            subject=subject,
            environment=environment,
            ttl_seconds=ttl or env_app.config["JWT_TTL_SECONDS"],
        )
    click.echo(token)


COMMANDS = (orgs_cli, keys_cli, tokens_cli)
