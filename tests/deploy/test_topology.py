"""The production topology (scripts/topology.py): two gunicorn app processes behind nginx, a job worker,
Redis, and PostgreSQL when ``TEST_DATABASE_URL`` names one (SQLite files otherwise). A Socket.IO client
connected through nginx receives every ``message.created`` of a burst of signed webhooks exactly once,
whichever process took each webhook and whichever process stored its message."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
import socketio
from sqlalchemy.engine import make_url

from scripts.topology import Topology, find_gunicorn, find_nginx
from tests.conftest import TEST_SECRET
from tests.fakes.fixtures import APP_SECRET
from tests.fakes.meta_webhooks import encode, sign, wa_change, wa_delivery, wa_text, wamid
from tests.support.servers import reachable_redis_url
from tests.support.stores import _postgres_stores, in_ci

pytestmark = pytest.mark.redis

BURST = 300
ADDRESS = "106540352242922"


def _tools() -> None:
    missing = [name for name, found in (("nginx", find_nginx()), ("gunicorn", find_gunicorn())) if not found]
    if missing:
        message = f"{' and '.join(missing)} not installed (Debian: apt-get install nginx; pip install -e .)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)


def _stores(tmp_path: Path) -> tuple[str, str]:
    url = os.environ.get("TEST_DATABASE_URL")
    if not url:
        return f"sqlite:///{tmp_path / 'live.db'}", f"sqlite:///{tmp_path / 'sandbox.db'}"
    # databases of its own beside the session's (the processes outlive no test, the session's app empties
    # its stores between tests)
    own = make_url(url)
    stores = _postgres_stores(own.set(database=f"{own.database}_topology").render_as_string(False))
    return stores.live_url, stores.sandbox_url


def _environment(tmp_path: Path, redis_url: str) -> dict[str, str]:
    live, sandbox = _stores(tmp_path)
    environment = {
        **os.environ,
        "DATABASE_URL": live,
        "SANDBOX_DATABASE_URL": sandbox,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "REDIS_URL": redis_url,
        "JOBS_MODE": "redis",
        "SECRET_KEY": TEST_SECRET,
        "META_APP_SECRET": APP_SECRET,
        "SOCKETIO_CHANNEL": f"agentdesk-topology-{uuid.uuid4().hex}",
        "DEMO_LIVE_MESSAGES": "0",
    }
    environment.pop("INGEST_MODE", None)
    return environment


def test_two_processes_behind_nginx_deliver_every_event_of_a_burst(tmp_path: Path) -> None:
    _tools()
    redis_url = reachable_redis_url()
    topology = Topology(_environment(tmp_path, redis_url), apps=2, threads=20, workdir=tmp_path / "topology")
    topology.flask("setup")
    organization = json.loads(topology.flask("orgs", "create", "--name", "Topology", "--json"))
    org_id, key = organization["organization_id"], organization["api_keys"]["live"]
    topology.flask(
        "channels", "connect", "--org", org_id, "--service", "whatsapp", "--address", ADDRESS,
        "--provider", "simulator", "--phone-number", "+525500000009",
    )  # fmt: skip

    received: list[str] = []
    lock = threading.Lock()
    with topology:
        config = (tmp_path / "topology" / "nginx.conf").read_text()
        assert "ip_hash;" in config and "proxy_set_header Upgrade $http_upgrade;" in config
        client = socketio.Client(reconnection=False)

        @client.on("message.created")
        def created(event: dict[str, Any]) -> None:
            with lock:
                received.append(event["data"]["external_id"])

        # the default transports: a long-polling handshake, then the WebSocket upgrade, both through nginx
        client.connect(topology.url, auth={"api_key": key}, wait_timeout=30)
        try:
            assert client.transport() == "websocket" or wait_for(lambda: client.transport() == "websocket")
            ids = [wamid() for _ in range(BURST)]

            def post(n: int) -> int:
                body = encode(
                    wa_delivery(
                        wa_change(ADDRESS, messages=[wa_text(f"52155{n % 17:08d}", f"burst {n}", id=ids[n])])
                    )
                )
                # alternating between the two processes: neither is the one the client is connected to
                # for every message
                answer = requests.post(
                    f"{topology.app_urls[n % 2]}/webhooks/meta",
                    data=body,
                    headers={
                        "Content-Type": "application/json",
                        "X-Hub-Signature-256": sign(body, APP_SECRET),
                    },
                    timeout=30,
                )
                return answer.status_code

            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(post, range(BURST)))
            assert statuses == [200] * BURST
            assert wait_for(lambda: len(received) >= BURST, timeout=90), f"{len(received)} of {BURST} events"
            time.sleep(0.5)  # a duplicate would arrive right behind
        finally:
            client.disconnect()
        listed = requests.get(
            f"{topology.url}/v2/messages/organizations/{org_id}/messages",
            params={"take": 1},
            headers={"X-API-Key": key},
            timeout=30,
        ).json()
    assert sorted(received) == sorted(ids)  # every event, each exactly once
    assert listed["total"] == BURST  # and every message stored once


def wait_for(check: Any, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())
