"""Availability statistics and exports, computed from the status history.

Definitions (see docs/members.md):

- The range is ``from``..``to`` as local calendar days of the IANA ``timezone``: it starts at the local
  midnight opening ``from`` and ends at the local midnight closing ``to`` (exclusive), converted to UTC
  with the zone's rules, so a day with a DST change lasts 23 or 25 hours. The part after "now" is not
  counted.
- A member's status at the range start is the one set by its last change before the start; each change
  inside the range closes the previous interval. Intervals are cut at the range edges. Time before a
  member existed (its first history row is its creation) is not counted.
- Seconds per reason add up the time spent in a not-online status with that reason, keyed by the
  reason's name as recorded at the time of the change.
- Seconds per day (``by_day``, the desk's availability chart) split the same intervals at each local
  midnight of the range, so a member's days add up to its totals.
"""

from __future__ import annotations

import csv
import io
import uuid
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import Select, func, select

from blueprints.members.models import STATUSES, Member, MemberStatusEvent, TeamMember
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.pagination import Page, paginate
from core.timeutil import day_end, day_start, get_zone

MAX_RANGE_DAYS = 366
DEFAULT_RANGE_DAYS = 7


@dataclass(frozen=True)
class StatsRange:
    first_day: date
    last_day: date
    zone: ZoneInfo
    start: datetime  # UTC, inclusive
    end: datetime  # UTC, exclusive


def make_range(
    first_day: date | None, last_day: date | None, timezone: str | None, *, now: datetime | None = None
) -> StatsRange:
    try:
        zone = get_zone(timezone)
    except ValueError as exc:
        raise ApiError(400, f"timezone: {exc}") from exc
    today = (now or utcnow()).astimezone(zone).date()
    last = last_day or (first_day + timedelta(days=DEFAULT_RANGE_DAYS - 1) if first_day else today)
    first = first_day or last - timedelta(days=DEFAULT_RANGE_DAYS - 1)
    if first > last:
        raise ApiError(400, "from: must not be after to", code="range_inverted", param="from")
    if (last - first).days + 1 > MAX_RANGE_DAYS:
        raise ApiError(
            400, f"to: a range covers at most {MAX_RANGE_DAYS} days", code="range_too_long", param="to"
        )
    return StatsRange(first, last, zone, day_start(first, zone), day_end(last, zone))


@dataclass
class MemberTotals:
    member: Member
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0.0))
    reasons: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # Only with ``by_day``: seconds per status for each local day of the range that has any.
    days: dict[date, dict[str, float]] = field(default_factory=dict)

    @property
    def tracked(self) -> float:
        return sum(self.seconds.values())

    @property
    def online_share(self) -> float:
        """The part of the tracked time spent online, 0 to 1 (0 when nothing was tracked)."""
        return self.seconds["online"] / self.tracked if self.tracked else 0.0


def range_days(stats_range: StatsRange) -> list[date]:
    """The local days of the range, first to last."""
    count = (stats_range.last_day - stats_range.first_day).days + 1
    return [stats_range.first_day + timedelta(days=offset) for offset in range(count)]


def _spread_by_day(
    days: dict[date, dict[str, float]],
    status: str,
    start: datetime,
    end: datetime,
    day_starts: list[datetime],
    first_day: date,
) -> None:
    """Add ``start``..``end`` to ``days``, cut at each local midnight (``day_starts``: the UTC instant
    each local day of the range begins)."""
    index = max(bisect_right(day_starts, start) - 1, 0)
    while start < end:
        following = day_starts[index + 1] if index + 1 < len(day_starts) else end
        piece_end = min(end, following)
        day = first_day + timedelta(days=index)
        days.setdefault(day, dict.fromkeys(STATUSES, 0.0))[status] += (piece_end - start).total_seconds()
        start, index = piece_end, index + 1


