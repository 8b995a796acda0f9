"""The CRM's desk fragments: what the CRM knows about the person of an open conversation, shown in the
inbox's side panel, with "new ticket" and "new deal" forms that link the conversation to what they create.

``GET /crm/conversation/<id>/records`` is the whole section (lists and forms; the inbox panel loads it);
``GET /crm/conversation/<id>/records/lists`` only the lists, which refresh themselves when a CRM event
(``deal.updated``, ``ticket.updated``) reaches the page, so a form being filled in is never replaced.
The forms post to ``/crm/conversation/<id>/tickets`` and ``/deals``: a refused field answers 422 with the
form and the field's message, a success the refreshed lists, a fresh form and a success alert.

Every read and write goes through the CRM services (the same functions as the JSON API) and the
messaging area's ``get_conversation``; nothing here knows a rule or writes SQL.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any

from flask import Blueprint, Response, make_response, render_template, request
from flask_babel import format_currency, format_date, format_time
from flask_babel import gettext as _
from markupsafe import escape
from pydantic import BaseModel, Field, ValidationError, field_validator

from blueprints.crm.models import CrmTask, Deal, Pipeline
from blueprints.crm.money import CURRENCIES
from blueprints.crm.schemas import MAX_MONEY, Currency, TicketPriority
from blueprints.crm.services import deals as deal_service
from blueprints.crm.services import pipelines as pipeline_service
from blueprints.crm.services import tickets as ticket_service
from blueprints.crm.services.records import ConversationRecords, conversation_records, crm_contact
from blueprints.desk.fragments import conversation_for_page as _conversation
from blueprints.desk.security import DeskUser, protect_pages, signed_in
from blueprints.members.services.members import members_by_ids
from blueprints.messaging.models import Conversation
from core import uow
from core.auth import actor as make_actor
from core.db import utcnow
from core.errors import ApiError
from core.timeutil import as_utc

pages = Blueprint("crm_pages", __name__, url_prefix="/crm")
protect_pages(pages)

PRIORITIES: tuple[str, ...] = ("urgent", "high", "normal", "low")
# The ticket channels the CRM accepts (an Instagram conversation is linked without a channel).
TICKET_CHANNELS = ("whatsapp", "messenger")


# ---- forms ---------------------------------------------------------------------------------------------


class TicketForm(BaseModel):
    """The "new ticket" form as posted (text fields, trimmed)."""

    subject: Annotated[str, Field(min_length=1, max_length=500)]
    description: Annotated[str, Field(max_length=20_000)] = ""
    priority: TicketPriority = "normal"

    _trim = field_validator("subject", "description", mode="before")(
        classmethod(lambda cls, v: v.strip() if isinstance(v, str) else v)
    )


class DealForm(BaseModel):
    """The "new deal" form as posted. ``stage`` is ``<pipeline id>:<stage id>`` (one select, grouped by
    pipeline); ``amount`` comes from a number input, so it is always written with a dot."""

    title: Annotated[str, Field(min_length=1, max_length=500)]
    amount: Annotated[Decimal, Field(ge=0, le=MAX_MONEY, allow_inf_nan=False)] = Decimal(0)
    currency: Currency
    stage: tuple[uuid.UUID, uuid.UUID]

    _trim = field_validator("title", mode="before")(
        classmethod(lambda cls, v: v.strip() if isinstance(v, str) else v)
    )

    @field_validator("amount", mode="before")
    @classmethod
    def _blank_is_zero(cls, value: Any) -> Any:
        return "0" if isinstance(value, str) and not value.strip() else value

    @field_validator("currency", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("stage", mode="before")
    @classmethod
    def _pair(cls, value: Any) -> Any:
        if isinstance(value, str) and value.count(":") == 1:
            return tuple(value.split(":"))
        raise ValueError("expected <pipeline id>:<stage id>")


def _field_messages() -> dict[str, str]:
    """What the agent reads under a refused field (the desk's words, in the page's language)."""
    required = _("Fill in this field (up to 500 characters).")
    choose = _("Choose an option from the list.")
    return {
        "subject": required,
        "description": _("Too long: up to 20,000 characters."),
        "priority": choose,
        "title": required,
        "amount": _("Write an amount of 0 or more, such as 1500.00."),
        "currency": choose,
        "stage": choose,
    }


def _errors(error: ValidationError) -> dict[str, str]:
    messages = _field_messages()
    found: dict[str, str] = {}
    for problem in error.errors():
        name = str(problem["loc"][0]) if problem["loc"] else ""
        if name in messages:
            found.setdefault(name, messages[name])
    return found


# A service's refusal that names a field of a form is shown under that field; any other is an alert.
_SERVICE_FIELDS = {
    "name": "title",
    "title": "subject",
    "amount": "amount",
    "currency": "currency",
    "pipeline_id": "stage",
    "stage_id": "stage",
    "priority": "priority",
}
_SERVICE_MISSING = {"No Pipeline found": "stage", "No Stage found": "stage"}


def _service_field(error: ApiError, form_fields: set[str]) -> str | None:
    name = _SERVICE_FIELDS.get(error.param or "") or _SERVICE_MISSING.get(error.message or "")
    return name if name in form_fields else None


@dataclass
class FormState:
    values: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


# ---- the view ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageChoice:
    value: str  # <pipeline id>:<stage id>
    name: str


@dataclass(frozen=True)
class PipelineChoice:
    name: str
    stages: list[StageChoice]


@dataclass
class RecordsView:
    conversation: Conversation
    records: ConversationRecords
    owners: dict[str, str]


@dataclass
class FormsView:
    conversation: Conversation
    pipelines: list[PipelineChoice]
    currencies: tuple[str, ...]
    ticket: FormState
    deal: FormState


def _records(me: DeskUser, conversation: Conversation) -> RecordsView:
    records = conversation_records(
        me.organization_id, str(conversation.id), conversation.contact.crm_contact_id
    )
    owner_ids = [deal.owner_id for deal in records.deals.items if deal.owner_id]
    owners = {key: member.name for key, member in members_by_ids(me.organization_id, owner_ids).items()}
    return RecordsView(conversation, records, owners)


def _choices(pipelines: list[Pipeline]) -> tuple[list[PipelineChoice], str]:
    """The stages to start a deal in, grouped by pipeline, and the default: the default pipeline's first
    open stage."""
    choices = [
        PipelineChoice(
            pipeline.name,
            [StageChoice(f"{pipeline.id}:{stage.id}", stage.name) for stage in pipeline.stages],
        )
        for pipeline in pipelines
    ]
    default = next((p for p in pipelines if p.is_default), pipelines[0] if pipelines else None)
    first = (
        next((s for s in default.stages if s.status == "open"), default.stages[0] if default.stages else None)
        if default
        else None
    )
    return choices, f"{default.id}:{first.id}" if default and first else ""


def _forms(
    me: DeskUser,
    conversation: Conversation,
    ticket: FormState | None = None,
    deal: FormState | None = None,
) -> FormsView:
    choices, default_stage = _choices(pipeline_service.list_pipelines(me.organization_id))
    base_currency = pipeline_service.get_settings(me.organization_id).base_currency
    deal = deal or FormState()
    deal.values.setdefault("currency", base_currency)
    deal.values.setdefault("stage", default_stage)
    ticket = ticket or FormState()
    ticket.values.setdefault("priority", "normal")
    return FormsView(conversation, choices, CURRENCIES, ticket, deal)


def _render(template: str, **context: Any) -> str:
    return render_template(template, labels=_labels(), **context)


def _no_store(response: Response) -> Response:
    # live fragments: a cached copy would show records that changed
    response.headers["Cache-Control"] = "no-store"
    return response


@pages.get("/conversation/<conversation_id>/records")
def conversation_records_section(conversation_id: str) -> Response:
    """The whole section: the lists and the two forms (what the inbox panel loads)."""
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    html = _render("crm/_section.html", view=_records(me, conversation), forms=_forms(me, conversation))
    return _no_store(make_response(html))


@pages.get("/conversation/<conversation_id>/records/lists")
def conversation_records_lists(conversation_id: str) -> Response:
    """Only the lists (a live refresh after a CRM event)."""
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    return _no_store(make_response(_render("crm/_lists.html", view=_records(me, conversation))))


# ---- creating from the conversation ---------------------------------------------------------------------


def _actor(me: DeskUser) -> str:
    return make_actor("user", str(me.user_id))


def _created(me: DeskUser, conversation: Conversation, form: str, message: str) -> Response:
    """The refreshed lists, the form emptied (out of band) and a success alert (out of band)."""
    forms = _forms(me, conversation)
    html = _render(
        "crm/_created.html",
        view=_records(me, conversation),
        forms=forms,
        form=form,
        message=message,
    )
    return _no_store(make_response(html))


def _refused_form(me: DeskUser, conversation: Conversation, form: str, state: FormState) -> Response:
    """422 with the form as it was sent and a message under each refused field (nothing is kept)."""
    uow.rollback()
    forms = _forms(me, conversation, **{form: state})
    response = make_response(_render(f"crm/_{form}_form.html", forms=forms, open=True), 422)
    response.headers["HX-Retarget"] = f"#crm-new-{form}"
    response.headers["HX-Reswap"] = "outerHTML"
    return _no_store(response)


def _description_html(text: str) -> str | None:
    """The plain text the agent typed, as the ticket's HTML body: escaped, one line break per line."""
    if not text:
        return None
    return "<p>" + str(escape(text)).replace("\r\n", "\n").replace("\n", "<br>") + "</p>"


