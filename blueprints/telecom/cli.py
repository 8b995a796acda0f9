"""``telecom catalogue load`` and ``telecom balance credit``: the partner catalogue and prepaid credits."""

from __future__ import annotations

import uuid
from pathlib import Path

import click
from flask import current_app
from flask.cli import AppGroup

from blueprints.organizations.services import get_organization
from blueprints.telecom.services import catalogue, ledger
from blueprints.telecom.services.common import cents_of, pesos
from core.environments import ENVIRONMENTS, LIVE, in_environment

telecom_cli = AppGroup("telecom", help="Telecom partner area: catalogue and balances.")
catalogue_cli = AppGroup("catalogue", help="Plans, top-ups, travel eSIM offers and area codes.")
balance_cli = AppGroup("balance", help="Partners' prepaid balances.")
telecom_cli.add_command(catalogue_cli)
telecom_cli.add_command(balance_cli)


def _environments(choice: str) -> list[str]:
    return list(ENVIRONMENTS) if choice == "all" else [choice]


@catalogue_cli.command("load")
@click.argument("path", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--env", "environment", type=click.Choice([*ENVIRONMENTS, "all"]), default="all", show_default=True
)
def load_command(path: Path | None, environment: str) -> None:
    """Load the catalogue from PATH (default: the shipped blueprints/telecom/data/catalogue.json) and
    rebuild the area codes from libphonenumber. Items missing from the file are archived."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    for name in _environments(environment):
        try:
            with in_environment(app, name):
                result = catalogue.load_catalogue(path)
        except catalogue.CatalogueError as error:
            raise click.ClickException(str(error)) from None
        click.echo(
            f"{name}: {result.plans} plans, {result.topups} top-ups, {result.esim_offers} eSIM offers, "
            f"{result.area_codes} area codes ({result.archived} archived)"
        )


@balance_cli.command("credit")
@click.option("--org", "organization", required=True, help="Organization id")
@click.option("--amount", required=True, help="MXN pesos, at most two decimals (e.g. 500.00)")
@click.option("--env", "environment", type=click.Choice(ENVIRONMENTS), default=LIVE, show_default=True)
@click.option("--description", default="Prepaid credit", show_default=True)
def credit_command(organization: str, amount: str, environment: str, description: str) -> None:
    """Credit a partner's prepaid balance (a new, immutable ledger entry)."""
    try:
        organization_id = uuid.UUID(organization)
        cents = cents_of(amount)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    if cents <= 0:
        raise click.ClickException("--amount must be greater than zero")
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with in_environment(app, environment):
        if get_organization(organization_id) is None:
            raise click.ClickException(f"no organization {organization_id} in {environment}")
        entry = ledger.credit(organization_id, cents, description)
        after = pesos(entry.balance_after_cents)
        click.echo(f"{environment}: credited {pesos(cents)} MXN ({entry.id}); ledger {after} MXN")


COMMANDS = (telecom_cli,)
