"""Handing a conversation from its AI agent to people, and pausing or resuming the agent on it.

Hand-off (``transfer_to_human``, the offline responder with nothing to say, a model that failed):

1. a transfer rule the model named whose ``target`` is a member: the conversation is assigned to that
   member;
2. otherwise the address's routing: its team rule (the inbox's team assignment, which picks people only:
   the online person with the fewest active conversations; nobody: the team's waiting queue), else the
   conversation's own team, else a routing rule to a human member; with none of these the conversation
   is unassigned (the desk's "unassigned" queue). A rule whose target is a phone number cannot take a
   chat: the number is written in the note and routing applies;
3. an internal note carries the hand-off note (never sent to the contact); the trail records the
   assignment or unassignment; ``conversation.ai_handed_off`` is published.

The customer's next messages do not bring the conversation back to an agent: the inbox asks the
``inbox.routing_declined`` hook before its address rule gives a conversation to a member, and
:func:`routing_declined` answers it (the conversation then waits in its team or unassigned for a person).

Pausing (the agent stays quiet on one conversation while people talk):

- a human reply (an outgoing message by a non-AI member), or a template sent without ``do_not_pause``,
  pauses it for ``AI_PAUSE_MINUTES`` (default 30) from that message; every further human reply renews it;
- :func:`pause` (a supervisor, API ``POST {msg}/conversations/{id}/ai/pause``) pauses it until
  :func:`resume` (``POST .../ai/resume``);
- ``AI_PAUSE_MINUTES`` = 0 makes every pause last until resumed.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app, has_app_context
from sqlalchemy import select

from blueprints.ai.models import AiConversationState, AiRun
from blueprints.inbox.services import assignment, notes
from blueprints.inbox.services.common import conversation_or_404, publish_updated
from blueprints.members.agent_config import target_type
from blueprints.members.services.members import find_member
from blueprints.messaging.models import Conversation
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.events import publish
from core.tenancy import find_for_org

DEFAULT_PAUSE_MINUTES = 30


# The words the hand-off note starts with, stored in English like every note the product writes (the API
# gives notes as stored); the desk shows them in the page's language (inbox pages, ``note_text``).
HANDOFF_LABELS = {"transfer_to_human": "AI agent handed over", "failed": "AI agent could not answer"}
TRANSFER_NUMBER = "Transfer rule {rule} names the number {number}."


@dataclass(frozen=True)
class HandOff:
    member_id: str | None
    team_id: str | None
    rule: str | None
    note_id: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"member_id": self.member_id, "team_id": self.team_id, "rule": self.rule}


def _routing_target(conversation: Conversation, agent_id: str) -> tuple[str | None, str | None]:
    """(team_id, member_id) from the address's routing rule, ignoring a rule that points at the agent."""
    try:
        routing = assignment.get_routing(conversation.organization_id, conversation.organization_address)
    except ApiError:
        return conversation.team_id, None
    if routing.target == "team" and routing.team_id:
        return routing.team_id, None
    if routing.target == "member" and routing.member_id and routing.member_id != agent_id:
        member = find_member(conversation.organization_id, routing.member_id)
        if member is not None and not member.ai:
            return conversation.team_id, routing.member_id
    return conversation.team_id, None


def hand_off(
    conversation: Conversation,
    agent_id: str,
    note: str,
    *,
    rule: dict[str, Any] | None,
    reason: str,
) -> HandOff:
    actor = f"ai:{agent_id}"
    organization_id = conversation.organization_id
    conversation = _with_contact(conversation)
    target = str(rule.get("target") or "") if rule else ""
    member_id: str | None = None
    team_id: str | None = None
    lines = [note.strip()] if note.strip() else []
    if target and target_type(target) == "member":
        member = find_member(organization_id, target)
        if member is not None and member.id != agent_id:
            assignment.assign_member(conversation, member.id, assigned_by=actor)
            member_id = member.id
    elif target and target_type(target) == "phone":
        lines.append(TRANSFER_NUMBER.format(rule=rule.get("name") if rule else "", number=target))
    if member_id is None:
        team_id, human = _routing_target(conversation, agent_id)
        assignment.unassign_member(conversation, actor=actor)
        if team_id:
            assignment.change_team(conversation, team_id, None, actor=actor)
            # the inbox's team assignment picks people only; nobody online: the team's waiting queue,
            # handed out by pick_up_waiting when one comes online
            person = assignment.available_member(organization_id, team_id)
            if person is not None and assignment.claim(
                conversation, person.id, expected=None, assigned_by="team"
            ):
                member_id = person.id
        elif human:
            assignment.assign_member(conversation, human, assigned_by=actor)
            member_id = human
    label = HANDOFF_LABELS.get(reason, HANDOFF_LABELS["transfer_to_human"])
    written = notes.add_note(organization_id, conversation.id, f"{label}: " + " ".join(lines), actor=actor)
    publish_updated(conversation, {"extra": ["member_id"]})
    result = HandOff(member_id, team_id, str(rule.get("name")) if rule else None, str(written.id))
    publish(
        "conversation.ai_handed_off",
        organization_id,
        {
            "conversation_id": str(conversation.id),
            "agent_id": agent_id,
            "reason": reason,
            "note": note,
            **result.as_dict(),
        },
    )
    return result


def _with_contact(conversation: Conversation) -> Conversation:
    """The conversation with its contact loaded (the realtime event shows it; a send's checkpoint may
    have expired it)."""
    return conversation_or_404(conversation.organization_id, conversation.id)


