"""The runtime: an AI agent answering the conversations assigned to it.

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

**A run**: the prompt (``prompt.py``, documented order), the enabled tools (``tools.py``), the model
(``provider.py``; offline responder without one), up to :data:`MAX_ROUNDS` rounds of tool calls, then the
answer through ``messaging.sending.send_message`` as the agent (``member_id``), split per
``split_long_messages`` (``splitting.py``). Every run is stored in ``ai_runs`` with its outcome.
Outcomes: ``answered``, ``handed_off``, ``failed_handed_off`` (the model failed after its retries: the
conversation goes to people with a note, the customer's messages stay in it unanswered), ``window_closed``
(nothing sent), ``skipped_paused``, ``send_failed``, ``no_answer``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import click
from flask import current_app, has_app_context
from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from blueprints.ai import handoff, offline, prompt, splitting, tools
from blueprints.ai.models import AiConversationState, AiRun
from blueprints.ai.provider import ChatProvider, Completion, ProviderError, chat_provider
from blueprints.members.models import Member
from blueprints.members.services import agents
from blueprints.members.services.members import find_member
from blueprints.messaging.models import Contact, Conversation, Message
from blueprints.messaging.sending import SERVICE_WINDOW, Content, send_message
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.events import DomainEvent, publish
from core.jobs import job

MAX_ROUNDS = 4
MAX_BURST = 20
DEFAULT_LEASE_SECONDS = 300


def _lease_seconds() -> int:
    value = current_app.config.get("AI_LEASE_SECONDS") if has_app_context() else None
    return int(value if value is not None else os.environ.get("AI_LEASE_SECONDS") or DEFAULT_LEASE_SECONDS)


# ----------------------------------------------------------------------------------------- the agent


@dataclass(frozen=True)
class AgentSetup:
    """What a run needs of an agent's configuration (stored, or an unsaved one in the playground)."""

    agent_id: str
    sections: dict[str, Any]
    tools: dict[str, Any]
    call_transfers: list[dict[str, Any]]
    version: int | None

    @property
    def chat(self) -> dict[str, Any]:
        return prompt.chat_parameters(self.sections)

    @property
    def enabled(self) -> list[str]:
        return tools.enabled_tools(self.tools)


def agent_setup(organization_id: uuid.UUID, agent_id: str | None) -> AgentSetup | None:
    """The AI member's configuration, or None (not an AI member, or no configuration)."""
    if not agent_id:
        return None
    member = find_member(organization_id, agent_id)
    if member is None or not member.ai:
        return None
    try:
        config = agents.get_config(organization_id, agent_id)
    except ApiError:
        return None
    return AgentSetup(
        agent_id=agent_id,
        sections=dict(config.sections or {}),
        tools=dict(config.tools or {}),
        call_transfers=list(config.call_transfers or []),
        version=config.version,
    )


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
    """``context_messages`` messages before the burst, within ``context_days``; none for 0 messages."""
    count = int(chat.get("context_messages") or 0)
    if count <= 0:
        return []
    cutoff = utcnow() - timedelta(days=int(chat.get("context_days") or 7))
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


def _as_chat(message: Message) -> dict[str, Any]:
    role = "user" if message.direction == "incoming" else "assistant"
    return {"role": role, "content": prompt.message_text(message.content, message.template)}


# ---------------------------------------------------------------------------------------------- a run


@dataclass
class RunResult:
    outcome: str
    answer: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    prompt_chars: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    rounds: int = 0
    latency_ms: int = 0
    error: str | None = None
    handed_off: handoff.HandOff | None = None
    sent_ids: list[str] = field(default_factory=list)


def _add_tokens(result: RunResult, completion: Completion) -> None:
    if completion.prompt_tokens is not None:
        result.prompt_tokens = (result.prompt_tokens or 0) + completion.prompt_tokens
    if completion.completion_tokens is not None:
        result.completion_tokens = (result.completion_tokens or 0) + completion.completion_tokens


