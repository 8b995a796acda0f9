"""The deal sheet's reads (the drawer and the deal page, ``views.deal_sheet`` and ``views.sheet_choices``):
a fixed number of statements whatever the deal and the organization hold, and the same rows in the same
order as the verbs and lists they stand in for (``deals.get_deal``, ``pipelines.ordered_stages``, the
product, account and contact lists, ``deals.stage_times``), on SQLite and PostgreSQL alike."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from blueprints.crm import views
from blueprints.crm.models import CrmContact
from blueprints.crm.services import contacts as contact_service
from blueprints.crm.services import deals as deal_service
from blueprints.crm.services import pipelines as pipeline_service
from blueprints.crm.services import products as product_service
from core.db import db
from tests.conftest import Org
from tests.crm.conftest import Crm
from tests.crm.test_deal_pages import HX, Desk, _desk

# names that sort differently by case, accents and spaces, so that the database's collation is what
# orders them (the lists' own ORDER BY name, id)
NAMES = ("beta", "Álamo", "alfa", "Zeta", "alfa", "Ñandú", "a b", "ab", "Beta")


def _crm_statements(statements: list[str]) -> list[str]:
    return [s for s in statements if "crm_" in s]


def _fill(crm: Crm, deal: dict[str, Any], member_id: str) -> None:
    """Everything the sheet shows, several of each."""
    for n, name in enumerate(NAMES):
        crm.ok(crm.post("/products", {"name": f"{name} {n % 3}", "price": "10.50", "sku": f"S{n}"}), 201)
        crm.account(name=name)
    contacts = [crm.contact(name=name)["id"] for name in NAMES[:4]]
    crm.ok(crm.post("/products", {"name": "Retirado", "price": "1", "active": False}), 201)
    crm.ok(
        crm.patch(
            f"/deals/{deal['id']}",
            {
                "contacts": [
                    {"contact_id": c, "is_primary": n == 1, "role": "TI"} for n, c in enumerate(contacts)
                ]
            },
        )
    )
    for n in range(3):
        item = {"name": f"Licencia {n}", "quantity": n + 1, "unit_price": "100"}
        crm.ok(crm.post(f"/deals/{deal['id']}/line-items", item), 201)
        link = {"conversation_id": f"c-{n}", "channel": "whatsapp"}
        crm.ok(crm.post(f"/deals/{deal['id']}/conversations", link), 201)
        crm.task(
            title=f"Llamar {n}", deal_id=deal["id"], contact_id=contacts[n], due_date=f"2031-01-0{n + 1}"
        )
        crm.ok(crm.post(f"/deals/{deal['id']}/notes", {"body": f"Nota {n}", "author_id": member_id}), 201)
    pipeline = crm.pipeline()
    for name in ("Qualified", "Proposal", "Qualified"):
        crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": crm.stage(pipeline, name)["id"]}))


def test_the_drawer_and_the_page_cost_the_same_statements_whatever_the_deal_holds(
    app: Flask, runner: FlaskCliRunner, org: Org, crm: Crm, queries: Callable[[], Any]
) -> None:
    agent: Desk = _desk(app, runner, org, "Ana Agent")
    bare = crm.deal(name="Vacía", owner_id=agent.member_id)
    full = crm.deal(name="Llena", owner_id=agent.member_id)
    _fill(crm, full, agent.member_id)
    for headers in (HX, {}):
        counts = []
        for deal in (bare, full):
            agent.get(f"/deals/{deal['id']}", **headers)
            with queries() as seen:
                assert agent.get(f"/deals/{deal['id']}", **headers).status_code == 200
            counts.append(seen.statements)
        assert len(counts[0]) == len(counts[1]), [len(c) for c in counts]
        # the sheet's own reads: the deal with its pipeline and stages, its line items, its conversations,
        # its contacts with their names, its stage visits, the selects' choices, its tasks, its timeline
        # (the page adds the desk's frame, whose rail counts the agent's overdue tasks)
        crm_reads = _crm_statements(counts[1])
        assert len(crm_reads) == (8 if headers == HX else 9), crm_reads


def test_the_sheet_reads_what_the_deal_verbs_read(app: Flask, org: Org, crm: Crm) -> None:
    deal = crm.deal(name="Llena")
    _fill(crm, deal, str(uuid.uuid4()))
    organization_id, deal_id = uuid.UUID(org.id), uuid.UUID(deal["id"])
    with app.app_context():
        sheet = views.deal_sheet(organization_id, deal_id)
        assert sheet is not None
        shown = sheet.deal
        got = (
            shown.stage.id,
            shown.pipeline.id,
            [i.id for i in shown.line_items],
            [c.id for c in shown.conversations],
            [(c.contact_id, c.role, c.is_primary) for c in shown.contacts],
            [s.id for s in sheet.stages],
            sheet.contact_names,
        )
        db.session.expunge_all()
        verb = deal_service.get_deal(organization_id, deal_id)
        rows = db.session.execute(
            select(CrmContact.id, CrmContact.name).where(
                CrmContact.id.in_([c.contact_id for c in verb.contacts])
            )
        )
        names = {row.id: row.name for row in rows}
        assert got == (
            verb.stage.id,
            verb.pipeline.id,
            [i.id for i in verb.line_items],
            [c.id for c in verb.conversations],
            [(c.contact_id, c.role, c.is_primary) for c in verb.contacts],
            [s.id for s in pipeline_service.ordered_stages(verb.pipeline_id)],
            names,
        )
        assert len(got[2]) == 3 and len(got[3]) == 3 and len(got[4]) == 4 and len(names) == 4


def test_another_organizations_or_a_deleted_deal_has_no_sheet(
    app: Flask, org: Org, crm: Crm, other_crm: Crm
) -> None:
    foreign = other_crm.deal()
    deleted = crm.deal()
    crm.ok(crm.delete(f"/deals/{deleted['id']}"))
    with app.app_context():
        for deal_id in (foreign["id"], deleted["id"], str(uuid.uuid4())):
            assert views.deal_sheet(uuid.UUID(org.id), uuid.UUID(deal_id)) is None


def test_the_choices_are_the_lists_first_rows_in_their_order(app: Flask, org: Org, crm: Crm) -> None:
    _fill(crm, crm.deal(), str(uuid.uuid4()))
    organization_id = uuid.UUID(org.id)
    with app.app_context():
        for limit in (3, 200):
            choices = views.sheet_choices(organization_id, limit)
            products = product_service.list_products(
                organization_id, product_service.ProductFilters(active=True, limit=limit)
            ).items
            accounts = contact_service.list_accounts(
                organization_id, contact_service.AccountFilters(limit=limit)
            ).items
            contacts = db.session.scalars(
                select(CrmContact)
                .where(CrmContact.organization_id == organization_id)
                .order_by(CrmContact.name, CrmContact.id)
                .limit(limit)
            ).all()
            assert [(p.id, p.name, p.price, p.currency) for p in choices.products] == [
                (p.id, p.name, p.price, p.currency) for p in products
            ]
            assert [(a.id, a.name) for a in choices.accounts] == [(a.id, a.name) for a in accounts]
            assert [(c.id, c.name) for c in choices.contacts] == [(c.id, c.name) for c in contacts]
            assert len(choices.products) == min(limit, len(NAMES))


def test_stage_times_from_the_stages_given_equal_those_read(app: Flask, org: Org, crm: Crm) -> None:
    deal = crm.deal()
    pipeline = crm.pipeline()
    for name in ("Qualified", "Proposal", "Qualified"):
        crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": crm.stage(pipeline, name)["id"]}))
    # a stage of another pipeline visited before the deal moved here, then deleted: its copied name
    other = crm.ok(crm.post("/pipelines", {"name": "Renovaciones", "key": "REN"}), 201)
    crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "Vence", "stage_order": 0}), 201)
    crm.ok(crm.patch(f"/deals/{deal['id']}", {"pipeline_id": other["id"]}))
    crm.ok(crm.patch(f"/deals/{deal['id']}", {"pipeline_id": pipeline["id"]}))
    organization_id, deal_id = uuid.UUID(org.id), uuid.UUID(deal["id"])
    with app.app_context():
        read = deal_service.stage_times(organization_id, deal_id)
        shown = deal_service.get_deal(organization_id, deal_id)
        given = deal_service.stage_times(
            organization_id, deal_id, deal=shown, stages=pipeline_service.ordered_stages(shown.pipeline_id)
        )
    strip = [(s.stage_id, s.stage_name, s.stage_order, s.is_current, s.visits) for s in read.stages]
    assert strip == [(s.stage_id, s.stage_name, s.stage_order, s.is_current, s.visits) for s in given.stages]
    assert "Vence" in [s.stage_name for s in given.stages] and max(s.visits for s in given.stages) == 2


def test_the_sheets_statements_do_not_grow_with_its_rows(
    app: Flask, runner: FlaskCliRunner, org: Org, crm: Crm, queries: Callable[[], Any]
) -> None:
    """1, 4 and 12 line items from the catalogue (and as many tasks and notes): the drawer, the page, the
    live answer and the line-item section's answer to an edit cost the same statements; each row's URLs
    and words are made once per render, none is read per row."""
    agent: Desk = _desk(app, runner, org, "Ana Agent")
    deal = crm.deal(name="Creciente", owner_id=agent.member_id, currency="MXN")
    products = [
        crm.ok(crm.post("/products", {"name": f"Plan {n}", "price": "199.90", "sku": f"P{n}"}), 201)
        for n in range(12)
    ]
    counts: dict[int, dict[str, int]] = {}
    items: list[dict[str, Any]] = []
    for rows in (1, 4, 12):
        while len(items) < rows:
            product = products[len(items)]
            line = {"name": product["name"], "product_id": product["id"], "sku": product["sku"]}
            line.update(quantity=len(items) + 1, unit_price=product["price"], discount="5")
            items.append(crm.ok(crm.post(f"/deals/{deal['id']}/line-items", line), 201))
            crm.task(title=f"Llamar {len(items)}", deal_id=deal["id"], owner_id=agent.member_id)
            crm.ok(crm.post(f"/deals/{deal['id']}/notes", {"body": f"Nota {len(items)}"}), 201)
        seen: dict[str, int] = {}
        for label, path, headers in (
            ("drawer", f"/deals/{deal['id']}", HX),
            ("page", f"/deals/{deal['id']}", {}),
            ("live", f"/deals/{deal['id']}/live", HX),
        ):
            with queries() as counted:
                response = agent.get(path, **headers)
            assert response.status_code == 200
            assert response.get_data(as_text=True).count("data-item-id=") == rows, label
            seen[label] = len(counted.statements)
        with queries() as counted:
            edited = agent.post(f"/deals/{deal['id']}/items/{items[0]['id']}", quantity=str(rows + 1))
        assert edited.status_code == 200 and edited.get_data(as_text=True).count("data-item-id=") == rows
        seen["item edit"] = len(counted.statements)
        counts[rows] = seen
    assert counts[1] == counts[4] == counts[12], counts