HANDED_OFF = ("handed_off", "failed_handed_off")


def routing_declined(organization_id: uuid.UUID, conversation_id: uuid.UUID, member_id: str) -> bool:
    """The inbox's ``inbox.routing_declined`` hook: True when the address's rule would give an AI member a
    conversation that an AI agent handed over to people (its last run ended in a hand-off) and that has not
    been archived and cleaned since (a cleaned conversation is routed from the start). A person's explicit
    assignment to the agent is not routing: after it the agent answers, and its next run's outcome ends
    the hand-off."""
    state = db.session.scalar(
        select(AiConversationState).where(
            AiConversationState.conversation_id == conversation_id,
            AiConversationState.organization_id == organization_id,
        )
    )
    if state is None or state.last_outcome not in HANDED_OFF:
        return False
    member = find_member(organization_id, member_id)
    if member is None or not member.ai:
        return False  # a rule to a person: people are who the conversation was handed to
    run = find_for_org(AiRun, state.last_run_id, organization_id) if state.last_run_id else None
    handed_at = (run.finished_at or run.started_at) if run is not None else state.updated_at
    cleaned = [
        event.created_at
        for event in notes.list_events(organization_id, conversation_id, ["archived"])
        if (event.data or {}).get("cleaned")
    ]
    return not any(at > handed_at for at in cleaned)


# ------------------------------------------------------------------------------------------------ pauses


def pause_minutes() -> int:
    value = current_app.config.get("AI_PAUSE_MINUTES") if has_app_context() else None
    if value is None:
        value = os.environ.get("AI_PAUSE_MINUTES") or DEFAULT_PAUSE_MINUTES
    return int(value)


def state_for(conversation: Conversation, *, create: bool = False) -> AiConversationState | None:
    state = db.session.scalar(
        select(AiConversationState).where(
            AiConversationState.conversation_id == conversation.id,
            AiConversationState.organization_id == conversation.organization_id,
        )
    )
    if state is None and create:
        state = AiConversationState(
            conversation_id=conversation.id,
            organization_id=conversation.organization_id,
            rerun=False,
            paused_until_resumed=False,
        )
        db.session.add(state)
    return state


def paused_until(conversation: Conversation, state: AiConversationState | None) -> datetime | str | None:
    """None: not paused; ``"resumed"``: until someone resumes it; else the time the pause ends."""
    if conversation.ai_paused_at is None:
        return None
    minutes = pause_minutes()
    if (state is not None and state.paused_until_resumed) or minutes <= 0:
        return "resumed"
    ends = conversation.ai_paused_at + timedelta(minutes=minutes)
    return ends if ends > utcnow() else None


def is_paused(conversation: Conversation, state: AiConversationState | None) -> bool:
    return paused_until(conversation, state) is not None


def _set_paused_at(conversation: Conversation, when: datetime | None) -> None:
    # Conversations are messaging's table; its conversation_state module has no setter for this column
    # yet (sending.py sets it itself for templates), so this is the one place that writes it here.
    conversation.ai_paused_at = when


def _conversation(organization_id: uuid.UUID, conversation_id: str) -> Conversation:
    return conversation_or_404(organization_id, conversation_id, lock=True)


def pause(organization_id: uuid.UUID, conversation_id: str, *, by: str) -> Conversation:
    """Pause the conversation's agent until :func:`resume` (a supervisor's choice)."""
    conversation = _conversation(organization_id, conversation_id)
    state = state_for(conversation, create=True)
    assert state is not None
    _set_paused_at(conversation, utcnow())
    state.paused_until_resumed = True
    state.paused_by = by
    db.session.flush()
    publish(
        "conversation.ai_paused",
        organization_id,
        {"conversation_id": str(conversation.id), "reason": "manual", "by": by, "until": "resumed"},
    )
    return conversation


def resume(organization_id: uuid.UUID, conversation_id: str, *, by: str) -> Conversation:
    """End any pause now; the next incoming message is answered."""
    conversation = _conversation(organization_id, conversation_id)
    state = state_for(conversation, create=True)
    assert state is not None
    _set_paused_at(conversation, None)
    state.paused_until_resumed = False
    state.paused_by = None
    # Messages that came in while paused were for people: the agent answers from the next one on.
    state.answered_through = utcnow()
    db.session.flush()
    publish("conversation.ai_resumed", organization_id, {"conversation_id": str(conversation.id), "by": by})
    return conversation


def pause_for_human_reply(
    organization_id: uuid.UUID, conversation_id: str, member_id: str, message_id: str
) -> bool:
    """A person replied: pause the AI agent assigned to the conversation for ``AI_PAUSE_MINUTES``."""
    conversation = db.session.scalar(
        select(Conversation).where(
            Conversation.id == uuid.UUID(conversation_id), Conversation.organization_id == organization_id
        )
    )
    if conversation is None or conversation.member_id is None:
        return False
    sender = find_member(organization_id, member_id)
    assigned = find_member(organization_id, conversation.member_id)
    if sender is None or sender.ai or assigned is None or not assigned.ai:
        return False
    _set_paused_at(conversation, utcnow())
    db.session.flush()
    publish(
        "conversation.ai_paused",
        organization_id,
        {
            "conversation_id": conversation_id,
            "reason": "human_reply",
            "member_id": member_id,
            "message_id": message_id,
            "until": isoformat(utcnow() + timedelta(minutes=pause_minutes()))
            if pause_minutes() > 0
            else "resumed",
        },
    )
    return True
