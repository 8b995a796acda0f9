"""Messaging: messages in and out, the service window, conversations and messaging contacts."""

from flask import Flask


def init_app(app: Flask) -> None:
    from blueprints.messaging import maintenance, realtime  # noqa: F401  (maintenance: periodic purge)
    from blueprints.messaging.api import api

    app.register_api(api)  # type: ignore[attr-defined]
    realtime.install()
