"""The two environments of the service: production ("live", mounted at /) and sandbox (at /sandbox).

Both run the same code as two Flask applications, each with its own configuration and database, so a
sandbox request can never reach production data: there is no shared session or engine to confuse.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask, current_app

from core import uow

LIVE = "live"
SANDBOX = "sandbox"
ENVIRONMENTS = (LIVE, SANDBOX)
KEY_PREFIXES = {LIVE: "sk_live_", SANDBOX: "sk_test_"}

_EXTENSION = "agentdesk.environments"


def current_environment() -> str:
    return current_app.config["AGENTDESK_ENV"]


class _Environments:
    """The live app and the sandbox, which is built the first time something needs it.

    Building an environment's app is half of ``create_app()`` (every area's routes, models and
    schemas bound to it), and most processes never touch the sandbox: a CLI command on live data, a
    job for a live organization. Servers build it before they listen (``warm``)."""

    def __init__(self, live: Flask, build_sandbox: Callable[[], Flask]) -> None:
        self._apps: dict[str, Flask] = {LIVE: live}
        self._build_sandbox = build_sandbox
        self._lock = threading.Lock()

    def get(self, environment: str) -> Flask:
        app = self._apps.get(environment)
        if app is not None:
            return app
        if environment != SANDBOX:
            raise KeyError(environment)
        with self._lock:  # two threads asking at once build it once
            if SANDBOX not in self._apps:
                sandbox = self._build_sandbox()
                sandbox.extensions[_EXTENSION] = self
                self._apps[SANDBOX] = sandbox
        return self._apps[SANDBOX]

    def built(self) -> tuple[str, ...]:
        return tuple(self._apps)


def link_environments(live: Flask, build_sandbox: Callable[[], Flask]) -> None:
    """Let each app find its sibling, for commands that act on both stores; the sandbox is built on
    first use (``environment_app``)."""
    live.extensions[_EXTENSION] = _Environments(live, build_sandbox)


def environment_app(app: Flask, environment: str) -> Flask:
    return app.extensions[_EXTENSION].get(environment)


def built_environments(app: Flask) -> tuple[str, ...]:
    """The environments whose app this process has built so far."""
    return app.extensions[_EXTENSION].built()


class LazyEnvironment:
    """A WSGI application that passes each request to one environment's app, built on the first
    request (the sandbox mounted at ``SANDBOX_PREFIX``)."""

    def __init__(self, app: Flask, environment: str) -> None:
        self._app = app
        self._environment = environment

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        return environment_app(self._app, self._environment).wsgi_app(environ, start_response)


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
