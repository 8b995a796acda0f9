"""API keys resolved in process (core.keycache): a known key costs no query, and a revocation reaches
every process within a second (Redis pub/sub when REDIS_URL is set, a 1 s TTL otherwise)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import create_engine, event, insert, text
from sqlalchemy.engine import Engine

from blueprints.organizations import services
from blueprints.organizations.models import ApiKey, Organization
from core import keycache
from core.db import db
from core.environments import LIVE, SANDBOX, environment_app
from tests.conftest import Org
from tests.support.servers import Servers, flask_servers, reachable_redis_url, wait_until
from tests.support.stores import Stores

WITHIN = 1.0  # the bound: a revoked key is refused by every process within a second


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    # A long local TTL: what these in-process tests see comes from the cache or from an invalidation,
    # never from an entry that happened to expire between two requests. The TTL path itself is tested
    # with real processes below, on the default of one second.
    return {**app_config, "API_KEY_CACHE_LOCAL_SECONDS": 30}


def _ask(url: str, key: str) -> int:
    return requests.get(f"{url}/v1/organizations", headers={"X-API-Key": key}, timeout=5).status_code


def _refused_everywhere_after_revoke(servers: Servers, key: str) -> float:
    """Revoke ``key`` with the CLI (a third process) and return how long until every server says 401."""
    for url in servers.urls:
        for _ in range(3):  # resolved and cached by each server
            assert _ask(url, key) == 200
    servers.flask("keys", "revoke", key[:16])
    revoked = time.monotonic()
    pending = set(servers.urls)
    while pending and time.monotonic() - revoked < 5:
        pending = {url for url in pending if _ask(url, key) != 401}
        time.sleep(0.02)
    assert not pending, f"still accepted after 5 s by {pending}"
    return time.monotonic() - revoked


@pytest.mark.redis
def test_revoked_on_one_process_refused_by_the_others_within_a_second_with_redis_new_key_at_once(
    tmp_path: Path,
) -> None:
    # Local TTL of a minute: only the invalidation published on Redis can make the servers refuse in time.
    extra = {"API_KEY_CACHE_SECONDS": "60", "API_KEY_CACHE_LOCAL_SECONDS": "60"}
    with flask_servers(tmp_path, reachable_redis_url(), extra_env=extra) as servers:
        key = servers.organization["api_keys"]["live"]
        channel = servers.environment["SOCKETIO_CHANNEL"] + keycache.DEFAULT_CHANNEL_SUFFIX
        for url in servers.urls:
            assert _ask(url, key) == 200  # the first lookup starts each server's listener
        subscribers = redis.Redis.from_url(servers.environment["REDIS_URL"])
        assert wait_until(lambda: dict(subscribers.pubsub_numsub(channel)).get(channel.encode()) == 2, 10)
        assert _refused_everywhere_after_revoke(servers, key) < WITHIN
        # the organization's other key (sandbox) is untouched
        sandbox_key = servers.organization["api_keys"]["sandbox"]
        sandbox = requests.get(
            f"{servers.urls[1]}/sandbox/v1/organizations", headers={"X-API-Key": sandbox_key}, timeout=5
        )
        assert sandbox.status_code == 200
        # A key issued by yet another process works at once on both servers (misses are never cached).
        organization_id = servers.organization["organization_id"]
        created = json.loads(servers.flask("keys", "create", "--org", organization_id, "--json"))
        assert [_ask(url, created["api_key"]) for url in servers.urls] == [200, 200]


def test_revoked_on_one_process_refused_by_the_others_within_a_second_without_redis(
    tmp_path: Path,
) -> None:
    # No REDIS_URL: nothing tells the servers; the one-second TTL of their caches does.
    with flask_servers(tmp_path, "", extra_env={"API_KEY_CACHE_LOCAL_SECONDS": "1"}) as servers:
        key = servers.organization["api_keys"]["live"]
        assert _refused_everywhere_after_revoke(servers, key) < WITHIN + 0.1  # + one poll round


def test_an_unknown_key_is_not_remembered(app: Flask, client: FlaskClient, org: Org) -> None:
    plaintext = "sk_live_" + uuid.uuid4().hex + "abcdefgh"
    assert client.get("/v1/organizations", headers={"X-API-Key": plaintext}).status_code == 401
    with app.app_context():  # another process issues exactly that key: a plain INSERT tells nobody here
        db.session.execute(
            insert(ApiKey).values(
                id=uuid.uuid4(),
                organization_id=uuid.UUID(org.id),
                environment=LIVE,
                prefix=plaintext[:16],
                key_hash=services.hash_key(plaintext),
                active=True,
                created_at=datetime.now(UTC),
            )
        )
        db.session.commit()
    assert client.get("/v1/organizations", headers={"X-API-Key": plaintext}).status_code == 200


def test_a_known_key_costs_no_query(client: FlaskClient, org: Org, queries: Callable[[], Any]) -> None:
    # A single-object GET of the CRM: the ticket (and its conversation links), nothing for the caller.
    base = f"/v1/crm/organizations/{org.id}"
    ticket = client.post(f"{base}/tickets", headers=org.headers(), json={"title": "Help", "source": "api"})
    assert ticket.status_code == 201
    client.get(f"{base}/tickets/{ticket.get_json()['id']}", headers=org.headers()).close()
    with queries() as counted:
        response = client.get(f"{base}/tickets/{ticket.get_json()['id']}", headers=org.headers())
        assert response.status_code == 200
    assert not [s for s in counted.statements if "api_keys" in s or "organizations" in s], counted.statements
    assert counted.count <= 2, counted.statements  # was 3: the key and its organization, the ticket, links
    response.close()  # records the key's use after the response, on a connection of its own

    with queries() as counted:
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    assert counted.count == 1, counted.statements  # the organization the route answers with, nothing else


def test_expiry_is_checked_on_every_request_from_the_cached_key(
    app: Flask,
    client: FlaskClient,
    runner: FlaskCliRunner,
    org: Org,
    queries: Callable[[], Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expires = datetime.now(UTC) + timedelta(hours=1)
    result = runner.invoke(
        args=["keys", "create", "--org", org.id, "--expires-at", expires.isoformat(), "--json"]
    )
    key = json.loads(result.stdout)["api_key"]
    assert client.get("/v1/organizations", headers={"X-API-Key": key}).status_code == 200
    with app.app_context():
        assert keycache.cache_for(app).get(services.hash_key(key)) is not None  # remembered
    monkeypatch.setattr("core.auth.utcnow", lambda: expires + timedelta(seconds=1))
    with queries() as counted:
        response = client.get("/v1/organizations", headers={"X-API-Key": key})
    assert response.get_json() == {"statusCode": 401, "message": "Invalid or expired token"}
    assert counted.count == 0  # decided from the cached expiry, not by asking the database again


def test_the_cache_never_answers_for_another_environment(app: Flask, client: FlaskClient, org: Org) -> None:
    live, sandbox = org.headers(), org.headers("sandbox")
    assert client.get("/v1/organizations", headers=live).status_code == 200
    assert client.get("/sandbox/v1/organizations", headers=sandbox).status_code == 200
    # Each cached key is refused by the other environment, whichever was cached first.
    assert client.get("/sandbox/v1/organizations", headers=live).status_code == 401
    assert client.get("/v1/organizations", headers=sandbox).status_code == 401
    # Even a live snapshot found in the sandbox's cache is refused there: the recorded environment decides.
    sandbox_app = environment_app(app, SANDBOX)
    with app.app_context():
        snapshot = keycache.cache_for(app).get(services.hash_key(org.live_key))
    assert snapshot is not None
    with sandbox_app.app_context():
        cache = keycache.cache_for(sandbox_app)
        cache.put(services.hash_key(org.live_key), snapshot[0], snapshot[1], cache.generation)
    assert client.get("/sandbox/v1/organizations", headers=live).status_code == 401


def test_any_committed_change_of_a_key_or_its_organization_drops_it(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    key_hash = services.hash_key(org.live_key)
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    with app.app_context():
        cached = keycache.cache_for(app).get(key_hash)
        assert cached is not None and set(cached[0].products) == {"SIM", "ESIM", "TRAVEL_ESIM"}
        organization = db.session.get(Organization, uuid.UUID(org.id))
        assert organization is not None
        organization.products = ["SIM"]
        db.session.flush()
        assert keycache.cache_for(app).get(key_hash) is not None  # not before the commit
        db.session.commit()
        assert keycache.cache_for(app).get(key_hash) is None  # product gating sees the change at once
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    with app.app_context():
        cached = keycache.cache_for(app).get(key_hash)
        assert cached is not None and cached[0].products == ("SIM",)
        key = db.session.scalar(db.select(ApiKey).where(ApiKey.key_hash == key_hash))
        assert key is not None
        key.active = False
        db.session.flush()
        db.session.rollback()  # a change that is rolled back invalidates nothing
        assert keycache.cache_for(app).get(key_hash) is not None
    result = runner.invoke(args=["keys", "revoke", org.live_key[:16]])
    assert result.exit_code == 0, result.output
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 401


def test_a_load_that_raced_an_invalidation_is_not_kept() -> None:
    cache = keycache.KeyCache(maxsize=2, ttl=60, local_ttl=60)
    snapshot = keycache.CachedKey(
        uuid.uuid4(), "sk_live_abcd1234", LIVE, True, None, uuid.uuid4(), "Acme", ("SIM",)
    )
    generation = cache.generation
    cache.forget(["h1"])  # published while our read was in flight: what we read may be the old row
    cache.put("h1", snapshot, None, generation)
    assert cache.get("h1") is None
    for name in ("h1", "h2", "h3"):
        cache.put(name, snapshot, None, cache.generation)
    assert cache.get("h1") is None and cache.get("h3") is not None  # bounded: least recently used goes


@pytest.fixture
def listener_cache() -> Iterator[tuple[keycache.KeyCache, str, str]]:
    url = reachable_redis_url()
    channel = f"agentdesk-test-{uuid.uuid4().hex}-apikeys"
    cache = keycache.KeyCache(maxsize=10, ttl=60, local_ttl=60)
    listener = keycache._Listener(url, channel)
    listener.caches.add(cache)
    cache.listener = listener
    yield cache, url, channel
    listener.stop()


@pytest.mark.redis
def test_listener_drops_published_keys_and_clears_everything_after_a_reconnect(
    listener_cache: tuple[keycache.KeyCache, str, str],
) -> None:
    cache, url, channel = listener_cache
    assert cache.listener is not None and cache.listener.subscribed.wait(5)
    snapshot = keycache.CachedKey(
        uuid.uuid4(), "sk_live_abcd1234", LIVE, True, None, uuid.uuid4(), "Acme", ("SIM",)
    )
    for name in ("h1", "h2", "h3"):
        cache.put(name, snapshot, None, cache.generation)
    publisher = redis.Redis.from_url(url)
    publisher.publish(channel, json.dumps({"keys": ["h1"], "organizations": []}))
    assert wait_until(lambda: cache.get("h1") is None, WITHIN)
    assert cache.get("h2") is not None
    publisher.publish(channel, "not json")  # ignored, the listener keeps going
    publisher.publish(channel, json.dumps({"organizations": [str(snapshot.organization_id)]}))
    assert wait_until(lambda: cache.get("h2") is None and cache.get("h3") is None, WITHIN)

    # Redis drops the connection (a restart): whatever was published meanwhile is lost, so the cache is
    # emptied and the short TTL applies until the subscription is back.
    cache.put("h4", snapshot, None, cache.generation)
    name = f"agentdesk-keycache:{channel}"
    [client_id] = [c["id"] for c in publisher.client_list() if c.get("name") == name]
    publisher.client_kill_filter(_id=client_id)
    assert wait_until(lambda: cache.get("h4") is None, 5)
    assert cache.listener.subscribed.wait(10)  # reconnected
    cache.put("h5", snapshot, None, cache.generation)
    publisher.publish(channel, json.dumps({"keys": ["h5"]}))
    assert wait_until(lambda: cache.get("h5") is None, WITHIN)


# No pool pre-ping on the request path: a connection the server closed is handled without it.


@pytest.fixture
def postgres_admin(stores: Stores) -> Iterator[Engine]:
    if stores.backend != "postgresql":
        pytest.skip("server-side connection loss needs PostgreSQL (TEST_DATABASE_URL)")
    admin = create_engine(stores.live_url, isolation_level="AUTOCOMMIT")
    yield admin
    admin.dispose()


def _terminate(admin: Engine, pid: int | None = None) -> int:
    """Terminate ``pid``, or every other backend of the live test database (as a restart would)."""
    with admin.connect() as connection:
        return int(
            connection.scalar(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    " AND (CAST(:pid AS integer) IS NULL OR pid = :pid)"
                ),
                {"pid": pid},
            )
        )


def test_connections_closed_by_the_server_while_idle_cost_no_request(
    client: FlaskClient, org: Org, postgres_admin: Engine
) -> None:
    url = f"/v2/messages/organizations/{org.id}/probe"
    assert client.get(url, headers=org.headers()).status_code == 200
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    assert _terminate(postgres_admin) >= 1  # the app's pooled connections are gone
    time.sleep(0.2)  # the server's farewell reaches the sockets
    # The next call answers 200: the pool discards the dead connection at checkout (a socket poll).
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 200


def test_a_connection_lost_under_a_request_is_a_retryable_503_then_the_next_call_works(
    client: FlaskClient, org: Org, postgres_admin: Engine
) -> None:
    base = f"/v1/crm/organizations/{org.id}/tickets"
    ticket = client.post(base, headers=org.headers(), json={"title": "Help", "source": "api"}).get_json()
    killed: list[int] = []

    def kill_before_the_ticket_query(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not killed and "FROM crm_tickets" in statement:
            killed.append(conn.connection.dbapi_connection.info.backend_pid)
            _terminate(postgres_admin, killed[0])
            time.sleep(0.1)

    event.listen(Engine, "before_cursor_execute", kill_before_the_ticket_query)
    try:
        lost = client.get(f"{base}/{ticket['id']}", headers=org.headers())
    finally:
        event.remove(Engine, "before_cursor_execute", kill_before_the_ticket_query)
    assert killed
    assert lost.status_code == 503
    assert lost.headers["Retry-After"] == "1"
    assert lost.get_json()["error"]["message"] == "The database connection was lost; retry the request"
    assert client.get(f"{base}/{ticket['id']}", headers=org.headers()).status_code == 200
