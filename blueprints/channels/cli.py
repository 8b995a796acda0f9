"""``channels connect`` (connect a WhatsApp number, Instagram account or Facebook Page), ``channels list``,
``channels simulate-inbound`` (a message from a contact, for simulator addresses) and ``webhooks
dead-letters`` (inbound items that could not be stored, those of no known organization included)."""

from __future__ import annotations

import json
import sys
import uuid

import click
from flask import current_app
from flask.cli import AppGroup

from blueprints.channels import dead_letters, services
from blueprints.channels.inbound import Poison
from blueprints.channels.models import PROVIDERS, SERVICES
from blueprints.channels.providers import uses_simulator
from blueprints.channels.schemas import AddressOut, DeadLetterOut
from blueprints.channels.simulator import simulate_inbound
from core.environments import ENVIRONMENTS, LIVE, in_environment
from core.errors import ApiError

channels_cli = AppGroup("channels", help="Channel connections (organization addresses).")
ENV_CHOICES = [*ENVIRONMENTS, "all"]


def _organization_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise click.ClickException(f"--org: not a UUID: {value!r}") from None


@channels_cli.command("connect")
@click.option("--org", "org_id", required=True, help="Organization id.")
@click.option("--service", type=click.Choice(list(SERVICES)), required=True)
@click.option("--address", required=True, help="WhatsApp phone-number id, Instagram account id or Page id.")
@click.option("--phone-number", default=None, help="The number's display form, e.g. +5215512345678.")
@click.option("--waba-id", default=None, help="WhatsApp Business Account id.")
@click.option("--verified-name", default=None)
@click.option("--access-token", default=None, help="Graph API token; '-' reads it from standard input.")
@click.option("--provider", type=click.Choice(list(PROVIDERS)), default="meta", show_default=True)
@click.option(
    "--env",
    "environment",
    type=click.Choice(ENV_CHOICES),
    default="all",
    show_default=True,
    help="Store(s) to connect in; the sandbox always sends through the simulator.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def connect(
    org_id: str,
    service: str,
    address: str,
    phone_number: str | None,
    waba_id: str | None,
    verified_name: str | None,
    access_token: str | None,
    provider: str,
    environment: str,
    as_json: bool,
) -> None:
    """Connect (or reconnect, e.g. with a new token) an organization address. Tokens are stored encrypted."""
    organization_id = _organization_id(org_id)
    if access_token == "-":
        access_token = sys.stdin.readline().strip()
    connection = services.Connection(
        service=service,
        address=address,
        provider=provider,
        phone_number=phone_number,
        waba_id=waba_id,
        verified_name=verified_name,
        access_token=access_token or None,
    )
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    environments = list(ENVIRONMENTS) if environment == "all" else [environment]
    result: dict[str, object] = {}
    for name in environments:
        with in_environment(app, name):
            try:
                record = services.connect_address(organization_id, connection)
            except ApiError as error:
                raise click.ClickException(f"{name}: {error.message}") from None
            result = AddressOut.dump(record)
    result["environments"] = environments
    if as_json:
        click.echo(json.dumps(result))
    else:
        token = "with an access token" if result["has_access_token"] else "without an access token"
        click.echo(
            f"Connected {service} {address} for {organization_id} ({provider}, {token}) "
            f"in {', '.join(environments)}"
        )


@channels_cli.command("list")
@click.option("--org", "org_id", required=True)
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def list_command(org_id: str, environment: str, as_json: bool) -> None:
    """List an organization's addresses (tokens are never shown)."""
    organization_id = _organization_id(org_id)
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with in_environment(app, environment):
        rows = [AddressOut.dump(a) for a in services.list_addresses(organization_id)]
    if as_json:
        click.echo(json.dumps(rows))
    else:
        for row in rows:
            click.echo(f"{row['service']:<10} {row['address']:<20} {row['status']:<16} {row['provider']}")


@channels_cli.command("simulate-inbound")
@click.option("--org", "org_id", required=True)
@click.option("--address", required=True, help="The organization address receiving the message.")
@click.option("--from", "sender", required=True, help="Contact number (WhatsApp) or PSID.")
@click.option("--text", required=True)
@click.option("--name", default=None, help="The contact's profile name.")
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
def simulate_inbound_command(
    org_id: str, address: str, sender: str, text: str, name: str | None, environment: str
) -> None:
    """Store a message from a contact as if the provider had delivered it (simulator addresses only)."""
    organization_id = _organization_id(org_id)
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with in_environment(app, environment):
        record = services.get_address(organization_id, address)
        if record is None:
            raise click.ClickException("Organization address not found")
        if not uses_simulator(record):
            raise click.ClickException(
                "only simulator addresses (or the sandbox) can simulate inbound messages"
            )
        try:
            simulate_inbound(record.service, record.address, sender, text, name)
        except Poison as refused:
            raise click.ClickException(f"--{refused}") from None
    click.echo(f"inbound message from {sender} stored")


webhooks_cli = AppGroup("webhooks", help="Provider webhook deliveries.")


@webhooks_cli.command("dead-letters")
@click.option("--org", "org_id", default=None, help="Only this organization's.")
@click.option("--unassigned", is_flag=True, help="Only those whose organization is unknown.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array.")
def dead_letters_command(
    org_id: str | None, unassigned: bool, limit: int, environment: str, as_json: bool
) -> None:
    """Inbound items that could not be stored, newest first. Those whose organization could not be
    determined (organization null) are visible only here."""
    if org_id and unassigned:
        raise click.ClickException("--org and --unassigned exclude each other")
    organization_id = _organization_id(org_id) if org_id else None
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with in_environment(app, environment):
        rows = [
            DeadLetterOut.model_validate(row).model_dump(mode="json")
            for row in dead_letters.list_for_operators(
                organization_id=organization_id, unassigned=unassigned, limit=limit
            )
        ]
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        click.echo(
            f"{row['received_at']}  {row['organization_id'] or '-':<36}  {row['service'] or '-':<9}  "
            f"{row['organization_address'] or '-':<20}  {row['reason']}"
        )
        click.echo(f"    {row['raw'][:200]}")


COMMANDS = (channels_cli, webhooks_cli)
