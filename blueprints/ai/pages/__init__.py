"""The desk's pages of the AI agents: the agent's state on an open conversation (a badge in the inbox's
header, with Pause / Resume for supervisors), the organization's agents and each agent's runs log
(supervisors only: agents get 403 whatever the navigation shows).

| URL | What |
|---|---|
| ``GET /inbox/c/<id>/ai`` | the header's badge (``ai/_state.html``), refetched on the AI events |
| ``POST /inbox/c/<id>/ai/pause`` / ``resume`` | supervisors: ``handoff.pause`` / ``resume``, the badge |
| ``GET /agents`` | the AI agents with their last run (``agents.py``); ``POST /agents/new`` a new agent |
| ``GET /agents/<agent_id>`` | the agent studio: configuration editor, versions (``studio.py``) |
| ``GET /agents/<agent_id>/runs?outcome=`` | the runs log, newest first (``HX-Target: runs-pane``: the list) |
| ``GET /agents/<agent_id>/runs/more?outcome=&after=<run id>`` | the next rows (keyset) |
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request
from flask_babel import gettext as _

from blueprints.ai import handoff, views
from blueprints.ai.models import OUTCOMES
from blueprints.desk.errors import alert, refuse_with_alerts
from blueprints.desk.fragments import conversation_for_page as _conversation
from blueprints.desk.fragments import vary_fragment as _vary
from blueprints.desk.security import DeskUser, protect_pages, require_role, signed_in
from blueprints.messaging.models import Conversation
from core.auth import actor as make_actor

pages = Blueprint("ai_pages", __name__)
protect_pages(pages)

PAGE_SIZE = 25


# ------------------------------------------------------------------------------- the header's badge


def state_context(me: DeskUser, conversation: Conversation) -> dict[str, Any]:
    """What ``ai/_state.html`` needs (the inbox's conversation fragment renders it too)."""
    return {
        "ai": views.conversation_state(me.organization_id, conversation),
        "conversation": conversation,
        "me": me,
    }


def _badge(me: DeskUser, conversation: Conversation) -> Response:
    return _vary(make_response(render_template("ai/_state.html", **state_context(me, conversation))))


@pages.get("/inbox/c/<conversation_id>/ai")
def conversation_state(conversation_id: str) -> Response:
    me = signed_in()
    return _badge(me, _conversation(me, conversation_id))


def _change(conversation_id: str, verb: Any) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    current = views.conversation_state(me.organization_id, conversation)
    if current is None or not current.assigned:
        return alert(_("No AI agent is answering this conversation."))
    verb(me.organization_id, str(conversation.id), by=make_actor("user", str(me.user_id)))
    return _badge(me, conversation)


@pages.post("/inbox/c/<conversation_id>/ai/pause")
@require_role("supervisor")
def pause(conversation_id: str) -> Response:
    return _change(conversation_id, handoff.pause)


@pages.post("/inbox/c/<conversation_id>/ai/resume")
@require_role("supervisor")
def resume(conversation_id: str) -> Response:
    return _change(conversation_id, handoff.resume)


# ------------------------------------------------------------------------------------ agents and runs


def _agent(me: DeskUser, agent_id: str) -> Any:
    agent = views.find_agent(me.organization_id, agent_id)
    if agent is None:
        abort(404)
    return agent


def _outcome() -> str | None:
    value = request.args.get("outcome") or None
    return value if value in OUTCOMES else None


@pages.get("/agents/<agent_id>/runs")
@require_role("supervisor")
def runs_page(agent_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    outcome = _outcome()
    page = views.runs_page(me.organization_id, agent.id, outcome=outcome, after=None, limit=PAGE_SIZE)
    context = {"me": me, "agent": agent, "outcome": outcome, "outcomes": OUTCOMES, "page": page}
    fragment = (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )
    if fragment and request.headers.get("HX-Target") == "runs-pane":
        return _vary(make_response(render_template("ai/_runs_pane.html", **context)))
    return _vary(make_response(render_template("ai/runs.html", **context)))


@pages.get("/agents/<agent_id>/runs/more")
@require_role("supervisor")
def more_runs(agent_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    after = request.args.get("after") or None
    if after is None:
        abort(400)
    outcome = _outcome()
    page = views.runs_page(me.organization_id, agent.id, outcome=outcome, after=after, limit=PAGE_SIZE)
    return _vary(
        make_response(render_template("ai/_run_rows.html", me=me, agent=agent, outcome=outcome, page=page))
    )


# ------------------------------------------------------------------------------------------------ errors


refuse_with_alerts(pages)  # a refusal of the AI verbs (pause, resume): an alert where the person looks

# The other pages of the area (agents.py, studio.py, knowledge.py, test_chat.py) put their routes on
# ``pages`` when imported; blueprints/ai/__init__.py imports them before registering it (importing them
# from here would make each module and this package import each other).
