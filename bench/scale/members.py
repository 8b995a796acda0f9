"""The people of Scale Co: 20 human agents who can sign in (two of them supervisors), 5 AI agents with
configurations, three teams, unavailability reasons and a year of presence history.

Structure (AI agents, configurations, teams, reasons) goes through the members area's services; users,
human members and the history are bulk rows shaped exactly as ``services.users.create_user`` and
``services.presence`` write them. Every member's current status is its last history row, as the
statistics expect."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from random import Random
from typing import Any

from argon2 import PasswordHasher
from sqlalchemy import update

from bench.scale.common import Bulk, Clock, Progress, new_id
from blueprints.members.agent_config import AgentConfigDraft, parse
from blueprints.members.models import Member, MemberStatusEvent, User
from blueprints.members.services import agents, reasons, teams
from blueprints.members.services.members import create_member
from core.db import db
from core.demo import derived_secret

HUMANS = 20
SUPERVISORS = 2
EMAIL_DOMAIN = "scaleco.test"
ACTOR = "scale"
# (member id, name, team, business category, identity)
AI_AGENTS = (
    ("scale_ai_sofia", "Sofía (ventas)", "Ventas", "sales", "Eres Sofía, asesora de ventas de Scale Co."),
    ("scale_ai_max", "Max (soporte)", "Soporte", "support", "Eres Max, agente de soporte técnico."),
    ("scale_ai_lia", "Lía (cobranza)", "Cobranza", "billing", "Eres Lía; ayudas con pagos y facturas."),
    ("scale_ai_tomas", "Tomás (portabilidad)", "Soporte", "support", "Eres Tomás; guías portabilidades."),
    ("scale_ai_vera", "Vera (eSIM viajeros)", "Ventas", "sales", "Eres Vera; vendes eSIM para viajar."),
)
TEAMS = (
    ("Ventas", "Ventas a personas y empresas"),
    ("Soporte", "Soporte técnico y portabilidad"),
    ("Cobranza", "Pagos, facturas y aclaraciones"),
)
REASONS = (("Comida", "Hora de comida"), ("Junta", "Junta de equipo"), ("Capacitación", "Curso interno"))
# Human agents per team, in member order: 8 sales, 8 support, 4 billing.
TEAM_SIZES = (("Ventas", 8), ("Soporte", 8), ("Cobranza", 4))


@dataclass
class People:
    humans: list[str] = field(default_factory=list)  # member ids
    names: dict[str, str] = field(default_factory=dict)
    ai: list[str] = field(default_factory=list)
    team_of: dict[str, str] = field(default_factory=dict)  # member id -> team name
    team_ids: dict[str, str] = field(default_factory=dict)  # team name -> team id (text)
    supervisors: list[str] = field(default_factory=list)

    def humans_of(self, team: str) -> list[str]:
        return [m for m in self.humans if self.team_of[m] == team]

    def ai_of(self, team: str) -> list[str]:
        return [m for m in self.ai if self.team_of[m] == team]


def password() -> str:
    """One password for every Scale Co desk login (derived from SECRET_KEY, printed by the command)."""
    return derived_secret("scale-desk-password", 16)


def human_ids() -> list[str]:
    return [f"scale_agent_{n:02d}" for n in range(1, HUMANS + 1)]


def email_of(member_id: str) -> str:
    return f"{member_id.replace('scale_', '').replace('_', '')}@{EMAIL_DOMAIN}"


def create_people(organization_id: uuid.UUID, rng: Random, clock: Clock) -> People:
    """Reasons, humans (users + members), AI agents with configurations, teams. Rows only in the session
    (the caller commits)."""
    people = People()
    joined = clock.start - timedelta(days=7)
    for name, description in REASONS:
        reasons.create_reason(organization_id, {"name": name, "description": description})
    # One Argon2 hash for the one shared password: 20 hashes would cost seconds for the same secret.
    password_hash = PasswordHasher().hash(password())
    team_names = [team for team, size in TEAM_SIZES for _ in range(size)]
    from bench.scale.common import person_name

    for index, member_id in enumerate(human_ids()):
        name = person_name(rng)
        role = "supervisor" if index < SUPERVISORS else "agent"
        email = email_of(member_id)
        user_id = new_id(rng)
        db.session.add(
            User(
                id=user_id,
                organization_id=organization_id,
                email=email,
                password_hash=password_hash,
                name=name,
                role=role,
                active=True,
                created_at=joined,
                updated_at=joined,
            )
        )
        db.session.add(
            Member(
                pk=new_id(rng),
                id=member_id,
                organization_id=organization_id,
                name=name,
                ai=False,
                user_id=user_id,
                extra={"email": email, "role": role},
                status="offline",
                chosen_status="offline",
                status_since=joined,
                created_at=joined,
                updated_at=joined,
            )
        )
        people.humans.append(member_id)
        people.names[member_id] = name
        people.team_of[member_id] = team_names[index]
        if role == "supervisor":
            people.supervisors.append(member_id)
    db.session.flush()
    for member_id, name, team, category, identity in AI_AGENTS:
        create_member(organization_id, {"id": member_id, "name": name, "ai": True}, changed_by=ACTOR)
        agents.replace_config(
            organization_id,
            member_id,
            parse(
                AgentConfigDraft,
                {
                    "sections": {
                        "identity": identity,
                        "rules": "Responde en español, breve y amable. Nunca inventes precios.",
                        "chat": {"temperature": 0.4, "context_messages": 30},
                    },
                    "tools": {"transfer_to_human": {"enabled": True}, "create_ticket": {"enabled": True}},
                    "agent_type": category,
                    "business_category": category,
                },
            ),
            changed_by=ACTOR,
        )
        people.ai.append(member_id)
        people.names[member_id] = name
        people.team_of[member_id] = team
    for team, description in TEAMS:
        members = [m for m in [*people.humans, *people.ai] if people.team_of[m] == team]
        created = teams.create_team(
            organization_id, {"name": team, "description": description, "member_ids": members}
        )
        people.team_ids[team] = str(created.id)
    # The AI agents joined with the humans, a week before the year of data (services stamp "now").
    db.session.execute(
        update(Member)
        .where(Member.organization_id == organization_id)
        .values(created_at=joined, updated_at=joined, status_since=joined)
    )
    return people


def _event(
    organization_id: uuid.UUID,
    rng: Random,
    member_id: str,
    name: str,
    previous: str | None,
    status: str,
    at: datetime,
    reason: tuple[uuid.UUID, str] | None,
    source: str,
) -> dict[str, Any]:
    return {
        "id": new_id(rng),
        "organization_id": organization_id,
        "member_id": member_id,
        "member_name": name,
        "from_status": previous,
        "to_status": status,
        "reason_id": reason[0] if reason else None,
        "reason_name": reason[1] if reason else None,
        "changed_by": ACTOR if source == "created" else f"member:{member_id}",
        "source": source,
        "at": at,
    }


def _workday(
    clock: Clock, rng: Random, day: date, reasons_by_name: dict[str, tuple[uuid.UUID, str]]
) -> list[tuple[str, datetime, tuple[uuid.UUID, str] | None]]:
    """One working day: online around 9, maybe a meeting, lunch, maybe training, offline around 18."""
    steps: list[tuple[str, datetime, tuple[uuid.UUID, str] | None]] = []
    at = clock.local(day, 8, 40) + timedelta(minutes=rng.randrange(50))
    steps.append(("online", at, None))
    if rng.random() < 0.3:
        meeting = clock.local(day, 10, 0) + timedelta(minutes=rng.randrange(90))
        steps.append(("busy", meeting, reasons_by_name["Junta"]))
        steps.append(("online", meeting + timedelta(minutes=rng.randrange(30, 75)), None))
    lunch = clock.local(day, 13, 30) + timedelta(minutes=rng.randrange(60))
    steps.append(("away", lunch, reasons_by_name["Comida"]))
    steps.append(("online", lunch + timedelta(minutes=rng.randrange(40, 70)), None))
    if rng.random() < 0.1:
        training = clock.local(day, 16, 0) + timedelta(minutes=rng.randrange(30))
        steps.append(("away", training, reasons_by_name["Capacitación"]))
        steps.append(("online", training + timedelta(minutes=rng.randrange(45, 90)), None))
    steps.append(("offline", clock.local(day, 17, 45) + timedelta(minutes=rng.randrange(60)), None))
    return steps


def presence_history(
    organization_id: uuid.UUID, people: People, rng: Random, clock: Clock, progress: Progress
) -> int:
    """A year of status changes after each member's ``created`` row; then each member's current status is
    set to its last change (status, since, reason, chosen status)."""
    from blueprints.members.models import UnavailabilityReason

    reasons_by_name = {
        r.name: (r.id, r.name)
        for r in db.session.query(UnavailabilityReason).filter_by(organization_id=organization_id)
    }
    joined = clock.start - timedelta(days=7)
    table = MemberStatusEvent.__table__
    bulk = Bulk(table)
    # The created rows of the AI agents came from the service, stamped "now": back-date them.
    db.session.execute(
        update(MemberStatusEvent)
        .where(MemberStatusEvent.organization_id == organization_id, MemberStatusEvent.source == "created")
        .values(at=joined)
    )
    days = sorted(clock.days)
    final: dict[str, tuple[str, datetime, tuple[uuid.UUID, str] | None]] = {}
    expected = len(people.humans) * len(days) * 5 + len(people.ai) * 26
    with progress.bar("member_status_events", expected) as bar:
        bulk.on_write[table] = bar.update
        for index, member_id in enumerate(people.humans):
            name = people.names[member_id]
            bulk.add(
                table, _event(organization_id, rng, member_id, name, None, "offline", joined, None, "created")
            )
            status = "offline"
            works_saturday = index % 4 == 3
            for day in days:
                weekday = day.weekday()
                if weekday == 6 or (weekday == 5 and not works_saturday) or rng.random() < 0.04:
                    continue  # day off (Sundays, most Saturdays, holidays and sick days)
                for new_status, at, reason in _workday(clock, rng, day, reasons_by_name):
                    if at > clock.now:
                        break
                    bulk.add(
                        table,
                        _event(organization_id, rng, member_id, name, status, new_status, at, reason, "api"),
                    )
                    status = new_status
                    final[member_id] = (new_status, at, reason)
        for member_id in people.ai:
            status = "online"  # AI agents are created online; once in a while they stop for maintenance
            day = days[0] + timedelta(days=rng.randrange(14))
            while day <= days[-1]:
                stop = clock.local(day, 3, rng.randrange(60))
                back = stop + timedelta(minutes=rng.randrange(20, 90))
                if back > clock.now:
                    break
                name = people.names[member_id]
                bulk.add(
                    table, _event(organization_id, rng, member_id, name, status, "offline", stop, None, "api")
                )
                bulk.add(
                    table,
                    _event(organization_id, rng, member_id, name, "offline", "online", back, None, "api"),
                )
                final[member_id] = ("online", back, None)
                day += timedelta(days=rng.randrange(20, 40))
        bulk.flush()
    for member_id, (status, at, reason) in final.items():
        reason_id = reason[0] if reason else None
        db.session.execute(
            update(Member)
            .where(Member.organization_id == organization_id, Member.id == member_id)
            .values(
                status=status,
                status_since=at,
                status_reason_id=reason_id,
                chosen_status=status,
                chosen_reason_id=reason_id,
                auto_offline=False,
            )
        )
    db.session.commit()
    return bulk.written[table.name]
