"""Assignment and routing: who handles a conversation.

Routing (the spec's "assignment flow") as designed here:
- each organization address may have a routing rule: to a team (then an available member of it) or to a
  member (typically an AI agent);
- team assignment (a team rule, ``assign-team``, a member coming online) picks people only: an AI member gets
  conversations by a rule that names it or by hand, never as "the team's available member";
- a member that declines a conversation through :data:`routing_declined` (an AI agent that handed it over to
  people) is not given it by its rule: it goes to the conversation's team or waits unassigned for a person;
- new and reactivated conversations (an incoming message on an unassigned, un-archived conversation) are
  routed by a background job after the message is committed;
- an available member is ``online`` (so not busy, away or offline); among them the one with the fewest
  active conversations wins, ties going to the one idle longest (least recently assigned);
- nobody available leaves the conversation assigned to the team only; the next member of that team who
  comes online picks the waiting conversations up, longest waiting first.

Automatic assignment is a compare-and-set (``UPDATE ... WHERE member_id IS NULL``), so two concurrent
assignments can never give one conversation to two members, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import and_, func, select

from blueprints.audit import services as audit_log
from blueprints.channels.models import OrganizationAddress
from blueprints.inbox.models import MemberAssignment, RoutingRule
from blueprints.inbox.services.common import as_uuid, conversation_or_404, publish_updated, record_event
from blueprints.members.models import Member, Team, TeamMember
from blueprints.members.services.members import find_member
from blueprints.members.services.teams import find_team, members_of
from blueprints.messaging import conversation_state
from blueprints.messaging.models import Conversation
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.events import DomainEvent, publish
from core.hooks import hook
from core.jobs import job

AVAILABLE = "online"
_NEVER = datetime(1970, 1, 1, tzinfo=UTC)


def _touch_member(organization_id: uuid.UUID, member_id: str) -> None:
    row = db.session.scalar(
        select(MemberAssignment).where(
            MemberAssignment.organization_id == organization_id, MemberAssignment.member_id == member_id
        )
    )
    if row is None:
        db.session.add(
            MemberAssignment(organization_id=organization_id, member_id=member_id, last_assigned_at=utcnow())
        )
    else:
        row.last_assigned_at = utcnow()


def _assignment_record(member_id: str, assigned_by: str) -> dict[str, str | None]:
    return {"member_id": member_id, "assigned_by": assigned_by, "assigned_at": isoformat(utcnow())}


def _assigned(conversation: Conversation, member_id: str, assigned_by: str, previous: str | None) -> None:
    """What follows every assignment: the audit event, the member's idle clock and the realtime event."""
    record_event(
        conversation,
        "assignment",
        {"member_id": member_id, "assigned_by": assigned_by, "previous_member_id": previous},
    )
    _touch_member(conversation.organization_id, member_id)
    publish(
        "conversation.assigned",
        conversation.organization_id,
        {"conversation_id": str(conversation.id), "member_id": member_id, "assigned_by": assigned_by},
    )


def assign_member(conversation: Conversation, member_id: str, *, assigned_by: str = "manual") -> None:
    """Assign by an explicit choice (the last explicit choice wins); 400 for an unknown member."""
    if find_member(conversation.organization_id, member_id) is None:
        raise ApiError(400, "extra.member_id: no member with this id in the organization", param="member_id")
    previous = conversation.member_id
    if previous == member_id:
        return
    conversation_state.set_member(conversation, member_id, _assignment_record(member_id, assigned_by))
    _assigned(conversation, member_id, assigned_by, previous)


def unassign_member(conversation: Conversation, *, actor: str) -> None:
    previous = conversation.member_id
    if previous is None:
        return
    conversation_state.set_member(conversation, None, None)
    record_event(conversation, "unassignment", {"member_id": previous, "by": actor})
    publish(
        "conversation.assigned",
        conversation.organization_id,
        {"conversation_id": str(conversation.id), "member_id": None, "previous_member_id": previous},
    )


def claim(conversation: Conversation, member_id: str, *, expected: str | None, assigned_by: str) -> bool:
    """Compare-and-set assignment: succeeds only if nobody assigned the conversation meanwhile."""
    if not conversation_state.claim_member(conversation, member_id, expected=expected):
        return False
    conversation_state.set_assignment_record(conversation, _assignment_record(member_id, assigned_by))
    _assigned(conversation, member_id, assigned_by, expected)
    return True


