"""The CRM verbs refuse with a stable code and the field concerned (``rules.Refusal``), whoever calls them:
here the services are called directly with typed inputs, as a desk page or the AI area's tools call them.
Every code a verb can raise has words for the pages (``refusals.MESSAGES``) in both catalogues."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from blueprints.crm import hooks
from blueprints.crm.drafts import (
    UNSET,
    AccountDraft,
    ContactChanges,
    ContactDraft,
    DealChanges,
    DealContactDraft,
    DealDraft,
    IdentityDraft,
    LineItemChanges,
    LineItemDraft,
    NamedDraft,
    PipelineChanges,
    PipelineDraft,
    ProductChanges,
    ProductDraft,
    StageChanges,
    StageDraft,
    TaskChanges,
    TaskDraft,
    TicketChanges,
    TicketDraft,
    parse,
)
from blueprints.crm.refusals import MESSAGES
from blueprints.crm.rules import RULE_CODES, Refusal, code_of
from blueprints.crm.services import contacts, deals, pipelines, products, tasks, tickets
from blueprints.crm.services.deals import DealFilters
from core.db import db
from tests.conftest import Org

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = uuid.UUID("00000000-0000-4000-8000-000000000001")


@dataclass(frozen=True)
class World:
    """One organization's CRM records to be refused against."""

    org: uuid.UUID
    pipeline: uuid.UUID
    stage: uuid.UUID
    other_pipeline: uuid.UUID
    other_stage: uuid.UUID
    deal: uuid.UUID  # has a line item
    item: uuid.UUID
    deleted_deal: uuid.UUID
    contact: uuid.UUID
    ticket: uuid.UUID
    task: uuid.UUID
    product: uuid.UUID


@pytest.fixture
def world(app: Flask, org: Org) -> Iterator[World]:
    organization_id = uuid.UUID(org.id)
    with app.app_context():
        pipeline = pipelines.list_pipelines(organization_id)[0]
        pipelines.ensure_default_pipeline(organization_id)
        other = pipelines.create_pipeline(organization_id, PipelineDraft("Renewals", "REN"))
        other_stage = pipelines.create_stage(organization_id, other.id, StageDraft("Due", stage_order=0))
        stage = pipeline.stages[0].id
        deal = deals.create_deal(organization_id, DealDraft("Plan", pipeline.id, stage, currency="USD"))
        item = deals.add_line_item(
            organization_id, deal.id, LineItemDraft("Seat", quantity=Decimal(2), unit_price=Decimal(10))
        )
        deleted = deals.create_deal(organization_id, DealDraft("Gone", pipeline.id, stage))
        deals.delete_deal(organization_id, deleted.id)
        contact = contacts.create_contact(
            organization_id, ContactDraft("Rosa", identities=(IdentityDraft("phone", "+525577770001"),))
        )
        ticket = tickets.create_ticket(organization_id, TicketDraft("Factura", source="api"))
        task = tasks.create_task(organization_id, TaskDraft("Llamar"))
        product = products.create_product(organization_id, ProductDraft("Seat", price=Decimal(450)))
        db.session.commit()
        yield World(
            organization_id,
            pipeline.id,
            stage,
            other.id,
            other_stage.id,
            deal.id,
            item.id,
            deleted.id,
            contact.id,
            ticket.id,
            task.id,
            product.id,
        )
        db.session.rollback()


def _nobody_is_a_member(call: Callable[[World], Any]) -> Callable[[World], Any]:
    def wrapped(w: World) -> Any:
        with hooks.known_members.only(lambda **_: set()):
            return call(w)

    return wrapped


def _only_the_first_conversation_exists(call: Callable[[World], Any]) -> Callable[[World], Any]:
    def wrapped(w: World) -> Any:
        with hooks.known_conversations.only(lambda conversation_ids, **_: set(conversation_ids[:1])):
            return call(w)

    return wrapped


