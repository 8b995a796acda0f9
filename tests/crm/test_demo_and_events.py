"""Demo data (idempotent) and the realtime events published by the CRM services."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
from flask.testing import FlaskClient, FlaskCliRunner

from core import events
from core.demo import DEMO_ORGANIZATION_ID
from tests.crm.conftest import Crm


def test_demo_seed_is_idempotent(client: FlaskClient, runner: FlaskCliRunner, app) -> None:
    for _ in range(2):
        result = runner.invoke(args=["demo", "seed"])
        assert result.exit_code == 0, result.output
    assert "CRM: 5 deals" in result.output
    from blueprints.crm.services import deals, pipelines, tasks, tickets
    from blueprints.crm.services.deals import DealFilters
    from blueprints.crm.services.tasks import TaskFilters
    from blueprints.crm.services.tickets import TicketFilters

    with app.app_context():
        assert deals.list_deals(DEMO_ORGANIZATION_ID, DealFilters()).total == 5
        assert tickets.list_tickets(DEMO_ORGANIZATION_ID, TicketFilters()).total == 3
        assert tasks.list_tasks(DEMO_ORGANIZATION_ID, TaskFilters()).total == 3
        pipeline = pipelines.list_pipelines(DEMO_ORGANIZATION_ID)
        assert len(pipeline) == 1
        summary = pipelines.pipeline_summary(DEMO_ORGANIZATION_ID, pipeline[0].id)
    assert summary.complete is True and summary.total_deals == 5
    # 9000 + 1999 USD x 17.20 (34382.80) + 48,000,000 COP x 0.00025 x 17.20 (206400) + 297 EUR x 18.90
    # (5613.30) + 36000 = 291396.10 MXN
    assert summary.total_amount == Decimal("291396.10")


@pytest.fixture
def received() -> Iterator[list[events.DomainEvent]]:
    seen: list[events.DomainEvent] = []
    names = ("deal.updated", "deal.moved", "ticket.updated")
    for name in names:
        events.subscribe(name, seen.append)
    yield seen
    for name in names:
        events._subscribers[name].remove(seen.append)


def test_services_publish_deal_and_ticket_events(crm: Crm, received: list[events.DomainEvent]) -> None:
    pipeline = crm.pipeline()
    deal = crm.deal()
    crm.ok(crm.patch(f"/deals/{deal['id']}", {"name": "Renamed"}))
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": crm.stage(pipeline, "Won")["id"]}))
    ticket = crm.ticket()
    crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": "closed"}))
    assert crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": "x"}).status_code == 400  # nothing published
    names = [(e.name, e.data.get("change")) for e in received]
    assert names == [
        ("deal.updated", "created"),
        ("deal.updated", "updated"),
        ("deal.moved", "moved"),
        ("deal.updated", "moved"),
        ("ticket.updated", "created"),
        ("ticket.updated", "state"),
    ]
    moved = received[2]
    assert moved.organization_id == crm.org.id and moved.data["status"] == "won"
    assert moved.data["from_stage_id"] == pipeline["stages"][0]["id"]
    assert received[-1].data["state"] == "closed" and received[-1].data["reference"] == ticket["reference"]
