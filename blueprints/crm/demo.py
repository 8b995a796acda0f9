"""CRM demo data for the demo organization: the default pipeline, exchange rates, an account with
contacts, deals in several currencies (with line items), tickets and tasks. Idempotent: every object is
looked up by name before it is created."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from blueprints.crm.drafts import (
    AccountDraft,
    ContactDraft,
    DealContactDraft,
    DealDraft,
    IdentityDraft,
    LineItemDraft,
    ProductDraft,
    TaskDraft,
    TicketDraft,
)
from blueprints.crm.models import CrmAccount, CrmContact, CrmTask, Deal, Product, Ticket
from blueprints.crm.services import contacts, deals, pipelines, products, tasks, tickets
from core.db import db, utcnow
from core.demo import DEMO_ORGANIZATION_ID, seeder

RATES = (("USD", "MXN", "17.20"), ("EUR", "MXN", "18.90"), ("COP", "USD", "0.00025"))
CONTACTS = (
    ("Lucía Hernández", "Operations manager", "+52 55 1234 5678", "lucia@logistica-demo.mx"),
    ("Diego Ramírez", "Purchasing", "+57 310 555 0101", "diego@andes-demo.co"),
)
# name, stage, currency, line items (name, quantity, unit price), contact index
DEALS: tuple[tuple[str, str, str, tuple[tuple[str, str, str], ...], int], ...] = (
    ("WhatsApp support for 20 agents", "Proposal", "MXN", (("Agent seat", "20", "450.00"),), 0),
    (
        "Voice AI pilot",
        "Qualified",
        "USD",
        (("Pilot setup", "1", "1500.00"), ("Minutes pack", "10", "49.90")),
        0,
    ),
    ("Andes rollout", "Negotiation", "COP", (("Annual licence", "1", "48000000"),), 1),
    ("Madrid office", "New", "EUR", (("Starter plan", "3", "99.00"),), 1),
    ("Renewal 2026", "Won", "MXN", (("Renewal", "1", "36000.00"),), 0),
)
TICKETS = (
    ("Cannot send template messages", "urgent", "channel", "whatsapp", "waiting_on_agent"),
    ("Invoice for October", "normal", "form", "email", "new"),
    ("Agent status stuck on busy", "high", "api", None, "closed"),
)
TASKS = (
    ("Call Lucía about the proposal", "call", 1),
    ("Send the Andes contract", "email", 3),
    ("Demo for Madrid", "meeting", 7),
)


def _by_name(model: Any, name_column: Any, name: str) -> Any:
    return db.session.scalars(
        select(model).where(model.organization_id == DEMO_ORGANIZATION_ID, name_column == name).limit(1)
    ).first()


@seeder(order=30, name="crm")
def seed_crm(environment: str) -> list[str]:
    org = DEMO_ORGANIZATION_ID
    pipeline = pipelines.list_pipelines(org)[0]
    pipeline_id, stages = pipeline.id, {s.name: s.id for s in pipeline.stages}
    for source, target, rate in RATES:
        pipelines.upsert_rate(org, source, target, Decimal(rate))
    account = _by_name(CrmAccount, CrmAccount.name, "Logística Demo") or contacts.create_account(
        org, AccountDraft(name="Logística Demo", domain="logistica-demo.mx", industry="Logistics")
    )
    account_id = account.id
    contact_ids = []
    for name, title, phone, email in CONTACTS:
        contact = _by_name(CrmContact, CrmContact.name, name) or contacts.create_contact(
            org,
            ContactDraft(
                name=name,
                job_title=title,
                identities=(IdentityDraft("phone", phone), IdentityDraft("email", email)),
                account_ids=(account_id,),
            ),
        )
        contact_ids.append(contact.id)
    deal_ids = []
    for index, (name, stage, currency, items, contact_index) in enumerate(DEALS):
        deal = _by_name(Deal, Deal.name, name)
        if deal is None:
            deal = deals.create_deal(
                org,
                DealDraft(
                    name=name,
                    pipeline_id=pipeline_id,
                    stage_id=stages[pipelines.DEFAULT_STAGES[0][0]],
                    currency=currency,
                    account_id=account_id,
                    expected_close_date=date.today() + timedelta(days=14 * (index + 1)),
                    contacts=(DealContactDraft(contact_ids[contact_index], role="buyer", is_primary=True),),
                ),
            )
            for item_name, quantity, price in items:
                deals.add_line_item(
                    org,
                    deal.id,
                    LineItemDraft(name=item_name, quantity=Decimal(quantity), unit_price=Decimal(price)),
                )
            if stage != pipelines.DEFAULT_STAGES[0][0]:
                deals.change_stage(org, deal.id, stages[stage])
        deal_ids.append(deal.id)
    ticket_ids = []
    for title, priority, source, channel, state in TICKETS:
        ticket = _by_name(Ticket, Ticket.title, title)
        if ticket is None:
            ticket = tickets.create_ticket(
                org,
                TicketDraft(
                    title=title,
                    priority=priority,
                    source=source,
                    channel=channel,
                    requester_id=contact_ids[0],
                    account_id=account_id,
                    body_html=f"<p>{title}.</p>",
                ),
            )
            if state != "new":
                tickets.change_state(org, ticket.id, state)
        ticket_ids.append(ticket.id)
    for index, (title, kind, days) in enumerate(TASKS):
        if _by_name(CrmTask, CrmTask.title, title) is None:
            tasks.create_task(
                org,
                TaskDraft(
                    title=title,
                    type=kind,
                    due_date=utcnow() + timedelta(days=days),
                    deal_id=deal_ids[index % len(deal_ids)],
                    ticket_id=ticket_ids[0] if index == 0 else None,
                    contact_id=contact_ids[index % len(contact_ids)],
                ),
            )
    return [f"{environment} CRM: {len(DEALS)} deals, {len(TICKETS)} tickets, {len(TASKS)} tasks"]


# sku, name, description, price, currency
PRODUCTS = (
    ("SEAT-M", "Agent seat", "One desk seat per agent and month: inbox, CRM and presence.", "450.00", "MXN"),
    (
        "WA-START",
        "WhatsApp starter plan",
        "One WhatsApp number, templates and broadcasts up to 5,000 messages a month.",
        "1290.00",
        "MXN",
    ),
    ("VOICE-MIN", "Minutes pack", "1,000 minutes of voice AI calls.", "49.90", "USD"),
    (
        "AI-PILOT",
        "Pilot setup",
        "Voice AI pilot: configuration, knowledge and two weeks of tuning.",
        "1500.00",
        "USD",
    ),
    (
        "MSG-UNIT",
        "Message (pay as you go)",
        "One outbound WhatsApp message beyond the plan.",
        "0.0125",
        "USD",
    ),
)


@seeder(order=31, name="crm products")
def seed_products(environment: str) -> list[str]:
    """The demo catalogue (what Sofía's ``send_product`` offers); looked up by SKU, so idempotent."""
    for sku, name, description, price, currency in PRODUCTS:
        found = db.session.scalars(
            select(Product).where(Product.organization_id == DEMO_ORGANIZATION_ID, Product.sku == sku)
        ).first()
        if found is None:
            products.create_product(
                DEMO_ORGANIZATION_ID,
                ProductDraft(
                    sku=sku,
                    name=name,
                    description=description,
                    price=Decimal(price),
                    currency=currency,
                    url=f"https://demo.test/products/{sku.lower()}",
                ),
            )
    return [f"{environment} CRM: {len(PRODUCTS)} products"]
