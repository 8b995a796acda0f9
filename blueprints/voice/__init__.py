"""Voice: numbers, calls, the Twilio adapter and its webhooks, the AI agents' relay, the simulator
(docs/voice.md)."""

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.voice.x runs this package's __init__ first, and its API imports the whole area.
    from blueprints.voice import lifecycle, simulator
    from blueprints.voice.api import api
    from blueprints.voice.incoming import incoming
    from blueprints.voice.playback import play_answered
    from blueprints.voice.relay import relay
    from blueprints.voice.services.campaigns import settle
    from blueprints.voice.webhooks import webhooks

    simulator.on_answered(play_answered)  # the simulator plays AI calls over the relay, which sits above it
    lifecycle.on_campaign_call_ended(settle)  # a campaign's call that ends settles its recipient

    app.register_api(api)  # type: ignore[attr-defined]
    app.register_blueprint(webhooks)
    app.register_blueprint(incoming)  # inbound calls' TwiML and the relay's action URL
    app.register_blueprint(relay)  # the ConversationRelay WebSocket
