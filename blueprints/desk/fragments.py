"""What every desk page's HTMX routes share: fragment responses that caches keep apart from whole pages,
and the 404 for a conversation that is not the signed-in user's organization's."""

from __future__ import annotations

from flask import Response, abort

from blueprints.desk.security import DeskUser
from blueprints.messaging import services as messaging
from blueprints.messaging.models import Conversation
from core.errors import ApiError


def vary_fragment(response: Response) -> Response:
    """A page and its fragments share URLs: they differ by the htmx headers, and none is cached."""
    response.vary.add("HX-Request")
    response.vary.add("HX-Target")
    response.headers["Cache-Control"] = "no-store"
    return response


def conversation_for_page(me: DeskUser, conversation_id: str) -> Conversation:
    """The organization's conversation or the page's 404 (never another organization's)."""
    try:
        return messaging.get_conversation(me.organization_id, conversation_id)
    except ApiError:
        abort(404)
