"""List endpoints issue a fixed number of queries whatever the page size (no query per row)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from flask import Flask

from blueprints.crm.drafts import (
    AccountDraft,
    ContactDraft,
    DealContactDraft,
    DealDraft,
    IdentityDraft,
    LineItemDraft,
    TaskDraft,
    TicketDraft,
)
from blueprints.crm.services import contacts, deals, pipelines, tasks, tickets
from core.db import db
from tests.crm.conftest import Crm

ROWS = 110  # both pages (20 and 100) are full, so both also need the count query


def _seed(app: Flask, organization_id: str) -> None:
    org = uuid.UUID(organization_id)
    with app.app_context():
        pipeline = pipelines.list_pipelines(org)[0]
        pipeline_id, stage_ids = pipeline.id, [s.id for s in pipeline.stages]
        contact = contacts.create_contact(org, ContactDraft(name="Ana"))
        account = contacts.create_account(org, AccountDraft(name="Acme"))
        for index in range(ROWS):
            deal = deals.create_deal(
                org,
                DealDraft(
                    name=f"Deal {index}",
                    pipeline_id=pipeline_id,
                    stage_id=stage_ids[index % 3],
                    contacts=(DealContactDraft(contact.id, is_primary=True),),
                    conversation_ids=(f"conv-{index}",),
                ),
            )
            deals.add_line_item(
                org, deal.id, LineItemDraft("Plan", quantity=Decimal(1), unit_price=Decimal(10))
            )
            ticket = tickets.create_ticket(
                org, TicketDraft(title=f"Ticket {index}", source="api", conversation_ids=(f"conv-{index}",))
            )
            tasks.create_task(
                org,
                TaskDraft(
                    title=f"Task {index}",
                    deal_id=deal.id,
                    ticket_id=ticket.id,
                    contact_id=contact.id,
                    account_id=account.id,
                ),
            )
        db.session.commit()  # services leave the commit to their unit of work; this block is one


def _count(crm: Crm, queries: Callable[[], Any], suffix: str, limit: int) -> int:
    with queries() as counted:
        body = crm.ok(crm.get(suffix, limit=limit))
    assert len(body["data"]) == limit and body["total"] == ROWS
    return counted.count


def test_list_query_counts_do_not_grow_with_the_page(
    app: Flask, crm: Crm, queries: Callable[[], Any]
) -> None:
    _seed(app, crm.org.id)
    counts = {}
    for suffix in ("/deals", "/tickets", "/tasks"):
        small, large = _count(crm, queries, suffix, 20), _count(crm, queries, suffix, 100)
        counts[suffix] = (small, large)
        assert small == large, (suffix, small, large)
    # the related rows really are in the payload
    listed = crm.ok(crm.get("/tasks", limit=1))["data"][0]
    assert listed["deal"]["reference"].startswith("VNT-") and listed["ticket"]["reference"].startswith("TCK-")
    assert listed["contact"]["name"] == "Ana" and listed["account"]["name"] == "Acme"
    deal = crm.ok(crm.get("/deals", limit=1))["data"][0]
    assert deal["line_items"] and deal["contacts"] and deal["conversations"]
    print("query counts (limit 20, limit 100):", counts)


def test_contact_and_account_lists_do_not_grow_with_the_page(
    app: Flask, crm: Crm, queries: Callable[[], Any]
) -> None:
    org = uuid.UUID(crm.org.id)
    with app.app_context():
        account = contacts.create_account(org, AccountDraft(name="Acme"))
        for index in range(ROWS):
            contact = contacts.create_contact(
                org,
                ContactDraft(
                    name=f"Contact {index}",
                    identities=(
                        IdentityDraft("phone", f"+5255{index:08d}"),
                        IdentityDraft("email", f"c{index}@example.com"),
                    ),
                ),
            )
            contacts.link_contact(org, account.id, contact.id, "buyer")
            if index:
                contacts.create_account(org, AccountDraft(name=f"Account {index}"))
        db.session.commit()
    for suffix in ("/contacts", "/accounts"):
        small, large = _count(crm, queries, suffix, 20), _count(crm, queries, suffix, 100)
        assert small == large, (suffix, small, large)
    listed = crm.ok(crm.get("/contacts", limit=1))["data"][0]
    assert {i["kind"] for i in listed["identities"]} == {"phone", "email"}
