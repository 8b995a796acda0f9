"""Background jobs run in the environment that enqueued them: inline in tests, on SQLite or on Redis."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask, current_app

from core import jobs
from core.environments import SANDBOX, environment_app
from tests.support.stores import in_ci


@jobs.job(retries=0)
def write_marker(directory: str, token: str) -> str:
    environment = current_app.config["AGENTDESK_ENV"]
    Path(directory, token).write_text(environment)
    return environment


def _wait_for(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"job did not run within {timeout}s")


def test_inline_mode_runs_at_once_in_the_callers_environment(app: Flask, tmp_path: Path) -> None:
    with app.app_context():
        assert write_marker.enqueue(str(tmp_path), "live-job").get() == "live"
    with environment_app(app, SANDBOX).app_context():
        write_marker.enqueue(str(tmp_path), "sandbox-job")
    assert (tmp_path / "sandbox-job").read_text() == "sandbox"


class TestEmbeddedQueue:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
        return {**app_config, "JOBS_MODE": "embedded", "INSTANCE_PATH": str(tmp_path)}

    def test_job_waits_in_sqlite_until_a_consumer_runs_it(self, app: Flask, tmp_path: Path) -> None:
        token = uuid.uuid4().hex
        with environment_app(app, SANDBOX).app_context():
            write_marker.enqueue(str(tmp_path), token)
        assert not (tmp_path / token).exists()
        assert len(jobs.queue()) == 1
        consumer = jobs.start_embedded_consumer(workers=1)
        try:
            assert _wait_for(tmp_path / token) == "sandbox"
        finally:
            consumer.stop(graceful=True)


@pytest.mark.redis
class TestRedisQueue:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
        try:
            redis.Redis.from_url(url).ping()
        except redis.RedisError as error:
            if in_ci():
                raise
            pytest.skip(f"Redis at {url} is not reachable: {error}")
        return {**app_config, "JOBS_MODE": "redis", "REDIS_URL": url, "SOCKETIO_DISABLE_QUEUE": True}

    def test_job_goes_through_redis(self, app: Flask, tmp_path: Path) -> None:
        jobs.queue().flush()
        token = uuid.uuid4().hex
        with app.app_context():
            write_marker.enqueue(str(tmp_path), token)
        assert len(jobs.queue()) == 1
        consumer = jobs.start_embedded_consumer(workers=1)
        try:
            assert _wait_for(tmp_path / token) == "live"
        finally:
            consumer.stop(graceful=True)
            jobs.queue().flush()
