"""The inbox: the work surface over conversations (lists, assignment and routing, notes, audit events,
labels and flows, broadcasts). Conversations themselves are the messaging area's records."""

from __future__ import annotations

from flask import Flask

from core.events import subscribe, subscribe_batch


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.inbox.x runs this package's __init__ first, and its API and pages import the whole area.
    # (pages.settings adds /settings/labels and /settings/canned to the pages blueprint: imported first)
    import blueprints.inbox.pages.settings  # noqa: F401
    from blueprints.inbox.api import api
    from blueprints.inbox.pages import pages
    from blueprints.inbox.pages.broadcasts import pages as broadcast_pages
    from blueprints.inbox.services.assignment import pick_up_when_online, route_incoming_messages

    app.register_api(api)  # type: ignore[attr-defined]
    app.register_blueprint(pages)
    app.register_blueprint(broadcast_pages)  # /broadcasts, supervisors only
    subscribe_batch("message.created", route_incoming_messages)
    subscribe("presence.updated", pick_up_when_online)
