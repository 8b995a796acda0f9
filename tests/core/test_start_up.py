"""What start-up builds: the sandbox app on first use, Alembic only for a migration command."""

from __future__ import annotations

import gc
import importlib.metadata
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from flask import Flask
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from app import create_app
from core.config import PROJECT_ROOT
from core.environments import LIVE, SANDBOX, built_environments, environment_app
from core.openapi import LazyBuildRule


def test_the_sandbox_is_built_by_its_first_request(app_config: dict[str, Any]) -> None:
    fresh = create_app(app_config)
    assert built_environments(fresh) == (LIVE,)
    response = fresh.test_client().get("/sandbox/healthz")
    assert response.status_code == 200
    assert built_environments(fresh) == (LIVE, SANDBOX)
    sandbox = environment_app(fresh, SANDBOX)
    assert sandbox.config["AGENTDESK_ENV"] == SANDBOX
    assert environment_app(sandbox, LIVE) is fresh  # each finds its sibling


def test_threads_asking_at_once_build_one_sandbox(app_config: dict[str, Any]) -> None:
    fresh = create_app(app_config)
    found: list[Any] = []
    threads = [
        threading.Thread(target=lambda: found.append(environment_app(fresh, SANDBOX))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 4 and len({id(app) for app in found}) == 1


def test_a_server_builds_both_before_it_listens(app_config: dict[str, Any]) -> None:
    assert built_environments(create_app(app_config, warm=True)) == (LIVE, SANDBOX)


def test_a_command_on_live_data_loads_no_alembic_and_no_sandbox(tmp_path: Path) -> None:
    """The ``flask`` command loads every installed plugin before running any command: no plugin may pull
    in Alembic (Flask-Migrate did, for every command). A command that queues no job does not load the
    job queue (Huey and its storages)."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "SANDBOX_DATABASE_URL", "REDIS_URL", "JOBS_MODE"}
    }
    environment |= {"INSTANCE_PATH": str(tmp_path), "LOG_LEVEL": "ERROR"}
    flask = [sys.executable, "-m", "flask", "--app", "app"]
    subprocess.run([*flask, "setup"], cwd=PROJECT_ROOT, env=environment, check=True, capture_output=True)
    loaded = tmp_path / "modules.txt"
    # The modules loaded by the end of the command (importtime would also list failed import attempts,
    # such as Engine.IO's optional aiohttp).
    script = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(loaded)!r}, 'w').write('\\n'.join(sorted(sys.modules))))\n"
        "from flask.cli import main\n"
        "sys.argv = ['flask', '--app', 'app', 'orgs', 'list']\n"
        "main()\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, env=environment, check=True)
    imported = set(loaded.read_text().split())
    assert "app" in imported and "blueprints.crm.models" in imported  # the measurement saw the app
    heavy = {"alembic", "flask_migrate", "huey"}
    assert not {name for name in imported if name.split(".")[0] in heavy}


def test_the_product_does_not_install_aiohttp() -> None:
    """Engine.IO imports aiohttp at every start of every process when it is installed (~0.3 s of each
    command): no dependency of the product may bring it (the tests' Twilio SDK does, in dev installs)."""
    seen: set[str] = set()
    pending = ["agent-desk"]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        for requirement in importlib.metadata.requires(name) or []:
            parsed = Requirement(requirement)
            if parsed.marker is None or parsed.marker.evaluate({"extra": ""}):
                pending.append(parsed.name)
    assert "twilio" not in seen and "aiohttp" not in seen
    assert {"flask", "flask-socketio", "sqlalchemy"} <= seen  # the walk saw the dependencies


def test_every_route_builds_its_url(app: Flask) -> None:
    """Builders are generated on first use (core.openapi.LazyBuildRule): each rule still builds, with its
    converters, defaults and extra arguments as a query string."""
    adapter = app.url_map.bind("agentdesk.test")
    built = 0
    for rule in app.url_map.iter_rules():
        values = {name: "1" if name != "filename" else "desk.css" for name in rule.arguments}
        url = adapter.build(
            rule.endpoint, {**values, "extra": "a b"}, method=next(iter(rule.methods or {"GET"}))
        )
        # a WebSocket rule builds an absolute ws:// URL; the others a path
        assert url.startswith("ws://" if rule.websocket else "/") and "extra=a+b" in url, (rule.rule, url)
        built += 1
    assert built > 300 and isinstance(next(iter(app.url_map.iter_rules())), LazyBuildRule)


def test_db_commands_report_each_store(tmp_path: Path, app_config: dict[str, Any]) -> None:
    app = create_app({**app_config, "INSTANCE_PATH": str(tmp_path)})
    runner = app.test_cli_runner()
    heads = runner.invoke(args=["db", "heads"])
    assert heads.exit_code == 0, heads.output
    assert "crm_" in heads.output and "(head)" in heads.output
    unknown = runner.invoke(args=["db", "downgrade", "no_such_revision"])
    assert unknown.exit_code != 0 and "no_such_revision" in unknown.output


def test_building_the_app_leaves_the_collector_running(app_config: dict[str, Any]) -> None:
    """The cyclic collector pauses while the app is built (app.py) and runs again afterwards."""
    assert gc.isenabled()
    create_app(app_config)
    assert gc.isenabled()
    gc.disable()
    try:
        create_app(app_config)
        assert not gc.isenabled()  # a caller that had paused it keeps it paused
    finally:
        gc.enable()
