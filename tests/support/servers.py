"""Real server processes for the tests that need more than one: ``flask serve`` started as subprocesses
on free loopback ports, sharing one pair of SQLite stores and one Redis (Socket.IO message queue), as
several app processes do in production."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from tests.conftest import TEST_SECRET
from tests.support.stores import in_ci

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def reachable_redis_url() -> str:
    """``TEST_REDIS_URL`` (database 15 by default) when it answers; skip otherwise, fail under CI."""
    url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError as error:
        if in_ci():
            raise
        pytest.skip(f"Redis at {url} is not reachable: {error}")
    return url


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/v1/organizations", timeout=1).status_code == 401
    except requests.RequestException:
        return False


@dataclass
class Servers:
    urls: list[str]
    environment: dict[str, str]
    organization: dict[str, Any] = field(default_factory=dict)  # ``orgs create --json`` of the test's org

    def flask(self, *args: str) -> str:
        """A CLI command against the servers' stores; its standard output."""
        done = subprocess.run(
            [*_flask_command(), *args],
            cwd=PROJECT_ROOT,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout


def _flask_command() -> list[str]:
    flask = PROJECT_ROOT / ".venv" / "bin" / "flask"
    return [str(flask), "--app", "app"] if flask.exists() else [sys.executable, "-m", "flask", "--app", "app"]


@contextmanager
def flask_servers(
    tmp_path: Path, redis_url: str | None, count: int = 2, extra_env: dict[str, str] | None = None
) -> Iterator[Servers]:
    """``count`` ``flask serve`` processes on one pair of SQLite stores and one Redis (``None``: no Redis,
    the embedded set-up); killed afterwards. An organization is created before they start
    (``servers.organization``)."""
    environment = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'live.db'}",
        "SANDBOX_DATABASE_URL": f"sqlite:///{tmp_path / 'sandbox.db'}",
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "REDIS_URL": redis_url or "",
        "JOBS_MODE": "inline",
        "SECRET_KEY": TEST_SECRET,  # one secret: a session cookie of one process is valid at the other
        "SOCKETIO_CHANNEL": f"agentdesk-test-{uuid.uuid4().hex}",
        "DEMO_LIVE_MESSAGES": "0",
        **(extra_env or {}),
    }
    servers = Servers([], environment)
    servers.flask("setup")
    # before the servers boot: a loaded machine must not leave this CLI waiting on their first writes
    servers.organization = json.loads(servers.flask("orgs", "create", "--name", "Two", "--json"))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            port = free_port()
            processes.append(
                subprocess.Popen(
                    [*_flask_command(), "serve", "--port", str(port)],
                    cwd=PROJECT_ROOT,
                    env=environment,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            servers.urls.append(f"http://127.0.0.1:{port}")
        for url in servers.urls:
            assert wait_until(lambda url=url: _answers(url), timeout=60), f"{url} did not start"
        yield servers
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait(timeout=10)
