"""Cross-area wiring: the one place that says which area provides what to which.

Areas do not import each other's internals to answer questions about data they do not own; they expose a
hook, and this package plugs the owner in:

- CRM <- messaging: conversation transcripts (deal links capture a summary), contact merges (the
  messaging contacts that pointed at the merged-away CRM contact move to the surviving one), and which
  conversation ids exist (a deal or ticket links only the organization's own conversations);
- CRM <- members: which member ids are members of the organization (owners, assignees, "by" fields);
- inbox <- CRM: which deals and tickets link a conversation (a linked conversation is not deleted);
- members <- channels: the channels an organization has connected (an AI agent's ``connections``);
- members <- inbox: active conversations per member (presence lists, member removal);
- messaging <- CRM: a contact links only to a CRM contact of its organization; a new WhatsApp contact
  is linked to the CRM contact with that phone identity, and a phone identity added to (or removed
  from) a CRM contact links (or unlinks) the messaging contacts;
- core <- organizations: API keys and organizations as authentication reads them (``core.auth``);
- messaging <- channels: the provider events channels parse, stored by messaging;
- core's Socket.IO <- messaging: a message event also reaches its conversation's room, and a client
  joins only a conversation of its organization;
- CRM <- AI: a conversation's summary written by the model when one is configured;
- inbox <- AI: a conversation an AI agent handed over is not routed back to an agent;
- telecom <- telecom: the event store and lifecycle webhooks answer ``common.publish``, and the
  subscriptions activate a line whose port completed (both modules build on the ones that ask);
- core's Socket.IO <- members, desk: who may connect (a member's JWT, a desk session), presence when a
  connection drops, and the sockets of sign-ins that ended are closed.

Every hook of the project is connected here and nowhere else (a test reads the code for ``.connect(``),
so reading this function tells who answers what. Domain events (``core.events.subscribe``) stay with the
area that reacts to them.
"""

from __future__ import annotations

import uuid

from flask import Flask

from blueprints.ai.handoff import routing_declined as ai_declines_routing
from blueprints.ai.summaries import model_summary
from blueprints.channels.inbound import inbound_batch, inbound_events, inbound_settle
from blueprints.channels.services import connected_services
from blueprints.crm.hooks import (
    contact_merged,
    conversation_summary,
    conversation_transcript,
    known_conversations,
    known_members,
)
from blueprints.crm.services.links import (
    contact_ids_for_phones,
    conversation_link_phrases,
    existing_contact_ids,
)
from blueprints.inbox.services.assignment import active_counts, routing_declined
from blueprints.inbox.services.conversations import conversation_references
from blueprints.members.realtime import (
    authenticate_member_socket,
    close_sockets_of_ended_sessions,
    connection_dropped,
)
from blueprints.members.services.hooks import active_conversation_counts, connected_channels
from blueprints.members.services.members import existing_member_ids
from blueprints.members.services.users import sessions_ended
from blueprints.messaging.contacts import link_crm_contact, move_crm_links
from blueprints.messaging.ingest import settle_batch, store_batch, store_item
from blueprints.messaging.realtime import conversation_belongs_here, conversation_rooms
from blueprints.messaging.services import conversation_transcript as transcript_of
from blueprints.messaging.services import existing_conversation_ids
from blueprints.messaging.threads import crm_contacts_for_phones, known_crm_contacts
from blueprints.organizations.directory import TENANCY
from blueprints.shell.realtime import authenticate_desk_socket
from blueprints.telecom.services.common import event_published
from blueprints.telecom.services.portings import line_ported
from blueprints.telecom.services.subscriptions import activate_ported_line
from blueprints.telecom.services.webhooks import record_and_fan_out
from core import auth, realtime
from core.events import DomainEvent, subscribe
from core.jobs import job


def _transcript(*, organization_id: uuid.UUID, conversation_id: str) -> list[tuple[str, str, object]] | None:
    return transcript_of(organization_id, conversation_id)  # type: ignore[return-value]


def _merge_contacts(*, organization_id: uuid.UUID, source_id: uuid.UUID, target_id: uuid.UUID) -> int:
    return move_crm_links(organization_id, str(source_id), str(target_id))


def _crm_links(*, organization_id: uuid.UUID, conversation_id: str) -> list[str]:
    return conversation_link_phrases(organization_id, conversation_id)


def _known_members(*, organization_id: uuid.UUID, member_ids: list[str]) -> set[str]:
    return existing_member_ids(organization_id, member_ids)


def _known_conversations(*, organization_id: uuid.UUID, conversation_ids: list[str]) -> set[str]:
    return existing_conversation_ids(organization_id, conversation_ids)


def _connected_channels(*, organization_id: uuid.UUID) -> list[str]:
    return connected_services(organization_id)


def _active_counts(*, organization_id: uuid.UUID, member_ids: list[str]) -> dict[str, int]:
    return active_counts(organization_id, member_ids)


def _known_crm_contacts(*, organization_id: uuid.UUID, contact_ids: list[str]) -> set[str]:
    return existing_contact_ids(organization_id, contact_ids)


def _crm_contacts_for_phones(*, organization_id: uuid.UUID, phones: list[str]) -> dict[str, str]:
    return contact_ids_for_phones(organization_id, phones)


@job(retries=2, retry_delay=5)
def link_messaging_contacts(
    organization_id: str, phone: str, crm_contact_id: str | None, previous: str | None
) -> int:
    """A CRM phone identity appeared (or went away): (un)link the messaging contacts with that number."""
    # an unlink touches only contacts that still point at the contact that lost the number
    return link_crm_contact(uuid.UUID(organization_id), phone, crm_contact_id, only_if_linked_to=previous)


def _on_identity(event: DomainEvent) -> None:
    if event.data.get("kind") != "phone":
        return
    added = event.name == "crm.contact_identity_added"
    link_messaging_contacts.enqueue(
        event.organization_id,
        event.data["value"],
        event.data["contact_id"] if added else None,
        None if added else event.data["contact_id"],
    )


def init_app(app: Flask) -> None:
    auth.provide_tenancy(TENANCY)
    # inbound provider events flow one way: channels parse them, messaging stores them
    inbound_events.connect(store_item)
    inbound_batch.connect(store_batch)
    inbound_settle.connect(settle_batch)
    # Socket.IO: who may connect (a member's JWT, a desk session), presence, sockets of ended sign-ins
    realtime.connection_rooms.connect(authenticate_member_socket)
    realtime.connection_rooms.connect(authenticate_desk_socket)
    realtime.disconnected.connect(connection_dropped)
    sessions_ended.connect(close_sockets_of_ended_sessions)
    realtime.event_rooms.connect(conversation_rooms)
    realtime.conversation_access.connect(conversation_belongs_here)
    conversation_transcript.connect(_transcript)
    conversation_summary.connect(model_summary)
    known_members.connect(_known_members)
    known_conversations.connect(_known_conversations)
    contact_merged.connect(_merge_contacts)
    conversation_references.connect(_crm_links)
    connected_channels.connect(_connected_channels)
    active_conversation_counts.connect(_active_counts)
    crm_contacts_for_phones.connect(_crm_contacts_for_phones)
    known_crm_contacts.connect(_known_crm_contacts)
    routing_declined.connect(ai_declines_routing)
    # telecom: its events stored and fanned out to lifecycle webhooks; a completed port activates its line
    event_published.connect(record_and_fan_out)
    line_ported.connect(activate_ported_line)
    subscribe("crm.contact_identity_added", _on_identity)
    subscribe("crm.contact_identity_removed", _on_identity)
