"""The conversation core: one AI agent's brain, whatever the channel.

It knows the agent's configuration (:class:`AgentSetup`), turns (:class:`Turn`: who spoke, what, when),
the context window (``context_messages`` / ``context_days``), the prompt (``prompt.py``), the model
(``provider.py``; the offline responder without one), the tools and their execution (``tools.py``), the
hand-off decision and the run record (``ai_runs``). It knows nothing of how turns arrive or answers
leave: the channel adapters do that.

- ``runtime.py`` is the messaging adapter: stored messages in, messages sent out, the conversation's
  lease, bursts and pauses;
- ``voice_turns.py`` is the voice interface: a call's transcribed turns in, the answer streamed out as
  text, hand-off data for the call's end.

Public API: :class:`AgentSetup`, :func:`agent_setup`, :class:`Turn`, :func:`window_limits`,
:func:`context_window`, :func:`chat_messages`, :class:`RunResult`, :func:`converse` (the whole answer),
:func:`converse_stream` (the answer's text as it comes), :func:`answer_offline`, :func:`record_run`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from blueprints.ai import handoff, offline, prompt, tools
from blueprints.ai.models import AiRun
from blueprints.ai.provider import ChatProvider, Completion, ToolCall
from blueprints.members.services import agents
from blueprints.members.services.members import find_member
from core.db import db, utcnow
from core.errors import ApiError

MAX_ROUNDS = 4

# ----------------------------------------------------------------------------------------- the agent


@dataclass(frozen=True)
class AgentSetup:
    """What a run needs of an agent's configuration (stored, or an unsaved one in the playground)."""

    agent_id: str
    sections: dict[str, Any]
    tools: dict[str, Any]
    call_transfers: list[dict[str, Any]]
    version: int | None
    # the text sections' order for the prompt ([]: the default order)
    section_order: list[str] = field(default_factory=list)

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
        section_order=list(config.section_order or []),
    )


# ----------------------------------------------------------------------------------------- the turns


@dataclass(frozen=True)
class Turn:
    """One thing said: by the customer (a message, a caller's words) or by the agent's side (the agent, a
    person, a template). ``at`` is when it was said; None for a sample without times."""

    speaker: Literal["customer", "agent"]
    text: str
    at: datetime | None = None

    def as_chat(self) -> dict[str, str]:
        return {"role": "user" if self.speaker == "customer" else "assistant", "content": self.text}


def window_limits(chat: dict[str, Any], now: datetime) -> tuple[int, datetime]:
    """(how many earlier turns, since when) go with a question: ``context_messages`` (0: none) within
    ``context_days`` (7 when unset). The messaging adapter turns them into its query's LIMIT and WHERE."""
    count = max(int(chat.get("context_messages") or 0), 0)
    return count, now - timedelta(days=int(chat.get("context_days") or 7))


def context_window(earlier: list[Turn], chat: dict[str, Any], now: datetime) -> list[Turn]:
    """The context of a question from the turns before it (oldest first), by :func:`window_limits`; a
    turn without a time is kept (a sample, or a call's own turns)."""
    count, cutoff = window_limits(chat, now)
    if count <= 0:
        return []
    recent = [turn for turn in earlier if turn.at is None or turn.at >= cutoff]
    return recent[-count:]


def chat_messages(
    setup: AgentSetup, facts: prompt.ConversationFacts, context: list[Turn], question: list[Turn]
) -> list[dict[str, Any]]:
    """The model's messages: the system prompt (``prompt.py``'s documented order), the context, then
    the turns being answered."""
    system = prompt.system_prompt(
        setup.sections, setup.enabled, setup.call_transfers, facts, setup.section_order
    )
    return [{"role": "system", "content": system}, *(t.as_chat() for t in [*context, *question])]


# ------------------------------------------------------------------------------------------- a run


@dataclass
class RunResult:
    """What a run did. ``handed_off`` is messaging's hand-off (the conversation reassigned);
    ``transfer`` is a channel's own hand-off data (voice: target and reason for the call's end)."""

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
    transfer: dict[str, Any] | None = None


OnTool = Callable[[dict[str, Any]], None]


def _add_tokens(result: RunResult, completion: Completion) -> None:
    if completion.prompt_tokens is not None:
        result.prompt_tokens = (result.prompt_tokens or 0) + completion.prompt_tokens
    if completion.completion_tokens is not None:
        result.completion_tokens = (result.completion_tokens or 0) + completion.completion_tokens


def _begin(provider: ChatProvider, messages: list[dict[str, Any]], result: RunResult | None) -> RunResult:
    # The caller may pass its own result: what ran before a failure (tool calls, tokens) stays recorded.
    result = result or RunResult(outcome="no_answer")
    result.outcome, result.model = "no_answer", provider.model
    result.prompt_chars = prompt.prompt_chars(messages)
    return result


def _take(result: RunResult, completion: Completion) -> None:
    result.rounds += 1
    result.model = completion.model
    _add_tokens(result, completion)


