"""Messaging: messages in and out, the service window, conversations and messaging contacts. What it
stores from the channels area and adds to Socket.IO is connected in ``blueprints/integrations``."""

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when any module of the area is (importing
    # blueprints.messaging.x runs this package's __init__ first): the API and the periodic jobs.
    from blueprints.messaging import demo_live, maintenance  # noqa: F401  (periodic jobs)
    from blueprints.messaging.api import api

    app.register_api(api)  # type: ignore[attr-defined]
