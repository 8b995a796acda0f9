"""AI agents at work: the runtime that answers conversations with an agent's configuration (prompt,
tools, chat parameters), the language-model provider, knowledge documents and their search, the runs
log, the playground, and pausing an agent on a conversation. See docs/ai-agents.md."""

from __future__ import annotations

import os

from flask import Flask

from core.events import subscribe, subscribe_batch


def init_app(app: Flask) -> None:
    from blueprints.ai import (
        models,  # noqa: F401  (the tables, for the migrations' comparison)
        runtime,
    )
    from blueprints.ai.api import api, messaging_api
    from blueprints.ai.handoff import DEFAULT_PAUSE_MINUTES, routing_declined
    from blueprints.inbox.services.assignment import routing_declined as inbox_routing_declined

    # Minutes an agent stays quiet after a human reply or a template (0: until resumed); docs/ai-agents.md.
    app.config.setdefault(
        "AI_PAUSE_MINUTES", int(os.environ.get("AI_PAUSE_MINUTES") or DEFAULT_PAUSE_MINUTES)
    )
    app.register_api(api)  # type: ignore[attr-defined]
    app.register_api(messaging_api)  # type: ignore[attr-defined]
    from blueprints.ai.pages import pages

    app.register_blueprint(pages)  # the desk: the header's AI badge, /agents and the runs log
    subscribe_batch("message.created", runtime.on_messages_created)
    subscribe("conversation.assigned", runtime.on_conversation_assigned)
    # A conversation an agent handed over is not routed back to an agent by the address's rule.
    inbox_routing_declined.connect(routing_declined)

    from blueprints.ai import summaries

    summaries.register(app)