@pages.post("/conversation/<conversation_id>/tickets")
def create_ticket(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    values = {name: request.form.get(name, "") for name in ("subject", "description", "priority")}
    try:
        form = TicketForm.model_validate(values)
    except ValidationError as error:
        return _refused_form(me, conversation, "ticket", FormState(values, _errors(error)))
    contact_id = _crm_contact_id(me, conversation)
    try:
        ticket = ticket_service.create_ticket(
            me.organization_id,
            {
                "title": form.subject,
                "source": "channel",
                "priority": form.priority,
                "body_html": _description_html(form.description),
                "requester_id": contact_id,
                "channel": conversation.service if conversation.service in TICKET_CHANNELS else None,
                "conversation_ids": [str(conversation.id)],
            },
            actor=_actor(me),
        )
    except ApiError as error:
        name = _service_field(error, {"subject", "description", "priority"})
        if name is None:
            raise
        return _refused_form(me, conversation, "ticket", FormState(values, {name: _field_messages()[name]}))
    return _created(
        me,
        conversation,
        "ticket",
        _("Ticket %(reference)s created and linked to this conversation.", reference=ticket.reference),
    )


@pages.post("/conversation/<conversation_id>/deals")
def create_deal(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    values = {name: request.form.get(name, "") for name in ("title", "amount", "currency", "stage")}
    try:
        form = DealForm.model_validate(values)
    except ValidationError as error:
        return _refused_form(me, conversation, "deal", FormState(values, _errors(error)))
    contact_id = _crm_contact_id(me, conversation)
    pipeline_id, stage_id = form.stage
    try:
        deal = deal_service.create_deal(
            me.organization_id,
            {
                "name": form.title,
                "pipeline_id": pipeline_id,
                "stage_id": stage_id,
                "amount": form.amount,
                "currency": form.currency,
                "owner_id": me.member_id,
                "contacts": [{"contact_id": contact_id, "is_primary": True}] if contact_id else [],
            },
            actor=_actor(me),
        )
        # Linked with its channel and the agent as ``linked_by``: the link captures the conversation's
        # summary into the deal's timeline.
        deal_service.link_conversation(
            me.organization_id, deal.id, str(conversation.id), conversation.service, me.member_id
        )
    except ApiError as error:
        name = _service_field(error, {"title", "amount", "currency", "stage"})
        if name is None:
            raise
        return _refused_form(me, conversation, "deal", FormState(values, {name: _field_messages()[name]}))
    return _created(
        me,
        conversation,
        "deal",
        _("Deal %(reference)s created and linked to this conversation.", reference=deal.reference),
    )


def _crm_contact_id(me: DeskUser, conversation: Conversation) -> uuid.UUID | None:
    """The CRM contact the conversation's person is, when it is one of the organization's: the ticket's
    requester and the deal's primary contact."""
    contact = crm_contact(me.organization_id, conversation.contact.crm_contact_id)
    return contact.id if contact is not None else None


# ---- errors and formatting --------------------------------------------------------------------------


@pages.errorhandler(ApiError)
def _refused(error: ApiError) -> Response:
    """A service's refusal that no form field explains: an alert where the agent looks, nothing kept."""
    uow.rollback()
    response = make_response(
        render_template("crm/_alert.html", message=error.message or _("That did not work."), kind="danger"),
        422 if error.status < 500 else error.status,
    )
    if request.headers.get("HX-Request") == "true":
        response.headers["HX-Retarget"] = "#desk-alerts"
        response.headers["HX-Reswap"] = "afterbegin"
    return response


@pages.app_template_filter("crm_money")
def crm_money(deal: Deal) -> str:
    """A deal's amount in its currency, written the way the page's language writes money (Babel)."""
    return format_currency(deal.amount, deal.currency)


@pages.app_template_filter("crm_due")
def crm_due(task: CrmTask) -> str:
    """A task's due moment in the organization's time zone: the date, and the time when it has one."""
    if task.due_date is None:
        return ""
    due = as_utc(task.due_date)
    if (due.hour, due.minute, due.second) == (0, 0, 0):
        # a date without a time (stored at 00:00Z): the calendar day as given, not shifted by a zone
        return format_date(due.date(), "medium")
    return f"{format_date(due, 'medium')} {format_time(due, 'short')}"


@pages.app_template_test("crm_overdue")
def crm_overdue(task: CrmTask) -> bool:
    return task.due_date is not None and as_utc(task.due_date) < utcnow()


def _labels() -> dict[str, dict[str, str]]:
    return {
        "priority": {
            "urgent": _("Urgent"),
            "high": _("High"),
            "normal": _("Normal"),
            "low": _("Low"),
        },
        "ticket_state": {
            "new": _("New"),
            "waiting_on_agent": _("Waiting on agent"),
            "waiting_on_customer": _("Waiting on customer"),
            "on_hold": _("On hold"),
            "closed": _("Closed (ticket)"),
        },
        "task_type": {
            "to_do": _("To do"),
            "call": _("Call"),
            "email": _("Email"),
            "meeting": _("Meeting"),
            "follow_up": _("Follow-up"),
        },
    }