# (verb's refusal, the call, code, param)
CASES: list[tuple[str, Callable[[World], Any], str, str | None]] = [
    (
        "deal create: a stage of another pipeline",
        lambda w: deals.create_deal(w.org, DealDraft("Plan", w.pipeline, w.other_stage)),
        "stage_other_pipeline",
        "stage_id",
    ),
    (
        "deal create: an unknown pipeline",
        lambda w: deals.create_deal(w.org, DealDraft("Plan", UNKNOWN, w.stage)),
        "pipeline_not_found",
        "pipeline_id",
    ),
    (
        "deal create: an unknown currency",
        lambda w: deals.create_deal(w.org, DealDraft("Plan", w.pipeline, w.stage, currency="XXX")),
        "currency_unknown",
        "currency",
    ),
    (
        "deal create: a negative amount",
        lambda w: deals.create_deal(w.org, DealDraft("Plan", w.pipeline, w.stage, amount=Decimal(-1))),
        "money_invalid",
        "amount",
    ),
    (
        "deal create: an unknown contact",
        lambda w: deals.create_deal(
            w.org,
            DealDraft(
                "Plan", w.pipeline, w.stage, contacts=(DealContactDraft(w.contact), DealContactDraft(UNKNOWN))
            ),
        ),
        "contact_not_found",
        "contacts.1.contact_id",
    ),
    (
        "deal create: two primary contacts",
        lambda w: deals.create_deal(
            w.org,
            DealDraft(
                "Plan",
                w.pipeline,
                w.stage,
                contacts=(
                    DealContactDraft(w.contact, is_primary=True),
                    DealContactDraft(UNKNOWN, is_primary=True),
                ),
            ),
        ),
        "contacts_primary_twice",
        "contacts",
    ),
    (
        "deal create: an owner who is no member",
        _nobody_is_a_member(
            lambda w: deals.create_deal(w.org, DealDraft("Plan", w.pipeline, w.stage, owner_id="mem_x"))
        ),
        "member_unknown",
        "owner_id",
    ),
    (
        "deal update: an amount while line items make it",
        lambda w: deals.update_deal(w.org, w.deal, DealChanges(amount=Decimal(99))),
        "amount_from_line_items",
        "amount",
    ),
    (
        "deal update: a name too long",
        lambda w: deals.update_deal(w.org, w.deal, DealChanges(name="x" * 501)),
        "value_too_long",
        "name",
    ),
    (
        "deal update: another pipeline's stage",
        lambda w: deals.update_deal(w.org, w.deal, DealChanges(stage_id=w.other_stage)),
        "stage_other_pipeline",
        "stage_id",
    ),
    (
        "line item: another currency than the deal's",
        lambda w: deals.add_line_item(
            w.org, w.deal, LineItemDraft("Seat", Decimal(1), Decimal(1), currency="MXN")
        ),
        "currency_not_deal_currency",
        "currency",
    ),
    (
        "line item: no quantity",
        lambda w: deals.add_line_item(w.org, w.deal, LineItemDraft("Seat", Decimal(0), Decimal(1))),
        "value_out_of_range",
        "quantity",
    ),
    (
        "line item: an unknown product",
        lambda w: deals.add_line_item(
            w.org, w.deal, LineItemDraft("Seat", Decimal(1), Decimal(1), product_id=UNKNOWN)
        ),
        "product_unknown",
        "product_id",
    ),
    (
        "line item update: a negative discount",
        lambda w: deals.update_line_item(w.org, w.deal, w.item, LineItemChanges(discount=Decimal("-0.5"))),
        "money_invalid",
        "discount",
    ),
    (
        "stage move: a stage of another pipeline",
        lambda w: deals.change_stage(w.org, w.deal, w.other_stage),
        "stage_other_pipeline",
        "stage_id",
    ),
    (
        "stage move: an unknown stage",
        lambda w: deals.change_stage(w.org, w.deal, UNKNOWN),
        "stage_not_found",
        "stage_id",
    ),
    (
        "conversation link: a channel the CRM does not know",
        lambda w: deals.link_conversation(w.org, w.deal, "conv-1", "fax", None),
        "value_not_allowed",
        "channel",
    ),
    (
        "deal list: an inverted range",
        lambda w: deals.list_deals(
            w.org, DealFilters(expected_close_after=date(2026, 2, 1), expected_close_before=date(2026, 1, 1))
        ),
        "range_inverted",
        "expected_close_after",
    ),
    (
        "ticket create: an unknown requester",
        lambda w: tickets.create_ticket(w.org, TicketDraft("Factura", "api", requester_id=UNKNOWN)),
        "contact_not_found",
        "requester_id",
    ),
    (
        "ticket create: a priority that does not exist",
        lambda w: tickets.create_ticket(w.org, TicketDraft("Factura", "api", priority="whenever")),
        "value_not_allowed",
        "priority",
    ),
    (
        "ticket create: a conversation that does not exist",
        _only_the_first_conversation_exists(
            lambda w: tickets.create_ticket(w.org, TicketDraft("Factura", "api", conversation_ids=("a", "b")))
        ),
        "conversation_not_found",
        "conversation_ids.1",
    ),
    (
        "ticket update: an unknown project",
        lambda w: tickets.update_ticket(w.org, w.ticket, TicketChanges(project_id=UNKNOWN)),
        "project_not_found",
        "project_id",
    ),
    (
        "ticket update: an empty title",
        lambda w: tickets.update_ticket(w.org, w.ticket, TicketChanges(title="   ")),
        "value_too_short",
        "title",
    ),
    (
        "ticket state: a state that does not exist",
        lambda w: tickets.change_state(w.org, w.ticket, "solved"),
        "value_not_allowed",
        "state",
    ),
    (
        "ticket assign: an assignee who is no member",
        _nobody_is_a_member(lambda w: tickets.assign_ticket(w.org, w.ticket, "mem_x", None)),
        "member_unknown",
        "assignee_member_id",
    ),
    (
        "ticket type create: an empty name",
        lambda w: tickets.create_named(w.org, "ticket-types", NamedDraft("")),
        "value_too_short",
        "name",
    ),
    (
        "task create: a deleted deal",
        lambda w: tasks.create_task(w.org, TaskDraft("Llamar", deal_id=w.deleted_deal)),
        "deal_not_found",
        "deal_id",
    ),
    (
        "task create: an unknown ticket",
        lambda w: tasks.create_task(w.org, TaskDraft("Llamar", ticket_id=UNKNOWN)),
        "ticket_not_found",
        "ticket_id",
    ),
    (
        "task update: a status that does not exist",
        lambda w: tasks.update_task(w.org, w.task, TaskChanges(status="done")),
        "value_not_allowed",
        "status",
    ),
    (
        "contact create: a phone that is no phone",
        lambda w: contacts.create_contact(
            w.org, ContactDraft("Ana", identities=(IdentityDraft("phone", "12"),))
        ),
        "identity_invalid",
        "identities.0.value",
    ),
    (
        "contact create: a phone another contact has",
        lambda w: contacts.create_contact(
            w.org,
            ContactDraft(
                "Ana",
                identities=(
                    IdentityDraft("email", "ana@example.com"),
                    IdentityDraft("phone", "+525577770001"),
                ),
            ),
        ),
        "identity_taken",
        "identities.1.value",
    ),
    (
        "contact update: an empty name",
        lambda w: contacts.update_contact(w.org, w.contact, ContactChanges(name="")),
        "value_too_short",
        "name",
    ),
    (
        "contact merge: into itself",
        lambda w: contacts.merge_contacts(w.org, w.contact, w.contact),
        "merge_into_itself",
        "source_contact_id",
    ),
    (
        "account create: a domain too long",
        lambda w: contacts.create_account(w.org, AccountDraft("Acme", domain="a" * 256)),
        "value_too_long",
        "domain",
    ),
    (
        "pipeline create: a key of digits",
        lambda w: pipelines.create_pipeline(w.org, PipelineDraft("Ventas", "123")),
        "pipeline_key_malformed",
        "key",
    ),
    (
        "pipeline create: a key taken",
        lambda w: pipelines.create_pipeline(w.org, PipelineDraft("Ventas", "ren")),
        "pipeline_key_taken",
        "key",
    ),
    (
        "pipeline update: no default left",
        lambda w: pipelines.update_pipeline(w.org, w.pipeline, PipelineChanges(is_default=False)),
        "pipeline_default_required",
        "is_default",
    ),
    (
        "pipeline update: a new key while it has deals",
        lambda w: pipelines.update_pipeline(w.org, w.pipeline, PipelineChanges(key="NEW")),
        "pipeline_key_locked",
        "key",
    ),
    (
        "stage create: a probability over 100",
        lambda w: pipelines.create_stage(w.org, w.pipeline, StageDraft("Late", 0, probability=101)),
        "value_out_of_range",
        "probability",
    ),
    (
        "stage update: rotting after 0 days",
        lambda w: pipelines.update_stage(w.org, w.stage, StageChanges(rotting_days=0)),
        "value_out_of_range",
        "rotting_days",
    ),
    (
        "stage delete: moving the deals to another pipeline's stage",
        lambda w: deals.delete_stage(w.org, w.stage, w.other_stage),
        "stage_move_target_invalid",
        "move_to_stage_id",
    ),
    (
        "stage delete: deals left in it",
        lambda w: deals.delete_stage(w.org, w.stage, None),
        "stage_has_deals",
        "move_to_stage_id",
    ),
    (
        "exchange rate: one currency twice",
        lambda w: pipelines.upsert_rate(w.org, "usd", "USD", Decimal(1)),
        "rate_same_currency",
        "to_currency",
    ),
    (
        "product create: a page that is no web address",
        lambda w: products.create_product(w.org, ProductDraft("Seat", Decimal(1), url="ftp://x")),
        "url_malformed",
        "url",
    ),
    (
        "product update: a name cleared",
        lambda w: products.update_product(w.org, w.product, ProductChanges(name=None)),
        "value_null",
        "name",
    ),
]