def converse(
    provider: ChatProvider,
    setup: AgentSetup,
    messages: list[dict[str, Any]],
    context: tools.ToolContext,
    *,
    on_tool: Any = None,
    result: RunResult | None = None,
) -> RunResult:
    """The model with tools, up to :data:`MAX_ROUNDS` rounds. Raises ProviderError when the model fails."""
    definitions = tools.definitions(setup.enabled, setup.call_transfers)
    # The caller may pass its own result: what ran before a failure (tool calls, tokens) stays recorded.
    result = result or RunResult(outcome="no_answer")
    result.outcome, result.model = "no_answer", provider.model
    result.prompt_chars = prompt.prompt_chars(messages)
    started = time.perf_counter()
    text: str | None = None
    try:
        for _ in range(MAX_ROUNDS):
            completion = provider.complete(
                messages, tools=definitions or None, temperature=float(setup.chat["temperature"])
            )
            result.rounds += 1
            result.model = completion.model
            _add_tokens(result, completion)
            if not completion.tool_calls:
                text = completion.text
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": completion.text,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": call.invalid_arguments or json.dumps(call.arguments),
                            },
                        }
                        for call in completion.tool_calls
                    ],
                }
            )
            for call in completion.tool_calls:
                outcome = tools.execute(context, call.name, call.arguments, call.invalid_arguments)
                recorded = {"name": call.name, "arguments": call.arguments, "result": outcome}
                result.tool_calls.append(recorded)
                if on_tool is not None:
                    on_tool(recorded)
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(outcome, default=str)}
                )
            if context.handed_off is not None or (context.dry_run and _would_transfer(result)):
                # People take over: the model's words of this round (or the rule's announcement) close it.
                text = completion.text or _announcement(setup, result)
                break
    finally:
        result.latency_ms = int((time.perf_counter() - started) * 1000)
    result.handed_off = context.handed_off
    result.answer = [text.strip()] if text and text.strip() else []
    if context.handed_off is not None or _would_transfer(result):
        result.outcome = "handed_off"
    elif result.answer or context.sent:
        result.outcome = "answered"
    return result


def _would_transfer(result: RunResult) -> bool:
    return any(
        call["name"] == "transfer_to_human" and "error" not in call["result"] for call in result.tool_calls
    )


def _announcement(setup: AgentSetup, result: RunResult) -> str | None:
    for call in reversed(result.tool_calls):
        if call["name"] == "transfer_to_human":
            rule = next(
                (r for r in setup.call_transfers if r.get("name") == call["arguments"].get("rule")), None
            )
            if rule and rule.get("announce_message"):
                return str(rule["announce_message"])
    return None


def _window_open(conversation: Conversation) -> bool:
    last = conversation.last_incoming_at
    return last is not None and utcnow() - last < SERVICE_WINDOW


def _contact_name(conversation: Conversation) -> str | None:
    return db.session.scalar(select(Contact.name).where(Contact.id == conversation.contact_id))


def _run_on_conversation(
    conversation: Conversation, setup: AgentSetup, burst: list[Message], run_id: uuid.UUID
) -> RunResult:
    sent_ids: list[str] = []
    result = _run(conversation, setup, burst, run_id, sent_ids)
    result.sent_ids = sent_ids
    return result


