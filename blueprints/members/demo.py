"""Demo people: a supervisor and two agents who can sign in, two AI agents with configurations, a team,
unavailability reasons and a day of status history. Idempotent: looks everything up by its fixed id."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from blueprints.members.agent_config import AgentConfigDraft, parse
from blueprints.members.models import UnavailabilityReason
from blueprints.members.services import agents, presence, reasons, teams
from blueprints.members.services.members import create_member, find_member
from blueprints.members.services.users import create_user, find_user_by_email
from core.db import db, utcnow
from core.demo import DEMO_ORGANIZATION_ID, derived_secret, seeder

ORG = DEMO_ORGANIZATION_ID
PEOPLE = (
    # member id, name, e-mail, role
    ("mem_demo_supervisor", "Laura Méndez", "supervisor@demo.test", "supervisor"),
    ("mem_demo_ana", "Ana López", "ana@demo.test", "agent"),
    ("mem_demo_ben", "Benjamín Ruiz", "ben@demo.test", "agent"),
)
REASONS = (
    ("Lunch", "Meal break"),
    ("Training", "Internal training session"),
    ("Meeting", "Team or customer meeting"),
)
AI_AGENTS = {
    "ai_demo_sofia": (
        "Sofía (ventas)",
        {
            "sections": {
                "identity": "Eres Sofía, asesora de ventas de Demo Company.",
                "rules": "Responde en el idioma del cliente. Nunca inventes precios.",
                "tone": "Cercano y breve.",
                "chat": {"temperature": 0.5, "context_messages": 30},
            },
            "tools": {"send_product": {"enabled": True}, "transfer_to_human": {"enabled": True}},
            "agent_type": "sales",
            "business_category": "sales",
            "notifications": {"transfer_to_human": {"email": ["supervisor@demo.test"]}},
            "call_transfers": [
                {
                    "name": "Hablar con una persona",
                    "condition": "El cliente pide hablar con una persona",
                    "target": "mem_demo_supervisor",
                    "announce_message": "Te comunico con Laura.",
                }
            ],
        },
    ),
    "ai_demo_max": (
        "Max (soporte)",
        {
            "sections": {
                "identity": "You are Max, Demo Company's support agent.",
                "escalation": "Open a ticket.",
            },
            "tools": {"search_knowledge": {"enabled": True}, "create_ticket": {"enabled": True}},
            "voice": "alloy",
            "agent_type": "support",
            "business_category": "support",
            "notifications": {"end_of_call": {"webhook": "https://hooks.demo.test/calls"}},
        },
    ),
}


def _password(email: str) -> str:
    return derived_secret(f"demo-desk-password-{email}", 16)


@seeder(order=20, name="members")
def seed_members(environment: str) -> list[str]:
    for name, description in REASONS:
        exists = db.session.scalar(
            select(UnavailabilityReason.id).where(
                UnavailabilityReason.organization_id == ORG, UnavailabilityReason.name_key == name.lower()
            )
        )
        if exists is None:
            reasons.create_reason(ORG, {"name": name, "description": description})
    created_people = []
    for member_id, name, email, role in PEOPLE:
        if find_user_by_email(email) is None and find_member(ORG, member_id) is None:
            create_user(
                ORG, email=email, password=_password(email), name=name, role=role, member_id=member_id
            )
            created_people.append(member_id)
    for member_id, (name, config) in AI_AGENTS.items():
        if find_member(ORG, member_id) is None:
            create_member(ORG, {"id": member_id, "name": name, "ai": True}, changed_by="demo")
            agents.replace_config(ORG, member_id, parse(AgentConfigDraft, config), changed_by="demo")
    if not any(t.name == "Ventas" for t in teams.list_teams(ORG, skip=0, take=200).items):
        teams.create_team(
            ORG,
            {
                "name": "Ventas",
                "description": "Inbound sales",
                "member_ids": ["mem_demo_ana", "mem_demo_ben", "ai_demo_sofia"],
            },
        )
    if created_people:
        _seed_history()
    lines = [f"Desk login: {email} / {_password(email)} ({role})" for _, _, email, role in PEOPLE[:2]]
    return lines if environment == "live" else []


def _seed_history() -> None:
    """Yesterday and today for Ana and Ben, so the statistics have something to show."""
    lunch = db.session.scalar(
        select(UnavailabilityReason).where(
            UnavailabilityReason.organization_id == ORG, UnavailabilityReason.name_key == "lunch"
        )
    )
    start = utcnow() - timedelta(hours=26)
    steps = (
        ("mem_demo_ana", "online", None, 0),
        ("mem_demo_ben", "online", None, 30),
        ("mem_demo_ana", "away", lunch, 240),
        ("mem_demo_ana", "online", None, 300),
        ("mem_demo_ben", "busy", None, 420),
        ("mem_demo_ben", "offline", None, 540),
        ("mem_demo_ana", "offline", None, 560),
        ("mem_demo_ana", "online", None, 24 * 60),
        ("mem_demo_ben", "away", lunch, 24 * 60 + 30),
    )
    for member_id, status, reason, minutes in steps:
        presence.change_status(
            ORG,
            member_id,
            status,
            reason.id if reason else None,
            changed_by="demo",
            at=start + timedelta(minutes=minutes),
        )
