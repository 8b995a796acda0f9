"""The desk's audit log page (supervisors only: agents get 403 whatever the navigation shows).

| URL | What |
|---|---|
| ``GET /audit?action=&actor=`` | the log, newest first (``HX-Target: audit-pane``: the filtered list only) |
| ``GET /audit/more?action=&actor=&cursor=`` | the next rows (keyset, the API's cursor) |

Same pattern as the AI runs log (``blueprints/ai/pages.py``): server-rendered rows, a filter form that
swaps the pane, and a "Show more" row that replaces itself with the next page.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request

from blueprints.audit import services
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import protect_pages, require_role, signed_in
from core.errors import ApiError

pages = Blueprint("audit_pages", __name__)
protect_pages(pages)

PAGE_SIZE = 25
MAX_ACTOR_FILTER = 120


def _filters() -> services.AuditFilters:
    """The page's filters; an unknown action or an oversize actor is ignored rather than refused."""
    action = request.args.get("action") or None
    actor = (request.args.get("actor") or "").strip()[:MAX_ACTOR_FILTER] or None
    return services.AuditFilters(action=action if action in services.ACTIONS else None, actor=actor)


def _page(filters: services.AuditFilters, cursor: str | None) -> Any:
    me = signed_in()
    try:
        return services.list_entries(me.organization_id, filters, cursor=cursor, limit=PAGE_SIZE)
    except ApiError:  # a cursor this page did not make
        abort(400)


def _context(filters: services.AuditFilters, page: Any) -> dict[str, Any]:
    return {"me": signed_in(), "filters": filters, "actions": services.ACTIONS, "page": page}


@pages.get("/audit")
@require_role("supervisor")
def audit_page() -> Response:
    filters = _filters()
    context = _context(filters, _page(filters, None))
    fragment = (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )
    if fragment and request.headers.get("HX-Target") == "audit-pane":
        return vary_fragment(make_response(render_template("audit/_pane.html", **context)))
    return vary_fragment(make_response(render_template("audit/log.html", **context)))


@pages.get("/audit/more")
@require_role("supervisor")
def more_entries() -> Response:
    cursor = request.args.get("cursor") or None
    if cursor is None:
        abort(400)
    filters = _filters()
    return vary_fragment(
        make_response(render_template("audit/_rows.html", **_context(filters, _page(filters, cursor))))
    )
