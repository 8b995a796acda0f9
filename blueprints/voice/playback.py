"""The simulator's inbound calls: a scripted caller over the very relay Twilio talks to (docs/voice.md,
"Simulated inbound calls").

A simulator number (and every number in the sandbox) has no carrier to call our webhook or open the
WebSocket, so :func:`play_inbound` does both sides itself: it records the inbound call as the incoming
webhook does (same routing, same row) and runs :class:`blueprints.voice.relay.Relay` on an in-memory
socket (:class:`ScriptedCaller`) that sends ConversationRelay's frames — ``setup``, then one ``prompt``
per scripted utterance, each after the previous answer — and hangs up at the end. Everything after is
the real path: the AI session, the transcript per turn, the transfer, the summary job and the
``end_of_call`` notifications. Offline (no model configured) the agent answers from its knowledge."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from simple_websocket import ConnectionClosed

from blueprints.voice.models import Call, VoiceNumber
from blueprints.voice.registry import uses_simulator
from blueprints.voice.relay import Relay
from blueprints.voice.services import inbound
from blueprints.voice.services.calls import number_of
from core import uow
from core.tenancy import find_for_org

MAX_SCRIPT_LINES = 50


@dataclass
class ScriptedCaller:
    """The carrier's side of a relay, in memory: the frames it will send, and those it received."""

    frames: list[dict[str, Any]]
    received: list[dict[str, Any]] = field(default_factory=list)
    mode: str = "simulator"

    def receive(self, timeout: float | None = None) -> str | None:
        if timeout == 0:
            return None  # a polling read while the agent speaks: this caller never talks over it
        if not self.frames:
            raise ConnectionClosed()  # the script is over: the caller hangs up
        return json.dumps(self.frames.pop(0))

    def send(self, data: str) -> None:
        frame = json.loads(data)
        self.received.append(frame)
        if frame.get("type") == "end":
            self.frames.clear()  # the relay is over: the carrier dials the transfer

    def close(self) -> None:
        self.frames.clear()

    def answers(self) -> list[str]:
        """The agent's answers, one text per turn (the ``text`` tokens up to each ``last``)."""
        answers, current = [], ""
        for frame in self.received:
            if frame.get("type") != "text":
                continue
            if frame.get("last"):
                answers.append(current)
                current = ""
            else:
                current += str(frame.get("token") or "")
        return answers


@dataclass(frozen=True)
class Played:
    call_id: uuid.UUID
    twiml: str
    answers: list[str]
    handoff_data: dict[str, Any] | None


def play_inbound(number: VoiceNumber, caller: str, utterances: list[str]) -> Played:
    """A simulated call from ``caller`` to ``number`` saying ``utterances``, answered as the number's
    routing says. Only for numbers on the simulator (the sandbox's, or ``provider: simulator``)."""
    if not uses_simulator(number):
        raise ValueError("only a simulator number (or any number in the sandbox) plays simulated calls")
    route = inbound.route_of(number)
    call = inbound.record_inbound(
        number,
        provider_call_id=f"SIM{uuid.uuid4().hex}",
        caller=caller,
        route=route,
        provider="simulator",
    )
    twiml = inbound.answer(number, call, route)
    call_id = call.id
    uow.commit()  # the call exists before its relay starts, as after Twilio's webhook
    if "<ConversationRelay" not in twiml:
        return Played(call_id, twiml, [], None)
    answers, handoff = play(call, number, utterances)
    return Played(call_id, twiml, answers, handoff)


def play(call: Call, number: VoiceNumber, utterances: list[str]) -> tuple[list[str], dict[str, Any] | None]:
    """Run the relay of an AI agent's ``call`` (inbound, or an outbound one just answered) with a caller
    saying ``utterances``, then apply the action URL's answer. The agent's answers and the hand-off."""
    call_id, agent_id = call.id, call.agent_id
    assert agent_id is not None
    script = [_setup(call, number)] + [
        {"type": "prompt", "voicePrompt": text, "lang": inbound.DEFAULT_LANGUAGE, "last": True}
        for text in utterances
        if text.strip()
    ]
    socket = ScriptedCaller(script)
    Relay(socket, number.organization_id, call_id, agent_id).run()
    end = next((frame for frame in socket.received if frame.get("type") == "end"), None)
    handoff = json.loads(end["handoffData"]) if end and end.get("handoffData") else None
    # What the carrier does next: ask the <Connect action> URL (a <Dial> is where the simulation stops:
    # no person's phone rings offline, so a dialled call stays in progress like a real one would).
    ended = find_for_org(Call, call_id, number.organization_id)
    if ended is not None:
        inbound.after_relay(ended, number)
    return socket.answers(), handoff


def script_of(call: Call) -> list[str]:
    """``metadata.script`` of an AI agent's call: what the simulated person says once they answer."""
    script = (call.call_metadata or {}).get("script")
    if not isinstance(script, list):
        return []
    return [str(line)[:2000] for line in script[:MAX_SCRIPT_LINES] if isinstance(line, str) and line.strip()]


def play_answered(call: Call) -> None:
    """The simulator's hook when an AI agent's call is answered: a ``metadata.script`` is said over the
    agent's relay, then the person hangs up; without one the call just goes on (its lifecycle ends it)."""
    script = script_of(call)
    number = number_of(call)
    if script and number is not None:
        play(call, number, script)


def _setup(call: Call, number: VoiceNumber) -> dict[str, Any]:
    return {
        "type": "setup",
        "sessionId": f"VX{uuid.uuid4().hex}",
        "callSid": call.provider_call_id,
        "from": call.from_number,
        "to": call.to_number,
        "direction": "inbound" if call.direction == "inbound" else "outbound-api",
        "callStatus": "RINGING" if call.direction == "inbound" else "IN-PROGRESS",
        "customParameters": {"call_id": str(call.id)},
    }