@pytest.mark.parametrize(("call", "code", "param"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_verb_refuses_with_a_code_and_the_field(
    app: Flask, world: World, call: Callable[[World], Any], code: str, param: str | None
) -> None:
    with pytest.raises(Refusal) as refused:
        call(world)
    db.session.rollback()
    assert (refused.value.code, refused.value.param) == (code, param), refused.value.message
    assert code in MESSAGES


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda w: deals.get_deal(w.org, UNKNOWN), "deal_not_found"),
        (lambda w: tickets.get_ticket_by_reference(w.org, "TCK-999"), "ticket_not_found"),
        (lambda w: deals.delete_line_item(w.org, w.deal, UNKNOWN), "line_item_not_found"),
        (lambda w: pipelines.delete_rate(w.org, "EUR", "MXN"), "exchange_rate_not_found"),
    ],
)
def test_a_record_that_is_not_there_is_coded_without_a_field(
    app: Flask, world: World, call: Callable[[World], Any], code: str
) -> None:
    """The record a path names is not a field: the refusal has its code and no ``param``."""
    with pytest.raises(Refusal) as refused:
        call(world)
    assert (refused.value.status, refused.value.code, refused.value.param) == (404, code, None)


def test_a_draft_from_a_form_is_refused_before_the_verb_runs() -> None:
    """``parse`` reads wire-named values (text from a form) by the same rules; a missing required field and a
    value that is no number are refused with codes too."""
    with pytest.raises(Refusal) as missing:
        parse(TicketDraft, {"title": "Factura"})
    assert (missing.value.code, missing.value.param) == ("value_required", "source")
    with pytest.raises(Refusal) as no_number:
        parse(LineItemDraft, {"name": "Seat", "quantity": "mucho", "unit_price": "1"})
    assert (no_number.value.code, no_number.value.param) == ("value_not_a_number", "quantity")
    changes = parse(DealChanges, {"owner_id": None, "currency": " usd "})
    assert (changes.owner_id, changes.currency, changes.amount) == (None, "USD", UNSET)


