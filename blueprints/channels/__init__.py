"""Channels: organization addresses, the provider adapters (meta, simulator) and Meta's webhooks."""

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.channels.x runs this package's __init__ first, and its API and pages import the whole area.
    from blueprints.channels.api import api
    from blueprints.channels.pages import pages
    from blueprints.channels.webhooks import webhooks

    app.register_api(api)  # type: ignore[attr-defined]
    app.register_blueprint(webhooks)
    app.register_blueprint(pages)  # the desk: /settings/channels, supervisors only
