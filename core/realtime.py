"""Socket.IO: one server on the outer application, shared by both environments.

Clients join their organization's room on connect. Browser clients of the desk are identified by their
login session (added with the desk pages); API clients pass ``auth={"api_key": "sk_..."}`` or the
``X-API-Key`` header. Domain events reach the room through :mod:`core.events`.

With ``REDIS_URL`` set, the server uses Redis as its message queue so that several processes (and job
workers) reach every connected client.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from flask import Flask, current_app, request
from flask_socketio import SocketIO, join_room, leave_room, rooms

from core import jobs
from core.auth import tenancy
from core.db import utcnow
from core.environments import ENVIRONMENTS, in_environment
from core.events import DomainEvent, add_sink, room_for
from core.hooks import hook

log = logging.getLogger(__name__)

socketio = SocketIO()
CHANNEL = "agentdesk-socketio"


def init_app(app: Flask) -> None:
    message_queue = None if app.config.get("SOCKETIO_DISABLE_QUEUE") else app.config.get("REDIS_URL")
    socketio.init_app(
        app,
        async_mode="threading",
        message_queue=message_queue,
        channel=app.config.get("SOCKETIO_CHANNEL", CHANNEL),
        cors_allowed_origins=app.config.get("SOCKETIO_CORS_ORIGINS"),
        logger=False,
        engineio_logger=False,
    )
    add_sink(_emit_domain_event)
    app.extensions["agentdesk.socketio_server"] = socketio.server


def activate(app: Flask) -> None:
    """Point the shared SocketIO object back at ``app``'s server (tests reuse apps built earlier)."""
    socketio.server = app.extensions["agentdesk.socketio_server"]


# Areas add rooms an event also goes to (a message event reaches its conversation's room). The event is
# emitted once to all its rooms together, so a client in several of them receives it once.
event_rooms = hook("realtime.event_rooms", "fn(event) -> extra room names for a domain event")


def _emit_domain_event(domain_event: DomainEvent) -> None:
    rooms_of_event = [room_for(domain_event.environment, domain_event.organization_id)]
    for extra in event_rooms.answers(event=domain_event):
        rooms_of_event += [room for room in extra or () if room not in rooms_of_event]
    if _through_message_queue():
        _EMITTER.submit(domain_event.name, domain_event.as_message(), rooms_of_event)
    elif _server_elsewhere():
        relay_events.enqueue([(domain_event.name, domain_event.as_message(), rooms_of_event)], time.time())
    else:
        socketio.emit(domain_event.name, domain_event.as_message(), to=rooms_of_event)


# ------------------------------------------------------------------ the embedded set-up's event relay
#
# Without REDIS_URL, Socket.IO lives in the one ``serve`` process; a CLI command (``channels
# simulate-inbound``, ``demo seed``) is another process, and what it emitted reached no browser. The
# server already consumes the embedded job queue (instance/jobs.db), so a process that is not the server
# hands its events to it as a job, and the server emits them to its clients. Only while a server runs
# (its mark in the instance folder names a live process), and an event older than RELAY_MAX_AGE_SECONDS
# when the server reaches it is dropped: a page opened since shows the stored state anyway.

SERVER_MARK = "socketio-server.pid"
RELAY_MAX_AGE_SECONDS = 30.0
_serving_here = False
_server_seen: tuple[float, bool] = (0.0, False)


def mark_serving(app: Flask) -> None:
    """Called by ``serve``: this process holds the Socket.IO clients; others relay their events here."""
    global _serving_here
    _serving_here = True
    mark = Path(app.instance_path) / SERVER_MARK
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(str(os.getpid()))

    def _unmark() -> None:
        with contextlib.suppress(OSError):
            if mark.read_text().strip() == str(os.getpid()):
                mark.unlink()

    atexit.register(_unmark)


def _server_elsewhere() -> bool:
    """Whether events of this process should be relayed: embedded jobs, not the server itself, and a
    server process alive (checked at most once a second)."""
    global _server_seen
    if _serving_here or current_app.config.get("JOBS_MODE") != "embedded":
        return False
    checked_at, alive = _server_seen
    if time.monotonic() - checked_at < 1.0:
        return alive
    try:
        pid = int((Path(current_app.instance_path) / SERVER_MARK).read_text().strip())
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
        alive = pid != os.getpid()
    except (OSError, ValueError):
        alive = False
    _server_seen = (time.monotonic(), alive)
    return alive


@jobs.job(retries=0, retry_delay=0)
def relay_events(events: list[tuple[str, dict[str, Any], list[str]]], sent_at: float) -> None:
    """Run by the server's consumer: emit another process's events to this server's clients."""
    if time.time() - sent_at > RELAY_MAX_AGE_SECONDS:
        log.info("dropped %d relayed events older than %ss", len(events), RELAY_MAX_AGE_SECONDS)
        return
    for name, message, rooms_of_event in events:
        socketio.emit(name, message, to=rooms_of_event)


def _through_message_queue() -> bool:
    manager = getattr(socketio.server, "manager", None)
    return manager is not None and hasattr(manager, "_publish")  # a PubSubManager (Redis)


