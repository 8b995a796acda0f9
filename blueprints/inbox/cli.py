"""``broadcasts resume``: restart broadcasts whose worker died (also run every minute by the queue)."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

from blueprints.inbox.services.broadcasts import resume_stalled
from core.environments import ENVIRONMENTS, in_environment

broadcasts_cli = AppGroup("broadcasts", help="Broadcasts.")


@broadcasts_cli.command("resume")
@click.option("--older-than", default=60, show_default=True, type=int, help="Seconds without progress.")
def resume(older_than: int) -> None:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    for environment in ENVIRONMENTS:
        with in_environment(app, environment):
            resumed = resume_stalled(older_than_seconds=older_than)
            click.echo(f"{environment}: resumed {len(resumed)} broadcast(s)")


COMMANDS = (broadcasts_cli,)
