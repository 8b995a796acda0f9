"""The desk's audit log page (supervisors only: agents get 403 whatever the navigation shows).

| URL | What |
|---|---|
| ``GET /audit?action=&actor=`` | the log, newest first (``HX-Target: audit-pane``: the filtered list only) |
| ``GET /audit/more?action=&actor=&cursor=`` | the next rows (keyset, the API's cursor) |

Same pattern as the AI runs log (``blueprints/ai/pages.py``): server-rendered rows, a filter form that
swaps the pane, and a "Show more" row that replaces itself with the next page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request
from flask_babel import gettext as _
from flask_babel import lazy_gettext

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


# What each action code means, in the page's language: the code stays beside it (it is what the filter
# and the API speak), the words are what a supervisor reads. A code without words here shows as itself.
ACTION_LABELS = {
    "account.deleted": lazy_gettext("Account deleted"),
    "agent_config.updated": lazy_gettext("AI agent configuration changed"),
    "api_key.created": lazy_gettext("API key created"),
    "api_key.revoked": lazy_gettext("API key revoked"),
    "canned_response.deleted": lazy_gettext("Canned reply deleted"),
    "channel.connected": lazy_gettext("Channel connected"),
    "contact.deleted": lazy_gettext("Messaging contact deleted"),
    "conversation.deleted": lazy_gettext("Conversation deleted"),
    "crm_contact.deleted": lazy_gettext("CRM contact deleted"),
    "deal.deleted": lazy_gettext("Deal deleted"),
    "flow.deleted": lazy_gettext("Flow deleted"),
    "knowledge_document.deleted": lazy_gettext("Knowledge document deleted"),
    "label.created": lazy_gettext("Label added"),
    "label.updated": lazy_gettext("Label changed"),
    "label.deleted": lazy_gettext("Label deleted"),
    "canned_response.created": lazy_gettext("Canned reply added"),
    "canned_response.updated": lazy_gettext("Canned reply changed"),
    "broadcast.created": lazy_gettext("Broadcast created"),
    "broadcast.canceled": lazy_gettext("Broadcast canceled"),
    "routing.updated": lazy_gettext("Routing changed"),
    "knowledge_document.created": lazy_gettext("Knowledge document added"),
    "knowledge_document.updated": lazy_gettext("Knowledge document changed"),
    "project.deleted": lazy_gettext("Project deleted"),
    "ticket_type.deleted": lazy_gettext("Ticket type deleted"),
    "member.created": lazy_gettext("Member created"),
    "member.deleted": lazy_gettext("Member deleted"),
    "member.updated": lazy_gettext("Member changed"),
    "note.deleted": lazy_gettext("Note deleted"),
    "pipeline.deleted": lazy_gettext("Pipeline deleted"),
    "product.deleted": lazy_gettext("Product deleted"),
    "task.deleted": lazy_gettext("Task deleted"),
    "team.created": lazy_gettext("Team created"),
    "team.deleted": lazy_gettext("Team deleted"),
    "team.updated": lazy_gettext("Team changed"),
    "team.members_added": lazy_gettext("Members added to a team"),
    "team.members_removed": lazy_gettext("Member removed from a team"),
    "telecom_user.deleted": lazy_gettext("Telecom user deleted"),
    "telecom_webhook_endpoint.deleted": lazy_gettext("Lifecycle webhook endpoint deleted"),
    "unavailable_reason.created": lazy_gettext("Unavailability reason added"),
    "unavailable_reason.updated": lazy_gettext("Unavailability reason changed"),
    "unavailable_reason.deleted": lazy_gettext("Unavailability reason deleted"),
    "user.deactivated": lazy_gettext("Desk user deactivated"),
    "user.password_changed": lazy_gettext("Desk user's password changed"),
    "user.password_reset": lazy_gettext("Desk user's password reset"),
}


# The fields entries name, in words. A field without words here is shown with its underscores and dots
# as spaces ("expires at"), which reads well enough in either language.
FIELD_LABELS = {
    "active": lazy_gettext("Active"),
    "color": lazy_gettext("Colour"),
    "content": lazy_gettext("Text"),
    "description": lazy_gettext("Description"),
    "email": lazy_gettext("Email"),
    "environment": lazy_gettext("Environment"),
    "expires_at": lazy_gettext("Expires"),
    "members": lazy_gettext("Members"),
    "name": lazy_gettext("Name"),
    "password": lazy_gettext("Password"),
    "revoked_at": lazy_gettext("Revoked at"),
    "role": lazy_gettext("Role"),
    "short_code": lazy_gettext("Short code"),
    "source": lazy_gettext("Source"),
    "status": lazy_gettext("Status"),
    "title": lazy_gettext("Title"),
}
# Recorded values that are codes rather than text, in words (an API key's environment, a label's source).
VALUE_LABELS = {
    "live": lazy_gettext("Live"),
    "sandbox": lazy_gettext("Sandbox"),
    "manual": lazy_gettext("Added by hand"),
    "automation": lazy_gettext("From a flow"),
    "conversation": lazy_gettext("Typed on a conversation"),
}


def _spaced(code: str) -> str:
    return code.replace("_", " ").replace(".", " ").strip()


@pages.app_template_filter("audit_action")
def audit_action(code: str) -> str:
    """An action in words; an action without words yet reads as its code spaced out ("routing updated")."""
    words = ACTION_LABELS.get(code)
    return str(words) if words is not None else _spaced(code).capitalize()


@pages.app_template_filter("audit_field")
def audit_field(name: str) -> str:
    words = FIELD_LABELS.get(name)
    return str(words) if words is not None else _spaced(name)


@dataclass(frozen=True)
class Change:
    """One field of an entry as the page shows it: its words, and the before and after when recorded."""

    field: str
    before: str | None  # None: the value is not in the log (only the field's name is)
    after: str | None
    kept: bool  # whether the entry kept values (before/after) for this field


def _value(value: Any) -> str:
    if value is None or value == "" or value == []:
        return _("(empty)")
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, str) and value in VALUE_LABELS:
        return str(VALUE_LABELS[value])
    return str(value)


@pages.app_template_global("audit_changes")
def audit_changes(summary: dict[str, Any] | None) -> list[Change]:
    """What an entry changed: the fields with their before → after where the action kept them (labels,
    canned replies, keys...), the fields' names alone where it kept only names (older entries too)."""
    summary = summary or {}
    values: dict[str, Any] = summary.get("changes") or {}
    shown = []
    for name in summary.get("fields") or []:
        if name in values:
            pair = values[name]
            shown.append(
                Change(audit_field(name), _value(pair.get("before")), _value(pair.get("after")), True)
            )
        else:
            shown.append(Change(audit_field(name), None, None, False))
    return shown
