"""The supervisors' list of AI agents (``/agents``) and "New agent".

| URL | What |
|---|---|
| ``GET /agents?q=&category=&status=`` | the agents (name search, business category, status) with their |
| | last run and its outcome; each name opens the studio (``HX-Target: agents-list``: the table alone) |
| ``GET /agents?…&after=<agent id>`` (htmx) | "Show more": the next rows after that agent (keyset), |
| | ending with their own "Show more" while more are left |
| ``POST /agents/new`` (``name``) | a new AI member with a starting configuration, then its studio |
"""

from __future__ import annotations

from typing import Any

from flask import Response, make_response, redirect, render_template, request, url_for
from flask_babel import gettext as _

from blueprints.ai import views
from blueprints.ai.pages import pages
from blueprints.desk.errors import alert
from blueprints.desk.fragments import vary_fragment as _vary
from blueprints.desk.security import require_role, signed_in
from blueprints.members.agent_config import CHAT_DEFAULTS, AgentConfigDraft, parse
from blueprints.members.services import agents as agent_services
from blueprints.members.services import members as member_services
from core.auth import actor as make_actor

# The member's presence as the API's agent summary maps it (docs/members.md, "AI agents").
STATUSES = ("available", "busy", "away", "unavailable")
_STATUS_OF = {"online": "available", "busy": "busy", "away": "away", "offline": "unavailable"}
_PRESENCE_OF = {shown: presence for presence, shown in _STATUS_OF.items()}
LIST_LIMIT = 100  # rows per page: "Show more" fetches the next ones
NAME_MAX = 200


def agent_status(member: Any) -> str:
    return _STATUS_OF.get(member.status, "unavailable")


def starting_config() -> dict[str, Any]:
    """What a new agent starts with: the four sections a supervisor fills first, left empty for them to
    write in their customers' language, the chat parameters at their defaults, no tools."""
    return {
        "sections": {"identity": "", "rules": "", "tone": "", "closing": "", "chat": dict(CHAT_DEFAULTS)},
        "tools": {},
    }


@pages.get("/agents")
@require_role("supervisor")
def agents_page() -> Response:
    me = signed_in()
    search = (request.args.get("q") or "").strip()[:120]
    category = (request.args.get("category") or "").strip()[:64]
    status = request.args.get("status") or ""
    status = status if status in STATUSES else ""
    htmx = (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )
    # "Show more" (htmx) names the last agent shown; a page opened by its address starts at the top
    after = ((request.args.get("after") or "").strip()[:64] or None) if htmx else None
    page = agent_services.list_agents(
        me.organization_id,
        search=search or None,
        category=category or None,
        status=_PRESENCE_OF.get(status),
        sort="name",
        order="asc",
        offset=0,
        limit=LIST_LIMIT,
        after=after,
    )
    found = list(page.items)
    last, today = views.runs_summary(me.organization_id, [view.member.id for view in found])
    rows = [
        {
            "agent": view.member,
            "config": view.config,
            "status": agent_status(view.member),
            "last_run": last.get(view.member.id),
            "runs_today": today.get(view.member.id, 0),
        }
        for view in found
    ]
    context = {
        "me": me,
        "rows": rows,
        "search": search,
        "category": category,
        "status": status,
        "statuses": STATUSES,
        "categories": views.agent_categories(me.organization_id),
        "filtered": bool(search or category or status),
        # the last row shown is the next page's cursor
        "next_after": found[-1].member.id if page.total > len(found) and found else None,
    }
    if after is not None:
        return _vary(make_response(render_template("ai/_agent_rows.html", **context)))
    fragment = htmx and request.headers.get("HX-Target") == "agents-list"
    template = "ai/_agents_list.html" if fragment else "ai/agents.html"
    return _vary(make_response(render_template(template, **context)))


@pages.post("/agents/new")
@require_role("supervisor")
def new_agent() -> Response:
    me = signed_in()
    name = " ".join((request.form.get("name") or "").split())
    if not name or len(name) > NAME_MAX:
        return alert(_("Give the agent a name of up to %(max)s characters.", max=NAME_MAX))
    changed_by = make_actor("user", str(me.user_id))
    member = member_services.create_member(
        me.organization_id, {"name": name, "ai": True}, changed_by=changed_by
    )
    agent_services.replace_config(
        me.organization_id,
        member.id,
        parse(AgentConfigDraft, starting_config()),
        changed_by=changed_by,
        expected_version=0,
    )
    target = url_for("ai_pages.studio_page", agent_id=member.id)
    if request.headers.get("HX-Request") == "true":
        response = make_response("", 204)
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target, code=303)