def _codes_in_the_source() -> set[str]:
    """Every code a CRM module raises: written ``code="..."``, made by ``missing("<Resource>")``, raised by
    a rule (``rules.RULE_CODES``) or translated from pydantic's error types (``rules.code_of``)."""
    found: set[str] = set(RULE_CODES)
    for path in (ROOT / "blueprints" / "crm").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r'\bcode="([a-z_]+)"', text))
        found.update(
            f"{resource.lower().replace(' ', '_')}_not_found"
            for resource in re.findall(r'\bmissing\("([A-Za-z ]+)"', text)
        )
        found.update(
            f"{resource.lower().replace(' ', '_')}_not_found"
            for resource in re.findall(r'\bget_ref\([^)]*?"([A-Z][A-Za-z ]+)"', text)
        )
    pydantic_types = [
        *("missing", "string_too_short", "string_too_long", "too_short", "too_long", "literal_error"),
        *("greater_than", "less_than_equal", "string_pattern_mismatch", "string_type", "bool_parsing"),
        *("uuid_parsing", "list_type", "dataclass_type", "int_parsing", "decimal_parsing"),
        *("date_from_datetime_parsing", "datetime_parsing", "something_new"),
    ]
    found.update(code_of(kind) for kind in pydantic_types)
    found.update({"value_unstorable", "value_out_of_range"})  # the edge rules every input passes
    return found


def test_every_code_has_words_for_the_pages() -> None:
    codes = _codes_in_the_source()
    assert {"stage_other_pipeline", "deal_not_found", "currency_unknown", "value_invalid"} <= codes
    assert sorted(codes - set(MESSAGES)) == []
