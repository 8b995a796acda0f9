"""Notes the product writes (an AI agent's hand-off) are stored in English, as the API gives them, and the
desk shows their product words in the page's language; a person's note is shown as written."""

from __future__ import annotations

from flask import Flask

from blueprints.ai.handoff import HANDOFF_LABELS, TRANSFER_NUMBER
from blueprints.inbox.pages import note_text


def test_a_handoff_note_reads_in_spanish(app: Flask) -> None:
    stored = (
        f"{HANDOFF_LABELS['transfer_to_human']}: Quiere una copia de la factura 42 "
        + TRANSFER_NUMBER.format(rule="Ventas", number="+5215511112222")
    )
    with app.test_request_context("/inbox", headers={"Accept-Language": "es-MX,es"}):
        shown = note_text(stored, "ai:agent_1")
        assert shown == (
            "El agente de IA pasó la conversación: Quiere una copia de la factura 42 "
            "La regla de transferencia Ventas indica el número +5215511112222."
        )
        assert note_text(f"{HANDOFF_LABELS['failed']}: sin respuesta", "ai:agent_1").startswith(
            "El agente de IA no pudo responder: "
        )
        # a person's note that happens to start with the same words is theirs, as written
        person = f"{HANDOFF_LABELS['transfer_to_human']}: yo también"
        assert note_text(person, "user:5") == person
    with app.test_request_context("/inbox", headers={"Accept-Language": "en"}):
        assert note_text(stored, "ai:agent_1") == stored
