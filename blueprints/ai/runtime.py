"""The messaging adapter of the AI runtime: an AI agent answering the conversations assigned to it.

The agent's brain — configuration, context window, prompt, model, tools, hand-off decision, run record —
is the channel-agnostic conversation core (``conversation.py``); this module is what is messaging's:
reading the conversation's stored messages, bursts and pauses, the lease on the conversation, splitting
long answers and sending them through ``messaging.sending``. (``voice_turns.py`` is the voice side.)

Trigger: every incoming message (``message.created``) and every assignment (``conversation.assigned``)
enqueues :data:`answer_conversation_job`. The job answers when the conversation is assigned to an AI
member that has a configuration, is not archived and the agent is not paused there
(``blueprints/ai/handoff.py``: pauses).

**One answer per burst.** The job takes the conversation's lease (``ai_conversation_states``: a
compare-and-set on its own connection, committed at once, so a concurrent job sees it). A job that finds
the lease held sets ``rerun`` and leaves; the holder, when it finishes, runs once more if ``rerun`` was
set. A run answers every incoming message after the later of the last outgoing message and the last
message a run covered (``answered_through``), at most :data:`MAX_BURST`: two messages that arrive
together, or while the model is thinking, get one answer. A lease left by a dead worker expires after
``AI_LEASE_SECONDS`` (default 300).

**A run**: the burst and its history as the core's turns, the core's answer (the prompt in
``prompt.py``'s order, the enabled tools, the model or the offline responder, up to :data:`MAX_ROUNDS`
rounds of tool calls: ``conversation.converse``), then the answer through
``messaging.sending.send_message`` as the agent (``member_id``), split per ``split_long_messages``
(``splitting.py``). Every run is stored in ``ai_runs`` with its outcome.
Outcomes: ``answered``, ``handed_off``, ``failed_handed_off`` (the model failed after its retries: the
conversation goes to people with a note, the customer's messages stay in it unanswered), ``window_closed``
(nothing sent), ``skipped_paused``, ``send_failed``, ``no_answer``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import click
from flask import current_app, has_app_context
from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from blueprints.ai import handoff, prompt, splitting, tools
from blueprints.ai.conversation import (
    MAX_ROUNDS,
    AgentSetup,
    RunResult,
    Turn,
    agent_setup,
    answer_offline,
    chat_messages,
    converse,
    record_run,
    window_limits,
)
from blueprints.ai.models import AiConversationState
from blueprints.ai.provider import ChatProvider, ProviderError, chat_provider
from blueprints.members.models import Member
from blueprints.messaging.models import Contact, Conversation, Message
from blueprints.messaging.sending import SERVICE_WINDOW, Content, send_message
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.events import DomainEvent, publish
from core.jobs import job

# The core's names that callers (the API, the playground) have always imported from here.
__all__ = ["MAX_ROUNDS", "AgentSetup", "RunResult", "agent_setup", "converse"]

MAX_BURST = 20
DEFAULT_LEASE_SECONDS = 300


def _lease_seconds() -> int:
    value = current_app.config.get("AI_LEASE_SECONDS") if has_app_context() else None
    return int(value if value is not None else os.environ.get("AI_LEASE_SECONDS") or DEFAULT_LEASE_SECONDS)


# ------------------------------------------------------------------------------------------- the lease


def _insert_ignore(connection: Any, values: dict[str, Any]) -> None:
    table = AiConversationState.__table__
    insert = pg_insert if connection.dialect.name == "postgresql" else sqlite_insert
    connection.execute(insert(table).values(**values).on_conflict_do_nothing())


def acquire_lease(conversation: Conversation) -> str | None:
    """The lease's token, or None when another run holds it (that run is then asked to run again).

    On its own connection and committed at once: the lease must be visible to concurrent jobs while this
    one waits for the model, long before this unit of work commits."""
    table = AiConversationState.__table__
    key = table.c.conversation_id == conversation.id
    for _ in range(3):
        token = uuid.uuid4().hex
        now = utcnow()
        with db.engine.begin() as connection:
            _insert_ignore(
                connection,
                {
                    "conversation_id": conversation.id,
                    "organization_id": conversation.organization_id,
                    "rerun": False,
                    "paused_until_resumed": False,
                    "updated_at": now,
                },
            )
            taken = connection.execute(
                update(table)
                .where(key, or_(table.c.lease_token.is_(None), table.c.lease_until < now))
                .values(lease_token=token, lease_until=now + timedelta(seconds=_lease_seconds()), rerun=False)
            )
            if taken.rowcount == 1:
                return token
            asked = connection.execute(
                update(table)
                .where(key, table.c.lease_token.is_not(None), table.c.lease_until >= now)
                .values(rerun=True)
            )
            if asked.rowcount == 1:
                return None
    return None


def _release_after_failure(conversation_id: uuid.UUID, token: str) -> None:
    table = AiConversationState.__table__
    with db.engine.begin() as connection:
        connection.execute(
            update(table)
            .where(table.c.conversation_id == conversation_id, table.c.lease_token == token)
            .values(lease_token=None, lease_until=None)
        )


def _finish(conversation_id: uuid.UUID, token: str, values: dict[str, Any]) -> bool:
    """Hand the lease back in this unit of work, with the run's marks; True when a rerun was asked."""
    table = AiConversationState.__table__
    key = and_(table.c.conversation_id == conversation_id, table.c.lease_token == token)
    done = db.session.execute(
        update(table)
        .where(key, table.c.rerun.is_(False))
        .values(lease_token=None, lease_until=None, updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    if done.rowcount == 1:
        return False
    db.session.execute(
        update(table)
        .where(key)
        .values(lease_token=None, lease_until=None, rerun=False, updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    return True


# ----------------------------------------------------------------------------------------- messages


def _state(conversation: Conversation) -> AiConversationState | None:
    return db.session.scalar(
        select(AiConversationState)
        .where(
            AiConversationState.conversation_id == conversation.id,
            AiConversationState.organization_id == conversation.organization_id,
        )
        .execution_options(populate_existing=True)
    )


def pending_messages(
    conversation: Conversation, state: AiConversationState | None, agent_id: str
) -> list[Message]:
    """The burst: incoming messages after what a run covered (``answered_through``) and after the last
    outgoing message sent by someone else (a person, a template). The agent's own answers are not a mark:
    a message that came in while it was answering is still waiting.

    Both marks compare ``created_at`` (the order in which the desk stored the messages): a provider's
    ``timestamp`` has whole seconds, so a customer's message written just after a person's reply could
    otherwise look older than the reply."""
    last_reply = db.session.scalar(
        select(func.max(Message.created_at)).where(
            Message.conversation_id == conversation.id,
            Message.direction == "outgoing",
            or_(Message.member_id.is_(None), Message.member_id != agent_id),
        )
    )
    statement = select(Message).where(
        Message.conversation_id == conversation.id, Message.direction == "incoming"
    )
    if last_reply is not None:
        statement = statement.where(Message.created_at > last_reply)
    if state is not None and state.answered_through is not None:
        statement = statement.where(Message.created_at > state.answered_through)
    newest = list(
        db.session.scalars(statement.order_by(Message.created_at.desc(), Message.id.desc()).limit(MAX_BURST))
    )
    return list(reversed(newest))


def history(conversation: Conversation, before: list[Message], chat: dict[str, Any]) -> list[Message]:
    """``context_messages`` messages before the burst, within ``context_days``; none for 0 messages
    (the core's :func:`~blueprints.ai.conversation.window_limits`, as this query's LIMIT and WHERE)."""
    count, cutoff = window_limits(chat, utcnow())
    if count <= 0:
        return []
    # Every other message (an answer the agent sent while the burst was arriving included), in the order
    # the desk learnt of them (created_at): a provider's timestamps have whole seconds, so an answer and
    # the next question can share one; the days are counted on the provider's time.
    statement = (
        select(Message)
        .where(
            Message.conversation_id == conversation.id,
            Message.id.not_in([m.id for m in before]),
            Message.timestamp >= cutoff,
        )
        .order_by(Message.created_at.desc(), Message.id.desc())
        .limit(count)
    )
    return list(reversed(list(db.session.scalars(statement))))


def _turns(messages: Iterable[Message]) -> list[Turn]:
    """Stored messages as the core's turns: incoming ones are the customer's; outgoing ones (people's,
    templates, the agent's) are the agent side's."""
    return [
        Turn(
            "customer" if m.direction == "incoming" else "agent",
            prompt.message_text(m.content, m.template),
            m.timestamp,
        )
        for m in messages
    ]


# ---------------------------------------------------------------------------------------------- a run


def _window_open(conversation: Conversation) -> bool:
    last = conversation.last_incoming_at
    return last is not None and utcnow() - last < SERVICE_WINDOW


def _contact_name(conversation: Conversation) -> str | None:
    return db.session.scalar(select(Contact.name).where(Contact.id == conversation.contact_id))


class _Channel:
    """The conversation as the core's tools see it: sending as the agent, and ``ai.tool_called``."""

    def __init__(self, conversation: Conversation, setup: AgentSetup, run_id: uuid.UUID) -> None:
        self.conversation, self.setup, self.run_id = conversation, setup, run_id
        self.sent_ids: list[str] = []

    def send(self, content: Content) -> Message | None:
        conversation = self.conversation
        message = send_message(
            conversation.organization_id,
            organization_address=conversation.organization_address,
            service=conversation.service,
            contact_address=conversation.contact_address,
            content=content,
            member_id=self.setup.agent_id,
        )
        self.sent_ids.append(str(message.id))
        return message

    def tool_called(self, call: dict[str, Any]) -> None:
        # The notifications area turns this event into its deliveries (notifications[<tool>]).
        publish(
            "ai.tool_called",
            self.conversation.organization_id,
            {
                "agent_id": self.setup.agent_id,
                "conversation_id": str(self.conversation.id),
                "contact_address": self.conversation.contact_address,
                "tool": call["name"],
                "arguments": call["arguments"],
                "result": call["result"],
                "run_id": str(self.run_id),
            },
        )

    def tool_context(self) -> tools.ToolContext:
        setup = self.setup
        return tools.ToolContext(
            organization_id=self.conversation.organization_id,
            agent_id=setup.agent_id,
            sections=setup.sections,
            call_transfers=setup.call_transfers,
            enabled=setup.enabled,
            conversation=self.conversation,
            dry_run=False,
            send=self.send,
        )


def _run(conversation: Conversation, setup: AgentSetup, burst: list[Message], run_id: uuid.UUID) -> RunResult:
    """One run on a burst: the core answers (the model, or the offline responder), then the answer is
    split and sent. Hand-offs reassign the conversation (``handoff.hand_off``)."""
    channel = _Channel(conversation, setup, run_id)
    question = "\n".join(turn.text for turn in _turns(burst))
    provider = chat_provider()
    if provider is None:
        result = _offline_run(conversation, setup, question)
    else:
        result = _model_run(provider, channel, burst, question)
    if result.answer:  # small talk, a failed model and a bare hand-off have nothing to send
        _deliver(channel, result)
    result.sent_ids = channel.sent_ids
    return result


def _offline_run(conversation: Conversation, setup: AgentSetup, question: str) -> RunResult:
    result = answer_offline(conversation.organization_id, setup, question)
    if result.outcome == "handed_off":
        result.handed_off = handoff.hand_off(
            conversation,
            setup.agent_id,
            f"No answer in the knowledge base for: {question[:500]}",
            rule=None,
            reason="transfer_to_human",
        )
    return result


def _model_run(provider: ChatProvider, channel: _Channel, burst: list[Message], question: str) -> RunResult:
    conversation, setup = channel.conversation, channel.setup
    facts = prompt.ConversationFacts(conversation.service, _contact_name(conversation), utcnow())
    context = _turns(history(conversation, burst, setup.chat))
    messages = chat_messages(setup, facts, context, _turns(burst))
    tool_context = channel.tool_context()
    result = RunResult(outcome="no_answer")
    try:
        result = converse(provider, setup, messages, tool_context, on_tool=channel.tool_called, result=result)
    except ProviderError as error:
        return _model_failed(conversation, setup, tool_context, result, error, question)
    if result.outcome == "no_answer" and tool_context.handed_off is None:
        # The model ended without words: a person answers rather than the customer waiting for nothing.
        result.handed_off = handoff.hand_off(
            conversation,
            setup.agent_id,
            f"The AI agent found no answer for: {question[:500]}",
            rule=None,
            reason="transfer_to_human",
        )
        result.outcome = "handed_off"
    return result


def _model_failed(
    conversation: Conversation,
    setup: AgentSetup,
    tool_context: tools.ToolContext,
    result: RunResult,
    error: ProviderError,
    question: str,
) -> RunResult:
    """The model failed after its retries: nothing is sent, people get the conversation with a note (the
    customer's messages stay in it, waiting), unless a tool of this run handed it off already."""
    result.outcome = "failed_handed_off"
    result.error = f"model {error.reason}: {error.detail}"[:2000]
    result.answer = []
    if tool_context.handed_off is None:
        tool_context.handed_off = handoff.hand_off(
            conversation,
            setup.agent_id,
            f"The language model failed ({error.reason}); the customer's messages are waiting "
            f"for an answer: {question[:500]}",
            rule=None,
            reason="failed",
        )
    result.handed_off = tool_context.handed_off
    return result


def _deliver(channel: _Channel, result: RunResult) -> None:
    """Split the answer per the channel's limits and ``split_long_messages``, and send it inside the
    24-hour service window (the window may have closed while the model was thinking)."""
    conversation = channel.conversation
    split_long = bool(channel.setup.chat.get("split_long_messages"))
    parts = [
        p for text in result.answer for p in splitting.answer_parts(text, conversation.service, split_long)
    ]
    result.answer = parts
    if not parts:
        return
    if not _window_open(conversation):
        result.outcome = "window_closed" if result.outcome == "answered" else result.outcome
        result.error = "the 24-hour service window is closed: nothing was sent"
        return
    for part in parts:
        try:
            channel.send(Content(kind="text", text=part))
        except ApiError as exc:
            result.outcome = "send_failed" if _window_open(conversation) else "window_closed"
            result.error = exc.message
            break


def answer_conversation(organization_id: uuid.UUID, conversation_id: uuid.UUID) -> str | None:
    """Answer the conversation's waiting messages if its AI agent should; returns the run's outcome,
    ``"deferred"`` (another run holds the lease and will run again) or None (nothing to do)."""
    conversation = db.session.scalar(
        select(Conversation).where(
            Conversation.id == conversation_id, Conversation.organization_id == organization_id
        )
    )
    if conversation is None or conversation.archived_at is not None:
        return None
    setup = agent_setup(organization_id, conversation.member_id)
    if setup is None:
        return None
    state = _state(conversation)
    if not pending_messages(conversation, state, setup.agent_id):
        return None
    token = acquire_lease(conversation)
    if token is None:
        return "deferred"
    try:
        outcome, rerun = _answer_under_lease(conversation, setup, token)
    except BaseException:
        db.session.rollback()
        _release_after_failure(conversation_id, token)
        raise
    if rerun:
        answer_conversation_job.enqueue(str(organization_id), str(conversation_id))
    return outcome


def _answer_under_lease(conversation: Conversation, setup: AgentSetup, token: str) -> tuple[str | None, bool]:
    """Under the lease: read the burst again (it may have grown or been answered while waiting), run,
    record the run and hand the lease back with its marks; returns (outcome, rerun asked)."""
    organization_id = conversation.organization_id
    db.session.refresh(conversation)
    state = _state(conversation)
    burst = pending_messages(conversation, state, setup.agent_id)
    current = agent_setup(organization_id, conversation.member_id)
    if not burst or current is None or current.agent_id != setup.agent_id:
        return None, _finish(conversation.id, token, {})
    run_id = uuid.uuid4()
    trigger_ids = [str(m.id) for m in burst]
    started = utcnow()
    result = _attempt(conversation, setup, state, burst, run_id, trigger_ids)
    run = record_run(
        organization_id,
        setup,
        result,
        run_id=run_id,
        conversation_id=conversation.id,
        trigger_ids=trigger_ids,
        started=started,
    )
    rerun = _finish(conversation.id, token, _marks(result, run_id, max(m.created_at for m in burst)))
    if result.outcome != "skipped_paused":
        _publish_finished(conversation, setup, result, run_id, isoformat(run.finished_at))
    return result.outcome, rerun


def _attempt(
    conversation: Conversation,
    setup: AgentSetup,
    state: AiConversationState | None,
    burst: list[Message],
    run_id: uuid.UUID,
    trigger_ids: list[str],
) -> RunResult:
    """Skipped while paused (no events), nothing sent outside the 24-hour window, otherwise a run."""
    if handoff.is_paused(conversation, state):
        return RunResult(outcome="skipped_paused")
    publish(
        "ai.run.started",
        conversation.organization_id,
        {
            "run_id": str(run_id),
            "agent_id": setup.agent_id,
            "conversation_id": str(conversation.id),
            "trigger_message_ids": trigger_ids,
        },
    )
    if not _window_open(conversation):
        return RunResult(
            outcome="window_closed", error="the 24-hour service window is closed: nothing was sent"
        )
    return _run(conversation, setup, burst, run_id)


def _marks(result: RunResult, run_id: uuid.UUID, covered: Any) -> dict[str, Any]:
    """What the conversation's state keeps of the run (the desk's badge); a skipped run covers nothing,
    so the burst is answered once the pause ends."""
    reason = result.error
    if result.handed_off is not None:
        to = result.handed_off.member_id or result.handed_off.team_id or "the unassigned queue"
        reason = reason or f"handed off to {to}"
    values: dict[str, Any] = {"last_run_id": run_id, "last_outcome": result.outcome, "last_reason": reason}
    if result.outcome != "skipped_paused":
        values["answered_through"] = covered
    return values


def _publish_finished(
    conversation: Conversation, setup: AgentSetup, result: RunResult, run_id: uuid.UUID, finished_at: str
) -> None:
    publish(
        "ai.run.finished",
        conversation.organization_id,
        {
            "run_id": str(run_id),
            "agent_id": setup.agent_id,
            "conversation_id": str(conversation.id),
            "contact_address": conversation.contact_address,
            "outcome": result.outcome,
            "model": result.model,
            "latency_ms": result.latency_ms,
            "tools": [call["name"] for call in result.tool_calls],
            "handed_off": result.handed_off.as_dict() if result.handed_off else None,
            "error": result.error,
            "finished_at": finished_at,
        },
    )


@job(retries=0)
def answer_conversation_job(organization_id: str, conversation_id: str) -> str | None:
    return answer_conversation(uuid.UUID(organization_id), uuid.UUID(conversation_id))


@job(retries=2, retry_delay=5)
def pause_on_reply_job(organization_id: str, conversation_id: str, member_id: str, message_id: str) -> bool:
    return handoff.pause_for_human_reply(uuid.UUID(organization_id), conversation_id, member_id, message_id)


# ------------------------------------------------------------------------------------------ subscribers


def _seeding_demo() -> bool:
    """Inside ``flask demo seed``: the seeded conversations are history, not live traffic (and other areas'
    demo data would change under them if the agents answered it)."""
    context = click.get_current_context(silent=True)
    return context is not None and context.command_path.split()[-2:] == ["demo", "seed"]


def on_messages_created(events: list[DomainEvent]) -> None:
    """A committed batch of messages (a webhook batch holds up to hundreds): one job sorts out which of
    its conversations an AI agent handles, instead of one answering job per incoming message. Replies
    sent by someone (pauses) are few and go one by one."""
    if _seeding_demo():
        return
    incoming: dict[str, dict[str, None]] = {}
    for event in events:
        data = event.data
        conversation_id = data.get("conversation_id")
        if not conversation_id:
            continue
        if data.get("direction") == "incoming":
            incoming.setdefault(event.organization_id, {})[str(conversation_id)] = None
        elif data.get("direction") == "outgoing" and data.get("member_id"):
            pause_on_reply_job.enqueue(
                event.organization_id, conversation_id, data["member_id"], str(data.get("id"))
            )
    for organization_id, conversation_ids in incoming.items():
        answer_batch_job.enqueue(organization_id, list(conversation_ids))


def conversations_with_ai(organization_id: uuid.UUID, conversation_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """Which of these open conversations are assigned to an AI member (one query), in the order given."""
    ai_members = select(Member.id).where(Member.organization_id == organization_id, Member.ai.is_(True))
    found = set(
        db.session.scalars(
            select(Conversation.id).where(
                Conversation.organization_id == organization_id,
                Conversation.id.in_(conversation_ids),
                Conversation.archived_at.is_(None),
                Conversation.member_id.in_(ai_members),
            )
        )
    )
    return [conversation_id for conversation_id in conversation_ids if conversation_id in found]


@job(retries=2, retry_delay=5)
def answer_batch_job(organization_id: str, conversation_ids: list[str]) -> list[str]:
    """Queue one answering job for each conversation of the batch an AI agent handles."""
    wanted = conversations_with_ai(uuid.UUID(organization_id), [uuid.UUID(c) for c in conversation_ids])
    for conversation_id in wanted:
        answer_conversation_job.enqueue(organization_id, str(conversation_id))
    return [str(conversation_id) for conversation_id in wanted]


# Assignments made by routing (an address rule naming the agent; team assignment picks people only, so
# "team" is a person's and wakes no agent): the agent answers what the customer is waiting for. A person's
# explicit assignment is not a trigger: the agent answers from the next incoming message on. Routing does
# not give an agent back a conversation it handed over (handoff.routing_declined).
ROUTED = ("routing", "team")


def on_conversation_assigned(event: DomainEvent) -> None:
    """A conversation routed to a member: when it is an AI agent, it answers what is waiting."""
    if _seeding_demo():
        return
    data = event.data
    if data.get("member_id") and data.get("conversation_id") and data.get("assigned_by") in ROUTED:
        answer_conversation_job.enqueue(event.organization_id, event.data["conversation_id"])


def states_of(
    organization_id: uuid.UUID, conversation_ids: list[uuid.UUID]
) -> dict[uuid.UUID, AiConversationState]:
    """The runtime state of several conversations (for the desk: last outcome and reason, pause), one
    query."""
    if not conversation_ids:
        return {}
    rows = db.session.scalars(
        select(AiConversationState).where(
            AiConversationState.organization_id == organization_id,
            AiConversationState.conversation_id.in_(conversation_ids),
        )
    )
    return {row.conversation_id: row for row in rows}