def change_team(
    conversation: Conversation, team_id: str | None, team_name: str | None, *, actor: str
) -> None:
    """Set the team (``team_name`` defaults to the team's name) or with None remove it; 400 for an unknown
    team."""
    if team_id is None:
        if conversation.team_id is not None:
            record_event(conversation, "team_removed", {"team_id": conversation.team_id, "by": actor})
        conversation_state.set_team(conversation, None, None)
        return
    team = find_team(conversation.organization_id, team_id)
    if team is None:
        raise ApiError(400, "team_id: no team with this id in the organization", param="team_id")
    name = team_name or team.name
    if conversation.team_id != str(team.id) or (conversation.extra or {}).get("team_name") != name:
        record_event(conversation, "team_assigned", {"team_id": str(team.id), "team_name": name, "by": actor})
    conversation_state.set_team(conversation, str(team.id), name)


routing_declined = hook(
    "inbox.routing_declined",
    "fn(organization_id, conversation_id, member_id) -> bool: True keeps the address's rule from giving the "
    "conversation to that member (an AI agent that handed it over to people)",
)


def _declined(conversation: Conversation, member_id: str) -> bool:
    answers = routing_declined.answers(
        organization_id=conversation.organization_id, conversation_id=conversation.id, member_id=member_id
    )
    return any(answers)


def active_counts(organization_id: uuid.UUID, member_ids: list[str]) -> dict[str, int]:
    """Active conversations (status active, not archived) per member, derived in one query: a count that
    cannot drift, whatever happens concurrently."""
    rows = db.session.execute(
        select(Conversation.member_id, func.count())
        .where(
            Conversation.organization_id == organization_id,
            Conversation.member_id.in_(member_ids),
            and_(Conversation.status == "active", Conversation.archived_at.is_(None)),
        )
        .group_by(Conversation.member_id)
    )
    return {member_id: count for member_id, count in rows}


def available_member(organization_id: uuid.UUID, team_id: str) -> Member | None:
    """The team's online *person* with the fewest active conversations, ties to the longest idle. AI members
    are never picked (they are always online and would take every conversation a team should answer)."""
    team = find_team(organization_id, team_id)
    if team is None:
        return None
    candidates = [m for m in members_of([team.id]).get(team.id, []) if m.status == AVAILABLE and not m.ai]
    if not candidates:
        return None
    ids = [m.id for m in candidates]
    counts = active_counts(organization_id, ids)
    idle = dict(
        db.session.execute(
            select(MemberAssignment.member_id, MemberAssignment.last_assigned_at).where(
                MemberAssignment.organization_id == organization_id, MemberAssignment.member_id.in_(ids)
            )
        ).all()
    )
    return min(candidates, key=lambda m: (counts.get(m.id, 0), idle.get(m.id) or _NEVER, m.id))


def _auto_assign_in_team(conversation: Conversation, *, assigned_by: str) -> str | None:
    """Give the conversation to an available member of its team (at most a few tries under contention)."""
    if conversation.team_id is None:
        return None
    team_member_ids = {m.id for m in _team_members(conversation)}
    if conversation.member_id in team_member_ids:
        return conversation.member_id
    for _ in range(3):
        member = available_member(conversation.organization_id, conversation.team_id)
        if member is None:
            return None
        if claim(conversation, member.id, expected=conversation.member_id, assigned_by=assigned_by):
            return member.id
        if conversation.member_id in team_member_ids:
            return conversation.member_id
    return None


def _team_members(conversation: Conversation) -> list[Member]:
    team = find_team(conversation.organization_id, conversation.team_id or "")
    return members_of([team.id]).get(team.id, []) if team else []


def assign_team(
    organization_id: uuid.UUID, conversation_id: str, team_id: str, team_name: str | None, *, actor: str
) -> tuple[Conversation, str | None]:
    """Set the team, then give the conversation to an available member of it; returns the conversation
    and the member assigned (None: nobody available, the team keeps it waiting)."""
    conversation = conversation_or_404(organization_id, conversation_id, lock=True)
    change_team(conversation, team_id, team_name, actor=actor)
    member_id = _auto_assign_in_team(conversation, assigned_by="team")
    publish_updated(conversation, {"extra": ["team_id"]})
    return conversation, member_id


