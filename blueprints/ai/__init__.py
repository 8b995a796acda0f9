"""AI agents at work: the runtime that answers conversations with an agent's configuration (prompt,
tools, chat parameters), the language-model provider, knowledge documents and their search, the runs
log, the playground, and pausing an agent on a conversation. See docs/ai-agents.md."""

from __future__ import annotations

import os

from flask import Flask

from core.events import subscribe, subscribe_batch


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when any module of the area is (importing blueprints.ai.x runs
    # this package's __init__ first): the runtime, the API and the pages. Hooks: blueprints/integrations.
    from blueprints.ai import (
        models,  # noqa: F401  (the tables, for the migrations' comparison)
        runtime,
    )
    from blueprints.ai.api import api, messaging_api
    from blueprints.ai.handoff import DEFAULT_PAUSE_MINUTES
    from blueprints.ai.pages import (  # the modules put their routes on ``pages``
        agents,  # noqa: F401
        knowledge,  # noqa: F401
        pages,
        studio,  # noqa: F401
        test_chat,  # noqa: F401
    )

    # Minutes an agent stays quiet after a human reply or a template (0: until resumed); docs/ai-agents.md.
    app.config.setdefault(
        "AI_PAUSE_MINUTES", int(os.environ.get("AI_PAUSE_MINUTES") or DEFAULT_PAUSE_MINUTES)
    )
    app.register_api(api)  # type: ignore[attr-defined]
    app.register_api(messaging_api)  # type: ignore[attr-defined]
    # the desk: the header's AI badge, the runs log (pages/__init__.py), the agent list (agents.py), the
    # studio (studio.py) with its Knowledge tab and Test chat (knowledge.py, test_chat.py), all on ``pages``
    app.register_blueprint(pages)
    subscribe_batch("message.created", runtime.on_messages_created)
    subscribe("conversation.assigned", runtime.on_conversation_assigned)
