"""``search`` on the CRM lists through the text indexes: a case-insensitive substring anywhere in the
searched fields, ``%`` and ``_`` literal, short queries included, following edits and deletes; and the
plans show the text index read instead of every row of the organization (SQLite FTS5 trigram tables,
PostgreSQL pg_trgm GIN indexes)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from blueprints.crm.services.contacts import (
    ACCOUNT_TEXT,
    CONTACT_TEXT,
    IDENTITY_TEXT,
    AccountFilters,
    ContactFilters,
    list_accounts,
    list_contacts,
)
from blueprints.crm.services.deals import DEAL_TEXT, DealFilters, list_deals
from blueprints.crm.services.tasks import TASK_TEXT, TaskFilters, list_tasks
from blueprints.crm.services.tickets import TICKET_TEXT, TicketFilters, list_tickets
from core.db import db
from core.environments import LIVE, in_environment
from tests.core.text_plans import assert_trigram_indexes_serve, text_plan
from tests.crm.conftest import Crm
from tests.support.plans import captured_statements


def names(crm: Crm, suffix: str, search: str, field: str = "name") -> set[str]:
    body = crm.ok(crm.get(suffix, search=search))
    assert body["total"] == len(body["data"])
    return {row[field] for row in body["data"]}


def test_deal_ticket_and_task_search_find_substrings(crm: Crm, other_crm: Crm) -> None:
    crm.deal(name="Renovación Acme 2027")
    crm.deal(name="Plan 100%_empresa")
    other_crm.deal(name="Renovación Globex")
    assert names(crm, "/deals", "novac") == {"Renovación Acme 2027"}  # middle of a word
    assert names(crm, "/deals", "ACME") == {"Renovación Acme 2027"}
    assert names(crm, "/deals", "0%_e") == {"Plan 100%_empresa"}  # literal % and _
    assert names(crm, "/deals", "%") == {"Plan 100%_empresa"}
    assert names(crm, "/deals", "1_0") == set()
    assert names(crm, "/deals", "e") == {"Renovación Acme 2027", "Plan 100%_empresa"}  # one character
    ticket = crm.ticket(title="No llega el SMS de verificación")
    crm.ticket(title="Factura duplicada")
    assert names(crm, "/tickets", "sms de", "title") == {ticket["title"]}
    assert names(crm, "/tickets", ticket["reference"][-3:], "title") >= {ticket["title"]}  # the reference
    task = crm.task(title="Llamar a Ana por la portabilidad")
    assert names(crm, "/tasks", "portab", "title") == {task["title"]}
    crm.ok(crm.patch(f"/tasks/{task['id']}", {"title": "Llamar a Ana por el reembolso"}))
    assert names(crm, "/tasks", "portab", "title") == set()
    assert names(crm, "/tasks", "reembolso", "title") == {"Llamar a Ana por el reembolso"}
    crm.ok(crm.delete(f"/tasks/{task['id']}"))
    assert names(crm, "/tasks", "reembolso", "title") == set()


def test_contact_search_by_name_or_identity_and_account_search(crm: Crm) -> None:
    crm.contact(name="Lucía Fernández", identities=[{"kind": "email", "value": "lucia@acme.mx"}])
    crm.contact(name="Pedro", identities=[{"kind": "phone", "value": "+52 55 1234 5678"}])
    assert names(crm, "/contacts", "fernán") == {"Lucía Fernández"}
    assert names(crm, "/contacts", "acme.m") == {"Lucía Fernández"}  # an email identity
    assert names(crm, "/contacts", "1234 56") == set()  # not a phone, not in any field
    assert names(crm, "/contacts", "+52 55 1234 5678") == {"Pedro"}  # typed any way: its E.164 form too
    assert names(crm, "/contacts", "ro") == {"Pedro"}  # two characters
    crm.account(name="Initech", domain="initech.example")
    crm.account(name="Globex")
    assert names(crm, "/accounts", "TECH.EX") == {"Initech"}
    assert names(crm, "/accounts", "lobe") == {"Globex"}


SEARCHES: dict[str, tuple[Callable[[uuid.UUID, Any], Any], Any, str]] = {
    "deals": (list_deals, DealFilters(search="renova"), "crm_deals"),
    "tickets": (list_tickets, TicketFilters(search="factura"), "crm_tickets"),
    "tasks": (list_tasks, TaskFilters(search="llamar"), "crm_tasks"),
    "accounts": (list_accounts, AccountFilters(search="initech"), "crm_accounts"),
    "contacts": (list_contacts, ContactFilters(search="lucía"), "crm_contacts"),
}


TEXT_INDEXES_OF = {
    "deals": [DEAL_TEXT],
    "tickets": [TICKET_TEXT],
    "tasks": [TASK_TEXT],
    "accounts": [ACCOUNT_TEXT],
    "contacts": [CONTACT_TEXT, IDENTITY_TEXT],
}


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_each_list_search_reads_the_text_index(app: Flask, name: str) -> None:
    service, filters, table = SEARCHES[name]
    with in_environment(app, LIVE):
        with captured_statements() as seen:
            service(uuid.uuid4(), filters)
        [(statement, parameters)] = [
            (s, p) for s, p in seen if f"FROM {table}" in s and "ORDER BY" in s and "count(" not in s
        ]
        dialect = db.session.connection().dialect.name
        plan = text_plan(statement, parameters)
        db.session.rollback()
    if dialect == "sqlite":
        assert f"SCAN {table}_fts VIRTUAL TABLE INDEX" in plan, plan
        if name == "contacts":
            assert "SCAN crm_contact_identities_fts VIRTUAL TABLE INDEX" in plan, plan
    else:
        # On a store this small PostgreSQL rightly reads the organization's few rows through the list
        # index; what matters is that the ILIKE the list sends can be served by the trigram indexes,
        # which the planner then picks by selectivity on real data.
        assert "~~*" in plan, plan
        for index in TEXT_INDEXES_OF[name]:
            assert_trigram_indexes_serve(app, index, filters.search)