# ---- routing rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Routing:
    """Where an address's new conversations go (``target`` none when it has no rule)."""

    organization_address: str
    target: str
    team_id: str | None
    member_id: str | None


def _routing(rule: RoutingRule | None, address: str) -> Routing:
    if rule is None:
        return Routing(address, "none", None, None)
    return Routing(rule.organization_address, rule.target, rule.team_id, rule.member_id)


def _address_or_404(organization_id: uuid.UUID, address: str) -> None:
    found = db.session.scalar(
        select(OrganizationAddress.id).where(
            OrganizationAddress.organization_id == organization_id, OrganizationAddress.address == address
        )
    )
    if found is None:
        raise ApiError(404, "Organization address not found")


def _rule(organization_id: uuid.UUID, address: str) -> RoutingRule | None:
    return db.session.scalar(
        select(RoutingRule).where(
            RoutingRule.organization_id == organization_id, RoutingRule.organization_address == address
        )
    )


def get_routing(organization_id: uuid.UUID, address: str) -> Routing:
    _address_or_404(organization_id, address)
    return _routing(_rule(organization_id, address), address)


def routings(organization_id: uuid.UUID) -> dict[str, Routing]:
    """Every routing rule of the organization by address, in one query (the channels page lists them)."""
    rules = db.session.scalars(select(RoutingRule).where(RoutingRule.organization_id == organization_id))
    return {rule.organization_address: _routing(rule, rule.organization_address) for rule in rules}


def set_routing(
    organization_id: uuid.UUID, address: str, target: str, team_id: str | None, member_id: str | None
) -> Routing:
    _address_or_404(organization_id, address)
    if target == "team" and find_team(organization_id, team_id or "") is None:
        raise ApiError(400, "team_id: no team with this id in the organization", param="team_id")
    if target == "member" and find_member(organization_id, member_id or "") is None:
        raise ApiError(400, "member_id: no member with this id in the organization", param="member_id")
    rule = _rule(organization_id, address) or RoutingRule(
        organization_id=organization_id, organization_address=address
    )
    team = find_team(organization_id, team_id or "") if target == "team" else None
    rule.target = target
    rule.team_id = str(team.id) if team is not None else None
    rule.member_id = member_id if target == "member" else None
    db.session.add(rule)
    db.session.flush()
    # Where an address's conversations go is an administrative choice: audited like connecting it, from
    # the API and the desk's channels page alike (names of the fields, never values).
    audit_log.record(
        "routing.updated",
        "organization_address",
        address,
        ["target", "team_id", "member_id"],
        organization_id=organization_id,
    )
    return _routing(rule, address)


def route(organization_id: uuid.UUID, conversation_id: str) -> str | None:
    """Route a new or reactivated conversation by its address's rule; returns the member assigned."""
    conversation = conversation_or_404(organization_id, conversation_id, lock=True)
    if conversation.member_id is not None or conversation.archived_at is not None:
        return None
    rule = _rule(organization_id, conversation.organization_address)
    member_id: str | None = None
    if rule is not None and rule.target == "team" and rule.team_id:
        if conversation.team_id is None:
            change_team(conversation, rule.team_id, None, actor="routing")
        member_id = _auto_assign_in_team(conversation, assigned_by="routing")
    elif rule is not None and rule.target == "member" and rule.member_id:
        if _declined(conversation, rule.member_id):
            # handed over to people by that member: the team's queue (set by the hand-off), or unassigned
            if conversation.team_id is not None:
                member_id = _auto_assign_in_team(conversation, assigned_by="routing")
        elif claim(conversation, rule.member_id, expected=None, assigned_by="routing"):
            member_id = rule.member_id
    elif conversation.team_id is not None:
        member_id = _auto_assign_in_team(conversation, assigned_by="routing")
    return member_id


