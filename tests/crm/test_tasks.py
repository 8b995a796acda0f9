"""Tasks: create with links, PATCH semantics, completion, soft delete, every list filter."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.crm.conftest import Crm, not_found_body


def test_create_task_defaults_and_related_basics(crm: Crm) -> None:
    deal, ticket, contact, account = (
        crm.deal(name="Big deal"),
        crm.ticket(title="T"),
        crm.contact(),
        crm.account(),
    )
    task = crm.task(
        deal_id=deal["id"], ticket_id=ticket["id"], contact_id=contact["id"], account_id=account["id"]
    )
    assert (task["type"], task["status"], task["priority"]) == ("to_do", "pending", "normal")
    assert task["organization_id"] == crm.org.id
    assert task["completed_at"] is None and task["due_date"] is None
    assert task["deal"] == {"id": deal["id"], "name": "Big deal", "reference": deal["reference"]}
    assert task["ticket"] == {"id": ticket["id"], "title": "T", "reference": ticket["reference"]}
    assert task["contact"]["id"] == contact["id"] and task["account"]["id"] == account["id"]
    dated = crm.task(type="call", priority="urgent", due_date="2026-12-01T15:00:00-06:00", notes="ring")
    assert (dated["type"], dated["priority"], dated["notes"]) == ("call", "urgent", "ring")
    assert dated["due_date"] == "2026-12-01T21:00:00.000Z"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "title"),
        ({"title": "x", "type": "visit"}, "type"),
        ({"title": "x", "priority": "asap"}, "priority"),
        ({"title": "x", "due_date": "next week"}, "due_date"),
        ({"title": "x", "deal_id": "d"}, "deal_id"),
    ],
)
def test_create_validation(crm: Crm, body: dict[str, Any], field: str) -> None:
    response = crm.post("/tasks", body)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_links_must_belong_to_the_organization(crm: Crm, other_crm: Crm) -> None:
    for field, value, resource in (
        ("deal_id", other_crm.deal()["id"], "Deal"),
        ("ticket_id", other_crm.ticket()["id"], "Ticket"),
        ("contact_id", other_crm.contact()["id"], "Contact"),
        ("account_id", other_crm.account()["id"], "Account"),
    ):
        assert crm.post("/tasks", {"title": "x", field: value}).get_json() == not_found_body(resource)


def test_patch_changes_only_the_fields_sent(crm: Crm) -> None:
    deal = crm.deal()
    task = crm.task(title="Original", notes="keep", due_date="2026-12-01T10:00:00Z", deal_id=deal["id"])
    updated = crm.ok(crm.patch(f"/tasks/{task['id']}", {"priority": "high"}))
    assert (updated["title"], updated["notes"], updated["priority"]) == ("Original", "keep", "high")
    assert updated["due_date"] == task["due_date"] and updated["deal_id"] == deal["id"]
    cleared = crm.ok(
        crm.patch(f"/tasks/{task['id']}", {"due_date": None, "deal_id": None, "status": "in_progress"})
    )
    assert cleared["due_date"] is None and cleared["deal"] is None and cleared["status"] == "in_progress"
    assert cleared["notes"] == "keep"
    assert crm.patch(f"/tasks/{task['id']}", {"status": "done"}).status_code == 400


def test_complete_sets_completed_at_once(crm: Crm) -> None:
    task = crm.task()
    done = crm.ok(crm.patch(f"/tasks/{task['id']}/complete"))
    assert done["status"] == "completed" and done["completed_at"] is not None
    again = crm.ok(crm.patch(f"/tasks/{task['id']}/complete"))
    assert again["completed_at"] == done["completed_at"]
    reopened = crm.ok(crm.patch(f"/tasks/{task['id']}", {"status": "pending"}))
    assert reopened["completed_at"] is None


def test_soft_delete_and_404s(crm: Crm, other_crm: Crm) -> None:
    task = crm.task()
    assert crm.ok(crm.delete(f"/tasks/{task['id']}")) == {"id": task["id"], "deleted": True}
    foreign = other_crm.task()
    for task_id in (task["id"], foreign["id"], str(uuid.uuid4())):
        for response in (
            crm.get(f"/tasks/{task_id}"),
            crm.patch(f"/tasks/{task_id}", {"title": "x"}),
            crm.patch(f"/tasks/{task_id}/complete"),
            crm.delete(f"/tasks/{task_id}"),
        ):
            assert response.status_code == 404 and response.get_json() == not_found_body("Task")
    assert crm.ok(crm.get("/tasks"))["total"] == 0


def _titles(body: dict[str, Any]) -> set[str]:
    return {t["title"] for t in body["data"]}


def test_list_filters(crm: Crm) -> None:
    owner = str(uuid.uuid4())
    deal, ticket, contact, account = crm.deal(), crm.ticket(), crm.contact(), crm.account()
    past = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    crm.task(title="Call Ana", type="call", owner_id=owner, deal_id=deal["id"], due_date=past)
    email = crm.task(
        title="Email quote", type="email", priority="high", ticket_id=ticket["id"], due_date=past
    )
    crm.task(title="Meet team", type="meeting", contact_id=contact["id"], due_date=future)
    crm.task(title="Undated", account_id=account["id"])
    crm.ok(crm.patch(f"/tasks/{email['id']}/complete"))

    def titles(**params: Any) -> set[str]:
        return _titles(crm.ok(crm.get("/tasks", **params)))

    assert titles(owner_id=owner) == {"Call Ana"}
    assert titles(status="completed") == {"Email quote"}
    assert titles(status="pending") == {"Call Ana", "Meet team", "Undated"}
    assert titles(is_completed="true") == {"Email quote"}
    assert titles(is_completed="false") == {"Call Ana", "Meet team", "Undated"}
    assert titles(type="meeting") == {"Meet team"}
    assert titles(priority="high") == {"Email quote"}
    assert titles(deal_id=deal["id"]) == {"Call Ana"}
    assert titles(ticket_id=ticket["id"]) == {"Email quote"}
    assert titles(contact_id=contact["id"]) == {"Meet team"}
    assert titles(account_id=account["id"]) == {"Undated"}
    assert titles(overdue="true") == {"Call Ana"}  # past due and not completed
    assert titles(overdue="false") == {"Email quote", "Meet team", "Undated"}
    assert titles(search="QUOTE") == {"Email quote"}
    today = datetime.now(UTC).date()
    assert titles(due_before=(today - timedelta(days=1)).isoformat()) == {"Call Ana", "Email quote"}
    assert titles(due_after=(today + timedelta(days=1)).isoformat()) == {"Meet team"}
    assert titles(due_after=(today - timedelta(days=2)).isoformat(), due_before=today.isoformat()) == {
        "Call Ana",
        "Email quote",
    }
    body = crm.ok(crm.get("/tasks"))
    assert (body["total"], body["limit"], body["offset"]) == (4, 20, 0)
    # soonest due first, undated last
    assert [t["title"] for t in body["data"]][-1] == "Undated"
    page = crm.ok(crm.get("/tasks", limit=2, offset=2))
    assert (len(page["data"]), page["total"]) == (2, 4)
    for params, field in (
        ({"status": "done"}, "status"),
        ({"overdue": "soon"}, "overdue"),
        ({"due_before": "tomorrow"}, "due_before"),
        ({"limit": 501}, "limit"),
        ({"type": "visit"}, "type"),
    ):
        response = crm.get("/tasks", **params)
        assert response.status_code == 400 and response.get_json()["error"]["message"].startswith(f"{field}:")


def test_due_filters_follow_the_time_zone(crm: Crm) -> None:
    crm.task(title="evening", due_date="2026-05-02T02:00:00Z")  # 1 May 20:00 in Mexico City
    mexico = {"timezone": "America/Mexico_City"}
    assert _titles(crm.ok(crm.get("/tasks", due_after="2026-05-02", due_before="2026-05-02"))) == {"evening"}
    assert (
        _titles(crm.ok(crm.get("/tasks", due_after="2026-05-02", due_before="2026-05-02", **mexico))) == set()
    )
    assert _titles(crm.ok(crm.get("/tasks", due_before="2026-05-01", **mexico))) == {"evening"}
