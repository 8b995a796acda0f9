"""Real processes for the crash tests: ``flask serve`` (and ``flask jobs worker``) as children on their own
stores, started, killed with SIGKILL and started again on the same port, as a supervisor restarts them.

The stores are SQLite files under the test's folder, or, with ``TEST_DATABASE_URL``, two PostgreSQL
databases of their own (``<name>_reliab`` and ``<name>_reliab_sandbox``) beside the session's, so the
session's app (which empties its stores between tests) never touches what the children write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import Engine, Uuid, bindparam, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.sql.elements import TextClause

from tests.conftest import TEST_SECRET
from tests.fakes.fixtures import APP_SECRET
from tests.support.servers import free_port, wait_until
from tests.support.stores import Stores, _postgres_stores

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FLASK = [str(PROJECT_ROOT / ".venv" / "bin" / "flask"), "--app", "app"]
if not Path(FLASK[0]).exists():
    FLASK = [sys.executable, "-m", "flask", "--app", "app"]


def child_stores(tmp_path: Path) -> Stores:
    """Empty stores for the children (see the module's docstring); ``setup`` migrates them."""
    url = os.environ.get("TEST_DATABASE_URL")
    if not url:
        return Stores(f"sqlite:///{tmp_path / 'live.db'}", f"sqlite:///{tmp_path / 'sandbox.db'}", "sqlite")
    own = make_url(url)
    return _postgres_stores(own.set(database=f"{own.database}_reliab").render_as_string(False))


_CLI_BATCH = """
import json, sys
from app import create_app

runner = create_app().test_cli_runner()
outputs, org = [], ""
for args in json.loads(sys.argv[1]):
    result = runner.invoke(args=[arg.replace("{org}", org) for arg in args])
    if result.exit_code != 0:
        sys.exit(f"{args}: {result.output}{result.exception!r}")
    outputs.append(result.output)
    if args[:2] == ["orgs", "create"]:
        org = json.loads(result.stdout)["organization_id"]
print(json.dumps(outputs))
"""


# What each crash test covered, printed by conftest.pytest_terminal_summary (CI output included).
FIGURES: list[str] = []


def record_figure(line: str) -> None:
    FIGURES.append(line)


@dataclass
class Process:
    """One child: its command line, kept so it can be started again after a kill."""

    command: list[str]
    environment: dict[str, str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        with self.log.open("ab") as log:
            self.popen = subprocess.Popen(
                self.command, cwd=PROJECT_ROOT, env=self.environment, stdout=log, stderr=subprocess.STDOUT
            )
        return self

    def kill(self) -> None:
        """SIGKILL: no handler runs, no transaction commits, no lease is released."""
        assert self.popen is not None
        os.kill(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=30)
        assert self.popen.returncode == -signal.SIGKILL

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=30)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


@dataclass
class Stack:
    """The children's environment, their stores, and the processes started on them."""

    workdir: Path
    stores: Stores
    environment: dict[str, str]
    processes: list[Process] = field(default_factory=list)
    _engine: Engine | None = None

    @classmethod
    def create(cls, workdir: Path, **settings: str | None) -> Stack:
        """Fresh stores (migrate them with ``flask_many(["setup"], ...)``); ``settings`` override the
        environment (None removes a variable)."""
        workdir.mkdir(parents=True, exist_ok=True)
        stores = child_stores(workdir)
        environment = {
            **os.environ,
            "DATABASE_URL": stores.live_url,
            "SANDBOX_DATABASE_URL": stores.sandbox_url,
            "INSTANCE_PATH": str(workdir / "instance"),
            "SECRET_KEY": TEST_SECRET,
            "META_APP_SECRET": APP_SECRET,
            "SOCKETIO_CHANNEL": f"agentdesk-crash-{uuid.uuid4().hex}",
            "DEMO_LIVE_MESSAGES": "0",
            # The crash tests drive one organization as fast as it is answered; its requests are counted
            # (the counter is in the request path) but never refused: the limits have their own tests.
            "RATE_LIMIT_API": "1000000/second",
            "RATE_LIMIT_API_SANDBOX": "1000000/second",
        }
        for name in ("REDIS_URL", "INGEST_MODE", "JOBS_MODE", "FLASK_RUN_FROM_CLI"):
            environment.pop(name, None)
        for name, value in settings.items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value
        return cls(workdir, stores, environment)

    # ---- commands and processes ----
    def flask_many(self, *commands: list[str]) -> list[str]:
        """Several CLI commands in one process (building the app is the slow part of each); outputs."""
        done = subprocess.run(
            [sys.executable, "-c", _CLI_BATCH, json.dumps(commands)],
            cwd=PROJECT_ROOT,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        return list(json.loads(done.stdout.splitlines()[-1]))

    def prepare(self, organization: str, *commands: list[str]) -> dict[str, Any]:
        """Migrate the stores and create an organization (``orgs create --json``), then run ``commands``
        with ``{org}`` replaced by its id."""
        outputs = self.flask_many(["setup"], ["orgs", "create", "--name", organization, "--json"], *commands)
        return dict(json.loads(outputs[1]))

    def server(self, port: int | None = None) -> Server:
        port = port or free_port()
        process = Process(
            [*FLASK, "serve", "--port", str(port)],
            self.environment,
            self.workdir / f"server-{port}.log",
        )
        self.processes.append(process)
        return Server(process, f"http://127.0.0.1:{port}")

    def python(self, script: str, *args: str, name: str) -> Process:
        """A child running ``script`` (``python -c``) in the stack's environment."""
        process = Process(
            [sys.executable, "-c", script, *args], self.environment, self.workdir / f"{name}.log"
        )
        self.processes.append(process)
        return process

    def flask_process(self, *args: str, name: str) -> Process:
        """A long-running CLI command as a child (``jobs worker``)."""
        process = Process([*FLASK, *args], self.environment, self.workdir / f"{name}.log")
        self.processes.append(process)
        return process

    def stop(self) -> None:
        for process in self.processes:
            process.stop()
        if self._engine is not None:
            self._engine.dispose()

    # ---- reading the live store as an auditor would: plain SQL ----
    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = create_engine(self.stores.live_url)
        return self._engine

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.engine.connect() as connection:
            return list(connection.execute(_statement(sql, params), params))

    def scalar(self, sql: str, **params: Any) -> Any:
        with self.engine.connect() as connection:
            return connection.scalar(_statement(sql, params), params)

    def execute(self, sql: str, **params: Any) -> None:
        with self.engine.begin() as connection:
            connection.execute(_statement(sql, params), params)


def _statement(sql: str, params: dict[str, Any]) -> TextClause:
    # uuid.UUID parameters bound as the ORM stores them (32 hex digits on SQLite, uuid on PostgreSQL)
    typed = [
        bindparam(name, type_=Uuid())
        for name, value in params.items()
        if isinstance(value, uuid.UUID) and f":{name}" in sql
    ]
    return text(sql).bindparams(*typed)


@dataclass
class Server:
    """A ``flask serve`` child; ``restart`` starts it again on the same port after a kill."""

    process: Process
    url: str

    def start(self) -> Server:
        self.process.start()
        assert wait_until(self._answers, timeout=90), f"{self.url} did not start:\n{self.process.tail()}"
        return self

    def kill(self) -> None:
        self.process.kill()

    def restart(self) -> Server:
        return self.start()

    def _answers(self) -> bool:
        assert self.process.popen is not None
        if self.process.popen.poll() is not None:
            raise AssertionError(f"{self.url} exited:\n{self.process.tail()}")
        try:
            return requests.get(f"{self.url}/v1/organizations", timeout=1).status_code == 401
        except requests.RequestException:
            return False