def _members(organization_id: uuid.UUID, member_id: str | None, team_id: uuid.UUID | None) -> list[Member]:
    statement = select(Member).where(Member.organization_id == organization_id)
    if member_id is not None:
        statement = statement.where(Member.id == member_id)
    if team_id is not None:
        statement = statement.join(TeamMember, TeamMember.member_pk == Member.pk).where(
            TeamMember.team_id == team_id
        )
    return list(db.session.scalars(statement.order_by(Member.name, Member.id)))


def _state_before(
    organization_id: uuid.UUID, member_ids: list[str], start: datetime
) -> dict[str, MemberStatusEvent]:
    """The last change before ``start`` of each member, in one query (a window function)."""
    ranked = (
        select(
            MemberStatusEvent.id,
            func.row_number()
            .over(partition_by=MemberStatusEvent.member_id, order_by=MemberStatusEvent.at.desc())
            .label("rank"),
        )
        .where(
            MemberStatusEvent.organization_id == organization_id,
            MemberStatusEvent.member_id.in_(member_ids),
            MemberStatusEvent.at < start,
        )
        .subquery()
    )
    rows = db.session.scalars(
        select(MemberStatusEvent).join(ranked, ranked.c.id == MemberStatusEvent.id).where(ranked.c.rank == 1)
    )
    return {event.member_id: event for event in rows}


def availability_totals(
    organization_id: uuid.UUID,
    stats_range: StatsRange,
    *,
    member_id: str | None = None,
    team_id: uuid.UUID | None = None,
    now: datetime | None = None,
    by_day: bool = False,
) -> list[MemberTotals]:
    """Seconds per status and per reason for each member (and per local day with ``by_day``): three
    queries whatever the size."""
    members = _members(organization_id, member_id, team_id)
    totals = {m.id: MemberTotals(m) for m in members}
    if not members:
        return []
    end = min(stats_range.end, now or utcnow())
    start = stats_range.start
    if end <= start:
        return list(totals.values())
    ids = list(totals)
    current = {
        mid: (e.to_status, e.reason_name) for mid, e in _state_before(organization_id, ids, start).items()
    }
    since = dict.fromkeys(current, start)
    day_starts = [day_start(day, stats_range.zone) for day in range_days(stats_range)] if by_day else []
    # Plain rows, not ORM objects: a week of a large team is thousands of changes.
    events = db.session.execute(
        select(
            MemberStatusEvent.member_id,
            MemberStatusEvent.at,
            MemberStatusEvent.to_status,
            MemberStatusEvent.reason_name,
        )
        .where(
            MemberStatusEvent.organization_id == organization_id,
            MemberStatusEvent.member_id.in_(ids),
            MemberStatusEvent.at >= start,
            MemberStatusEvent.at < end,
        )
        .order_by(MemberStatusEvent.member_id, MemberStatusEvent.at)
    )

    def close(mid: str, until: datetime) -> None:
        if mid not in current:
            return
        status, reason = current[mid]
        seconds = (until - since[mid]).total_seconds()
        totals[mid].seconds[status] += seconds
        if reason and status != "online":
            totals[mid].reasons[reason] += seconds
        if by_day:
            _spread_by_day(totals[mid].days, status, since[mid], until, day_starts, stats_range.first_day)

    for member_id, when, to_status, reason_name in events:
        close(member_id, when)
        current[member_id] = (to_status, reason_name)
        since[member_id] = when
    for mid in current:
        close(mid, end)
    return list(totals.values())


@dataclass(frozen=True)
class StatusCounts:
    """Members per status now, members who spent time in each status, and changes per status and per
    reason within a range."""

    total_members: int
    current: dict[str, int]
    members_with_status: dict[str, int]
    changes: dict[str, int]
    reasons: dict[str, int]


