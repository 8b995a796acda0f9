"""Tickets: numbering and references, sanitised bodies, assignment, states and history, filters;
projects and ticket types."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask

from blueprints.crm.models import Ticket
from core.db import db
from tests.crm.conftest import Crm, not_found_body


def test_create_ticket_numbers_per_organization(crm: Crm, other_crm: Crm) -> None:
    first = crm.ticket(title="Printer on fire", source="manual")
    assert (first["number"], first["reference"], first["state"], first["priority"], first["source"]) == (
        1,
        "TCK-1",
        "new",
        "normal",
        "manual",
    )
    assert set(first) >= {"id", "number", "reference", "title", "state", "priority", "source", "created_at"}
    assert first["created_at"].endswith("Z") and first["closed_at"] is None
    assert crm.ticket()["reference"] == "TCK-2"
    assert other_crm.ticket()["reference"] == "TCK-1"


def test_create_with_every_optional_field(crm: Crm) -> None:
    contact, account = crm.contact(), crm.account()
    project = crm.ok(crm.post("/projects", {"name": "Onboarding"}), 201)
    kind = crm.ok(crm.post("/ticket-types", {"name": "Incident"}), 201)
    member = str(uuid.uuid4())
    ticket = crm.ticket(
        priority="urgent",
        body_html='<p onclick="steal()">Help <script>alert(1)</script><a href="javascript:x()">me</a></p>',
        requester_id=contact["id"],
        assignee_member_id=member,
        account_id=account["id"],
        project_id=project["id"],
        ticket_type_id=kind["id"],
        channel="whatsapp",
        conversation_ids=["conv-1", "conv-1", "conv-2"],
    )
    assert ticket["priority"] == "urgent"
    assert "script" not in ticket["body_html"] and "onclick" not in ticket["body_html"]
    assert "javascript" not in ticket["body_html"] and "<p>Help" in ticket["body_html"]
    assert (ticket["requester_id"], ticket["account_id"], ticket["project_id"], ticket["ticket_type_id"]) == (
        contact["id"],
        account["id"],
        project["id"],
        kind["id"],
    )
    assert ticket["assignee_member_id"] == member and ticket["assigned_at"] is not None
    assert (ticket["channel"], ticket["conversation_ids"]) == ("whatsapp", ["conv-1", "conv-2"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"source": "api"}, "title"),
        ({"title": "x"}, "source"),
        ({"title": "x", "source": "phone"}, "source"),
        ({"title": "x", "source": "api", "priority": "critical"}, "priority"),
        ({"title": "x", "source": "api", "channel": "fax"}, "channel"),
        ({"title": "x", "source": "api", "requester_id": "ana"}, "requester_id"),
        ({"title": "", "source": "api"}, "title"),
    ],
)
def test_create_validation(crm: Crm, body: dict[str, Any], field: str) -> None:
    response = crm.post("/tickets", body)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_create_refuses_references_of_other_organizations(crm: Crm, other_crm: Crm) -> None:
    contact = other_crm.contact()
    project = other_crm.ok(other_crm.post("/projects", {"name": "P"}), 201)
    kind = other_crm.ok(other_crm.post("/ticket-types", {"name": "T"}), 201)
    account = other_crm.account()
    for field, value, resource in (
        ("requester_id", contact["id"], "Contact"),
        ("project_id", project["id"], "Project"),
        ("ticket_type_id", kind["id"], "Ticket type"),
        ("account_id", account["id"], "Account"),
    ):
        response = crm.post("/tickets", {"title": "x", "source": "api", field: value})
        assert response.get_json() == not_found_body(resource)
    assert crm.ok(crm.get("/tickets"))["total"] == 0  # nothing half-created, no number consumed
    assert crm.ticket()["number"] == 1


def test_get_and_by_reference(crm: Crm, other_crm: Crm) -> None:
    ticket = crm.ticket()
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["id"] == ticket["id"]
    assert crm.ok(crm.get("/tickets/by-ref/TCK-1"))["id"] == ticket["id"]
    assert crm.ok(crm.get("/tickets/by-ref/tck-1"))["id"] == ticket["id"]
    foreign = other_crm.ticket()
    for path in (
        f"/tickets/{foreign['id']}",
        f"/tickets/{uuid.uuid4()}",
        "/tickets/by-ref/TCK-9",
        "/tickets/by-ref/nonsense",
    ):
        response = crm.get(path)
        assert response.status_code == 404 and response.get_json() == not_found_body("Ticket")
    assert crm.ok(crm.get("/tickets/by-ref/TCK-1"))["id"] != foreign["id"]


def test_prefix_is_configurable_and_old_references_still_resolve(crm: Crm) -> None:
    assert crm.ok(crm.get("/settings"))["ticket_prefix"] == "TCK"
    old = crm.ticket()
    assert crm.ok(crm.patch("/settings", {"ticket_prefix": "sup"}))["ticket_prefix"] == "SUP"
    new = crm.ticket()
    assert (new["reference"], new["number"]) == ("SUP-2", 2)
    assert crm.ok(crm.get(f"/tickets/by-ref/{old['reference']}"))["id"] == old["id"]
    assert crm.ok(crm.get("/tickets/by-ref/SUP-2"))["id"] == new["id"]
    assert crm.ok(crm.get("/settings"))["ticket_counter"] == 2
    bad = crm.patch("/settings", {"ticket_prefix": "1-2"})
    assert bad.status_code == 400 and bad.get_json()["error"]["message"].startswith("ticket_prefix:")


def test_update_ticket(crm: Crm) -> None:
    ticket = crm.ticket(title="Old", priority="low")
    project = crm.ok(crm.post("/projects", {"name": "P"}), 201)
    updated = crm.ok(
        crm.patch(
            f"/tickets/{ticket['id']}",
            {
                "title": "New",
                "body_html": "<b>x</b><img src=x onerror=alert(1)>",
                "project_id": project["id"],
                "conversation_ids": ["c9"],
            },
        )
    )
    assert (updated["title"], updated["priority"], updated["project_id"]) == ("New", "low", project["id"])
    assert "onerror" not in updated["body_html"] and "<b>x</b>" in updated["body_html"]
    assert updated["conversation_ids"] == ["c9"]
    assert crm.ok(crm.patch(f"/tickets/{ticket['id']}", {"project_id": None}))["project_id"] is None
    assert crm.patch(f"/tickets/{ticket['id']}", {"priority": "meh"}).status_code == 400
    assert crm.patch(f"/tickets/{uuid.uuid4()}", {"title": "x"}).get_json() == not_found_body("Ticket")


def test_assign_and_unassign(crm: Crm) -> None:
    ticket = crm.ticket()
    member, boss = str(uuid.uuid4()), str(uuid.uuid4())
    assigned = crm.ok(
        crm.patch(f"/tickets/{ticket['id']}/assign", {"assignee_member_id": member, "assigned_by": boss})
    )
    assert (assigned["assignee_member_id"], assigned["assigned_by"]) == (member, boss)
    assert assigned["assigned_at"] is not None
    cleared = crm.ok(crm.patch(f"/tickets/{ticket['id']}/assign", {"assignee_member_id": None}))
    assert cleared["assignee_member_id"] is None and cleared["assigned_at"] is None
    missing = crm.patch(f"/tickets/{ticket['id']}/assign", {})
    assert missing.status_code == 400 and missing.get_json()["error"]["message"].startswith(
        "assignee_member_id:"
    )
    bad = crm.patch(f"/tickets/{ticket['id']}/assign", {"assignee_member_id": "b" * 65})
    assert bad.status_code == 400
    assert crm.patch(
        f"/tickets/{uuid.uuid4()}/assign", {"assignee_member_id": member}
    ).get_json() == not_found_body("Ticket")


def test_every_state_with_history_and_closed_at(crm: Crm) -> None:
    ticket = crm.ticket()
    for state in ("waiting_on_agent", "waiting_on_customer", "on_hold", "closed"):
        changed = crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": state}))
        assert changed["state"] == state
        assert (changed["closed_at"] is not None) == (state == "closed")
    reopened = crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": "new"}))
    assert reopened["state"] == "new" and reopened["closed_at"] is None
    crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": "new"}))  # unchanged: no history entry
    history = crm.ok(crm.get(f"/tickets/{ticket['id']}/history"))["data"]
    assert [(h["from_state"], h["to_state"]) for h in history] == [
        (None, "new"),
        ("new", "waiting_on_agent"),
        ("waiting_on_agent", "waiting_on_customer"),
        ("waiting_on_customer", "on_hold"),
        ("on_hold", "closed"),
        ("closed", "new"),
    ]
    assert all(h["changed_by"].startswith("api_key:") for h in history)
    bad = crm.patch(f"/tickets/{ticket['id']}/state", {"state": "resolved"})
    assert bad.status_code == 400 and bad.get_json()["error"]["message"].startswith("state:")
    assert crm.patch(f"/tickets/{uuid.uuid4()}/state", {"state": "closed"}).get_json() == not_found_body(
        "Ticket"
    )
    assert crm.get(f"/tickets/{uuid.uuid4()}/history").get_json() == not_found_body("Ticket")


def test_state_through_patch_also_records_history(crm: Crm) -> None:
    ticket = crm.ticket()
    assert crm.ok(crm.patch(f"/tickets/{ticket['id']}", {"state": "closed"}))["closed_at"] is not None
    assert len(crm.ok(crm.get(f"/tickets/{ticket['id']}/history"))["data"]) == 2


def _titles(body: dict[str, Any]) -> set[str]:
    return {t["title"] for t in body["data"]}


def test_list_filters(crm: Crm) -> None:
    contact, account = crm.contact(), crm.account()
    project = crm.ok(crm.post("/projects", {"name": "P"}), 201)
    member = str(uuid.uuid4())
    crm.ticket(title="Broken login", priority="urgent", assignee_member_id=member, requester_id=contact["id"])
    second = crm.ticket(title="Invoice copy", account_id=account["id"], project_id=project["id"])
    crm.ticket(title="Login slow", priority="low")
    crm.ok(crm.patch(f"/tickets/{second['id']}/state", {"state": "closed"}))

    def titles(**params: Any) -> set[str]:
        return _titles(crm.ok(crm.get("/tickets", **params)))

    assert titles(state="closed") == {"Invoice copy"}
    assert titles(priority="urgent") == {"Broken login"}
    assert titles(assignee_member_id=member) == {"Broken login"}
    assert titles(unassigned="true") == {"Invoice copy", "Login slow"}
    assert titles(unassigned="false") == {"Broken login"}
    assert titles(requester_id=contact["id"]) == {"Broken login"}
    assert titles(account_id=account["id"]) == {"Invoice copy"}
    assert titles(project_id=project["id"]) == {"Invoice copy"}
    assert titles(search="login") == {"Broken login", "Login slow"}
    assert titles(search="tck-2") == {"Invoice copy"}
    assert titles(search="100%") == set()
    body = crm.ok(crm.get("/tickets"))
    assert (body["total"], body["limit"], body["offset"]) == (3, 100, 0)
    assert [t["title"] for t in body["data"]] == ["Login slow", "Invoice copy", "Broken login"]
    page = crm.ok(crm.get("/tickets", limit=1, offset=1))
    assert ([t["title"] for t in page["data"]], page["total"]) == (["Invoice copy"], 3)
    for params, field in (
        ({"state": "open"}, "state"),
        ({"unassigned": "maybe"}, "unassigned"),
        ({"limit": 0}, "limit"),
        ({"created_before": "yesterday"}, "created_before"),
        ({"timezone": "Nowhere/City"}, "timezone"),
    ):
        response = crm.get("/tickets", **params)
        assert response.status_code == 400 and response.get_json()["error"]["message"].startswith(f"{field}:")


def test_created_filters_in_a_time_zone(app: Flask, crm: Crm) -> None:
    late_night = crm.ticket(title="late night")
    morning = crm.ticket(title="morning")
    with app.app_context():
        for ticket_id, when in (
            (late_night["id"], datetime(2026, 7, 1, 3, 30, tzinfo=UTC)),
            (morning["id"], datetime(2026, 7, 1, 15, 0, tzinfo=UTC)),
        ):
            row = db.session.get(Ticket, uuid.UUID(ticket_id))
            assert row is not None
            row.created_at = when
        db.session.commit()
    # 03:30Z on 1 July is still 30 June in Bogota (UTC-5)
    bogota = {"timezone": "America/Bogota"}
    assert _titles(crm.ok(crm.get("/tickets", created_after="2026-07-01", created_before="2026-07-01"))) == {
        "late night",
        "morning",
    }
    assert _titles(crm.ok(crm.get("/tickets", created_after="2026-07-01", **bogota))) == {"morning"}
    assert _titles(crm.ok(crm.get("/tickets", created_before="2026-06-30", **bogota))) == {"late night"}


@pytest.mark.parametrize(("kind", "resource"), [("projects", "Project"), ("ticket-types", "Ticket type")])
def test_projects_and_ticket_types(crm: Crm, other_crm: Crm, kind: str, resource: str) -> None:
    created = crm.ok(crm.post(f"/{kind}", {"name": "Alpha", "description": "first"}), 201)
    assert (created["name"], created["description"]) == ("Alpha", "first")
    assert crm.ok(crm.get(f"/{kind}"))["total"] == 1
    assert crm.ok(crm.get(f"/{kind}/{created['id']}"))["name"] == "Alpha"
    assert crm.ok(crm.patch(f"/{kind}/{created['id']}", {"name": "Beta"}))["name"] == "Beta"
    assert crm.post(f"/{kind}", {}).get_json()["error"]["message"].startswith("name:")
    field = "project_id" if kind == "projects" else "ticket_type_id"
    ticket = crm.ticket(**{field: created["id"]})
    assert other_crm.get(f"/{kind}/{created['id']}").get_json() == not_found_body(resource)
    assert other_crm.ok(other_crm.get(f"/{kind}"))["total"] == 0
    assert crm.ok(crm.delete(f"/{kind}/{created['id']}"))["deleted"] is True
    assert crm.get(f"/{kind}/{created['id']}").get_json() == not_found_body(resource)
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))[field] is None  # the ticket stays