def _run_tools(
    calls: list[ToolCall],
    text: str | None,
    messages: list[dict[str, Any]],
    context: tools.ToolContext,
    result: RunResult,
    on_tool: OnTool | None,
) -> None:
    """Execute one round's tool calls; the model's request and each result join the messages so the
    next round sees them (OpenAI's ``tool_calls`` / ``tool`` roles)."""
    messages.append(
        {
            "role": "assistant",
            "content": text,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.invalid_arguments or json.dumps(call.arguments),
                    },
                }
                for call in calls
            ],
        }
    )
    for call in calls:
        outcome = tools.execute(context, call.name, call.arguments, call.invalid_arguments)
        recorded = {"name": call.name, "arguments": call.arguments, "result": outcome}
        result.tool_calls.append(recorded)
        if on_tool is not None:
            on_tool(recorded)
        messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps(outcome, default=str)}
        )


def _transferring(context: tools.ToolContext, result: RunResult) -> bool:
    """People take over after this round: a hand-off happened (messaging), a channel took hand-off data
    (voice), or a dry run's transfer would have happened."""
    return (
        context.handed_off is not None
        or context.transfer is not None
        or (context.dry_run and _would_transfer(result))
    )


def _settle(result: RunResult, context: tools.ToolContext, text: str | None) -> RunResult:
    """The outcome from what the rounds produced."""
    result.handed_off = context.handed_off
    result.transfer = context.transfer
    result.answer = [text.strip()] if text and text.strip() else []
    if context.handed_off is not None or context.transfer is not None or _would_transfer(result):
        result.outcome = "handed_off"
    elif result.answer or context.sent:
        result.outcome = "answered"
    return result


def converse(
    provider: ChatProvider,
    setup: AgentSetup,
    messages: list[dict[str, Any]],
    context: tools.ToolContext,
    *,
    on_tool: OnTool | None = None,
    result: RunResult | None = None,
) -> RunResult:
    """The model with tools, up to :data:`MAX_ROUNDS` rounds; the last round's text is the answer.
    Raises ProviderError when the model fails."""
    definitions = tools.definitions(setup.enabled, setup.call_transfers) or None
    result = _begin(provider, messages, result)
    started = time.perf_counter()
    text: str | None = None
    try:
        for _ in range(MAX_ROUNDS):
            completion = provider.complete(
                messages, tools=definitions, temperature=float(setup.chat["temperature"])
            )
            _take(result, completion)
            if not completion.tool_calls:
                text = completion.text
                break
            _run_tools(completion.tool_calls, completion.text, messages, context, result, on_tool)
            if _transferring(context, result):
                # People take over: the model's words of this round (or the rule's announcement) close it.
                text = completion.text or _announcement(setup, result)
                break
    finally:
        result.latency_ms = int((time.perf_counter() - started) * 1000)
    return _settle(result, context, text)


def converse_stream(
    provider: ChatProvider,
    setup: AgentSetup,
    messages: list[dict[str, Any]],
    context: tools.ToolContext,
    result: RunResult,
    *,
    on_tool: OnTool | None = None,
) -> Iterator[str]:
    """:func:`converse` with the answer's text yielded as the model streams it (``provider.stream``).
    Text the model says in a round that also calls tools ("let me check") is yielded too: on a call it
    is spoken while the tools run. ``result`` is filled as it goes and settled at the end; a rule's
    announcement is yielded when a transfer round had no words. Raises ProviderError."""
    definitions = tools.definitions(setup.enabled, setup.call_transfers) or None
    _begin(provider, messages, result)
    started = time.perf_counter()
    spoken: list[str] = []
    try:
        for _ in range(MAX_ROUNDS):
            completion: Completion | None = None
            for piece in provider.stream(
                messages, tools=definitions, temperature=float(setup.chat["temperature"])
            ):
                if isinstance(piece, str):
                    spoken.append(piece)
                    yield piece
                else:
                    completion = piece
            assert completion is not None  # stream() always ends with the assembled completion
            _take(result, completion)
            if not completion.tool_calls:
                break
            _run_tools(completion.tool_calls, completion.text, messages, context, result, on_tool)
            if _transferring(context, result):
                if not completion.text and (announcement := _announcement(setup, result)):
                    spoken.append(announcement)
                    yield announcement
                break
    finally:
        result.latency_ms = int((time.perf_counter() - started) * 1000)
    _settle(result, context, "".join(spoken))


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


# ------------------------------------------------------------------------------ without a model


def answer_offline(organization_id: uuid.UUID, setup: AgentSetup, question: str) -> RunResult:
    """The offline responder's run: ``answered`` with the knowledge's best passage, ``no_answer`` for
    small talk, or ``handed_off`` with nothing relevant — the hand-off itself is the channel's to do
    (``handed_off`` and ``transfer`` are left empty here)."""
    answer = offline.respond(organization_id, setup.agent_id, setup.sections, question)
    result = RunResult(
        outcome="answered", model=offline.OFFLINE_MODEL, tool_calls=[answer.tool_call(question)]
    )
    result.prompt_chars = len(question)
    if answer.small_talk:
        # "gracias", "hola": nothing to look up and nothing for a person to do either
        result.outcome = "no_answer"
    elif answer.text is None:
        result.outcome = "handed_off"
    else:
        result.answer = [answer.text]
    return result


# -------------------------------------------------------------------------------- the run record


def record_run(
    organization_id: uuid.UUID,
    setup: AgentSetup,
    result: RunResult,
    *,
    run_id: uuid.UUID,
    conversation_id: uuid.UUID | None,
    trigger_ids: list[str],
    started: datetime,
) -> AiRun:
    """The run in ``ai_runs`` (flushed, not committed: the caller's unit of work commits it)."""
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
    return run
