"""Deal and ticket numbers stay unique and consecutive when 50 creations race (PostgreSQL only: SQLite
serialises writers on its own, so the race this guards against cannot happen there)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from core.db import db
from tests.conftest import Org
from tests.crm.conftest import Crm

WORKERS = 50


@pytest.fixture
def postgres_only(app: Flask) -> None:
    with app.app_context():
        if db.engine.dialect.name != "postgresql":
            pytest.skip("the counter race needs PostgreSQL (TEST_DATABASE_URL)")


def _race(app: Flask, org: Org, path: str, body: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    barrier = threading.Barrier(WORKERS)
    results: list[Any] = [None] * WORKERS

    def worker(index: int) -> None:
        client = app.test_client()  # its own client, request contexts and database session
        barrier.wait()
        response = client.post(
            f"/v1/crm/organizations/{org.id}{path}", headers=org.headers(), json=body(index)
        )
        results[index] = (response.status_code, response.get_json())

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(status == 201 for status, _ in results), [r for r in results if r[0] != 201][:3]
    return [payload for _, payload in results]


@pytest.mark.postgres
def test_fifty_concurrent_deals_get_consecutive_numbers(
    postgres_only: None, app: Flask, crm: Crm, org: Org
) -> None:
    pipeline = crm.pipeline()
    stage = pipeline["stages"][0]["id"]
    created = _race(
        app, org, "/deals", lambda i: {"name": f"Deal {i}", "pipeline_id": pipeline["id"], "stage_id": stage}
    )
    assert sorted(d["number"] for d in created) == list(range(1, WORKERS + 1))
    assert sorted(d["reference"] for d in created) == sorted(f"VNT-{n}" for n in range(1, WORKERS + 1))
    assert crm.ok(crm.get("/pipelines"))["data"][0]["deal_counter"] == WORKERS


@pytest.mark.postgres
def test_fifty_concurrent_tickets_get_consecutive_numbers(
    postgres_only: None, app: Flask, crm: Crm, org: Org
) -> None:
    created = _race(app, org, "/tickets", lambda i: {"title": f"Ticket {i}", "source": "api"})
    assert sorted(t["number"] for t in created) == list(range(1, WORKERS + 1))
    assert len({t["reference"] for t in created}) == WORKERS
    assert crm.ok(crm.get("/settings"))["ticket_counter"] == WORKERS
