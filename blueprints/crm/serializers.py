"""Rows -> wire dicts. Every function reads only relations its caller loaded (relations are lazy="raise",
so a missing eager load fails loudly in tests instead of issuing a query per row)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from blueprints.crm.models import (
    CrmAccount,
    CrmContact,
    CrmProject,
    CrmTask,
    Deal,
    DealActivity,
    DealConversation,
    DealLineItem,
    ExchangeRate,
    Pipeline,
    Stage,
    Ticket,
    TicketStateChange,
    TicketType,
)
from blueprints.crm.money import decimal_str, money_str, number_out, price_str
from core.db import isoformat, utcnow


def _id(value: uuid.UUID | None) -> str | None:
    return str(value) if value is not None else None


def stage_out(stage: Stage) -> dict[str, Any]:
    return {
        "id": str(stage.id),
        "pipeline_id": str(stage.pipeline_id),
        "name": stage.name,
        "stage_order": stage.stage_order,
        "probability": stage.probability,
        "status": stage.status,
        "rotting_days": stage.rotting_days,
    }


def pipeline_out(pipeline: Pipeline) -> dict[str, Any]:
    return {
        "id": str(pipeline.id),
        "name": pipeline.name,
        "key": pipeline.key,
        "is_default": pipeline.is_default,
        "deal_counter": pipeline.deal_counter,
        "stages": [stage_out(s) for s in pipeline.stages],
        "created_at": isoformat(pipeline.created_at),
        "updated_at": isoformat(pipeline.updated_at),
    }


def rate_out(rate: ExchangeRate) -> dict[str, Any]:
    return {
        "from_currency": rate.from_currency,
        "to_currency": rate.to_currency,
        "rate": decimal_str(rate.rate),
        "updated_at": isoformat(rate.updated_at),
    }


def line_item_out(item: DealLineItem) -> dict[str, Any]:
    return {
        "id": str(item.id),
        "deal_id": str(item.deal_id),
        "product_id": _id(item.product_id),
        "name": item.name,
        "quantity": number_out(item.quantity),
        "unit_price": price_str(item.unit_price, item.currency),
        "discount": money_str(item.discount, item.currency),
        "total": money_str(item.total, item.currency),
        "currency": item.currency,
        "sku": item.sku,
        "notes": item.notes,
        "created_at": isoformat(item.created_at),
        "updated_at": isoformat(item.updated_at),
    }


def deal_conversation_out(link: DealConversation) -> dict[str, Any]:
    return {
        "id": str(link.id),
        "deal_id": str(link.deal_id),
        "conversation_id": link.conversation_id,
        "channel": link.channel,
        "linked_by": _id(link.linked_by),
        "summary": link.summary,
        "created_at": isoformat(link.created_at),
    }


def is_rotting(deal: Deal) -> bool:
    days = deal.stage.rotting_days
    return bool(days and deal.status == "open" and utcnow() - deal.stage_entered_at > timedelta(days=days))


def deal_out(deal: Deal) -> dict[str, Any]:
    return {
        "id": str(deal.id),
        "organization_id": str(deal.organization_id),
        "number": deal.number,
        "reference": deal.reference,
        "name": deal.name,
        "amount": money_str(deal.amount, deal.currency),
        "currency": deal.currency,
        "status": deal.status,
        "pipeline_id": str(deal.pipeline_id),
        "stage_id": str(deal.stage_id),
        "owner_id": _id(deal.owner_id),
        "account_id": _id(deal.account_id),
        "expected_close_date": isoformat(deal.expected_close_date),
        "stage_entered_at": isoformat(deal.stage_entered_at),
        "closed_at": isoformat(deal.closed_at),
        "is_rotting": is_rotting(deal),
        "created_at": isoformat(deal.created_at),
        "updated_at": isoformat(deal.updated_at),
        "pipeline": {"id": str(deal.pipeline.id), "name": deal.pipeline.name, "key": deal.pipeline.key},
        "stage": {
            "id": str(deal.stage.id),
            "name": deal.stage.name,
            "stage_order": deal.stage.stage_order,
            "probability": deal.stage.probability,
            "status": deal.stage.status,
        },
        "contacts": [
            {"contact_id": str(c.contact_id), "role": c.role, "is_primary": c.is_primary}
            for c in deal.contacts
        ],
        "conversations": [deal_conversation_out(c) for c in deal.conversations],
        "line_items": [line_item_out(i) for i in deal.line_items],
    }


def activity_out(activity: DealActivity) -> dict[str, Any]:
    return {
        "id": str(activity.id),
        "deal_id": str(activity.deal_id),
        "type": activity.type,
        "data": activity.data or {},
        "summary": activity.summary,
        "actor": activity.actor,
        "created_at": isoformat(activity.created_at),
    }


def ticket_out(ticket: Ticket) -> dict[str, Any]:
    return {
        "id": str(ticket.id),
        "number": ticket.number,
        "reference": ticket.reference,
        "title": ticket.title,
        "state": ticket.state,
        "priority": ticket.priority,
        "source": ticket.source,
        "body_html": ticket.body_html,
        "requester_id": _id(ticket.requester_id),
        "assignee_member_id": _id(ticket.assignee_member_id),
        "assigned_by": _id(ticket.assigned_by),
        "assigned_at": isoformat(ticket.assigned_at),
        "account_id": _id(ticket.account_id),
        "project_id": _id(ticket.project_id),
        "ticket_type_id": _id(ticket.ticket_type_id),
        "channel": ticket.channel,
        "conversation_ids": [c.conversation_id for c in ticket.conversations],
        "closed_at": isoformat(ticket.closed_at),
        "created_at": isoformat(ticket.created_at),
        "updated_at": isoformat(ticket.updated_at),
    }


def state_change_out(change: TicketStateChange) -> dict[str, Any]:
    return {
        "from_state": change.from_state,
        "to_state": change.to_state,
        "changed_by": change.changed_by,
        "changed_at": isoformat(change.changed_at),
    }


def named_out(item: CrmProject | TicketType) -> dict[str, Any]:
    return {
        "id": str(item.id),
        "name": item.name,
        "description": item.description,
        "created_at": isoformat(item.created_at),
        "updated_at": isoformat(item.updated_at),
    }


def task_out(task: CrmTask) -> dict[str, Any]:
    deal, ticket, contact, account = task.deal, task.ticket, task.contact, task.account
    return {
        "id": str(task.id),
        "organization_id": str(task.organization_id),
        "title": task.title,
        "type": task.type,
        "status": task.status,
        "priority": task.priority,
        "due_date": isoformat(task.due_date),
        "owner_id": _id(task.owner_id),
        "deal_id": _id(task.deal_id),
        "ticket_id": _id(task.ticket_id),
        "contact_id": _id(task.contact_id),
        "account_id": _id(task.account_id),
        "notes": task.notes,
        "completed_at": isoformat(task.completed_at),
        "created_at": isoformat(task.created_at),
        "updated_at": isoformat(task.updated_at),
        "deal": {"id": str(deal.id), "name": deal.name, "reference": deal.reference} if deal else None,
        "ticket": (
            {"id": str(ticket.id), "title": ticket.title, "reference": ticket.reference} if ticket else None
        ),
        "contact": {"id": str(contact.id), "name": contact.name} if contact else None,
        "account": {"id": str(account.id), "name": account.name} if account else None,
    }


def contact_out(contact: CrmContact) -> dict[str, Any]:
    return {
        "id": str(contact.id),
        "name": contact.name,
        "job_title": contact.job_title,
        "notes": contact.notes,
        "identities": [
            {"id": str(i.id), "kind": i.kind, "value": i.value, "created_at": isoformat(i.created_at)}
            for i in contact.identities
        ],
        "accounts": [
            {"id": str(link.account.id), "name": link.account.name, "role": link.role}
            for link in contact.account_links
        ],
        "created_at": isoformat(contact.created_at),
        "updated_at": isoformat(contact.updated_at),
    }


def account_out(account: CrmAccount) -> dict[str, Any]:
    return {
        "id": str(account.id),
        "name": account.name,
        "domain": account.domain,
        "industry": account.industry,
        "phone": account.phone,
        "notes": account.notes,
        "contacts": [
            {"id": str(link.contact.id), "name": link.contact.name, "role": link.role}
            for link in account.contact_links
        ],
        "created_at": isoformat(account.created_at),
        "updated_at": isoformat(account.updated_at),
    }
