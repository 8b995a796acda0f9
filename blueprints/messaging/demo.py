"""Demo data: a connected simulator WhatsApp number for the demo organization, three contacts and their
conversations. Idempotent: the messages carry fixed provider ids, so a second run stores nothing new."""

from __future__ import annotations

from datetime import timedelta

from blueprints.channels.inbound import InboundMessage, whatsapp_contact_address
from blueprints.channels.services import Connection, connect_address, get_address
from blueprints.organizations.services import get_organization
from core.db import utcnow
from core.demo import DEMO_ORGANIZATION_ID, seeder

DEMO_PHONE_NUMBER_ID = "100000000000001"
DEMO_PHONE_NUMBER = "+525500000001"

# (contact WhatsApp id, name, [(minutes ago, direction, text)])
DEMO_CONVERSATIONS = (
    (
        "5215512345678",
        "Jessica Ramírez",
        [
            (180, "incoming", "Hola, ¿tienen el plan de 20 GB disponible?"),
            (178, "outgoing", "¡Hola Jessica! Sí, cuesta $299 al mes. ¿Quieres que te lo active?"),
            (20, "incoming", "Sí, por favor. ¿Qué necesito?"),
        ],
    ),
    (
        "5213312345678",
        "Marco Díaz",
        [
            (60 * 30, "incoming", "Mi eSIM no se activa"),
            (60 * 30 - 5, "outgoing", "Lo revisamos. ¿Puedes reiniciar el teléfono?"),
        ],
    ),
    ("5491123456789", "Lucía Fernández", [(45, "incoming", "Buenas, quiero portar mi número")]),
)


@seeder(order=40, name="messaging")
def seed_messaging(environment: str) -> list[str]:
    from blueprints.messaging.ingest import ingest_events

    if get_organization(DEMO_ORGANIZATION_ID) is None:
        return []
    if get_address(DEMO_ORGANIZATION_ID, DEMO_PHONE_NUMBER_ID) is None:
        connect_address(
            DEMO_ORGANIZATION_ID,
            Connection(
                service="whatsapp",
                address=DEMO_PHONE_NUMBER_ID,
                provider="simulator",
                phone_number=DEMO_PHONE_NUMBER,
                verified_name="Demo Company",
            ),
        )
    now = utcnow()
    events = []
    for contact, name, lines in DEMO_CONVERSATIONS:
        for position, (minutes_ago, direction, text) in enumerate(lines):
            events.append(
                InboundMessage(
                    service="whatsapp",
                    organization_address=DEMO_PHONE_NUMBER_ID,
                    external_id=f"wamid.DEMO.{contact}.{position}",
                    contact_address=whatsapp_contact_address(contact),
                    provider_contact_id=contact,
                    contact_name=name,
                    timestamp=now - timedelta(minutes=minutes_ago),
                    content={"kind": "text", "text": text},
                    direction=direction,
                )
            )
    ingest_events(events)
    return [
        f"{environment} WhatsApp (simulator): phone-number id {DEMO_PHONE_NUMBER_ID} ({DEMO_PHONE_NUMBER})"
    ]
