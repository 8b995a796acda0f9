"""The studio's Test chat: the agent's **unsaved** configuration on a conversation the supervisor types.

Each turn posts the studio's form (``hx-include`` of the editor's form) with the conversation so far
(hidden ``tc_role`` / ``tc_text`` pairs inside the pane: the conversation lives in the page, never in the
database) and the new customer message. The form becomes a configuration through
:func:`blueprints.ai.studio_form.config_from_form`, is checked by the members area's rules
(``agent_config.parse``, the same rules as ``POST agent-config`` and the API's playground) and goes to
:func:`blueprints.ai.playground.run_test`, the function ``…/agent-config/test`` calls: nothing is sent to a
customer and nothing is written (no run, no message, no ticket: tools answer in dry run, except
``search_knowledge``, which really searches). A refused configuration is shown in the pane with the field
it concerns; the message typed is kept.

| URL | What |
|---|---|
| ``GET /agents/<id>/test-chat`` | the pane, with an empty conversation (also "Reset") |
| ``POST /agents/<id>/test-chat/turn`` | one turn: the customer's message and the agent's answer, appended |
"""

from __future__ import annotations

from typing import Any

from flask import Response, abort, make_response, render_template, request
from flask_babel import gettext as _
from pydantic import ValidationError
from werkzeug.datastructures import MultiDict

from blueprints.ai import offline, playground, views
from blueprints.ai.pages import pages
from blueprints.ai.pages.refusals import message_for
from blueprints.ai.schemas import SampleMessage
from blueprints.ai.studio_form import config_from_form
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import DeskUser, require_role, signed_in
from blueprints.members.agent_config import AgentConfigDraft, parse
from blueprints.members.models import Member
from core.errors import ApiError

# The studio's editor form, whose fields are configuration paths (templates/ai/studio/page.html).
STUDIO_FORM = "#studio-form"
# The pane's own fields: never configuration paths, and left out of what config_from_form reads.
OWN_FIELDS = ("tc_role", "tc_text", "tc_message", "tc_service", "csrf_token")
# The playground's own bounds (PlaygroundRequest: 1-100 messages of 1-4,096 characters).
MAX_MESSAGES = 100
MAX_TEXT = 4096
SERVICES = ("whatsapp", "instagram", "messenger")


def _agent(me: DeskUser, agent_id: str) -> Member:
    agent = views.find_agent(me.organization_id, agent_id)
    if agent is None:
        abort(404)
    return agent


def _render(template: str, status: int = 200, **context: Any) -> Response:
    return vary_fragment(make_response(render_template(template, **context), status))


def _history() -> list[dict[str, str]]:
    """The conversation so far, as the page holds it (pairs of hidden inputs, in order)."""
    roles = request.form.getlist("tc_role")
    texts = request.form.getlist("tc_text")
    return [
        {"role": role if role in ("customer", "agent") else "customer", "text": text}
        for role, text in zip(roles, texts, strict=False)
        if text.strip()
    ]


def _studio_form() -> MultiDict[str, str]:
    return MultiDict([(key, value) for key, value in request.form.items(multi=True) if key not in OWN_FIELDS])


def _refusal(
    me: DeskUser, agent: Member, message: str, field: str | None = None, status: int = 422
) -> Response:
    response = _render(
        "ai/studio/_test_chat_refusal.html", status, me=me, agent=agent, message=message, field=field
    )
    response.headers["HX-Retarget"] = "#test-chat-status"
    response.headers["HX-Reswap"] = "innerHTML"
    return response


@pages.get("/agents/<agent_id>/test-chat")
@require_role("supervisor")
def studio_test_chat(agent_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    return _render(
        "ai/studio/_test_chat.html", me=me, agent=agent, studio_form=STUDIO_FORM, services=SERVICES
    )


@pages.post("/agents/<agent_id>/test-chat/turn")
@require_role("supervisor")
def studio_test_chat_turn(agent_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    text = (request.form.get("tc_message") or "").strip()
    service = request.form.get("tc_service") or "whatsapp"
    if service not in SERVICES:
        service = "whatsapp"
    if not text:
        return _refusal(me, agent, _("Write the customer's message first."), "tc_message")
    if len(text) > MAX_TEXT:
        return _refusal(
            me, agent, _("A message holds at most %(n)s characters.", n=f"{MAX_TEXT:,}"), "tc_message"
        )
    history = _history()
    if len(history) + 1 > MAX_MESSAGES:
        return _refusal(
            me, agent, _("This test conversation is full (%(n)s messages): reset it.", n=MAX_MESSAGES)
        )
    try:
        sample = [
            SampleMessage.model_validate(m).model_dump()
            for m in [*history, {"role": "customer", "text": text}]
        ]
    except ValidationError:  # the page's own hidden inputs, changed by hand
        return _refusal(me, agent, _("This test conversation cannot be read back: reset it."))
    form = _studio_form()
    config: dict[str, Any] | None = None
    if form:  # the editor's form came along: its configuration, saved or not
        try:
            draft = parse(AgentConfigDraft, config_from_form(form), organization_id=me.organization_id)
        except ApiError as refusal:
            # the studio's words for the rule (its range, the item), as its Save shows them
            return _refusal(me, agent, message_for(refusal), refusal.param)
        config = draft.values()
    # without the editor's form (the pane alone): the stored configuration, as the API without ``config``
    result = playground.run_test(me.organization_id, str(agent.id), sample, config, service)
    return _render(
        "ai/studio/_test_chat_turn.html",
        me=me,
        agent=agent,
        question=text,
        result=result,
        offline_model=offline.OFFLINE_MODEL,
        turn=len([m for m in history if m["role"] == "customer"]) + 1,
        unsaved=config is not None,
    )
