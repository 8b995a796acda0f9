"""The CRM's desk fragments: what the CRM knows about the person of an open conversation, shown in the
inbox's side panel, with "new ticket" and "new deal" forms that link the conversation to what they create.

``GET /crm/conversation/<id>/records`` is the whole section (lists and forms; the inbox panel loads it);
``GET /crm/conversation/<id>/records/lists`` only the lists, which refresh themselves when a CRM event
(``deal.updated``, ``ticket.updated``) reaches the page, so a form being filled in is never replaced.
The forms post to ``/crm/conversation/<id>/tickets`` and ``/deals``: a refused field answers 422 with the
form and the field's message, a success the refreshed lists, a fresh form and a success alert.

Every read and write goes through the CRM services (the same functions as the JSON API) and the
messaging area's ``get_conversation``; nothing here knows a rule or writes SQL. A form builds the verb's
typed input (``drafts.parse``) from what was typed and the verb refuses: the refusal's ``param`` names
the form field (``TICKET_FIELDS``, ``DEAL_FIELDS``) and its ``code`` the words shown (``refusals.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from flask import Response, make_response, render_template, request
from flask_babel import gettext as _
from markupsafe import escape

from blueprints.crm.drafts import DealContactDraft, DealDraft, TicketDraft, parse
from blueprints.crm.models import Pipeline
from blueprints.crm.money import CURRENCIES
from blueprints.crm.pages.common import _labels, pages
from blueprints.crm.refusals import form_errors
from blueprints.crm.rules import TicketChannel
from blueprints.crm.services import deals as deal_service
from blueprints.crm.services import pipelines as pipeline_service
from blueprints.crm.services import tickets as ticket_service
from blueprints.crm.services.records import ConversationRecords, conversation_records, crm_contact
from blueprints.desk.fragments import conversation_for_page as _conversation
from blueprints.desk.security import DeskUser, signed_in
from blueprints.members.services.members import members_by_ids
from blueprints.messaging.models import Conversation
from core import uow
from core.auth import actor as make_actor
from core.errors import ApiError

# The ticket channels the CRM accepts, the rule's own list: an Instagram conversation is linked to its
# ticket without a channel.
TICKET_CHANNELS: tuple[str, ...] = get_args(TicketChannel)


# ---- forms ---------------------------------------------------------------------------------------------

# Each form's fields by the wire names a refusal's ``param`` carries: a refusal of one of these is shown
# under the field; any other is an alert.
TICKET_FIELDS = {"title": "subject", "body_html": "description", "priority": "priority"}
# ``stage`` is one select of ``<pipeline id>:<stage id>`` (grouped by pipeline): both ids are its.
DEAL_FIELDS = {
    "name": "title",
    "amount": "amount",
    "currency": "currency",
    "pipeline_id": "stage",
    "stage_id": "stage",
}


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


@pages.get("/crm/conversation/<conversation_id>/records")
def conversation_records_section(conversation_id: str) -> Response:
    """The whole section: the lists and the two forms (what the inbox panel loads)."""
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    html = _render("crm/_section.html", view=_records(me, conversation), forms=_forms(me, conversation))
    return _no_store(make_response(html))


@pages.get("/crm/conversation/<conversation_id>/records/lists")
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


def _refused_field(
    me: DeskUser,
    conversation: Conversation,
    form: str,
    values: dict[str, str],
    refusal: ApiError,
    fields: Mapping[str, str],
) -> Response:
    """The form again with the refusal under its field; a refusal no field of the form explains goes on
    to the alert (``_refused``)."""
    errors = form_errors(refusal, fields)
    if not errors:
        raise refusal
    return _refused_form(me, conversation, form, FormState(values, errors))


@pages.post("/crm/conversation/<conversation_id>/tickets")
def create_ticket(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    values = {name: request.form.get(name, "") for name in ("subject", "description", "priority")}
    contact_id = _crm_contact_id(me, conversation)
    try:
        draft = parse(
            TicketDraft,
            {
                "title": values["subject"],
                "source": "channel",
                "priority": values["priority"],
                "body_html": _description_html(values["description"].strip()),
                "requester_id": contact_id,
                "channel": conversation.service if conversation.service in TICKET_CHANNELS else None,
                "conversation_ids": (str(conversation.id),),
            },
        )
        ticket = ticket_service.create_ticket(me.organization_id, draft, actor=_actor(me))
    except ApiError as refusal:
        return _refused_field(me, conversation, "ticket", values, refusal, TICKET_FIELDS)
    return _created(
        me,
        conversation,
        "ticket",
        _("Ticket %(reference)s created and linked to this conversation.", reference=ticket.reference),
    )


@pages.post("/crm/conversation/<conversation_id>/deals")
def create_deal(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    values = {name: request.form.get(name, "") for name in ("title", "amount", "currency", "stage")}
    contact_id = _crm_contact_id(me, conversation)
    pipeline_id, _colon, stage_id = values["stage"].partition(":")
    try:
        draft = parse(
            DealDraft,
            {
                "name": values["title"],
                "pipeline_id": pipeline_id,
                "stage_id": stage_id,
                # a number input left empty: no amount (the deal starts at 0)
                "amount": values["amount"].strip() or None,
                "currency": values["currency"],
                "owner_id": me.member_id,
                "contacts": (DealContactDraft(contact_id, is_primary=True),) if contact_id else (),
            },
        )
        deal = deal_service.create_deal(me.organization_id, draft, actor=_actor(me))
        # Linked with its channel and the agent as ``linked_by``: the link captures the conversation's
        # summary into the deal's timeline.
        deal_service.link_conversation(
            me.organization_id, deal.id, str(conversation.id), conversation.service, me.member_id
        )
    except ApiError as refusal:
        return _refused_field(me, conversation, "deal", values, refusal, DEAL_FIELDS)
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
