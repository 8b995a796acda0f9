"""Demo data: connected simulator addresses (a WhatsApp number, an Instagram account, a Messenger Page)
for the demo organization, with contacts and conversations that show what the desk can display: text,
replies quoting their original, an image, a document, a location, long names and long messages, and
conversations on all three channels. Idempotent: the messages carry fixed provider ids, so a second run
stores nothing new. States (assignments, labels, archive, notes, a template) are the inbox seeder's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from blueprints.channels.inbound import InboundMessage, whatsapp_contact_address
from blueprints.channels.services import Connection, connect_address, get_address
from blueprints.messaging.ingest import ingest_events
from blueprints.organizations.services import get_organization
from core.db import utcnow
from core.demo import DEMO_ORGANIZATION_ID, seeder

DEMO_PHONE_NUMBER_ID = "100000000000001"
DEMO_PHONE_NUMBER = "+525500000001"
DEMO_INSTAGRAM_ID = "17841400000000001"
DEMO_PAGE_ID = "100000000000002"

# Media of the demo are files of the desk itself (static/demo/), so the demo works offline.
SCREEN_IMAGE = "/static/demo/pantalla-sin-senal.svg"
RECEIPT_DOCUMENT = "/static/demo/comprobante-de-pago.pdf"

Line = tuple[int, str, Any]  # (minutes ago, direction, text or a content dict)

# (service, contact id, name, [lines]); a line's external id is its position, so replies can quote one
DEMO_CONVERSATIONS: tuple[tuple[str, str, str, list[Line]], ...] = (
    (
        "whatsapp",
        "5215512345678",
        "Jessica Ramírez",
        [
            (180, "incoming", "Hola, ¿tienen el plan de 20 GB disponible?"),
            (178, "outgoing", "¡Hola Jessica! Sí, cuesta $299 al mes. ¿Quieres que te lo active?"),
            (20, "incoming", "Sí, por favor. ¿Qué necesito?"),
        ],
    ),
    (
        "whatsapp",
        "5213312345678",
        "Marco Díaz",
        [
            (60 * 30, "incoming", "Mi eSIM no se activa"),
            (60 * 30 - 5, "outgoing", "Lo revisamos. ¿Puedes reiniciar el teléfono?"),
        ],
    ),
    ("whatsapp", "5491123456789", "Lucía Fernández", [(45, "incoming", "Buenas, quiero portar mi número")]),
    (
        "whatsapp",
        "5218112340001",
        "Diego Treviño",
        [
            (95, "incoming", "Desde ayer no tengo señal"),
            (
                94,
                "incoming",
                {
                    "kind": "image",
                    "text": "Así se ve mi pantalla",
                    "file": {"uri": SCREEN_IMAGE, "mime_type": "image/svg+xml"},
                },
            ),
            (80, "outgoing", "Gracias, Diego. Ya vemos el problema: es la configuración del APN."),
            (12, "incoming", {"kind": "text", "text": "¿Y cómo lo cambio?", "reply_to": 2}),
        ],
    ),
    (
        "whatsapp",
        "5215599001122",
        "Fernanda Ortiz",
        [
            (300, "incoming", "¿Dónde está su tienda más cercana?"),
            (
                290,
                "outgoing",
                {
                    "kind": "location",
                    "location": {
                        "latitude": 19.4326,
                        "longitude": -99.1332,
                        "name": "Tienda Centro",
                        "address": "Av. 5 de Mayo 10, Centro, CDMX",
                    },
                },
            ),
            (285, "incoming", "¡Perfecto, gracias!"),
        ],
    ),
    (
        "whatsapp",
        "5213398765432",
        "María Guadalupe Hernández de la Cruz Villaseñor",
        [
            (
                240,
                "incoming",
                "Buenas tardes. Hice el pago de mi plan el viernes por transferencia, pero en la app todavía "
                "aparece como pendiente y no me han llegado los datos. Les mando el comprobante para que "
                "lo revisen, por favor; necesito el servicio para trabajar el lunes temprano.",
            ),
            (
                239,
                "incoming",
                {
                    "kind": "document",
                    "text": None,
                    "file": {
                        "uri": RECEIPT_DOCUMENT,
                        "mime_type": "application/pdf",
                        "filename": "comprobante-de-pago.pdf",
                    },
                },
            ),
        ],
    ),
    (
        "whatsapp",
        "5219991234567",
        "Rodrigo Canul",
        [
            (60 * 50, "incoming", "Mi recarga no aparece"),
            (60 * 49, "outgoing", "Ya quedó aplicada, Rodrigo. ¡Gracias por tu paciencia!"),
            (60 * 49 - 3, "incoming", "Listo, ya la veo 👍"),
        ],
    ),
    (
        "whatsapp",
        "5215566778899",
        "Valeria Montes",
        [
            (60 * 8, "incoming", "¿Tienen planes empresariales?"),
            (60 * 8 - 10, "outgoing", "Sí, te paso con el equipo de empresas."),
        ],
    ),
    (
        "instagram",
        "7310000000000001",
        "Camila Ruiz",
        [(35, "incoming", "Vi su anuncio de eSIM para viajar, ¿funciona en Japón?")],
    ),
    (
        "messenger",
        "6420000000000001",
        "Carlos Méndez",
        [
            (150, "incoming", "¿Cuál es su horario de atención?"),
            (149, "outgoing", "De lunes a sábado de 9:00 a 20:00."),
        ],
    ),
)

ADDRESSES = {
    "whatsapp": Connection(
        service="whatsapp",
        address=DEMO_PHONE_NUMBER_ID,
        provider="simulator",
        phone_number=DEMO_PHONE_NUMBER,
        verified_name="Demo Company",
    ),
    "instagram": Connection(
        service="instagram", address=DEMO_INSTAGRAM_ID, provider="simulator", verified_name="@democompany"
    ),
    "messenger": Connection(
        service="messenger", address=DEMO_PAGE_ID, provider="simulator", verified_name="Demo Company"
    ),
}


def external_id(service: str, contact: str, position: int) -> str:
    prefix = "wamid.DEMO" if service == "whatsapp" else "m_DEMO"
    return f"{prefix}.{contact}.{position}"


def _event(service: str, contact: str, name: str, position: int, line: Line) -> InboundMessage:
    minutes_ago, direction, body = line
    content = {"kind": "text", "text": body} if isinstance(body, str) else dict(body)
    quoted = content.pop("reply_to", None)
    return InboundMessage(
        service=service,
        organization_address=ADDRESSES[service].address,
        external_id=external_id(service, contact, position),
        contact_address=whatsapp_contact_address(contact) if service == "whatsapp" else contact,
        provider_contact_id=contact,
        contact_name=name,
        timestamp=utcnow() - timedelta(minutes=minutes_ago),
        content=content,
        direction=direction,
        reply_to=external_id(service, contact, quoted) if quoted is not None else None,
    )


@seeder(order=40, name="messaging")
def seed_messaging(environment: str) -> list[str]:
    if get_organization(DEMO_ORGANIZATION_ID) is None:
        return []
    for connection in ADDRESSES.values():
        if get_address(DEMO_ORGANIZATION_ID, connection.address) is None:
            connect_address(DEMO_ORGANIZATION_ID, connection)
    ingest_events(
        [
            _event(service, contact, name, position, line)
            for service, contact, name, lines in DEMO_CONVERSATIONS
            for position, line in enumerate(lines)
        ]
    )
    return [
        f"{environment} WhatsApp (simulator): phone-number id {DEMO_PHONE_NUMBER_ID} ({DEMO_PHONE_NUMBER})"
    ]
