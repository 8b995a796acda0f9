"""Members and AI agents area: ``/v1/members/organizations/{organization_id}/...``."""

from __future__ import annotations

import re
import uuid
from typing import Any

from flask import Response, request
from flask_openapi3 import Tag

from blueprints.members.agent_config import AgentConfigChanges, AgentConfigDraft, parse
from blueprints.members.models import AgentConfig, Team
from blueprints.members.schemas import (
    AgentConfigOut,
    AgentConfigPatch,
    AgentConfigReplace,
    AgentDetail,
    AgentList,
    AgentListQuery,
    AgentPath,
    AvailabilityList,
    AvailabilityOut,
    AvailabilityQuery,
    AvailabilityStats,
    HistoryPage,
    HistoryQuery,
    MemberPath,
    OrgPath,
    ReasonCreate,
    ReasonDeleted,
    ReasonList,
    ReasonListQuery,
    ReasonOut,
    ReasonPath,
    ReasonUpdate,
    StatsQuery,
    StatusChange,
    StatusEventsExportQuery,
    StatusStats,
    TeamAvailability,
    TeamCreate,
    TeamDeleted,
    TeamList,
    TeamMemberPath,
    TeamMembersAdd,
    TeamOut,
    TeamPath,
    TeamUpdate,
    VersionList,
    VersionPath,
    VersionQuery,
)
from blueprints.members.services import agents, presence, reasons, stats, teams
from core import auth
from core.auth import current_actor
from core.errors import ApiError
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses
from core.pagination import SkipTakeQuery
from core.timeutil import day_end, day_start, get_zone

TAG_AGENTS = Tag(name="Members: AI agents", description="AI agents and their configuration")
TAG_PRESENCE = Tag(name="Members: presence", description="Presence, unavailability reasons, statistics")
TAG_TEAMS = Tag(name="Members: teams", description="Teams of members")

