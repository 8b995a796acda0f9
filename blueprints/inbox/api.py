"""The inbox routes under ``/v2/messages/organizations/{organization_id}``: conversation list, update,
delete, team assignment, notes, audit events, labels, flows, routing and broadcasts."""

from __future__ import annotations

from typing import Any

from flask_openapi3 import Tag

from blueprints.inbox.schemas import (
    AddressesByLabelQuery,
    AddressesOut,
    AddressPath,
    AssignTeamIn,
    AssignTeamOut,
    AuditEventList,
    AuditEventOut,
    BroadcastIn,
    BroadcastListOut,
    BroadcastListQuery,
    BroadcastOut,
    BroadcastPath,
    ConversationListOut,
    ConversationListQuery,
    ConversationOut,
    ConversationPatch,
    ConversationPath,
    DeletedOut,
    EnrichedLabel,
    EnrichedLabels,
    EventsQuery,
    FlowIn,
    FlowList,
    FlowOut,
    FlowPatch,
    FlowPath,
    LabelDeletedOut,
    LabelIn,
    LabelList,
    LabelOut,
    LabelPatch,
    LabelPath,
    NoteIn,
    NoteList,
    NoteOut,
    NotePath,
    OrgPath,
    RoutingIn,
    RoutingOut,
)
from blueprints.inbox.services import assignment, broadcasts, conversations, labels, notes
from blueprints.inbox.services.common import as_uuid
from blueprints.messaging.schemas import MessageOut
from core import auth
from core.errors import ACCESS_DENIED, ApiError
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses
from core.pagination import TOTAL_RELATION_HEADER

PREFIX = "/v2/messages/organizations/<organization_id>"
TAG = Tag(
    name="Inbox", description="Conversations: lists, assignment, notes, audit events, labels, broadcasts"
)

