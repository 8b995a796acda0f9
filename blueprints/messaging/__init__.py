"""Messaging: messages in and out, the service window, conversations and messaging contacts."""

from flask import Flask


def init_app(app: Flask) -> None:
    from blueprints.channels.inbound import inbound_batch, inbound_events, inbound_settle
    from blueprints.messaging import demo_live, maintenance, realtime  # noqa: F401  (periodic jobs)
    from blueprints.messaging.api import api
    from blueprints.messaging.ingest import settle_batch, store_batch, store_item

    app.register_api(api)  # type: ignore[attr-defined]
    realtime.install()
    # inbound provider events flow one way: channels parse them, messaging stores them
    inbound_events.connect(store_item)
    inbound_batch.connect(store_batch)
    inbound_settle.connect(settle_batch)
