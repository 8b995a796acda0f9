"""``messages reconcile``: settle sends left ``pending`` by a process that died (see ``sending``)."""

from __future__ import annotations

import json
from datetime import timedelta

import click
from flask import current_app
from flask.cli import AppGroup

from blueprints.messaging.sending import PENDING_LIMIT, reconcile_stale
from core.environments import ENVIRONMENTS, in_environment

messages_cli = AppGroup("messages", help="Messages sent and received.")


@messages_cli.command("reconcile")
@click.option(
    "--older-than",
    "older_than",
    type=click.IntRange(min=0),
    default=int(PENDING_LIMIT.total_seconds()),
    show_default=True,
    help="Seconds a send must have been pending.",
)
@click.option(
    "--env", "environment", type=click.Choice([*ENVIRONMENTS, "all"]), default="all", show_default=True
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per environment.")
def reconcile_command(older_than: int, environment: str, as_json: bool) -> None:
    """Settle stale pending sends: kept as accepted when the provider had them, sent again when it never
    saw them, marked unknown (and listed) when it cannot tell. Their Idempotency-Key then answers."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    environments = list(ENVIRONMENTS) if environment == "all" else [environment]
    results: dict[str, dict[str, list[str]]] = {}
    for name in environments:
        with in_environment(app, name):
            results[name] = reconcile_stale(timedelta(seconds=older_than)).as_dict()
    if as_json:
        click.echo(json.dumps(results))
        return
    for name, outcome in results.items():
        counts = ", ".join(f"{len(ids)} {kind}" for kind, ids in outcome.items())
        click.echo(f"{name}: {counts}")
        for message_id in outcome["unknown"]:
            click.echo(f"  unknown outcome (not sent again): message {message_id}")


COMMANDS = (messages_cli,)
