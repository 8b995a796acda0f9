"""The database going away under a running service (PostgreSQL only): the app's connections terminated
(``pg_terminate_backend``, as a restart or failover does) and new ones refused for a few seconds
(``ALTER DATABASE ... ALLOW_CONNECTIONS false``) while requests of three areas run against a real server
process. Every request answers 2xx or a retryable 503 with ``Retry-After`` in its area's error format,
never a 500; the service recovers on its own; a write in flight at the drop leaves nothing half-written.

Only the tests' own databases are touched (filtered by ``datname``); the PostgreSQL server is never
restarted, since other test runs share it."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url

from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text, wamid
from tests.reliability.stack import Server, Stack, record_figure
from tests.support.stores import Stores

pytestmark = pytest.mark.postgres

BLOCKED_SECONDS = 3.0


def _postgres_only(stores: Stores) -> None:
    if stores.backend != "postgresql":
        pytest.skip("dropping the database's connections needs PostgreSQL (TEST_DATABASE_URL)")


class Superuser:
    """An AUTOCOMMIT connection to the ``postgres`` database, acting on one database of ours only."""

    def __init__(self, url: str) -> None:
        target = make_url(url)
        self.database = target.database
        self.engine: Engine = create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")

    def terminate(self, pid: int | None = None) -> int:
        """End the backends of our database (or the one ``pid``); how many."""
        with self.engine.connect() as connection:
            return int(
                connection.scalar(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        " WHERE datname = :database AND pid <> pg_backend_pid()"
                        " AND (CAST(:pid AS integer) IS NULL OR pid = :pid)"
                    ),
                    {"database": self.database, "pid": pid},
                )
            )

    def allow_connections(self, allowed: bool) -> None:
        with self.engine.connect() as connection:
            connection.execute(
                text(f'ALTER DATABASE "{self.database}" ALLOW_CONNECTIONS {str(allowed).lower()}')
            )

    def dispose(self) -> None:
        self.engine.dispose()


@pytest.fixture
def superuser(stores: Stores) -> Iterator[Superuser]:
    _postgres_only(stores)
    admin = Superuser(stores.live_url)
    yield admin
    admin.dispose()


# ---- a real server under load while its database goes away ----


def _area_format(path: str, body: dict[str, Any]) -> bool:
    """The 503 body in the error format of the path's area (core/errors.py)."""
    if path.startswith("/v1/crm/"):
        return (
            body["statusCode"] == 503
            and body["error"]["statusCode"] == 503
            and bool(body["error"]["message"])
        )
    if path.startswith("/v1/partner/"):
        return body["error"]["type"] == "api_error" and body["error"]["code"] == "database_unavailable"
    return body["statusCode"] == 503 and bool(body["message"])


