"""Demo knowledge: the documents the demo organization's AI agents (Sofía, Max) answer from, so the
offline responder answers a customer's question with no model configured. Idempotent (by title)."""

from __future__ import annotations

from sqlalchemy import select

from blueprints.ai import knowledge
from blueprints.ai.models import KnowledgeDocument
from blueprints.organizations.services import get_organization
from core.db import db
from core.demo import DEMO_ORGANIZATION_ID, seeder

ORG = DEMO_ORGANIZATION_ID
DOCUMENTS = (
    (
        "Horario de atención",
        "Nuestro horario de atención es de lunes a viernes de 9:00 a 19:00 y sábados de 10:00 a 14:00 "
        "(hora de la Ciudad de México). Los domingos y días festivos no hay atención en vivo.",
    ),
    (
        "Envío de la SIM física",
        "El envío de la SIM física es gratis a todo México y tarda de 2 a 4 días hábiles. Recibirás la guía "
        "de rastreo por WhatsApp en cuanto salga el paquete.",
    ),
    (
        "Activar una eSIM",
        "Para activar tu eSIM escanea el código QR que te enviamos por correo desde Ajustes > Red celular > "
        "Agregar eSIM. Necesitas conexión a internet (wifi) durante la activación.\n\n"
        "Si el teléfono dice que el código ya fue usado, escríbenos y te enviamos uno nuevo.",
    ),
    (
        "Portabilidad de número",
        "Para portar tu número necesitas tu NIP de portabilidad (marca 051 desde tu línea actual) y una "
        "identificación oficial. La portabilidad se completa en 24 horas hábiles.",
    ),
    (
        "Opening hours",
        "Our support team answers Monday to Friday from 9:00 to 19:00 and Saturdays from 10:00 to 14:00 "
        "(Mexico City time).",
    ),
)


@seeder(order=45, name="ai")
def seed_knowledge(environment: str) -> list[str]:
    if get_organization(ORG) is None:
        return []
    existing = set(
        db.session.scalars(select(KnowledgeDocument.title).where(KnowledgeDocument.organization_id == ORG))
    )
    for title, body in DOCUMENTS:
        if title not in existing:
            knowledge.create_document(ORG, {"title": title, "body": body, "source": "demo"})
    return []
