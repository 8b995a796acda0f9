"""Teams: named groups of members, used by conversation assignment ("assign to team"), team
availability and the AI agent summary."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select

from blueprints.audit import services as audit_log
from blueprints.members.models import Member, Team, TeamMember
from blueprints.members.services.members import get_member, members_by_ids
from core.db import db
from core.errors import ApiError
from core.events import publish
from core.pagination import Page, paginate
from core.tenancy import find_for_org, get_for_org


@dataclass(frozen=True)
class TeamView:
    """A team with its members (ordered by name), as the team endpoints answer it."""

    team: Team
    members: list[Member]


def with_members(teams: list[Team]) -> list[TeamView]:
    """Views of several teams, their members read in one query."""
    grouped = members_of([t.id for t in teams])
    return [TeamView(t, grouped.get(t.id, [])) for t in teams]


def get_team(organization_id: uuid.UUID, team_id: uuid.UUID | str) -> Team:
    """The team, or 404 ``No Team found`` (also for a malformed id or another organization's team)."""
    return get_for_org(Team, team_id, organization_id, "Team")


def find_team(organization_id: uuid.UUID, team_id: uuid.UUID | str) -> Team | None:
    return find_for_org(Team, team_id, organization_id)


def members_of(team_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[Member]]:
    """Members of several teams in one query, ordered by name."""
    grouped: dict[uuid.UUID, list[Member]] = defaultdict(list)
    if not team_ids:
        return grouped
    rows = db.session.execute(
        select(TeamMember.team_id, Member)
        .join(Member, Member.pk == TeamMember.member_pk)
        .where(TeamMember.team_id.in_(team_ids))
        .order_by(Member.name, Member.id)
    )
    for team_id, member in rows:
        grouped[team_id].append(member)
    return grouped


def teams_of(member_pks: list[uuid.UUID]) -> dict[uuid.UUID, list[Team]]:
    """Teams of several members in one query, ordered by team name."""
    grouped: dict[uuid.UUID, list[Team]] = defaultdict(list)
    if not member_pks:
        return grouped
    rows = db.session.execute(
        select(TeamMember.member_pk, Team)
        .join(Team, Team.id == TeamMember.team_id)
        .where(TeamMember.member_pk.in_(member_pks))
        .order_by(Team.name_key)
    )
    for member_pk, team in rows:
        grouped[member_pk].append(team)
    return grouped


def list_teams(organization_id: uuid.UUID, *, skip: int, take: int) -> Page[Team]:
    statement = select(Team).where(Team.organization_id == organization_id).order_by(Team.name_key, Team.id)
    return paginate(statement, offset=skip, limit=take)


def _check_unique(organization_id: uuid.UUID, name: str, exclude: uuid.UUID | None = None) -> None:
    statement = select(Team.id).where(Team.organization_id == organization_id, Team.name_key == name.lower())
    if exclude is not None:
        statement = statement.where(Team.id != exclude)
    if db.session.scalar(statement) is not None:
        raise ApiError(409, f"name: a team named {name!r} already exists", code="team_exists", param="name")


def _resolve_members(organization_id: uuid.UUID, member_ids: list[str]) -> list[Member]:
    found = members_by_ids(organization_id, member_ids)
    missing = [m for m in member_ids if m not in found]
    if missing:
        raise ApiError(
            400, f"member_ids: no member with id {missing[0]!r}", code="member_unknown", param="member_ids"
        )
    return [found[m] for m in dict.fromkeys(member_ids)]


def _add(team: Team, members: list[Member]) -> list[Member]:
    """Add the members not in the team yet; the ones added."""
    existing = set(
        db.session.scalars(
            select(TeamMember.member_pk).where(
                TeamMember.team_id == team.id, TeamMember.member_pk.in_([m.pk for m in members])
            )
        )
    )
    added = [m for m in members if m.pk not in existing]
    db.session.add_all(TeamMember(team_id=team.id, member_pk=m.pk) for m in added)
    return added


def create_team(organization_id: uuid.UUID, fields: dict[str, Any]) -> Team:
    name = fields["name"]
    _check_unique(organization_id, name)
    members = _resolve_members(organization_id, fields.get("member_ids") or [])
    team = Team(
        organization_id=organization_id,
        name=name,
        name_key=name.lower(),
        description=fields.get("description"),
    )
    db.session.add(team)
    db.session.flush()
    _add(team, members)
    publish("team.created", organization_id, {"team_id": str(team.id), "name": team.name})
    audit_log.record("team.created", "team", team.id, fields, organization_id=organization_id)
    db.session.flush()
    return team


def update_team(organization_id: uuid.UUID, team_id: uuid.UUID | str, fields: dict[str, Any]) -> Team:
    team = get_team(organization_id, team_id)
    if "name" in fields:
        _check_unique(organization_id, fields["name"], exclude=team.id)
        team.name = fields["name"]
        team.name_key = fields["name"].lower()
    if "description" in fields:
        team.description = fields["description"]
    publish("team.updated", organization_id, {"team_id": str(team.id), "name": team.name})
    audit_log.record("team.updated", "team", team.id, fields, organization_id=organization_id)
    db.session.flush()  # the answer shows the new updated_at
    return team


def delete_team(organization_id: uuid.UUID, team_id: uuid.UUID | str) -> uuid.UUID:
    """Delete the team (its memberships go with it); returns its id."""
    team = get_team(organization_id, team_id)
    deleted_id = team.id
    db.session.execute(delete(TeamMember).where(TeamMember.team_id == team.id))
    db.session.delete(team)
    publish("team.deleted", organization_id, {"team_id": str(deleted_id)})
    audit_log.record("team.deleted", "team", deleted_id, organization_id=organization_id)
    db.session.flush()
    return deleted_id


def add_members(organization_id: uuid.UUID, team_id: uuid.UUID | str, member_ids: list[str]) -> Team:
    team = get_team(organization_id, team_id)
    members = _resolve_members(organization_id, member_ids)
    added = _add(team, members)
    if added:
        publish("team.changed", organization_id, {"team_id": str(team.id), "added": [m.id for m in members]})
        audit_log.record(
            "team.members_added",
            "team",
            team.id,
            ["members"],
            organization_id=organization_id,
            before_after={"members": (None, [m.name for m in added])},
        )
    db.session.flush()
    return team


def remove_member(organization_id: uuid.UUID, team_id: uuid.UUID | str, member_id: str) -> Team:
    team = get_team(organization_id, team_id)
    member = get_member(organization_id, member_id)
    removed = db.session.execute(
        delete(TeamMember).where(TeamMember.team_id == team.id, TeamMember.member_pk == member.pk)
    ).rowcount
    if not removed:
        raise ApiError(404, f"Member {member_id} is not in this team", code="member_not_in_team")
    publish("team.changed", organization_id, {"team_id": str(team.id), "removed": [member.id]})
    audit_log.record(
        "team.members_removed",
        "team",
        team.id,
        ["members"],
        organization_id=organization_id,
        before_after={"members": ([member.name], None)},
    )
    return team


def count_members(team_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    rows = db.session.execute(
        select(TeamMember.team_id, func.count())
        .where(TeamMember.team_id.in_(team_ids))
        .group_by(TeamMember.team_id)
    )
    return {team_id: count for team_id, count in rows}
