"""``/voice/relay``: the ConversationRelay WebSocket, where an AI agent answers a call in text
(docs/voice.md, "AI agents on calls").

Twilio (or Telnyx, same message names) transcribes the caller and speaks what we write. One WebSocket per
call, JSON text frames:

- in: ``setup`` (``callSid``, ``from``, ``to``, ``direction``, ``customParameters``), ``prompt``
  (``voicePrompt``, ``lang``, ``last``), ``dtmf`` (``digit``), ``interrupt`` (``utteranceUntilInterrupt``,
  ``durationUntilInterruptMs``), ``error`` (``description``);
- out: ``text`` (``token``, ``last``) streaming the agent's answer, and ``end`` (``handoffData``, a JSON
  string) when the agent hands the call to a person.

Flask-SocketIO's server speaks Socket.IO, not plain WebSockets, so the handshake is taken over by
``simple-websocket`` (already the Socket.IO transport's library) on the same WSGI server: werkzeug's in
development and tests, gunicorn's threads in production. The handshake is accepted only with the token
the call's TwiML carried (``services/inbound.relay_token``: signed, five minutes, for a call still live).

Each prompt is one turn of ``blueprints/ai/voice_turns.py``; the answer's pieces are sent as they come,
and between pieces the socket is polled so an ``interrupt`` stops the answer at once (the session wants
``interrupt`` on the thread that consumes the answer). Each turn is one unit of work: the transcript is
stored and committed after it, so ``call.updated`` reaches the desk as the call goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import Iterator
from typing import Any, Protocol

from flask import Blueprint, Response, request
from simple_websocket import ConnectionClosed, Server
from sqlalchemy import or_, select, update

from blueprints.ai.voice_turns import VoiceEnd, VoiceSession, start_session
from blueprints.voice import lifecycle
from blueprints.voice.models import TERMINAL, Call
from blueprints.voice.services import endings, inbound
from core import uow
from core.db import db, utcnow
from core.errors import ApiError
from core.events import publish

log = logging.getLogger(__name__)

relay = Blueprint("voice_relay", __name__)

# A frame bigger than this is not a transcript line (Twilio's are a few hundred bytes).
MAX_FRAME_BYTES = 64 * 1024
# How long the relay waits for Twilio's next frame before it gives up on a silent socket (a call whose
# carrier vanished must not hold a server thread and a session for ever).
IDLE_SECONDS = 15 * 60
MAX_ERRORS_KEPT = 20


# websocket=True: werkzeug's router matches this rule only for a WebSocket handshake (a plain GET is 400).
@relay.route(inbound.RELAY_PATH, websocket=True)
def relay_socket() -> Response:
    call = inbound.call_of_token(request.args.get("token", ""))
    if call is None or call.agent_id is None:
        raise ApiError(403, "Invalid or expired relay token")
    organization_id, call_id, agent_id = call.organization_id, call.id, call.agent_id
    uow.commit()  # nothing to write: the read's transaction is closed before a call of many minutes
    ws = Server.accept(request.environ, max_message_size=MAX_FRAME_BYTES)
    try:
        Relay(ws, organization_id, call_id, agent_id).run()
    except ConnectionClosed:
        pass
    except Exception:
        # The connection is a WebSocket now: an HTTP error answer cannot be written on it. The carrier
        # sees the socket close, ends the session and calls the action URL, which ends the call.
        log.exception("relay of call %s failed", call_id)
    finally:
        with contextlib.suppress(Exception):  # already closed by the other side
            ws.close()
    return _closed_response(ws)


def _closed_response(ws: Server) -> Response:
    """What the view returns once the socket is done: the WSGI server must not write an HTTP answer
    on a connection that became a WebSocket (flask-sock's approach, for the servers we run on)."""

    class WebSocketResponse(Response):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            if ws.mode == "werkzeug":
                raise ConnectionError()  # werkzeug's server drops the connection quietly
            if ws.mode == "gunicorn":
                raise StopIteration()
            return []

    return WebSocketResponse()


class RelaySocket(Protocol):
    """What the relay needs of its socket: ``simple_websocket.Server``, or the simulator's scripted
    caller (``playback.ScriptedCaller``). ``receive`` returns None after ``timeout`` seconds without a
    frame and raises ``ConnectionClosed`` when the other side is gone."""

    mode: str

    def receive(self, timeout: float | None = None) -> Any: ...

    def send(self, data: str) -> None: ...

    def close(self) -> None: ...


class Relay:
    """One call's relay: the protocol's frames in and out, the AI session, the call's row."""

    def __init__(
        self, ws: RelaySocket, organization_id: uuid.UUID, call_id: uuid.UUID, agent_id: str
    ) -> None:
        self.ws = ws
        self.organization_id = organization_id
        self.call_id = call_id
        self.agent_id = agent_id
        self.session: VoiceSession | None = None
        self.pending: deque[dict[str, Any]] = deque()
        self.ended: VoiceEnd | None = None
        self.finished = False

    # ------------------------------------------------------------------------------------------ frames

    def _receive(self, timeout: float | None) -> dict[str, Any] | None:
        raw = self.ws.receive(timeout=timeout)
        if raw is None:
            return None
        try:
            frame = json.loads(raw)
        except (TypeError, ValueError):
            log.warning("relay of call %s: a frame that is not JSON was ignored", self.call_id)
            return {}
        return frame if isinstance(frame, dict) else {}

    def _send(self, frame: dict[str, Any]) -> None:
        self.ws.send(json.dumps(frame, ensure_ascii=False))

    def _next(self) -> dict[str, Any] | None:
        if self.pending:
            return self.pending.popleft()
        return self._receive(IDLE_SECONDS)

    def _call(self) -> Call | None:
        return db.session.scalars(
            select(Call).where(Call.id == self.call_id, Call.organization_id == self.organization_id)
        ).first()

    # ---------------------------------------------------------------------------------------- the loop

    def run(self) -> None:
        try:
            while self.ended is None:
                frame = self._next()
                if frame is None:  # idle for too long
                    break
                self._handle(frame)
        except ConnectionClosed:
            pass  # the caller hung up (or the carrier closed the relay after our ``end``)
        finally:
            self._finish()

    def _handle(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "setup":
            self._setup(frame)
        elif self.session is None:
            log.warning("relay of call %s: %r before setup was ignored", self.call_id, kind)
        elif kind == "prompt":
            self._turn(str(frame.get("voicePrompt") or ""), frame.get("last") is not False)
        elif kind == "dtmf":
            digit = str(frame.get("digit") or "")[:8]
            if digit:
                self._turn(f"[DTMF {digit}]", True)
        elif kind == "interrupt":
            self.session.interrupt(str(frame.get("utteranceUntilInterrupt") or ""))
            self._save()
        elif kind == "error":
            self._error(str(frame.get("description") or ""))

    def _setup(self, frame: dict[str, Any]) -> None:
        if self.session is not None:
            return
        call = self._call()
        if call is None or call.status in TERMINAL:
            raise ConnectionClosed()
        parameters = frame.get("customParameters")
        named = parameters.get("call_id") if isinstance(parameters, dict) else None
        call_sid = frame.get("callSid")
        # The token already names the call; a setup about another call is someone else's relay.
        if (named and named != str(call.id)) or (
            call_sid and call.provider_call_id and call_sid != call.provider_call_id
        ):
            log.warning("relay of call %s: a setup for another call was refused", self.call_id)
            raise ConnectionClosed()
        if not self._bind(str(frame.get("sessionId") or "")[:64] or f"relay-{uuid.uuid4().hex}"):
            log.warning("relay of call %s: a second relay session was refused", self.call_id)
            raise ConnectionClosed()
        try:
            self.session = start_session(self.organization_id, self.agent_id, on_tool=self._tool_called)
        except ApiError:  # the member is no longer an AI agent with a configuration
            log.warning("relay of call %s: agent %s has no configuration", self.call_id, self.agent_id)
            raise ConnectionClosed() from None
        if call.status != "in_progress":
            call.status = "in_progress"
            call.answered_at = call.answered_at or utcnow()
            db.session.flush()
            lifecycle.publish(call)
        uow.commit()

    def _bind(self, session_id: str) -> bool:
        """Take the call for this relay session, once (a conditional UPDATE: two sockets racing with the
        same token cannot both win). The same session setting up again keeps it."""
        taken = db.session.execute(
            update(Call)
            .where(
                Call.id == self.call_id,
                Call.organization_id == self.organization_id,
                or_(Call.relay_session_id.is_(None), Call.relay_session_id == session_id),
            )
            .values(relay_session_id=session_id)
            .execution_options(synchronize_session=False)
        )
        uow.commit()
        return bool(getattr(taken, "rowcount", 0))

    def _turn(self, text: str, last: bool) -> None:
        assert self.session is not None
        spoke = self._stream(self.session.prompt(text, last))
        if spoke:  # an interrupted answer is not finished with ``last``: the carrier already stopped it
            self._send({"type": "text", "token": "", "last": True})
        self._save()
        if self.session.handoff is not None:
            # The transfer is stored before ``end`` is sent: the carrier calls the action URL as soon as
            # the relay ends, and that answer dials what is stored.
            self._finish()
            self._send({"type": "end", "handoffData": json.dumps(self._handoff_data(), ensure_ascii=False)})

    def _stream(self, pieces: Iterator[str]) -> bool | None:
        """Send the answer's pieces as ``text`` tokens; between pieces, frames that arrived are read: an
        ``interrupt`` stops the answer (the rest is never sent), others wait their turn. None when
        nothing was said; False when interrupted."""
        assert self.session is not None
        said = None
        for piece in pieces:
            said = True
            self._send({"type": "text", "token": piece, "last": False})
            while (frame := self._receive(0)) is not None:
                if frame.get("type") == "interrupt":
                    self.session.interrupt(str(frame.get("utteranceUntilInterrupt") or ""))
                    return False
                self.pending.append(frame)
        return said

    def _handoff_data(self) -> dict[str, Any]:
        assert self.ended is not None and self.ended.handoff is not None
        return {"call_id": str(self.call_id), **self.ended.handoff.as_dict()}

    def _save(self) -> None:
        """The transcript so far, committed (one unit of work per turn)."""
        assert self.session is not None
        call = self._call()
        if call is not None:
            transcript = [line.as_dict() for line in self.session.transcript]
            if call.transcript != transcript:
                endings.save_transcript(call, transcript)
                lifecycle.publish(call)
        uow.commit()

    def _error(self, description: str) -> None:
        log.warning("relay of call %s: the carrier reported %r", self.call_id, description[:500])
        call = self._call()
        if call is not None:
            metadata = dict(call.call_metadata or {})
            errors = list(metadata.get("relay_errors") or [])[-(MAX_ERRORS_KEPT - 1) :]
            metadata["relay_errors"] = [*errors, description[:500]]
            call.call_metadata = metadata
            db.session.flush()
        uow.commit()

    def _tool_called(self, tool_call: dict[str, Any]) -> None:
        # The notifications area turns this into the deliveries of notifications[<tool>], as on messaging.
        publish(
            "ai.tool_called",
            self.organization_id,
            {
                "agent_id": self.agent_id,
                "call_id": str(self.call_id),
                "tool": tool_call["name"],
                "arguments": tool_call["arguments"],
                "result": tool_call["result"],
            },
        )

    def _finish(self) -> None:
        """Once: at a hand-off, or when the relay closes for whatever reason. Transcript, transfer or
        the call's end, then the summary job."""
        uow.rollback()  # a turn that failed half-way leaves nothing half-written
        if self.session is None or self.finished:
            return
        self.finished = True
        ended = self.ended = self.session.end()
        call = self._call()
        if call is None:
            return
        try:
            endings.finish(call, ended)
            uow.commit()
        except Exception:
            log.exception("relay of call %s: the end of the call could not be stored", self.call_id)
            uow.rollback()