def status_counts(
    organization_id: uuid.UUID, stats_range: StatsRange, *, now: datetime | None = None
) -> StatusCounts:
    totals = availability_totals(organization_id, stats_range, now=now)
    current = Counter(t.member.status for t in totals)
    end = min(stats_range.end, now or utcnow())
    changes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    rows = db.session.execute(
        select(MemberStatusEvent.to_status, MemberStatusEvent.reason_name, func.count())
        .where(
            MemberStatusEvent.organization_id == organization_id,
            MemberStatusEvent.at >= stats_range.start,
            MemberStatusEvent.at < end,
        )
        .group_by(MemberStatusEvent.to_status, MemberStatusEvent.reason_name)
    )
    for status, reason, count in rows:
        changes[status] += count
        if reason:
            reasons[reason] += count
    return StatusCounts(
        total_members=len(totals),
        current={s: current.get(s, 0) for s in STATUSES},
        members_with_status={s: sum(1 for t in totals if t.seconds[s] > 0) for s in STATUSES},
        changes={s: changes.get(s, 0) for s in STATUSES},
        reasons=dict(sorted(reasons.items())),
    )


def history_statement(
    organization_id: uuid.UUID,
    *,
    member_id: str | None = None,
    status: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Select[tuple[MemberStatusEvent]]:
    statement = select(MemberStatusEvent).where(MemberStatusEvent.organization_id == organization_id)
    if member_id is not None:
        statement = statement.where(MemberStatusEvent.member_id == member_id)
    if status is not None:
        statement = statement.where(MemberStatusEvent.to_status == status)
    if start is not None:
        statement = statement.where(MemberStatusEvent.at >= start)
    if end is not None:
        statement = statement.where(MemberStatusEvent.at < end)
    return statement.order_by(MemberStatusEvent.at.desc(), MemberStatusEvent.id)


def paginate_history(
    organization_id: uuid.UUID,
    *,
    member_id: str | None,
    status: str | None,
    start: datetime | None,
    end: datetime | None,
    skip: int,
    take: int,
) -> Page[MemberStatusEvent]:
    if start is not None and end is not None and start >= end:
        raise ApiError(400, "from: must not be after to")
    statement = history_statement(organization_id, member_id=member_id, status=status, start=start, end=end)
    return paginate(statement, offset=skip, limit=take)


def events_in_range(
    organization_id: uuid.UUID,
    stats_range: StatsRange,
    *,
    member_id: str | None = None,
    status: str | None = None,
) -> list[MemberStatusEvent]:
    statement = history_statement(
        organization_id, member_id=member_id, status=status, start=stats_range.start, end=stats_range.end
    )
    return list(
        db.session.scalars(
            statement.order_by(None).order_by(MemberStatusEvent.at, MemberStatusEvent.member_id)
        )
    )


# ---------------------------------------------------------------------------------------- CSV


def _cell(value: object) -> object:
    """Neutralise spreadsheet formulas in text cells (CSV injection): a leading =, +, - or @ is quoted."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def to_csv(header: list[str], rows: Iterable[list[object]]) -> str:
    buffer = io.StringIO()
    # A byte-order mark lets spreadsheet programs read UTF-8 names correctly; CRLF is what RFC 4180 says.
    buffer.write("\ufeff")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue()


def availability_csv(totals: list[MemberTotals]) -> str:
    reason_names = sorted({name for t in totals for name in t.reasons})
    header = [
        "member_id",
        "member_name",
        "ai",
        *[f"{s}_seconds" for s in STATUSES],
        "tracked_seconds",
        *[f"reason:{name}" for name in reason_names],
    ]
    rows = (
        [
            t.member.id,
            t.member.name,
            "true" if t.member.ai else "false",
            *[round(t.seconds[s]) for s in STATUSES],
            round(t.tracked),
            *[round(t.reasons.get(name, 0)) for name in reason_names],
        ]
        for t in totals
    )
    return to_csv(header, rows)


def status_events_csv(events: Iterable[MemberStatusEvent], zone: ZoneInfo) -> str:
    header = [
        "at_utc",
        f"at_local ({zone.key})",
        "member_id",
        "member_name",
        "from_status",
        "to_status",
        "reason",
        "changed_by",
        "source",
    ]
    rows = (
        [
            isoformat(e.at),
            e.at.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S"),
            e.member_id,
            e.member_name,
            e.from_status or "",
            e.to_status,
            e.reason_name or "",
            e.changed_by,
            e.source,
        ]
        for e in events
    )
    return to_csv(header, rows)