def test_requests_answer_503_while_the_database_is_gone_and_the_service_recovers(
    make_stack: Any, stores: Stores
) -> None:
    _postgres_only(stores)
    stack: Stack = make_stack(JOBS_MODE="inline")
    organization = stack.prepare("Dropped")
    org_id, headers = organization["organization_id"], {"X-API-Key": organization["api_keys"]["live"]}
    server: Server = stack.server().start()
    admin = Superuser(stack.stores.live_url)
    tickets = f"/v1/crm/organizations/{org_id}/tickets"
    reads = [tickets, f"/v2/messages/organizations/{org_id}/conversations", "/v1/partner/balance"]

    answers: list[tuple[str, str, int, dict[str, str], Any]] = []  # (phase, path, status, headers, body)
    written: dict[str, int] = {}  # ticket title -> status of its POST
    phase = ["before"]
    stop = threading.Event()

    def client(worker: int) -> None:
        session = requests.Session()
        n = 0
        while not stop.is_set():
            n += 1
            if n % 3 == 0:
                title = f"drop-{worker}-{n}"
                response = session.post(
                    f"{server.url}{tickets}",
                    json={"title": title, "source": "api"},
                    headers=headers,
                    timeout=30,
                )
                written[title] = response.status_code
                path = tickets
            else:
                path = reads[(worker + n) % len(reads)]
                response = session.get(f"{server.url}{path}", headers=headers, timeout=30)
            try:
                body = response.json()
            except ValueError:
                body = response.text
            answers.append((phase[0], path, response.status_code, dict(response.headers), body))

    threads = [threading.Thread(target=client, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.5)
        phase[0] = "dropped"
        admin.allow_connections(False)
        admin.terminate()  # the pool's connections die; new ones are refused
        time.sleep(BLOCKED_SECONDS)
    finally:
        admin.allow_connections(True)
        admin.dispose()
    phase[0] = "after"
    time.sleep(2.0)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)

    statuses = Counter(status for _, _, status, _, _ in answers)
    assert set(statuses) <= {200, 201, 503}, statuses  # never a 500
    refused = [(path, head, body) for p, path, status, head, body in answers if status == 503]
    assert refused, "no request ran while the database was gone"
    assert all(head.get("Retry-After") == "1" for _, head, _ in refused)
    assert all(_area_format(path, body) for path, _, body in refused), refused[:3]
    assert {path for path, _, _ in refused} == {*reads}  # every area answered in its own format
    # recovered on its own: once connections are allowed again every request succeeds (the first one of
    # each client may still meet a connection that died in the pool)
    after = [status for p, _, status, _, _ in answers if p == "after"]
    assert after and all(status in (200, 201) for status in after[8:]), after

    # a write answered 201 is stored once; one answered 503 left nothing behind
    stored = Counter(
        row[0]
        for row in stack.rows("SELECT title FROM crm_tickets WHERE organization_id = :o", o=uuid.UUID(org_id))
    )
    assert all(count == 1 for count in stored.values())
    assert {title for title, status in written.items() if status == 201} == set(stored)
    record_figure(
        f"crash test: database dropped for {BLOCKED_SECONDS:.0f} s under {len(answers)} requests: "
        f"{statuses[503]} answered 503 with Retry-After, {statuses[200] + statuses[201]} succeeded, "
        f"0 answered 500, {len(stored)} tickets stored once"
    )


# ---- a write in flight when its connection is killed ----


def test_a_webhook_whose_connection_dies_mid_write_leaves_nothing_and_its_retry_stores_it_once(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, superuser: Superuser
) -> None:
    message_id = wamid()
    payload = wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola", id=message_id)]))
    killed: list[int] = []

    def kill_before_the_message_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # contact and conversation are already written in this transaction: the worst moment to die
        if not killed and statement.startswith("INSERT INTO messages"):
            killed.append(conn.connection.dbapi_connection.info.backend_pid)
            superuser.terminate(killed[0])
            time.sleep(0.1)

    event.listen(Engine, "before_cursor_execute", kill_before_the_message_insert)
    try:
        lost = deliver(payload)
    finally:
        event.remove(Engine, "before_cursor_execute", kill_before_the_message_insert)
    assert killed
    assert lost.status_code == 503 and lost.headers["Retry-After"] == "1"
    assert lost.get_json()["statusCode"] == 503  # the messaging format of the webhook path

    def count(table: str) -> int:
        with app.app_context():
            from core.db import db

            return int(db.session.scalar(text(f"SELECT count(*) FROM {table}")))

    # nothing half-written: no contact, conversation or message of the failed attempt
    assert [count(t) for t in ("messaging_contacts", "conversations", "messages")] == [0, 0, 0]
    # Meta delivers again (it was not answered 200): stored once, with its contact and conversation
    assert deliver(payload).status_code == 200
    assert deliver(payload).status_code == 200  # and once more: still once
    assert [count(t) for t in ("messaging_contacts", "conversations", "messages")] == [1, 1, 1]
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()
    assert [m["external_id"] for m in listed["data"]] == [message_id]
