"""Channels: organization addresses, the provider adapters (meta, simulator) and Meta's webhooks."""

from flask import Flask


def init_app(app: Flask) -> None:
    from blueprints.channels.api import api
    from blueprints.channels.webhooks import webhooks

    app.register_api(api)  # type: ignore[attr-defined]
    app.register_blueprint(webhooks)