def pick_up_waiting(organization_id: uuid.UUID, member_id: str) -> list[str]:
    """A member came online: hand the conversations waiting in their teams out, longest waiting first."""
    member = find_member(organization_id, member_id)
    if member is None or member.status != AVAILABLE or member.ai:
        return []  # an AI member never takes a team's waiting conversations
    team_ids = [
        str(team_id)
        for team_id in db.session.scalars(
            select(Team.id)
            .join(TeamMember, TeamMember.team_id == Team.id)
            .where(TeamMember.member_pk == member.pk, Team.organization_id == organization_id)
        )
    ]
    if not team_ids:
        return []
    waiting = list(
        db.session.scalars(
            select(Conversation)
            .where(
                Conversation.organization_id == organization_id,
                Conversation.team_id.in_(team_ids),
                Conversation.member_id.is_(None),
                Conversation.archived_at.is_(None),
                Conversation.status == "active",
            )
            .order_by(Conversation.last_incoming_at.is_(None), Conversation.last_incoming_at, Conversation.id)
        )
    )
    assigned: list[str] = []
    for conversation in waiting:
        if _auto_assign_in_team(conversation, assigned_by="routing"):
            assigned.append(str(conversation.id))
    return assigned


# Kept for jobs queued by an earlier release; new batches use route_conversations_job.
@job(retries=2, retry_delay=5)
def route_conversation_job(organization_id: str, conversation_id: str) -> str | None:
    try:
        return route(uuid.UUID(organization_id), conversation_id)
    except ApiError:
        return None  # deleted meanwhile: nothing to route


@job(retries=2, retry_delay=5)
def route_conversations_job(organization_id: str, conversation_ids: list[str]) -> list[str | None]:
    """Route each conversation of an incoming batch (in the order their messages came).

    Most conversations of a batch have nothing to route (already assigned, or no rule and no team): one
    query finds the ones that may, and only those go through :func:`route`, which locks and checks again.
    Routing each one in turn cost five queries a conversation, a fifth of a burst's drain time."""
    org = uuid.UUID(organization_id)
    routable = _routable(org, conversation_ids)
    routed: list[str | None] = []
    for conversation_id in conversation_ids:
        if conversation_id not in routable:
            routed.append(None)
            continue
        try:
            routed.append(route(org, conversation_id))
        except ApiError:  # deleted meanwhile (raised by the lookup, before anything is written)
            routed.append(None)
    return routed


def _routable(organization_id: uuid.UUID, conversation_ids: list[str]) -> set[str]:
    """The ids among ``conversation_ids`` that :func:`route` could act on: the organization's, unassigned,
    not archived, and with a routing rule on their address or a team (two queries for the batch)."""
    ids = {parsed for value in conversation_ids if (parsed := as_uuid(value)) is not None}
    if not ids:
        return set()
    rows = db.session.execute(
        select(Conversation.id, Conversation.organization_address, Conversation.team_id).where(
            Conversation.organization_id == organization_id,
            Conversation.id.in_(ids),
            Conversation.member_id.is_(None),
            Conversation.archived_at.is_(None),
        )
    ).all()
    addresses = {address for _, address, _ in rows}
    ruled = (
        set(
            db.session.scalars(
                select(RoutingRule.organization_address).where(
                    RoutingRule.organization_id == organization_id,
                    RoutingRule.organization_address.in_(addresses),
                )
            )
        )
        if addresses
        else set()
    )
    return {str(id_) for id_, address, team_id in rows if team_id is not None or address in ruled}


@job(retries=2, retry_delay=5)
def pick_up_waiting_job(organization_id: str, member_id: str) -> list[str]:
    return pick_up_waiting(uuid.UUID(organization_id), member_id)


# ------------------------------------------------------------------------------- domain events it follows


def route_incoming_messages(events: list[DomainEvent]) -> None:
    """``message.created`` batches: one routing job per organization, each conversation once (a webhook
    batch of 200 messages in 40 conversations routes 40 conversations in one job, not 200 jobs)."""
    by_organization: dict[str, dict[str, None]] = {}
    for event in events:
        data = event.data
        if data.get("direction") == "incoming" and data.get("conversation_id"):
            by_organization.setdefault(event.organization_id, {})[str(data["conversation_id"])] = None
    for organization_id, conversation_ids in by_organization.items():
        route_conversations_job.enqueue(organization_id, list(conversation_ids))


def pick_up_when_online(event: DomainEvent) -> None:
    """``presence.updated``: a member who comes online picks up the conversations waiting for them."""
    if event.data.get("status") == "online" and event.data.get("member_id"):
        pick_up_waiting_job.enqueue(event.organization_id, event.data["member_id"])
