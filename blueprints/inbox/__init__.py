"""The inbox: the work surface over conversations (lists, assignment and routing, notes, audit events,
labels and flows, broadcasts). Conversations themselves are the messaging area's records."""

from __future__ import annotations

from flask import Flask

from core.events import DomainEvent, subscribe, subscribe_batch


def _route_incoming(events: list[DomainEvent]) -> None:
    """One routing job per organization for a committed batch of messages, each conversation once (a
    webhook batch of 200 messages in 40 conversations routes 40 conversations in one job, not 200 jobs)."""
    from blueprints.inbox.services.assignment import route_conversations_job

    by_organization: dict[str, dict[str, None]] = {}
    for event in events:
        data = event.data
        if data.get("direction") == "incoming" and data.get("conversation_id"):
            by_organization.setdefault(event.organization_id, {})[str(data["conversation_id"])] = None
    for organization_id, conversation_ids in by_organization.items():
        route_conversations_job.enqueue(organization_id, list(conversation_ids))


def _member_online(event: DomainEvent) -> None:
    from blueprints.inbox.services.assignment import pick_up_waiting_job

    if event.data.get("status") == "online" and event.data.get("member_id"):
        pick_up_waiting_job.enqueue(event.organization_id, event.data["member_id"])


def init_app(app: Flask) -> None:
    from blueprints.inbox.api import api
    from blueprints.inbox.pages import pages

    app.register_api(api)  # type: ignore[attr-defined]
    app.register_blueprint(pages)
    subscribe_batch("message.created", _route_incoming)
    subscribe("presence.updated", _member_online)