api = AreaAPI(
    "inbox_api",
    __name__,
    url_prefix=PREFIX,
    abp_tags=[TAG],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


def _org() -> Any:
    return auth.current_organization_id()


def _actor() -> str:
    return auth.current_actor()


def _deleted(identifier: object) -> dict[str, Any]:
    return DeletedOut(id=str(identifier), deleted=True).model_dump()


@api.get("/conversations", responses={200: ConversationListOut})
def list_conversations(
    path: OrgPath, query: ConversationListQuery
) -> dict[str, Any] | tuple[dict[str, Any], int, dict[str, str]]:
    """Conversations matching every filter given: `{data, total, skip, take}`."""
    found = conversations.list_conversations(
        _org(),
        conversations.ConversationFilter(
            search=query.search,
            status=query.status,
            contact_id=query.contact_id,
            services=query.services,
            labels=query.label_names,
            no_labels=query.no_labels,
            assigned_member_id=query.assigned_member_id,
            organization_address=query.organization_address,
            since=query.since,
            until=query.until,
            date_field=query.date_field,
            order_by=query.order_by,
            order=query.order,
            broadcast_id=query.broadcast_id,
            is_broadcast=query.is_broadcast,
            crm_contact_id=query.crm_contact_id,
            skip=query.skip,
            take=query.take,
            include_messages=query.include_messages,
            cursor=query.cursor,
        ),
    )
    data = []
    for conversation in found.items:
        item = ConversationOut.dump(conversation)
        if query.include_messages:
            item["messages"] = [MessageOut.dump(m) for m in found.messages.get(conversation.id, [])]
        data.append(item)
    body = {"data": data, "total": found.total, "skip": query.skip, "take": query.take}
    if query.cursor is not None:
        body["next_cursor"] = found.next_cursor
    if not found.total_is_exact:  # the count stopped at its cap: total is a lower bound
        return body, 200, {TOTAL_RELATION_HEADER: "gte"}
    return body


@api.patch("/conversations/<conversation_id>", responses={200: ConversationOut, 409: PlainError})
def update_conversation(path: ConversationPath, body: ConversationPatch) -> dict[str, Any]:
    """Change `name`, `status` and `extra` (merged: only the fields sent change)."""
    sent = body.model_fields_set
    conversation = conversations.update_conversation(
        _org(),
        path.conversation_id,
        actor=_actor(),
        name=body.name if "name" in sent else conversations.UNSET,
        status=body.status if "status" in sent else conversations.UNSET,
        extra=body.extra.sent_fields() if body.extra is not None else None,
    )
    return ConversationOut.dump(conversation)


@api.delete("/conversations/<conversation_id>", responses={200: DeletedOut, 409: PlainError})
def delete_conversation(path: ConversationPath) -> dict[str, Any]:
    """Delete with messages, notes and audit trail; 409 while a deal or ticket links it."""
    return _deleted(conversations.delete_conversation(_org(), path.conversation_id))


@api.post("/conversations/<conversation_id>/assign-team", responses={200: AssignTeamOut})
def assign_team(path: ConversationPath, body: AssignTeamIn) -> dict[str, Any]:
    """Assign a team, then an available member of it (none available: the team keeps it waiting)."""
    conversation, member_id = assignment.assign_team(
        _org(), path.conversation_id, body.team_id, body.team_name, actor=_actor()
    )
    return {"conversation": ConversationOut.dump(conversation), "assigned_member_id": member_id}


@api.post("/conversations/<conversation_id>/notes", responses={201: NoteOut})
def add_note(path: ConversationPath, body: NoteIn) -> tuple[dict[str, Any], int]:
    """An internal note: never sent to the contact."""
    if as_uuid(body.organization_id) != _org():
        # the same answer as the members endpoint gives for this body field
        raise ApiError(400, "organization_id: must be the organization of the path", param="organization_id")
    note = notes.add_note(
        _org(), path.conversation_id, body.content, member_id=body.member_id, actor=body.actor
    )
    return NoteOut.dump(note), 201


@api.get("/conversations/<conversation_id>/notes", responses={200: NoteList})
def list_notes(path: ConversationPath) -> dict[str, Any]:
    found = notes.list_notes(_org(), path.conversation_id)
    return {"data": [NoteOut.dump(n) for n in found], "total": len(found)}


@api.delete("/conversations/<conversation_id>/notes/<note_id>", responses={200: DeletedOut})
def delete_note(path: NotePath) -> dict[str, Any]:
    notes.delete_note(_org(), path.conversation_id, path.note_id)
    return _deleted(path.note_id)


@api.get("/conversations/<conversation_id>/events", responses={200: AuditEventList})
def list_events(path: ConversationPath, query: EventsQuery) -> list[dict[str, Any]]:
    """The audit trail, oldest first; `types` filters (comma-separated)."""
    return [AuditEventOut.dump(e) for e in notes.list_events(_org(), path.conversation_id, query.type_list)]


@api.get("/conversations/<conversation_id>/labels/enriched", responses={200: EnrichedLabels})
def enriched_labels(path: ConversationPath) -> dict[str, Any]:
    """Every label of the organization with `isApplied` and the flows it triggers or interrupts."""
    found = labels.enriched_labels(_org(), path.conversation_id)
    return {"labels": [EnrichedLabel.dump(label) for label in found]}


@api.get("/conversations/addresses-by-label", responses={200: AddressesOut})
def addresses_by_label(path: OrgPath, query: AddressesByLabelQuery) -> dict[str, Any]:
    """Contact addresses of the conversations that carry `label`."""
    if as_uuid(query.organization_id) != _org():
        raise ApiError(403, ACCESS_DENIED)
    return {"addresses": labels.addresses_by_label(_org(), query.label)}


@api.get("/labels", responses={200: LabelList})
def list_labels(path: OrgPath) -> dict[str, Any]:
    found = labels.list_labels(_org())
    return {"data": [LabelOut.dump(label) for label in found], "total": len(found)}


@api.post("/labels", responses={201: LabelOut, 409: PlainError})
def create_label(path: OrgPath, body: LabelIn) -> tuple[dict[str, Any], int]:
    label = labels.create_label(
        _org(), body.name, source=body.source, color=body.color, description=body.description
    )
    return LabelOut.dump(label), 201


@api.patch("/labels/<label_id>", responses={200: LabelOut, 409: PlainError})
def update_label(path: LabelPath, body: LabelPatch) -> dict[str, Any]:
    """Renaming a label renames it on every conversation that carries it."""
    return LabelOut.dump(labels.update_label(_org(), path.label_id, body.sent_fields()))


@api.delete("/labels/<label_id>", responses={200: LabelDeletedOut})
def delete_label(path: LabelPath) -> dict[str, Any]:
    """Removes the label from the catalogue and from every conversation."""
    updated = labels.delete_label(_org(), path.label_id)
    return LabelDeletedOut(id=path.label_id, deleted=True, conversations_updated=updated).model_dump()


@api.get("/flows", responses={200: FlowList})
def list_flows(path: OrgPath) -> dict[str, Any]:
    found = labels.list_flows(_org())
    return {"data": [FlowOut.dump(f) for f in found], "total": len(found)}


@api.post("/flows", responses={201: FlowOut})
def create_flow(path: OrgPath, body: FlowIn) -> tuple[dict[str, Any], int]:
    """An automation sequence started by its trigger labels and stopped by its interrupt labels."""
    flow = labels.create_flow(
        _org(),
        body.name,
        status=body.status,
        trigger_labels=body.trigger_labels,
        interrupt_labels=body.interrupt_labels,
        member_id=body.member_id,
        steps=body.steps,
    )
    return FlowOut.dump(flow), 201


@api.get("/flows/<flow_id>", responses={200: FlowOut})
def get_flow(path: FlowPath) -> dict[str, Any]:
    return FlowOut.dump(labels.get_flow(_org(), path.flow_id))


@api.patch("/flows/<flow_id>", responses={200: FlowOut})
def update_flow(path: FlowPath, body: FlowPatch) -> dict[str, Any]:
    return FlowOut.dump(labels.update_flow(_org(), path.flow_id, body.sent_fields()))


@api.delete("/flows/<flow_id>", responses={200: DeletedOut})
def delete_flow(path: FlowPath) -> dict[str, Any]:
    labels.delete_flow(_org(), path.flow_id)
    return _deleted(path.flow_id)


@api.get("/addresses/<address>/routing", responses={200: RoutingOut})
def get_routing(path: AddressPath) -> dict[str, Any]:
    """Where new and reactivated conversations of this address go."""
    return RoutingOut.dump(assignment.get_routing(_org(), path.address))


@api.put("/addresses/<address>/routing", responses={200: RoutingOut})
def set_routing(path: AddressPath, body: RoutingIn) -> dict[str, Any]:
    """`target` team (with `team_id`), member (with `member_id`, e.g. an AI agent) or none."""
    routing = assignment.set_routing(_org(), path.address, body.target, body.team_id, body.member_id)
    return RoutingOut.dump(routing)


@api.post("/broadcasts", responses={201: BroadcastOut, 409: PlainError})
def create_broadcast(path: OrgPath, body: BroadcastIn) -> tuple[dict[str, Any], int]:
    """Send an approved template to up to 1,000 recipients in the background, paced per number."""
    spec = broadcasts.BroadcastSpec(
        name=body.name,
        organization_address=body.organization_address,
        meta_template_id=body.meta_template_id,
        components=[c.model_dump(exclude_none=True) for c in body.components],
        recipients=[
            broadcasts.Recipient(
                to=r.to,
                components=[c.model_dump(exclude_none=True) for c in r.components]
                if r.components is not None
                else None,
            )
            for r in body.recipients
        ],
        rate_per_second=body.rate_per_second,
        scheduled_at=body.scheduled_at,
    )
    return BroadcastOut.dump(broadcasts.create_broadcast(_org(), spec, created_by=_actor())), 201


@api.get("/broadcasts", responses={200: BroadcastListOut})
def list_broadcasts(path: OrgPath, query: BroadcastListQuery) -> dict[str, Any]:
    page = broadcasts.list_broadcasts(_org(), status=query.status, skip=query.skip, take=query.take)
    return {
        "data": [BroadcastOut.dump_summary(b) for b in page.items],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


@api.get("/broadcasts/<broadcast_id>", responses={200: BroadcastOut})
def get_broadcast(path: BroadcastPath) -> dict[str, Any]:
    """The broadcast with counts per state and every recipient's result."""
    return BroadcastOut.dump(broadcasts.get_broadcast(_org(), path.broadcast_id))


@api.post("/broadcasts/<broadcast_id>/cancel", responses={200: BroadcastOut, 409: PlainError})
def cancel_broadcast(path: BroadcastPath) -> dict[str, Any]:
    """Stop sending: recipients still queued are canceled; those already sent stay sent."""
    return BroadcastOut.dump(broadcasts.cancel_broadcast(_org(), path.broadcast_id))
