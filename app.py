"""Agent Desk: ``create_app()`` builds the whole service (``flask --app app ...`` finds it).

Two Flask applications run the same code: production ("live") at ``/`` and the sandbox at ``/sandbox``,
each with its own configuration and database. The outer (live) app mounts the sandbox with Werkzeug's
dispatcher and carries the Socket.IO server and the CLI.
"""

from __future__ import annotations

import gc

# Start-up allocates a few hundred thousand objects (modules, classes, tables, schemas, routes) that live
# as long as the process; the cyclic collector's passes over them while they are made free nothing and
# cost about a fifth of start-up's CPU. Collection pauses from this import until create_app() has built
# the app, which then freezes what start-up made (later full collections skip it, and forked workers
# keep sharing those pages) and resumes collection. Importing this module without building the app
# leaves collection paused: only create_app's callers import it.
_COLLECTING_BEFORE_START_UP = gc.isenabled()
gc.disable()

import importlib  # the imports after the collector is paused are start-up's bulk (E402 allowed here)
import importlib.util
import select
from types import ModuleType
from typing import Any

from flask import Flask, Response, jsonify, redirect, url_for
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.middleware.proxy_fix import ProxyFix

from core import errors, jobs, ratelimit, realtime, uow
from core.config import PROJECT_ROOT, load_settings
from core.db import db
from core.environments import LIVE, SANDBOX, LazyEnvironment, environment_app, link_environments
from core.jsonio import ExactJSONProvider
from core.openapi import INFO, SECURITY_SCHEMES, AgentDeskOpenAPI
from core.validation import validation_error_response

BLUEPRINTS_DIR = PROJECT_ROOT / "blueprints"
# Areas that others build on come first; the rest follow in alphabetical order.
FIRST_AREAS = ("organizations",)


def discover_areas() -> list[str]:
    """Every package under ``blueprints/`` is an area: ``init_app(app)`` in its ``__init__``, and by
    convention ``demo.py`` (demo seeders) and ``cli.py`` (a ``COMMANDS`` tuple). Adding an area never
    means editing this file."""
    names = sorted(p.parent.name for p in BLUEPRINTS_DIR.glob("*/__init__.py"))
    return [*[n for n in FIRST_AREAS if n in names], *[n for n in names if n not in FIRST_AREAS]]


