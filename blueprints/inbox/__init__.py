"""The inbox: the work surface over conversations (lists, assignment and routing, notes, audit events,
labels and flows, broadcasts). Conversations themselves are the messaging area's records."""

from __future__ import annotations

from flask import Flask

from core.events import DomainEvent, subscribe


def _route_incoming(event: DomainEvent) -> None:
    from blueprints.inbox.services.assignment import route_conversation_job

    data = event.data
    if data.get("direction") == "incoming" and data.get("conversation_id"):
        route_conversation_job.enqueue(event.organization_id, data["conversation_id"])


def _member_online(event: DomainEvent) -> None:
    from blueprints.inbox.services.assignment import pick_up_waiting_job

    if event.data.get("status") == "online" and event.data.get("member_id"):
        pick_up_waiting_job.enqueue(event.organization_id, event.data["member_id"])


def init_app(app: Flask) -> None:
    from blueprints.inbox.api import api
    from blueprints.inbox.pages import pages

    app.register_api(api)  # type: ignore[attr-defined]
    app.register_blueprint(pages)
    subscribe("message.created", _route_incoming)
    subscribe("presence.updated", _member_online)
