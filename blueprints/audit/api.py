"""The audit log for supervisors' integrations, under the members area's paths
(``/v1/members/organizations/{organization_id}/audit-log``) and its error format ``{statusCode, message}``.
Read-only: the log is append-only, so there is no route to change or delete an entry."""

from __future__ import annotations

from typing import Any

from flask_openapi3 import Tag

from blueprints.audit import services
from blueprints.audit.schemas import AuditList, AuditListQuery, OrgPath
from core import auth
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses
from core.pagination import TOTAL_RELATION_HEADER

TAG = Tag(
    name="Members: audit log",
    description="Administrative actions (keys, channels, agent configurations, members, teams, deletions)",
)

api = AreaAPI(
    "audit_api",
    __name__,
    url_prefix="/v1/members/organizations/<organization_id>",
    abp_tags=[TAG],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


@api.get("/audit-log", responses={200: AuditList})
def list_audit_log(path: OrgPath, query: AuditListQuery) -> Any:
    """The organization's audit entries, newest first, filtered and paged with `cursor`."""
    filters = services.AuditFilters(
        action=query.action,
        actor=query.actor,
        target_type=query.target_type,
        target_id=query.target_id,
        since=query.since,
        until=query.until,
    )
    page = services.list_entries(
        auth.current_organization_id(), filters, cursor=query.cursor or None, limit=query.take
    )
    body: dict[str, Any] = AuditList.dump(
        {"data": page.items, "total": page.total, "take": query.take, "next_cursor": page.next_cursor}
    )
    if not page.total_is_exact:
        return body, 200, {TOTAL_RELATION_HEADER: "gte"}
    return body
