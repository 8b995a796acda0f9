"""What the members area's desk pages show, read through the area's services: the team dashboard (who is in
which status now, and availability over a range with the API's statistics), and the rows of the people and
teams settings pages. Plain data for the templates; nothing here decides a rule."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from datetime import date, timedelta
from typing import Any

from flask_babel import format_date, get_locale
from flask_babel import gettext as _
from werkzeug.datastructures import MultiDict

from blueprints.desk.errors import refusal_message
from blueprints.members.models import Member, Team, User
from blueprints.members.services import presence, stats, teams, users
from blueprints.members.services.members import find_member, list_members
from blueprints.members.services.presence import Availability
from blueprints.members.services.stats import MemberTotals, StatsRange, StatusCounts
from core.errors import ApiError

# The order the desk shows statuses in (the presence menu's): available first.
STATUS_ORDER = ("online", "busy", "away", "offline")
TEAMS_SHOWN = 200  # the team menus and the teams page list this many teams
MEMBERS_SHOWN = 500  # the "add a member" menus list this many members


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 2)


# ---- the team dashboard -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DashboardFilters:
    """The dashboard's filters as the URL gives them (``from`` and ``to``: local days, ISO)."""

    team_id: str = ""
    member_id: str = ""
    date_from: str = ""
    date_to: str = ""

    @classmethod
    def from_args(cls, args: MultiDict[str, str]) -> DashboardFilters:
        return cls(
            team_id=(args.get("team_id") or "").strip()[:64],
            member_id=(args.get("member_id") or "").strip()[:64],
            date_from=(args.get("from") or "").strip()[:10],
            date_to=(args.get("to") or "").strip()[:10],
        )

    def params(self, **changes: str) -> dict[str, str]:
        """The non-empty filters as URL parameters (``from``/``to`` by their URL names), with ``changes``."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        names = {"date_from": "from", "date_to": "to"}
        return {names.get(key, key): value for key, value in values.items() if value}


@dataclass(frozen=True)
class Scope:
    """What the filters select: a team, a human member and the range of the statistics (the default
    range, the API's, when the one asked for is refused: ``errors`` then says why, by field)."""

    team: Team | None
    member_id: str | None
    stats_range: StatsRange
    errors: dict[str, str]

    @property
    def export_params(self) -> dict[str, str]:
        """The scope as the CSV links' parameters: exactly the team, member and days shown."""
        params = {"from": self.stats_range.first_day.isoformat(), "to": self.stats_range.last_day.isoformat()}
        if self.team is not None:
            params["team_id"] = str(self.team.id)
        if self.member_id is not None:
            params["member_id"] = self.member_id
        return params


def _date(value: str) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def scope_of(organization_id: uuid.UUID, timezone: str, filters: DashboardFilters) -> Scope:
    """The filters read against the organization's teams and people, the range in its time zone. A team
    or person that is not (or no longer) the organization's selects nobody in particular."""
    errors: dict[str, str] = {}
    team = teams.find_team(organization_id, filters.team_id) if filters.team_id else None
    member = find_member(organization_id, filters.member_id) if filters.member_id else None
    first, last = _date(filters.date_from), _date(filters.date_to)
    for name, raw, parsed in (("from", filters.date_from, first), ("to", filters.date_to, last)):
        if raw and parsed is None:
            errors[name] = _("Write a date, such as 2026-03-31.")
    try:
        stats_range = stats.make_range(first, last, timezone)
    except ApiError as refusal:
        errors[refusal.param or "from"] = refusal_message(refusal)
        stats_range = stats.make_range(None, None, timezone)
    member_id = member.id if member is not None and not member.ai else None
    return Scope(team, member_id, stats_range, errors)


def now_by_status(
    organization_id: uuid.UUID, scope: Scope
) -> tuple[list[Availability], dict[str, list[Availability]]]:
    """Every human member's presence now (the member menu), and the scope's members by status."""
    people = presence.availabilities(organization_id, ai=False)
    shown = people
    if scope.team is not None:
        in_team = {m.pk for m in teams.members_of([scope.team.id]).get(scope.team.id, [])}
        shown = [a for a in shown if a.member.pk in in_team]
    if scope.member_id is not None:
        shown = [a for a in shown if a.member.id == scope.member_id]
    now: dict[str, list[Availability]] = {status: [] for status in STATUS_ORDER}
    for availability in shown:
        now[availability.member.status].append(availability)
    return people, now


@dataclass
class Dashboard:
    filters: DashboardFilters
    scope: Scope
    teams: list[Team]
    people: list[Availability]  # every human member, for the member menu
    now: dict[str, list[Availability]]  # status -> the scope's members in it now
    totals: list[MemberTotals]  # the scope's human members' totals in the range, with their days
    counts: StatusCounts  # the organization's, as ``/stats/member-status`` answers them
    reasons: list[tuple[str, float]] = field(default_factory=list)  # reason name -> hours, most first
    presets: dict[str, tuple[str, str]] = field(default_factory=dict)  # today, week, month -> from, to

    @property
    def tracked_hours(self) -> dict[str, float]:
        """The scope's hours per status over the range (the people table's totals row)."""
        return {s: _hours(sum(t.seconds[s] for t in self.totals)) for s in STATUS_ORDER}


def _presets(today: date) -> dict[str, tuple[str, str]]:
    """Ranges a supervisor asks for most: today, the last 7 days (the API's default), the last 30."""
    return {
        key: ((today - timedelta(days=days - 1)).isoformat(), today.isoformat())
        for key, days in (("today", 1), ("week", stats.DEFAULT_RANGE_DAYS), ("month", 30))
    }


def dashboard(organization_id: uuid.UUID, timezone: str, filters: DashboardFilters) -> Dashboard:
    """Everything the dashboard shows for these filters, in the organization's time zone."""
    scope = scope_of(organization_id, timezone, filters)
    people, now = now_by_status(organization_id, scope)
    totals = [
        t
        for t in stats.availability_totals(
            organization_id,
            scope.stats_range,
            member_id=scope.member_id,
            team_id=scope.team.id if scope.team else None,
            by_day=True,
        )
        if not t.member.ai  # AI agents are always available: the charts are about people
    ]
    reasons: dict[str, float] = {}
    for total in totals:
        for name, seconds in total.reasons.items():
            reasons[name] = reasons.get(name, 0.0) + seconds
    return Dashboard(
        filters=filters,
        scope=scope,
        teams=list(teams.list_teams(organization_id, skip=0, take=TEAMS_SHOWN).items),
        people=people,
        now=now,
        totals=totals,
        counts=stats.status_counts(organization_id, scope.stats_range),
        reasons=sorted(((name, _hours(s)) for name, s in reasons.items()), key=lambda r: (-r[1], r[0])),
        presets=_presets(stats.make_range(None, None, timezone).last_day),
    )


# The charts show the time people were there (online, busy, away); offline is the rest of the day, which
# would dwarf it (the table has it).
CHARTED = ("online", "busy", "away")


def chart_data(board: Dashboard) -> dict[str, Any]:
    """The charts' numbers (hours), day labels and number locale, for the page's data attribute (desk.js
    draws them; the template adds the statuses' words)."""
    days = stats.range_days(board.scope.stats_range)
    pattern = "EEE d" if len(days) <= 14 else "d MMM"
    by_day = {status: [0.0] * len(days) for status in CHARTED}
    index = {day: position for position, day in enumerate(days)}
    for total in board.totals:
        for day, seconds in total.days.items():
            for status in CHARTED:
                by_day[status][index[day]] += seconds[status]
    return {
        "locale": str(get_locale() or "en").replace("_", "-"),  # the tables' number format (es-MX)
        "statuses": list(CHARTED),
        "days": {
            "labels": [format_date(day, pattern) for day in days],
            "hours": {s: [_hours(v) for v in values] for s, values in by_day.items()},
        },
        "people": {
            "labels": [t.member.name for t in board.totals],
            "hours": {s: [_hours(t.seconds[s]) for t in board.totals] for s in CHARTED},
        },
        "reasons": {"labels": [name for name, _ in board.reasons], "hours": [h for _, h in board.reasons]},
    }


# ---- people and teams ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PersonRow:
    """A desk user as the people page lists them: role, presence now, teams."""

    user: User
    member: Member | None
    availability: Availability | None
    teams: list[Team]


def people_rows(organization_id: uuid.UUID) -> list[PersonRow]:
    """Every desk user with their presence and teams: five queries and the conversation counter."""
    rows = users.desk_users(organization_id)
    now = {a.member.pk: a for a in presence.availabilities(organization_id, ai=False)}
    member_teams = teams.teams_of([r.member.pk for r in rows if r.member is not None])
    return [
        PersonRow(
            r.user,
            r.member,
            now.get(r.member.pk) if r.member else None,
            member_teams.get(r.member.pk, []) if r.member else [],
        )
        for r in rows
    ]


@dataclass(frozen=True)
class TeamCard:
    team: Team
    members: list[Member]
    candidates: list[Member]  # members of the organization not in the team yet


def team_cards(organization_id: uuid.UUID) -> list[TeamCard]:
    """The organization's teams with their members and who could join each: four queries."""
    views = teams.with_members(list(teams.list_teams(organization_id, skip=0, take=TEAMS_SHOWN).items))
    everyone = sorted(
        list_members(organization_id, skip=0, take=MEMBERS_SHOWN), key=lambda m: (m.ai, m.name.lower())
    )
    cards = []
    for view in views:
        inside = {m.pk for m in view.members}
        cards.append(TeamCard(view.team, view.members, [m for m in everyone if m.pk not in inside]))
    return cards