def _run(
    conversation: Conversation,
    setup: AgentSetup,
    burst: list[Message],
    run_id: uuid.UUID,
    sent_ids: list[str],
) -> RunResult:
    organization_id = conversation.organization_id
    chat = setup.chat

    def send(content: Content) -> Message | None:
        message = send_message(
            organization_id,
            organization_address=conversation.organization_address,
            service=conversation.service,
            contact_address=conversation.contact_address,
            content=content,
            member_id=setup.agent_id,
        )
        sent_ids.append(str(message.id))
        return message

    def tool_called(call: dict[str, Any]) -> None:
        publish(
            "ai.tool_called",
            organization_id,
            {
                "agent_id": setup.agent_id,
                "conversation_id": str(conversation.id),
                "contact_address": conversation.contact_address,
                "tool": call["name"],
                "arguments": call["arguments"],
                "result": call["result"],
                "run_id": str(run_id),
            },
        )

    context = tools.ToolContext(
        organization_id=organization_id,
        agent_id=setup.agent_id,
        sections=setup.sections,
        call_transfers=setup.call_transfers,
        enabled=setup.enabled,
        conversation=conversation,
        dry_run=False,
        send=send,
    )
    question = "\n".join(prompt.message_text(m.content, m.template) for m in burst)
    provider = chat_provider()
    if provider is None:
        answer = offline.respond(organization_id, setup.agent_id, setup.sections, question)
        result = RunResult(
            outcome="answered", model=offline.OFFLINE_MODEL, tool_calls=[answer.tool_call(question)]
        )
        result.prompt_chars = len(question)
        if answer.small_talk:
            # "gracias", "hola": nothing to look up and nothing for a person to do either
            result.outcome = "no_answer"
            return result
        if answer.text is None:
            result.handed_off = handoff.hand_off(
                conversation,
                setup.agent_id,
                f"No answer in the knowledge base for: {question[:500]}",
                rule=None,
                reason="transfer_to_human",
            )
            result.outcome = "handed_off"
            return result
        result.answer = [answer.text]
    else:
        facts = prompt.ConversationFacts(conversation.service, _contact_name(conversation), utcnow())
        system = prompt.system_prompt(setup.sections, setup.enabled, setup.call_transfers, facts)
        messages = [
            {"role": "system", "content": system},
            *(_as_chat(m) for m in history(conversation, burst, chat)),
            *(_as_chat(m) for m in burst),
        ]
        result = RunResult(outcome="no_answer")
        try:
            result = converse(provider, setup, messages, context, on_tool=tool_called, result=result)
        except ProviderError as error:
            result.outcome = "failed_handed_off"
            result.error = f"model {error.reason}: {error.detail}"[:2000]
            result.answer = []
            if context.handed_off is None:
                context.handed_off = handoff.hand_off(
                    conversation,
                    setup.agent_id,
                    f"The language model failed ({error.reason}); the customer's messages are waiting "
                    f"for an answer: {question[:500]}",
                    rule=None,
                    reason="failed",
                )
            result.handed_off = context.handed_off
            return result
        if result.outcome == "no_answer" and context.handed_off is None:
            result.handed_off = handoff.hand_off(
                conversation,
                setup.agent_id,
                f"The AI agent found no answer for: {question[:500]}",
                rule=None,
                reason="transfer_to_human",
            )
            result.outcome = "handed_off"
    parts = [
        p
        for text in result.answer
        for p in splitting.answer_parts(text, conversation.service, bool(chat.get("split_long_messages")))
    ]
    result.answer = parts
    if not parts:
        return result
    if not _window_open(conversation):
        result.outcome = "window_closed" if result.outcome == "answered" else result.outcome
        result.error = "the 24-hour service window is closed: nothing was sent"
        return result
    for part in parts:
        try:
            send(Content(kind="text", text=part))
        except ApiError as exc:
            result.outcome = "send_failed" if _window_open(conversation) else "window_closed"
            result.error = exc.message
            break
    return result


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
    organization_id = conversation.organization_id
    conversation_id = conversation.id
    db.session.refresh(conversation)
    state = _state(conversation)
    burst = pending_messages(conversation, state, setup.agent_id)
    current = agent_setup(organization_id, conversation.member_id)
    if not burst or current is None or current.agent_id != setup.agent_id:
        return None, _finish(conversation_id, token, {})
    covered = max(m.created_at for m in burst)
    run_id = uuid.uuid4()
    trigger_ids = [str(m.id) for m in burst]
    started = utcnow()
    if handoff.is_paused(conversation, state):
        result = RunResult(outcome="skipped_paused")
    else:
        publish(
            "ai.run.started",
            organization_id,
            {
                "run_id": str(run_id),
                "agent_id": setup.agent_id,
                "conversation_id": str(conversation_id),
                "trigger_message_ids": trigger_ids,
            },
        )
        if not _window_open(conversation):
            result = RunResult(
                outcome="window_closed", error="the 24-hour service window is closed: nothing was sent"
            )
        else:
            result = _run_on_conversation(conversation, setup, burst, run_id)
    run = AiRun(
        id=run_id,
        organization_id=organization_id,
        agent_id=setup.agent_id,
        conversation_id=conversation_id,
        trigger_message_ids=trigger_ids,
        config_version=setup.version,
        model=result.model,
        prompt_chars=result.prompt_chars,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        rounds=result.rounds,
        latency_ms=result.latency_ms,
        tool_calls=result.tool_calls,
        answer=result.answer,
        sent_message_ids=result.sent_ids,
        outcome=result.outcome,
        error=result.error,
        started_at=started,
        finished_at=utcnow(),
    )
    db.session.add(run)
    db.session.flush()
    reason = result.error
    if result.handed_off is not None:
        to = result.handed_off.member_id or result.handed_off.team_id or "the unassigned queue"
        reason = reason or f"handed off to {to}"
    values: dict[str, Any] = {"last_run_id": run_id, "last_outcome": result.outcome, "last_reason": reason}
    if result.outcome != "skipped_paused":
        values["answered_through"] = covered
    rerun = _finish(conversation_id, token, values)
    if result.outcome != "skipped_paused":
        publish(
            "ai.run.finished",
            organization_id,
            {
                "run_id": str(run_id),
                "agent_id": setup.agent_id,
                "conversation_id": str(conversation_id),
                "contact_address": conversation.contact_address,
                "outcome": result.outcome,
                "model": result.model,
                "latency_ms": result.latency_ms,
                "tools": [call["name"] for call in result.tool_calls],
                "handed_off": result.handed_off.as_dict() if result.handed_off else None,
                "error": result.error,
                "finished_at": isoformat(run.finished_at),
            },
        )
    return result.outcome, rerun


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
