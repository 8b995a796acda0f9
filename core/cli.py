"""Commands that are not an area's: ``setup``, ``demo seed``, ``serve`` and ``jobs worker``."""

from __future__ import annotations

import os
from typing import Any

import click
from flask import current_app
from flask.cli import AppGroup, with_appcontext

from core import demo, jobs
from core.environments import ENVIRONMENTS, SANDBOX, environment_app, in_environment
from core.migrations import db_cli, upgrade
from core.realtime import mark_serving, socketio

demo_cli = AppGroup("demo", help="Demo data.")
jobs_cli = AppGroup("jobs", help="Background jobs.")


def apply_migrations() -> None:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    for environment in ENVIRONMENTS:
        with in_environment(app, environment):
            upgrade(revision="heads")  # each area may keep its own migration branch


@click.command("setup")
@with_appcontext
def setup_command() -> None:
    """Apply the migrations to both stores (idempotent)."""
    apply_migrations()
    click.echo("migrations applied to the live and sandbox stores")


@demo_cli.command("seed")
@click.option(
    "--scale",
    default=None,
    help="Also generate the large dataset (organization Scale Co, live store): 'large' for 100,000 "
    "conversations with 1,000,000 messages and the rest to match, or a fraction such as 0.01.",
)
@click.option("--quiet", is_flag=True, help="No progress bars for --scale.")
def seed_command(scale: str | None, quiet: bool) -> None:
    """Create the demo organization and each area's demo data (idempotent)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    generate = _scale_generator(scale) if scale is not None else None
    lines: list[str] = []
    for environment in ENVIRONMENTS:
        with in_environment(app, environment):
            for part in demo.seeders():
                lines += part.run(environment) or []
    click.echo(f"Demo organization: {demo.DEMO_ORGANIZATION_NAME} ({demo.DEMO_ORGANIZATION_ID})")
    for line in lines:
        click.echo(f"  {line}")
    if generate is not None:
        scale_lines = generate(app, quiet=quiet)
        click.echo("Large dataset:")
        for line in scale_lines:
            click.echo(f"  {line}")


def _scale_generator(scale: str) -> Any:
    """The large-dataset generator at ``scale``: a tool of bench/ (it writes six areas' tables), not a
    layer of the app, so it is imported only when ``--scale`` asks for it, from a checkout."""
    try:
        from bench.scale import generate  # a bench tool, loaded only for --scale (docs/architecture.md)
        from bench.scale.common import parse_scale  # idem
    except ImportError as missing:
        raise click.ClickException(f"--scale needs the project's bench/ folder: {missing}") from None
    try:
        fraction = parse_scale(scale)
    except ValueError as error:
        raise click.BadParameter(
            f"{error}: give 'large' or a fraction such as 0.01", param_hint="--scale"
        ) from None
    return lambda app, quiet: generate(app, fraction, quiet=quiet)


@click.command("serve")
@with_appcontext
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--debug", is_flag=True)
def serve_command(host: str, port: int, debug: bool) -> None:
    """Serve HTTP and Socket.IO (threading mode); in embedded mode also consume the job queue."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    environment_app(app, SANDBOX)  # built now, not on the first sandbox request (create_app(warm=True))
    if app.config.get("JOBS_MODE") == "embedded":
        jobs.start_embedded_consumer()
        mark_serving(app)  # other processes (the CLI) relay their events here through the job queue
    # werkzeug's server only here: every other command would pay for importing it
    from core.serving import JsonErrorRequestHandler

    # Flask refuses app.run() inside its own CLI unless told this is deliberate; this command *is* the runner.
    os.environ.pop("FLASK_RUN_FROM_CLI", None)
    click.echo(f"Agent Desk on http://{host}:{port}  (API docs: http://{host}:{port}/docs/)")
    socketio.run(
        app,
        host=host,
        port=port,
        debug=debug,
        use_reloader=False,
        allow_unsafe_werkzeug=True,
        request_handler=JsonErrorRequestHandler,
    )


@jobs_cli.command("worker")
@click.option("--workers", default=2, show_default=True, type=int)
def worker_command(workers: int) -> None:
    """Consume the job queue in this process (use with REDIS_URL)."""
    # Say which queue: a worker started with another deployment's environment (JOBS_QUEUE_NAME,
    # SOCKETIO_CHANNEL) would otherwise wait silently on a queue nobody fills.
    click.echo(f"consuming job queue {jobs.queue().name!r} ({current_app.config.get('JOBS_MODE')})")
    jobs.run_worker(workers)


COMMANDS = (setup_command, demo_cli, serve_command, jobs_cli, db_cli)
