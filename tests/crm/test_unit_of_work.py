"""One unit of work per request (issue 9): a create or an update is one COMMIT, a read none, and a read
never writes (GET settings and the first GET pipelines used to create rows)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from flask import Flask
from sqlalchemy import func, select

from blueprints.crm.models import CrmSettings, Pipeline, Stage
from core.db import db
from tests.crm.conftest import Crm

Commits = Callable[[], Any]


def _count(commits: Commits, call: Callable[[], Any], status: int = 200) -> int:
    with commits() as counted:
        response = call()
    assert response.status_code == status, response.get_json()
    return int(counted.count)


def _rows(app: Flask, model: Any, organization_id: str) -> int:
    organization = uuid.UUID(organization_id)
    with app.app_context():
        return int(
            db.session.scalar(
                select(func.count()).select_from(model).where(model.organization_id == organization)
            )
            or 0
        )


def test_reads_on_a_fresh_organization_commit_nothing_and_write_nothing(
    app: Flask, crm: Crm, commits: Commits
) -> None:
    assert _count(commits, lambda: crm.get("/settings")) == 0
    assert _count(commits, lambda: crm.get("/pipelines")) == 0
    assert _count(commits, lambda: crm.get("/currency")) == 0
    general = crm.pipeline()
    assert _count(commits, lambda: crm.get(f"/pipelines/{general['id']}")) == 0
    assert _count(commits, lambda: crm.get(f"/currency/pipeline/{general['id']}/summary")) == 0
    for model in (CrmSettings, Pipeline, Stage):
        assert _rows(app, model, crm.org.id) == 0, model.__name__
    assert crm.ok(crm.get("/settings")) == {
        "base_currency": "MXN",
        "ticket_prefix": "TCK",
        "ticket_counter": 0,
    }


def test_the_default_pipeline_a_read_shows_is_the_one_the_first_write_stores(app: Flask, crm: Crm) -> None:
    shown = crm.pipeline()
    again = crm.pipeline()  # the same pipeline every time, before anything is stored (timestamps aside)
    assert {k: v for k, v in again.items() if not k.endswith("_at")} == {
        k: v for k, v in shown.items() if not k.endswith("_at")
    }
    deal = crm.deal(pipeline_id=shown["id"], stage_id=crm.stage(shown, "Proposal")["id"])
    assert deal["reference"] == "VNT-1" and deal["stage"]["name"] == "Proposal"
    assert _rows(app, Pipeline, crm.org.id) == 1 and _rows(app, Stage, crm.org.id) == len(shown["stages"])
    stored = crm.pipeline()
    assert [s["id"] for s in stored["stages"]] == [s["id"] for s in shown["stages"]]
    assert (stored["id"], stored["deal_counter"]) == (shown["id"], 1)


def test_settings_are_stored_by_the_first_write_that_needs_them(app: Flask, crm: Crm) -> None:
    assert crm.ok(crm.patch("/settings", {"ticket_prefix": "sup"}))["ticket_prefix"] == "SUP"
    assert _rows(app, CrmSettings, crm.org.id) == 1
    assert crm.ticket()["reference"] == "SUP-1"
    assert crm.ok(crm.get("/settings"))["ticket_counter"] == 1


def test_reads_commit_nothing(crm: Crm, commits: Commits) -> None:
    deal = crm.deal()
    ticket = crm.ticket()
    crm.task(deal_id=deal["id"])
    for suffix in (
        "/deals",
        f"/deals/{deal['id']}",
        f"/deals/{deal['id']}/activities",
        "/tickets",
        f"/tickets/{ticket['id']}",
        f"/tickets/{ticket['id']}/history",
        "/tasks",
        "/contacts",
        "/accounts",
        "/settings",
        "/pipelines",
    ):
        assert _count(commits, lambda suffix=suffix: crm.get(suffix)) == 0, suffix


def test_a_create_or_an_update_is_one_commit(crm: Crm, commits: Commits) -> None:
    pipeline = crm.pipeline()
    first = {"name": "D", "pipeline_id": pipeline["id"], "stage_id": pipeline["stages"][0]["id"]}
    # the first deal also stores the default pipeline: still one commit
    assert _count(commits, lambda: crm.post("/deals", first), 201) == 1
    deal = crm.deal()
    assert _count(commits, lambda: crm.patch(f"/deals/{deal['id']}", {"name": "Renamed"})) == 1
    stage = crm.stage(pipeline, "Won")["id"]
    assert _count(commits, lambda: crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": stage})) == 1
    # the first ticket also stores the settings row with its counter: still one commit
    assert _count(commits, lambda: crm.post("/tickets", {"title": "T", "source": "api"}), 201) == 1
    ticket = crm.ticket()
    assert _count(commits, lambda: crm.patch(f"/tickets/{ticket['id']}/state", {"state": "closed"})) == 1
    assert _count(commits, lambda: crm.patch(f"/tickets/{ticket['id']}", {"title": "New title"})) == 1
    assert _count(commits, lambda: crm.post("/tasks", {"title": "Call"}), 201) == 1
    assert _count(commits, lambda: crm.post("/contacts", {"name": "Ana"}), 201) == 1
    # an identity is stored under a savepoint (a taken one is 409): still one commit. (An email: a phone
    # identity also runs the messaging link job after the commit, in its own unit of work.)
    contact = {"name": "Bea", "identities": [{"kind": "email", "value": "bea@example.com"}]}
    assert _count(commits, lambda: crm.post("/contacts", contact), 201) == 1
    assert _count(commits, lambda: crm.post("/accounts", {"name": "Acme"}), 201) == 1
    assert (
        _count(commits, lambda: crm.post(f"/deals/{deal['id']}/conversations", {"conversation_id": "c"}), 201)
        == 1
    )
    rate = {"from_currency": "USD", "to_currency": "MXN", "rate": "17"}
    assert _count(commits, lambda: crm.post("/currency/rates", rate)) == 1


def test_a_refused_request_commits_nothing_and_leaves_nothing(crm: Crm, commits: Commits) -> None:
    crm.contact(identities=[{"kind": "email", "value": "ana@example.com"}])
    taken = {"name": "Other", "identities": [{"kind": "email", "value": "ana@example.com"}]}
    assert _count(commits, lambda: crm.post("/contacts", taken), 409) == 0
    deal = crm.deal()
    assert _count(commits, lambda: crm.patch(f"/deals/{deal['id']}", {"owner_id": "x" * 65}), 400) == 0
    assert crm.ok(crm.get("/contacts"))["total"] == 1
