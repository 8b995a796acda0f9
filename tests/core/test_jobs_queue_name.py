"""Deployments that share a Redis do not share a job queue: the queue is named by ``JOBS_QUEUE_NAME``,
by default the deployment's ``SOCKETIO_CHANNEL`` (``agentdesk`` for the default channel, the name every
deployment used before), and a worker consumes only its own deployment's jobs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask, current_app

from app import create_app
from core import jobs
from core.config import load_settings
from tests.support.servers import reachable_redis_url

# One channel for this module's deployment "A" (the app fixture reuses an app built with equal settings).
CHANNEL_A = f"agentdesk-test-{uuid.uuid4().hex[:12]}"


@jobs.job(retries=0)
def write_channel(directory: str, token: str) -> str:
    """Leaves a file named ``token`` holding the channel of the deployment whose worker ran the job."""
    channel = str(current_app.config["SOCKETIO_CHANNEL"])
    Path(directory, token).write_text(channel)
    return channel


def _wait_for(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"job did not run within {timeout}s")


# The name ------------------------------------------------------------------------------------------------


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    for name in ("JOBS_QUEUE_NAME", "SOCKETIO_CHANNEL"):
        monkeypatch.delenv(name, raising=False)

    def load(**overrides: Any) -> dict[str, Any]:
        return load_settings({"INSTANCE_PATH": str(tmp_path), "SECRET_KEY": "x", **overrides})

    return load


def test_default_channel_keeps_the_historical_queue_name(settings: Any) -> None:
    # A deployment upgraded without new settings still reads the jobs it queued before the upgrade.
    assert settings()["JOBS_QUEUE_NAME"] == "agentdesk"
    assert settings(SOCKETIO_CHANNEL="agentdesk-socketio")["JOBS_QUEUE_NAME"] == "agentdesk"


def test_queue_name_follows_the_channel_unless_set(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings(SOCKETIO_CHANNEL="desk-eu")["JOBS_QUEUE_NAME"] == "desk-eu"
    monkeypatch.setenv("SOCKETIO_CHANNEL", "desk-us")
    assert settings()["JOBS_QUEUE_NAME"] == "desk-us"
    monkeypatch.setenv("JOBS_QUEUE_NAME", "desk-us-jobs")
    assert settings()["JOBS_QUEUE_NAME"] == "desk-us-jobs"
    assert settings(JOBS_QUEUE_NAME="mine")["JOBS_QUEUE_NAME"] == "mine"


def test_embedded_queue_carries_the_name(app_config: dict[str, Any], tmp_path: Path) -> None:
    embedded = create_app(
        {**app_config, "SOCKETIO_CHANNEL": CHANNEL_A, "JOBS_MODE": "embedded", "INSTANCE_PATH": str(tmp_path)}
    )
    assert "agentdesk.huey" not in embedded.extensions  # made on first use, not by create_app
    queue = jobs.queue()
    assert embedded.extensions["agentdesk.huey"] is queue
    assert queue.name == CHANNEL_A and queue.storage.name == CHANNEL_A  # the rows' "queue" column
    assert Path(queue.storage.filename) == tmp_path / "jobs.db"


# Two deployments on one Redis database ---------------------------------------------------------------------


@pytest.mark.redis
class TestSharedRedis:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        return {
            **app_config,
            "JOBS_MODE": "redis",
            "REDIS_URL": reachable_redis_url(),
            "SOCKETIO_DISABLE_QUEUE": True,
            "SOCKETIO_CHANNEL": CHANNEL_A,
        }

    @pytest.fixture
    def connection(self, app_config: dict[str, Any]) -> Iterator[redis.Redis]:
        client = redis.Redis.from_url(app_config["REDIS_URL"])
        yield client
        client.close()

    @pytest.mark.parametrize(
        "channel_b",
        [
            f"agentdesk-other-{uuid.uuid4().hex[:12]}",
            # differs from A's only by punctuation, which Huey strips from queue names by default
            CHANNEL_A.replace("-", ""),
        ],
        ids=["other-channel", "same-letters"],
    )
    def test_a_worker_takes_only_its_own_deployments_jobs(
        self,
        app: Flask,
        app_config: dict[str, Any],
        connection: redis.Redis,
        tmp_path: Path,
        channel_b: str,
    ) -> None:
        queue_a = jobs.queue()
        queue_a.flush()
        token = uuid.uuid4().hex
        with app.app_context():
            write_channel.enqueue(str(tmp_path), token)
        assert len(queue_a) == 1

        # Deployment B: same Redis database, its own channel; building it binds the jobs to its queue.
        other = create_app({**app_config, "SOCKETIO_CHANNEL": channel_b})
        queue_b = jobs.queue()
        assert queue_b is not queue_a and other.extensions["agentdesk.huey"] is queue_b
        try:
            worker_b = jobs.start_embedded_consumer(workers=1)
            assert worker_b is not None
            try:
                # B's worker polls Redis every second at most: two seconds is time enough to take a job
                time.sleep(2)
            finally:
                worker_b.stop(graceful=True)
            assert not (tmp_path / token).exists(), "B's worker ran A's job"
            assert len(queue_a) == 1
            # the keys carry each name as configured (Huey's default would strip the punctuation)
            assert connection.llen(f"huey.redis.{CHANNEL_A}") == 1
            assert queue_b.name == channel_b
        finally:
            queue_b.flush()

        # A's own worker runs it, in A's application.
        jobs.init_app(app)
        worker_a = jobs.start_embedded_consumer(workers=1)
        assert worker_a is not None
        try:
            assert _wait_for(tmp_path / token) == CHANNEL_A
        finally:
            worker_a.stop(graceful=True)
            queue_a.flush()
        assert len(queue_a) == 0