class _Emitter:
    """Publishes events to the message queue from one thread of this process, in the order they came.

    With Redis every emit is a publish and its reply: a round trip per event. Made by the code that
    committed (a webhook drain commits 200 messages, then emitted 200 events), they held it up: the
    drain waited on Redis for about a third of its time before it could claim the next batch. The thread
    publishes while the committer goes on; events are still published after their commit, one by one, in
    order. What is queued when the process exits is published for up to ``FLUSH_SECONDS`` (atexit); a
    killed process loses what it had not published, as it would lose an emit it had not reached."""

    FLUSH_SECONDS = 2.0

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[str, Any, list[str]]] = queue.SimpleQueue()
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._pending = 0

    def submit(self, event: str, message: Any, rooms: list[str]) -> None:
        if self._pid != os.getpid():
            self._start()
        with self._lock:
            self._pending += 1
        self._queue.put((event, message, rooms))

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            # after a fork the parent's thread is gone and its queued events are the parent's
            self._queue, self._pending = queue.SimpleQueue(), 0
            threading.Thread(
                target=self._run, args=(self._queue,), name="socketio-emitter", daemon=True
            ).start()
            self._pid = os.getpid()

    def _run(self, events: queue.SimpleQueue[tuple[str, Any, list[str]]]) -> None:
        while True:
            event, message, rooms = events.get()
            try:
                socketio.emit(event, message, to=rooms)
            except Exception:  # one failed publish must not stop the ones after it
                log.exception("publishing %s to the Socket.IO message queue failed", event)
            finally:
                with self._lock:
                    self._pending -= 1

    def flush(self, timeout: float = FLUSH_SECONDS) -> bool:
        """Wait until every submitted event is published (or ``timeout``); whether none is left."""
        deadline = time.monotonic() + timeout
        while self._pid == os.getpid() and self._pending > 0:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True


_EMITTER = _Emitter()
atexit.register(_EMITTER.flush)


def _resolve_key_any_environment(api_key: str) -> tuple[str, str] | None:
    """(environment, organization id) for a key; the key's recorded environment decides."""
    now = utcnow()
    for environment in ENVIRONMENTS:
        with in_environment(current_app._get_current_object(), environment):  # type: ignore[attr-defined]
            resolved = tenancy().authenticate_key(api_key, environment, now)
            if resolved:
                return environment, str(resolved.snapshot.organization_id)
    return None


@socketio.on("connect")
def _on_connect(auth: dict[str, Any] | None = None) -> bool:
    api_key = (auth or {}).get("api_key") or request.headers.get("X-API-Key", "")
    if api_key:
        resolved = _resolve_key_any_environment(api_key)
        if resolved is None:
            return False
        environment, organization_id = resolved
        join_room(room_for(environment, organization_id))
        return True
    for authenticate in connection_rooms.receivers:
        rooms = authenticate(auth=auth or {})
        if rooms:
            for room in rooms:
                join_room(room)
            return True
    return False


# Areas that accept connections by other credentials (a member's JWT, a desk session) answer with the
# rooms to join, or None to leave the decision to the others; nobody answering refuses the connection.
connection_rooms = hook("realtime.connection_rooms", "fn(auth) -> rooms to join | None")
# Areas that track connections (member presence) hear of each disconnect, in the outer app's request
# context of the Socket.IO connection that ended.
disconnected = hook("realtime.disconnected", "fn(sid) -> None")


@socketio.on("disconnect")
def _on_disconnect(*_reason: Any) -> None:
    sid = getattr(request, "sid", None)
    for handler in disconnected.receivers:
        try:
            handler(sid=sid)
        except Exception:  # one failing handler must not keep the others from cleaning up
            log.exception("disconnect handler %r failed", handler)


# Conversation rooms: a connected client asks to follow one conversation (``join_conversation`` with
# ``{"conversation_id": ...}``; the acknowledgement says whether it joined). The area that owns
# conversations answers whether it belongs to the organization, asked in the environment of each
# organization room the client is already in, so a client can only ever join the conversations of its
# own organization and environment.
conversation_access = hook(
    "realtime.conversation_access", "fn(organization_id, conversation_id) -> True when it belongs there"
)


def conversation_room(environment: str, conversation_id: str) -> str:
    return f"{environment}:conversation:{conversation_id}"


@socketio.on("join_conversation")
def _on_join_conversation(data: Any = None) -> dict[str, Any]:
    conversation_id = str((data or {}).get("conversation_id") or "") if isinstance(data, dict) else ""
    if conversation_id:
        for room in rooms():
            environment, kind, organization_id = [*room.split(":", 2), "", ""][:3]
            if kind != "org" or environment not in ENVIRONMENTS:
                continue
            with in_environment(current_app._get_current_object(), environment):  # type: ignore[attr-defined]
                allowed = any(
                    conversation_access.answers(
                        organization_id=organization_id, conversation_id=conversation_id
                    )
                )
            if allowed:
                target = conversation_room(environment, conversation_id)
                join_room(target)
                return {"ok": True, "room": target}
    return {"ok": False, "error": "Conversation not found"}


@socketio.on("leave_conversation")
def _on_leave_conversation(data: Any = None) -> dict[str, Any]:
    conversation_id = str((data or {}).get("conversation_id") or "") if isinstance(data, dict) else ""
    for room in rooms():
        if room.endswith(f":conversation:{conversation_id}"):
            leave_room(room)
    return {"ok": True}
