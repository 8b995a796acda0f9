"""Inbox demo data: a label catalogue with a VIP flow, routing of the demo number to the sales team, and
the demo conversations in every state an agent meets (assigned to a person, to another teammate, to the
AI agent, unassigned, labelled, closed, archived), with internal notes and a template sent after the
service window closed. Every change goes through the verbs a desk page calls. Idempotent: each step runs
only while its conversation is still in its freshly seeded state."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select

from blueprints.inbox.models import ConversationNote, Flow, Label, RoutingRule
from blueprints.inbox.services import assignment, conversations, labels, notes
from blueprints.members.models import Team
from blueprints.messaging import services as messaging
from blueprints.messaging.demo import DEMO_PHONE_NUMBER_ID
from blueprints.messaging.models import CannedResponse, Conversation, Message
from blueprints.messaging.sending import TemplateSend, send_template
from core.db import db
from core.demo import DEMO_ORGANIZATION_ID, seeder

ORG = DEMO_ORGANIZATION_ID
ACTOR = "demo"
LABELS = (("vip", "#d97706"), ("lead", "#2563eb"), ("soporte", "#059669"))

# name -> (assignee member id or None, labels, note or None, end state: "open" | "closed" | "archived")
STATES: dict[str, tuple[str | None, tuple[str, ...], str | None, str]] = {
    "Marco Díaz": (
        "mem_demo_ana",
        ("soporte",),
        "Cliente con eSIM nueva; revisar activación con el operador.",
        "open",
    ),
    "Diego Treviño": (
        "mem_demo_ana",
        ("soporte",),
        "Le falta el APN «internet.demo». Enviarle la guía.",
        "open",
    ),
    "María Guadalupe Hernández de la Cruz Villaseñor": (None, ("vip",), None, "open"),
    "Camila Ruiz": (None, ("lead",), None, "open"),
    "Fernanda Ortiz": ("ai_demo_sofia", (), None, "open"),
    "Valeria Montes": ("mem_demo_ben", ("lead",), "Pasar a ventas empresariales (50 líneas).", "closed"),
    "Rodrigo Canul": ("mem_demo_ana", (), None, "archived"),
}


def _conversation(name: str) -> Conversation | None:
    return db.session.scalar(
        select(Conversation).where(Conversation.organization_id == ORG, Conversation.name == name)
    )


def _has_note(conversation: Conversation) -> bool:
    found = select(ConversationNote.id).where(ConversationNote.conversation_id == conversation.id).limit(1)
    return db.session.scalar(found) is not None


def _apply(conversation: Conversation, state: tuple[str | None, tuple[str, ...], str | None, str]) -> None:
    member_id, names, note, end = state
    if conversation.member_id is not None or conversation.archived_at is not None:
        return  # seeded before (or changed by a person since): leave it as it is
    for name in names:
        conversations.add_label(ORG, conversation.id, name, actor=ACTOR)
    if member_id is not None:
        conversations.assign(ORG, conversation.id, member_id, actor=ACTOR)
    if note is not None and not _has_note(conversation):
        notes.add_note(ORG, conversation.id, note, actor=ACTOR)
    ends: dict[str, Callable[[], object]] = {
        "closed": lambda: conversations.set_status(ORG, conversation.id, "closed", actor=ACTOR),
        "archived": lambda: conversations.archive(ORG, conversation.id, actor=ACTOR),
    }
    if end in ends:
        ends[end]()


def _send_follow_up_template(conversation: Conversation) -> None:
    """Marco's window closed a day ago: the agent followed up with an approved template."""
    sent = select(Message.id).where(
        Message.conversation_id == conversation.id, Message.template_name.is_not(None)
    )
    if db.session.scalar(sent.limit(1)) is not None:
        return
    send_template(
        ORG,
        TemplateSend(
            organization_address=DEMO_PHONE_NUMBER_ID,
            to=conversation.contact_address,
            meta_template_id="sim_welcome",
            components=[
                {"type": "body", "parameters": [{"type": "text", "parameter_name": "name", "text": "Marco"}]}
            ],
            member_id="mem_demo_ana",
        ),
    )


# Canned replies agents insert with "/" in the composer (the settings page lists and edits them).
CANNED = (
    ("saludo", "Saludo", "¡Hola {{contact.first_name}}! Gracias por escribirnos. ¿En qué te puedo ayudar?"),
    (
        "atencion",
        "Horario de atención",
        "Atendemos de lunes a viernes de 9:00 a 18:00 (hora del centro de México).",
    ),
    (
        "envio",
        "Tiempo de envío",
        "Tu pedido sale en 24 a 48 horas hábiles; te compartimos la guía en cuanto la tengamos.",
    ),
    (
        "cierre",
        "Cierre",
        "Gracias por tu paciencia, {{contact.first_name}}. ¿Hay algo más en lo que te pueda ayudar?",
    ),
)


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
    if db.session.scalar(select(CannedResponse.id).where(CannedResponse.organization_id == ORG)) is None:
        for short_code, title, content in CANNED:
            messaging.create_canned_response(ORG, short_code=short_code, title=title, content=content)
    team = db.session.scalar(select(Team).where(Team.organization_id == ORG, Team.name_key == "ventas"))
    has_rule = db.session.scalar(select(RoutingRule.id).where(RoutingRule.organization_id == ORG))
    if team is not None and has_rule is None:
        assignment.set_routing(ORG, DEMO_PHONE_NUMBER_ID, "team", str(team.id), None)
    for name, state in STATES.items():
        conversation = _conversation(name)
        if conversation is not None:
            _apply(conversation, state)
    marco = _conversation("Marco Díaz")
    if marco is not None:
        _send_follow_up_template(marco)
    return []
