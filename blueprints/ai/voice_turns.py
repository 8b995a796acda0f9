"""The voice interface of the AI runtime: an agent on a phone call, turn by turn, in text.

A voice channel (Twilio ConversationRelay, Telnyx's equivalent) transcribes what the caller says and
speaks what the agent writes. It drives one :class:`VoiceTurns` per call:

- :func:`start_session` — the call's session with the agent's stored configuration (prompt, tools,
  ``context_*``, ``call_transfers``); refused (404) for a member that is not an AI agent with one;
- ``prompt(text, last)`` — the caller said ``text``; pieces with ``last=False`` (partial prompts) are
  kept and answered with the final piece. Returns an iterator of the answer's text chunks, streamed as
  the model writes them (``provider.stream``); without a model the offline responder's whole answer is
  one chunk. Consume it on the thread that calls ``interrupt``;
- ``interrupt(said_so_far)`` — the caller spoke over the agent: the agent's last utterance in the
  transcript (and so in the model's context) becomes what was actually said (ConversationRelay's
  ``utteranceUntilInterrupt``); an answer still streaming is stopped;
- ``end()`` — the transcript (``[{speaker: caller|agent, text, at_ms}]``), the hand-off data (target,
  rule, reason) when the call should go to a person, the outcome and what each turn's run did.

Hand-offs: ``transfer_to_human`` (with a ``call_transfers`` rule: its ``target``, a phone number or a
member id, and its ``announce_message`` spoken when the model said nothing), the offline responder with
nothing relevant, or the model failing after its retries. The session does not transfer anything: the
channel ends the relay with the hand-off data and dials the target. After a hand-off further prompts
get no answer.

On a call the agent is offered only the tools that need no conversation (:data:`VOICE_TOOLS`);
``send_product``, ``create_ticket`` and ``schedule_meeting`` act on a messaging conversation. The
session writes nothing: the voice area stores the call, its transcript and runs; ``on_tool`` lets it
publish each tool call (the notifications area's ``ai.tool_called``) with the call's id.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, Protocol

from blueprints.ai import prompt, tools
from blueprints.ai.conversation import (
    AgentSetup,
    OnTool,
    RunResult,
    Turn,
    agent_setup,
    answer_offline,
    chat_messages,
    context_window,
    converse_stream,
)
from blueprints.ai.provider import ChatProvider, ProviderError, chat_provider
from core.db import utcnow
from core.errors import ApiError

VOICE_TOOLS = ("transfer_to_human", "search_knowledge")
VOICE_SERVICE = "voice"
# Added to the system prompt's end: the answer is heard, not read.
SPOKEN = (
    "## Voice\nYou are speaking with the customer on a phone call: answer in short spoken sentences, "
    "without lists, links, emoji or formatting."
)


class VoiceTurns(Protocol):
    """What a voice channel drives: the agent's side of one call."""

    def prompt(self, text: str, last: bool = True) -> Iterator[str]: ...

    def interrupt(self, said_so_far: str) -> None: ...

    def end(self) -> VoiceEnd: ...


@dataclass
class TranscriptLine:
    speaker: Literal["caller", "agent"]
    text: str
    at_ms: int  # since the session started
    interrupted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"speaker": self.speaker, "text": self.text, "at_ms": self.at_ms}


@dataclass(frozen=True)
class HandOffData:
    """Where the call goes and why: ``target`` is the rule's (an E.164 number or a member id), None when
    no rule was named (the voice area picks its default: the number's person, a team)."""

    target: str | None
    rule: str | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "rule": self.rule, "reason": self.reason}


@dataclass
class VoiceEnd:
    transcript: list[dict[str, Any]]
    handoff: HandOffData | None
    outcome: str  # handed_off, answered (the agent said something), no_answer
    runs: list[RunResult] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [call for run in self.runs for call in run.tool_calls]


def start_session(
    organization_id: uuid.UUID,
    agent_id: str,
    *,
    contact_name: str | None = None,
    on_tool: OnTool | None = None,
) -> VoiceSession:
    """A call's session with the agent's stored configuration; 404 when it is not an AI agent with one."""
    setup = agent_setup(organization_id, agent_id)
    if setup is None:
        raise ApiError(404, "No AI agent found")
    return VoiceSession(organization_id, setup, contact_name=contact_name, on_tool=on_tool)