api = AreaAPI(
    "members_api",
    __name__,
    url_prefix="/v1/members/organizations/<organization_id>",
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


def _org() -> uuid.UUID:
    return auth.current_organization_id()


def csv_download(text: str, filename: str) -> Response:
    """A CSV file as a download (the API's exports and the desk's, blueprints/members/pages/team.py)."""
    return Response(
        text.encode("utf-8"),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )


def _csv_doc() -> dict[str, Any]:
    return {
        "description": "CSV file (UTF-8 with BOM)",
        "content": {"text/csv": {"schema": {"type": "string"}}},
    }


# ------------------------------------------------------------------------------------------- AI agents


@api.get("/members/ai-agents", tags=[TAG_AGENTS], responses={200: AgentList})
def list_agents(path: OrgPath, query: AgentListQuery) -> dict[str, Any]:
    """AI agents, filtered by name (``search``) and ``category`` (business category)."""
    page = agents.list_agents(
        _org(),
        search=query.search,
        category=query.category,
        sort=query.sort,
        order=query.order,
        offset=query.offset,
        limit=query.limit,
    )
    return AgentList.dump(
        {"agents": page.items, "total": page.total, "page": query.page, "limit": query.limit}
    )


@api.get("/members/ai-agents/<agent_id>", tags=[TAG_AGENTS], responses={200: AgentDetail})
def get_agent(path: AgentPath) -> dict[str, Any]:
    return AgentDetail.dump(agents.get_agent(_org(), path.agent_id))


# A configuration's version is its entity tag: GET and every change answer ``ETag: "<version>"``, and a
# change sent with ``If-Match: "<version>"`` (also ``W/"<version>"`` or the bare number; ``*``: any) is
# refused with 412 when another version is stored (docs/members.md, "Concurrent edits").
IF_MATCH = "If-Match"
_ENTITY_TAG = re.compile(r'(?:W/)?"(\d{1,10})"|(\d{1,10})')
CONFIG_CHANGE = (
    'Send `If-Match` with the version you started from (the `ETag` of the GET, `"7"`; `W/"7"` and `7` '
    "are read alike, `*` matches any version): when another version is stored the change is refused with "
    "412 naming it, who saved it and when. The answer carries the new version as `ETag`."
)


def _expected_version() -> int | None:
    """The version ``If-Match`` names, None without the header (or with ``*``); 400 naming the header when
    it is not one version."""
    value = request.headers.get(IF_MATCH)
    if value is None or value.strip() == "*":
        return None
    found = _ENTITY_TAG.fullmatch(value.strip())
    if found is None:
        raise ApiError(
            400,
            f'{IF_MATCH}: must be one configuration version, such as "7" (the ETag of the configuration)',
            code="if_match_malformed",
            param=IF_MATCH,
        )
    return int(found.group(1) or found.group(2))


def _with_etag(
    config: AgentConfig, agent_id: str, status: int = 200
) -> tuple[dict[str, Any], int, dict[str, str]]:
    return AgentConfigOut.dump_config(config, agent_id), status, {"ETag": f'"{config.version}"'}


@api.get("/members/<agent_id>/agent-config", tags=[TAG_AGENTS], responses={200: AgentConfigOut})
def get_agent_config(path: AgentPath) -> tuple[dict[str, Any], int, dict[str, str]]:
    """The configuration, with the chat parameters' defaults filled in; `ETag` is its version."""
    return _with_etag(agents.get_config(_org(), path.agent_id), path.agent_id)


@api.post(
    "/members/<agent_id>/agent-config",
    tags=[TAG_AGENTS],
    responses={200: AgentConfigOut, 201: AgentConfigOut, 412: PlainError},
    description=CONFIG_CHANGE + ' `If-Match: "0"` creates only when there is no configuration yet.',
)
def replace_agent_config(
    path: AgentPath, body: AgentConfigReplace
) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Replace the whole configuration (201 when it did not exist yet)."""
    expected = _expected_version()
    config, created = agents.replace_config(
        _org(),
        path.agent_id,
        parse(AgentConfigDraft, body.model_dump(exclude_unset=True)),
        changed_by=current_actor(),
        expected_version=expected,
    )
    return _with_etag(config, path.agent_id, 201 if created else 200)


@api.patch(
    "/members/<agent_id>/agent-config",
    tags=[TAG_AGENTS],
    responses={200: AgentConfigOut, 412: PlainError},
    description=CONFIG_CHANGE,
)
def update_agent_config(
    path: AgentPath, body: AgentConfigPatch
) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Change only the fields sent; sections, tools and notifications merge by key, null removes one."""
    expected = _expected_version()
    config = agents.update_config(
        _org(),
        path.agent_id,
        parse(AgentConfigChanges, body.model_dump(exclude_unset=True)),
        changed_by=current_actor(),
        expected_version=expected,
    )
    return _with_etag(config, path.agent_id)


@api.get("/members/<agent_id>/agent-config/versions", tags=[TAG_AGENTS], responses={200: VersionList})
def list_config_versions(path: AgentPath, query: VersionQuery) -> dict[str, Any]:
    """Every change of the configuration, newest first: who, when and what changed."""
    page = agents.list_versions(_org(), path.agent_id, offset=query.offset, limit=query.limit)
    return VersionList.dump(
        {"data": page.items, "total": page.total, "page": query.page, "limit": query.limit}
    )


@api.post(
    "/members/<agent_id>/agent-config/versions/<int:version>/restore",
    tags=[TAG_AGENTS],
    responses={200: AgentConfigOut, 412: PlainError},
    description=CONFIG_CHANGE + " `If-Match` names the version stored now, not the one restored.",
)
def restore_config_version(path: VersionPath) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Put back the configuration as it was at ``version``; the restore is recorded as a new version."""
    expected = _expected_version()
    config = agents.restore_version(
        _org(), path.agent_id, path.version, changed_by=current_actor(), expected_version=expected
    )
    return _with_etag(config, path.agent_id)


# -------------------------------------------------------------------------------------------- presence


@api.get("/members/availabilities", tags=[TAG_PRESENCE], responses={200: AvailabilityList})
def list_availabilities(path: OrgPath, query: AvailabilityQuery) -> dict[str, Any]:
    """Every member's current status, since when, its reason and its active conversations."""
    rows = presence.availabilities(_org(), status=query.status, ai=query.ai)
    return AvailabilityList.dump({"data": rows, "total": len(rows)})


@api.patch("/members/<member_id>/status", tags=[TAG_PRESENCE], responses={200: AvailabilityOut})
def change_status(path: MemberPath, body: StatusChange) -> dict[str, Any]:
    """Set a member's status (with an optional unavailability reason when not online)."""
    member = presence.change_status(
        _org(), path.member_id, body.status, body.reason_id, changed_by=current_actor()
    )
    [row] = presence.availabilities(_org(), member_pks=[member.pk])
    return AvailabilityOut.dump(row)


@api.get("/members/unavailable-reasons", tags=[TAG_PRESENCE], responses={200: ReasonList})
def list_reasons(path: OrgPath, query: ReasonListQuery) -> dict[str, Any]:
    rows = reasons.list_reasons(_org(), active=query.active)
    return ReasonList.dump({"data": rows, "total": len(rows)})


@api.post("/members/unavailable-reasons", tags=[TAG_PRESENCE], responses={201: ReasonOut, 409: PlainError})
def create_reason(path: OrgPath, body: ReasonCreate) -> tuple[dict[str, Any], int]:
    return ReasonOut.dump(reasons.create_reason(_org(), body.sent_fields())), 201


@api.patch("/members/unavailable-reasons/<reason_id>", tags=[TAG_PRESENCE], responses={200: ReasonOut})
def update_reason(path: ReasonPath, body: ReasonUpdate) -> dict[str, Any]:
    return ReasonOut.dump(reasons.update_reason(_org(), path.reason_id, body.sent_fields()))


@api.delete("/members/unavailable-reasons/<reason_id>", tags=[TAG_PRESENCE], responses={200: ReasonDeleted})
def delete_reason(path: ReasonPath) -> dict[str, Any]:
    """Delete an unused reason; a reason in use is deactivated instead (``deleted`` false)."""
    reason_id, deleted = reasons.delete_reason(_org(), path.reason_id)
    return ReasonDeleted.dump({"id": reason_id, "deleted": deleted, "active": False})


@api.get("/members/status-history/organization", tags=[TAG_PRESENCE], responses={200: HistoryPage})
def status_history(path: OrgPath, query: HistoryQuery) -> dict[str, Any]:
    """Status changes of the organization, newest first; ``from``/``to`` are local days of ``timezone``."""
    zone = get_zone(query.timezone)
    page = stats.paginate_history(
        _org(),
        member_id=query.member_id,
        status=query.status,
        start=day_start(query.date_from, zone) if query.date_from else None,
        end=day_end(query.date_to, zone) if query.date_to else None,
        skip=query.skip,
        take=query.take,
    )
    return HistoryPage.dump({"data": page.items, "total": page.total, "skip": query.skip, "take": query.take})


# ----------------------------------------------------------------------------------------- statistics


def _range(query: StatsQuery) -> stats.StatsRange:
    return stats.make_range(query.date_from, query.date_to, query.timezone)


def _team_filter(query: StatsQuery) -> uuid.UUID | None:
    if query.team_id is None:
        return None
    return teams.get_team(_org(), query.team_id).id


@api.get("/stats/member-availability", tags=[TAG_PRESENCE], responses={200: AvailabilityStats})
def member_availability(path: OrgPath, query: StatsQuery) -> dict[str, Any]:
    """Seconds each member spent online, busy, away and offline, and per reason, within the range."""
    stats_range = _range(query)
    totals = stats.availability_totals(
        _org(), stats_range, member_id=query.member_id, team_id=_team_filter(query)
    )
    return AvailabilityStats.dump({"range": stats_range, "members": totals})


@api.get("/stats/member-status", tags=[TAG_PRESENCE], responses={200: StatusStats})
def member_status(path: OrgPath, query: StatsQuery) -> dict[str, Any]:
    """Members per status now, members who spent time in each status and changes per status in the range."""
    stats_range = _range(query)
    counts = stats.status_counts(_org(), stats_range)
    return StatusStats.dump({"range": stats_range, **vars(counts)})


@api.get("/stats/export/availability", tags=[TAG_PRESENCE], responses={200: _csv_doc()})
def export_availability(path: OrgPath, query: StatsQuery) -> Response:
    """The member-availability statistics as a CSV download."""
    stats_range = _range(query)
    totals = stats.availability_totals(
        _org(), stats_range, member_id=query.member_id, team_id=_team_filter(query)
    )
    name = f"member-availability_{stats_range.first_day}_{stats_range.last_day}.csv"
    return csv_download(stats.availability_csv(totals), name)


@api.get("/stats/export/status-events", tags=[TAG_PRESENCE], responses={200: _csv_doc()})
def export_status_events(path: OrgPath, query: StatusEventsExportQuery) -> Response:
    """Every status change in the range (oldest first) as a CSV download."""
    stats_range = _range(query)
    events = stats.events_in_range(_org(), stats_range, member_id=query.member_id, status=query.status)
    name = f"member-status-events_{stats_range.first_day}_{stats_range.last_day}.csv"
    return csv_download(stats.status_events_csv(events, stats_range.zone), name)


# ---------------------------------------------------------------------------------------------- teams


def _team_out(team: Team) -> dict[str, Any]:
    [view] = teams.with_members([team])
    return TeamOut.dump(view)


@api.get("/teams", tags=[TAG_TEAMS], responses={200: TeamList})
def list_teams(path: OrgPath, query: SkipTakeQuery) -> dict[str, Any]:
    page = teams.list_teams(_org(), skip=query.skip, take=query.take)
    return TeamList.dump({"data": teams.with_members(page.items), "total": page.total})


@api.post("/teams", tags=[TAG_TEAMS], responses={201: TeamOut, 409: PlainError})
def create_team(path: OrgPath, body: TeamCreate) -> tuple[dict[str, Any], int]:
    return _team_out(teams.create_team(_org(), body.sent_fields())), 201


@api.get("/teams/<team_id>", tags=[TAG_TEAMS], responses={200: TeamOut})
def get_team(path: TeamPath) -> dict[str, Any]:
    return _team_out(teams.get_team(_org(), path.team_id))


@api.patch("/teams/<team_id>", tags=[TAG_TEAMS], responses={200: TeamOut})
def update_team(path: TeamPath, body: TeamUpdate) -> dict[str, Any]:
    return _team_out(teams.update_team(_org(), path.team_id, body.sent_fields()))


@api.delete("/teams/<team_id>", tags=[TAG_TEAMS], responses={200: TeamDeleted})
def delete_team(path: TeamPath) -> dict[str, Any]:
    return TeamDeleted.dump({"id": teams.delete_team(_org(), path.team_id), "deleted": True})


@api.post("/teams/<team_id>/members", tags=[TAG_TEAMS], responses={200: TeamOut})
def add_team_members(path: TeamPath, body: TeamMembersAdd) -> dict[str, Any]:
    """Add members (ids already in the team are ignored)."""
    return _team_out(teams.add_members(_org(), path.team_id, body.member_ids))


@api.delete("/teams/<team_id>/members/<member_id>", tags=[TAG_TEAMS], responses={200: TeamOut})
def remove_team_member(path: TeamMemberPath) -> dict[str, Any]:
    return _team_out(teams.remove_member(_org(), path.team_id, path.member_id))


@api.get("/teams/<team_id>/availability", tags=[TAG_TEAMS], responses={200: TeamAvailability})
def team_availability(path: TeamPath) -> dict[str, Any]:
    """The team's members with their status and load, and how many are in each status."""
    team = teams.get_team(_org(), path.team_id)
    pks = [m.pk for m in teams.members_of([team.id]).get(team.id, [])]
    rows = presence.availabilities(_org(), member_pks=pks)
    counts = {s: sum(1 for a in rows if a.member.status == s) for s in ("online", "busy", "away", "offline")}
    return TeamAvailability.dump(
        {"team_id": team.id, "team_name": team.name, "counts": counts, "members": rows}
    )
