"""The agents' tools: their JSON schemas (what the model is offered) and what each does.

Only the tools enabled in the agent's configuration (``tools.<name>.enabled``) are offered; a call of a
tool that is not enabled, with arguments that are not valid, or failing on a rule (an unknown product, a
date in the past) is answered to the model as ``{"error": "..."}``, so it can correct itself; it never
fails the run. In a playground test (``dry_run``) a tool that would change something describes what it
would do instead and writes nothing.
"""

from __future__ import annotations

import html
import mimetypes
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from sqlalchemy import select

from blueprints.ai import handoff, knowledge
from blueprints.channels.providers import MediaRef
from blueprints.crm.drafts import TaskDraft, TicketDraft
from blueprints.crm.models import Deal, DealConversation
from blueprints.crm.services import products
from blueprints.crm.services.links import contact_id_for_phone, existing_contact_ids
from blueprints.crm.services.tasks import create_task
from blueprints.crm.services.tickets import create_ticket
from blueprints.members.agent_config import TOOL_NAMES  # the tools a configuration may enable, in order
from blueprints.messaging.models import Contact, Conversation, Message
from blueprints.messaging.sending import Content
from blueprints.organizations.services import get_organization
from core.db import db, utcnow
from core.errors import ApiError


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class TransferArguments(_Arguments):
    note: str = Field(min_length=1, max_length=2000, description="Hand-off note for the person taking over")
    rule: str | None = Field(
        None, max_length=120, description="Name of the transfer rule whose condition holds"
    )


class SearchArguments(_Arguments):
    query: str = Field(min_length=1, max_length=500, description="What to look up")


class ProductArguments(_Arguments):
    product_id: str | None = Field(None, max_length=64, description="The product's id, when known")
    query: str | None = Field(None, max_length=200, description="Words of the product's name or SKU")

    @model_validator(mode="after")
    def _one(self) -> ProductArguments:
        if not self.product_id and not self.query:
            raise ValueError("give product_id or query")
        return self


class TicketArguments(_Arguments):
    title: str = Field(min_length=1, max_length=500, description="Short summary of the problem")
    description: str | None = Field(None, max_length=5000, description="What the customer reported")
    priority: Literal["urgent", "high", "normal", "low"] = "normal"


class MeetingArguments(_Arguments):
    title: str = Field(min_length=1, max_length=500, description="What the meeting is about")
    due_date: str = Field(description="Date and time, ISO 8601 (e.g. 2026-12-01T16:00:00-06:00)")
    notes: str | None = Field(None, max_length=5000)

    @field_validator("due_date")
    @classmethod
    def _iso(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"not an ISO 8601 date and time: {value!r}") from exc
        return value


ARGUMENTS: dict[str, type[_Arguments]] = {
    "transfer_to_human": TransferArguments,
    "search_knowledge": SearchArguments,
    "send_product": ProductArguments,
    "create_ticket": TicketArguments,
    "schedule_meeting": MeetingArguments,
}
DESCRIPTIONS = {
    "transfer_to_human": "Hand the conversation to a human agent, with a note for them.",
    "search_knowledge": "Search the organization's knowledge base; returns the best matching passages.",
    "send_product": "Send a product of the catalogue (name, price, link, picture) to the customer.",
    "create_ticket": "Open a support ticket linked to this conversation.",
    "schedule_meeting": "Schedule a meeting with the customer (a CRM task of type meeting).",
}


