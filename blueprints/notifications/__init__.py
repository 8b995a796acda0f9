"""Agent notifications (issue 13, part 4): when an AI agent's trigger fires (``end_of_call``, or a tool
it called), the targets its configuration names hear of it by e-mail, WhatsApp or a signed webhook, with a
delivery log. See docs/notifications.md."""

from __future__ import annotations

import os

from flask import Flask

from core.events import subscribe

# Settings read from the environment (the app's configuration wins, as in tests).
ENV_SETTINGS = {
    "SMTP_HOST": None,
    "SMTP_PORT": "587",
    "SMTP_USERNAME": None,
    "SMTP_PASSWORD": None,
    "SMTP_STARTTLS": "true",
    "SMTP_FROM": None,
    "SMTP_TIMEOUT_SECONDS": "10",
    "NOTIFICATIONS_WEBHOOK_TIMEOUT_SECONDS": "10",
    "NOTIFICATIONS_MAX_ATTEMPTS": "6",
    "NOTIFICATIONS_RETRY_BASE_SECONDS": "30",
    "NOTIFICATIONS_SIGNING_KEY": None,
    "NOTIFICATIONS_ALLOW_HTTP_LOOPBACK": None,
    "DESK_BASE_URL": None,
}


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.notifications.x runs this package's __init__ first (the services declare the jobs).
    from blueprints.notifications.api import api
    from blueprints.notifications.services import on_tool_called

    for name, default in ENV_SETTINGS.items():
        app.config.setdefault(name, os.environ.get(name) or default)
    app.register_api(api)  # type: ignore[attr-defined]
    subscribe("ai.tool_called", on_tool_called)
