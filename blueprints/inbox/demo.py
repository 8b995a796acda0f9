"""Inbox demo data: a label catalogue with a VIP flow, routing of the demo number to the sales team, and
one conversation already assigned, labelled and annotated."""

from __future__ import annotations

from sqlalchemy import select

from blueprints.inbox.models import ConversationNote, Flow, Label, RoutingRule
from blueprints.inbox.services import assignment, conversations, labels, notes
from blueprints.members.models import Team
from blueprints.messaging.demo import DEMO_PHONE_NUMBER_ID
from blueprints.messaging.models import Conversation
from core.db import db
from core.demo import DEMO_ORGANIZATION_ID, seeder

ORG = DEMO_ORGANIZATION_ID
LABELS = (("vip", "#d97706"), ("lead", "#2563eb"), ("soporte", "#059669"))


@seeder(order=50, name="inbox")
def seed_inbox(environment: str) -> list[str]:
    known = set(db.session.scalars(select(Label.name_key).where(Label.organization_id == ORG)))
    for name, color in LABELS:
        if name not in known:
            labels.create_label(ORG, name, color=color)
    if db.session.scalar(select(Flow.id).where(Flow.organization_id == ORG)) is None:
        labels.create_flow(
            ORG,
            "Bienvenida VIP",
            trigger_labels=["vip"],
            interrupt_labels=["soporte"],
            member_id="ai_demo_sofia",
        )
    team = db.session.scalar(select(Team).where(Team.organization_id == ORG, Team.name_key == "ventas"))
    has_rule = db.session.scalar(select(RoutingRule.id).where(RoutingRule.organization_id == ORG))
    if team is not None and has_rule is None:
        assignment.set_routing(ORG, DEMO_PHONE_NUMBER_ID, "team", str(team.id), None)
    marco = db.session.scalar(
        select(Conversation).where(Conversation.organization_id == ORG, Conversation.name == "Marco Díaz")
    )
    if marco is not None and marco.member_id is None:
        # the verbs a desk page would call
        conversations.add_label(ORG, marco.id, "soporte", actor="demo")
        conversations.assign(ORG, marco.id, "mem_demo_ana", actor="demo")
    if (
        marco is not None
        and db.session.scalar(select(ConversationNote.id).where(ConversationNote.conversation_id == marco.id))
        is None
    ):
        notes.add_note(
            ORG, marco.id, "Cliente con eSIM nueva; revisar activación con el operador.", actor="demo"
        )
    return []