def _optional_module(name: str) -> ModuleType | None:
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def _discard_closed_connection(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    """Refuse a pooled connection whose server side has gone away, before anything is sent on it.

    An idle client connection never has bytes waiting: the server speaks only when asked (we use no
    LISTEN). A readable socket therefore means the server closed it (PostgreSQL sends a FATAL error,
    e.g. after ``pg_terminate_backend`` or a restart, then closes). Raising DisconnectionError makes the
    pool drop it and hand out another (SQLAlchemy's checkout-event recipe). A poll with a zero timeout is
    a system call, not a round trip. SQLite connections have no socket and are left alone."""
    fileno = getattr(dbapi_connection, "fileno", None)
    if fileno is None:
        return
    try:
        descriptor = fileno()
    except Exception:  # already closed on the client side
        raise DisconnectionError("connection closed") from None
    poller = select.poll()
    poller.register(descriptor, select.POLLIN | select.POLLPRI)
    if poller.poll(0):
        raise DisconnectionError("the database closed this connection while it was idle")


def _build(settings: dict[str, Any], environment: str) -> AgentDeskOpenAPI:
    app = AgentDeskOpenAPI(
        __name__,
        info=INFO,
        security_schemes=SECURITY_SCHEMES,
        doc_prefix="/docs",
        doc_url="/openapi.json",
        validation_error_status=400,
        validation_error_callback=validation_error_response,
        instance_path=settings["INSTANCE_PATH"],
        template_folder=str(PROJECT_ROOT / "templates"),
        static_folder=str(PROJECT_ROOT / "static"),
    )
    app.config.update(settings)
    app.config["AGENTDESK_ENV"] = environment
    app.config["SQLALCHEMY_DATABASE_URI"] = (
        settings["DATABASE_URL"] if environment == LIVE else settings["SANDBOX_DATABASE_URL"]
    )
    # No pool pre-ping (a round trip before every request's first statement): connections are recycled
    # after DATABASE_POOL_RECYCLE_SECONDS, one the server closed while idle is discarded at checkout by
    # a socket poll (no round trip: _discard_closed_connection), and one that dies under a request makes
    # SQLAlchemy invalidate the pool and the request answer a retryable 503 (core.errors).
    app.config.setdefault(
        "SQLALCHEMY_ENGINE_OPTIONS", {"pool_recycle": settings["DATABASE_POOL_RECYCLE_SECONDS"]}
    )
    app.json = ExactJSONProvider(app)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    db.init_app(app)
    with app.app_context():
        event.listen(db.engine, "checkout", _discard_closed_connection)
    errors.init_app(app)
    importlib.import_module("core.health").init_app(app)  # /healthz, /readyz (docs/operations.md)
    importlib.import_module("core.logs").init_app(app)  # access log lines (LOG_REQUESTS)
    ratelimit.init_app(app)  # before the areas: the desk's limiter rewrites RATELIMIT_STORAGE_URI
    importlib.import_module("core.browser_headers").init_app(app)  # CSP, frames, referrer, HSTS
    for area in discover_areas():
        importlib.import_module(f"blueprints.{area}").init_app(app)
        _optional_module(f"blueprints.{area}.demo")

    @app.get("/openapi.json", doc_ui=False)
    def openapi_document() -> Response:
        return jsonify(app.api_doc)

    return app


def _front_door(app: Flask) -> Flask:
    # The desk's front door in each environment: the pages send a signed-out visitor to sign in.
    app.add_url_rule("/", "index", lambda: redirect(url_for("desk.home")))
    return app


_first_build_done = False


def create_app(config: dict[str, Any] | None = None, *, warm: bool = False) -> Flask:
    """The service. The sandbox app is built when first needed (a request under ``/sandbox``, a command
    or job acting on the sandbox store): a CLI command on live data does not pay for it. ``warm=True``
    builds it now, for servers (``serve``, ``gunicorn 'app:create_app(warm=True)'``), so the first
    sandbox request does not wait. The cyclic collector is paused while the app is built (see the top
    of this module)."""
    global _first_build_done
    collecting = gc.isenabled() or (not _first_build_done and _COLLECTING_BEFORE_START_UP)
    gc.disable()
    try:
        return _create_app(config, warm=warm)
    finally:
        if not _first_build_done:
            gc.freeze()
            _first_build_done = True
        if collecting:
            gc.enable()


def _create_app(config: dict[str, Any] | None, *, warm: bool) -> Flask:
    settings = load_settings(config)
    importlib.import_module("core.logs").configure(settings)  # format, level, secrets masked
    live = _front_door(_build(settings, LIVE))
    link_environments(live, lambda: _front_door(_build(settings, SANDBOX)))
    live.wsgi_app = DispatcherMiddleware(  # type: ignore[method-assign]
        live.wsgi_app, {settings["SANDBOX_PREFIX"]: LazyEnvironment(live, SANDBOX)}
    )
    if proxies := settings["TRUSTED_PROXIES"]:
        # Behind nginx every request comes from nginx: the client's address (sign-in limits, rate limits,
        # the audit log's source) and scheme are the ones the trusted proxies appended, never what a
        # client wrote into X-Forwarded-For itself.
        live.wsgi_app = ProxyFix(live.wsgi_app, x_for=proxies, x_proto=proxies)  # type: ignore[method-assign]
    realtime.init_app(live)
    jobs.init_app(live)
    cli_modules = [importlib.import_module("core.cli")]
    cli_modules += [m for a in discover_areas() if (m := _optional_module(f"blueprints.{a}.cli"))]
    for module in cli_modules:
        for command in module.COMMANDS:
            live.cli.add_command(uow.command(command))
    if warm:
        environment_app(live, SANDBOX)
    return live
