"""The two environments of the service: production ("live", mounted at /) and sandbox (at /sandbox).

Both run the same code as two Flask applications, each with its own configuration and database, so a
sandbox request can never reach production data: there is no shared session or engine to confuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask, current_app

from core import uow

LIVE = "live"
SANDBOX = "sandbox"
ENVIRONMENTS = (LIVE, SANDBOX)
KEY_PREFIXES = {LIVE: "sk_live_", SANDBOX: "sk_test_"}

_EXTENSION = "agentdesk.environments"


def current_environment() -> str:
    return current_app.config["AGENTDESK_ENV"]


def link_environments(live: Flask, sandbox: Flask) -> None:
    """Let each app find its sibling, for commands that act on both stores."""
    apps = {LIVE: live, SANDBOX: sandbox}
    live.extensions[_EXTENSION] = apps
    sandbox.extensions[_EXTENSION] = apps


def environment_app(app: Flask, environment: str) -> Flask:
    return app.extensions[_EXTENSION][environment]


@contextmanager
def in_environment(app: Flask, environment: str) -> Iterator[Flask]:
    """Run a block inside the application context of one environment, as one unit of work: it commits
    when the block ends normally and rolls back when it raises (jobs, sweeps and CLI commands)."""
    target = environment_app(app, environment)
    with target.app_context():
        try:
            yield target
        except BaseException:
            uow.rollback()
            raise
        uow.commit()
