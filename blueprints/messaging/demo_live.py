"""The demo desk stays alive: once a minute one of the demo organization's simulated customers writes.

It runs as a periodic job (``core.jobs.periodic``), so it works wherever the job queue is consumed (the
embedded consumer of ``flask serve`` or a separate worker). ``DEMO_LIVE_MESSAGES=0`` turns it off. The
message enters exactly as a webhook delivery would (``channels.simulator.simulate_inbound``), so the desk
sees the same events a real customer would cause. Nothing happens for organizations other than the demo.
"""

from __future__ import annotations

from flask import current_app

from blueprints.channels.services import get_address
from blueprints.channels.simulator import simulate_inbound
from blueprints.messaging.demo import DEMO_PHONE_NUMBER_ID
from core.db import utcnow
from core.demo import DEMO_ORGANIZATION_ID
from core.jobs import periodic

# (WhatsApp id, name, what they write); picked by the minute of the day so a run is reproducible
LIVE_CUSTOMERS = (
    ("5215512345678", "Jessica Ramírez", "¿Ya quedó activado mi plan?"),
    ("5213312345678", "Marco Díaz", "Reinicié el teléfono y sigue sin señal"),
    ("5491123456789", "Lucía Fernández", "¿Cuánto tarda la portabilidad?"),
    ("5218112340001", "Diego Treviño", "¿Tienen eSIM para viajar a España?"),
    ("5215599001122", "Fernanda Ortiz", "Hola, quiero cambiar de plan"),
    ("5213398765432", "Ana Sofía Castillo", "¿Aceptan pago con tarjeta?"),
    ("5219991234567", "Rodrigo Canul", "Mi recarga no aparece"),
    ("5215566778899", "Valeria Montes", "Gracias por la ayuda 🙌"),
)


def send_live_message(minute_of_day: int | None = None) -> str | None:
    """One simulated customer message to the demo number; returns who wrote, or None when nothing was
    sent (switched off, or the demo organization is not in this store)."""
    if not current_app.config.get("DEMO_LIVE_MESSAGES", True):
        return None
    address = get_address(DEMO_ORGANIZATION_ID, DEMO_PHONE_NUMBER_ID)
    if address is None or address.provider != "simulator":
        return None
    if minute_of_day is None:
        now = utcnow()
        minute_of_day = now.hour * 60 + now.minute
    contact, name, text = LIVE_CUSTOMERS[minute_of_day % len(LIVE_CUSTOMERS)]
    simulate_inbound("whatsapp", DEMO_PHONE_NUMBER_ID, contact, text, name=name)
    return name


@periodic(minute="*")
def demo_live_messages() -> None:
    send_live_message()