class VoiceSession:
    """:class:`VoiceTurns` on the conversation core (``conversation.py``)."""

    def __init__(
        self,
        organization_id: uuid.UUID,
        setup: AgentSetup,
        *,
        contact_name: str | None = None,
        on_tool: OnTool | None = None,
        provider: ChatProvider | None = None,
    ) -> None:
        self.organization_id = organization_id
        # Only the tools that make sense without a messaging conversation are offered on a call.
        voice_tools = {name: value for name, value in setup.tools.items() if name in VOICE_TOOLS}
        self.setup = dataclasses.replace(setup, tools=voice_tools)
        self.contact_name = contact_name
        self.on_tool = on_tool
        self.provider = provider if provider is not None else chat_provider()
        self.started = utcnow()
        self._clock = time.perf_counter()
        self.transcript: list[TranscriptLine] = []
        self.runs: list[RunResult] = []
        self.handoff: HandOffData | None = None
        self._partial: list[str] = []
        self._speaking: Iterator[str] | None = None
        self._ended = False

    # ---------------------------------------------------------------------------------- the interface

    def prompt(self, text: str, last: bool = True) -> Iterator[str]:
        if self._ended or self.handoff is not None:
            return iter(())  # the call is going to a person, or over: nobody answers any more
        if text.strip():
            self._partial.append(text.strip())
        if not last or not self._partial:
            return iter(())
        question = " ".join(self._partial)
        self._partial = []
        self._stop_speaking()
        self.transcript.append(TranscriptLine("caller", question, self._now_ms()))
        self._speaking = self._answer(question)
        return self._speaking

    def interrupt(self, said_so_far: str) -> None:
        self._stop_speaking()
        line = next((line for line in reversed(self.transcript) if line.speaker == "agent"), None)
        if line is None:
            return
        said = said_so_far.strip()
        if said:
            line.text, line.interrupted = said, True
        else:
            self.transcript.remove(line)  # the caller heard none of it

    def end(self) -> VoiceEnd:
        self._stop_speaking()
        self._ended = True
        spoke = any(line.speaker == "agent" for line in self.transcript)
        outcome = "handed_off" if self.handoff else "answered" if spoke else "no_answer"
        return VoiceEnd([line.as_dict() for line in self.transcript], self.handoff, outcome, list(self.runs))

    # ------------------------------------------------------------------------------------- answering

    def _answer(self, question: str) -> Iterator[str]:
        result = RunResult(outcome="no_answer")
        self.runs.append(result)  # recorded at once: an interrupted answer's run still counts
        line = TranscriptLine("agent", "", self._now_ms())
        pieces = self._offline(question, result) if self.provider is None else self._model(question, result)
        for piece in pieces:
            if not line.text:
                self.transcript.append(line)
            line.text += piece
            yield piece
        line.text = line.text.strip()

    def _offline(self, question: str, result: RunResult) -> Iterator[str]:
        """The offline responder: the knowledge's best passage as one chunk, or a hand-off."""
        offline = answer_offline(self.organization_id, self.setup, question)
        _copy(offline, result)
        if offline.outcome == "handed_off":
            self.handoff = HandOffData(None, None, f"No answer in the knowledge base for: {question[:500]}")
        yield from offline.answer

    def _model(self, question: str, result: RunResult) -> Iterator[str]:
        assert self.provider is not None
        context = tools.ToolContext(
            organization_id=self.organization_id,
            agent_id=self.setup.agent_id,
            sections=self.setup.sections,
            call_transfers=self.setup.call_transfers,
            enabled=self.setup.enabled,
            conversation=None,
            dry_run=False,
            on_transfer=self._transfer,
        )
        messages = self._messages(question)
        try:
            yield from converse_stream(
                self.provider, self.setup, messages, context, result, on_tool=self.on_tool
            )
        except ProviderError as error:
            result.outcome = "failed_handed_off"
            result.error = f"model {error.reason}: {error.detail}"[:2000]
            self.handoff = self.handoff or HandOffData(
                None, None, f"The language model failed ({error.reason})"
            )
            return
        if result.outcome == "no_answer" and self.handoff is None:
            # Rounds of tools without words (as on messaging): a person takes the call.
            self.handoff = HandOffData(None, None, f"The AI agent found no answer for: {question[:500]}")
            result.outcome = "handed_off"

    def _transfer(self, rule: dict[str, Any] | None, note: str) -> dict[str, Any]:
        """``transfer_to_human`` on a call: the hand-off data the relay ends with (what the model sees)."""
        target = str(rule["target"]) if rule and rule.get("target") else None
        self.handoff = HandOffData(target, str(rule.get("name")) if rule else None, note)
        return self.handoff.as_dict()

    def _messages(self, question: str) -> list[dict[str, Any]]:
        """The core's messages: the call so far (the caller's turns and what the agent actually said)
        within the context window, then the question; the system prompt ends with :data:`SPOKEN`."""
        earlier = [
            Turn(
                "customer" if line.speaker == "caller" else "agent",
                line.text,
                self.started + timedelta(milliseconds=line.at_ms),
            )
            for line in self.transcript[:-1]  # the last line is this question
        ]
        now = utcnow()
        facts = prompt.ConversationFacts(VOICE_SERVICE, self.contact_name, now)
        context = context_window(earlier, self.setup.chat, now)
        messages = chat_messages(self.setup, facts, context, [Turn("customer", question, now)])
        messages[0]["content"] = f"{messages[0]['content']}\n\n{SPOKEN}"
        return messages

    # --------------------------------------------------------------------------------------- helpers

    def _now_ms(self) -> int:
        return int((time.perf_counter() - self._clock) * 1000)

    def _stop_speaking(self) -> None:
        """Close an answer still streaming (its HTTP stream to the model is closed with it)."""
        speaking, self._speaking = self._speaking, None
        close: Callable[[], None] | None = getattr(speaking, "close", None)
        if close is not None:
            close()


def _copy(source: RunResult, target: RunResult) -> None:
    for item in dataclasses.fields(RunResult):
        setattr(target, item.name, getattr(source, item.name))