def _schema(model: type[_Arguments]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        # "anyOf [string, null]" is noise for a model: an optional argument is simply left out
        if "anyOf" in prop:
            kinds = [k for k in prop.pop("anyOf") if k.get("type") != "null"]
            prop.update(kinds[0] if kinds else {"type": "string"})
            prop.pop("default", None)
    schema["additionalProperties"] = False
    return schema


def enabled_tools(tools_config: dict[str, Any]) -> list[str]:
    """Enabled tool names, in the fixed order of :data:`TOOL_NAMES`."""
    return [
        name
        for name in TOOL_NAMES
        if isinstance(tools_config.get(name), dict) and tools_config[name].get("enabled") is True
    ]


def definitions(names: list[str], call_transfers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI ``tools`` for the enabled tools (``transfer_to_human``'s ``rule`` lists the rule names)."""
    result = []
    for name in names:
        schema = _schema(ARGUMENTS[name])
        if name == "transfer_to_human":
            rules = [str(rule.get("name")) for rule in call_transfers if rule.get("name")]
            if rules:
                schema["properties"]["rule"]["enum"] = rules
            else:
                schema["properties"].pop("rule", None)
        result.append(
            {
                "type": "function",
                "function": {"name": name, "description": DESCRIPTIONS[name], "parameters": schema},
            }
        )
    return result


@dataclass
class ToolContext:
    organization_id: uuid.UUID
    agent_id: str
    sections: dict[str, Any]
    call_transfers: list[dict[str, Any]]
    enabled: list[str]
    conversation: Conversation | None
    dry_run: bool
    # Sends one message to the customer (the runtime's: inside the window, by the agent); None in a test.
    send: Callable[[Content], Message | None] | None = None
    handed_off: handoff.HandOff | None = None
    sent: list[Message] = field(default_factory=list)
    # A channel with a hand-off of its own (a voice call ends with hand-off data instead of reassigning a
    # conversation): given the rule (or None) and the note, it returns that data; ``transfer`` keeps it.
    on_transfer: Callable[[dict[str, Any] | None, str], dict[str, Any]] | None = None
    transfer: dict[str, Any] | None = None

    @property
    def actor(self) -> str:
        return f"ai:{self.agent_id}"


def execute(
    context: ToolContext, name: str, arguments: dict[str, Any], invalid: str | None = None
) -> dict[str, Any]:
    """Run one tool call; the result (a JSON object) goes back to the model as the tool's message."""
    if name not in context.enabled:
        return {"error": f"the tool {name!r} is not available"}
    if invalid is not None:
        return {"error": "the arguments must be a JSON object"}
    try:
        parsed = ARGUMENTS[name].model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
            for error in exc.errors()
        )
        return {"error": f"invalid arguments: {problems}"}
    try:
        return _RUNNERS[name](context, parsed)
    except ApiError as exc:
        return {"error": exc.message}


# ------------------------------------------------------------------------------------------------ tools


def _transfer(context: ToolContext, args: Any) -> dict[str, Any]:
    rule = (
        next((r for r in context.call_transfers if r.get("name") == args.rule), None) if args.rule else None
    )
    if args.rule and rule is None:
        return {"error": f"no transfer rule named {args.rule!r}"}
    if context.on_transfer is not None and not context.dry_run:
        if context.transfer is None:
            context.transfer = context.on_transfer(rule, args.note)
        return {"transferred": True, **context.transfer}
    if context.dry_run or context.conversation is None:
        target = rule.get("target") if rule else "the address's routing (team or unassigned queue)"
        return {"dry_run": True, "would_transfer_to": target, "note": args.note}
    if context.handed_off is not None:
        return {"transferred": True, "already": True}
    context.handed_off = handoff.hand_off(
        context.conversation, context.agent_id, args.note, rule=rule, reason="transfer_to_human"
    )
    return {"transferred": True, **context.handed_off.as_dict()}


def _search(context: ToolContext, args: Any) -> dict[str, Any]:
    section = (
        context.sections.get("knowledge") if isinstance(context.sections.get("knowledge"), str) else None
    )
    hits = knowledge.search(context.organization_id, args.query, agent_id=context.agent_id, section=section)
    if not hits:
        return {"results": [], "message": "nothing in the knowledge base matches"}
    return {"results": [hit.as_dict() for hit in hits]}


def format_price(price: Decimal, currency: str) -> str:
    return f"{currency} {price:,.2f}"


def _product_message(product: Any) -> tuple[str, str | None]:
    lines = [f"{product.name} — {format_price(product.price, product.currency)}"]
    if product.description:
        lines.append(product.description)
    if product.url:
        lines.append(product.url)
    return "\n".join(lines), product.image_url


def _find_product(organization_id: uuid.UUID, args: ProductArguments) -> Any:
    if args.product_id:
        try:
            product = products.get_product(organization_id, uuid.UUID(args.product_id))
        except ValueError:
            raise ApiError(404, f"no product with id {args.product_id!r}") from None
        except ApiError:
            raise ApiError(404, f"no product with id {args.product_id!r}") from None
        return product if product.active else None
    found = [p for p in products.search_products(organization_id, args.query or "", limit=5) if p.active]
    return found[0] if found else None


def _send_product(context: ToolContext, args: Any) -> dict[str, Any]:
    product = _find_product(context.organization_id, args)
    if product is None:
        return {"error": "no active product matches"}
    text, image = _product_message(product)
    described = {
        "product_id": str(product.id),
        "name": product.name,
        "price": str(product.price),
        "currency": product.currency,
        "url": product.url,
    }
    if context.dry_run or context.send is None:
        return {"dry_run": True, "would_send": {**described, "text": text, "image_url": image}}
    service = context.conversation.service if context.conversation else "whatsapp"
    if image and service == "whatsapp":
        mime = mimetypes.guess_type(image)[0] or "image/jpeg"
        content = Content(kind="image", text=text, media=_media(image, mime))
    else:
        content = Content(kind="text", text=text)
    message = context.send(content)
    if message is None:
        return {"error": "the message could not be sent"}
    context.sent.append(message)
    return {"sent": True, **described, "message_id": str(message.id)}


def _media(uri: str, mime: str) -> Any:
    return MediaRef(uri=uri, mime_type=mime)


def _crm_contact_id(conversation: Conversation) -> str | None:
    # Read here rather than through the relationship: a send earlier in the run committed and expired it.
    crm_contact_id = db.session.scalar(
        select(Contact.crm_contact_id).where(Contact.id == conversation.contact_id)
    )
    if crm_contact_id and existing_contact_ids(conversation.organization_id, [crm_contact_id]):
        return crm_contact_id
    if conversation.service == "whatsapp":
        return contact_id_for_phone(conversation.organization_id, conversation.contact_address)
    return None


def _linked_deal_id(conversation: Conversation) -> uuid.UUID | None:
    """The newest live deal this conversation is linked to (CRM ``deal conversations``)."""
    return db.session.scalar(
        select(Deal.id)
        .join(DealConversation, DealConversation.deal_id == Deal.id)
        .where(
            DealConversation.organization_id == conversation.organization_id,
            DealConversation.conversation_id == str(conversation.id),
            Deal.deleted_at.is_(None),
        )
        .order_by(Deal.created_at.desc())
        .limit(1)
    )


TICKET_CHANNELS = ("whatsapp", "messenger")


def _create_ticket(context: ToolContext, args: Any) -> dict[str, Any]:
    if context.dry_run or context.conversation is None:
        return {"dry_run": True, "would_create_ticket": {"title": args.title, "priority": args.priority}}

    conversation = context.conversation
    body = f"<p>{html.escape(args.description)}</p>" if args.description else None
    ticket = create_ticket(
        context.organization_id,
        TicketDraft(
            title=args.title,
            source="automation",
            priority=args.priority,
            body_html=body,
            requester_id=uuid.UUID(requester) if (requester := _crm_contact_id(conversation)) else None,
            channel=conversation.service if conversation.service in TICKET_CHANNELS else None,
            conversation_ids=(str(conversation.id),),
        ),
        actor=context.actor,
    )
    return {"ticket_id": str(ticket.id), "reference": ticket.reference, "state": ticket.state}


def _due(organization_id: uuid.UUID, value: str) -> datetime:
    """ISO 8601; without an offset the time is the organization's local time."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        organization = get_organization(organization_id)
        moment = moment.replace(tzinfo=ZoneInfo(getattr(organization, "timezone", None) or "UTC"))
    return moment.astimezone(ZoneInfo("UTC"))


def _schedule(context: ToolContext, args: Any) -> dict[str, Any]:
    due = _due(context.organization_id, args.due_date)
    if due <= utcnow():
        return {"error": "due_date is in the past"}
    if context.dry_run or context.conversation is None:
        return {"dry_run": True, "would_schedule": {"title": args.title, "due_date": due.isoformat()}}

    conversation = context.conversation
    contact_id = _crm_contact_id(conversation)
    deal_id = _linked_deal_id(conversation)
    notes = "\n".join(
        part
        for part in (args.notes, f"Scheduled by AI agent {context.agent_id} (conversation {conversation.id})")
        if part
    )
    task = create_task(
        context.organization_id,
        TaskDraft(
            title=args.title,
            type="meeting",
            due_date=due,
            contact_id=uuid.UUID(contact_id) if contact_id else None,
            deal_id=deal_id,
            notes=notes,
        ),
    )
    return {
        "task_id": str(task.id),
        "due_date": due.isoformat(),
        "contact_id": contact_id,
        "deal_id": str(deal_id) if deal_id else None,
    }


_RUNNERS: dict[str, Callable[[ToolContext, Any], dict[str, Any]]] = {
    "transfer_to_human": _transfer,
    "search_knowledge": _search,
    "send_product": _send_product,
    "create_ticket": _create_ticket,
    "schedule_meeting": _schedule,
}
